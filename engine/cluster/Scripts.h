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
// to its report; then, after the entries, one "<key> <field>" per field
// that was not a node's counts (written into Redis by something else) and
// was removed, so it cost that entry one report and nobody else anything.
extern const std::string_view report;

// Shared changes (SharedRecord.h), each stored in its collection's hash
// (what a node that joins reads; a removal stays as a tombstone) and
// appended to the change stream (what running nodes read), in one step,
// unless the hash holds a newer edit of the key (a later stamp; equal
// stamps are the same edit). A change whose stamp is not known (0) is
// stored only where the key has no record yet: a node that held an item
// when it started never overrides the cluster's edit of it.
//   KEYS[1] the stream "fg:changes"; KEYS[2..] pairs of a collection's
//           hash "fg:s:<collection>" and its endings "fg:x:<collection>"
//   ARGV    groups of 7: the index in KEYS of the collection's hash, the
//           collection, the key, the record, when Redis forgets it (ms,
//           Redis's clock: the item's end, a tombstone's; 0: never), its
//           stamp's time, and the record this node found unreadable there
//           ("" if none: a record that is exactly that is replaced)
// Returns, per change, 1 when stored, 0 when the hash holds a newer edit.
extern const std::string_view sharedPut;

// Items that ended by themselves leave their collections (no change in the
// stream: every node ends them at the same moment).
//   KEYS: pairs of a collection's hash and its endings
// Returns how many went.
extern const std::string_view sharedPrune;

} // namespace Floodgate::Cluster::Scripts
