// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ClientsModel.h"

#include "ui/ClusterText.h"
#include "ui/Format.h"
#include "ui/Theme.h"
#include "core/Tuning.h"

namespace Floodgate::Ui {

namespace {

// A live count that misses requests no live record holds (ClientSummary::liveComplete).
QString atLeast(const Core::ClientSummary& s, const QString& count)
{
    return s.liveComplete ? count : QStringLiteral("\u2265 ") + count;
}

QString incompleteNote(const Core::ClientSummary& s)
{
    return s.liveComplete ? QString()
                          : ClientsModel::tr(". At least: some of this client's requests of the last minute are in no live record, "
                                             "because every record was held by a client seen within the minute "
                                             "(one record per 8 tracked clients)");
}

} // namespace

ClientsModel::ClientsModel(QObject* parent)
    : KeyedModel<ClientRow>(parent)
{
}

QString ClientsModel::keyOf(const ClientRow& row) const
{
    return row.key;
}

void ClientsModel::apply(const ConsoleSnapshot& snapshot)
{
    m_now = snapshot.now;
    if (m_clustered != snapshot.cluster.has_value()) {
        m_clustered = snapshot.cluster.has_value();
        Q_EMIT headerDataChanged(Qt::Horizontal, 0, ColumnCount - 1);
    }
    merge(snapshot.clients);
}

int ClientsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ClientsModel::data(const QModelIndex& index, int role) const
{
    const ClientRow* row = rowAt(index.row());
    if (!row || index.column() < 0 || index.column() >= ColumnCount)
        return {};
    const Core::ClientSummary& s = row->summary;
    const unsigned remaining = s.bindingUsed >= s.bindingLimit ? 0 : s.bindingLimit - s.bindingUsed;
    const bool listed = s.state == Core::ClientState::Blocked || s.state == Core::ClientState::Safelisted;
    switch (role) {
    case KeyRole: return row->key;
    // Listed clients spend no counters: no bar for them.
    case UsedRole: return listed ? 0u : s.bindingUsed;
    case LimitRole: return listed ? 0u : s.bindingLimit;
    case StateRole: return int(s.state);
    case LiveRole: {
        QList<int> live;
        for (const std::uint32_t v : row->wholeLiveBuckets())
            live.push_back(int(v));
        return QVariant::fromValue(live);
    }
    case SortRole:
        switch (index.column()) {
        case Address: return row->sortKey;
        case Last3s: return s.lastBucket;
        case Last60s: return s.last60s;
        case Rate:
        case Activity: return s.ratePerSecond;
        case Use: return s.bindingLimit ? double(s.bindingUsed) / double(s.bindingLimit) : 0.0;
        case Here: return s.bindingUsedHere;
        case State: return int(s.state);
        case Customer: return qs(s.customer);
        case Request: return row->lastRequest;
        case UserAgent: return row->userAgent;
        }
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case Address:
            // The full address last seen, and the range it is counted under when that differs.
            return s.keyPrefix >= 128 || !s.lastAddress ? row->key : row->key + QStringLiteral("  (") + qs(s.lastAddress->toString()) + QLatin1Char(')');
        // Requests of the minute in no live record (none was free) are not
        // in these counts: shown as at least.
        case Last3s: return atLeast(s, QString::number(s.lastBucket));
        case Last60s: return atLeast(s, QString::number(s.last60s));
        case Rate: return atLeast(s, formatRate(s.ratePerSecond));
        case Use:
            if (s.state == Core::ClientState::Blocked)
                return tr("not counted: blocklist");
            if (s.state == Core::ClientState::Safelisted)
                return tr("not counted: safelist");
            return s.bindingLimit ? QStringLiteral("%1 / %2  %3").arg(s.bindingUsed).arg(s.bindingLimit).arg(qs(s.bindingRule)) : QString();
        case Here:
            if (listed || !s.bindingLimit)
                return {};
            return s.bindingUsedHere;
        case State:
            return s.state == Core::ClientState::Throttled && s.retryAfterMs > 0
                ? tr("throttled, %1 left").arg(formatDuration(s.retryAfterMs, Span::Left))
                : Theme::stateLabel(s.state);
        case Customer: return qs(s.customer);
        case Request: return row->lastRequest;
        case UserAgent: return row->userAgent;
        case Activity: return {};
        }
        return {};
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Address:
            if (s.keyPrefix >= 128)
                return tr("Counted as %1").arg(row->key);
            return (s.lastAddress ? tr("Last seen as %1; counted").arg(qs(s.lastAddress->toString()))
                                  : tr("Not seen for a minute: its last full address is no longer kept; counted"))
                + tr(" together with its whole %1 (IPv6 clients are counted per prefix, "
                     "so rotating addresses inside one allocation gains nothing)")
                      .arg(row->key);
        case Last3s:
            return (m_clustered ? tr("%1 requests to this node in the current 3-second bucket of the live view")
                                : tr("%1 requests in the current 3-second bucket of the live view"))
                       .arg(s.lastBucket)
                + incompleteNote(s);
        case Last60s:
            return (m_clustered ? tr("%1 requests to this node in the last 60 seconds (20 buckets of 3 s)")
                                : tr("%1 requests in the last 60 seconds (20 buckets of 3 s)"))
                       .arg(s.last60s)
                + incompleteNote(s);
        case Rate:
            return (m_clustered ? tr("Requests per second to this node over the current and the previous 3-second bucket")
                                : tr("Requests per second over the current and the previous 3-second bucket"))
                + incompleteNote(s);
        case Use:
            if (!s.bindingLimit)
                return tr("No counting level applies (safelisted, excluded or not counted)");
            if (m_clustered)
                return tr("The binding level %1: %2 of %3 requests used by the whole cluster (%4), %5 left. %6 The binding level is "
                          "the one with the least left; the client is refused when any level is used up.")
                    .arg(qs(s.bindingRule))
                    .arg(s.bindingUsed)
                    .arg(s.bindingLimit)
                    .arg(ClusterText::hereAndCluster(s.bindingUsedHere, s.bindingUsed))
                    .arg(remaining)
                    .arg(ClusterText::judgedOnTheCluster(s.bindingUsedHere, s.bindingUsed, s.bindingLimit));
            return tr("The binding level %1: %2 of %3 requests used, %4 left. The binding level is the one with the least left; "
                      "the client is refused when any level is used up.")
                .arg(qs(s.bindingRule))
                .arg(s.bindingUsed)
                .arg(s.bindingLimit)
                .arg(remaining);
        case Here:
            if (listed || !s.bindingLimit)
                return {};
            return tr("The binding level %1: %2")
                .arg(qs(s.bindingRule), ClusterText::judgedOnTheCluster(s.bindingUsedHere, s.bindingUsed, s.bindingLimit));
        case State:
            switch (s.state) {
            case Core::ClientState::Ok: return tr("Within every limit");
            case Core::ClientState::Throttled:
                return tr("Refused by %1 for another %2 (the exact Retry-After it is sent)").arg(qs(s.bindingRule), formatDuration(s.retryAfterMs, Span::Left));
            case Core::ClientState::Blocked: return tr("On the blocklist: every request is refused with 403");
            case Core::ClientState::Safelisted: return tr("On the safelist: never throttled");
            }
            return {};
        case Activity: return tr("Requests per whole 3-second bucket over the last minute (the bucket still filling is left out; "
                                 "%1 in the last 60 s with it)").arg(s.last60s);
        case Request:
            return row->lastRequest.isEmpty() ? tr("No request of this client is in the listener's samples")
                                              : tr("The last request seen from this client: %1").arg(row->lastRequest);
        case UserAgent: return row->userAgent;  // whole, where the column is too narrow
        default: return {};
        }
    case Qt::TextAlignmentRole:
        switch (index.column()) {
        case Last3s:
        case Last60s:
        case Rate:
        case Here: return int(Qt::AlignRight | Qt::AlignVCenter);
        default: return int(Qt::AlignLeft | Qt::AlignVCenter);
        }
    case Qt::ForegroundRole:
        if (index.column() == State)
            return Theme::state(s.state);
        return {};
    }
    return {};
}

QVariant ClientsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case Address: return tr("Client");
        case Last3s: return tr("3 s");
        case Last60s: return tr("60 s");
        case Rate: return tr("Rate");
        case Use: return m_clustered ? tr("Binding limit (cluster)") : tr("Binding limit");
        case Here: return tr("This node");
        case State: return tr("State");
        case Customer: return tr("Customer");
        case Request: return tr("Last request");
        case UserAgent: return tr("User agent");
        case Activity: return tr("Last minute");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Address: return tr("The client address; IPv6 clients are counted per /64 by default");
        case Last3s: return m_clustered ? tr("Requests to this node in the current 3-second bucket") : tr("Requests in the current 3-second bucket");
        case Last60s: return m_clustered ? tr("Requests to this node in the last 60 seconds") : tr("Requests in the last 60 seconds");
        case Rate: return m_clustered ? tr("Requests per second to this node, recent") : tr("Requests per second, recent");
        case Use:
            return m_clustered ? tr("Use of the level with the least left by the whole cluster, e.g. 5 / 6 ip-3s: five of six requests "
                                    "allowed per 3 s are used by the clients' requests to every node. The limit is judged on this count.")
                               : tr("Use of the level with the least left, e.g. 5 / 6 ip-3s: five of six requests allowed per 3 s are used");
        case Here:
            return tr("How many of the binding level's requests this node counted; the other nodes counted the rest. The limit is "
                      "judged on the cluster's count (the column to the left).");
        case State: return tr("ok, throttled (with the time until it may try again), blocked or safelisted");
        case Customer: return tr("The API customer this address spoke for, if any");
        case Activity: return tr("Requests per 3 s over the last minute");
        default: return {};
        }
    }
    return {};
}

} // namespace Floodgate::Ui
