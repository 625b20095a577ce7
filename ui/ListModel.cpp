// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ListModel.h"

#include "ui/Format.h"
#include "ui/Theme.h"

#include <QDateTime>

#include <limits>

namespace Floodgate::Ui {

ListModel::ListModel(Core::ListKind kind, QObject* parent)
    : QAbstractTableModel(parent)
    , m_kind(kind)
{
}

int ListModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

const ListRow* ListModel::rowAt(int row) const
{
    return row >= 0 && row < int(m_rows.size()) ? &m_rows[std::size_t(row)] : nullptr;
}

int ListModel::rowOf(const Core::Cidr& range) const
{
    auto it = m_index.find(range);
    return it == m_index.end() ? -1 : it->second;
}

void ListModel::removeRow(int row)
{
    // Order does not matter (views sort through a proxy): the last row takes
    // the removed one's place, so a removal costs the same at any list size.
    const int last = int(m_rows.size()) - 1;
    m_index.erase(m_rows[std::size_t(row)].entry.range);
    if (row != last) {
        m_rows[std::size_t(row)] = std::move(m_rows[std::size_t(last)]);
        m_index[m_rows[std::size_t(row)].entry.range] = row;
        Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
    }
    beginRemoveRows({}, last, last);
    m_rows.pop_back();
    endRemoveRows();
}

void ListModel::apply(const ConsoleSnapshot& s)
{
    m_now = s.now;
    const ListDelta& d = s.lists[std::size_t(m_kind)];
    if (d.reset) {
        beginResetModel();
        m_rows.clear();
        m_index.clear();
        m_rows.reserve(d.upserts.size());
        for (const Core::ListEntry& e : d.upserts) {
            m_index[e.range] = int(m_rows.size());
            m_rows.push_back({e});
        }
        endResetModel();
        return;
    }
    for (const Core::Cidr& range : d.removals)
        if (const int row = rowOf(range); row >= 0)
            removeRow(row);
    std::vector<ListRow> added;
    for (const Core::ListEntry& e : d.upserts) {
        if (const int row = rowOf(e.range); row >= 0) {
            m_rows[std::size_t(row)].entry = e;
            Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
        } else {
            added.push_back({e});
        }
    }
    if (!added.empty()) {
        beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + added.size()) - 1);
        for (ListRow& r : added) {
            m_index[r.entry.range] = int(m_rows.size());
            m_rows.push_back(std::move(r));
        }
        endInsertRows();
    }
}

void ListModel::refreshCountdown()
{
    if (!m_rows.empty())
        Q_EMIT dataChanged(index(0, ExpiresIn), index(int(m_rows.size()) - 1, ExpiresIn));
}

int ListModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ListModel::data(const QModelIndex& index, int role) const
{
    const ListRow* row = rowAt(index.row());
    if (!row || index.column() < 0 || index.column() >= ColumnCount)
        return {};
    const Core::ListEntry& e = row->entry;
    const bool permanent = e.expiresAt == Core::NeverExpires;
    switch (role) {
    case SortRole:
        switch (index.column()) {
        case Address: return addressSortKey(e.range);
        case Created: return qint64(e.createdAt);
        case Expires:
        case ExpiresIn: return qint64(permanent ? std::numeric_limits<qint64>::max() : e.expiresAt);
        default: return data(index, Qt::DisplayRole);
        }
    case Qt::DisplayRole:
        switch (index.column()) {
        case Address: return qs(e.range.toString());
        case Reason: return qs(e.reason);
        case Source: return QString::fromLatin1(Core::toString(e.source));
        case Created: return formatClock(e.createdAt, m_now);
        case CreatedBy: return qs(e.createdBy);
        case Expires: return permanent ? tr("never") : formatClock(e.expiresAt, m_now);
        case ExpiresIn: return permanent ? tr("permanent") : formatDuration(e.expiresAt - m_now, Span::Left);
        }
        return {};
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Source:
            switch (e.source) {
            case Core::ListSource::Operator: return tr("Added by an operator");
            case Core::ListSource::Automatic: return tr("Added by escalation: the client was refused again and again");
            case Core::ListSource::Import: return tr("Imported from a file");
            }
            return {};
        case ExpiresIn:
            return permanent ? tr("Stays until removed")
                             : tr("Stops applying at %1, exactly; the row is then purged")
                                   .arg(QDateTime::fromMSecsSinceEpoch(e.expiresAt).toString(Qt::ISODateWithMs));
        default: return {};
        }
    case Qt::ForegroundRole:
        if (index.column() == Source && e.source == Core::ListSource::Automatic)
            return Theme::action(Core::Action::Throttle);
        if (index.column() == ExpiresIn && !permanent && e.expiresAt - m_now < Core::HOUR)
            return Theme::action(Core::Action::Throttle);  // ending within the hour
        return {};
    case Qt::TextAlignmentRole:
        return index.column() == ExpiresIn ? int(Qt::AlignRight | Qt::AlignVCenter) : int(Qt::AlignLeft | Qt::AlignVCenter);
    }
    return {};
}

QVariant ListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Address: return tr("Address or range");
    case Reason: return tr("Reason");
    case Source: return tr("Source");
    case Created: return tr("Created");
    case CreatedBy: return tr("By");
    case Expires: return tr("Expires");
    case ExpiresIn: return tr("Expires in");
    }
    return {};
}

} // namespace Floodgate::Ui
