// SPDX-License-Identifier: GPL-3.0-or-later
// The operator's list changes, shared by every view that offers them
// (clients, events, access lists, the toolbar): block or safelist ranges,
// remove them, extend an entry, import and export files. Each change goes
// through the store; the notice appears only after COMMIT and offers Undo.
#pragma once

#include <QObject>
#include <QString>

#include <optional>
#include <vector>

#ifndef Q_MOC_RUN
#include "core/AddressList.h"
#include "storage/Store.h"
#endif

class QWidget;

namespace Floodgate::Ui {

class Console;
class NoticeBar;

class Operations : public QObject {
    Q_OBJECT

public:
    Operations(Console& console, NoticeBar& notice, NoticeBar& problem, QWidget* dialogParent);

    // ttlMs 0: permanent.
    void addToList(Core::ListKind kind, const std::vector<Core::Cidr>& ranges, Core::Millis ttlMs, const QString& reason);
    void saveEntry(Core::ListKind kind, Core::ListEntry entry, const QString& doneText);
    // Removes each range from the lists that hold it (blocklist, automatic
    // bans, safelist), or from `only` that one.
    void removeFromLists(const std::vector<Core::Cidr>& ranges, std::optional<Core::ListKind> only = std::nullopt);
    // Each entry ends `byMs` later (from its end, or from now if that is sooner); one notice, one Undo.
    void extend(Core::ListKind kind, const std::vector<Core::ListEntry>& entries, Core::Millis byMs);
    // Reads a .csv or .json file; all or nothing; rejected lines are listed.
    void importFile(const QString& path);
    void exportFile(const QString& path);


private:
    void removeEntries(std::vector<std::pair<Core::ListKind, Core::ListEntry>> entries, bool undoable);
    void addAll(std::vector<std::pair<Core::ListKind, Core::ListEntry>> entries, const QString& doneText, bool undoable);

    Console& m_console;
    NoticeBar& m_notice;
    NoticeBar& m_problem;
    QWidget* m_parent;
};

} // namespace Floodgate::Ui
