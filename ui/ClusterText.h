// SPDX-License-Identifier: GPL-3.0-or-later
// How the console words and colours a cluster node's view of its cluster
// (docs/CLUSTER.md): one place for the status bar's indicator and the
// Cluster dialog, so both say "Redis down" and the same consequence.
#pragma once

#include "cluster/ClusterSync.h"
#include "core/Rules.h"

#include <QColor>
#include <QIcon>
#include <QString>

namespace Floodgate::Ui::ClusterText {

using Redis = Cluster::ClusterStatus::Redis;

QString state(Redis redis);  // "up", "degraded", "down"
// Green, amber, red: the shades the console uses for allowed, throttled, blocked.
QColor color(Redis redis);
// A filled dot of that colour, for the indicator and the dialog's heading.
QIcon dot(Redis redis);
// What each state means, one sentence.
QString stateMeaning(Redis redis);
// The last batch's round trip, "0.3 ms"; "–" before the first batch.
QString roundTrip(const Cluster::ClusterStatus& status);
QString syncLag(const Cluster::ClusterStatus& status);  // "2 ms"; "–" before the first batch
QString clockOffset(Core::Millis offsetMs);             // "+3 ms", "-1,200 ms", "0 ms"
// What a node does while Redis is out of reach, as the rules say. `brief`
// for the status bar: "each node enforces its share (when_cluster_down: local)";
// otherwise a sentence for the dialog that says the share for `nodes`.
QString whenDown(Core::WhenClusterDown mode, bool brief, std::uint32_t nodes = 1);
// The status bar's line: "Cluster: 3 nodes · Redis up · 0.3 ms" (the
// round trip left out before the first batch), or
// "Redis down — each node enforces its share (when_cluster_down: local)".
QString indicator(const Cluster::ClusterStatus& status, Core::WhenClusterDown mode);
// Its tooltip (rich text): who counts together, what the state means, what a click shows.
QString indicatorToolTip(const Cluster::ClusterStatus& status, Core::WhenClusterDown mode);

// Changes made on this node that never reached the cluster
// (ClusterStatus::droppedChanges), and what to do about them; empty while
// there are none.
QString droppedChanges(std::uint64_t dropped);
// What came from Redis and was not applied here (refused changes, removed
// malformed fields) and a refused levelling, each with its last line and
// what to do; empty while nothing happened.
QString sharedProblems(const Cluster::ClusterStatus& status);

// A client's count in a cluster: "4 here · 9 in the cluster".
QString hereAndCluster(std::uint32_t usedHere, std::uint32_t used);
// Why both: a sentence for tooltips.
QString judgedOnTheCluster(std::uint32_t usedHere, std::uint32_t used, std::uint32_t limit);

} // namespace Floodgate::Ui::ClusterText
