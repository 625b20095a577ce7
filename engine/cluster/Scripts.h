// SPDX-License-Identifier: MIT
// The Lua scripts the sync runs in Redis (EVALSHA; loaded again when a
// restarted Redis has forgotten them). docs/CLUSTER.md explains the data
// they keep and the error bound they hold.
#pragma once

#include <string_view>

namespace Floodgate::Cluster::Scripts {

// One batch of entry reports.
//   KEYS[i]   the entry's hash ("fg:e:<entry>"), one field per node
//   ARGV[1]   this node's name; ARGV[2] nodes counting together; ARGV[3] lease (ms)
//   ARGV[3+i] the report of KEYS[i]: "held;L1;L2;..." with each level
//             "algorithm,limit,period,bucket,stamp,lockedUntil,c1,c2,..."
//             (algorithm 0 sliding, 1 fixed, 2 lockout; counts oldest first)
// Returns, per entry, "granted;O1;O2;..." with each level's other-node
// counts "stamp,lockedUntil,c1,c2,..." aligned to the report's stamps.
extern const std::string_view report;

// One operator change to a list: the list's hash (the snapshot a node
// starting later reads) and the change stream (what running nodes read), in
// one step.
//   KEYS[1] "fg:l:safelist" or "fg:l:blocklist"; KEYS[2] the stream "fg:lc";
//   KEYS[3] "fg:lists:seeded"
//   ARGV[1] node; ARGV[2] "put" or "del"; ARGV[3] the list; ARGV[4] the
//   range; ARGV[5] the entry (SyncProtocol.h's encodeEntry; "" for "del")
// Returns the stream entry's id.
extern const std::string_view listChange;

// The first node of a cluster writes its lists into Redis; any later one
// finds them there.
//   KEYS[1] "fg:l:safelist"; KEYS[2] "fg:l:blocklist"; KEYS[3] "fg:lists:seeded"
//   ARGV: triples of list ("safelist"/"blocklist"), range, entry
// Returns 1 when it seeded them, 0 when the cluster had lists already.
extern const std::string_view listSeed;

} // namespace Floodgate::Cluster::Scripts
