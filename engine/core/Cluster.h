// SPDX-License-Identifier: GPL-3.0-or-later
// What the engine and the cluster sync (engine/cluster, docs/CLUSTER.md)
// hand each other: plain values, no I/O. The engine decides every request
// on what it holds; the sync thread takes the reports of the entries that
// need one (Engine::takeReports), sends them to Redis, and gives back what
// Redis answered (Engine::applyAcks): the other nodes' counts and this
// node's lease.
#pragma once

#include "core/TableKey.h"
#include "core/Rules.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <cstdint>
#include <string>
#include <vector>

namespace Floodgate::Core {

enum class ClusterState : std::uint8_t {
    Up,    // Redis answers: decisions count the other nodes' requests
    Down,  // out of reach: decisions follow the when_cluster_down setting
};

// One level's counts as a node reports them, or the other nodes' as Redis
// sums them. `stamp`: the newest bucket's index (sliding), the window's
// index (fixed) or the window's start in ms (lockout); `counts`: oldest
// first, one per bucket (sliding) or one.
struct SharedLevel {
    Algorithm algorithm = Algorithm::SlidingWindow;
    std::uint32_t limit = 0;
    Millis periodMs = 0;
    Millis bucketMs = 0;
    std::int64_t stamp = 0;
    std::vector<std::uint32_t> counts;
    Millis lockedUntil = 0;  // lockout
};

// One entry's report: this node's counts of every level, absolute (so a
// report may be repeated, and a Redis that lost its data is seeded again
// from it), and the lease it keeps.
struct SyncReport {
    // Names the entry the same on every node of a cluster (its table, its
    // key and the shape of its levels, in hex): what Redis keys it under.
    std::string entry;
    std::uint32_t held = 0;  // requests of its lease this node keeps
    Millis quietLeaseMs = Tuning::clusterQuietReportMs;  // its lease if Redis finds it far below its limits (quietLeaseMs())
    std::vector<SharedLevel> levels;

    // The engine's handle on the entry; the sync does not read these.
    std::uint8_t table = 0;
    TableKey key;
    std::uint32_t signature = 0;
    std::uint32_t admitted = 0;  // requests admitted since the report before
    Millis builtAt = 0;
};

// Redis's answer to one report.
struct SyncAck {
    bool ok = false;         // false: not delivered (the report stands as unsent)
    std::uint32_t granted = 0;   // requests added to this node's lease
    std::uint32_t reserved = 0;  // the other nodes' unexpired leases: room they may be spending unreported
    Millis leaseMs = Tuning::clusterLeaseMs;  // how long the lease lasts (the report's quietLeaseMs for a client far below its limits)
    Millis reservedLapseAt = 0;  // when the first of the other nodes' leases ends (Redis's clock; 0: none)
    std::vector<SharedLevel> others;  // per level: the other nodes' counts (what they admitted)
};

// How long a quiet lease of the entry with this key lasts (Tuning.h): from
// clusterQuietReportMs up to, not including, clusterQuietReportMs +
// clusterQuietSpreadMs, fixed by a hash of the key. The key names the entry
// the same on every node, so every node gives it the same length.
Millis quietLeaseMs(const TableKey& key);

// A cooldown as the nodes of a cluster share it: who is cooling down from
// which action (an opaque key, the same on every node: the user id's keyed
// hash under the cluster's hash key, or the counting address) and until when.
struct SharedCooldown {
    std::string key;
    Millis until = 0;
};

struct ClusterCounters {
    std::uint64_t waits = 0;       // decisions that had to wait for an acknowledgement
    std::uint64_t overdrafts = 0;  // requests admitted after waiting in vain (beyond the bound)
    std::uint64_t reports = 0;     // entry reports taken
    std::size_t queued = 0;        // entries waiting to report (scheduled included)
    std::size_t scheduled = 0;     // of those, entries waiting for their time (a lease's end, a quiet client's report-by)
    std::uint64_t leasesGivenUp = 0;  // quiet leases hardly used that were given up instead of renewed
};

} // namespace Floodgate::Core
