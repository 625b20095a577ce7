// SPDX-License-Identifier: MIT
// The counting algorithms of Window.h over a key's own cells: fixed window,
// sliding window over buckets, lockout, and the 3 s x 20 live ring. Time is
// injected; most cases run twice, from t = 0 and from a 2026 wall-clock time,
// to show the arithmetic does not depend on the epoch.
#include <QtTest>

#include "TestSupport.h"
#include "core/Window.h"

#include <vector>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

constexpr Millis EPOCH_2026 = 1'790'000'040'000;  // a multiple of 60 s (so of 3 s and 300 ms too)

constexpr auto SLIDING = Algorithm::SlidingWindow;
constexpr auto FIXED = Algorithm::FixedWindow;
constexpr auto LOCKOUT = Algorithm::Lockout;

Level makeLevel(Algorithm algorithm, std::uint32_t limit, Millis periodMs, Millis bucketMs = 0, Millis lockoutMs = 0,
                bool countRefused = false)
{
    Level l = level(limit, periodMs, algorithm);
    l.bucketMs = bucketMs;
    l.lockoutMs = lockoutMs;
    l.countRefused = countRefused;
    return l;
}

// One key's cells for one level, used the way the engine uses them.
struct Key {
    explicit Key(const Level& l)
        : spec(LevelSpec::compile(l, "test"))
        , cells(spec.cells, 0u)
    {
    }
    Verdict eval(Millis now) { return Floodgate::Core::evaluate(spec, cells.data(), now); }
    // A request: counted when the level lets it through, refused otherwise.
    Verdict hit(Millis now)
    {
        const Verdict v = eval(now);
        if (v.allowed)
            Floodgate::Core::count(spec, cells.data(), now);
        else
            Floodgate::Core::refuse(spec, cells.data(), now);
        return v;
    }
    Millis resetAfterCount(Millis now) const { return Floodgate::Core::resetAfterCount(spec, cells.data(), now); }
    void uncount(Millis now) { Floodgate::Core::uncount(spec, cells.data(), now); }
    std::vector<BucketView> buckets(Millis now) const { return bucketsOf(spec, cells.data(), now); }

    LevelSpec spec;
    std::vector<std::uint32_t> cells;
};

void addBases()
{
    QTest::addColumn<qint64>("base");
    QTest::newRow("from 0") << qint64(0);
    QTest::newRow("2026") << qint64(EPOCH_2026);
}

} // namespace

class TestWindows : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void compile_data();
    void compile();
    void shapeSignature();

    void fixedWindow_data() { addBases(); }
    void fixedWindow();
    void fixedWindowRetryAfter_data() { addBases(); }
    void fixedWindowRetryAfter();
    void fixedWindowResetsAtTheClockBoundary_data() { addBases(); }
    void fixedWindowResetsAtTheClockBoundary();
    void fixedWindowReset_data() { addBases(); }
    void fixedWindowReset();
    void fixedWindowCountRefused_data();
    void fixedWindowCountRefused();

    void slidingWindow_data() { addBases(); }
    void slidingWindow();
    void slidingSpread_data() { addBases(); }
    void slidingSpread();
    void slidingRetryNeedsSeveralBuckets_data();
    void slidingRetryNeedsSeveralBuckets();
    void slidingReset_data() { addBases(); }
    void slidingReset();
    void slidingFreshKeyAtAnyEpoch_data();
    void slidingFreshKeyAtAnyEpoch();
    void slidingLateTimestampCountsInTheNewestBucket();

    void lockout_data() { addBases(); }
    void lockout();
    void lockoutCountRefusedRestartsTheLock_data() { addBases(); }
    void lockoutCountRefusedRestartsTheLock();
    void lockoutWindowStartsAtTheFirstRequest_data() { addBases(); }
    void lockoutWindowStartsAtTheFirstRequest();
    void lockoutLongerThanThePeriod();
    void lockoutReset();

    void uncountTakesBackOne_data();
    void uncountTakesBackOne();
    void peekDoesNotChangeTheCells();

    void bucketsOfSliding_data() { addBases(); }
    void bucketsOfSliding();
    void bucketsOfFixedAndLockout();

    void liveRing_data() { addBases(); }
    void liveRing();
    void liveRingForgetsAfterSixtySeconds();
    void liveRingSaturatesPerBucket();
};

// ---- compile ---------------------------------------------------------------

void TestWindows::compile_data()
{
    QTest::addColumn<int>("algorithm");
    QTest::addColumn<uint>("limit");
    QTest::addColumn<qint64>("period");
    QTest::addColumn<qint64>("bucket");
    QTest::addColumn<qint64>("lockout");
    QTest::addColumn<qint64>("bucketMs");
    QTest::addColumn<uint>("buckets");
    QTest::addColumn<int>("cells");
    QTest::addColumn<qint64>("lockoutMs");
    QTest::addColumn<qint64>("keepMs");

    // Sliding keep = buckets * width + width: the last bucket has left the window.
    QTest::newRow("sliding 6/3s") << int(SLIDING) << 6u << qint64(3000) << qint64(0) << qint64(0)
                                  << qint64(300) << 10u << 11 << qint64(0) << qint64(3300);
    QTest::newRow("sliding 300/5m") << int(SLIDING) << 300u << qint64(300000) << qint64(0) << qint64(0)
                                    << qint64(30000) << 10u << 11 << qint64(0) << qint64(330000);
    QTest::newRow("sliding 600/30m") << int(SLIDING) << 600u << qint64(1800000) << qint64(0) << qint64(0)
                                     << qint64(180000) << 10u << 11 << qint64(0) << qint64(1980000);
    QTest::newRow("sliding 1s by 300ms (rounded up)") << int(SLIDING) << 5u << qint64(1000) << qint64(300) << qint64(0)
                                                      << qint64(300) << 4u << 5 << qint64(0) << qint64(1500);
    QTest::newRow("sliding 1h by 1m") << int(SLIDING) << 100u << qint64(3600000) << qint64(60000) << qint64(0)
                                      << qint64(60000) << 60u << 61 << qint64(0) << qint64(3660000);
    QTest::newRow("sliding 7ms (1 ms buckets)") << int(SLIDING) << 1u << qint64(7) << qint64(0) << qint64(0)
                                                << qint64(1) << 7u << 8 << qint64(0) << qint64(8);
    QTest::newRow("fixed 3s") << int(FIXED) << 6u << qint64(3000) << qint64(0) << qint64(0)
                              << qint64(0) << 0u << 2 << qint64(0) << qint64(3000);
    QTest::newRow("lockout 3s (lock = period)") << int(LOCKOUT) << 6u << qint64(3000) << qint64(0) << qint64(0)
                                                << qint64(0) << 0u << 5 << qint64(3000) << qint64(3000);
    QTest::newRow("lockout 3s, 10s lock") << int(LOCKOUT) << 6u << qint64(3000) << qint64(0) << qint64(10000)
                                          << qint64(0) << 0u << 5 << qint64(10000) << qint64(10000);
}

void TestWindows::compile()
{
    QFETCH(int, algorithm);
    QFETCH(uint, limit);
    QFETCH(qint64, period);
    QFETCH(qint64, bucket);
    QFETCH(qint64, lockout);
    QFETCH(qint64, bucketMs);
    QFETCH(uint, buckets);
    QFETCH(int, cells);
    QFETCH(qint64, lockoutMs);
    QFETCH(qint64, keepMs);

    const Level l = makeLevel(Algorithm(algorithm), limit, period, bucket, lockout);
    const LevelSpec s = LevelSpec::compile(l, "ip-3s");
    QCOMPARE(qs(s.name.view()), QStringLiteral("ip-3s"));
    QCOMPARE(label(s.algorithm), label(Algorithm(algorithm)));
    QCOMPARE(s.limit, std::uint32_t(limit));
    QCOMPARE(s.periodMs, Millis(period));
    QCOMPARE(s.bucketMs, Millis(bucketMs));
    QCOMPARE(s.buckets, std::uint32_t(buckets));
    QCOMPARE(int(s.cells), cells);
    QCOMPARE(int(LevelSpec::cellsFor(l)), cells);
    QCOMPARE(s.lockoutMs, Millis(lockoutMs));
    QCOMPARE(s.keepMs(), Millis(keepMs));
    QCOMPARE(int(s.offset), 0);
}

void TestWindows::shapeSignature()
{
    const auto sig = [](const Level& l) { return LevelSpec::compile(l, "x").shapeSignature(); };
    const std::uint64_t base = sig(makeLevel(SLIDING, 6, 3000));

    // The limit is not part of the shape: counts survive a limit change.
    QCOMPARE(sig(makeLevel(SLIDING, 60, 3000)), base);
    QCOMPARE(LevelSpec::compile(makeLevel(SLIDING, 6, 3000), "another-name").shapeSignature(), base);
    // Algorithm, period and bucket width are.
    QVERIFY(sig(makeLevel(FIXED, 6, 3000)) != base);
    QVERIFY(sig(makeLevel(LOCKOUT, 6, 3000)) != base);
    QVERIFY(sig(makeLevel(SLIDING, 6, 6000)) != base);
    QVERIFY(sig(makeLevel(SLIDING, 6, 3000, 1000)) != base);
}

// ---- fixed window ------------------------------------------------------------

void TestWindows::fixedWindow()
{
    QFETCH(qint64, base);
    Key k(makeLevel(FIXED, 6, 3000));

    for (std::uint32_t i = 0; i < 6; ++i) {
        const Verdict v = k.hit(base);
        QVERIFY2(v.allowed, qPrintable(QString::number(i)));
        QCOMPARE(v.used, i);
        QCOMPARE(v.windowStartMs, Millis(base));
    }
    Verdict v = k.eval(base + 1000);
    QVERIFY(!v.allowed);
    QCOMPARE(v.used, 6u);
    QCOMPARE(v.retryAfterMs, Millis(2000));
    QCOMPARE(v.resetMs, Millis(2000));

    v = k.hit(base + 2999);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1));

    // A new window: floor(now / period) moved on.
    v = k.hit(base + 3000);
    QVERIFY(v.allowed);
    QCOMPARE(v.used, 0u);
    QCOMPARE(v.windowStartMs, Millis(base + 3000));
}

void TestWindows::fixedWindowRetryAfter()
{
    QFETCH(qint64, base);
    Key k(makeLevel(FIXED, 1, 60000));

    QVERIFY(k.hit(base).allowed);
    Verdict v = k.hit(base + 25000);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(35000));
    v = k.hit(base + 59999);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1));
    QVERIFY(k.hit(base + 60000).allowed);
}

void TestWindows::fixedWindowResetsAtTheClockBoundary()
{
    // rack-attack's weakness, kept on purpose: the window is keyed by the
    // clock, not by the first request, so a client may send a full quota just
    // before a boundary and another just after it.
    QFETCH(qint64, base);
    Key k(makeLevel(FIXED, 6, 3000));

    for (int i = 0; i < 6; ++i)
        QVERIFY(k.hit(base + 2999).allowed);
    const Verdict v = k.hit(base + 2999);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1));
    for (int i = 0; i < 6; ++i)
        QVERIFY(k.hit(base + 3000).allowed);
    QVERIFY(!k.hit(base + 3000).allowed);
}

void TestWindows::fixedWindowReset()
{
    QFETCH(qint64, base);
    Key k(makeLevel(FIXED, 6, 3000));

    QCOMPARE(k.eval(base + 500).resetMs, Millis(0));  // nothing counted: nothing to reset
    QVERIFY(k.hit(base + 500).allowed);
    QCOMPARE(k.resetAfterCount(base + 500), Millis(2500));
    QCOMPARE(k.eval(base + 1000).resetMs, Millis(2000));
}

void TestWindows::fixedWindowCountRefused_data()
{
    QTest::addColumn<bool>("countRefused");
    QTest::addColumn<uint>("usedAfter");
    QTest::newRow("refusals not counted (default)") << false << 2u;
    QTest::newRow("refusals counted (plain N per D)") << true << 4u;
}

void TestWindows::fixedWindowCountRefused()
{
    QFETCH(bool, countRefused);
    QFETCH(uint, usedAfter);
    Key k(makeLevel(FIXED, 2, 3000, 0, 0, countRefused));

    QVERIFY(k.hit(0).allowed);
    QVERIFY(k.hit(10).allowed);
    QVERIFY(!k.hit(20).allowed);
    QVERIFY(!k.hit(30).allowed);
    QCOMPARE(k.eval(40).used, std::uint32_t(usedAfter));
    QVERIFY(k.hit(3000).allowed);  // the next window starts empty either way
}

// ---- sliding window ----------------------------------------------------------

void TestWindows::slidingWindow()
{
    QFETCH(qint64, base);
    Key k(makeLevel(SLIDING, 6, 3000));
    QCOMPARE(k.spec.bucketMs, Millis(300));
    QCOMPARE(k.spec.buckets, 10u);

    for (std::uint32_t i = 0; i < 6; ++i) {
        const Verdict v = k.hit(base);
        QVERIFY(v.allowed);
        QCOMPARE(v.used, i);
    }
    Verdict v = k.hit(base + 2999);
    QVERIFY(!v.allowed);
    QCOMPARE(v.used, 6u);
    QCOMPARE(v.retryAfterMs, Millis(1));  // bucket 0 leaves the window at 3000
    QCOMPARE(v.windowStartMs, Millis(base));

    v = k.hit(base + 3000);
    QVERIFY(v.allowed);
    QCOMPARE(v.used, 0u);
    QCOMPARE(v.windowStartMs, Millis(base + 300));
}

void TestWindows::slidingSpread()
{
    QFETCH(qint64, base);
    Key k(makeLevel(SLIDING, 6, 3000));

    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(base).allowed);         // bucket 0
    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(base + 1500).allowed);  // bucket 5

    Verdict v = k.eval(base + 2000);
    QVERIFY(!v.allowed);
    QCOMPARE(v.used, 6u);
    QCOMPARE(v.retryAfterMs, Millis(1000));  // bucket 0 leaves at 3000 and frees 3 >= 1 needed
    QCOMPARE(v.resetMs, Millis(2500));       // bucket 5, the newest with requests, leaves at 4500

    QVERIFY(!k.hit(base + 2999).allowed);
    v = k.hit(base + 3000);
    QVERIFY(v.allowed);
    QCOMPARE(v.used, 3u);  // bucket 5 is still in the window
    QCOMPARE(k.eval(base + 4499).used, 4u);
    QCOMPARE(k.eval(base + 4500).used, 1u);  // bucket 5 left; the one at 3000 remains
}

void TestWindows::slidingRetryNeedsSeveralBuckets_data()
{
    QTest::addColumn<bool>("countRefused");
    QTest::addColumn<uint>("used");
    QTest::addColumn<qint64>("retryAfter");

    // 1 request in bucket 0, 3 in bucket 1, a refused one in bucket 2.
    // Counted refusal: 5 used, 2 must leave: bucket 0 frees 1, bucket 1 (leaving at 3300) the rest.
    QTest::newRow("refusal counted") << true << 5u << qint64(3300 - 900);
    // Not counted: 4 used, 1 must leave: bucket 0 at 3000.
    QTest::newRow("refusal not counted") << false << 4u << qint64(3000 - 900);
}

void TestWindows::slidingRetryNeedsSeveralBuckets()
{
    QFETCH(bool, countRefused);
    QFETCH(uint, used);
    QFETCH(qint64, retryAfter);
    Key k(makeLevel(SLIDING, 4, 3000, 0, 0, countRefused));

    QVERIFY(k.hit(0).allowed);
    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(300).allowed);
    QVERIFY(!k.hit(600).allowed);

    const Verdict v = k.eval(900);
    QVERIFY(!v.allowed);
    QCOMPARE(v.used, std::uint32_t(used));
    QCOMPARE(v.retryAfterMs, Millis(retryAfter));
}

void TestWindows::slidingReset()
{
    QFETCH(qint64, base);
    Key k(makeLevel(SLIDING, 6, 3000));

    QCOMPARE(k.eval(base).resetMs, Millis(0));
    QVERIFY(k.hit(base).allowed);
    QVERIFY(k.hit(base).allowed);
    QVERIFY(k.hit(base + 900).allowed);  // bucket 3
    QCOMPARE(k.resetAfterCount(base + 900), Millis(3000));
    // Reset: when the newest non-empty bucket (3) leaves, at 3900.
    QCOMPARE(k.eval(base + 1000).resetMs, Millis(2900));
}

void TestWindows::slidingFreshKeyAtAnyEpoch_data()
{
    QTest::addColumn<qint64>("period");
    QTest::addColumn<qint64>("now");

    QTest::newRow("3s near 0") << qint64(3000) << qint64(1234);
    QTest::newRow("3s in 2026") << qint64(3000) << qint64(EPOCH_2026 + 123);
    QTest::newRow("1m in 2026") << qint64(60000) << qint64(EPOCH_2026 + 123);
    // floor(now / width) truncated to 32 bits has its top bit set in these:
    // 900,000,000,123 / 300 = 3.0e9 and 1,790,000,040,123 / 500 = 3.58e9
    // (2^31 = 2.147e9). A fresh key (all cells zero) must still count from now.
    QTest::newRow("3s in 1998 (bucket index >= 2^31)") << qint64(3000) << qint64(900'000'000'123);
    QTest::newRow("5s in 2026 (bucket index >= 2^31)") << qint64(5000) << qint64(EPOCH_2026 + 123);
}

void TestWindows::slidingFreshKeyAtAnyEpoch()
{
    QFETCH(qint64, period);
    QFETCH(qint64, now);
    Key k(makeLevel(SLIDING, 2, period));
    const Millis w = k.spec.bucketMs;
    const std::int64_t n = k.spec.buckets;
    const std::int64_t cur = floorDiv(now, w);
    const Millis leaves = (cur + n) * w;  // when the bucket holding `now` leaves the window

    Verdict v = k.hit(now);
    QVERIFY(v.allowed);
    QCOMPARE(v.used, 0u);
    QCOMPARE(v.windowStartMs, Millis((cur - n + 1) * w));
    QVERIFY(k.hit(now).allowed);

    v = k.hit(now);
    QVERIFY(!v.allowed);
    QCOMPARE(v.used, 2u);
    QCOMPARE(v.retryAfterMs, Millis(leaves - now));
    QCOMPARE(v.resetMs, Millis(leaves - now));

    QVERIFY(!k.hit(leaves - 1).allowed);
    v = k.hit(leaves);
    QVERIFY(v.allowed);
    QCOMPARE(v.used, 0u);
}

void TestWindows::slidingLateTimestampCountsInTheNewestBucket()
{
    // Two listener threads may take their timestamps in one order and the key's
    // lock in the other: the older one must not wipe the ring.
    Key k(makeLevel(SLIDING, 6, 3000));
    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(2700).allowed);  // bucket 9
    const Verdict late = k.hit(0);     // bucket 0, arriving after bucket 9 was written
    QVERIFY(late.allowed);
    QCOMPARE(late.used, 3u);
    QCOMPARE(k.eval(2700).used, 4u);

    const auto b = k.buckets(2700);
    QCOMPARE(b.size(), std::size_t(10));
    QCOMPARE(b.back().startMs, Millis(2700));
    QCOMPARE(b.back().count, 4u);
}

// ---- lockout -----------------------------------------------------------------

void TestWindows::lockout()
{
    QFETCH(qint64, base);
    Key k(makeLevel(LOCKOUT, 6, 3000, 0, 3000));

    for (std::uint32_t i = 0; i < 6; ++i) {
        const Verdict v = k.hit(base);
        QVERIFY(v.allowed);
        QCOMPARE(v.used, i);
    }
    Verdict v = k.eval(base + 100);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(3000));  // refusing now starts a 3 s lockout
    Floodgate::Core::refuse(k.spec, k.cells.data(), base + 100);

    v = k.hit(base + 2000);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1100));
    v = k.hit(base + 3099);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1));

    // The lock ended: let in again, with a fresh window.
    v = k.hit(base + 3100);
    QVERIFY(v.allowed);
    QCOMPARE(v.used, 0u);
    for (int i = 0; i < 5; ++i)
        QVERIFY(k.hit(base + 3100).allowed);
    QVERIFY(!k.hit(base + 3100).allowed);
}

void TestWindows::lockoutCountRefusedRestartsTheLock()
{
    QFETCH(qint64, base);
    Key k(makeLevel(LOCKOUT, 6, 3000, 0, 3000, true));

    for (int i = 0; i < 6; ++i)
        QVERIFY(k.hit(base).allowed);
    QVERIFY(!k.hit(base + 100).allowed);  // locked until 3100
    Verdict v = k.hit(base + 2000);       // refused while locked: locked until 5000
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1100));
    v = k.eval(base + 3100);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(1900));
    QVERIFY(k.eval(base + 5000).allowed);
}

void TestWindows::lockoutWindowStartsAtTheFirstRequest()
{
    QFETCH(qint64, base);
    {
        Key k(makeLevel(LOCKOUT, 6, 3000));
        QVERIFY(k.hit(base).allowed);
        for (int i = 0; i < 5; ++i)
            QVERIFY(k.hit(base + 1000).allowed);
        const Verdict v = k.hit(base + 2999);
        QVERIFY(!v.allowed);
        QCOMPARE(v.retryAfterMs, Millis(3000));
    }
    {
        Key k(makeLevel(LOCKOUT, 6, 3000));
        QVERIFY(k.hit(base).allowed);
        for (int i = 0; i < 5; ++i)
            QVERIFY(k.hit(base + 1000).allowed);
        // now - start >= period: the window of the first request ran out.
        const Verdict v = k.hit(base + 3000);
        QVERIFY(v.allowed);
        QCOMPARE(v.used, 0u);
        QCOMPARE(v.windowStartMs, Millis(base + 3000));
    }
    {
        // Unlike a fixed window, a clock boundary changes nothing: 6 at 2999
        // open a window that lasts until 5999.
        Key k(makeLevel(LOCKOUT, 6, 3000));
        for (int i = 0; i < 6; ++i)
            QVERIFY(k.hit(base + 2999).allowed);
        const Verdict v = k.hit(base + 3000);
        QVERIFY(!v.allowed);
        QCOMPARE(v.retryAfterMs, Millis(3000));
    }
}

void TestWindows::lockoutLongerThanThePeriod()
{
    Key k(makeLevel(LOCKOUT, 6, 3000, 0, 10000));
    for (int i = 0; i < 6; ++i)
        QVERIFY(k.hit(0).allowed);
    Verdict v = k.hit(100);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(10000));
    v = k.hit(5000);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(5100));
    QVERIFY(!k.hit(10099).allowed);
    QVERIFY(k.hit(10100).allowed);
}

void TestWindows::lockoutReset()
{
    Key k(makeLevel(LOCKOUT, 6, 3000));
    QCOMPARE(k.eval(0).resetMs, Millis(0));
    QVERIFY(k.hit(500).allowed);
    QCOMPARE(k.resetAfterCount(500), Millis(3000));
    QVERIFY(k.hit(600).allowed);
    QCOMPARE(k.eval(1000).resetMs, Millis(2500));  // the window of the first request ends at 3500
    QCOMPARE(k.eval(1000).used, 2u);
}

// ---- uncount, peek, bucketsOf --------------------------------------------------

void TestWindows::uncountTakesBackOne_data()
{
    QTest::addColumn<int>("algorithm");
    QTest::newRow("sliding") << int(SLIDING);
    QTest::newRow("fixed") << int(FIXED);
    QTest::newRow("lockout") << int(LOCKOUT);
}

void TestWindows::uncountTakesBackOne()
{
    QFETCH(int, algorithm);
    Key k(makeLevel(Algorithm(algorithm), 6, 3000));

    QVERIFY(k.hit(100).allowed);
    QVERIFY(k.hit(100).allowed);
    QCOMPARE(k.eval(100).used, 2u);
    k.uncount(100);
    QCOMPARE(k.eval(100).used, 1u);
    k.uncount(100);
    QCOMPARE(k.eval(100).used, 0u);
    k.uncount(100);  // never below zero
    QCOMPARE(k.eval(100).used, 0u);
    for (int i = 0; i < 6; ++i)
        QVERIFY(k.hit(200).allowed);
    QVERIFY(!k.hit(200).allowed);
}

void TestWindows::peekDoesNotChangeTheCells()
{
    Key k(makeLevel(SLIDING, 6, 3000));
    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(0).allowed);
    const std::vector<std::uint32_t> before = k.cells;

    const Verdict later = peek(k.spec, k.cells.data(), 5000);
    QCOMPARE(later.used, 0u);
    QVERIFY(k.cells == before);

    const Verdict p = peek(k.spec, k.cells.data(), 1000);
    const Verdict e = k.eval(1000);
    QCOMPARE(p.used, e.used);
    QCOMPARE(p.allowed, e.allowed);
    QCOMPARE(p.resetMs, e.resetMs);
    QCOMPARE(p.windowStartMs, e.windowStartMs);
}

void TestWindows::bucketsOfSliding()
{
    QFETCH(qint64, base);
    Key k(makeLevel(SLIDING, 6, 3000));
    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(base).allowed);
    for (int i = 0; i < 3; ++i)
        QVERIFY(k.hit(base + 1500).allowed);

    // At 2000 the window holds buckets -3 .. 6 (300 ms each), oldest first.
    const auto b = k.buckets(base + 2000);
    QCOMPARE(b.size(), std::size_t(10));
    for (std::size_t i = 0; i < b.size(); ++i) {
        QCOMPARE(b[i].startMs, Millis(base + (std::int64_t(i) - 3) * 300));
        const std::uint32_t expected = (i == 3 || i == 8) ? 3u : 0u;
        QCOMPARE(b[i].count, expected);
    }
    // Reading the buckets is a copy: the cells are unchanged and later reads agree.
    QCOMPARE(k.eval(base + 2000).used, 6u);
    const auto after = k.buckets(base + 3000);
    QCOMPARE(after.front().startMs, Millis(base + 300));
    QCOMPARE(after[4].count, 3u);  // bucket 5 (start 1500)
}

void TestWindows::bucketsOfFixedAndLockout()
{
    Key fixed(makeLevel(FIXED, 6, 3000));
    QVERIFY(fixed.hit(3500).allowed);
    QVERIFY(fixed.hit(3600).allowed);
    auto b = fixed.buckets(4000);
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b[0].startMs, Millis(3000));
    QCOMPARE(b[0].count, 2u);
    b = fixed.buckets(6000);
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b[0].startMs, Millis(6000));
    QCOMPARE(b[0].count, 0u);

    Key lock(makeLevel(LOCKOUT, 6, 3000));
    QVERIFY(lock.hit(3500).allowed);
    QVERIFY(lock.hit(3600).allowed);
    b = lock.buckets(4000);
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b[0].startMs, Millis(3500));  // the window starts at the first request
    QCOMPARE(b[0].count, 2u);
    b = lock.buckets(6500);
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b[0].count, 0u);
}

// ---- live ring -----------------------------------------------------------------

void TestWindows::liveRing()
{
    QFETCH(qint64, base);
    QCOMPARE(int(LiveRing::Cells), 11);
    std::vector<std::uint32_t> cells(LiveRing::Cells, 0u);

    LiveRing::count(cells.data(), base);          // bucket 0
    LiveRing::count(cells.data(), base + 2999);   // bucket 0
    LiveRing::count(cells.data(), base + 3000);   // bucket 1
    for (int i = 0; i < 5; ++i)
        LiveRing::count(cells.data(), base + 10500);  // bucket 3

    auto r = LiveRing::read(cells.data(), base + 10500);
    for (std::size_t i = 0; i < r.size(); ++i) {
        const std::uint32_t expected = i == 16 ? 2u : i == 17 ? 1u : i == 19 ? 5u : 0u;
        QCOMPARE(r[i], expected);
    }
    // Oldest first: at 59999 (bucket 19) bucket 0 is the oldest still in.
    r = LiveRing::read(cells.data(), base + 59999);
    QCOMPARE(r[0], 2u);
    QCOMPARE(r[1], 1u);
    QCOMPARE(r[3], 5u);
    QCOMPARE(r[19], 0u);
    // At 60000 bucket 0 has left.
    r = LiveRing::read(cells.data(), base + 60000);
    QCOMPARE(r[0], 1u);
    QCOMPARE(r[2], 5u);
    std::uint32_t sum = 0;
    for (auto c : r)
        sum += c;
    QCOMPARE(sum, 6u);
}

void TestWindows::liveRingForgetsAfterSixtySeconds()
{
    std::vector<std::uint32_t> cells(LiveRing::Cells, 0u);
    for (int i = 0; i < 7; ++i)
        LiveRing::count(cells.data(), 9000 + i);  // bucket 3
    auto r = LiveRing::read(cells.data(), 68999);  // bucket 22: bucket 3 is the oldest
    QCOMPARE(r[0], 7u);
    r = LiveRing::read(cells.data(), 69000);  // bucket 23
    for (auto c : r)
        QCOMPARE(c, 0u);
    r = LiveRing::read(cells.data(), 10'000'000);  // long silence
    for (auto c : r)
        QCOMPARE(c, 0u);

    // Counting after the silence starts from a clean ring.
    LiveRing::count(cells.data(), 10'000'000);
    r = LiveRing::read(cells.data(), 10'000'000);
    QCOMPARE(r[19], 1u);
    std::uint32_t sum = 0;
    for (auto c : r)
        sum += c;
    QCOMPARE(sum, 1u);
}

void TestWindows::liveRingSaturatesPerBucket()
{
    // 16-bit counts, two per cell: a saturated bucket must not spill into its neighbour.
    std::vector<std::uint32_t> cells(LiveRing::Cells, 0u);
    for (int i = 0; i < 70000; ++i)
        LiveRing::count(cells.data(), 0);  // bucket 0, low half of its cell
    auto r = LiveRing::read(cells.data(), 0);
    QCOMPARE(r[19], 65535u);
    QCOMPARE(r[18], 0u);

    LiveRing::count(cells.data(), 3000);  // bucket 1, high half of the same cell
    r = LiveRing::read(cells.data(), 3000);
    QCOMPARE(r[18], 65535u);
    QCOMPARE(r[19], 1u);
}

QTEST_APPLESS_MAIN(TestWindows)
#include "test_windows.moc"
