// SPDX-License-Identifier: MIT
// Engine::decide end to end on the default rules (docs/INTERFACE.md): the
// binding level, Retry-After, lists, exclusions, bots, dry-run, live
// configuration, cooldowns and customer tiers. Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"
#include "core/Tuning.h"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

QByteArray ruleOf(const Decision& d)
{
    return QByteArray(d.rule.text, d.rule.length);
}

EngineConfig withCustomer(const std::string& tier, std::vector<Level> overrides = {})
{
    EngineConfig c = defaultConfig();
    c.customers = {Customer{"acme", "Acme Inc.", tier, std::move(overrides)}};
    return c;
}

Tier& tierNamed(EngineConfig& c, const std::string& name)
{
    for (Tier& t : c.tiers)
        if (t.name == name)
            return t;
    qFatal("no tier %s in the configuration", name.c_str());
}

// A rule counted by the value of the X-Api-Key header.
ThrottleRule apiKeyRule(std::string name, Level level)
{
    ThrottleRule r;
    r.name = std::move(name);
    r.discriminator = Discriminator::Header;
    r.header = "X-Api-Key";
    r.levels = {level};
    return r;
}

Request acme()
{
    return Request().withQuery("customer_id=acme");
}

QStringList levelNames(const ClientDetail& detail)
{
    QStringList out;
    for (const LevelUsage& u : detail.levels)
        out << qs(u.name);
    return out;
}

QList<uint> levelLimits(const ClientDetail& detail)
{
    QList<uint> out;
    for (const LevelUsage& u : detail.levels)
        out << u.limit;
    return out;
}

// ---- FNV-1a collisions -------------------------------------------------------
// How the engine used to key header values (salt 6) and cooldown users
// (salt 3): FNV-1a 64 from the offset basis xor the salt, the process seed
// mixed in only after the loop, so two strings whose loop states collide
// shared one counter whatever the seed.
constexpr std::uint64_t FNV_PRIME = 0x100000001b3ULL;

std::uint64_t oldFnvState(std::string_view s, std::uint64_t salt)
{
    std::uint64_t h = 0xcbf29ce484222325ULL ^ salt;
    for (unsigned char c : s) {
        h ^= c;
        h *= FNV_PRIME;
    }
    return h;
}

// Two different 32-byte strings with the same FNV-1a state from `salt`.
//
// XOR with a byte changes only the state's low byte, so after it the state
// is y + e for a small integer e (-255..255) the byte can choose given y's
// low byte. For two strings, the difference of their states after the last
// byte is then sum_i d_i * P^(31-i) mod 2^64 with d_i = e_i - e'_i: a
// collision is a choice of small d_i whose weighted sum is 0 mod 2^64.
// Wagner's generalised birthday algorithm ("A Generalized Birthday
// Problem", CRYPTO 2002) finds one from 16 lists of the 2^15 pairs
// (d_2j, d_2j+1), each merge zeroing 15 more low bits; the bytes are then
// chosen position by position to make each difference.
std::pair<std::string, std::string> fnvCollision(std::uint64_t salt)
{
    constexpr int N = 32, R = 90, LISTS = N / 2;
    std::array<std::uint64_t, N> weight{};
    std::uint64_t w = 1;
    for (int i = N - 1; i >= 0; --i) {
        weight[std::size_t(i)] = w;
        w *= FNV_PRIME;
    }
    struct Node {
        std::uint64_t sum;
        std::uint32_t left, right;  // level 0: d + R of the two positions; above: indexes one level down
    };
    std::vector<std::vector<std::vector<Node>>> levels(1);
    for (int j = 0; j < LISTS; ++j) {
        std::vector<Node> list;
        for (int a = -R; a <= R; ++a)
            for (int b = -R; b <= R; ++b)
                list.push_back({std::uint64_t(std::int64_t(a)) * weight[std::size_t(2 * j)]
                                    + std::uint64_t(std::int64_t(b)) * weight[std::size_t(2 * j + 1)],
                                std::uint32_t(a + R), std::uint32_t(b + R)});
        levels[0].push_back(std::move(list));
    }
    const std::uint64_t masks[] = {(1ULL << 15) - 1, (1ULL << 30) - 1, (1ULL << 45) - 1, ~0ULL};
    for (std::uint64_t mask : masks) {
        const auto& below = levels.back();
        std::vector<std::vector<Node>> next;
        for (std::size_t j = 0; j + 1 < below.size(); j += 2) {
            const std::vector<Node>& A = below[j];
            std::vector<std::uint32_t> order(below[j + 1].size());
            std::iota(order.begin(), order.end(), 0u);
            const std::vector<Node>& B = below[j + 1];
            std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return (B[x].sum & mask) < (B[y].sum & mask); });
            std::vector<Node> merged;
            for (std::uint32_t ia = 0; ia < A.size() && merged.size() < (1u << 16); ++ia) {
                const std::uint64_t want = (0 - A[ia].sum) & mask;
                auto it = std::lower_bound(order.begin(), order.end(), want, [&](std::uint32_t x, std::uint64_t v) { return (B[x].sum & mask) < v; });
                for (; it != order.end() && (B[*it].sum & mask) == want; ++it)
                    merged.push_back({A[ia].sum + B[*it].sum, ia, *it});
            }
            next.push_back(std::move(merged));
        }
        levels.push_back(std::move(next));
    }
    // Every node of the last level sums to 0: read its differences back.
    std::array<int, N> d{};
    std::function<void(std::size_t, std::size_t, std::uint32_t)> unfold = [&](std::size_t level, std::size_t list, std::uint32_t index) {
        const Node& n = levels[level][list][index];
        if (level == 0) {
            d[2 * list] = int(n.left) - R;
            d[2 * list + 1] = int(n.right) - R;
            return;
        }
        unfold(level - 1, 2 * list, n.left);
        unfold(level - 1, 2 * list + 1, n.right);
    };
    for (std::uint32_t s = 0; s < levels.back()[0].size(); ++s) {
        unfold(levels.size() - 1, 0, s);
        if (std::all_of(d.begin(), d.end(), [](int x) { return x == 0; }))
            continue;  // the trivial solution: two equal strings
        std::string a, b;
        std::uint64_t y = 0xcbf29ce484222325ULL ^ salt, z = y;
        bool ok = true;
        for (int i = 0; i < N && ok; ++i) {
            const int L = int(y & 255), M = int(z & 255);
            const int T = d[std::size_t(i)] + L - M;  // the low bytes after the XOR must differ by T
            ok = T >= -255 && T <= 255;
            const int v = T >= 0 ? T : 0, u = v - T;
            const auto ca = static_cast<unsigned char>(L ^ v), cb = static_cast<unsigned char>(M ^ u);
            a.push_back(char(ca));
            b.push_back(char(cb));
            y = (y ^ ca) * FNV_PRIME;
            z = (z ^ cb) * FNV_PRIME;
        }
        if (ok && y == z && a != b)
            return {a, b};
    }
    qFatal("no FNV-1a collision found");
}

// Part `n` of a resource read in 64 KiB chunks: a GET with a Range header.
Request part(std::string path, int n, std::string client = "203.0.113.7")
{
    const long from = long(n) * 65536;
    return Request().from(std::move(client)).at(std::move(path)).header("Range", "bytes=" + std::to_string(from) + "-" + std::to_string(from + 65535));
}

} // namespace

// A decision's action, with the whole decision in the message when it differs.
// Evaluates its decision once: QVERIFY2 builds its message even when the
// check passes, so a decide() call written inline would otherwise run twice.
#define COMPARE_ACTION(expr, expected)                                                                   \
    do {                                                                                                 \
        const Decision decided_ = (expr);                                                                \
        QVERIFY2(decided_.action == (expected), (label(expected) + " expected, got " + describe(decided_)).constData()); \
    } while (false)

class TestEngine : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void firstRequestBindsTheTightestLevel();
    void seventhRequestInThreeSecondsIsThrottled();
    void throttledResetIsNotBeforeRetryAfter();
    void goodBotAtOneRequestPerSecond();
    void goodBotMeetsTheThirtyMinuteLevel();
    void oneRequestEveryThreeSecondsRunsForAnHour();
    void floodIsMostlyThrottled();

    void safelistSkipsEveryThrottle();
    void blocklistRefusesWithoutSpendingCounters();
    void blocklistComesBeforeExclusions();
    void mappedClientMatchesIpv4Entry();
    void listsLongestPrefixWins_data();
    void listsLongestPrefixWins();
    void listEntryExpiresExactlyAtItsTtl();

    void ipv6Rotation_data();
    void ipv6Rotation();
    void ipv4Prefix_data();
    void ipv4Prefix();
    void countingRange();

    void excludedPathsAreNotCounted_data();
    void excludedPathsAreNotCounted();
    void lookalikePathIsCounted();
    void cookielessOnly();
    void safeUserAgents_data();
    void safeUserAgents();
    void dryRunReportsWithoutRefusing();

    void setConfigAppliesToTheNextDecision();
    void setConfigRejectsInvalidAndChangesNothing();
    void levelNameFromConfig();
    void methodAndPathRule();
    void reservationIsReturnedOnRefusal();
    void everyKeyedRuleGivesItsReservationBack();
    void headerValuesWithCollidingOldHashesKeepTheirCounters();

    void cooldownAfterSuccess();
    void cooldownNeedsASuccess();
    void cooldownFallsBackToClientAddress();
    void cooldownUsersWithCollidingOldHashesAreApart();

    void customerIsDecidedByItsTier_data();
    void customerIsDecidedByItsTier();
    void unknownCustomerFallsBackToIpRules();
    void customerSource_data();
    void customerSource();
    void tierLimits_data();
    void tierLimits();
    void proHourLevel();
    void overrideReplacesTheLevelOfTheSamePeriod();
    void overrideAddsANewPeriod();
    void seedOverrides();
    void tierChangeAppliesToTheNextDecision();

    void retryAfterSeconds_data();
    void retryAfterSeconds();

    void rangeDownloadIsOnePageHit();
    void rangeContinuationsAreBoundedPerResource();
    void rangeContinuationsAreBoundedPerClient();
    void aRefusedFirstPartOpensNoWindow();
    void whatIsNotAContinuation();
    void rangeStateOnlyForClientsThatReadRanges();
};

// ---- the default per-IP levels ----------------------------------------------

void TestEngine::firstRequestBindsTheTightestLevel()
{
    Engine engine;
    const Decision d = decide(engine, Request(), T0);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(label(d.wouldBe), label(Action::Allow));
    QCOMPARE(label(d.reason), label(Reason::Counted));
    // 6/3s has 5 left, 300/5m 299, 600/30m 599: the least remaining binds.
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QCOMPARE(d.limit, 6u);
    QCOMPARE(d.count, 1u);
    QCOMPARE(d.remaining, 5u);
    QCOMPARE(d.windowMs, Millis(3000));
    QCOMPARE(d.windowStartMs, T0);
    QCOMPARE(d.resetMs, Millis(3000));
    QCOMPARE(d.retryAfterMs, Millis(0));
    QVERIFY(!d.refused());
    QVERIFY(!d.customer);
    QVERIFY(!d.autoBanned);
}

void TestEngine::seventhRequestInThreeSecondsIsThrottled()
{
    Engine engine;
    for (std::uint32_t i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
        QCOMPARE(d.count, i + 1);
        QCOMPARE(d.remaining, 5 - i);
    }
    Decision d = decide(engine, Request(), T0 + 600);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(label(d.wouldBe), label(Action::Throttle));
    QCOMPARE(label(d.reason), label(Reason::OverLimit));
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QCOMPARE(d.limit, 6u);
    QCOMPARE(d.count, 6u);
    QCOMPARE(d.remaining, 0u);
    QCOMPARE(d.windowMs, Millis(3000));
    QCOMPARE(d.retryAfterMs, Millis(3000));  // locked out for 3 s from this refusal
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(3));
    QVERIFY(d.refused());

    d = decide(engine, Request(), T0 + 1600);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(d.retryAfterMs, Millis(2000));
    d = decide(engine, Request(), T0 + 3599);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(d.retryAfterMs, Millis(1));
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(1));

    d = decide(engine, Request(), T0 + 3600);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.remaining, 5u);
}

void TestEngine::throttledResetIsNotBeforeRetryAfter()
{
    // resetMs is "until the binding window's quota is whole again" and
    // retryAfterMs "until the same request would pass". Once the lockout level
    // refuses, its quota comes back when the lockout ends, so the RateLimit
    // reset (t=) must not promise an earlier time than Retry-After.
    Engine engine;
    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request(), T0 + i * 100), Action::Allow);
    Decision d = decide(engine, Request(), T0 + 600);
    COMPARE_ACTION(d, Action::Throttle);
    QVERIFY2(d.resetMs >= d.retryAfterMs, describe(d).constData());
    d = decide(engine, Request(), T0 + 1600);
    COMPARE_ACTION(d, Action::Throttle);
    QVERIFY2(d.resetMs >= d.retryAfterMs, describe(d).constData());
}

void TestEngine::goodBotAtOneRequestPerSecond()
{
    // docs/BACKGROUND.md, lockout window: a steady 1 req/s bot is never refused. 600 requests over ten
    // minutes: 6/3s sees at most 3 per window; 300/5m (30 s buckets) holds at
    // most 299 before a request; 600/30m has counted 599 before the 600th.
    Engine engine;
    for (int k = 0; k < 600; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * SECOND);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(k) + ": " + describe(d)).constData());
    }
}

void TestEngine::goodBotMeetsTheThirtyMinuteLevel()
{
    // ...but 600 per 30 minutes is one request per 3 s on average, so the
    // default 30-minute level stops a 1 req/s bot at its 601st request.
    Engine engine;
    for (int k = 0; k < 600; ++k)
        QVERIFY(decide(engine, Request(), T0 + k * SECOND).action == Action::Allow);
    const Decision d = decide(engine, Request(), T0 + 600 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-30m"));
    QCOMPARE(d.limit, 600u);
    // 3-minute buckets: the first (180 requests) leaves the window at 30 min.
    QCOMPARE(d.retryAfterMs, Millis(30 * MINUTE - 600 * SECOND));
}

void TestEngine::oneRequestEveryThreeSecondsRunsForAnHour()
{
    // The sustainable rate of the defaults: at most 599 before any request in
    // the 30-minute window (10 buckets of 3 min).
    Engine engine;
    for (int k = 0; k <= 1200; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * 3 * SECOND);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(k) + ": " + describe(d)).constData());
    }
}

void TestEngine::floodIsMostlyThrottled()
{
    // 20 req/s for 5 s: 6 pass (0..250 ms), refused and locked until 3300,
    // 6 pass (3300..3550), refused again. 88 refusals stay under the default
    // escalation threshold (100 per minute).
    Engine engine;
    int allowed = 0;
    for (int k = 0; k < 100; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * 50);
        const bool expectAllowed = k <= 5 || (k >= 66 && k <= 71);
        QVERIFY2((d.action == Action::Allow) == expectAllowed, (QByteArray::number(k) + ": " + describe(d)).constData());
        if (d.action == Action::Allow) {
            ++allowed;
            continue;
        }
        COMPARE_ACTION(d, Action::Throttle);
        QCOMPARE(label(d.reason), label(Reason::OverLimit));
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    }
    QCOMPARE(allowed, 12);
    QVERIFY(engine.automaticBans()->empty());
}

// ---- lists ---------------------------------------------------------------------

void TestEngine::safelistSkipsEveryThrottle()
{
    Engine engine;
    engine.setList(ListKind::Safelist, makeList({listEntry("203.0.113.7/32", "monitoring", T0 + DAY)}));
    QCOMPARE(engine.list(ListKind::Safelist)->size(), std::size_t(1));
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, Request(), T0 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Safelisted));
        QCOMPARE(d.listExpiresAt, T0 + DAY);
        QCOMPARE(d.retryAfterMs, Millis(0));
    }
    // Nothing was counted while safelisted.
    engine.setList(ListKind::Safelist, makeList({}));
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + 200 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Counted));
    }
    COMPARE_ACTION(decide(engine, Request(), T0 + 300), Action::Throttle);
}

void TestEngine::blocklistRefusesWithoutSpendingCounters()
{
    Engine engine;
    const Millis expires = T0 + 7 * DAY;
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "scraper", expires)}));
    QCOMPARE(engine.list(ListKind::Blocklist)->size(), std::size_t(1));
    for (int i = 0; i < 10; ++i) {
        const Millis now = T0 + i * 100;
        const Decision d = decide(engine, Request(), now);
        COMPARE_ACTION(d, Action::Block);
        QCOMPARE(label(d.reason), label(Reason::Blocklisted));
        QCOMPARE(ruleOf(d), QByteArray("blocklist"));
        QCOMPARE(d.listExpiresAt, expires);
        QCOMPARE(d.retryAfterMs, expires - now);  // the request passes once the entry ends
        QVERIFY(d.refused());
        QVERIFY(!d.autoBanned);
    }
    // Another address is not affected.
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.8"), T0 + 1000), Action::Allow);

    engine.setList(ListKind::Blocklist, makeList({}));
    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request(), T0 + 1000 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, Request(), T0 + 1100), Action::Throttle);
}

void TestEngine::blocklistComesBeforeExclusions()
{
    EngineConfig cfg = defaultConfig();
    cfg.bot.safeUserAgents = {"Googlebot"};
    Engine engine(cfg);
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "scraper")}));

    Decision d = decide(engine, Request().at("/style.css"), T0);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(label(d.reason), label(Reason::Blocklisted));
    QCOMPARE(d.listExpiresAt, NeverExpires);
    d = decide(engine, Request().agent("Googlebot/2.1"), T0);
    COMPARE_ACTION(d, Action::Block);
}

void TestEngine::mappedClientMatchesIpv4Entry()
{
    Engine engine;
    engine.setList(ListKind::Blocklist, makeList({listEntry("198.51.100.0/24", "bad neighbourhood")}));
    Decision d = decide(engine, Request().from("::ffff:198.51.100.9"), T0);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(label(d.reason), label(Reason::Blocklisted));
    d = decide(engine, Request().from("198.51.100.200"), T0);
    COMPARE_ACTION(d, Action::Block);
    d = decide(engine, Request().from("198.51.101.1"), T0);
    COMPARE_ACTION(d, Action::Allow);
}

void TestEngine::listsLongestPrefixWins_data()
{
    QTest::addColumn<QByteArray>("safe");
    QTest::addColumn<QByteArray>("block");
    QTest::addColumn<QByteArray>("client");
    QTest::addColumn<int>("action");
    QTest::addColumn<int>("reason");

    const int allow = int(Action::Allow), block = int(Action::Block);
    const int safelisted = int(Reason::Safelisted), blocklisted = int(Reason::Blocklisted);
    QTest::newRow("safe /32 inside blocked /24") << QByteArray("198.51.100.9/32") << QByteArray("198.51.100.0/24")
                                                 << QByteArray("198.51.100.9") << allow << safelisted;
    QTest::newRow("its neighbour stays blocked") << QByteArray("198.51.100.9/32") << QByteArray("198.51.100.0/24")
                                                 << QByteArray("198.51.100.10") << block << blocklisted;
    QTest::newRow("blocked /32 inside safe /24") << QByteArray("198.51.100.0/24") << QByteArray("198.51.100.9/32")
                                                 << QByteArray("198.51.100.9") << block << blocklisted;
    QTest::newRow("same range on both: blocklist") << QByteArray("198.51.100.0/24") << QByteArray("198.51.100.0/24")
                                                   << QByteArray("198.51.100.9") << block << blocklisted;
    QTest::newRow("v6 safe /64 inside blocked /48") << QByteArray("2001:db8:1:2::/64") << QByteArray("2001:db8:1::/48")
                                                    << QByteArray("2001:db8:1:2::5") << allow << safelisted;
    QTest::newRow("v6 elsewhere in the /48") << QByteArray("2001:db8:1:2::/64") << QByteArray("2001:db8:1::/48")
                                             << QByteArray("2001:db8:1:3::5") << block << blocklisted;
}

void TestEngine::listsLongestPrefixWins()
{
    QFETCH(QByteArray, safe);
    QFETCH(QByteArray, block);
    QFETCH(QByteArray, client);
    QFETCH(int, action);
    QFETCH(int, reason);

    Engine engine;
    engine.setList(ListKind::Safelist, makeList({listEntry(safe.toStdString(), "safe")}));
    engine.setList(ListKind::Blocklist, makeList({listEntry(block.toStdString(), "block")}));
    const Decision d = decide(engine, Request().from(client.toStdString()), T0);
    COMPARE_ACTION(d, Action(action));
    QCOMPARE(label(d.reason), label(Reason(reason)));
}

void TestEngine::listEntryExpiresExactlyAtItsTtl()
{
    Engine engine;
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "scraper", T0 + 5000)}));
    Decision d = decide(engine, Request(), T0 + 4999);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(d.retryAfterMs, Millis(1));
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(1));
    QCOMPARE(d.listExpiresAt, T0 + 5000);
    d = decide(engine, Request(), T0 + 5000);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(label(d.reason), label(Reason::Counted));

    engine.setList(ListKind::Safelist, makeList({listEntry("198.51.100.9/32", "partner", T0 + 5000)}));
    d = decide(engine, Request().from("198.51.100.9"), T0 + 4999);
    QCOMPARE(label(d.reason), label(Reason::Safelisted));
    d = decide(engine, Request().from("198.51.100.9"), T0 + 5000);
    QCOMPARE(label(d.reason), label(Reason::Counted));
}

// ---- counting keys ---------------------------------------------------------------

void TestEngine::ipv6Rotation_data()
{
    QTest::addColumn<int>("bits");
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<bool>("seventhThrottled");

    QTest::newRow("/64, rotating hosts") << 64 << QStringLiteral("2001:db8:1:2::%1") << true;
    QTest::newRow("/64, rotating subnets") << 64 << QStringLiteral("2001:db8:1:%1::1") << false;
    QTest::newRow("/128, rotating hosts") << 128 << QStringLiteral("2001:db8:1:2::%1") << false;
    QTest::newRow("/48, rotating subnets") << 48 << QStringLiteral("2001:db8:1:%1::1") << true;
}

void TestEngine::ipv6Rotation()
{
    QFETCH(int, bits);
    QFETCH(QString, pattern);
    QFETCH(bool, seventhThrottled);

    EngineConfig cfg = defaultConfig();
    cfg.settings.ipv6PrefixBits = bits;
    Engine engine(cfg);
    for (int n = 1; n <= 6; ++n) {
        const Decision d = decide(engine, Request().from(pattern.arg(n).toStdString()), T0 + n * 100);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.remaining, seventhThrottled ? std::uint32_t(6 - n) : 5u);
    }
    const Decision d = decide(engine, Request().from(pattern.arg(7).toStdString()), T0 + 700);
    COMPARE_ACTION(d, seventhThrottled ? Action::Throttle : Action::Allow);
    if (seventhThrottled)
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));

    // Another allocation is another client.
    const Decision other = decide(engine, Request().from("2001:db8:99::1"), T0 + 800);
    COMPARE_ACTION(other, Action::Allow);
    QCOMPARE(other.remaining, 5u);
}

void TestEngine::ipv4Prefix_data()
{
    QTest::addColumn<int>("bits");
    QTest::addColumn<bool>("seventhThrottled");
    QTest::newRow("/32 (default)") << 32 << false;
    QTest::newRow("/24") << 24 << true;
}

void TestEngine::ipv4Prefix()
{
    QFETCH(int, bits);
    QFETCH(bool, seventhThrottled);

    EngineConfig cfg = defaultConfig();
    cfg.settings.ipv4PrefixBits = bits;
    Engine engine(cfg);
    for (int n = 1; n <= 6; ++n)
        COMPARE_ACTION(decide(engine, Request().from("203.0.113." + std::to_string(n)), T0 + n * 100), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.7"), T0 + 700),
                   seventhThrottled ? Action::Throttle : Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("203.0.114.7"), T0 + 700), Action::Allow);
}

void TestEngine::countingRange()
{
    Engine engine;
    QCOMPARE(qs(engine.countingRange(ip("203.0.113.7")).toString()), QStringLiteral("203.0.113.7/32"));
    QCOMPARE(qs(engine.countingRange(ip("::ffff:203.0.113.7")).toString()), QStringLiteral("203.0.113.7/32"));
    QCOMPARE(qs(engine.countingRange(ip("2001:db8:1:2:aaaa::7")).toString()), QStringLiteral("2001:db8:1:2::/64"));
}

// ---- what is not counted -------------------------------------------------------------

void TestEngine::excludedPathsAreNotCounted_data()
{
    QTest::addColumn<QByteArray>("path");
    QTest::newRow("css") << QByteArray("/style.css");
    QTest::newRow("js in a folder") << QByteArray("/static/app.js");
    QTest::newRow("png") << QByteArray("/img/logo.png");
    QTest::newRow("ico") << QByteArray("/favicon.ico");
    QTest::newRow("woff2") << QByteArray("/fonts/inter.woff2");
    // Everything else a page pulls in, in any case.
    QTest::newRow("woff") << QByteArray("/fonts/inter.woff");
    QTest::newRow("ttf") << QByteArray("/fonts/Roboto-Regular.ttf");
    QTest::newRow("otf") << QByteArray("/fonts/a.otf");
    QTest::newRow("eot") << QByteArray("/fonts/a.eot");
    QTest::newRow("jpeg") << QByteArray("/photos/2024/beach.jpeg");
    QTest::newRow("webp") << QByteArray("/img/hero.webp");
    QTest::newRow("avif") << QByteArray("/img/hero.avif");
    QTest::newRow("bmp") << QByteArray("/img/old.bmp");
    QTest::newRow("module") << QByteArray("/js/app.mjs");
    QTest::newRow("source map") << QByteArray("/js/app.js.map");
    QTest::newRow("upper case") << QByteArray("/A.PNG");
    QTest::newRow("mixed case") << QByteArray("/Fonts/Inter.Woff2");
}

void TestEngine::excludedPathsAreNotCounted()
{
    QFETCH(QByteArray, path);

    Engine engine;
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, Request().at(path.toStdString()), T0 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::ExcludedPath));
        QCOMPARE(d.limit, 0u);  // no level applied
    }
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + 200 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.remaining, std::uint32_t(5 - i));
    }
    COMPARE_ACTION(decide(engine, Request(), T0 + 300), Action::Throttle);
}

void TestEngine::lookalikePathIsCounted()
{
    Engine engine;
    const Decision first = decide(engine, Request().at("/style.css.php"), T0);  // (.map is a source map: excluded)
    QCOMPARE(label(first.reason), label(Reason::Counted));
    QCOMPARE(first.remaining, 5u);
    for (int i = 1; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request().at("/css"), T0 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().at("/style.cssx"), T0 + 10), Action::Throttle);
}

void TestEngine::cookielessOnly()
{
    EngineConfig cfg = defaultConfig();
    cfg.bot.cookielessOnly = true;
    Engine engine(cfg);
    for (int i = 0; i < 20; ++i) {
        const Decision d = decide(engine, Request().withCookies(1), T0 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::HasCookies));
    }
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + 100 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Counted));
    }
    COMPARE_ACTION(decide(engine, Request(), T0 + 200), Action::Throttle);

    // Without the option, cookies change nothing.
    Engine plain;
    for (int i = 0; i < 6; ++i)
        QCOMPARE(label(decide(plain, Request().withCookies(3), T0 + i).reason), label(Reason::Counted));
    COMPARE_ACTION(decide(plain, Request().withCookies(3), T0 + 10), Action::Throttle);
}

void TestEngine::safeUserAgents_data()
{
    QTest::addColumn<QByteArray>("pattern");
    QTest::addColumn<QByteArray>("agent");
    QTest::addColumn<bool>("safe");

    QTest::newRow("substring, any case")
        << QByteArray("Googlebot") << QByteArray("Mozilla/5.0 (compatible; googlebot/2.1; +http://www.google.com/bot.html)") << true;
    QTest::newRow("upper-case agent") << QByteArray("Googlebot") << QByteArray("GOOGLEBOT") << true;
    QTest::newRow("a browser") << QByteArray("Googlebot") << QByteArray("Mozilla/5.0 (X11; Linux x86_64)") << false;
    QTest::newRow("glob") << QByteArray("*bingbot/*")
                          << QByteArray("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)") << true;
    QTest::newRow("glob is anchored") << QByteArray("bingbot*") << QByteArray("Mozilla/5.0 (compatible; bingbot/2.0)") << false;
}

void TestEngine::safeUserAgents()
{
    QFETCH(QByteArray, pattern);
    QFETCH(QByteArray, agent);
    QFETCH(bool, safe);

    EngineConfig cfg = defaultConfig();
    cfg.bot.safeUserAgents = {pattern.toStdString()};
    Engine engine(cfg);
    const Request r = Request().agent(agent.toStdString());
    if (safe) {
        for (int i = 0; i < 50; ++i) {
            const Decision d = decide(engine, r, T0 + i);
            COMPARE_ACTION(d, Action::Allow);
            QCOMPARE(label(d.reason), label(Reason::SafeUserAgent));
        }
    } else {
        for (int i = 0; i < 6; ++i)
            QCOMPARE(label(decide(engine, r, T0 + i).reason), label(Reason::Counted));
        COMPARE_ACTION(decide(engine, r, T0 + 10), Action::Throttle);
    }
}

void TestEngine::dryRunReportsWithoutRefusing()
{
    EngineConfig cfg = defaultConfig();
    cfg.settings.dryRun = true;
    Engine engine(cfg);
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.wouldBe), label(Action::Allow));
    }
    Decision d = decide(engine, Request(), T0 + 600);
    COMPARE_ACTION(d, Action::DryRun);
    QCOMPARE(label(d.wouldBe), label(Action::Throttle));
    QCOMPARE(label(d.reason), label(Reason::OverLimit));
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QCOMPARE(d.retryAfterMs, Millis(3000));
    QVERIFY(!d.refused());

    engine.setList(ListKind::Blocklist, makeList({listEntry("198.51.100.9/32", "scraper")}));
    d = decide(engine, Request().from("198.51.100.9"), T0 + 700);
    COMPARE_ACTION(d, Action::DryRun);
    QCOMPARE(label(d.wouldBe), label(Action::Block));
    QCOMPARE(label(d.reason), label(Reason::Blocklisted));
    QVERIFY(!d.refused());

    const EngineCounters c = engine.counters(T0 + 1000);
    QCOMPARE(c.decisions[std::size_t(Action::Allow)], std::uint64_t(6));
    QCOMPARE(c.decisions[std::size_t(Action::Throttle)], std::uint64_t(0));
    QCOMPARE(c.decisions[std::size_t(Action::Block)], std::uint64_t(0));
    QCOMPARE(c.decisions[std::size_t(Action::DryRun)], std::uint64_t(2));
}

// ---- live configuration ----------------------------------------------------------------

void TestEngine::setConfigAppliesToTheNextDecision()
{
    Engine engine;
    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request(), T0 + i * 100), Action::Allow);

    EngineConfig cfg = defaultConfig();
    cfg.rules[0].levels[0].limit = 10;
    const auto error = engine.setConfig(cfg);
    QVERIFY2(!error, error ? error->c_str() : "");
    QCOMPARE(engine.config()->rules[0].levels[0].limit, 10u);

    // Same shape, new limit: the 6 already counted stay counted.
    for (std::uint32_t i = 0; i < 4; ++i) {
        const Decision d = decide(engine, Request(), T0 + 600 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.limit, 10u);
        QCOMPARE(d.remaining, 3 - i);
    }
    const Decision d = decide(engine, Request(), T0 + 1000);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QCOMPARE(d.limit, 10u);
}

void TestEngine::setConfigRejectsInvalidAndChangesNothing()
{
    Engine engine;
    EngineConfig bad = defaultConfig();
    bad.rules[0].levels[0].limit = 0;
    const auto error = engine.setConfig(bad);
    QVERIFY(error.has_value());
    QCOMPARE(qs(*error), QStringLiteral("rules[0].levels[0].limit must be > 0"));
    QCOMPARE(engine.config()->rules[0].levels[0].limit, 6u);

    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request(), T0 + i * 100), Action::Allow);
    const Decision d = decide(engine, Request(), T0 + 600);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(d.limit, 6u);
}

void TestEngine::levelNameFromConfig()
{
    EngineConfig cfg = defaultConfig();
    cfg.rules[0].levels[0].name = "burst";
    Engine engine(cfg);
    const Decision d = decide(engine, Request(), T0);
    QCOMPARE(ruleOf(d), QByteArray("burst"));
    const auto detail = engine.client(ip("203.0.113.7"), T0);
    QVERIFY(detail.has_value());
    QCOMPARE(levelNames(*detail), QStringList({QStringLiteral("burst"), QStringLiteral("ip-5m"), QStringLiteral("ip-30m")}));
}

void TestEngine::methodAndPathRule()
{
    EngineConfig cfg = defaultConfig();
    ThrottleRule login;
    login.name = "login";
    login.method = "POST";
    login.pathGlob = "/login";
    login.levels = {level(3, MINUTE, Algorithm::FixedWindow)};
    cfg.rules.push_back(login);
    Engine engine(cfg);

    const Request post = Request().to("POST", "/login");
    for (int i = 0; i < 3; ++i)
        COMPARE_ACTION(decide(engine, post, T0 + i * SECOND), Action::Allow);
    const Decision d = decide(engine, post, T0 + 3 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("login-1m"));
    QCOMPARE(d.limit, 3u);
    QCOMPARE(d.retryAfterMs, Millis(57 * SECOND));  // T0 is a whole minute: the fixed window ends at T0 + 60 s

    // Other methods and paths are not this rule's business.
    COMPARE_ACTION(decide(engine, Request().to("GET", "/login"), T0 + 3 * SECOND), Action::Allow);
    COMPARE_ACTION(decide(engine, Request(), T0 + 3100), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().to("POST", "/other"), T0 + 3200), Action::Allow);
}

void TestEngine::reservationIsReturnedOnRefusal()
{
    // A rule keyed on an API key, shared by many addresses. When the client's
    // own levels refuse, the key's reserved count is given back, so the key
    // level never admits more than its limit and never less.
    EngineConfig cfg = defaultConfig();
    cfg.rules.push_back(apiKeyRule("key", level(20, MINUTE)));
    Engine engine(cfg);
    const auto withKey = [](std::string client) { return Request().from(std::move(client)).header("X-Api-Key", "k-123"); };

    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, withKey("203.0.113.7"), T0 + i * 100), Action::Allow);
    Decision d = decide(engine, withKey("203.0.113.7"), T0 + 600);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));

    // 6 counted on the key: 14 more pass from other addresses, the 15th does not.
    for (int n = 1; n <= 14; ++n)
        COMPARE_ACTION(decide(engine, withKey("10.0.0." + std::to_string(n)), T0 + SECOND), Action::Allow);
    d = decide(engine, withKey("10.0.0.15"), T0 + SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("key-1m"));
    QCOMPARE(d.limit, 20u);
    QCOMPARE(d.retryAfterMs, Millis(MINUTE - SECOND));  // all 20 sit in the first 6 s bucket

    // Requests without the header are not counted together under an empty
    // key: the key rule does not apply to them at all.
    for (int n = 1; n <= 30; ++n)
        COMPARE_ACTION(decide(engine, Request().from("10.1.0." + std::to_string(n)), T0 + 2 * SECOND), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("10.1.0.99").header("X-Api-Key", ""), T0 + 2 * SECOND), Action::Allow);
}

void TestEngine::everyKeyedRuleGivesItsReservationBack()
{
    // As many rules counted by a header as Tuning::maxKeyedRules allows
    // (validate() refuses one more): when the address level refuses, every
    // one of them gives its reserved count back.
    EngineConfig cfg = defaultConfig();
    cfg.rules[0].levels = {level(1, MINUTE)};
    for (std::size_t i = 0; i < Tuning::maxKeyedRules; ++i)
        cfg.rules.push_back(apiKeyRule("key" + std::to_string(i), level(1, MINUTE)));
    Engine engine(cfg);
    COMPARE_ACTION(decide(engine, Request().from("10.0.0.1").header("X-Api-Key", "a"), T0), Action::Allow);
    // The address is spent: this one is refused, and key "b" must not be charged.
    Decision d = decide(engine, Request().from("10.0.0.1").header("X-Api-Key", "b"), T0 + 1);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-1m"));
    // Key "b" from a fresh address: every key rule still has its one request.
    COMPARE_ACTION(decide(engine, Request().from("10.0.0.2").header("X-Api-Key", "b"), T0 + 2), Action::Allow);
    d = decide(engine, Request().from("10.0.0.3").header("X-Api-Key", "b"), T0 + 3);
    COMPARE_ACTION(d, Action::Throttle);
    QVERIFY2(ruleOf(d).startsWith("key"), describe(d).constData());

    // One rule more is refused, naming the field, and nothing changes.
    ThrottleRule extra = cfg.rules.back();
    extra.name = "one-too-many";
    cfg.rules.push_back(extra);
    const auto error = engine.setConfig(cfg);
    QVERIFY(error.has_value());
    QCOMPARE(qs(*error), QStringLiteral("rules[17].key: at most 16 rules may count by a header or by address and user agent"));
    QCOMPARE(engine.config()->rules.size(), Tuning::maxKeyedRules + 1);
}

void TestEngine::headerValuesWithCollidingOldHashesKeepTheirCounters()
{
    // Two API keys an attacker built to collide under the old FNV-1a key
    // (constructed here, checked below): they shared one counter, so one
    // client could spend another's quota. Now each has its own.
    const auto [a, b] = fnvCollision(6);
    QVERIFY(a != b);
    QCOMPARE(oldFnvState(a, 6), oldFnvState(b, 6));

    EngineConfig cfg = defaultConfig();
    cfg.rules.push_back(apiKeyRule("key", level(3, MINUTE)));
    Engine engine(cfg);
    // A fresh address for each request keeps the per-IP levels out of it.
    for (int i = 0; i < 3; ++i)
        COMPARE_ACTION(decide(engine, Request().from("10.0.0." + std::to_string(i + 1)).header("X-Api-Key", a), T0 + i), Action::Allow);
    const Decision spent = decide(engine, Request().from("10.0.0.9").header("X-Api-Key", a), T0 + 10);
    COMPARE_ACTION(spent, Action::Throttle);
    QCOMPARE(ruleOf(spent), QByteArray("key-1m"));
    for (int i = 0; i < 3; ++i)
        COMPARE_ACTION(decide(engine, Request().from("10.0.1." + std::to_string(i + 1)).header("X-Api-Key", b), T0 + 20 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("10.0.1.9").header("X-Api-Key", b), T0 + 30), Action::Throttle);
}

// ---- cooldowns -------------------------------------------------------------------------------

void TestEngine::cooldownAfterSuccess()
{
    Engine engine;
    const auto post = [](std::string user) { return Request().to("POST", "/comments").header("X-User-Id", std::move(user)); };

    COMPARE_ACTION(decide(engine, post("u1"), T0), Action::Allow);
    reportSuccess(engine, post("u1"), T0);
    QCOMPARE(engine.counters(T0).activeCooldowns, std::uint64_t(1));

    Decision d = decide(engine, post("u1"), T0 + 10 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(label(d.reason), label(Reason::Cooldown));
    QCOMPARE(ruleOf(d), QByteArray("cooldown:comments"));
    QCOMPARE(d.retryAfterMs, Millis(20 * SECOND));
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(20));

    COMPARE_ACTION(decide(engine, post("u2"), T0 + 10 * SECOND), Action::Allow);  // another user
    COMPARE_ACTION(decide(engine, Request().to("GET", "/comments").header("X-User-Id", "u1"), T0 + 10 * SECOND),
                   Action::Allow);  // another action

    d = decide(engine, post("u1"), T0 + 29999);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(d.retryAfterMs, Millis(1));
    COMPARE_ACTION(decide(engine, post("u1"), T0 + 30 * SECOND), Action::Allow);
    QCOMPARE(engine.counters(T0 + 30 * SECOND).activeCooldowns, std::uint64_t(0));

    // Header names are case-insensitive.
    reportSuccess(engine, Request().to("POST", "/comments").header("x-user-id", "u5"), T0 + 40 * SECOND);
    d = decide(engine, post("u5"), T0 + 41 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(d.retryAfterMs, Millis(29 * SECOND));
}

void TestEngine::cooldownNeedsASuccess()
{
    // docs/BACKGROUND.md, cooldown: only a successful create starts the clock (the upstream failed: no cooldown).
    Engine engine;
    const Request post = Request().to("POST", "/comments").header("X-User-Id", "u3");
    for (int i = 0; i < 3; ++i)
        COMPARE_ACTION(decide(engine, post, T0 + i * SECOND), Action::Allow);
    // A success on another action starts nothing either.
    reportSuccess(engine, Request().to("POST", "/posts").header("X-User-Id", "u3"), T0 + 3 * SECOND);
    COMPARE_ACTION(decide(engine, post, T0 + 4 * SECOND), Action::Allow);
}

void TestEngine::cooldownFallsBackToClientAddress()
{
    Engine engine;
    const Request fromA = Request().from("198.51.100.20").to("POST", "/comments");
    COMPARE_ACTION(decide(engine, fromA, T0), Action::Allow);
    reportSuccess(engine, fromA, T0);
    const Decision d = decide(engine, fromA, T0 + 5 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(label(d.reason), label(Reason::Cooldown));
    QCOMPARE(d.retryAfterMs, Millis(25 * SECOND));
    COMPARE_ACTION(decide(engine, Request().from("198.51.100.21").to("POST", "/comments"), T0 + 5 * SECOND),
                   Action::Allow);
}

void TestEngine::cooldownUsersWithCollidingOldHashesAreApart()
{
    // Two user ids built to collide under the old FNV-1a key: one user's
    // comment used to cool the other one down.
    const auto [a, b] = fnvCollision(3);
    QCOMPARE(oldFnvState(a, 3), oldFnvState(b, 3));
    Engine engine;
    const auto post = [](std::string address, std::string user) {
        return Request().from(std::move(address)).to("POST", "/comments").header("X-User-Id", std::move(user));
    };
    reportSuccess(engine, post("10.0.0.1", a), T0);
    const Decision d = decide(engine, post("10.0.0.1", a), T0 + SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(label(d.reason), label(Reason::Cooldown));
    COMPARE_ACTION(decide(engine, post("10.0.0.2", b), T0 + SECOND), Action::Allow);
}

// ---- customers and tiers ------------------------------------------------------------------------

void TestEngine::customerIsDecidedByItsTier_data()
{
    QTest::addColumn<QByteArray>("how");
    QTest::newRow("query parameter") << QByteArray("query");
    QTest::newRow("query among others") << QByteArray("query among others");
    QTest::newRow("extracted by the listener") << QByteArray("facts");
    QTest::newRow("header") << QByteArray("header");
    QTest::newRow("header, lower case") << QByteArray("header lower case");
}

void TestEngine::customerIsDecidedByItsTier()
{
    QFETCH(QByteArray, how);
    Request r;
    if (how == "query")
        r.withQuery("customer_id=acme");
    else if (how == "query among others")
        r.withQuery("page=2&customer_id=acme&sort=asc");
    else if (how == "facts")
        r.customer("acme");
    else if (how == "header")
        r.header("X-Customer-Id", "acme");
    else
        r.header("x-customer-id", "acme");

    Engine engine(withCustomer("Pro"));
    // 10 req/s would lock an anonymous client out; the customer has its tier.
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, r, T0 + i * 100);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(i) + ": " + describe(d)).constData());
        QVERIFY(d.customer);
        if (i == 0) {
            QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
            QCOMPARE(d.limit, 100u);
            QCOMPARE(d.remaining, 99u);
        }
    }
    const Decision d = decide(engine, r, T0 + 10 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(label(d.reason), label(Reason::OverLimit));
    QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
    QCOMPARE(d.limit, 100u);
    QCOMPARE(d.remaining, 0u);
    QVERIFY(d.customer);
    // 6 s buckets: the first (60 requests) leaves the window at T0 + 60 s.
    QCOMPARE(d.retryAfterMs, Millis(50 * SECOND));
}

void TestEngine::unknownCustomerFallsBackToIpRules()
{
    Engine engine(withCustomer("Pro"));
    const Request r = Request().withQuery("customer_id=nobody");
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, r, T0 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QVERIFY(!d.customer);
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    }
    const Decision d = decide(engine, r, T0 + 600);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QVERIFY(!d.customer);
}

void TestEngine::customerSource_data()
{
    QTest::addColumn<int>("source");
    QTest::addColumn<QByteArray>("param");
    QTest::addColumn<bool>("viaQuery");
    QTest::addColumn<bool>("known");

    const int query = int(CustomerSource::QueryParameter), header = int(CustomerSource::Header);
    QTest::newRow("query source, query") << query << QByteArray("customer_id") << true << true;
    QTest::newRow("query source, header ignored") << query << QByteArray("customer_id") << false << false;
    QTest::newRow("header source, header") << header << QByteArray("customer_id") << false << true;
    QTest::newRow("header source, query ignored") << header << QByteArray("customer_id") << true << false;
    QTest::newRow("renamed parameter") << query << QByteArray("cid") << true << true;
}

void TestEngine::customerSource()
{
    QFETCH(int, source);
    QFETCH(QByteArray, param);
    QFETCH(bool, viaQuery);
    QFETCH(bool, known);

    EngineConfig cfg = withCustomer("Pro");
    cfg.settings.customerSource = CustomerSource(source);
    cfg.settings.customerParam = param.toStdString();
    Request r;
    if (viaQuery)
        r.withQuery(param.toStdString() + "=acme");
    else
        r.header("X-Customer-Id", "acme");
    Engine engine(cfg);

    const Decision d = decide(engine, r, T0);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.customer, known);
    QCOMPARE(ruleOf(d), known ? QByteArray("pro-1m") : QByteArray("ip-3s"));
}

void TestEngine::tierLimits_data()
{
    QTest::addColumn<QByteArray>("tier");
    QTest::addColumn<uint>("limit");
    QTest::addColumn<QByteArray>("rule");
    QTest::addColumn<qint64>("retryAfter");

    // Everything at T0, the extra request 1 s later. Sliding windows of 10
    // buckets: the first bucket leaves at T0 + period.
    QTest::newRow("Free 100/h") << QByteArray("Free") << 100u << QByteArray("free-1h") << qint64(HOUR - SECOND);
    QTest::newRow("Pro 100/min") << QByteArray("Pro") << 100u << QByteArray("pro-1m") << qint64(MINUTE - SECOND);
    QTest::newRow("Enterprise 200/min") << QByteArray("Enterprise") << 200u << QByteArray("enterprise-1m") << qint64(MINUTE - SECOND);
}

void TestEngine::tierLimits()
{
    QFETCH(QByteArray, tier);
    QFETCH(uint, limit);
    QFETCH(QByteArray, rule);
    QFETCH(qint64, retryAfter);

    Engine engine(withCustomer(tier.toStdString()));
    for (uint i = 0; i < limit; ++i) {
        const Decision d = decide(engine, acme(), T0);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(i) + ": " + describe(d)).constData());
        if (i == 0) {
            QCOMPARE(ruleOf(d), rule);
            QCOMPARE(d.remaining, std::uint32_t(limit - 1));
        }
    }
    const Decision d = decide(engine, acme(), T0 + SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), rule);
    QCOMPARE(d.limit, std::uint32_t(limit));
    QVERIFY(d.customer);
    QCOMPARE(d.retryAfterMs, Millis(retryAfter));
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(retryAfter / 1000));
}

void TestEngine::proHourLevel()
{
    // 100 at the start of each minute for 50 minutes: the minute level never
    // refuses (last minute's bucket has left), the hour level is then full.
    Engine engine(withCustomer("Pro"));
    for (int m = 0; m < 50; ++m) {
        for (int i = 0; i < 100; ++i) {
            const Decision d = decide(engine, acme(), T0 + m * MINUTE);
            QVERIFY2(d.action == Action::Allow,
                     (QByteArray::number(m) + "/" + QByteArray::number(i) + ": " + describe(d)).constData());
        }
    }
    const Decision d = decide(engine, acme(), T0 + 50 * MINUTE);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("pro-1h"));
    QCOMPARE(d.limit, 5000u);
    // 6-minute buckets: the first (minutes 0-5, 600 requests) leaves at T0 + 60 min.
    QCOMPARE(d.retryAfterMs, Millis(10 * MINUTE));
}

void TestEngine::overrideReplacesTheLevelOfTheSamePeriod()
{
    Engine engine(withCustomer("Pro", {level(1000, HOUR)}));
    COMPARE_ACTION(decide(engine, acme(), T0), Action::Allow);
    const auto detail = engine.client(ip("203.0.113.7"), T0);
    QVERIFY(detail.has_value());
    QCOMPARE(qs(detail->summary.customer), QStringLiteral("acme"));
    QCOMPARE(levelNames(*detail), QStringList({QStringLiteral("pro-1m"), QStringLiteral("acme-1h")}));
    QCOMPARE(levelLimits(*detail), QList<uint>({100u, 1000u}));

    // 100 per minute for 10 minutes fills 1000/h (Pro's own 5000/h would not be).
    for (int m = 0; m < 10; ++m)
        for (int i = (m == 0 ? 1 : 0); i < 100; ++i)
            QVERIFY(decide(engine, acme(), T0 + m * MINUTE).action == Action::Allow);
    const Decision d = decide(engine, acme(), T0 + 10 * MINUTE);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("acme-1h"));
    QCOMPARE(d.limit, 1000u);
    QCOMPARE(d.retryAfterMs, Millis(HOUR - 10 * MINUTE));
}

void TestEngine::overrideAddsANewPeriod()
{
    Engine engine(withCustomer("Pro", {level(2, DAY)}));
    Decision d = decide(engine, acme(), T0);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(ruleOf(d), QByteArray("acme-1d"));  // the least remaining
    QCOMPARE(d.remaining, 1u);
    COMPARE_ACTION(decide(engine, acme(), T0 + 100), Action::Allow);
    d = decide(engine, acme(), T0 + SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("acme-1d"));
    QCOMPARE(d.limit, 2u);

    const auto detail = engine.client(ip("203.0.113.7"), T0 + SECOND);
    QVERIFY(detail.has_value());
    QCOMPARE(levelNames(*detail),
             QStringList({QStringLiteral("pro-1m"), QStringLiteral("pro-1h"), QStringLiteral("acme-1d")}));
    QCOMPARE(levelLimits(*detail), QList<uint>({100u, 5000u, 2u}));
}

void TestEngine::seedOverrides()
{
    // docs/BACKGROUND.md, fixed windows, levels, lists and tiers: {60:100, 3600:1000, 86400:10000} on a Pro customer.
    Engine engine(withCustomer("Pro", {level(100, MINUTE), level(1000, HOUR), level(10000, DAY)}));
    const Decision d = decide(engine, acme(), T0);
    QCOMPARE(ruleOf(d), QByteArray("acme-1m"));
    QCOMPARE(d.remaining, 99u);
    const auto detail = engine.client(ip("203.0.113.7"), T0);
    QVERIFY(detail.has_value());
    QCOMPARE(levelNames(*detail),
             QStringList({QStringLiteral("acme-1m"), QStringLiteral("acme-1h"), QStringLiteral("acme-1d")}));
    QCOMPARE(levelLimits(*detail), QList<uint>({100u, 1000u, 10000u}));
}

void TestEngine::tierChangeAppliesToTheNextDecision()
{
    Engine engine(withCustomer("Pro"));
    for (std::uint32_t i = 0; i < 3; ++i) {
        const Decision d = decide(engine, acme(), T0 + i * 10);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.remaining, 99 - i);
    }
    EngineConfig cfg = withCustomer("Pro");
    tierNamed(cfg, "Pro").levels[0].limit = 5;
    const auto error = engine.setConfig(cfg);
    QVERIFY2(!error, error ? error->c_str() : "");

    Decision d = decide(engine, acme(), T0 + 100);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.limit, 5u);
    QCOMPARE(d.remaining, 1u);
    d = decide(engine, acme(), T0 + 200);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.remaining, 0u);
    d = decide(engine, acme(), T0 + 300);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
    QCOMPARE(d.limit, 5u);
}

// ---- Decision arithmetic -------------------------------------------------------------------------

void TestEngine::retryAfterSeconds_data()
{
    QTest::addColumn<qint64>("ms");
    QTest::addColumn<qint64>("retrySeconds");
    QTest::addColumn<qint64>("resetSeconds");

    QTest::newRow("0") << qint64(0) << qint64(1) << qint64(0);  // Retry-After is at least 1
    QTest::newRow("1 ms") << qint64(1) << qint64(1) << qint64(1);
    QTest::newRow("999 ms") << qint64(999) << qint64(1) << qint64(1);
    QTest::newRow("1000 ms") << qint64(1000) << qint64(1) << qint64(1);
    QTest::newRow("1001 ms") << qint64(1001) << qint64(2) << qint64(2);
    QTest::newRow("2400 ms") << qint64(2400) << qint64(3) << qint64(3);
    QTest::newRow("35 s") << qint64(35000) << qint64(35) << qint64(35);
}

void TestEngine::retryAfterSeconds()
{
    QFETCH(qint64, ms);
    QFETCH(qint64, retrySeconds);
    QFETCH(qint64, resetSeconds);

    Decision d;
    d.retryAfterMs = ms;
    d.resetMs = ms;
    QCOMPARE(qint64(d.retryAfterSeconds()), retrySeconds);
    QCOMPARE(qint64(d.resetSeconds()), resetSeconds);
}

// ---- HTTP Range reads ------------------------------------------------------------------------

void TestEngine::rangeDownloadIsOnePageHit()
{
    // A download in 20 parts in 1 s: the first part is counted, the rest
    // continue it. Before, the 7th part was refused by the 6-per-3-s level.
    Engine engine;
    for (int n = 0; n < 20; ++n) {
        const Decision d = decide(engine, part("/files/report.zip", n), T0 + n * 50);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(n == 0 ? Reason::Counted : Reason::RangeContinuation));
    }
    // The burst level saw one request: five pages more pass, the sixth does not.
    for (int i = 0; i < 5; ++i)
        COMPARE_ACTION(decide(engine, Request().at("/page/" + std::to_string(i)), T0 + SECOND + i), Action::Allow);
    const Decision d = decide(engine, Request().at("/page/9"), T0 + SECOND + 10);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    // The live view still shows every request.
    QCOMPARE(engine.client(ip("203.0.113.7"), T0 + 2 * SECOND)->summary.last60s, 26u);
}

void TestEngine::rangeContinuationsAreBoundedPerResource()
{
    // A Range header does not buy unlimited requests: one resource gets
    // Tuning::rangeContinuationsPerResource uncounted parts per window.
    QCOMPARE(Tuning::rangeContinuationsPerResource, 256u);
    QCOMPARE(Tuning::rangeWindowMs, Millis(60'000));
    Engine engine;
    const std::string pdf = "/docs/manual.pdf";
    QCOMPARE(label(decide(engine, part(pdf, 0), T0).reason), label(Reason::Counted));
    for (int n = 1; n <= 256; ++n)
        QCOMPARE(label(decide(engine, part(pdf, n), T0 + n * 100).reason), label(Reason::RangeContinuation));
    // Spent: from here each part counts, and a flood of them is refused.
    const Millis t = T0 + 30 * SECOND;
    for (int n = 0; n < 6; ++n) {
        const Decision d = decide(engine, part(pdf, 300 + n), t + n * 10);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Counted));
    }
    COMPARE_ACTION(decide(engine, part(pdf, 306), t + 100), Action::Throttle);
    // The window began with the first part (T0) and lasts 60 s: still spent
    // just before its end, a new window after it.
    QCOMPARE(label(decide(engine, part(pdf, 400), T0 + 59 * SECOND).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part(pdf, 401), T0 + 60 * SECOND).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part(pdf, 402), T0 + 60 * SECOND + 1).reason), label(Reason::RangeContinuation));
}

void TestEngine::rangeContinuationsAreBoundedPerClient()
{
    // Starting many resources does not multiply the bound: one client gets
    // Tuning::rangeContinuationsPerClient uncounted parts per window in all.
    QCOMPARE(Tuning::rangeContinuationsPerClient, 1024u);
    Engine engine;
    for (int r = 0; r < 5; ++r)
        QCOMPARE(label(decide(engine, part("/r" + std::to_string(r), 0), T0 + r * 100).reason), label(Reason::Counted));
    Millis t = T0 + SECOND;
    for (int r = 0; r < 4; ++r)
        for (int n = 1; n <= 256; ++n)
            QCOMPARE(label(decide(engine, part("/r" + std::to_string(r), n), t += 10).reason), label(Reason::RangeContinuation));
    QCOMPARE(label(decide(engine, part("/r4", 1), t += 10).reason), label(Reason::Counted));
    // Another client has its own.
    QCOMPARE(label(decide(engine, part("/r4", 0, "198.51.100.1"), t).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part("/r4", 1, "198.51.100.1"), t + 1).reason), label(Reason::RangeContinuation));
}

void TestEngine::aRefusedFirstPartOpensNoWindow()
{
    Engine engine;
    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request().at("/p" + std::to_string(i)), T0 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, part("/video.mp4", 0), T0 + 10), Action::Throttle);
    COMPARE_ACTION(decide(engine, part("/video.mp4", 1), T0 + 20), Action::Throttle);
    // Once the lockout is over the next part is counted (and opens the window).
    const Millis t = T0 + 7 * SECOND;
    QCOMPARE(label(decide(engine, part("/video.mp4", 2), t).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part("/video.mp4", 3), t + 1).reason), label(Reason::RangeContinuation));
}

void TestEngine::whatIsNotAContinuation()
{
    Engine engine;
    QCOMPARE(label(decide(engine, part("/a.zip", 0), T0).reason), label(Reason::Counted));
    // Another path, another client, no Range header, another method.
    QCOMPARE(label(decide(engine, part("/b.zip", 1), T0 + 1).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part("/a.zip", 1, "198.51.100.1"), T0 + 2).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, Request().at("/a.zip"), T0 + 3).reason), label(Reason::Counted));
    Request post = part("/a.zip", 1);
    post.method = "POST";
    QCOMPARE(label(decide(engine, post, T0 + 4).reason), label(Reason::Counted));
    // An empty Range header is no Range read; the method's case does not matter.
    QCOMPARE(label(decide(engine, Request().at("/a.zip").header("Range", ""), T0 + 5).reason), label(Reason::Counted));
    Request lower = part("/a.zip", 2, "198.51.100.2");
    lower.method = "get";
    QCOMPARE(label(decide(engine, lower, T0 + 6).reason), label(Reason::Counted));
    lower = part("/a.zip", 3, "198.51.100.2");
    lower.method = "get";
    QCOMPARE(label(decide(engine, lower, T0 + 7).reason), label(Reason::RangeContinuation));
}

void TestEngine::rangeStateOnlyForClientsThatReadRanges()
{
    // A client that sends no Range header costs one entry, as before; one
    // that reads a resource in parts costs one entry per resource and one
    // for its continuations, and both end with the window.
    Engine engine;
    for (int i = 0; i < 100; ++i)
        COMPARE_ACTION(decide(engine, Request().from("10.0.0.1").at("/p" + std::to_string(i)), T0 + i * SECOND), Action::Allow);
    QCOMPARE(engine.counters(T0 + 100 * SECOND).trackedKeys, std::uint64_t(1));
    const Millis t = T0 + 200 * SECOND;
    for (int n = 0; n < 20; ++n)
        COMPARE_ACTION(decide(engine, part("/big.iso", n, "10.0.0.2"), t + n * 10), Action::Allow);
    QCOMPARE(engine.counters(t + SECOND).trackedKeys, std::uint64_t(4));
    engine.purge(t + Tuning::rangeWindowMs + 10 * SECOND);
    QCOMPARE(engine.counters(t + Tuning::rangeWindowMs + 10 * SECOND).trackedKeys, std::uint64_t(2));
}

QTEST_APPLESS_MAIN(TestEngine)
#include "test_engine.moc"
