// SPDX-License-Identifier: GPL-3.0-or-later
// The request path: decide() and reportSuccess(), and the few things they
// do besides the levels (lists, what is not counted, Range continuations,
// cooldowns, the binding level's answer). Everything here runs on listener
// threads, many at once.
#include "core/EngineImpl.h"

#include <utility>

namespace Floodgate::Core {

namespace {

struct ThreadCache {
    std::uint64_t engineId = 0;
    std::uint64_t version = 0;
    std::shared_ptr<const Published> published;
    std::size_t slot = 0;
};
thread_local ThreadCache t_cache;

std::string_view headerValue(const RequestFacts& f, std::string_view name)
{
    for (const HeaderField& h : f.headers)
        if (equalsIgnoreCase(h.name, name))
            return h.value;
    return {};
}

// A GET with a Range header: a part of a resource (a download in parts, a
// PDF read in chunks). Range is defined for GET only (RFC 9110, 14.2).
bool readsARange(const RequestFacts& f)
{
    return equalsIgnoreCase(f.method, "GET") && !headerValue(f, "Range").empty();
}

// The known customer a request proves it speaks for (settings.customer_auth),
// or null; `d` is told what it claimed without proof, if anything.
const CompiledCustomer* customerOf(const Compiled& c, const RequestFacts& f, Millis now, Decision& d)
{
    if (c.customers.empty())
        return nullptr;
    if (!f.customerId.empty()) {  // proven already (replay of a limiter.log line)
        const auto it = c.customers.find(f.customerId);
        return it == c.customers.end() ? nullptr : &it->second;
    }
    const CustomerAuth auth = c.settings.customerAuth;
    if (auth != CustomerAuth::TrustedHeader) {
        if (const std::string_view key = headerValue(f, c.settings.customerKeyHeader); !key.empty()) {
            const auto it = key.size() <= MaxPresentedKeyLength ? c.customerKeys.find(keyDigest(key)) : c.customerKeys.end();
            if (it != c.customerKeys.end() && (it->second.expiresAt == 0 || now < it->second.expiresAt))
                return it->second.customer;
            if (it == c.customerKeys.end()) {
                d.claim = Claim::UnknownKey;
                d.claimed.assign(key.substr(0, std::min(key.size(), CustomerKeyIdLength)));
            } else {
                d.claim = Claim::ExpiredKey;
                d.claimed.assign(it->second.customer->id);
            }
            return nullptr;
        }
    }
    const std::string_view named = headerValue(f, c.settings.customerHeader);
    if (named.empty())
        return nullptr;
    if (auth != CustomerAuth::ApiKey && f.fromTrustedProxy) {
        if (const auto it = c.customers.find(named); it != c.customers.end())
            return &it->second;
        d.claim = Claim::UnknownCustomer;
    } else {
        d.claim = auth == CustomerAuth::ApiKey ? Claim::HeaderNotAProof : Claim::UntrustedHeader;
    }
    d.claimed.assign(named);
    return nullptr;
}

} // namespace

const Published& Engine::Impl::current(std::size_t& slot)
{
    ThreadCache& tc = t_cache;
    if (tc.engineId != id) {
        tc.engineId = id;
        tc.slot = stats.claimSlot();
        tc.version = 0;
    }
    const std::uint64_t v = version.load(std::memory_order_acquire);
    if (tc.version != v) {
        std::shared_ptr<const Published> old;
        {
            std::lock_guard lock(publishMutex);
            old = std::exchange(tc.published, published);
            tc.version = version.load(std::memory_order_relaxed);
        }
        // Not freed here (freeRetired(), EngineImpl.h).
        if (old) {
            std::lock_guard lock(retiredMutex);
            retired.push_back(std::move(old));
        }
    }
    slot = tc.slot;
    return *tc.published;
}

// Completes d in place: every return of decide() returns the one Decision
// it built (no copy of it on the way out).
void Engine::Impl::finish(Decision& d, const Compiled& c, std::size_t slot, Millis now)
{
    d.wouldBe = d.action;
    d.throttleStatus = std::uint16_t(c.settings.throttleStatus);
    d.rateLimitHeadersOnAllowed = c.settings.rateLimitHeadersOnAllowed;
    if (c.settings.dryRun && d.refused())
        d.action = Action::DryRun;
    stats.record(slot, d.action, now);
    if (d.claim != Claim::None)
        stats.recordClaim(slot, d.claim);
}

void Engine::Impl::trackOnly(const Published& p, const IpAddress& key, const RequestFacts& f, Millis now, std::uint32_t customerTag)
{
    const Compiled& c = *p.compiled;
    p.clients->with(clientKeyOf(key), c.clientSignature, now, c.clientKeepMs,
                    [&](KeyTable::Header& h, std::uint32_t*, bool, KeyTable::Live& live) {
                        h.flags = customerTag;
                        live.count(now, f.client.lo());
                    });
}

// A Range GET for a resource whose window is open: takes one of the
// resource's continuations and one of the client's. True when both had
// one left (the request is then not counted).
bool Engine::Impl::continuesResource(const Published& p, const IpAddress& key, std::uint64_t resource, Millis now)
{
    bool took = false;
    p.clients->update(TableKey{key.hi(), key.lo(), resource, RANGE_RESOURCE_SPACE, 0}, now,
                      [&](KeyTable::Header& h, std::uint32_t* cells) {
                          took = h.signature == RANGE_SIGNATURE
                              && ContinuationWindow::take(cells, now, Tuning::rangeWindowMs, Tuning::rangeContinuationsPerResource);
                      });
    if (!took)
        return false;
    bool within = false;
    p.clients->with(TableKey{key.hi(), key.lo(), 0, RANGE_CLIENT_SPACE, 0}, RANGE_SIGNATURE, now, 0,
                    [&](KeyTable::Header& h, std::uint32_t* cells, bool) {
                        if (!ContinuationWindow::open(cells, now, Tuning::rangeWindowMs)) {
                            ContinuationWindow::begin(cells, now);
                            h.expiresAt = now + Tuning::rangeWindowMs;
                        }
                        within = ContinuationWindow::take(cells, now, Tuning::rangeWindowMs, Tuning::rangeContinuationsPerClient);
                    });
    return within;
}

// A Range GET was counted and allowed: the resource's window begins,
// unless one is open already (its bound stays spent until it ends).
void Engine::Impl::beginResource(const Published& p, const IpAddress& key, std::uint64_t resource, Millis now)
{
    p.clients->with(TableKey{key.hi(), key.lo(), resource, RANGE_RESOURCE_SPACE, 0}, RANGE_SIGNATURE, now, 0,
                    [&](KeyTable::Header& h, std::uint32_t* cells, bool) {
                        if (ContinuationWindow::open(cells, now, Tuning::rangeWindowMs))
                            return;
                        ContinuationWindow::begin(cells, now);
                        h.expiresAt = now + Tuning::rangeWindowMs;
                    });
}

Decision Engine::decide(const RequestFacts& f, Millis now)
{
    std::size_t slot = 0;
    const Published& p = m->current(slot);
    const Compiled& c = *p.compiled;
    Decision d;

    // 1. Lists: the blocklist refuses first and spends no counters.
    if (!p.lists.empty()) {
        ListKind kind{};
        const ListEntry* entry = p.lists.match(f.client, now, &kind);
        if (entry && kind == ListKind::Blocklist) {
            d.action = Action::Block;
            d.reason = entry->source == ListSource::Automatic ? Reason::AutoBanned : Reason::Blocklisted;
            d.rule.assign("blocklist");
            d.listExpiresAt = entry->expiresAt;
            d.retryAfterMs = entry->expiresAt == NeverExpires ? 0 : entry->expiresAt - now;
            d.resetMs = d.retryAfterMs;
            // No rule counter is spent; the live view still shows who keeps knocking.
            m->trackOnly(p, countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits), f, now, 0);
            m->finish(d, c, slot, now);
            return d;
        }
        if (entry) {
            d.reason = Reason::Safelisted;
            d.rule.assign("safelist");
            d.listExpiresAt = entry->expiresAt;
            m->trackOnly(p, countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits), f, now, 0);
            m->finish(d, c, slot, now);
            return d;
        }
    }

    // 2. What is not counted at all.
    if (!c.excluded.empty() && c.excluded.matches(f.path)) {
        d.reason = Reason::ExcludedPath;
        m->finish(d, c, slot, now);
        return d;
    }
    const IpAddress key = countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits);
    // The client's entry is taken last: its index line loads meanwhile.
    const TableKey clientKey = clientKeyOf(key);
    const std::uint64_t clientHash = p.clients->prefetch(clientKey);
    if ((!c.safeAgents.empty() && c.safeAgents.matches(f.userAgent)) || (c.cookielessOnly && f.cookieCount > 0)) {
        d.reason = c.cookielessOnly && f.cookieCount > 0 ? Reason::HasCookies : Reason::SafeUserAgent;
        m->trackOnly(p, key, f, now, 0);
        m->finish(d, c, slot, now);
        return d;
    }
    // A part of a resource this client is already reading is not a new
    // page hit (bounded per resource and per client, Tuning.h).
    const bool ranged = readsARange(f);
    const std::uint64_t resource = ranged ? keyedHash64(f.path) : 0;
    if (ranged && m->continuesResource(p, key, resource, now)) {
        d.reason = Reason::RangeContinuation;
        const CompiledCustomer* cu = customerOf(c, f, now, d);
        m->trackOnly(p, key, f, now, cu ? cu->tag : 0);
        m->finish(d, c, slot, now);
        return d;
    }

    // 3. Cooldowns (read only here; a success starts them).
    const CompiledCooldown* coolingDown = nullptr;
    Millis cooldownRetry = 0;
    for (const CompiledCooldown& cd : c.cooldowns) {
        if (!cd.applies(f))
            continue;
        const CooldownKey ck = cooldownKey(headerValue(f, cd.userHeader), key, cd.actionHash);
        const Millis until = m->cooldowns.with(ck, [&](auto& map, auto it) { return it == map.end() ? Millis(0) : it->second; });
        if (until > now && until - now > cooldownRetry) {
            cooldownRetry = until - now;
            coolingDown = &cd;
        }
    }
    bool refused = coolingDown != nullptr;

    // In a cluster: what the levels are judged on, from the sync's verdict on
    // Redis (one atomic load) and the when_cluster_down setting.
    LevelView view;
    ClusterState clusterState = ClusterState::Up;
    if (c.clustered) {
        clusterState = m->cluster.state.load(std::memory_order_acquire);
        if (clusterState == ClusterState::Up) {
            view.kind = LevelView::Kind::Combined;
        } else if (c.settings.whenClusterDown == WhenClusterDown::Local) {
            view = LevelView{LevelView::Kind::Share, m->cluster.nodes.load(std::memory_order_relaxed)};
        } else if (c.settings.whenClusterDown == WhenClusterDown::Closed && !refused) {
            d.action = Action::Throttle;
            d.reason = Reason::ClusterDown;
            d.rule.assign("cluster");
            d.retryAfterMs = SECOND;
            d.resetMs = SECOND;
            m->trackOnly(p, key, f, now, 0);
            m->finish(d, c, slot, now);
            return d;
        }
    }
    Binding binding;
    bool waiting = false;  // a shared entry's gate said wait: nothing more is run or counted
    bool wake = false;
    auto gateFor = [&](std::uint8_t table, const TableKey& k, std::uint32_t sig, const SharedEntry& shared, std::uint32_t* cells) {
        ClusterGate g;
        g.impl = m.get();
        g.state = clusterState;
        g.budget = m->clusterBudget(shared.minLimit);
        g.waited = f.clusterWaited;
        g.entry = QueuedEntry{table, k, sig};
        g.sync = cells + shared.sync;
        g.now = now;
        return g;
    };
    // Runs a group of levels on an entry's cells; in a cluster, through the entry's gate.
    auto run = [&](const LevelGroup& group, std::uint32_t* cells, std::uint8_t table, const TableKey& k, std::uint32_t sig,
                   const SharedEntry& shared) {
        if (!c.clustered)
            return runLevels(group, cells, now, refused || waiting, binding);
        ClusterGate g = gateFor(table, k, sig, shared, cells);
        LevelView entryView = view;
        if (view.kind == LevelView::Kind::Combined && g.sync[SyncCells::Reserved] > 0) {
            entryView.reserved = g.sync[SyncCells::Reserved];
            const std::int32_t left = std::int32_t(g.sync[SyncCells::ReservedLapse] - std::uint32_t(now));
            entryView.reservedLapseMs = g.sync[SyncCells::ReservedLapse] != 0 && left > 0 ? left : 0;
        }
        const bool r = runLevels(group, cells, now, refused || waiting, binding, entryView, [&] { return g.admit(); });
        if (r && entryView.reserved > 0 && entryView.reservedLapseMs == 0)
            g.refresh();
        waiting = waiting || g.waiting;
        wake = wake || g.wake;
        return r;
    };

    // 4. Levels. Entries other than the client's (a customer's, or rules keyed
    // on something else) reserve their count first and give it back if the
    // decision ends in a refusal, so no level ever admits over its limit.
    struct Reservation {
        KeyTable* table;
        std::uint8_t tableId;
        TableKey key;
        const std::vector<LevelSpec>* levels;
        const SharedEntry* shared;
        std::uint32_t signature;
        Millis keepMs;
        bool reserved;
    };
    // Uninitialised, like runLevels' verdicts: most decisions reserve nothing.
    union Reservations {
        Reservations() {}
        Reservation at[MAX_SECONDARY];
    } reservations;
    Reservation* secondary = reservations.at;
    static_assert(std::is_trivially_destructible_v<Reservation>);
    std::size_t secondaryCount = 0;
    auto runSecondary = [&](KeyTable& table, std::uint8_t tableId, const TableKey& k, const std::vector<LevelSpec>& levels,
                            const SharedEntry& shared, std::uint32_t sig, Millis keep) {
        LevelGroup group;
        group.add(levels);
        bool groupRefused = false;
        if (waiting)
            return;
        table.with(k, sig, now, keep, [&](KeyTable::Header&, std::uint32_t* cells, bool) {
            groupRefused = run(group, cells, tableId, k, sig, shared);
        });
        if (secondaryCount < MAX_SECONDARY)  // always: validate() caps the keyed rules
            new (&secondary[secondaryCount++])
                Reservation{&table, tableId, k, &levels, &shared, sig, keep, !groupRefused && !refused && !waiting};
        refused = refused || groupRefused;
    };

    const CompiledCustomer* customer = customerOf(c, f, now, d);
    if (customer) {
        d.customer = true;
        d.customerId.assign(customer->id);
        runSecondary(*p.customers, CUSTOMER_TABLE, customer->key, customer->levels, customer->shared, customer->signature,
                     customer->keepMs);
    } else {
        for (const CompiledRule& r : c.rules) {
            if (r.space == CLIENT_SPACE || !r.applies(f))
                continue;
            TableKey k;
            if (r.discriminator == Discriminator::AddressAndUserAgent) {
                // The address is exact; the user agent adds a keyed 64-bit hash.
                k = TableKey{key.hi(), key.lo(), keyedHash64(f.userAgent), r.space, 0};
            } else {
                // No value, no key: a request without the header is not
                // counted by this rule (rack-attack's nil discriminator),
                // rather than every such request sharing one key.
                const std::string_view value = headerValue(f, r.header);
                if (value.empty())
                    continue;
                // The value is the whole key: 128 keyed bits, so no one can
                // make two API keys share a counter.
                const Hash128 h = keyedHash128(value);
                k = TableKey{h.lo, h.hi, 0, r.space, 0};
            }
            runSecondary(*p.clients, CLIENT_TABLE, k, r.levels, r.shared, r.signature, r.keepMs);
        }
    }

    // The client's own entry: the live view always, the per-IP rules for
    // anonymous clients. One lock: evaluated and counted atomically.
    LevelGroup clientLevels;
    if (!customer)
        for (const CompiledRule& r : c.rules)
            if (r.space == CLIENT_SPACE && r.applies(f))
                clientLevels.add(r.levels);
    bool clientRefused = false;
    p.clients->with(clientKey, clientHash, c.clientSignature, now, c.clientKeepMs,
                    [&](KeyTable::Header& h, std::uint32_t* cells, bool, KeyTable::Live& live) {
                        h.flags = customer ? customer->tag : 0;
                        if (!waiting)
                            clientRefused = run(clientLevels, cells, CLIENT_TABLE, clientKey, c.clientSignature, c.clientShared);
                        if (!waiting)  // a request that waits is seen once, when it is decided
                            live.count(now, f.client.lo());
                    });
    refused = refused || clientRefused;
    if (refused || waiting) {
        for (std::size_t i = 0; i < secondaryCount; ++i) {
            Reservation& r = secondary[i];
            if (!r.reserved)
                continue;
            r.table->with(r.key, r.signature, now, r.keepMs, [&](KeyTable::Header&, std::uint32_t* cells, bool) {
                for (const LevelSpec& spec : *r.levels)
                    if (!spec.countRefused || waiting)
                        uncount(spec, cells + spec.offset, now);
                if (c.clustered)
                    gateFor(r.tableId, r.key, r.signature, *r.shared, cells).giveBack();
            });
        }
    }
    if (wake && m->cluster.wake)
        m->cluster.wake();
    if (waiting) {
        // Nothing was counted: the listener asks again shortly.
        m->cluster.waits.fetch_add(1, std::memory_order_relaxed);
        d = Decision{};
        d.waitForCluster = true;
        return d;
    }

    // 5. The answer, from the binding level or the cooldown.
    if (binding.spec) {
        const LevelSpec& s = *binding.spec;
        const Verdict& v = binding.verdict;
        d.rule = s.name;
        d.limit = s.limit;
        d.windowMs = s.periodMs;
        d.windowStartMs = v.windowStartMs;
        if (refused && binding.refusing) {
            d.count = v.used;
            d.remaining = 0;
            d.resetMs = v.resetMs;
            d.retryAfterMs = v.retryAfterMs;
        } else {
            d.count = refused ? v.used : v.used + 1;
            d.remaining = d.count >= s.limit ? 0 : s.limit - d.count;
            d.resetMs = v.resetMs;  // runLevels set it to the time after this request was counted
        }
    }
    if (coolingDown && cooldownRetry >= d.retryAfterMs) {
        d.rule = coolingDown->rule;
        d.limit = 1;
        d.count = 1;
        d.remaining = 0;
        d.windowMs = coolingDown->durationMs;
        d.windowStartMs = now + cooldownRetry - coolingDown->durationMs;  // when the successful action happened
        d.resetMs = cooldownRetry;
        d.retryAfterMs = cooldownRetry;
        d.reason = Reason::Cooldown;
    } else if (refused) {
        d.reason = Reason::OverLimit;
    }
    if (refused)
        d.action = Action::Throttle;
    else if (ranged)
        m->beginResource(p, key, resource, now);

    // 6. Escalation: repeated refusals put the client on the blocklist.
    if (d.action == Action::Throttle && d.reason == Reason::OverLimit && c.escalation.enabled && !c.settings.dryRun)
        d.autoBanned = m->escalate(c, key, now);
    m->finish(d, c, slot, now);
    return d;
}

void Engine::reportSuccess(const RequestFacts& f, Millis now)
{
    std::size_t slot = 0;
    const Published& p = m->current(slot);
    const Compiled& c = *p.compiled;
    const IpAddress key = countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits);
    for (const CompiledCooldown& cd : c.cooldowns) {
        if (!cd.applies(f))
            continue;
        const CooldownKey ck = cooldownKey(headerValue(f, cd.userHeader), key, cd.actionHash);
        m->cooldowns.with(ck, [&](auto& map, auto) { map[ck] = now + cd.durationMs; });
        if (m->onCooldownStarted)
            m->onCooldownStarted(SharedCooldown{encodeCooldownKey(ck), now + cd.durationMs});  // outside the shard's lock
    }
}

} // namespace Floodgate::Core
