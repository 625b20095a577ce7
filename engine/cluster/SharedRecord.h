// SPDX-License-Identifier: GPL-3.0-or-later
// A shared change as the nodes keep it in Redis (docs/CLUSTER.md, "Lists,
// tiers, customers and rules"): in a collection's hash (`fg:s:<collection>`,
// key -> record; a removal stays there as a tombstone) and in the change
// stream. A record carries when and where it was made (its stamp: the newer
// edit of a key wins, on every node and in Redis alike) and a tag made with
// the cluster key, so a record that was not written by a node of this
// cluster, or whose collection, key or value was changed in Redis, is
// refused by every node.
#pragma once

#include "cluster/ClusterKey.h"
#include "core/Time.h"

#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::Cluster {

// When and where an edit was made: the cluster's clock (Redis's, as every
// node moves its own) and the node's name. The later edit wins; the node's
// name breaks a tie, so every node and Redis pick the same. `at == 0`: not
// known (an item a node held when it started, before any edit it saw),
// older than any edit.
struct Stamp {
    Core::Millis at = 0;
    std::string node;
    bool known() const { return at > 0; }
};
bool newer(const Stamp& a, const Stamp& b);  // a was made after b

// Where a change came from (the audit trail's "who" says more).
enum class Origin : std::uint8_t {
    Here,     // made on this node: the console, its admin API, its command line, another process on its database
    Cluster,  // another node's, read from Redis
};

struct SharedChange {
    std::string collection;
    std::string key;
    std::string value;     // the item as the collection encodes it; empty when removed
    bool removed = false;
    std::string actor;     // who made it ("api:127.0.0.1"); applied elsewhere: "cluster:NODE/api:127.0.0.1"
    Stamp stamp;           // set by the sync when it is published
    Origin origin = Origin::Here;

    static SharedChange put(std::string collection, std::string key, std::string value, std::string actor)
    {
        SharedChange c;
        c.collection = std::move(collection);
        c.key = std::move(key);
        c.value = std::move(value);
        c.actor = std::move(actor);
        return c;
    }
    static SharedChange removal(std::string collection, std::string key, std::string actor)
    {
        SharedChange c = put(std::move(collection), std::move(key), {}, std::move(actor));
        c.removed = true;
        return c;
    }
};

// "<at>;<n>:<node>;<op>;<n>:<actor>;<tag>;<value>" with op "put" or "del"
// (the scripts read the stamp at its start: Scripts.cpp).
std::string encodeRecord(const SharedChange& change, const ClusterKey& key);
// The record stored under `collection` and `key`, its tag verified (over
// the collection and the key as well, so a record moved to another key or
// collection is refused). nullopt with the reason in one line.
std::optional<SharedChange> decodeRecord(std::string_view collection, std::string_view key, std::string_view text, const ClusterKey& clusterKey,
                                         std::string* why);

} // namespace Floodgate::Cluster
