// SPDX-License-Identifier: GPL-3.0-or-later
// One access list (safelist, or blocklist with the automatic bans). It
// applies the snapshot's ListDelta — the entries added, changed, removed or
// ended since the previous one — so its work is the size of the change, not
// of the list; the "expires in" column counts down on every refresh.
#pragma once

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#include "core/Hash.h"

#include <QAbstractTableModel>

#include <unordered_map>
#include <vector>
#endif

namespace Floodgate::Ui {

struct ListRow {
    Core::ListEntry entry;
};

class ListModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Address, Reason, Source, Created, CreatedBy, Expires, ExpiresIn, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1 };

    ListModel(Core::ListKind kind, QObject* parent = nullptr);
    // Every snapshot, in order (a delta missed is a change missed).
    void apply(const ConsoleSnapshot& snapshot);
    // The countdown column changed: for a view that shows it.
    void refreshCountdown();

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    const ListRow* rowAt(int row) const;
    int rowOf(const Core::Cidr& range) const;

private:
    void removeRow(int row);

    Core::ListKind m_kind;
    Core::Millis m_now = 0;
    std::vector<ListRow> m_rows;  // in no particular order: views sort through a proxy
    std::unordered_map<Core::Cidr, int, Core::CidrHash> m_index;
};

} // namespace Floodgate::Ui
