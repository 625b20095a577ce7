// SPDX-License-Identifier: GPL-3.0-or-later
// The sliding window over buckets of Window.h over a key's own cells: buckets
// leaving the window, Retry-After over several buckets, the reset, a fresh
// key at any epoch, a late timestamp; the packed ring (counts of 8, 10 or 16
// bits, several per cell) against the wide one.
// Time is injected; most cases run twice, from t = 0 and from a 2026
// wall-clock time, to show the arithmetic does not depend on the epoch.
#include <QtTest>

#include "TestSupport.h"
#include "core/Window.h"


using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestSlidingWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
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
    void packedRingAgreesWithTheWideOne_data();
    void packedRingAgreesWithTheWideOne();
    void packingNeedsCountsThatCannotPassItsWidth();
};

// ---- sliding window --------------------------------------------------------------

void TestSlidingWindow::slidingWindow()
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

void TestSlidingWindow::slidingSpread()
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

void TestSlidingWindow::slidingRetryNeedsSeveralBuckets_data()
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

void TestSlidingWindow::slidingRetryNeedsSeveralBuckets()
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

void TestSlidingWindow::slidingReset()
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

void TestSlidingWindow::slidingFreshKeyAtAnyEpoch_data()
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

void TestSlidingWindow::slidingFreshKeyAtAnyEpoch()
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

void TestSlidingWindow::slidingLateTimestampCountsInTheNewestBucket()
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

// ---- packed and wide rings ----------------------------------------------------

void TestSlidingWindow::packedRingAgreesWithTheWideOne_data()
{
    QTest::addColumn<uint>("limit");
    QTest::addColumn<qint64>("period");
    QTest::addColumn<qint64>("bucket");
    QTest::addColumn<qint64>("base");
    // Odd and even bucket counts (the last cell half used), small and large
    // limits, from 0 and from 2026.
    QTest::newRow("6/3s, 10 buckets") << 6u << qint64(3000) << qint64(0) << qint64(0);
    QTest::newRow("300/5m, 10 buckets, 2026") << 300u << qint64(300'000) << qint64(0) << qint64(EPOCH_2026);
    QTest::newRow("40/7s by 1s, 7 buckets") << 40u << qint64(7000) << qint64(1000) << qint64(EPOCH_2026);
    QTest::newRow("65535/1s by 100ms") << 65535u << qint64(1000) << qint64(100) << qint64(0);
    QTest::newRow("3/1s by 1s, 1 bucket") << 3u << qint64(1000) << qint64(1000) << qint64(EPOCH_2026);
}

void TestSlidingWindow::packedRingAgreesWithTheWideOne()
{
    QFETCH(uint, limit);
    QFETCH(qint64, period);
    QFETCH(qint64, bucket);
    QFETCH(qint64, base);
    const Level l = makeLevel(SLIDING, limit, period, bucket);
    Key packed(l);
    // The same level compiled as a cluster's shared level keeps the wide
    // layout; without a cluster view its arithmetic is the single node's.
    Key wide = Key::shared(l);
    QVERIFY(packed.spec.packed);
    QVERIFY(!wide.spec.packed);
    QVERIFY(packed.spec.cells < wide.spec.cells || packed.spec.buckets == 1);

    // Late stamps: up to a bucket before the latest.
    compareLayouts(packed, wide, limit * 7919u + std::uint64_t(period), base,
                   RandomSteps{packed.spec.bucketMs * 2, period * 2, packed.spec.bucketMs});
}

void TestSlidingWindow::packingNeedsCountsThatCannotPassItsWidth()
{
    // Packed: admitted requests only, under a limit that fits 16 bits.
    QVERIFY(LevelSpec::compile(makeLevel(SLIDING, 65535, 60'000), "a").packed);
    QVERIFY(!LevelSpec::compile(makeLevel(SLIDING, 65536, 60'000), "b").packed);
    QVERIFY(!LevelSpec::compile(makeLevel(SLIDING, 100, 60'000, 0, 0, true), "c").packed);  // counts refusals too
    QVERIFY(!LevelSpec::compile(makeLevel(SLIDING, 100, 60'000), "d", true).packed);         // shared in a cluster
    // The narrowest width the limit fits: 8 bits to 255, 10 to 1,023, 16 to 65,535.
    QCOMPARE(int(LevelSpec::compile(makeLevel(SLIDING, 100, 60'000), "e").cells), 1 + 3);           // 10 buckets, 4 a cell
    QCOMPARE(int(LevelSpec::compile(makeLevel(SLIDING, 100, 70'000, 10'000), "f").cells), 1 + 2);   // 7 buckets
    QCOMPARE(int(LevelSpec::compile(makeLevel(SLIDING, 300, 60'000), "g").cells), 1 + 4);           // 3 a cell
    QCOMPARE(int(LevelSpec::compile(makeLevel(SLIDING, 1024, 60'000), "h").cells), 1 + 5);          // 2 a cell
    // A wide level past 65,535 in one bucket still counts exactly.
    Key k(makeLevel(SLIDING, 100'000, 1000, 1000));
    for (int i = 0; i < 70'000; ++i)
        k.hit(EPOCH_2026);
    QCOMPARE(k.eval(EPOCH_2026).used, 70'000u);
}

QTEST_APPLESS_MAIN(TestSlidingWindow)
#include "test_sliding_window.moc"
