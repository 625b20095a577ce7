// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide() cost: a hot key and 1,000,000 distinct keys, 1 and 2 threads;
// an API customer proving itself with its key, and one claimed without
// proof; an 8 KiB path against the default rules and against globs at their caps.
// Run through scripts/bench-engine, which writes the figures to docs/BENCHMARKS.md.
#include "core/CustomerKey.h"
#include "core/Engine.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace Floodgate::Core;

namespace {

constexpr Millis BASE = 1'790'000'000'000;  // a fixed wall-clock time (ms)
constexpr std::size_t DISTINCT = 1'000'000;

// The default rules with their limits raised, so every request takes the
// full "allowed" path: evaluate three levels, count, update the live ring.
EngineConfig roomyDefaults()
{
    EngineConfig c = defaultConfig();
    for (auto& l : c.rules[0].levels)
        l.limit = 1'000'000'000;
    c.escalation.enabled = false;
    return c;
}

EngineConfig refusingDefaults()
{
    EngineConfig c = defaultConfig();
    c.escalation.enabled = false;  // otherwise the hot key is banned and only the list is consulted
    return c;
}

std::vector<IpAddress>& distinctAddresses()
{
    static std::vector<IpAddress> v = [] {
        std::vector<IpAddress> out;
        out.reserve(DISTINCT);
        for (std::uint32_t i = 0; i < DISTINCT; ++i)
            out.push_back(IpAddress::fromV4(0x0a000000u + i));  // 10.0.0.0/12, all distinct
        return out;
    }();
    return v;
}

struct Shared {
    std::unique_ptr<Engine> engine;
    std::mutex mutex;
    int users = 0;
};

void release(Shared& s)
{
    std::lock_guard lock(s.mutex);
    if (--s.users == 0)
        s.engine.reset();
}

RequestFacts facts(const IpAddress& a)
{
    RequestFacts f;
    f.peer = a;
    f.client = a;
    f.method = "GET";
    f.path = "/products/42";
    f.userAgent = "Mozilla/5.0";
    return f;
}

// 1,000 API customers on a Pro tier with room, each with its key; customer
// 0's key is the one a request proves itself with.
EngineConfig roomyCustomers()
{
    EngineConfig c = roomyDefaults();
    for (Tier& t : c.tiers)
        for (Level& l : t.levels)
            l.limit = 1'000'000'000;
    for (int i = 0; i < 1000; ++i)
        c.customers.push_back(Customer{"customer-" + std::to_string(i), "", "Pro", {}, {customerKeyFrom(keyDigest("bench key " + std::to_string(i)), BASE).key}});
    return c;
}

// What a hot request carries besides its address: nothing (an anonymous
// client); customer 0's API key (proof: a SHA-256 and a lookup); customer 0
// proven already (what replay of a limiter.log line does: the customer's
// path without the SHA-256); customer 0's id in X-Customer-Id (a claim:
// counted by address, as anonymous).
void anonymous(RequestFacts&) {}
void provingWithKey(RequestFacts& f)
{
    static const std::string key = customerKeyFrom(keyDigest("bench key 0"), BASE).secret;
    static const HeaderField h{"X-Api-Key", key};
    f.headers = std::span<const HeaderField>(&h, 1);
}
void provenAlready(RequestFacts& f)
{
    f.customerId = "customer-0";
}
void claimingByHeader(RequestFacts& f)
{
    static const HeaderField h{"X-Customer-Id", "customer-0"};
    f.headers = std::span<const HeaderField>(&h, 1);
}

template <EngineConfig (*Make)(), void (*Carry)(RequestFacts&) = anonymous>
void hotKey(benchmark::State& state)
{
    static Shared shared;
    // Both threads construct under the lock; thread 0 creates the engine.
    Engine* engine = nullptr;
    {
        std::lock_guard lock(shared.mutex);
        if (!shared.engine)
            shared.engine = std::make_unique<Engine>(Make());
        ++shared.users;
        engine = shared.engine.get();
    }
    // Each thread hammers its own hot key: the question is how the engine
    // scales, not how one lock does.
    RequestFacts f = facts(IpAddress::fromV4(0xc0000200u + std::uint32_t(state.thread_index())));
    Carry(f);
    std::int64_t i = 0;
    for (auto _ : state) {
        Decision d = engine->decide(f, BASE + (i++ >> 10));
        benchmark::DoNotOptimize(d);
    }
    state.SetItemsProcessed(state.iterations());
    release(shared);
}

EngineConfig roomyMillion()
{
    // Room for all 1,000,000 keys: the figure is for lookups in a full table,
    // not for eviction churn (measured separately below).
    EngineConfig c = roomyDefaults();
    c.settings.maxTrackedKeys = DISTINCT + DISTINCT / 10;
    return c;
}

EngineConfig churningHalfMillion()
{
    // 1,000,000 keys cycling through a 500,000-key table: every request is a
    // miss that evicts the least recently used key.
    EngineConfig c = roomyDefaults();
    c.settings.maxTrackedKeys = DISTINCT / 2;
    return c;
}

// One engine per many-keys benchmark, for all its runs: it is filled with
// the 1,000,000 keys before the first run is timed, so every run measures
// decisions on a full table (an engine made per run would be filled inside
// the timed loop, and each of Google Benchmark's trial runs would fill it
// again). Engine time goes on from run to run.
struct Filled {
    std::unique_ptr<Engine> engine;
    std::mutex mutex;
    Millis clock = BASE;
};

template <EngineConfig (*Make)()>
void distinctKeys(benchmark::State& state)
{
    static Filled filled;
    const auto& addrs = distinctAddresses();
    Engine* engine = nullptr;
    Millis start = 0;
    {
        std::lock_guard lock(filled.mutex);
        if (!filled.engine) {
            filled.engine = std::make_unique<Engine>(Make());
            for (const IpAddress& a : addrs)
                benchmark::DoNotOptimize(filled.engine->decide(facts(a), filled.clock));
            ++filled.clock;
        }
        engine = filled.engine.get();
        start = filled.clock;
    }
    // Each thread its own clients, as each listener thread serves its own
    // connections: thread t of n takes every n-th address from the t-th, so
    // the threads share the table's shards but never a key. (Both walking
    // all the keys a few thousand apart measured two threads deciding for
    // the same clients moments apart: one thread's misses were the other's
    // hits on lines the other core had just written, and with a 500,000-key
    // table the trailing thread found every key the leading one had just
    // put back.)
    const auto threads = std::size_t(state.threads());
    std::size_t i = std::size_t(state.thread_index());
    std::int64_t n = 0;
    for (auto _ : state) {
        Decision d = engine->decide(facts(addrs[i]), start + (n++ >> 10));
        benchmark::DoNotOptimize(d);
        i += threads;
        if (i >= DISTINCT)
            i -= DISTINCT;  // DISTINCT is a multiple of 1 and 2: each thread stays on its own addresses
    }
    state.SetItemsProcessed(state.iterations());
    std::lock_guard lock(filled.mutex);
    filled.clock = std::max(filled.clock, start + (n >> 10) + 1);
}

// An allowed hot key while 100,000 blocklist entries (99,000 /32, 1,000 /24)
// and 1,000 safelist entries are loaded: the price of the list lookups.
void hotKeyWithLists(benchmark::State& state)
{
    static Shared shared;
    Engine* engine = nullptr;
    {
        std::lock_guard lock(shared.mutex);
        if (!shared.engine) {
            shared.engine = std::make_unique<Engine>(roomyDefaults());
            std::vector<ListEntry> block, safe;
            for (std::uint32_t i = 0; i < 99'000; ++i)
                block.push_back(ListEntry{0, Cidr(IpAddress::fromV4(0x64000000u + i * 7u), 128), "bench", ListSource::Import, 0, "bench", NeverExpires});
            for (std::uint32_t i = 0; i < 1'000; ++i)
                block.push_back(ListEntry{0, Cidr(IpAddress::fromV4(0x65000000u + (i << 8)), 120), "bench", ListSource::Import, 0, "bench", NeverExpires});
            for (std::uint32_t i = 0; i < 1'000; ++i)
                safe.push_back(ListEntry{0, Cidr(IpAddress::fromV4(0x66000000u + i), 128), "bench", ListSource::Operator, 0, "bench", NeverExpires});
            shared.engine->setList(ListKind::Blocklist, std::make_shared<const AddressList>(std::move(block)));
            shared.engine->setList(ListKind::Safelist, std::make_shared<const AddressList>(std::move(safe)));
        }
        ++shared.users;
        engine = shared.engine.get();
    }
    const RequestFacts f = facts(IpAddress::fromV4(0xc0000200u + std::uint32_t(state.thread_index())));
    std::int64_t i = 0;
    for (auto _ : state) {
        Decision d = engine->decide(f, BASE + (i++ >> 10));
        benchmark::DoNotOptimize(d);
    }
    state.SetItemsProcessed(state.iterations());
    release(shared);
}

// ---- globs against a long path (issue 27, item 7) ----

constexpr std::size_t LONG_PATH = 8192;          // the listener's request-line cap (8 KiB)
constexpr std::size_t GLOB_LENGTH = 512;         // the caps, as the benchmarks' names say
constexpr std::size_t GLOBS_PER_FIELD = 256;
static_assert(GLOB_LENGTH == Tuning::maxGlobLength && GLOBS_PER_FIELD == Tuning::maxGlobsPerField,
              "the caps changed: rename the benchmarks below and rerun them");

// "*a?aa...ab*", `length` characters: never matches a run of 'a', and a
// matcher that restarts a literal at every position compares almost all of
// it at each one. The '?' (its place varies with `i`, so no two are alike)
// keeps a plain substring search from finding the literal for it.
std::string adversarialGlob(std::size_t length, std::size_t i)
{
    std::string g = "*" + std::string(length - 3, 'a') + "b*";
    g[1 + 1 + i % (length - 5)] = '?';
    return g;
}

std::vector<std::string> adversarialGlobs(std::size_t count, std::size_t length)
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count; ++i)
        out.push_back(adversarialGlob(length, i));
    return out;
}

// The default rules with room (every request counted and allowed).
EngineConfig longPathDefaults()
{
    return roomyDefaults();
}

// Every excluded path at the caps.
EngineConfig excludedAtCaps()
{
    EngineConfig c = roomyDefaults();
    c.bot.excludedPaths = adversarialGlobs(GLOBS_PER_FIELD, GLOB_LENGTH);
    return c;
}

// Every field that holds globs at its caps: the excluded paths and safe
// user agents, a cooldown per glob, and as many path rules as the level
// caps allow (61 counted by address beside the 3 levels of "ip", 16 by a
// header). Each is checked and none matches, so the decision runs them all.
EngineConfig everyGlobAtCaps()
{
    EngineConfig c = excludedAtCaps();
    c.bot.safeUserAgents = adversarialGlobs(GLOBS_PER_FIELD, GLOB_LENGTH);
    const std::vector<std::string> globs = adversarialGlobs(GLOBS_PER_FIELD, GLOB_LENGTH);
    for (std::size_t i = 0; i < 61 + 16; ++i) {
        ThrottleRule r;
        r.name = "path" + std::to_string(i);
        r.pathGlob = globs[i];
        if (i >= 61) {
            r.discriminator = Discriminator::Header;
            r.header = "X-Api-Key";
        }
        r.levels = {Level{"", 1'000'000'000, MINUTE}};
        c.rules.push_back(std::move(r));
    }
    c.cooldowns.clear();
    for (std::size_t i = 0; i < GLOBS_PER_FIELD; ++i) {
        Cooldown cd;
        cd.name = "cd" + std::to_string(i);
        cd.pathGlob = globs[i];
        cd.durationMs = 30 * SECOND;
        c.cooldowns.push_back(std::move(cd));
    }
    return c;
}

// What one glob of the longest costs, and 256 of 64 characters (one word of
// state each): the cost grows with the count more than with the length.
EngineConfig oneLongExcluded()
{
    EngineConfig c = roomyDefaults();
    c.bot.excludedPaths = adversarialGlobs(1, GLOB_LENGTH);
    return c;
}

EngineConfig manyShortExcluded()
{
    EngineConfig c = roomyDefaults();
    c.bot.excludedPaths = adversarialGlobs(GLOBS_PER_FIELD, 64);
    return c;
}

// The issue's case: 60 excluded globs of 500 characters, a 7,000-character path.
EngineConfig issueExclusions()
{
    EngineConfig c = roomyDefaults();
    c.bot.excludedPaths = adversarialGlobs(60, 500);
    return c;
}

template <EngineConfig (*Make)(), std::size_t PathLength>
void longPath(benchmark::State& state)
{
    Engine engine(Make());
    const std::string path = "/" + std::string(PathLength - 1, 'a');
    const std::string agent(LONG_PATH, 'a');  // also 8 KiB: the header section's cap
    RequestFacts f = facts(IpAddress::fromV4(0xc0000201u));
    f.path = path;
    f.userAgent = agent;
    std::int64_t i = 0;
    for (auto _ : state) {
        Decision d = engine.decide(f, BASE + (i++ >> 10));
        benchmark::DoNotOptimize(d);
    }
    state.SetItemsProcessed(state.iterations());
}

} // namespace

BENCHMARK(hotKeyWithLists)->Name("decide/hot_key_allowed_100k_list_entries")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(hotKey<roomyDefaults>)->Name("decide/hot_key_allowed")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(hotKey<refusingDefaults>)->Name("decide/hot_key_refused")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(hotKey<roomyCustomers, provingWithKey>)->Name("decide/hot_customer_api_key")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(hotKey<roomyCustomers, provenAlready>)->Name("decide/hot_customer_proven_without_key")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(hotKey<roomyCustomers, claimingByHeader>)->Name("decide/hot_customer_header_claim")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(distinctKeys<roomyMillion>)->Name("decide/1M_distinct_keys")->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);
BENCHMARK(distinctKeys<churningHalfMillion>)->Name("decide/1M_keys_500k_table_evicting")->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);

// One thread: the question is what one decision costs, not how it scales.
// Nanoseconds, like the others, for scripts/bench-engine's table.
BENCHMARK(longPath<longPathDefaults, LONG_PATH>)->Name("decide/8KiB_path/default_rules")->Threads(1)->UseRealTime();
BENCHMARK(longPath<excludedAtCaps, LONG_PATH>)->Name("decide/8KiB_path/256_excluded_globs_of_512")->Threads(1)->UseRealTime();
BENCHMARK(longPath<oneLongExcluded, LONG_PATH>)->Name("decide/8KiB_path/1_excluded_glob_of_512")->Threads(1)->UseRealTime();
BENCHMARK(longPath<manyShortExcluded, LONG_PATH>)->Name("decide/8KiB_path/256_excluded_globs_of_64")->Threads(1)->UseRealTime();
BENCHMARK(longPath<everyGlobAtCaps, LONG_PATH>)->Name("decide/8KiB_path/every_glob_field_at_caps")->Threads(1)->UseRealTime();
BENCHMARK(longPath<issueExclusions, 7000>)->Name("decide/7000_path/60_excluded_globs_of_500")->Threads(1)->UseRealTime();

BENCHMARK_MAIN();
