// SPDX-License-Identifier: MIT
#include "ListModel.h"

#include "Format.h"
#include "Theme.h"

#include <QDateTime>

#include <limits>

namespace Floodgate::Ui {

ListModel::ListModel(Core::ListKind kind, QObject* parent)
    : KeyedModel<ListRow>(parent)
    , m_kind(kind)
{
}

QString ListModel::keyOf(const ListRow& row) const
{
    return qs(row.entry.range.toString());
}

void ListModel::apply(const ConsoleSnapshot& s)
{
    m_now = s.now;
    const auto& list = m_kind == Core::ListKind::Safelist ? s.safelist : s.blocklist;
    const auto automatic = m_kind == Core::ListKind::Blocklist ? s.automatic : nullptr;
    const bool changed = list != m_seenList || automatic != m_seenAutomatic;
    bool anyExpired = false;
    for (const ListRow& r : rows())
        anyExpired = anyExpired || !r.entry.activeAt(m_now);
    if (changed || anyExpired) {
        m_seenList = list;
        m_seenAutomatic = automatic;
        std::vector<ListRow> next;
        auto add = [&](const Core::AddressList* l) {
            if (!l)
                return;
            for (const Core::ListEntry& e : l->entries())
                if (e.activeAt(m_now))
                    next.push_back({e});
        };
        add(list.get());
        if (m_kind == Core::ListKind::Blocklist)
            add(s.automatic.get());
        merge(std::move(next));
    } else if (rowCount() > 0) {
        Q_EMIT dataChanged(index(0, ExpiresIn), index(rowCount() - 1, ExpiresIn));  // the countdown
    }
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
    case RangeRole: return qs(e.range.toString());
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
        case ExpiresIn: return permanent ? tr("permanent") : formatDuration(e.expiresAt - m_now);
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
        if (index.column() == ExpiresIn && !permanent && e.expiresAt - m_now < 3'600'000)
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
