// SPDX-License-Identifier: GPL-3.0-or-later
// A level compiled for the counting algorithms of Window.h (LevelSpec): its
// cells, bucket width and keep time, its shape signature; and what every
// algorithm does with a key's cells beside counting: uncount, peek,
// bucketsOf. Time is injected; bucketsOfSliding runs twice, from t = 0 and
// from a 2026 wall-clock time. And Time.h's Divisor against plain division.
#include <QtTest>

#include "TestSupport.h"
#include "core/Window.h"

#include <limits>
#include <random>
#include <vector>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestLevelSpec : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void compile_data();
    void compile();
    void shapeSignature();

    void uncountTakesBackOne_data();
    void uncountTakesBackOne();
    void peekDoesNotChangeTheCells();
    void bucketsOfSliding_data() { addBases(); }
    void bucketsOfSliding();
    void bucketsOfFixedAndLockout();
    void divisorAgreesWithDivision();
};

// ---- compile ---------------------------------------------------------------------

void TestLevelSpec::compile_data()
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
    // Cells: the stamp, then the counts of the narrowest width the limit
    // fits, 8, 10 or 16 bits, four, three or two per cell (LevelSpec::packs;
    // test_sliding_window checks the wide layout gives the same answers).
    // A lockout level: two cells (test_lockout checks the wide layout agrees).
    QTest::newRow("sliding 6/3s") << int(SLIDING) << 6u << qint64(3000) << qint64(0) << qint64(0)
                                  << qint64(300) << 10u << 4 << qint64(0) << qint64(3300);
    QTest::newRow("sliding 300/5m") << int(SLIDING) << 300u << qint64(300000) << qint64(0) << qint64(0)
                                    << qint64(30000) << 10u << 5 << qint64(0) << qint64(330000);
    QTest::newRow("sliding 600/30m") << int(SLIDING) << 600u << qint64(1800000) << qint64(0) << qint64(0)
                                     << qint64(180000) << 10u << 5 << qint64(0) << qint64(1980000);
    QTest::newRow("sliding 1s by 300ms (rounded up)") << int(SLIDING) << 5u << qint64(1000) << qint64(300) << qint64(0)
                                                      << qint64(300) << 4u << 2 << qint64(0) << qint64(1500);
    QTest::newRow("sliding 1h by 1m") << int(SLIDING) << 100u << qint64(3600000) << qint64(60000) << qint64(0)
                                      << qint64(60000) << 60u << 16 << qint64(0) << qint64(3660000);
    QTest::newRow("sliding 7ms (1 ms buckets)") << int(SLIDING) << 1u << qint64(7) << qint64(0) << qint64(0)
                                                << qint64(1) << 7u << 3 << qint64(0) << qint64(8);
    QTest::newRow("fixed 3s") << int(FIXED) << 6u << qint64(3000) << qint64(0) << qint64(0)
                              << qint64(0) << 0u << 2 << qint64(0) << qint64(3000);
    QTest::newRow("lockout 3s (lock = period)") << int(LOCKOUT) << 6u << qint64(3000) << qint64(0) << qint64(0)
                                                << qint64(0) << 0u << 2 << qint64(3000) << qint64(3000);
    QTest::newRow("lockout 3s, 10s lock") << int(LOCKOUT) << 6u << qint64(3000) << qint64(0) << qint64(10000)
                                          << qint64(0) << 0u << 2 << qint64(10000) << qint64(10000);
}

void TestLevelSpec::compile()
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

void TestLevelSpec::shapeSignature()
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

// ---- uncount, peek, bucketsOf ----------------------------------------------------

void TestLevelSpec::uncountTakesBackOne_data()
{
    QTest::addColumn<int>("algorithm");
    QTest::newRow("sliding") << int(SLIDING);
    QTest::newRow("fixed") << int(FIXED);
    QTest::newRow("lockout") << int(LOCKOUT);
}

void TestLevelSpec::uncountTakesBackOne()
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

void TestLevelSpec::peekDoesNotChangeTheCells()
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

void TestLevelSpec::bucketsOfSliding()
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

void TestLevelSpec::bucketsOfFixedAndLockout()
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

// ---- Divisor (Time.h): floor division without a division instruction ---------------

void TestLevelSpec::divisorAgreesWithDivision()
{
    const std::int64_t divisors[] = {1, 2, 3, 7, 10, 20, 300, 1000, 3000, 30'000, 180'000, 3'600'000,
                                     366 * DAY, (std::int64_t(1) << 31) - 1, std::int64_t(1) << 31, (std::int64_t(1) << 40) + 1};
    std::mt19937_64 rng(42);
    for (const std::int64_t d : divisors) {
        const Divisor by(d);
        QCOMPARE(by.value(), d);
        std::vector<std::int64_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1, -1, -d, -d - 1, EPOCH_2026, EPOCH_2026 + d - 1,
                                        (std::int64_t(1) << 62), std::numeric_limits<std::int64_t>::max(),
                                        std::numeric_limits<std::int64_t>::max() - 1};
        for (int i = 0; i < 20'000; ++i)
            ns.push_back(std::int64_t(rng() >> (rng() % 63)) - (i % 5 == 0 ? std::int64_t(rng() % 100'000) : 0));
        for (const std::int64_t n : ns) {
            if (by.floor(n) != floorDiv(n, d) || by.mod(n) != n - floorDiv(n, d) * d)
                QFAIL(qPrintable(QStringLiteral("%1 / %2: %3, not %4").arg(n).arg(d).arg(by.floor(n)).arg(floorDiv(n, d))));
        }
    }
}

QTEST_APPLESS_MAIN(TestLevelSpec)
#include "test_level_spec.moc"
