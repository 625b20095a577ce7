// SPDX-License-Identifier: MIT
#include "Engine.h"

#include "Glob.h"
#include "Hash.h"
#include "KeyTable.h"
#include "Stats.h"
#include "Tuning.h"
#include "Window.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>

namespace Floodgate::Core {

namespace {

constexpr std::uint32_t CLIENT_SPACE = 0;
// Key spaces of their own in the client table for HTTP Range reads (rules
// take 1, 2, ...): (client, path) for a resource being read in parts, and
// (client) for its continuations over all resources. Cells: a ContinuationWindow.
constexpr std::uint32_t RANGE_RESOURCE_SPACE = 0xffff'fff0u;
constexpr std::uint32_t RANGE_CLIENT_SPACE = 0xffff'fff1u;
constexpr std::uint32_t RANGE_SIGNATURE = 0x7a46e5u;
// Rules that key on something other than the client address, or a customer,
// keep their own entries; a decision touches the customer's or those rules'
// (never both), so validate()'s cap on keyed rules bounds them.
constexpr std::size_t MAX_SECONDARY = std::max<std::size_t>(Tuning::maxKeyedRules, 1);

std::uint32_t foldSignature(std::uint64_t h)
{
    return std::uint32_t(h ^ (h >> 32)) | 1u;  // never 0: 0 marks a fresh entry
}

std::string lower(std::string s)
{
    for (char& c : s)
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
    return s;
}

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct CompiledRule {
    std::string name;
    Discriminator discriminator = Discriminator::ClientAddress;
    std::string header;
    std::string method;  // empty = any
    PatternSet path;
    bool anyPath = true;
    std::vector<LevelSpec> levels;
    std::uint32_t space = CLIENT_SPACE;
    std::uint32_t signature = 0;  // own-space rules
    Millis keepMs = 0;

    bool applies(const RequestFacts& f) const
    {
        return (method.empty() || equalsIgnoreCase(method, f.method)) && (anyPath || path.matches(f.path));
    }
};

struct CompiledCustomer {
    std::string id;
    std::string name;
    std::string tier;
    std::vector<LevelSpec> levels;
    std::uint32_t signature = 0;
    Millis keepMs = 0;
    TableKey key;
    std::uint32_t tag = 0;  // kept in the client's entry: "this address spoke for that customer"
};

struct CompiledCooldown {
    ShortName rule;  // "cooldown:<name>"
    std::string method;
    PatternSet path;
    Millis durationMs = 0;
    std::string userHeader;
    std::uint64_t actionHash = 0;

    bool applies(const RequestFacts& f) const
    {
        return (method.empty() || equalsIgnoreCase(method, f.method)) && path.matches(f.path);
    }
};

struct Compiled {
    std::shared_ptr<const EngineConfig> source;
    std::vector<CompiledRule> rules;
    std::uint16_t clientStride = 0;
    std::uint32_t clientSignature = 0;
    Millis clientKeepMs = 0;
    std::uint16_t tableStride = 0;
    std::unordered_map<std::string, CompiledCustomer, StringHash, std::equal_to<>> customers;
    std::uint16_t customerStride = 1;
    std::unordered_map<std::uint32_t, std::string> customerByTag;
    std::vector<CompiledCooldown> cooldowns;
    PatternSet excluded;
    PatternSet safeAgents;
    bool cookielessOnly = false;
    Escalation escalation;
    Settings settings;

    int keyPrefix(const IpAddress& key) const
    {
        return key.isV4() ? 96 + settings.ipv4PrefixBits : settings.ipv6PrefixBits;
    }
};

std::uint32_t signatureOf(const std::vector<LevelSpec>& levels, std::uint64_t seed)
{
    std::uint64_t h = seed;
    for (const auto& l : levels)
        h = mix64(h ^ l.shapeSignature());
    return foldSignature(h);
}

std::vector<LevelSpec> compileLevels(const std::vector<std::pair<Level, std::string>>& named, std::uint16_t& offset, Millis& keepMs)
{
    std::vector<LevelSpec> out;
    for (const auto& [level, name] : named) {
        LevelSpec spec = LevelSpec::compile(level, name);
        spec.offset = offset;
        offset = std::uint16_t(offset + spec.cells);
        keepMs = std::max(keepMs, spec.keepMs());
        out.push_back(spec);
    }
    return out;
}

std::shared_ptr<const Compiled> compile(std::shared_ptr<const EngineConfig> cfg)
{
    auto c = std::make_shared<Compiled>();
    c->source = cfg;
    std::uint16_t clientOffset = LiveRing::Cells;
    c->clientKeepMs = Tuning::liveWindowMs;
    std::uint16_t widest = 0;
    std::uint64_t clientShape = 0x51ed27u;
    for (std::size_t i = 0; i < cfg->rules.size(); ++i) {
        const ThrottleRule& r = cfg->rules[i];
        CompiledRule cr;
        cr.name = r.name;
        cr.discriminator = r.discriminator;
        cr.header = r.header;
        cr.method = r.method;
        cr.anyPath = r.pathGlob.empty() || r.pathGlob == "*";
        if (!cr.anyPath)
            cr.path = PatternSet({r.pathGlob});
        std::vector<std::pair<Level, std::string>> named;
        for (const Level& l : r.levels)
            named.emplace_back(l, l.name.empty() ? r.name + "-" + formatPeriod(l.periodMs) : l.name);
        if (r.discriminator == Discriminator::ClientAddress) {
            cr.space = CLIENT_SPACE;
            cr.levels = compileLevels(named, clientOffset, c->clientKeepMs);
            for (const auto& l : cr.levels)
                clientShape = mix64(clientShape ^ l.shapeSignature());
        } else {
            cr.space = std::uint32_t(i + 1);
            std::uint16_t own = 0;
            cr.levels = compileLevels(named, own, cr.keepMs);
            cr.signature = signatureOf(cr.levels, i + 1);
            widest = std::max(widest, own);
        }
        c->rules.push_back(std::move(cr));
    }
    c->clientStride = clientOffset;
    c->clientSignature = foldSignature(clientShape);
    c->tableStride = std::max({c->clientStride, widest, ContinuationWindow::Cells});

    std::map<std::string, const Tier*> tiers;
    for (const Tier& t : cfg->tiers)
        tiers[t.name] = &t;
    for (const Customer& cu : cfg->customers) {
        const Tier* tier = tiers.at(cu.tier);  // validate() checked it exists
        std::map<Millis, std::pair<Level, std::string>> byPeriod;
        for (const Level& l : tier->levels)
            byPeriod[l.periodMs] = {l, l.name.empty() ? lower(tier->name) + "-" + formatPeriod(l.periodMs) : l.name};
        for (const Level& l : cu.overrides)  // replace the same period, add the others
            byPeriod[l.periodMs] = {l, l.name.empty() ? cu.id + "-" + formatPeriod(l.periodMs) : l.name};
        std::vector<std::pair<Level, std::string>> named;
        for (auto& [period, p] : byPeriod)
            named.push_back(p);
        CompiledCustomer cc;
        cc.id = cu.id;
        cc.name = cu.name;
        cc.tier = cu.tier;
        std::uint16_t own = 0;
        cc.levels = compileLevels(named, own, cc.keepMs);
        cc.signature = signatureOf(cc.levels, 0xc0ffee);
        const Hash128 idHash = keyedHash128(cu.id);
        cc.key = TableKey{idHash.lo, idHash.hi, 0, 0, 0};
        cc.tag = foldSignature(cc.key.a);
        c->customerByTag.emplace(cc.tag, cu.id);
        c->customerStride = std::max(c->customerStride, own);
        c->customers.emplace(cu.id, std::move(cc));
    }
    for (const Cooldown& cd : cfg->cooldowns) {
        CompiledCooldown cc;
        cc.rule.assign("cooldown:" + cd.name);
        cc.method = cd.method;
        cc.path = PatternSet({cd.pathGlob});
        cc.durationMs = cd.durationMs;
        cc.userHeader = cd.userHeader;
        cc.actionHash = keyedHash64(cd.name);
        c->cooldowns.push_back(std::move(cc));
    }
    c->excluded = PatternSet(cfg->bot.excludedPaths, true);  // "/LOGO.PNG" is an image too
    c->safeAgents = PatternSet(cfg->bot.safeUserAgents, true, true);
    c->cookielessOnly = cfg->bot.cookielessOnly;
    c->escalation = cfg->escalation;
    c->settings = cfg->settings;
    return c;
}

struct Published {
    std::shared_ptr<const Compiled> compiled;
    std::shared_ptr<const AddressList> blocklist;
    std::shared_ptr<const AddressList> safelist;
    std::shared_ptr<const AddressList> automatic;
    std::shared_ptr<KeyTable> clients;
    std::shared_ptr<KeyTable> customers;
};

// A small sharded map for state touched only on some requests (cooldowns,
// escalation history).
template <class Key, class Value, class Hash>
class ShardedMap {
public:
    template <class Fn>
    decltype(auto) with(const Key& key, Fn&& fn)
    {
        Shard& s = shard(key);
        std::lock_guard lock(s.mutex);
        return fn(s.map, s.map.find(key));
    }
    template <class Pred>
    std::size_t eraseIf(Pred&& pred)
    {
        std::size_t n = 0;
        for (Shard& s : m_shards) {
            std::lock_guard lock(s.mutex);
            n += std::erase_if(s.map, pred);
        }
        return n;
    }
    template <class Pred>
    std::size_t countIf(Pred&& pred) const
    {
        std::size_t n = 0;
        for (const Shard& s : m_shards) {
            std::lock_guard lock(s.mutex);
            n += std::size_t(std::count_if(s.map.begin(), s.map.end(), pred));
        }
        return n;
    }

private:
    struct alignas(64) Shard {
        mutable std::mutex mutex;
        std::unordered_map<Key, Value, Hash> map;
    };
    Shard& shard(const Key& key) { return m_shards[(Hash{}(key) >> 20) % m_shards.size()]; }
    std::array<Shard, 16> m_shards;
};

// Who is cooling down from which action: the user id's 128-bit keyed hash,
// or (no user header) the counting key's own address words; the two kinds
// never share an entry.
struct CooldownKey {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    std::uint64_t action = 0;
    bool byAddress = false;
    friend bool operator==(const CooldownKey&, const CooldownKey&) = default;
};
struct CooldownKeyHash {
    std::size_t operator()(const CooldownKey& k) const { return hashWords(k.a ^ k.action, k.b, k.byAddress); }
};

CooldownKey cooldownKey(std::string_view user, const IpAddress& key, std::uint64_t action)
{
    if (user.empty())
        return CooldownKey{key.hi(), key.lo(), action, true};
    const Hash128 h = keyedHash128(user);
    return CooldownKey{h.lo, h.hi, action, false};
}
struct AddressHash {
    std::size_t operator()(const IpAddress& a) const { return hashAddress(a); }
};

struct Offender {
    Millis windowStart = 0;
    std::uint32_t refusals = 0;
    std::uint32_t bans = 0;
    Millis lastBanAt = 0;
};

// The address a table key stands for (its two big-endian words).
IpAddress addressOfKey(std::uint64_t hi, std::uint64_t lo)
{
    IpAddress::Bytes b{};
    for (int i = 0; i < 8; ++i) {
        b[std::size_t(i)] = std::uint8_t(hi >> (56 - 8 * i));
        b[std::size_t(8 + i)] = std::uint8_t(lo >> (56 - 8 * i));
    }
    return IpAddress(b);
}

std::atomic<std::uint64_t> g_nextEngineId{1};

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

std::string_view customerIdOf(const RequestFacts& f, const Settings& s)
{
    if (!f.customerId.empty())
        return f.customerId;
    if (s.customerSource != CustomerSource::Header) {
        if (auto v = queryParameter(f.query, s.customerParam).value_or(std::string_view{}); !v.empty())
            return v;
    }
    if (s.customerSource != CustomerSource::QueryParameter)
        return headerValue(f, s.customerHeader);
    return {};
}

// The known customer a request speaks for, or null.
const CompiledCustomer* customerOf(const Compiled& c, const RequestFacts& f)
{
    if (c.customers.empty())
        return nullptr;
    const std::string_view id = customerIdOf(f, c.settings);
    if (id.empty())
        return nullptr;
    const auto it = c.customers.find(id);
    return it == c.customers.end() ? nullptr : &it->second;
}

// The binding level of a decision: while everything passes, the one with the
// least remaining; once refused, the refusing one that lasts longest (the
// request passes only when every level lets it).
struct Binding {
    const LevelSpec* spec = nullptr;
    Verdict verdict;
    bool refusing = false;

    void consider(const LevelSpec& s, const Verdict& v)
    {
        const bool r = !v.allowed;
        if (!spec) {
            take(s, v, r);
            return;
        }
        if (r != refusing) {
            if (r)
                take(s, v, r);
            return;
        }
        if (r) {
            if (v.retryAfterMs > verdict.retryAfterMs)
                take(s, v, r);
        } else {
            const std::int64_t mine = std::int64_t(s.limit) - std::int64_t(v.used);
            const std::int64_t theirs = std::int64_t(spec->limit) - std::int64_t(verdict.used);
            if (mine < theirs)
                take(s, v, r);
        }
    }
    void take(const LevelSpec& s, const Verdict& v, bool r)
    {
        spec = &s;
        verdict = v;
        refusing = r;
    }
};

// Levels that share one entry's cells, gathered for one decision. validate()
// refuses a configuration with more than Tuning::maxLevelsPerEntry levels on
// one entry, so none is ever left out here.
struct LevelGroup {
    std::array<const LevelSpec*, Tuning::maxLevelsPerEntry> specs;
    std::size_t size = 0;

    void add(const std::vector<LevelSpec>& levels)
    {
        for (const LevelSpec& l : levels)
            if (size < specs.size())  // unreachable past the cap; never write past the array
                specs[size++] = &l;
    }
};

// Evaluates every level of a group over one entry's cells, then applies the
// outcome: counted if every level (and everything decided before) lets the
// request through; otherwise the refusing levels refuse and the countRefused
// ones count it. Returns true when this group refused.
bool runLevels(const LevelGroup& group, std::uint32_t* cells, Millis now, bool refusedBefore, Binding& binding)
{
    std::array<Verdict, Tuning::maxLevelsPerEntry> verdicts;
    bool refused = false;
    for (std::size_t i = 0; i < group.size; ++i) {
        verdicts[i] = evaluate(*group.specs[i], cells + group.specs[i]->offset, now);
        refused = refused || !verdicts[i].allowed;
    }
    const bool pass = !refused && !refusedBefore;
    for (std::size_t i = 0; i < group.size; ++i) {
        const LevelSpec& spec = *group.specs[i];
        std::uint32_t* c = cells + spec.offset;
        if (pass) {
            count(spec, c, now);
            verdicts[i].resetMs = resetAfterCount(spec, c, now);
        } else if (!verdicts[i].allowed) {
            refuse(spec, c, now);
        } else if (spec.countRefused) {
            count(spec, c, now);
        }
        binding.consider(spec, verdicts[i]);
    }
    return refused;
}

} // namespace

struct Engine::Impl {
    std::uint64_t id = g_nextEngineId.fetch_add(1);
    mutable std::mutex publishMutex;
    std::shared_ptr<const Published> published;
    std::atomic<std::uint64_t> version{1};
    Stats stats;
    ShardedMap<CooldownKey, Millis, CooldownKeyHash> cooldowns;
    ShardedMap<IpAddress, Offender, AddressHash> offenders;
    std::function<void(const ListEntry&)> autoBanListener;
    std::atomic<std::uint64_t> autoBans{0};

    const Published& current(std::size_t& slot)
    {
        ThreadCache& tc = t_cache;
        if (tc.engineId != id) {
            tc.engineId = id;
            tc.slot = stats.claimSlot();
            tc.version = 0;
        }
        const std::uint64_t v = version.load(std::memory_order_acquire);
        if (tc.version != v) {
            std::lock_guard lock(publishMutex);
            tc.published = published;
            tc.version = version.load(std::memory_order_relaxed);
        }
        slot = tc.slot;
        return *tc.published;
    }

    std::shared_ptr<const Published> snapshot() const
    {
        std::lock_guard lock(publishMutex);
        return published;
    }

    template <class Fn>
    void publish(Fn&& change)
    {
        std::lock_guard lock(publishMutex);
        auto next = std::make_shared<Published>(*published);
        change(*next);
        published = std::move(next);
        version.fetch_add(1, std::memory_order_acq_rel);
    }

    Decision finish(Decision& d, const Compiled& c, std::size_t slot, Millis now)
    {
        d.wouldBe = d.action;
        d.throttleStatus = std::uint16_t(c.settings.throttleStatus);
        d.rateLimitHeadersOnAllowed = c.settings.rateLimitHeadersOnAllowed;
        if (c.settings.dryRun && d.refused())
            d.action = Action::DryRun;
        stats.record(slot, d.action, now);
        return d;
    }

    void trackOnly(const Published& p, const IpAddress& key, const RequestFacts& f, Millis now, std::uint32_t customerTag)
    {
        const Compiled& c = *p.compiled;
        p.clients->with(TableKey{key.hi(), key.lo(), 0, CLIENT_SPACE, 0}, c.clientSignature, now, c.clientKeepMs,
                        [&](KeyTable::Header& h, std::uint32_t* cells, bool) {
                            h.detail = f.client.lo();
                            h.flags = customerTag;
                            LiveRing::count(cells, now);
                        });
    }

    // A Range GET for a resource whose window is open: takes one of the
    // resource's continuations and one of the client's. True when both had
    // one left (the request is then not counted).
    bool continuesResource(const Published& p, const IpAddress& key, std::uint64_t resource, Millis now)
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
    void beginResource(const Published& p, const IpAddress& key, std::uint64_t resource, Millis now)
    {
        p.clients->with(TableKey{key.hi(), key.lo(), resource, RANGE_RESOURCE_SPACE, 0}, RANGE_SIGNATURE, now, 0,
                        [&](KeyTable::Header& h, std::uint32_t* cells, bool) {
                            if (ContinuationWindow::open(cells, now, Tuning::rangeWindowMs))
                                return;
                            ContinuationWindow::begin(cells, now);
                            h.expiresAt = now + Tuning::rangeWindowMs;
                        });
    }

    std::optional<ListEntry> noteRefusal(const Compiled& c, const IpAddress& key, Millis now)
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
            return std::nullopt;
        ListEntry entry;
        entry.range = Cidr(key, c.keyPrefix(key));
        entry.reason = "escalation: " + std::to_string(e.refusals) + " refusals within " + formatPeriod(e.findMs) + " (ban #"
            + std::to_string(banNumber) + ", " + formatPeriod(*banFor) + ")";
        entry.source = ListSource::Automatic;
        entry.createdAt = now;
        entry.createdBy = "floodgate";
        entry.expiresAt = now + *banFor;
        entry.banCount = banNumber;
        publish([&](Published& p) {
            p.automatic = std::make_shared<const AddressList>(p.automatic->withoutExpired(now).with(entry));
        });
        autoBans.fetch_add(1, std::memory_order_relaxed);
        return entry;
    }

    ClientSummary summarize(const Compiled& c, const KeyTable::Header& h, const std::uint32_t* cells, Millis now) const
    {
        ClientSummary s;
        s.key = addressOfKey(h.key.a, h.key.b);
        s.keyPrefix = c.keyPrefix(s.key);
        s.lastAddress = addressOfKey(h.key.a, h.detail);  // the last full address: the key's high word, its own low word
        s.live = LiveRing::read(cells, now);
        s.lastBucket = s.live.back();
        s.last60s = LiveRing::total(s.live);
        s.ratePerSecond = LiveRing::recentRate(s.live, now);
        s.lastSeen = h.lastSeen;
        s.customerTag = h.flags;
        return s;
    }

    static LevelUsage usageOf(const LevelSpec& spec, const Verdict& v, const std::uint32_t* cells, Millis now)
    {
        LevelUsage u;
        u.name = std::string(spec.name.view());
        u.algorithm = spec.algorithm;
        u.limit = spec.limit;
        u.periodMs = spec.periodMs;
        u.used = v.used;
        u.remaining = v.used >= spec.limit ? 0 : spec.limit - v.used;
        u.resetMs = v.resetMs;
        u.refusing = !v.allowed;
        u.retryAfterMs = v.allowed ? 0 : v.retryAfterMs;
        u.buckets = bucketsOf(spec, cells + spec.offset, now);
        return u;
    }

    // Peeks every level of `specs` on `cells` (nothing is counted): the one
    // with the least left goes to `binding`, each one's use to `levels`.
    static void peekLevels(const std::vector<LevelSpec>& specs, const std::uint32_t* cells, Millis now, Binding* binding,
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

    // Runs fn(cells) on a customer's counters; false when it has none yet
    // (no request, or its levels changed shape since).
    template <class Fn>
    static bool readCustomer(const Published& p, const CompiledCustomer& cu, Millis now, Fn&& fn)
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

    // Fills the binding level and state of a summary from its cells and the lists.
    void describe(const Published& p, ClientSummary& s, const std::uint32_t* cells, Millis now,
                  std::vector<LevelUsage>* levels) const
    {
        const Compiled& c = *p.compiled;
        Binding binding;
        for (const CompiledRule& r : c.rules)
            if (r.space == CLIENT_SPACE && s.customerTag == 0)
                peekLevels(r.levels, cells, now, &binding, levels);
        if (s.customerTag != 0) {
            // This address last spoke for a customer: the customer's levels bind.
            if (auto t = c.customerByTag.find(s.customerTag); t != c.customerByTag.end()) {
                const CompiledCustomer& cu = c.customers.at(t->second);
                s.customer = cu.id;
                binding = Binding{};
                readCustomer(p, cu, now, [&](const std::uint32_t* cc) { peekLevels(cu.levels, cc, now, &binding, levels); });
            }
        }
        if (binding.spec) {
            s.bindingRule = std::string(binding.spec->name.view());
            s.bindingUsed = binding.verdict.used;
            s.bindingLimit = binding.spec->limit;
            if (binding.refusing) {
                s.state = ClientState::Throttled;
                s.retryAfterMs = binding.verdict.retryAfterMs;
            }
        }
        const auto kind = listMatch(p, s.lastAddress, now, nullptr);
        if (kind == ListKind::Blocklist)
            s.state = ClientState::Blocked;
        else if (kind == ListKind::Safelist)
            s.state = ClientState::Safelisted;
    }

    // Which list decides for an address: the longest active prefix across the
    // lists, the blocklist on a tie.
    std::optional<ListKind> listMatch(const Published& p, const IpAddress& a, Millis now, const ListEntry** entry) const
    {
        const ListEntry* blk = p.blocklist->empty() ? nullptr : p.blocklist->match(a, now);
        if (!p.automatic->empty()) {
            const ListEntry* aut = p.automatic->match(a, now);
            if (aut && (!blk || aut->range.prefix128() > blk->range.prefix128()))
                blk = aut;
        }
        const ListEntry* safe = p.safelist->empty() ? nullptr : p.safelist->match(a, now);
        if (blk && (!safe || blk->range.prefix128() >= safe->range.prefix128())) {
            if (entry)
                *entry = blk;
            return ListKind::Blocklist;
        }
        if (safe) {
            if (entry)
                *entry = safe;
            return ListKind::Safelist;
        }
        return std::nullopt;
    }
};

Engine::Engine(EngineConfig config)
    : m(std::make_unique<Impl>())
{
    if (auto error = validate(config))
        throw std::invalid_argument("invalid engine configuration: " + *error);
    auto cfg = std::make_shared<const EngineConfig>(std::move(config));
    auto p = std::make_shared<Published>();
    p->compiled = compile(cfg);
    p->blocklist = std::make_shared<const AddressList>();
    p->safelist = std::make_shared<const AddressList>();
    p->automatic = std::make_shared<const AddressList>();
    p->clients = std::make_shared<KeyTable>(cfg->settings.maxTrackedKeys, p->compiled->tableStride);
    p->customers = std::make_shared<KeyTable>(std::max<std::size_t>(1024, cfg->customers.size() * 2), p->compiled->customerStride);
    m->published = std::move(p);
}

Engine::~Engine() = default;

std::optional<std::string> Engine::setConfig(EngineConfig config)
{
    if (auto error = validate(config))
        return error;
    auto cfg = std::make_shared<const EngineConfig>(std::move(config));
    auto compiled = compile(cfg);
    m->publish([&](Published& p) {
        // Keep the tables (and so every count) unless the new shape needs wider
        // entries or another capacity; entries whose shape changed start over.
        if (compiled->tableStride > p.clients->strideCells() || cfg->settings.maxTrackedKeys != p.clients->capacity())
            p.clients = std::make_shared<KeyTable>(cfg->settings.maxTrackedKeys, compiled->tableStride);
        const std::size_t customerCapacity = std::max<std::size_t>(1024, cfg->customers.size() * 2);
        if (compiled->customerStride > p.customers->strideCells() || customerCapacity > p.customers->capacity())
            p.customers = std::make_shared<KeyTable>(customerCapacity, compiled->customerStride);
        p.compiled = compiled;
    });
    return std::nullopt;
}

std::shared_ptr<const EngineConfig> Engine::config() const
{
    return m->snapshot()->compiled->source;
}

void Engine::setList(ListKind kind, std::shared_ptr<const AddressList> list)
{
    if (!list)
        list = std::make_shared<const AddressList>();
    m->publish([&](Published& p) { (kind == ListKind::Safelist ? p.safelist : p.blocklist) = std::move(list); });
}

std::shared_ptr<const AddressList> Engine::list(ListKind kind) const
{
    auto p = m->snapshot();
    return kind == ListKind::Safelist ? p->safelist : p->blocklist;
}

std::shared_ptr<const AddressList> Engine::automaticBans() const
{
    return m->snapshot()->automatic;
}

void Engine::setAutomaticBans(std::shared_ptr<const AddressList> list)
{
    if (!list)
        list = std::make_shared<const AddressList>();
    m->publish([&](Published& p) { p.automatic = std::move(list); });
}

bool Engine::removeAutomaticBan(const Cidr& range)
{
    bool found = false;
    m->publish([&](Published& p) {
        found = p.automatic->find(range) != nullptr;
        if (found)
            p.automatic = std::make_shared<const AddressList>(p.automatic->without(range));
    });
    return found;
}

void Engine::restoreAutomaticBans(const std::vector<ListEntry>& entries)
{
    m->publish([&](Published& p) {
        std::vector<ListEntry> all = p.automatic->entries();
        all.insert(all.end(), entries.begin(), entries.end());
        p.automatic = std::make_shared<const AddressList>(std::move(all));
    });
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

void Engine::setAutoBanListener(std::function<void(const ListEntry&)> listener)
{
    m->autoBanListener = std::move(listener);
}

Cidr Engine::countingRange(const IpAddress& address) const
{
    const Compiled& c = *m->snapshot()->compiled;
    const IpAddress key = countingKey(address, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits);
    return Cidr(key, c.keyPrefix(key));
}

Decision Engine::decide(const RequestFacts& f, Millis now)
{
    std::size_t slot = 0;
    const Published& p = m->current(slot);
    const Compiled& c = *p.compiled;
    Decision d;

    // 1. Lists: the blocklist refuses first and spends no counters.
    if (!p.blocklist->empty() || !p.safelist->empty() || !p.automatic->empty()) {
        const ListEntry* entry = nullptr;
        const auto kind = m->listMatch(p, f.client, now, &entry);
        if (kind == ListKind::Blocklist) {
            d.action = Action::Block;
            d.reason = entry->source == ListSource::Automatic ? Reason::AutoBanned : Reason::Blocklisted;
            d.rule.assign("blocklist");
            d.listExpiresAt = entry->expiresAt;
            d.retryAfterMs = entry->expiresAt == NeverExpires ? 0 : entry->expiresAt - now;
            d.resetMs = d.retryAfterMs;
            // No rule counter is spent; the live view still shows who keeps knocking.
            m->trackOnly(p, countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits), f, now, 0);
            return m->finish(d, c, slot, now);
        }
        if (kind == ListKind::Safelist) {
            d.reason = Reason::Safelisted;
            d.rule.assign("safelist");
            d.listExpiresAt = entry->expiresAt;
            m->trackOnly(p, countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits), f, now, 0);
            return m->finish(d, c, slot, now);
        }
    }

    // 2. What is not counted at all.
    if (!c.excluded.empty() && c.excluded.matches(f.path)) {
        d.reason = Reason::ExcludedPath;
        return m->finish(d, c, slot, now);
    }
    const IpAddress key = countingKey(f.client, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits);
    if ((!c.safeAgents.empty() && c.safeAgents.matches(f.userAgent)) || (c.cookielessOnly && f.cookieCount > 0)) {
        d.reason = c.cookielessOnly && f.cookieCount > 0 ? Reason::HasCookies : Reason::SafeUserAgent;
        m->trackOnly(p, key, f, now, 0);
        return m->finish(d, c, slot, now);
    }
    // A part of a resource this client is already reading is not a new
    // page hit (bounded per resource and per client, Tuning.h).
    const bool ranged = readsARange(f);
    const std::uint64_t resource = ranged ? keyedHash64(f.path) : 0;
    if (ranged && m->continuesResource(p, key, resource, now)) {
        d.reason = Reason::RangeContinuation;
        const CompiledCustomer* cu = customerOf(c, f);
        m->trackOnly(p, key, f, now, cu ? cu->tag : 0);
        return m->finish(d, c, slot, now);
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

    // 4. Levels. Entries other than the client's (a customer's, or rules keyed
    // on something else) reserve their count first and give it back if the
    // decision ends in a refusal, so no level ever admits over its limit.
    Binding binding;
    struct Reservation {
        KeyTable* table;
        TableKey key;
        const std::vector<LevelSpec>* levels;
        std::uint32_t signature;
        Millis keepMs;
        bool reserved;
    };
    std::array<Reservation, MAX_SECONDARY> secondary;
    std::size_t secondaryCount = 0;
    auto runSecondary = [&](KeyTable& table, const TableKey& k, const std::vector<LevelSpec>& levels, std::uint32_t sig, Millis keep) {
        LevelGroup group;
        group.add(levels);
        bool groupRefused = false;
        table.with(k, sig, now, keep, [&](KeyTable::Header&, std::uint32_t* cells, bool) {
            groupRefused = runLevels(group, cells, now, refused, binding);
        });
        if (secondaryCount < MAX_SECONDARY)  // always: validate() caps the keyed rules
            secondary[secondaryCount++] = {&table, k, &levels, sig, keep, !groupRefused && !refused};
        refused = refused || groupRefused;
    };

    const CompiledCustomer* customer = customerOf(c, f);
    if (customer) {
        d.customer = true;
        d.customerId.assign(customer->id);
        runSecondary(*p.customers, customer->key, customer->levels, customer->signature, customer->keepMs);
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
            runSecondary(*p.clients, k, r.levels, r.signature, r.keepMs);
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
    p.clients->with(TableKey{key.hi(), key.lo(), 0, CLIENT_SPACE, 0}, c.clientSignature, now, c.clientKeepMs,
                    [&](KeyTable::Header& h, std::uint32_t* cells, bool) {
                        h.detail = f.client.lo();
                        h.flags = customer ? customer->tag : 0;
                        LiveRing::count(cells, now);
                        clientRefused = runLevels(clientLevels, cells, now, refused, binding);
                    });
    refused = refused || clientRefused;
    if (refused) {
        for (std::size_t i = 0; i < secondaryCount; ++i) {
            Reservation& r = secondary[i];
            if (!r.reserved)
                continue;
            r.table->with(r.key, r.signature, now, r.keepMs, [&](KeyTable::Header&, std::uint32_t* cells, bool) {
                for (const LevelSpec& spec : *r.levels)
                    if (!spec.countRefused)
                        uncount(spec, cells + spec.offset, now);
            });
        }
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
    if (d.action == Action::Throttle && d.reason == Reason::OverLimit && c.escalation.enabled && !c.settings.dryRun) {
        if (auto ban = m->noteRefusal(c, key, now)) {
            d.autoBanned = true;
            if (m->autoBanListener)
                m->autoBanListener(*ban);
        }
    }
    return m->finish(d, c, slot, now);
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
    }
}

EngineCounters Engine::counters(Millis now) const
{
    auto p = m->snapshot();
    EngineCounters out;
    out.decisions = m->stats.totals();
    out.trackedKeys = p->clients->size() + p->customers->size();
    out.evictions = p->clients->evictions() + p->customers->evictions();
    out.expirations = p->clients->expirations() + p->customers->expirations();
    out.autoBans = m->autoBans.load(std::memory_order_relaxed);
    out.activeCooldowns = m->cooldowns.countIf([now](const auto& kv) { return kv.second > now; });
    out.blocklistEntries = p->blocklist->activeCount(now);
    out.safelistEntries = p->safelist->activeCount(now);
    out.automaticEntries = p->automatic->activeCount(now);
    out.capacity = p->clients->capacity();
    return out;
}

std::vector<SecondCounts> Engine::perSecond(Millis now, std::size_t seconds) const
{
    return m->stats.perSecond(now, seconds);
}

std::vector<ClientSummary> Engine::topClients(std::size_t limit, Millis now) const
{
    limit = std::min(limit, Tuning::maxTopClients);
    auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    std::vector<ClientSummary> out;
    if (limit == 0)
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
    p->clients->forEach(now, [&](const KeyTable::Header& h, const std::uint32_t* cells) {
        if (h.key.space != CLIENT_SPACE)
            return;
        const auto live = LiveRing::read(cells, now);
        const std::uint32_t last60s = LiveRing::total(live);
        if (last60s == 0 && heap.size() >= limit)
            return;
        const Candidate cand{LiveRing::recentRate(live, now), last60s, h.key.a, h.key.b};
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
        p->clients->read(TableKey{cand.a, cand.b, 0, CLIENT_SPACE, 0}, now, [&](const KeyTable::Header& h, const std::uint32_t* cells) {
            ClientSummary s = m->summarize(c, h, cells, now);
            m->describe(*p, s, cells, now, nullptr);
            out.push_back(std::move(s));
        });
    }
    return out;
}

LiveBuckets Engine::liveBuckets(std::size_t topPerBucket, Millis now) const
{
    auto p = m->snapshot();
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
    p->clients->forEach(now, [&](const KeyTable::Header& h, const std::uint32_t* cells) {
        if (h.key.space != CLIENT_SPACE)
            return;
        const auto live = LiveRing::read(cells, now);
        bool any = false;
        for (std::size_t i = 0; i < live.size(); ++i) {
            if (live[i] == 0)
                continue;
            any = true;
            out.buckets[i].total += live[i];
            std::vector<Item>& heap = heaps[i];
            if (topPerBucket == 0 || (heap.size() >= topPerBucket && live[i] <= heap.front().count))
                continue;
            heap.push_back(Item{live[i], h.key.a, h.key.b});
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
    const bool tracked = p->clients->read(TableKey{key.hi(), key.lo(), 0, CLIENT_SPACE, 0}, now,
                                          [&](const KeyTable::Header& h, const std::uint32_t* cells) {
                                              detail.summary = m->summarize(c, h, cells, now);
                                              m->describe(*p, detail.summary, cells, now, &detail.levels);
                                          });
    const ListEntry* entry = nullptr;
    const auto kind = m->listMatch(*p, address, now, &entry);
    if (!tracked) {
        if (!kind)
            return std::nullopt;
        detail.summary.key = key;
        detail.summary.keyPrefix = c.keyPrefix(key);
        detail.summary.lastAddress = address;
        detail.summary.state = *kind == ListKind::Blocklist ? ClientState::Blocked : ClientState::Safelisted;
    }
    if (kind) {
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
    const bool counted = Impl::readCustomer(*p, cu, now, [&](const std::uint32_t* cells) {
        Impl::peekLevels(cu.levels, cells, now, nullptr, &out);
    });
    if (!counted || out.empty()) {
        // No request yet (or the levels changed shape): every level is whole.
        out.clear();
        const std::vector<std::uint32_t> zero(std::max<std::size_t>(1, c.customerStride), 0);
        Impl::peekLevels(cu.levels, zero.data(), now, nullptr, &out);
    }
    return out;
}

std::size_t Engine::purge(Millis now)
{
    auto p = m->snapshot();
    const Escalation e = p->compiled->escalation;
    std::size_t n = p->clients->purge(now) + p->customers->purge(now);
    n += m->cooldowns.eraseIf([now](const auto& kv) { return kv.second <= now; });
    n += m->offenders.eraseIf([&](const auto& kv) {
        const Offender& o = kv.second;
        const bool windowOver = o.refusals == 0 || now - o.windowStart >= e.findMs;
        const bool historyOver = o.bans == 0 || now - o.lastBanAt >= Tuning::escalationMemoryMs;
        return windowOver && historyOver;
    });
    if (p->automatic->activeCount(now) != p->automatic->size()) {
        m->publish([&](Published& next) {
            next.automatic = std::make_shared<const AddressList>(next.automatic->withoutExpired(now));
        });
    }
    return n;
}

} // namespace Floodgate::Core
