// SPDX-License-Identifier: GPL-3.0-or-later
// The jobs the API, the console and the CLI submit: list entries (add, remove, import) and the configuration (tiers, customers, rules). Each runs inside the writer's transaction and says what it changed.
#include "storage/Store.h"

#include "wire/Codec.h"
#include "core/Engine.h"
#include "storage/Sqlite.h"
#include "storage/StoreEffects.h"
#include "storage/Tables.h"

#include <algorithm>

namespace Floodgate::Storage {

using namespace Core;
using namespace Wire;

namespace {

// Puts item in place of the element with the same key, or at the end; the
// JSON of the element it replaced, if any, for the audit trail.
template <class T, class KeyOf>
std::optional<Json> replaceOrAdd(std::vector<T>& items, const T& item, KeyOf keyOf)
{
    auto it = std::find_if(items.begin(), items.end(), [&](const T& x) { return keyOf(x) == keyOf(item); });
    if (it == items.end()) {
        items.push_back(item);
        return std::nullopt;
    }
    Json before = Codec::toJson(*it);
    *it = item;
    return before;
}

// Where the caller left them open: the entry starts now and is the actor's.
// A start the caller fixed stands (it computed the expiry from it: a 7-day
// block lasts exactly 7 days), unless it lies in the future.
void completeEntry(ListEntry& entry, Millis now, const Actor& actor)
{
    if (entry.createdAt == 0 || entry.createdAt > now)
        entry.createdAt = now;
    if (entry.createdBy.empty())
        entry.createdBy = actor.name;
}

} // namespace

void Store::addEntry(ListKind kind, ListEntry entry, Actor actor, Done done)
{
    submit("add to the " + std::string(toString(kind)), [this, kind, entry = std::move(entry), actor = std::move(actor)](Connection& db, Effects& fx) mutable {
        const Millis now = m_clock.now();
        if (entry.expiresAt <= now)
            return Outcome{Result::Invalid, "the entry would already be expired", {}};
        completeEntry(entry, now, actor);
        const auto before = Tables::upsertEntry(db, kind, entry);
        const Json after = Codec::toJson(entry, kind, now);
        if (before) {
            const Json old = Codec::toJson(*before, kind, now);
            writeAudit(db, actor, "list.replace", subjectOf(kind, entry.range), &old, &after);
        } else {
            writeAudit(db, actor, "list.add", subjectOf(kind, entry.range), nullptr, &after);
        }
        fx.upserts.emplace_back(kind, entry);
        fx.listChanges.push_back(ListChange{kind, entry, false, actor.name});
        return Outcome{before ? Result::Updated : Result::Created, {}, after};
    }, std::move(done));
}

void Store::removeEntry(ListKind kind, Cidr range, Actor actor, Done done)
{
    submit("remove from the " + std::string(toString(kind)), [this, kind, range, actor = std::move(actor)](Connection& db, Effects& fx) {
        const Millis now = m_clock.now();
        std::optional<Json> before;
        if (const auto old = Tables::findEntry(db, kind, range)) {
            Tables::deleteEntry(db, kind, range);
            before = Codec::toJson(old->entry, kind, now);
        } else if (kind == ListKind::Blocklist && m_engine) {
            // An escalation ban made a moment ago, its row not written yet:
            // drop it from the queue and lift it, so it does not come back.
            {
                std::lock_guard lock(m_mutex);
                std::erase_if(m_autoBans, [&](const JournalledBan& b) { return b.entry.range == range; });
            }
            const auto bans = m_engine->automaticBans();  // held while `held` points into it
            if (const ListEntry* held = bans->find(range); held && !held->stored())
                before = Codec::toJson(*held, kind, now);
        }
        if (!before)
            return Outcome{Result::NotFound, range.toString() + " is not on the " + toString(kind), {}};
        writeAudit(db, actor, "list.remove", subjectOf(kind, range), &*before, nullptr);
        fx.removals.emplace_back(kind, range);
        ListChange removal{kind, {}, true, actor.name};
        removal.entry.range = range;
        fx.listChanges.push_back(std::move(removal));
        return Outcome{Result::Removed, {}, *before};
    }, std::move(done));
}

void Store::putTier(Tier tier, Actor actor, Done done)
{
    std::string label = "save tier " + tier.name;  // before tier is moved into the job
    submit(std::move(label), [this, tier = std::move(tier), actor = std::move(actor)](Connection& db, Effects& fx) mutable {
        EngineConfig config = Tables::readConfig(db);
        // One namespace, case-insensitively: "pro" changes "Pro", which
        // keeps its spelling (a second tier differing only in case would
        // look like the same one everywhere it is shown).
        std::string ambiguous;
        if (const Tier* stored = findTier(config.tiers, tier.name, &ambiguous))
            tier.name = stored->name;
        else if (!ambiguous.empty())
            return Outcome{Result::Invalid, ambiguous, {}};
        const std::optional<Json> before = replaceOrAdd(config.tiers, tier, [](const Tier& t) -> const std::string& { return t.name; });
        if (auto error = validate(config))
            return Outcome{Result::Invalid, *error, {}};
        Tables::writeTier(db, tier);
        const Json after = Codec::toJson(tier);
        writeAudit(db, actor, before ? "tier.replace" : "tier.add", "tier " + tier.name, before ? &*before : nullptr, &after);
        fx.config = true;
        fx.configChanges.push_back(ConfigChange{ConfigChange::Part::Tier, tier.name, after, false, actor.name});
        return Outcome{before ? Result::Updated : Result::Created, {}, after};
    }, std::move(done));
}

void Store::deleteTier(std::string name, Actor actor, Done done)
{
    std::string label = "delete tier " + name;
    submit(std::move(label), [this, name = std::move(name), actor = std::move(actor)](Connection& db, Effects& fx) mutable {
        const EngineConfig config = Tables::readConfig(db);
        std::string ambiguous;
        const Tier* it = findTier(config.tiers, name, &ambiguous);
        if (!it)
            return Outcome{ambiguous.empty() ? Result::NotFound : Result::Invalid, ambiguous.empty() ? "there is no tier \"" + name + "\"" : ambiguous, {}};
        name = it->name;  // as it is spelt
        std::string users;
        std::size_t count = 0;
        for (const Customer& c : config.customers) {
            if (c.tier != name)
                continue;
            if (count++ < 3)
                users += (users.empty() ? "" : ", ") + c.id;
        }
        if (count)
            return Outcome{Result::Conflict, "tier \"" + name + "\" is used by " + std::to_string(count) + " customer" + (count == 1 ? "" : "s")
                                    + " (" + users + (count > 3 ? ", ..." : "") + "): move them to another tier first", {}};
        const Json before = Codec::toJson(*it);
        Tables::deleteTier(db, name);
        writeAudit(db, actor, "tier.delete", "tier " + name, &before, nullptr);
        fx.config = true;
        fx.configChanges.push_back(ConfigChange{ConfigChange::Part::Tier, name, Json(), true, actor.name});
        return Outcome{Result::Removed, {}, before};
    }, std::move(done));
}

void Store::putCustomer(Customer customer, Actor actor, Done done, Keys keys)
{
    std::string label = "save customer " + customer.id;
    submit(std::move(label), [this, customer = std::move(customer), actor = std::move(actor), keys](Connection& db, Effects& fx) mutable {
        EngineConfig config = Tables::readConfig(db);
        std::string ambiguous;
        const Tier* tier = findTier(config.tiers, customer.tier, &ambiguous);
        if (!tier)
            return Outcome{Result::Invalid, ambiguous.empty() ? "tier \"" + customer.tier + "\" is not a known tier" : ambiguous, {}};
        customer.tier = tier->name;  // as it is spelt: the engine matches exactly
        if (keys == Keys::Keep)
            for (const Customer& stored : config.customers)
                if (stored.id == customer.id)
                    customer.keys = stored.keys;
        const std::optional<Json> before = replaceOrAdd(config.customers, customer, [](const Customer& c) -> const std::string& { return c.id; });
        if (auto error = validate(config))
            return Outcome{Result::Invalid, *error, {}};
        Tables::writeCustomer(db, customer);
        const Json after = Codec::toJson(customer);
        writeAudit(db, actor, before ? "customer.replace" : "customer.add", "customer " + customer.id, before ? &*before : nullptr, &after);
        fx.config = true;
        fx.configChanges.push_back(ConfigChange{ConfigChange::Part::Customer, customer.id, after, false, actor.name});
        return Outcome{before ? Result::Updated : Result::Created, {}, after};
    }, std::move(done));
}

void Store::deleteCustomer(std::string id, Actor actor, Done done)
{
    std::string label = "delete customer " + id;
    submit(std::move(label), [this, id = std::move(id), actor = std::move(actor)](Connection& db, Effects& fx) {
        const EngineConfig config = Tables::readConfig(db);
        auto it = std::find_if(config.customers.begin(), config.customers.end(), [&](const Customer& c) { return c.id == id; });
        if (it == config.customers.end())
            return Outcome{Result::NotFound, "there is no customer \"" + id + "\"", {}};
        const Json before = Codec::toJson(*it);
        Tables::deleteCustomer(db, id);
        writeAudit(db, actor, "customer.delete", "customer " + id, &before, nullptr);
        fx.config = true;
        fx.configChanges.push_back(ConfigChange{ConfigChange::Part::Customer, id, Json(), true, actor.name});
        return Outcome{Result::Removed, {}, before};
    }, std::move(done));
}

void Store::changeCustomer(std::string id, std::string action, std::function<std::optional<Outcome>(Customer&, Millis)> change, Result success,
                           Actor actor, Done done)
{
    std::string label = action + " " + id;
    submit(std::move(label), [this, id = std::move(id), action = std::move(action), change = std::move(change), success,
                              actor = std::move(actor)](Connection& db, Effects& fx) {
        EngineConfig config = Tables::readConfig(db);
        auto it = std::find_if(config.customers.begin(), config.customers.end(), [&](const Customer& c) { return c.id == id; });
        if (it == config.customers.end())
            return Outcome{Result::NotFound, "there is no customer \"" + id + "\"", {}};
        const Json before = Codec::toJson(*it);
        if (auto refused = change(*it, m_clock.now()))
            return *refused;
        if (auto error = validate(config))
            return Outcome{Result::Invalid, *error, {}};
        Tables::writeCustomer(db, *it);
        const Json after = Codec::toJson(*it);
        writeAudit(db, actor, action, "customer " + id, &before, &after);
        fx.config = true;
        fx.configChanges.push_back(ConfigChange{ConfigChange::Part::Customer, id, after, false, actor.name});
        return Outcome{success, {}, after};
    }, std::move(done));
}

void Store::addCustomerKey(std::string id, CustomerKey key, Millis keepOthersMs, Actor actor, Done done)
{
    changeCustomer(
        std::move(id), "customer.key_add",
        [key = std::move(key), keepOthersMs](Customer& c, Millis now) -> std::optional<Outcome> {
            if (keepOthersMs <= 0) {
                c.keys.clear();
            } else {
                const Millis until = now + keepOthersMs;
                for (CustomerKey& k : c.keys)
                    if (k.expiresAt == 0 || k.expiresAt > until)
                        k.expiresAt = until;
                std::erase_if(c.keys, [&](const CustomerKey& k) { return k.expiresAt <= now; });  // expired already: not kept
            }
            c.keys.push_back(key);
            return std::nullopt;
        },
        Result::Created, std::move(actor), std::move(done));
}

void Store::revokeCustomerKey(std::string id, std::string keyId, Actor actor, Done done)
{
    changeCustomer(
        std::move(id), "customer.key_revoke",
        [keyId = std::move(keyId)](Customer& c, Millis) -> std::optional<Outcome> {
            if (std::erase_if(c.keys, [&](const CustomerKey& k) { return k.id == keyId; }) == 0)
                return Outcome{Result::NotFound, "customer \"" + c.id + "\" has no key " + keyId, {}};
            return std::nullopt;
        },
        Result::Removed, std::move(actor), std::move(done));
}

void Store::putRules(EngineConfig rules, Actor actor, Done done)
{
    // The sections the rules are made of replace the stored ones; tiers and
    // customers stay.
    updateRules(
        [rules = std::move(rules)](EngineConfig& config) -> std::optional<std::string> {
            config.rules = rules.rules;
            config.cooldowns = rules.cooldowns;
            config.bot = rules.bot;
            config.escalation = rules.escalation;
            config.settings = rules.settings;
            return std::nullopt;
        },
        std::move(actor), std::move(done));
}

void Store::updateRules(std::function<std::optional<std::string>(EngineConfig&)> change, Actor actor, Done done)
{
    submit("change rules", [this, change = std::move(change), actor = std::move(actor)](Connection& db, Effects& fx) {
        // Read, changed and written inside one write transaction: an edit
        // committed by anyone else in between is not reverted.
        EngineConfig config = Tables::readConfig(db);
        const Json before = Codec::rulesToJson(config);
        if (auto why = change(config))
            return Outcome{Result::Invalid, *why, {}};
        if (auto error = validate(config))
            return Outcome{Result::Invalid, *error, {}};
        const Json after = Codec::rulesToJson(config);
        if (after == before)
            return Outcome{Result::Updated, {}, after};  // nothing to write, nothing to audit
        Tables::writeRules(db, config);
        writeAudit(db, actor, "rules.replace", "rules", &before, &after);
        fx.config = true;
        fx.configChanges.push_back(ConfigChange{ConfigChange::Part::Rules, "rules", after, false, actor.name});
        return Outcome{Result::Updated, {}, after};
    }, std::move(done));
}

void Store::putRulesDocument(Json document, Actor actor, Done done)
{
    updateRules(
        [document = std::move(document)](EngineConfig& config) -> std::optional<std::string> {
            std::string why;
            if (!Codec::rulesFromJson(document, config, &why))
                return why;
            return std::nullopt;
        },
        std::move(actor), std::move(done));
}

void Store::republish(Done done)
{
    submit("publish the configuration", [](Connection&, Effects& fx) {
        fx.config = true;  // read back and published by the writer, in order with every write
        return Outcome{Result::Updated, {}, {}};
    }, std::move(done));
}

void Store::importEntries(std::vector<ListedEntry> rows, Actor actor, Done done)
{
    submit("import list entries", [this, rows = std::move(rows), actor = std::move(actor)](Connection& db, Effects& fx) mutable {
        const Millis now = m_clock.now();
        std::size_t replaced = 0;
        for (ListedEntry& r : rows) {
            if (r.entry.expiresAt <= now)
                return Outcome{Result::Invalid, r.entry.range.toString() + ": already expired", {}};
            completeEntry(r.entry, now, actor);
            if (Tables::upsertEntry(db, r.kind, r.entry))
                ++replaced;
            fx.upserts.emplace_back(r.kind, r.entry);
            fx.listChanges.push_back(ListChange{r.kind, r.entry, false, actor.name});
        }
        Json summary = Json::object();
        summary.set("imported", rows.size());
        summary.set("replaced", replaced);
        writeAudit(db, actor, "lists.import", std::to_string(rows.size()) + (rows.size() == 1 ? " entry" : " entries"), nullptr, &summary);
        return Outcome{Result::Updated, {}, summary};
    }, std::move(done));
}

} // namespace Floodgate::Storage
