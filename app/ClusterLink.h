// SPDX-License-Identifier: GPL-3.0-or-later
// What a cluster node shares with the others (docs/CLUSTER.md, "what the
// nodes share"), in storage's terms: the safelist and the blocklist, the
// tiers, the customers and the rules. What is changed here (the console,
// the admin API, another process on the database file) is sent; what
// another node changed is written here through the store, so it is on disk
// and in the audit trail before it applies.
#pragma once

namespace Floodgate::Cluster {
class ClusterSync;
}
namespace Floodgate::Core {
class Engine;
struct ListEntry;
}
namespace Floodgate::Storage {
class Store;
}

namespace Floodgate::App {

// Before cluster.join() and store.start(). Besides the operator's
// collections, the engine's automatic bans (with their ban numbers: the
// escalation history) and its cooldowns are shared; the cooldowns' hook is
// set here.
void shareThroughCluster(Cluster::ClusterSync& cluster, Storage::Store& store, Core::Engine& engine);
// An automatic ban this node's engine made, for the other nodes (from the
// engine's onAutomaticBan hook, beside storage's journal: it only queues).
void announceAutomaticBan(Cluster::ClusterSync& cluster, const Core::ListEntry& ban);

} // namespace Floodgate::App
