// SPDX-License-Identifier: MIT
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
}
namespace Floodgate::Storage {
class Store;
}

namespace Floodgate::App {

// Before cluster.join() and store.start().
void shareThroughCluster(Cluster::ClusterSync& cluster, Storage::Store& store, Core::Engine& engine);

} // namespace Floodgate::App
