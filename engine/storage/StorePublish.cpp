// SPDX-License-Identifier: GPL-3.0-or-later
// Publishing what was committed to the engine (the rules, list changes, everything after another process wrote), and purging expired entries.
#include "storage/Store.h"

#include "wire/Codec.h"
#include "core/Engine.h"
#include "storage/Sqlite.h"
#include "storage/StoreEffects.h"
#include "storage/Tables.h"

#include <algorithm>
#include <map>
#include <type_traits>

namespace Floodgate::Storage {

using namespace Core;
using namespace Wire;

void Store::publishConfig(EngineConfig config)
{
    if (!m_engine)
        return;
    m_stored = config;
    if (m_adjust)
        m_adjust(config);
    if (auto error = m_engine->setConfig(config)) {
        report("the stored configuration is not valid (" + *error + "); the running one stays");
        return;
    }
    if (m_published)
        m_published(config);
}

void Store::publish(const Effects& fx)
{
    if (!m_engine)
        return;
    if (fx.config)
        publishConfig(Tables::readConfig(*m_writer));
    std::vector<ListEntry> written;  // automatic bans whose rows this batch wrote
    for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
        std::vector<ListEntry> added;
        std::vector<Cidr> removed;
        for (const auto& [k, e] : fx.upserts) {
            if (k != kind)
                continue;
            if (e.source == ListSource::Automatic) {
                // The engine holds the ban already; its row is now on disk.
                written.push_back(e);
                continue;
            }
            added.push_back(e);
            if (kind == ListKind::Blocklist)
                m_engine->removeAutomaticBan(e.range);  // the operator's entry replaces it
        }
        for (const auto& [k, range] : fx.removals) {
            if (k != kind)
                continue;
            removed.push_back(range);
            if (kind == ListKind::Blocklist)
                m_engine->removeAutomaticBan(range);
        }
        // The batch's removals, then its entries, each put last: the list
        // is edited, not rebuilt (an automatic ban is not on the operator's list).
        m_engine->editList(kind, added, removed);
    }
    m_engine->automaticBansStored(written);
    tellChanges(fx);
}

void Store::tellChanges(const Effects& fx)
{
    // A change a cluster brought is not sent back to it.
    if (m_listChanged)
        for (const ListChange& c : fx.listChanges)
            if (!c.actor.starts_with("cluster:"))
                m_listChanged(c);
    if (m_configChanged)
        for (const ConfigChange& c : fx.configChanges)
            if (!c.actor.starts_with("cluster:"))
                m_configChanged(c);
}

namespace {

bool sameEntry(const ListEntry& a, const ListEntry& b)
{
    return a.range == b.range && a.reason == b.reason && a.source == b.source && a.createdAt == b.createdAt && a.createdBy == b.createdBy
        && a.expiresAt == b.expiresAt;
}

// The items of `before` and `after` keyed by `keyOf`: what `after` put
// (added or changed, `same` says which are unchanged) and what it took away.
template <class T, class KeyOf, class Same, class Put, class Removed>
void compare(const std::vector<T>& before, const std::vector<T>& after, KeyOf keyOf, Same same, Put put, Removed removed)
{
    std::map<std::invoke_result_t<KeyOf, const T&>, const T*> old;
    for (const T& x : before)
        old.emplace(keyOf(x), &x);
    for (const T& x : after) {
        const auto it = old.find(keyOf(x));
        if (it == old.end() || !same(*it->second, x))
            put(x);
        if (it != old.end())
            old.erase(it);
    }
    for (const auto& [key, x] : old)
        removed(*x);
}

} // namespace

void Store::tellReloaded(const Loaded& stored)
{
    Effects fx;
    const std::string actor = "another process";
    if (m_listChanged && m_engine) {
        for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
            compare(m_engine->list(kind)->entries(), kind == ListKind::Safelist ? stored.safelist : stored.blocklist,
                    [](const ListEntry& e) { return e.range; }, sameEntry,
                    [&](const ListEntry& e) { fx.listChanges.push_back(ListChange{kind, e, false, actor}); },
                    [&](const ListEntry& e) {
                        ListChange removal{kind, {}, true, actor};
                        removal.entry.range = e.range;
                        fx.listChanges.push_back(std::move(removal));
                    });
        }
    }
    if (m_configChanged && m_stored) {
        // In the order another node can apply them: a tier before the
        // customers put on it, a customer removed before its tier.
        using Part = ConfigChange::Part;
        std::vector<ConfigChange> tierPuts, tierRemovals, customerPuts, customerRemovals;
        auto sameJson = [](const auto& a, const auto& b) { return Codec::toJson(a) == Codec::toJson(b); };
        compare(m_stored->tiers, stored.config.tiers, [](const Tier& t) { return t.name; }, sameJson,
                [&](const Tier& t) { tierPuts.push_back(ConfigChange{Part::Tier, t.name, Codec::toJson(t), false, actor}); },
                [&](const Tier& t) { tierRemovals.push_back(ConfigChange{Part::Tier, t.name, Json(), true, actor}); });
        compare(m_stored->customers, stored.config.customers, [](const Customer& c) { return c.id; }, sameJson,
                [&](const Customer& c) { customerPuts.push_back(ConfigChange{Part::Customer, c.id, Codec::toJson(c), false, actor}); },
                [&](const Customer& c) { customerRemovals.push_back(ConfigChange{Part::Customer, c.id, Json(), true, actor}); });
        for (auto* part : {&tierPuts, &customerPuts, &customerRemovals, &tierRemovals})
            for (ConfigChange& c : *part)
                fx.configChanges.push_back(std::move(c));
        if (Json rules = Codec::rulesToJson(stored.config); rules != Codec::rulesToJson(*m_stored))
            fx.configChanges.push_back(ConfigChange{Part::Rules, "rules", std::move(rules), false, actor});
    }
    tellChanges(fx);
}

void Store::publishAll()
{
    if (!m_engine)
        return;
    Loaded stored = readStored(*m_writer);
    tellReloaded(stored);
    publishConfig(std::move(stored.config));
    m_engine->setList(ListKind::Safelist, std::make_shared<const AddressList>(std::move(stored.safelist)));
    m_engine->setList(ListKind::Blocklist, std::make_shared<const AddressList>(std::move(stored.blocklist)));
    m_engine->reloadAutomaticBans(std::move(stored.automatic));  // keeps the bans not written yet
}

void Store::purgeExpired()
{
    const Millis now = m_clock.now();
    std::vector<ListedEntry> gone;
    {
        WriteTransaction tx(*m_writer);
        // Escalation history is forgotten after a week without a new ban, as the engine does.
        const std::size_t forgotten = Tables::deleteOffendersBefore(*m_writer, now - Tuning::escalationMemoryMs);
        gone = Tables::deleteExpired(*m_writer, now);
        if (gone.empty()) {
            if (forgotten)
                tx.commit();
            return;  // otherwise the transaction rolls back: nothing was written
        }
        // One audit row per purge; the rows that created the entries stay.
        Json before = Json::array();
        for (std::size_t i = 0; i < gone.size() && i < 100; ++i)
            before.push(Codec::toJson(gone[i].entry, gone[i].kind, now));
        writeAudit(*m_writer, Actor{"floodgate"}, "list.expire", std::to_string(gone.size()) + (gone.size() == 1 ? " entry" : " entries"),
                   &before, nullptr);
        tx.commit();
    }
    if (!m_engine)
        return;
    // Expired entries already stopped applying at their expiry; this only
    // frees their memory. The engine forgets its own expired bans in purge().
    for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
        const bool any = std::any_of(gone.begin(), gone.end(), [&](const ListedEntry& e) {
            return e.kind == kind && e.entry.source != ListSource::Automatic;
        });
        if (any)
            m_engine->setList(kind, std::make_shared<const AddressList>(m_engine->list(kind)->withoutExpired(now)));
    }
}

} // namespace Floodgate::Storage
