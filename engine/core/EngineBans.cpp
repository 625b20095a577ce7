// SPDX-License-Identifier: GPL-3.0-or-later
// Escalation and the automatic bans. The engine is the only in-memory owner
// of the bans it makes: storage journals them behind (an entry with id 0 is
// not on disk yet) and tells the engine once a row is written.
#include "core/EngineImpl.h"

#include <map>

namespace Floodgate::Core {

bool Engine::Impl::escalate(const Compiled& c, const IpAddress& key, Millis now)
{
    const Escalation& e = c.escalation;
    std::optional<Millis> banFor;
    std::uint32_t banNumber = 0;
    offenders.with(key, [&](auto& map, auto it) {
        if (it == map.end())
            it = map.emplace(key, Offender{}).first;
        Offender& o = it->second;
        if (o.refusals == 0 || now - o.windowStart >= e.findMs) {
            o.windowStart = now;
            o.refusals = 0;
        }
        if (++o.refusals < e.refusals)
            return;
        o.refusals = 0;
        Millis d = e.banMs;
        for (std::uint32_t i = 0; i < o.bans && d < e.maxBanMs; ++i)
            d *= e.factor;
        banFor = std::min(d, e.maxBanMs);
        banNumber = ++o.bans;
        o.lastBanAt = now;
    });
    if (!banFor)
        return false;
    ListEntry entry;
    entry.range = Cidr(key, c.keyPrefix(key));
    entry.reason = "escalation: " + std::to_string(e.refusals) + " refusals within " + formatPeriod(e.findMs) + " (ban #"
        + std::to_string(banNumber) + ", " + formatPeriod(*banFor) + ")";
    entry.source = ListSource::Automatic;
    entry.createdAt = now;
    entry.createdBy = "floodgate";
    entry.expiresAt = now + *banFor;
    entry.banCount = banNumber;
    std::shared_ptr<const AddressList> bans;
    publish([&](Published& p) {
        bans = std::make_shared<const AddressList>(p.lists.automatic->withoutExpired(now).with(entry));
        p.lists.automatic = bans;
    });
    compactLater(*bans);
    autoBans.fetch_add(1, std::memory_order_relaxed);
    if (onAutomaticBan)
        onAutomaticBan(entry);  // outside every engine lock
    return true;
}

std::shared_ptr<const AddressList> Engine::automaticBans() const
{
    return m->snapshot()->lists.automatic;
}

bool Engine::removeAutomaticBan(const Cidr& range)
{
    // Most operator edits are of a range the engine never banned: they
    // publish nothing here.
    if (!m->snapshot()->lists.automatic->find(range))
        return false;
    bool found = false;
    std::shared_ptr<const AddressList> bans;
    m->publish([&](Published& p) {
        found = p.lists.automatic->find(range) != nullptr;
        if (found)
            p.lists.automatic = std::make_shared<const AddressList>(p.lists.automatic->without(range));
        bans = p.lists.automatic;
    });
    m->compactLater(*bans);
    return found;
}

void Engine::restoreAutomaticBans(const std::vector<ListEntry>& entries)
{
    m->publish([&](Published& p) {
        std::vector<ListEntry> all = p.lists.automatic->entries();
        all.insert(all.end(), entries.begin(), entries.end());
        p.lists.automatic = std::make_shared<const AddressList>(std::move(all));
    });
}

void Engine::reloadAutomaticBans(std::vector<ListEntry> stored)
{
    m->publish([&](Published& p) {
        // A ban whose row is not written yet (queued, or dropped from a full
        // queue) stays: the database does not know it. It comes after the
        // stored rows, so it replaces an older row for the same range.
        for (const ListEntry& e : p.lists.automatic->entries())
            if (!e.stored())
                stored.push_back(e);
        p.lists.automatic = std::make_shared<const AddressList>(std::move(stored));
    });
}

void Engine::automaticBansStored(const std::vector<ListEntry>& written)
{
    if (written.empty())
        return;
    std::map<Cidr, const ListEntry*> byRange;
    for (const ListEntry& e : written)
        byRange[e.range] = &e;
    std::shared_ptr<const AddressList> bans;
    m->publish([&](Published& p) {
        // Only the ban that was written becomes stored: one lifted meanwhile
        // stays lifted, a newer ban for the same range stays unstored. Each
        // keeps its place in the list.
        std::vector<ListEntry> stored;
        for (const auto& [range, row] : byRange) {
            const ListEntry* held = p.lists.automatic->find(range);
            if (held && !held->stored() && held->expiresAt == row->expiresAt) {
                stored.push_back(*held);
                stored.back().id = row->id;
            }
        }
        if (!stored.empty())
            p.lists.automatic = std::make_shared<const AddressList>(p.lists.automatic->with(stored));
        bans = p.lists.automatic;
    });
    m->compactLater(*bans);
}

void Engine::restoreOffenders(const std::vector<OffenderRecord>& offenders)
{
    for (const OffenderRecord& r : offenders) {
        m->offenders.with(r.key, [&](auto& map, auto it) {
            if (it == map.end())
                it = map.emplace(r.key, Offender{}).first;
            it->second.bans = std::max(it->second.bans, r.bans);
            it->second.lastBanAt = std::max(it->second.lastBanAt, r.lastBanAt);
        });
    }
}

std::vector<Engine::OffenderRecord> Engine::offenders(Millis now) const
{
    std::vector<OffenderRecord> out;
    m->offenders.forEach([&](const auto& kv) {
        const Offender& o = kv.second;
        if (o.bans > 0 && now - o.lastBanAt < Tuning::escalationMemoryMs)
            out.push_back(OffenderRecord{kv.first, o.bans, o.lastBanAt});
    });
    return out;
}

bool Engine::takeAutomaticBan(const ListEntry& ban, Millis now)
{
    // The history first: even a ban that has ended counts toward the next.
    if (ban.banCount > 0)
        restoreOffenders({OffenderRecord{ban.range.address(), ban.banCount, ban.createdAt}});
    if (!ban.activeAt(now))
        return false;
    bool taken = false;
    m->publish([&](Published& p) {
        const ListEntry* held = p.lists.automatic->find(ban.range);
        if (held && held->activeAt(now) && held->expiresAt >= ban.expiresAt)
            return;  // this node banned the client for longer meanwhile
        ListEntry entry = ban;
        entry.id = 0;  // not on this node's disk yet
        p.lists.automatic = std::make_shared<const AddressList>(p.lists.automatic->withoutExpired(now).with(entry));
        taken = true;
    });
    if (taken)
        m->compactLater(*automaticBans());
    return taken;
}

void Engine::onAutomaticBan(std::function<void(const ListEntry&)> hook)
{
    m->onAutomaticBan = std::move(hook);
}

} // namespace Floodgate::Core
