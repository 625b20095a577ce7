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

} // namespace Floodgate::Cluster::Scripts
