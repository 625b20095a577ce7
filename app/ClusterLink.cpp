// SPDX-License-Identifier: MIT
#include "app/ClusterLink.h"

#include "cluster/ClusterSync.h"
#include "cluster/SyncProtocol.h"
#include "core/Engine.h"
#include "storage/Store.h"
#include "wire/Codec.h"

#include <cstdio>

namespace Floodgate::App {

namespace {

using Part = Storage::ConfigChange::Part;

// The collections, in the order a node applies them (Cluster::Sharing).
constexpr const char* SAFELIST = "safelist";
constexpr const char* BLOCKLIST = "blocklist";
constexpr const char* TIERS = "tiers";
constexpr const char* CUSTOMERS = "customers";
constexpr const char* RULES = "rules";

const char* collectionOf(Part part)
{
    switch (part) {
    case Part::Tier: return TIERS;
    case Part::Customer: return CUSTOMERS;
    case Part::Rules: return RULES;
    }
    return RULES;
}

void refused(const Cluster::SharedChange& c, const std::string& why)
{
    std::fprintf(stderr, "floodgate: a change from the cluster (%s %s, by %s) was not applied here: %s\n", c.collection.c_str(),
                 c.key.c_str(), c.actor.c_str(), why.c_str());
}

// Another node's change, written here like an operator's (actor "cluster:NODE/...").
void apply(Storage::Store& store, const Cluster::SharedChange& c)
{
    const Storage::Actor actor{c.actor};
    auto report = [c](const Storage::Outcome& o) {
        // Removing what is not here any more is what was wanted.
        if (!o.ok() && !(c.removed && o.result == Storage::Result::NotFound))
            refused(c, o.error);
    };
    if (c.collection == SAFELIST || c.collection == BLOCKLIST) {
        const Core::ListKind kind = c.collection == SAFELIST ? Core::ListKind::Safelist : Core::ListKind::Blocklist;
        if (c.removed) {
            if (const auto range = Core::Cidr::parse(c.key))
                store.removeEntry(kind, *range, actor, report);
            else
                refused(c, "not an address range");
        } else if (const auto entry = Cluster::decodeEntry(c.value)) {
            store.addEntry(kind, *entry, actor, report);
        } else {
            refused(c, "not a list entry");
        }
        return;
    }
    std::string why;
    std::optional<Wire::Json> json;
    if (!c.removed && !(json = Wire::Json::parse(c.value, &why))) {
        refused(c, "not JSON: " + why);
        return;
    }
    if (c.collection == TIERS) {
        if (c.removed)
            store.deleteTier(c.key, actor, report);
        else if (auto tier = Wire::Codec::tierFromJson(*json, c.key, &why))
            store.putTier(std::move(*tier), actor, report);
        else
            refused(c, why);
    } else if (c.collection == CUSTOMERS) {
        if (c.removed)
            store.deleteCustomer(c.key, actor, report);
        else if (auto customer = Wire::Codec::customerFromJson(*json, c.key, &why))
            store.putCustomer(std::move(*customer), actor, report);
        else
            refused(c, why);
    } else if (c.collection == RULES && !c.removed) {
        Core::EngineConfig rules;
        if (Wire::Codec::rulesFromJson(*json, rules, &why))
            store.putRules(std::move(rules), actor, report);
        else
            refused(c, why);
    }
}

// What this node holds of a collection, as the cluster keeps it.
Cluster::SharedItems read(Storage::Store& store, Core::Engine& engine, const std::string& collection)
{
    Cluster::SharedItems items;
    if (collection == SAFELIST || collection == BLOCKLIST) {
        for (const Core::ListEntry& e : engine.list(collection == SAFELIST ? Core::ListKind::Safelist : Core::ListKind::Blocklist)->entries())
            items.emplace(e.range.toString(), Cluster::encodeEntry(e));
        return items;
    }
    const Core::EngineConfig config = store.config();  // as stored: without the command line's overrides
    if (collection == TIERS)
        for (const Core::Tier& t : config.tiers)
            items.emplace(t.name, Wire::Codec::toJson(t).dump());
    else if (collection == CUSTOMERS)
        for (const Core::Customer& c : config.customers)
            items.emplace(c.id, Wire::Codec::toJson(c).dump());
    else if (collection == RULES)
        items.emplace(RULES, Wire::Codec::rulesToJson(config).dump());
    return items;
}

} // namespace

void shareThroughCluster(Cluster::ClusterSync& cluster, Storage::Store& store, Core::Engine& engine)
{
    Cluster::Sharing sharing;
    sharing.collections = {SAFELIST, BLOCKLIST, TIERS, CUSTOMERS, RULES};
    sharing.read = [&store, &engine](const std::string& collection) { return read(store, engine, collection); };
    sharing.apply = [&store](const Cluster::SharedChange& c) { apply(store, c); };
    cluster.share(std::move(sharing));

    store.onListChange([&cluster](const Core::ListChange& c) {
        cluster.publish(Cluster::SharedChange{Core::toString(c.kind), c.entry.range.toString(),
                                              c.removed ? std::string() : Cluster::encodeEntry(c.entry), c.removed, c.actor});
    });
    store.onConfigChange([&cluster](const Storage::ConfigChange& c) {
        cluster.publish(Cluster::SharedChange{collectionOf(c.part), c.key, c.removed ? std::string() : c.value.dump(), c.removed, c.actor});
    });
}

} // namespace Floodgate::App
