// SPDX-License-Identifier: MIT
// One access list (safelist, or blocklist with the automatic bans), merged
// by range from the engine's published lists; the "expires in" column
// counts down on every refresh.
#pragma once

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ConsoleSnapshot.h"
#include "KeyedModel.h"
#endif

namespace Floodgate::Ui {

struct ListRow {
    Core::ListEntry entry;
};

class ListModel : public KeyedModel<ListRow> {
    Q_OBJECT

public:
    enum Column { Address, Reason, Source, Created, CreatedBy, Expires, ExpiresIn, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, RangeRole };

    ListModel(Core::ListKind kind, QObject* parent = nullptr);
    Core::ListKind kind() const { return m_kind; }
    void apply(const ConsoleSnapshot& snapshot);

    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

protected:
    QString keyOf(const ListRow& row) const override;

private:
    Core::ListKind m_kind;
    Core::Millis m_now = 0;
    // The published lists last merged, held so a new list is never mistaken
    // for one at a reused address.
    std::shared_ptr<const Core::AddressList> m_seenList;
    std::shared_ptr<const Core::AddressList> m_seenAutomatic;
};

} // namespace Floodgate::Ui
