// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ClusterText.h"

#include "core/SettingTable.h"
#include "core/Tuning.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QCoreApplication>
#include <QPainter>
#include <QPixmap>

namespace Floodgate::Ui::ClusterText {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("ClusterText", text);
}

// "when_cluster_down: local", spelt as the rules document spells it.
QString settingText(Core::WhenClusterDown mode)
{
    const Core::SettingRow* row = Core::findSetting("settings.when_cluster_down");
    const std::string_view name = row ? row->choiceName(std::int64_t(mode)) : std::string_view();
    return QStringLiteral("when_cluster_down: %1").arg(qs(name));
}

QString nodesText(std::uint32_t n)
{
    return n == 1 ? tr("1 node") : tr("%1 nodes").arg(n);
}

} // namespace

QString state(Redis redis)
{
    switch (redis) {
    case Redis::Up: return tr("up");
    case Redis::Degraded: return tr("degraded");
    case Redis::Down: return tr("down");
    }
    return {};
}

QColor color(Redis redis)
{
    switch (redis) {
    case Redis::Up: return Theme::action(Core::Action::Allow);
    case Redis::Degraded: return Theme::action(Core::Action::Throttle);
    case Redis::Down: return Theme::action(Core::Action::Block);
    }
    return Theme::muted();
}

QIcon dot(Redis redis)
{
    QIcon icon;
    for (int size : {12, 16, 24}) {
        // Drawn at twice the size for high-density screens.
        QPixmap pm(size * 2, size * 2);
        pm.setDevicePixelRatio(2);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        p.setRenderHint(QPainter::Antialiasing);
        p.setPen(Qt::NoPen);
        p.setBrush(color(redis));
        const double d = size * 0.62;
        p.drawEllipse(QRectF((size - d) / 2, (size - d) / 2, d, d));
        p.end();
        icon.addPixmap(pm);
    }
    return icon;
}

QString stateMeaning(Redis redis)
{
    switch (redis) {
    case Redis::Up:
        return tr("Redis answers within its deadlines: every request here is judged on the counts of every node.");
    case Redis::Degraded:
        return tr("Redis answers, but the last batch's round trip was over %1 or a call to it failed in the last %2: "
                  "counts still reach every node, perhaps later than usual.")
            .arg(QStringLiteral("%1 ms").arg(double(Core::Tuning::clusterSlowMicros) / 1000.0),
                 formatDuration(Core::Tuning::clusterErrorMemoryMs, Span::Length));
    case Redis::Down:
        return tr("Redis is out of reach (a missed deadline, a lost connection or an error reply): the circuit breaker "
                  "is open, this node decides on its own counts and tries Redis again once a second.");
    }
    return {};
}

QString roundTrip(const Cluster::ClusterStatus& s)
{
    if (s.batches == 0)
        return QStringLiteral("–");
    const double ms = double(s.roundTripMicros) / 1000.0;
    return ms >= 100 ? QStringLiteral("%1 ms").arg(formatCount(std::uint64_t(ms + 0.5))) : QStringLiteral("%1 ms").arg(ms, 0, 'f', 1);
}

QString syncLag(const Cluster::ClusterStatus& s)
{
    if (s.batches == 0)
        return QStringLiteral("–");
    return QStringLiteral("%1 ms").arg(formatCount(std::uint64_t(std::max<Core::Millis>(0, s.syncLagMs))));
}

QString droppedChanges(std::uint64_t n)
{
    if (n == 0)
        return {};
    return (n == 1 ? tr("1 change made on this node never reached the other nodes")
                   : tr("%1 changes made on this node never reached the other nodes").arg(formatCount(n)))
        + tr(": while Redis was out of reach more than %1 waited to be sent, and the oldest were dropped. Compare the lists, "
             "tiers, customers and rules on the nodes and make again on this one what the others miss.")
              .arg(formatCount(Cluster::ClusterSync::maxPendingChanges));
}

QString sharedProblems(const Cluster::ClusterStatus& s)
{
    QStringList parts;
    if (!s.levellingRefused.empty())
        parts << tr("Not levelled with the cluster: %1.").arg(QString::fromStdString(s.levellingRefused));
    if (s.refusedChanges > 0)
        parts << (s.refusedChanges == 1 ? tr("1 change read from Redis was refused") : tr("%1 changes read from Redis were refused").arg(formatCount(s.refusedChanges)))
                     + tr(" (something other than this cluster's nodes writes into its Redis, or a node has another cluster key); the last: %1")
                           .arg(QString::fromStdString(s.lastRefused));
    if (s.malformedFields > 0)
        parts << (s.malformedFields == 1 ? tr("1 field in Redis that was not a node's counts was removed")
                                         : tr("%1 fields in Redis that were not a node's counts were removed").arg(formatCount(s.malformedFields)))
                     + tr("; the last: %1").arg(QString::fromStdString(s.lastMalformed));
    return parts.join(QLatin1Char('\n'));
}

QString clockOffset(Core::Millis ms)
{
    const QString size = formatCount(std::uint64_t(ms < 0 ? -ms : ms));
    return ms > 0 ? QStringLiteral("+%1 ms").arg(size) : ms < 0 ? QStringLiteral("−%1 ms").arg(size) : QStringLiteral("0 ms");
}

QString whenDown(Core::WhenClusterDown mode, bool brief, std::uint32_t nodes)
{
    const QString setting = settingText(mode);
    if (brief) {
        switch (mode) {
        case Core::WhenClusterDown::Local: return tr("each node enforces its share (%1)").arg(setting);
        case Core::WhenClusterDown::Open: return tr("each node enforces the whole limit alone (%1)").arg(setting);
        case Core::WhenClusterDown::Closed: return tr("counted requests are refused (%1)").arg(setting);
        }
        return {};
    }
    switch (mode) {
    case Core::WhenClusterDown::Local:
        return nodes > 1 ? tr("While Redis is out of reach, each node enforces its share of every limit: the limit ÷ %1 "
                              "(rounded up) for the %2 last counted (%3).")
                               .arg(nodes)
                               .arg(nodesText(nodes), setting)
                         : tr("While Redis is out of reach, each node enforces its share of every limit: the whole limit while "
                              "it is the only node counted (%1).")
                               .arg(setting);
    case Core::WhenClusterDown::Open:
        return tr("While Redis is out of reach, each node enforces every limit whole on its own counts: a client spread over "
                  "%1 may get up to %2 times its limit (%3).")
            .arg(nodesText(nodes))
            .arg(nodes)
            .arg(setting);
    case Core::WhenClusterDown::Closed:
        return tr("While Redis is out of reach, every counted request is refused (reason cluster_down, Retry-After: 1); "
                  "lists and excluded paths keep working (%1).")
            .arg(setting);
    }
    return {};
}

QString indicator(const Cluster::ClusterStatus& s, Core::WhenClusterDown mode)
{
    if (s.redis == Redis::Down)
        return tr("Redis down — %1").arg(whenDown(mode, true));
    // The round trip once there is one: no batch goes out before the first counted request.
    if (s.batches == 0)
        return tr("Cluster: %1 · Redis %2").arg(nodesText(s.nodesCounting), state(s.redis));
    return tr("Cluster: %1 · Redis %2 · %3").arg(nodesText(s.nodesCounting), state(s.redis), roundTrip(s));
}

QString indicatorToolTip(const Cluster::ClusterStatus& s, Core::WhenClusterDown mode)
{
    QString text = tr("This node, <b>%1</b>, counts together with every node on the Redis at %2: "
                      "<b>%3</b> counting now (a heartbeat in the last %4).")
                       .arg(qs(s.node).toHtmlEscaped(), qs(s.url).toHtmlEscaped(), nodesText(s.nodesCounting),
                            formatDuration(Core::Tuning::clusterAliveMs, Span::Length));
    text += QStringLiteral("<br><span style='color:%1'>●</span> Redis <b>%2</b>: %3")
                .arg(color(s.redis).name(), state(s.redis), stateMeaning(s.redis).toHtmlEscaped());
    if (s.redis == Redis::Down)
        text += QStringLiteral("<br>") + whenDown(mode, false, s.nodesCounting).toHtmlEscaped();
    else
        text += s.batches ? tr("<br>Round trip: %1, the last batch of reports to Redis and back.").arg(roundTrip(s))
                          : tr("<br>No batch of reports has gone to Redis yet (none before the first counted request).");
    text += tr("<br><br>Click for the nodes, the sync lag, the clock offset and the errors.");
    return text;
}

QString hereAndCluster(std::uint32_t usedHere, std::uint32_t used)
{
    return tr("%1 here · %2 in the cluster").arg(formatCount(usedHere), formatCount(used));
}

QString judgedOnTheCluster(std::uint32_t usedHere, std::uint32_t used, std::uint32_t limit)
{
    return tr("%1 of the %2 requests in the window were counted on this node, %3 on the other nodes (as Redis said with "
              "this node's last report of the client). The limit (%4) is judged on the cluster's count, every node's "
              "requests together.")
        .arg(formatCount(usedHere), formatCount(used), formatCount(used >= usedHere ? used - usedHere : 0), formatCount(limit));
}

} // namespace Floodgate::Ui::ClusterText
