// SPDX-License-Identifier: GPL-3.0-or-later
// The safelist and the blocklist (with the automatic bans): address or
// range, reason, source, created, a live countdown to the expiry; add,
// edit, extend, remove, import and export.
#pragma once

#include <QWidget>

#include <array>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;

namespace Floodgate::Ui {

class ListModel;
class Operations;

class ListsView : public QWidget {
    Q_OBJECT

public:
    ListsView(Operations& operations, const Core::Clock& clock, QWidget* parent = nullptr);
    // Every snapshot (the lists change by deltas); `visible`: also move the countdown.
    void apply(const ConsoleSnapshot& snapshot, bool visible = true);
    ListModel* model(Core::ListKind kind) const;
    QTableView* table(Core::ListKind kind) const;
    void showList(Core::ListKind kind);
    std::vector<Core::Cidr> selectedRanges() const;

public Q_SLOTS:
    void addEntry();
    void editEntry();
    void extendEntry();
    void removeEntries();
    void importFile();
    void exportFile();

private:
    struct Tab {
        ListModel* model = nullptr;
        QSortFilterProxyModel* proxy = nullptr;
        QTableView* table = nullptr;
    };
    Core::ListKind currentKind() const;
    std::vector<Core::ListEntry> selectedEntries() const;

    Operations& m_operations;
    const Core::Clock& m_clock;
    QTabWidget* m_tabs = nullptr;
    QLineEdit* m_filter = nullptr;
    std::array<Tab, 2> m_lists;  // indexed by Core::ListKind
};

} // namespace Floodgate::Ui
