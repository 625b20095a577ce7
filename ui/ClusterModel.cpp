// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ClusterModel.h"

#include "core/Tuning.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QFont>

namespace Floodgate::Ui {

QString ClusterNodesModel::keyOf(const Cluster::NodeStatus& row) const
{
    return qs(row.name);
}

void ClusterNodesModel::apply(const ConsoleSnapshot& s)
{
    m_now = s.now;
    m_stale = s.cluster && s.cluster->redis == Cluster::ClusterStatus::Redis::Down;
    merge(s.cluster ? s.cluster->nodes : std::vector<Cluster::NodeStatus>{});
}

int ClusterNodesModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ClusterNodesModel::data(const QModelIndex& index, int role) const
{
    const Cluster::NodeStatus* n = rowAt(index.row());
    if (!n || index.column() < 0 || index.column() >= ColumnCount)
        return {};
    // The heartbeat's time is Redis's; the console's clock is this node's
    // decision clock, moved to Redis's (docs/CLUSTER.md, one clock).
    const Core::Millis ago = std::max<Core::Millis>(0, m_now - n->lastSeenMs);
    const bool counting = ago <= Core::Tuning::clusterAliveMs;
    switch (role) {
    case SelfRole: return n->self;
    case CountingRole: return counting;
    case SortRole:
        switch (index.column()) {
        case Name: return qs(n->name);
        case Address: return qs(n->address);
        case Heartbeat: return qint64(ago);
        case Rate: return n->requestsPerSecond;
        }
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case Name: return n->self ? tr("%1 (this node)").arg(qs(n->name)) : qs(n->name);
        case Address: return n->address.empty() ? QStringLiteral("–") : qs(n->address);
        case Heartbeat: return formatDuration(ago, Span::Since);
        case Rate: return formatRate(n->requestsPerSecond);
        }
        return {};
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Name:
            return n->self ? tr("This node: the one this console runs in (--node-name)")
                           : tr("Another node counting through the same Redis (its --node-name)");
        case Address:
            return n->address.empty() ? tr("Not said yet: the node's heartbeat came before its listener had its port (--listen HOST:0)")
                                      : tr("Where the node serves, as it says in its heartbeat (its --listen address, with the "
                                           "port it got)");
        case Heartbeat:
            if (m_stale)
                return tr("As last heard before Redis went out of reach: nothing new arrives while the breaker is open");
            return counting ? tr("Each node writes a heartbeat to Redis once a second; a node counts (is one of the N that share "
                                 "each limit) while its last one is at most %1 old")
                                  .arg(formatDuration(Core::Tuning::clusterAliveMs, Span::Length))
                            : tr("Silent for %1: not counted among the nodes sharing each limit; it leaves the list after a minute")
                                  .arg(formatDuration(ago, Span::Left));
        case Rate: return tr("Requests per second the node decided, in the second before its last heartbeat");
        }
        return {};
    case Qt::FontRole:
        if (n->self && index.column() == Name) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    case Qt::ForegroundRole:
        if (!counting || m_stale)
            return Theme::muted();
        return {};
    case Qt::TextAlignmentRole:
        return index.column() == Rate || index.column() == Heartbeat ? int(Qt::AlignRight | Qt::AlignVCenter)
                                                                     : int(Qt::AlignLeft | Qt::AlignVCenter);
    }
    return {};
}

QVariant ClusterNodesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case Name: return tr("Node");
        case Address: return tr("Address");
        case Heartbeat: return tr("Last heartbeat");
        case Rate: return tr("Requests/s");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Name: return tr("Each node's --node-name; this node is in bold");
        case Address: return tr("Where each node serves");
        case Heartbeat: return tr("How long ago each node last wrote its heartbeat to Redis (once a second while it runs)");
        case Rate: return tr("Requests per second each node decided, as of its last heartbeat");
        }
    }
    if (role == Qt::TextAlignmentRole)
        return section == Rate || section == Heartbeat ? int(Qt::AlignRight | Qt::AlignVCenter) : int(Qt::AlignLeft | Qt::AlignVCenter);
    return {};
}

} // namespace Floodgate::Ui
