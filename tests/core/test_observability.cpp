// SPDX-License-Identifier: GPL-3.0-or-later
// What the console and the admin API read: per-second counts by action, top
// clients, the live 3 s x 20 buckets, one client's levels and buckets, and
// the counters. One scripted scenario, read from every side.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

// Small times keep the bucket arithmetic readable: NOW is in second 101 and
// in live bucket 33 (99,000 .. 101,999).
constexpr Millis NOW = 101'500;

const char* const A = "203.0.113.1";      // 3 in second 90, then 9 in second 100: 6 pass, 3 throttled
const char* const B = "203.0.113.2";      // 4 in second 100
const char* const C = "203.0.113.3";      // 5 in second 101
const char* const D = "198.51.100.9";     // blocklisted (198.51.100.0/24): 2 blocked in second 101
const char* const F = "2001:db8:1:2::5";  // 1 in second 101, counted as 2001:db8:1:2::/64

void runScenario(Engine& engine)
{
    engine.setList(ListKind::Blocklist, makeList({listEntry("198.51.100.0/24", "scraper")}));
    for (int i = 0; i < 3; ++i)
        decide(engine, Request().from(A), 90'000 + i * 100);
    for (int i = 0; i < 9; ++i)
        decide(engine, Request().from(A), 100'000 + i * 100);
    for (int i = 0; i < 4; ++i)
        decide(engine, Request().from(B), 100'000 + i * 100);
    for (int i = 0; i < 5; ++i)
        decide(engine, Request().from(C), 101'000 + i * 100);
    for (int i = 0; i < 2; ++i)
        decide(engine, Request().from(D), 101'000 + i * 100);
    decide(engine, Request().from(F), 101'200);
}

std::array<std::uint64_t, ActionCount> counts(std::uint64_t allow, std::uint64_t throttle, std::uint64_t block,
                                              std::uint64_t dryRun = 0)
{
    return {allow, throttle, block, dryRun};
}

QByteArray show(const std::array<std::uint64_t, ActionCount>& c)
{
    return "{" + QByteArray::number(c[0]) + "," + QByteArray::number(c[1]) + "," + QByteArray::number(c[2]) + ","
        + QByteArray::number(c[3]) + "}";
}

} // namespace

class TestObservability : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void perSecondCountsByAction();
    void perSecondBounds();
    void countersByAction();
    void topClientsByRate();
    void liveRingOfAClient();
    void liveBucketsWithTopKeys();
    void clientDetailLevels();
    void clientDetailOfAnOkClient();
    void clientStates();
    void customerClient();
    void names();
    void keyText();
};

void TestObservability::perSecondCountsByAction()
{
    Engine engine;
    runScenario(engine);
    const auto s = engine.perSecond(NOW, 60);
    QCOMPARE(s.size(), std::size_t(60));
    QCOMPARE(s.back().second, Millis(101'000));  // the second holding NOW, still filling
    for (std::size_t i = 0; i < s.size(); ++i) {
        QCOMPARE(s[i].second, Millis(101'000 - std::int64_t(59 - i) * 1000));
        const auto expected = i == 48 ? counts(3, 0, 0)     // second 90
                            : i == 58 ? counts(10, 3, 0)    // second 100
                            : i == 59 ? counts(6, 0, 2)     // second 101
                                      : counts(0, 0, 0);
        QVERIFY2(s[i].byAction == expected,
                 (QByteArray::number(s[i].second) + ": " + show(s[i].byAction) + " != " + show(expected)).constData());
    }
    QCOMPARE(s[58].total(), std::uint64_t(13));

    // Read later, the same seconds sit further left.
    const auto later = engine.perSecond(NOW + 5000, 10);
    QCOMPARE(later.size(), std::size_t(10));
    QCOMPARE(later.back().second, Millis(106'000));
    QCOMPARE(later[3].second, Millis(100'000));
    QVERIFY(later[3].byAction == counts(10, 3, 0));
    QVERIFY(later[4].byAction == counts(6, 0, 2));
    QVERIFY(later[9].byAction == counts(0, 0, 0));
}

void TestObservability::perSecondBounds()
{
    Engine engine;
    runScenario(engine);
    QCOMPARE(engine.perSecond(NOW, 1).size(), std::size_t(1));
    QVERIFY(engine.perSecond(NOW, 1)[0].byAction == counts(6, 0, 2));
    QCOMPARE(engine.perSecond(NOW, 0).size(), std::size_t(0));
    QCOMPARE(engine.perSecond(NOW + 3'600'000, 5000).size(), Tuning::statsSeconds);
    // An hour later everything has left the one-hour ring.
    for (const SecondCounts& sc : engine.perSecond(NOW + 3'600'000, 60))
        QCOMPARE(sc.total(), std::uint64_t(0));
}

void TestObservability::countersByAction()
{
    Engine engine;
    runScenario(engine);
    const EngineCounters c = engine.counters(NOW);
    QVERIFY2(c.decisions == counts(19, 3, 2), show(c.decisions).constData());
    QCOMPARE(c.trackedKeys, std::uint64_t(5));  // A, B, C, F and the blocked D (the live view counts it)
    QCOMPARE(c.blocklistEntries, std::size_t(1));
    QCOMPARE(c.safelistEntries, std::size_t(0));
    QCOMPARE(c.automaticEntries, std::size_t(0));
    QCOMPARE(c.autoBans, std::uint64_t(0));
    QCOMPARE(c.activeCooldowns, std::uint64_t(0));
    QCOMPARE(c.evictions, std::uint64_t(0));
    QCOMPARE(c.capacity, std::size_t(1'000'000));
}

void TestObservability::topClientsByRate()
{
    Engine engine;
    runScenario(engine);
    const auto top = engine.topClients(5, NOW);
    QCOMPARE(top.size(), std::size_t(5));
    QStringList order;
    for (const ClientSummary& s : top)
        order << qs(s.keyText());
    QCOMPARE(order, QStringList({QString::fromLatin1(A), QString::fromLatin1(C), QString::fromLatin1(B),
                                 QString::fromLatin1(D), QStringLiteral("2001:db8:1:2::/64")}));
    for (std::size_t i = 1; i < top.size(); ++i)
        QVERIFY2(top[i - 1].ratePerSecond > top[i].ratePerSecond, qPrintable(order.at(int(i))));
    QVERIFY(top.back().ratePerSecond > 0);

    const ClientSummary& a = top[0];
    QVERIFY(a.key == ip(A));
    QCOMPARE(a.keyPrefix, 128);
    QVERIFY(a.lastAddress == ip(A));
    QCOMPARE(a.last60s, 12u);
    QCOMPARE(a.lastBucket, 9u);
    QCOMPARE(label(a.state), label(ClientState::Throttled));
    QCOMPARE(qs(a.bindingRule), QStringLiteral("ip-3s"));
    QCOMPARE(a.bindingLimit, 6u);
    QCOMPARE(a.retryAfterMs, Millis(103'600 - NOW));  // locked out from 100,600 for 3 s
    QCOMPARE(a.lastSeen, Millis(100'800));
    QVERIFY(a.customer.empty());

    const ClientSummary& c = top[1];
    QCOMPARE(c.last60s, 5u);
    QCOMPARE(c.lastBucket, 5u);
    QCOMPARE(label(c.state), label(ClientState::Ok));
    QCOMPARE(c.retryAfterMs, Millis(0));

    const ClientSummary& b = top[2];
    QCOMPARE(b.last60s, 4u);
    QCOMPARE(b.lastBucket, 4u);
    QCOMPARE(qs(b.bindingRule), QStringLiteral("ip-3s"));
    QCOMPARE(b.bindingUsed, 4u);
    QCOMPARE(b.bindingLimit, 6u);
    QCOMPARE(b.lastSeen, Millis(100'300));

    const ClientSummary& d = top[3];
    QCOMPARE(d.last60s, 2u);
    QCOMPARE(label(d.state), label(ClientState::Blocked));

    const ClientSummary& f = top[4];
    QVERIFY(f.key == ip("2001:db8:1:2::"));
    QCOMPARE(f.keyPrefix, 64);
    QVERIFY(f.lastAddress == ip(F));
    QCOMPARE(f.last60s, 1u);

    const auto two = engine.topClients(2, NOW);
    QCOMPARE(two.size(), std::size_t(2));
    QVERIFY(two[0].key == ip(A));
    QVERIFY(two[1].key == ip(C));
    QVERIFY(engine.topClients(0, NOW).empty());
}

void TestObservability::liveRingOfAClient()
{
    Engine engine;
    runScenario(engine);
    auto detail = engine.client(ip(A), NOW);
    QVERIFY(detail.has_value());
    const auto& live = detail->summary.live;
    for (std::size_t i = 0; i < live.size(); ++i) {
        // Bucket 33 (NOW) is the last; bucket 30 (90,000) three before it.
        const std::uint32_t expected = i == 19 ? 9u : i == 16 ? 3u : 0u;
        QCOMPARE(live[i], expected);
    }
    // One bucket later the same requests have moved one to the left.
    detail = engine.client(ip(A), NOW + 3000);
    QVERIFY(detail.has_value());
    QCOMPARE(detail->summary.lastBucket, 0u);
    QCOMPARE(detail->summary.live[18], 9u);
    QCOMPARE(detail->summary.live[15], 3u);
    QCOMPARE(detail->summary.last60s, 12u);
    // Bucket 30 leaves the 60 s view at 150,000.
    detail = engine.client(ip(A), 150'000);
    QVERIFY(detail.has_value());
    QCOMPARE(detail->summary.last60s, 9u);
}

void TestObservability::liveBucketsWithTopKeys()
{
    Engine engine;
    runScenario(engine);
    const LiveBuckets lb = engine.liveBuckets(3, NOW);
    QCOMPARE(lb.bucketMs, Millis(3000));
    QCOMPARE(lb.buckets.size(), Tuning::liveBucketCount);
    QCOMPARE(lb.keys, std::size_t(5));
    for (std::size_t i = 0; i < lb.buckets.size(); ++i) {
        const LiveBucket& b = lb.buckets[i];
        QCOMPARE(b.startMs, Millis((14 + std::int64_t(i)) * 3000));  // buckets 14 .. 33, oldest first
        if (i != 16 && i != 19) {
            QCOMPARE(b.total, std::uint64_t(0));
            QVERIFY(b.top.empty());
        }
    }
    const LiveBucket& last = lb.buckets[19];
    QCOMPARE(last.startMs, Millis(99'000));
    QCOMPARE(last.total, std::uint64_t(21));  // 9 + 4 + 5 + 2 + 1, blocked requests included
    QCOMPARE(last.top.size(), std::size_t(3));
    QVERIFY(last.top[0].first.address() == ip(A));
    QCOMPARE(last.top[0].second, 9u);
    QVERIFY(last.top[1].first.address() == ip(C));
    QCOMPARE(last.top[1].second, 5u);
    QVERIFY(last.top[2].first.address() == ip(B));
    QCOMPARE(last.top[2].second, 4u);

    const LiveBucket& older = lb.buckets[16];
    QCOMPARE(older.startMs, Millis(90'000));
    QCOMPARE(older.total, std::uint64_t(3));
    QCOMPARE(older.top.size(), std::size_t(1));
    QVERIFY(older.top[0].first.address() == ip(A));
    QCOMPARE(older.top[0].second, 3u);

    const LiveBuckets all = engine.liveBuckets(10, NOW);
    QCOMPARE(all.buckets[19].top.size(), std::size_t(5));
    QVERIFY(all.buckets[19].top[3].first.address() == ip(D));
    QVERIFY(all.buckets[19].top[4].first.address() == ip("2001:db8:1:2::"));  // the counting key
    QCOMPARE(all.buckets[19].top[4].second, 1u);

    const LiveBuckets none = engine.liveBuckets(0, NOW);
    QCOMPARE(none.buckets[19].total, std::uint64_t(21));
    QVERIFY(none.buckets[19].top.empty());
}

void TestObservability::clientDetailLevels()
{
    Engine engine;
    runScenario(engine);
    const auto detail = engine.client(ip(A), NOW);
    QVERIFY(detail.has_value());
    QVERIFY(!detail->listKind.has_value());
    QVERIFY(!detail->listEntry.has_value());
    QCOMPARE(label(detail->summary.state), label(ClientState::Throttled));
    QCOMPARE(qs(detail->summary.bindingRule), QStringLiteral("ip-3s"));
    QCOMPARE(detail->summary.retryAfterMs, Millis(2100));
    QCOMPARE(detail->summary.last60s, 12u);

    QCOMPARE(detail->levels.size(), std::size_t(3));
    const LevelUsage& l3s = detail->levels[0];
    const LevelUsage& l5m = detail->levels[1];
    const LevelUsage& l30m = detail->levels[2];

    QCOMPARE(qs(l3s.name), QStringLiteral("ip-3s"));
    QCOMPARE(label(l3s.algorithm), label(Algorithm::Lockout));
    QCOMPARE(l3s.limit, 6u);
    QCOMPARE(l3s.periodMs, Millis(3000));
    QCOMPARE(l3s.remaining, 0u);
    QVERIFY(l3s.refusing);
    QCOMPARE(l3s.retryAfterMs, Millis(2100));
    QCOMPARE(l3s.buckets.size(), std::size_t(1));  // a lockout window is one bucket

    // 3 at 90 s and 6 at 100 s counted; the refused 3 were not.
    QCOMPARE(qs(l5m.name), QStringLiteral("ip-5m"));
    QCOMPARE(label(l5m.algorithm), label(Algorithm::SlidingWindow));
    QCOMPARE(l5m.limit, 300u);
    QCOMPARE(l5m.periodMs, Millis(300'000));
    QCOMPARE(l5m.used, 9u);
    QCOMPARE(l5m.remaining, 291u);
    QVERIFY(!l5m.refusing);
    QCOMPARE(l5m.retryAfterMs, Millis(0));
    QCOMPARE(l5m.resetMs, Millis(390'000 - NOW));  // bucket 3 (90..120 s) leaves at 390 s
    QCOMPARE(l5m.buckets.size(), std::size_t(10));
    QCOMPARE(l5m.buckets[9].startMs, Millis(90'000));
    QCOMPARE(l5m.buckets[9].count, 9u);
    std::uint32_t sum = 0;
    for (const BucketView& b : l5m.buckets)
        sum += b.count;
    QCOMPARE(sum, 9u);

    QCOMPARE(qs(l30m.name), QStringLiteral("ip-30m"));
    QCOMPARE(l30m.limit, 600u);
    QCOMPARE(l30m.periodMs, Millis(1'800'000));
    QCOMPARE(l30m.used, 9u);
    QCOMPARE(l30m.remaining, 591u);
    QCOMPARE(l30m.resetMs, Millis(1'800'000 - NOW));
    QCOMPARE(l30m.buckets.size(), std::size_t(10));
    QCOMPARE(l30m.buckets[9].startMs, Millis(0));
    QCOMPARE(l30m.buckets[9].count, 9u);
}

void TestObservability::clientDetailOfAnOkClient()
{
    Engine engine;
    runScenario(engine);
    const auto detail = engine.client(ip(B), NOW);
    QVERIFY(detail.has_value());
    QCOMPARE(label(detail->summary.state), label(ClientState::Ok));
    QCOMPARE(qs(detail->summary.bindingRule), QStringLiteral("ip-3s"));
    QCOMPARE(detail->summary.bindingUsed, 4u);
    QCOMPARE(detail->summary.bindingLimit, 6u);
    QCOMPARE(detail->summary.retryAfterMs, Millis(0));
    QCOMPARE(detail->levels.size(), std::size_t(3));
    const LevelUsage& l3s = detail->levels[0];
    QCOMPARE(l3s.used, 4u);
    QCOMPARE(l3s.remaining, 2u);
    QVERIFY(!l3s.refusing);
    QCOMPARE(l3s.retryAfterMs, Millis(0));
    QCOMPARE(l3s.resetMs, Millis(103'000 - NOW));  // the window of the first request (100 s) ends at 103 s
    QCOMPARE(l3s.buckets.size(), std::size_t(1));
    QCOMPARE(l3s.buckets[0].startMs, Millis(100'000));
    QCOMPARE(l3s.buckets[0].count, 4u);
}

void TestObservability::clientStates()
{
    Engine engine;
    runScenario(engine);

    auto detail = engine.client(ip(D), NOW);
    QVERIFY(detail.has_value());
    QCOMPARE(label(detail->summary.state), label(ClientState::Blocked));
    QVERIFY(detail->listKind.has_value());
    QCOMPARE(label(*detail->listKind), label(ListKind::Blocklist));
    QVERIFY(detail->listEntry.has_value());
    QCOMPARE(qs(detail->listEntry->reason), QStringLiteral("scraper"));
    QCOMPARE(qs(detail->listEntry->range.toString()), QStringLiteral("198.51.100.0/24"));

    // On the list but never seen.
    detail = engine.client(ip("198.51.100.77"), NOW);
    QVERIFY(detail.has_value());
    QCOMPARE(label(detail->summary.state), label(ClientState::Blocked));
    QCOMPARE(detail->summary.last60s, 0u);
    QCOMPARE(label(*detail->listKind), label(ListKind::Blocklist));

    // Neither seen nor listed.
    QVERIFY(!engine.client(ip("192.0.2.200"), NOW).has_value());

    // Another address in F's /64 is the same client.
    detail = engine.client(ip("2001:db8:1:2::abcd"), NOW);
    QVERIFY(detail.has_value());
    QCOMPARE(qs(detail->summary.keyText()), QStringLiteral("2001:db8:1:2::/64"));
    QCOMPARE(detail->summary.last60s, 1u);

    engine.setList(ListKind::Safelist, makeList({listEntry("192.0.2.1/32", "monitoring")}));
    decide(engine, Request().from("192.0.2.1"), NOW);
    detail = engine.client(ip("192.0.2.1"), NOW);
    QVERIFY(detail.has_value());
    QCOMPARE(label(detail->summary.state), label(ClientState::Safelisted));
    QCOMPARE(label(*detail->listKind), label(ListKind::Safelist));
}

void TestObservability::customerClient()
{
    EngineConfig cfg = defaultConfig();
    cfg.customers = {Customer{"acme", "Acme Inc.", "Pro", {}, {testKey("acme").key}}};
    Engine engine(cfg);
    decide(engine, Request().from("192.0.2.10").header("X-Api-Key", testKey("acme").secret), NOW);

    const auto detail = engine.client(ip("192.0.2.10"), NOW);
    QVERIFY(detail.has_value());
    QCOMPARE(qs(detail->summary.customer), QStringLiteral("acme"));
    QCOMPARE(qs(detail->summary.bindingRule), QStringLiteral("pro-1m"));
    QCOMPARE(detail->levels.size(), std::size_t(2));
    QCOMPARE(qs(detail->levels[0].name), QStringLiteral("pro-1m"));
    QCOMPARE(detail->levels[0].used, 1u);
    QCOMPARE(detail->levels[0].remaining, 99u);
    QCOMPARE(qs(detail->levels[1].name), QStringLiteral("pro-1h"));
    QCOMPARE(detail->levels[1].used, 1u);
    QCOMPARE(detail->levels[1].remaining, 4999u);
}

void TestObservability::names()
{
    QCOMPARE(QByteArray(toString(Action::Allow)), QByteArray("allow"));
    QCOMPARE(QByteArray(toString(Action::Throttle)), QByteArray("throttle"));
    QCOMPARE(QByteArray(toString(Action::Block)), QByteArray("block"));
    QCOMPARE(QByteArray(toString(Action::DryRun)), QByteArray("dry_run"));
    QCOMPARE(QByteArray(toString(ClientState::Ok)), QByteArray("ok"));
    QCOMPARE(QByteArray(toString(ClientState::Throttled)), QByteArray("throttled"));
    QCOMPARE(QByteArray(toString(ClientState::Blocked)), QByteArray("blocked"));
    QCOMPARE(QByteArray(toString(ClientState::Safelisted)), QByteArray("safelisted"));

    // Reasons: each has its own non-empty word.
    QSet<QByteArray> seen;
    for (int r = 0; r <= int(Reason::HasCookies); ++r) {
        const QByteArray word(toString(Reason(r)));
        QVERIFY2(!word.isEmpty(), label(Reason(r)).constData());
        QVERIFY2(!seen.contains(word), word.constData());
        seen.insert(word);
    }
}

void TestObservability::keyText()
{
    ClientSummary s;
    s.key = ip("203.0.113.7");
    s.keyPrefix = 128;
    QCOMPARE(qs(s.keyText()), QStringLiteral("203.0.113.7"));
    s.key = ip("2001:db8:1:2::");
    s.keyPrefix = 64;
    QCOMPARE(qs(s.keyText()), QStringLiteral("2001:db8:1:2::/64"));
}

QTEST_APPLESS_MAIN(TestObservability)
#include "test_observability.moc"
