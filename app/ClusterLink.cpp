// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/ClusterLink.h"

#include "cluster/ClusterSync.h"
#include "cluster/SyncProtocol.h"
#include "core/Engine.h"
#include "core/Tuning.h"
#include "storage/Store.h"
#include "wire/Codec.h"

#include <charconv>
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
// Not the operator's: what the engines make as they decide (docs/CLUSTER.md).
constexpr const char* BANS = "bans";            // automatic bans: counting range -> the entry with its ban number
constexpr const char* COOLDOWNS = "cooldowns";  // SharedCooldown::key -> until (ms)
// The escalation history: counting range -> "bans,lastBanAt", kept for as
// long as a node remembers it (Tuning::escalationMemoryMs), so a node that
// joins after a client's last ban has ended still continues its count.
constexpr const char* HISTORY = "history";

std::optional<Core::Millis> number(std::string_view text)
{
    Core::Millis v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size())
        return std::nullopt;
    return v;
}

std::string encodeHistory(std::uint32_t bans, Core::Millis lastBanAt)
{
    return std::to_string(bans) + "," + std::to_string(lastBanAt);
}

// "bans,lastBanAt" with at least one ban.
std::optional<std::pair<std::uint32_t, Core::Millis>> decodeHistory(std::string_view text)
{
    const auto comma = text.find(',');
    if (comma == std::string_view::npos)
        return std::nullopt;
    const auto bans = number(text.substr(0, comma));
    const auto at = number(text.substr(comma + 1));
    if (!bans || !at || *bans < 1 || *bans > std::int64_t(UINT32_MAX))
        return std::nullopt;
    return std::make_pair(std::uint32_t(*bans), *at);
}

const char* collectionOf(Part part)
{
    switch (part) {
    case Part::Tier: return TIERS;
    case Part::Customer: return CUSTOMERS;
    case Part::Rules: return RULES;
    }
    return RULES;
}

// What this node holds of one operator's item, as the cluster encodes it
// (nullopt: nothing, or a collection the engines make).
std::optional<std::string> held(Storage::Store& store, Core::Engine& engine, const std::string& collection, const std::string& key)
{
    if (collection == SAFELIST || collection == BLOCKLIST) {
        const auto range = Core::Cidr::parse(key);
        const Core::ListEntry* e = range ? engine.list(collection == SAFELIST ? Core::ListKind::Safelist : Core::ListKind::Blocklist)->find(*range) : nullptr;
        return e ? std::optional<std::string>(Cluster::encodeEntry(*e)) : std::nullopt;
    }
    if (collection != TIERS && collection != CUSTOMERS && collection != RULES)
        return std::nullopt;
    const Core::EngineConfig config = store.config();
    if (collection == TIERS) {
        for (const Core::Tier& t : config.tiers)
            if (t.name == key)
                return Wire::Codec::toJson(t).dump();
    } else if (collection == CUSTOMERS) {
        for (const Core::Customer& c : config.customers)
            if (c.id == key)
                return Wire::Codec::toJson(c).dump();
    } else {
        return Wire::Codec::rulesToJson(config).dump();
    }
    return std::nullopt;
}

// Another node's change, written here like an operator's (actor "cluster:NODE/...").
void apply(Cluster::ClusterSync& cluster, Storage::Store& store, Core::Engine& engine, const Core::Clock& clock, const Cluster::SharedChange& c)
{
    // Already so here (the same item sent back by a node that refilled an
    // emptied Redis): nothing to write, nothing to audit.
    if (!c.removed && held(store, engine, c.collection, c.key) == c.value)
        return;
    const Storage::Actor actor{c.actor};
    auto refused = [&cluster](const Cluster::SharedChange& change, const std::string& why) { cluster.refuse(change, why); };
    auto report = [c, &cluster](const Storage::Outcome& o) {
        // Removing what is not here any more is what was wanted.
        if (!o.ok() && !(c.removed && o.result == Storage::Result::NotFound))
            cluster.refuse(c, o.error);
    };
    if (c.collection == BANS) {
        const auto range = Core::Cidr::parse(c.key);
        if (!range) {
            refused(c, "not an address range");
        } else if (c.removed) {
            // Lifted on another node (or not the cluster's any more): the
            // same as the operator's removal here, but never an operator's
            // entry for the range.
            if (engine.automaticBans()->find(*range))
                store.removeEntry(Core::ListKind::Blocklist, *range, actor, report);
        } else if (const auto ban = Cluster::decodeEntry(c.value); ban && ban->source == Core::ListSource::Automatic && ban->range == *range) {
            // The engine holds it first (it applies at once); storage
            // journals it behind, as it does the bans made here.
            if (engine.takeAutomaticBan(*ban, clock.now()))
                store.journalAutomaticBan(*ban, c.actor);
        } else {
            refused(c, "not an automatic ban");
        }
        return;
    }
    if (c.collection == HISTORY) {
        // Removed: the cluster has forgotten it (its time is up, or Redis
        // lost it); this node forgets its own copy at the same time anyway.
        if (c.removed)
            return;
        const auto range = Core::Cidr::parse(c.key);
        const auto h = decodeHistory(c.value);
        if (!range || !h) {
            refused(c, "not an escalation history");
            return;
        }
        engine.restoreOffenders({Core::Engine::OffenderRecord{range->address(), h->first, h->second}});
        store.recordOffender(Storage::OffenderRow{*range, h->first, h->second});
        return;
    }
    if (c.collection == COOLDOWNS) {
        if (c.removed) {
            engine.dropCooldown(c.key);
        } else if (const auto until = number(c.value); !until || !engine.takeCooldown(Core::SharedCooldown{c.key, *until})) {
            refused(c, "not a cooldown");
        }
        return;
    }
    if (c.collection == SAFELIST || c.collection == BLOCKLIST) {
        const Core::ListKind kind = c.collection == SAFELIST ? Core::ListKind::Safelist : Core::ListKind::Blocklist;
        if (c.removed) {
            if (const auto range = Core::Cidr::parse(c.key))
                store.removeEntry(kind, *range, actor, report);
            else
                refused(c, "not an address range");
        } else if (const auto entry = Cluster::decodeEntry(c.value); !entry) {
            refused(c, "not a list entry");
        } else if (const auto range = Core::Cidr::parse(c.key); !range || entry->range != *range) {
            // The range applied is the key's, the one the tag and the
            // collection's hash name: never another that the value claims.
            refused(c, "its entry is for " + entry->range.toString() + ", not for its key");
        } else {
            store.addEntry(kind, *entry, actor, report);
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
Cluster::SharedItems read(Storage::Store& store, Core::Engine& engine, Core::Millis now, const std::string& collection)
{
    Cluster::SharedItems items;
    if (collection == BANS) {
        engine.automaticBans()->forEach([&](const Core::ListEntry& e) {
            if (e.activeAt(now))
                items.emplace(e.range.toString(), Cluster::encodeEntry(e));
        });
        return items;
    }
    if (collection == HISTORY) {
        for (const Core::Engine::OffenderRecord& o : engine.offenders(now))
            items.emplace(engine.countingRange(o.key).toString(), encodeHistory(o.bans, o.lastBanAt));
        return items;
    }
    if (collection == COOLDOWNS) {
        for (const Core::SharedCooldown& c : engine.cooldowns(now))
            items.emplace(c.key, std::to_string(c.until));
        return items;
    }
    if (collection == SAFELIST || collection == BLOCKLIST) {
        // Not what has ended and waits for the purge: Redis forgets it at its end.
        engine.list(collection == SAFELIST ? Core::ListKind::Safelist : Core::ListKind::Blocklist)->forEach([&](const Core::ListEntry& e) {
            if (e.activeAt(now))
                items.emplace(e.range.toString(), Cluster::encodeEntry(e));
        });
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

// When an item ends by itself (Cluster::Sharing::expiresAt).
Core::Millis expiresAt(const std::string& collection, const std::string& value)
{
    if (collection == SAFELIST || collection == BLOCKLIST || collection == BANS) {
        const auto e = Cluster::decodeEntry(value);
        return e && e->expiresAt != Core::NeverExpires ? e->expiresAt : 0;
    }
    if (collection == COOLDOWNS)
        return number(value).value_or(0);
    if (collection == HISTORY) {
        const auto h = decodeHistory(value);
        return h ? h->second + Core::Tuning::escalationMemoryMs : 0;
    }
    return 0;
}

} // namespace

void announceAutomaticBan(Cluster::ClusterSync& cluster, const Core::ListEntry& ban)
{
    cluster.publish(Cluster::SharedChange::put(BANS, ban.range.toString(), Cluster::encodeEntry(ban), ban.createdBy));
    // The history outlives the ban: a node that joins once it has ended still
    // continues the count.
    if (ban.banCount > 0)
        cluster.publish(Cluster::SharedChange::put(HISTORY, ban.range.toString(), encodeHistory(ban.banCount, ban.createdAt), ban.createdBy));
}

void shareThroughCluster(Cluster::ClusterSync& cluster, Storage::Store& store, Core::Engine& engine)
{
    Cluster::Sharing sharing;
    sharing.collections = {SAFELIST, BLOCKLIST, TIERS, CUSTOMERS, RULES, HISTORY, BANS, COOLDOWNS};
    const Core::Clock& clock = cluster.clock();
    sharing.read = [&store, &engine, &clock](const std::string& collection) { return read(store, engine, clock.now(), collection); };
    sharing.apply = [&cluster, &store, &engine, &clock](const Cluster::SharedChange& c) { apply(cluster, store, engine, clock, c); };
    sharing.expiresAt = expiresAt;
    cluster.share(std::move(sharing));

    store.onListChange([&cluster](const Core::ListChange& c) {
        const std::string list = Core::toString(c.kind);
        cluster.publish(c.removed ? Cluster::SharedChange::removal(list, c.entry.range.toString(), c.actor)
                                  : Cluster::SharedChange::put(list, c.entry.range.toString(), Cluster::encodeEntry(c.entry), c.actor));
        // An operator's removal lifts an automatic ban for the range: the
        // cluster forgets the ban too, so a node started later does not take
        // it. (An operator's entry that replaces a ban leaves the ban in
        // Redis until it ends; a node that takes it keeps the operator's.)
        if (c.kind == Core::ListKind::Blocklist && c.removed)
            cluster.publish(Cluster::SharedChange::removal(BANS, c.entry.range.toString(), c.actor));
    });
    engine.onCooldownStarted([&cluster](const Core::SharedCooldown& c) {
        cluster.publish(Cluster::SharedChange::put(COOLDOWNS, c.key, std::to_string(c.until), "floodgate"));
    });
    store.onConfigChange([&cluster](const Storage::ConfigChange& c) {
        // The demo's customers (--demo) stay on the node that runs it.
        if (c.actor == "demo")
            return;
        cluster.publish(c.removed ? Cluster::SharedChange::removal(collectionOf(c.part), c.key, c.actor)
                                  : Cluster::SharedChange::put(collectionOf(c.part), c.key, c.value.dump(), c.actor));
    });
}

} // namespace Floodgate::App
