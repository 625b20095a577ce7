// SPDX-License-Identifier: GPL-3.0-or-later
// The Lua scripts the sync runs in Redis (EVALSHA; loaded again when a
// restarted Redis has forgotten them). docs/CLUSTER.md explains the data
// they keep and the error bound they hold.
#pragma once

#include <string_view>

namespace Floodgate::Cluster::Scripts {

// One batch of entry reports (the formats in detail: Scripts.cpp).
//   KEYS[i]   the entry's hash ("fg:e:<entry>"), one field per node
//   ARGV[1]   this node's name; ARGV[2] nodes counting together; ARGV[3]
//             the short lease (ms); ARGV[4] the longest quiet lease (ms)
//   ARGV[4+i] the report of KEYS[i]: "QH1;H2;...#S1;S2;...;=T" (Q, in
//             binary: what is left of the lease, the entry's quiet lease,
//             each level's limit and total; each level's header; then the
//             field Redis stores)
// Returns, per entry, "granted,reserved,leaseMs,lapseAt,now|F|F..."
// (reserved: the other nodes' unexpired leases; now: Redis's clock) with
// each F another counting node's field as stored, which the node aligns
// to its report.
extern const std::string_view report;

// One change to a shared collection: the collection's hash (the snapshot
// a node starting later reads) and the change stream (what running nodes
// read), in one step.
//   KEYS[1] the collection's hash "fg:s:<collection>"; KEYS[2] the stream
//   "fg:changes"; KEYS[3] "fg:seeded"; KEYS[4] the collection's endings
//   "fg:x:<collection>" (a sorted set: key by when it ends)
//   ARGV[1] node; ARGV[2] "put" or "del"; ARGV[3] the collection; ARGV[4]
//   the key; ARGV[5] the value ("" for "del"); ARGV[6] who made it;
//   ARGV[7] when the item ends (ms, Redis's clock; 0: never)
// Returns the stream entry's id.
extern const std::string_view sharedChange;

// The first node of a cluster writes what it holds into Redis; any later
// one finds the cluster seeded.
//   KEYS[1] "fg:seeded"; KEYS[2..] each collection's hash then its endings
//   ARGV: quadruples of the hash's index (2 for KEYS[2]), key, value, end (0: never)
// Returns 1 when it seeded them, 0 when the cluster was seeded already.
extern const std::string_view sharedSeed;

// Items that ended by themselves leave their collections (no change in the
// stream: every node ends them at the same moment).
//   KEYS: pairs of a collection's hash and its endings
// Returns how many went.
extern const std::string_view sharedPrune;

} // namespace Floodgate::Cluster::Scripts
