// SPDX-License-Identifier: GPL-3.0-or-later
// The bounded snapshots the console and the admin API read: counters, the
// per-second history, the top clients, the live buckets, one client, one
// customer. Each reads one published set; none counts anything.
#include "core/EngineImpl.h"

namespace Floodgate::Core {

namespace {

// This node's own count of a level: a shared level's cells without the
// other nodes' counts Redis last summed (docs/CLUSTER.md); on a single node
// the verdict's count.
std::uint32_t usedHere(const LevelSpec& spec, const Verdict& v, const std::uint32_t* cells, Millis now)
{
    return spec.shared ? peek(spec, cells + spec.offset, now, false).used : v.used;
}

LevelUsage usageOf(const LevelSpec& spec, const Verdict& v, const std::uint32_t* cells, Millis now)
{
    LevelUsage u;
    u.name = std::string(spec.name.view());
    u.algorithm = spec.algorithm;
    u.limit = spec.limit;
    u.periodMs = spec.periodMs;
    u.used = v.used;
    u.usedHere = usedHere(spec, v, cells, now);
    u.remaining = v.used >= spec.limit ? 0 : spec.limit - v.used;
    u.resetMs = v.resetMs;
    u.refusing = !v.allowed;
    u.retryAfterMs = v.allowed ? 0 : v.retryAfterMs;
    u.buckets = bucketsOf(spec, cells + spec.offset, now);
    u.bucketsHere = spec.shared ? bucketsOf(spec, cells + spec.offset, now, false) : u.buckets;
    return u;
}

// Peeks every level of `specs` on `cells` (nothing is counted): the one
// with the least left goes to `binding`, each one's use to `levels`.
void peekLevels(const std::vector<LevelSpec>& specs, const std::uint32_t* cells, Millis now, Binding* binding,
                       std::vector<LevelUsage>* levels)
{
    for (const LevelSpec& spec : specs) {
        const Verdict v = peek(spec, cells + spec.offset, now);
        if (binding)
            binding->consider(spec, v);
        if (levels)
            levels->push_back(usageOf(spec, v, cells, now));
    }
}

// A client entry's minute of live buckets (oldest first) and its latest
// request. Without a record (KeyTable::Live): its first request of the
// minute, or not seen for a minute, or none was free. The entry's expiry
// then says when its latest request was, and the header whether it was
// the only one of the minute; `complete` is false when requests of the
// minute are in no record.
struct LiveView {
    std::array<std::uint32_t, Tuning::liveBucketCount> buckets{};
    Millis lastSeen = 0;
    bool complete = true;
};

LiveView liveViewOf(const Compiled& c, const KeyTable::Header& h, const LiveRecord* record, Millis now)
{
    LiveView v;
    if (record) {
        v.buckets = LiveRing::read(record->ring, now);
        v.lastSeen = record->lastSeen;
        return v;
    }
    v.lastSeen = std::min(now, c.lastRequestOf(h));
    const bool inWindow = v.lastSeen != 0 && now - v.lastSeen < Tuning::liveWindowMs;
    if (inWindow && (h.live & KeyTable::LIVE_ONE_UNRECORDED)) {
        std::uint32_t ring[LiveRing::Cells] = {};
        LiveRing::count(ring, v.lastSeen);
        v.buckets = LiveRing::read(ring, now);
    }
    v.complete = !(inWindow && (h.live & KeyTable::LIVE_UNRECORDED));
    return v;
}

// Runs fn(cells) on a customer's counters; false when it has none yet
// (no request, or its levels changed shape since).
template <class Fn>
bool readCustomer(const Published& p, const CompiledCustomer& cu, Millis now, Fn&& fn)
{
    bool current = false;
    p.customers->read(cu.key, now, [&](const KeyTable::Header& h, const std::uint32_t* cells) {
        if (h.signature == cu.signature) {
            current = true;
            fn(cells);
        }
    });
    return current;
}

} // namespace

ClientSummary Engine::Impl::summarize(const Compiled& c, const KeyTable::Header& h, const LiveRecord* live, Millis now) const
{
    ClientSummary s;
    s.key = addressOfKey(h.a, h.b);
    s.keyPrefix = c.keyPrefix(s.key);
    const LiveView view = liveViewOf(c, h, live, now);
    s.live = view.buckets;
    s.lastSeen = view.lastSeen;
    s.liveComplete = view.complete;
    if (live)
        s.lastAddress = addressOfKey(h.a, live->detail);  // the last full address: the key's high word, its own low word
    else if (s.keyPrefix >= 128)
        s.lastAddress = s.key;  // a prefix's last full address went with its record
    s.lastBucket = s.live.back();
    s.last60s = LiveRing::total(s.live);
    s.ratePerSecond = LiveRing::recentRate(s.live, now);
    s.customerTag = h.flags;
    return s;
}

// Fills the binding level and state of a summary from its cells and the lists.
void Engine::Impl::describe(const Published& p, ClientSummary& s, const std::uint32_t* cells, Millis now,
              std::vector<LevelUsage>* levels) const
{
    const Compiled& c = *p.compiled;
    Binding binding;
    std::uint32_t bindingHere = 0;  // read while the binding level's cells are at hand
    for (const CompiledRule& r : c.rules)
        if (r.space == CLIENT_SPACE && s.customerTag == 0)
            peekLevels(r.levels, cells, now, &binding, levels);
    if (binding.spec)
        bindingHere = usedHere(*binding.spec, binding.verdict, cells, now);
    if (s.customerTag != 0) {
        // This address last spoke for a customer: the customer's levels bind.
        if (auto t = c.customerByTag.find(s.customerTag); t != c.customerByTag.end()) {
            const CompiledCustomer& cu = c.customers.at(t->second);
            s.customer = cu.id;
            binding = Binding{};
            readCustomer(p, cu, now, [&](const std::uint32_t* cc) {
                peekLevels(cu.levels, cc, now, &binding, levels);
                if (binding.spec)
                    bindingHere = usedHere(*binding.spec, binding.verdict, cc, now);
            });
        }
    }
    if (binding.spec) {
        s.bindingRule = std::string(binding.spec->name.view());
        s.bindingUsed = binding.verdict.used;
        s.bindingUsedHere = bindingHere;
        s.bindingLimit = binding.spec->limit;
        if (binding.refusing) {
            s.state = ClientState::Throttled;
            s.retryAfterMs = binding.verdict.retryAfterMs;
        }
    }
    ListKind kind{};
    if (p.lists.match(s.lastAddress.value_or(s.key), now, &kind))
        s.state = kind == ListKind::Blocklist ? ClientState::Blocked : ClientState::Safelisted;
}

EngineCounters Engine::counters(Millis now) const
{
    auto p = m->snapshot();
    EngineCounters out;
    out.decisions = m->stats.totals();
    out.claims = m->stats.claims();
    out.trackedKeys = p->clients->size() + p->customers->size();
    out.evictions = p->clients->evictions() + p->customers->evictions();
    out.expirations = p->clients->expirations() + p->customers->expirations();
    out.autoBans = m->autoBans.load(std::memory_order_relaxed);
    out.activeCooldowns = m->cooldowns.countIf([now](const auto& kv) { return kv.second > now; });
    out.blocklistEntries = p->lists.blocklist->activeCount(now);
    out.safelistEntries = p->lists.safelist->activeCount(now);
    out.automaticEntries = p->lists.automatic->activeCount(now);
    out.capacity = p->clients->capacity();
    return out;
}

std::vector<SecondCounts> Engine::perSecond(Millis now, std::size_t seconds) const
{
    return m->stats.perSecond(now, seconds);
}

std::vector<ClientSummary> Engine::topClients(std::size_t limit, Millis now, TrackedKeys* tracked) const
{
    limit = std::min(limit, Tuning::maxTopClients);
    auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    std::vector<ClientSummary> out;
    TrackedKeys kinds;
    if (tracked)
        p->customers->forEach(now, [&](const KeyTable::Header&, const std::uint32_t*) { ++kinds.customers; });
    if (limit == 0 && !tracked)
        return out;
    // Pass 1: the rate of every client from its live ring alone (no
    // strings, no summary), keeping the best `limit` in a heap. Ties go to
    // the busier minute, then to the key, so the order is stable.
    struct Candidate {
        double rate;
        std::uint32_t last60s;
        std::uint64_t a, b;
    };
    auto worse = [](const Candidate& x, const Candidate& y) {
        if (x.rate != y.rate)
            return x.rate > y.rate;
        if (x.last60s != y.last60s)
            return x.last60s > y.last60s;
        return x.a != y.a ? x.a < y.a : x.b < y.b;
    };
    std::vector<Candidate> heap;
    heap.reserve(limit + 1);
    p->clients->forEach(now, [&](const KeyTable::Header& h, const std::uint32_t*, const LiveRecord* record) {
        if (h.space != CLIENT_SPACE) {
            ++(h.space == RANGE_RESOURCE_SPACE || h.space == RANGE_CLIENT_SPACE ? kinds.rangeReads : kinds.ruleKeys);
            return;
        }
        ++kinds.clients;
        if (limit == 0)
            return;
        const auto live = liveViewOf(c, h, record, now).buckets;
        const std::uint32_t last60s = LiveRing::total(live);
        if (last60s == 0 && heap.size() >= limit)
            return;
        const Candidate cand{LiveRing::recentRate(live, now), last60s, h.a, h.b};
        if (heap.size() >= limit && !worse(cand, heap.front()))
            return;  // not better than the worst kept
        heap.push_back(cand);
        std::push_heap(heap.begin(), heap.end(), worse);
        if (heap.size() > limit) {
            std::pop_heap(heap.begin(), heap.end(), worse);
            heap.pop_back();
        }
    });
    std::sort(heap.begin(), heap.end(), worse);
    // Pass 2: the summary, binding level and state for the few that made it.
    out.reserve(heap.size());
    for (const Candidate& cand : heap) {
        p->clients->read(TableKey{cand.a, cand.b, 0, CLIENT_SPACE, 0}, now,
                         [&](const KeyTable::Header& h, const std::uint32_t* cells, const LiveRecord* live) {
            ClientSummary s = m->summarize(c, h, live, now);
            m->describe(*p, s, cells, now, nullptr);
            out.push_back(std::move(s));
        });
    }
    if (tracked) {
        // A client that went between the passes (evicted) is not counted either.
        kinds.clients -= heap.size() - out.size();
        *tracked = kinds;
    }
    return out;
}

LiveBuckets Engine::liveBuckets(std::size_t topPerBucket, Millis now) const
{
    auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    LiveBuckets out;
    out.buckets.resize(Tuning::liveBucketCount);
    const std::int64_t cur = floorDiv(now, Tuning::liveBucketMs);
    // Per bucket, a min-heap of the best counts so far; a key that cannot
    // enter it costs one comparison.
    struct Item {
        std::uint32_t count;
        std::uint64_t a, b;
        bool operator>(const Item& o) const { return count > o.count; }
    };
    std::vector<std::vector<Item>> heaps(Tuning::liveBucketCount);
    p->clients->forEach(now, [&](const KeyTable::Header& h, const std::uint32_t*, const LiveRecord* record) {
        if (h.space != CLIENT_SPACE)
            return;
        const auto live = liveViewOf(c, h, record, now).buckets;
        bool any = false;
        for (std::size_t i = 0; i < live.size(); ++i) {
            if (live[i] == 0)
                continue;
            any = true;
            out.buckets[i].total += live[i];
            std::vector<Item>& heap = heaps[i];
            if (topPerBucket == 0 || (heap.size() >= topPerBucket && live[i] <= heap.front().count))
                continue;
            heap.push_back(Item{live[i], h.a, h.b});
            std::push_heap(heap.begin(), heap.end(), std::greater<>());
            if (heap.size() > topPerBucket) {
                std::pop_heap(heap.begin(), heap.end(), std::greater<>());
                heap.pop_back();
            }
        }
        if (any)
            ++out.keys;
    });
    for (std::size_t i = 0; i < Tuning::liveBucketCount; ++i) {
        LiveBucket& bucket = out.buckets[i];
        bucket.startMs = (cur - std::int64_t(Tuning::liveBucketCount) + 1 + std::int64_t(i)) * Tuning::liveBucketMs;
        std::sort_heap(heaps[i].begin(), heaps[i].end(), std::greater<>());  // most first
        for (const Item& item : heaps[i]) {
            const IpAddress key = addressOfKey(item.a, item.b);
            bucket.top.emplace_back(Cidr(key, p->compiled->keyPrefix(key)), item.count);
        }
    }
    return out;
}

std::optional<ClientDetail> Engine::client(const IpAddress& address, Millis now) const
{
    auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    const IpAddress key = countingKey(address, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits);
    ClientDetail detail;
    const bool tracked = p->clients->read(clientKeyOf(key), now,
                                          [&](const KeyTable::Header& h, const std::uint32_t* cells, const LiveRecord* live) {
                                              detail.summary = m->summarize(c, h, live, now);
                                              m->describe(*p, detail.summary, cells, now, &detail.levels);
                                          });
    ListKind kind{};
    const ListEntry* entry = p->lists.match(address, now, &kind);
    if (!tracked) {
        if (!entry)
            return std::nullopt;
        detail.summary.key = key;
        detail.summary.keyPrefix = c.keyPrefix(key);
        detail.summary.lastAddress = address;
        detail.summary.state = kind == ListKind::Blocklist ? ClientState::Blocked : ClientState::Safelisted;
    }
    if (entry) {
        detail.listKind = kind;
        detail.listEntry = *entry;
    }
    return detail;
}

std::optional<std::vector<LevelUsage>> Engine::customerUsage(std::string_view id, Millis now) const
{
    auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    const auto it = c.customers.find(id);
    if (it == c.customers.end())
        return std::nullopt;
    const CompiledCustomer& cu = it->second;
    std::vector<LevelUsage> out;
    const bool counted = readCustomer(*p, cu, now, [&](const std::uint32_t* cells) {
        peekLevels(cu.levels, cells, now, nullptr, &out);
    });
    if (!counted || out.empty()) {
        // No request yet (or the levels changed shape): every level is whole.
        out.clear();
        const std::vector<std::uint32_t> zero(std::max<std::size_t>(1, c.customerStride), 0);
        peekLevels(cu.levels, zero.data(), now, nullptr, &out);
    }
    return out;
}

} // namespace Floodgate::Core
