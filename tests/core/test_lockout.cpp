// SPDX-License-Identifier: GPL-3.0-or-later
// The lockout algorithm of Window.h over a key's own cells: a window from the
// first request, a lock after a refusal (restarted by a counted refusal,
// longer than the period if configured), the reset, late stamps; the packed
// layout (one time, a 16-bit count) against the wide one.
// Time is injected; most cases run twice, from t = 0 and from a 2026
// wall-clock time, to show the arithmetic does not depend on the epoch.
#include <QtTest>

#include "TestSupport.h"
#include "core/Window.h"

#include <algorithm>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

void addLayouts()
{
    QTest::addColumn<bool>("wide");
    QTest::newRow("packed") << false;
    QTest::newRow("wide") << true;
}

// The packed layout, or the wide one a cluster's shared level keeps, with
// its window full: `limit` requests counted at `at`.
Key fullKey(const Level& l, bool wide, Millis at)
{
    Key k = wide ? Key::shared(l) : Key(l);
    if (k.spec.packed == wide)
        qFatal("the level does not pack");
    for (std::uint32_t i = 0; i < l.limit; ++i)
        if (!k.hit(at).allowed)
            qFatal("request %u of the first window refused", i);
    return k;
}

} // namespace

class TestLockout : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void lockout_data() { addBases(); }
    void lockout();
    void lockoutCountRefusedRestartsTheLock_data() { addBases(); }
    void lockoutCountRefusedRestartsTheLock();
    void lockoutWindowStartsAtTheFirstRequest_data() { addBases(); }
    void lockoutWindowStartsAtTheFirstRequest();
    void lockoutLongerThanThePeriod();
    void lockoutReset();
    void lockoutLateStampAfterTheLockEnded_data() { addLayouts(); }
    void lockoutLateStampAfterTheLockEnded();
    void lockoutLateStampLocksFromTheWindowStart_data() { addLayouts(); }
    void lockoutLateStampLocksFromTheWindowStart();
    void lockoutLateCountedRefusalKeepsTheLockEnd_data() { addLayouts(); }
    void lockoutLateCountedRefusalKeepsTheLockEnd();
    void packedLockoutAgreesWithTheWideOne_data();
    void packedLockoutAgreesWithTheWideOne();
};

// ---- lockout ---------------------------------------------------------------------

void TestLockout::lockout()
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

void TestLockout::lockoutCountRefusedRestartsTheLock()
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

void TestLockout::lockoutWindowStartsAtTheFirstRequest()
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

void TestLockout::lockoutLongerThanThePeriod()
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

void TestLockout::lockoutReset()
{
    Key k(makeLevel(LOCKOUT, 6, 3000));
    QCOMPARE(k.eval(0).resetMs, Millis(0));
    QVERIFY(k.hit(500).allowed);
    QCOMPARE(k.resetAfterCount(500), Millis(3000));
    QVERIFY(k.hit(600).allowed);
    QCOMPARE(k.eval(1000).resetMs, Millis(2500));  // the window of the first request ends at 3500
    QCOMPARE(k.eval(1000).used, 2u);
}

// ---- late stamps -----------------------------------------------------------------
// Two listener threads may stamp in one order and decide in the other: a
// request stamped before its key's current window began is judged as of
// that start, in both layouts.

void TestLockout::lockoutLateStampAfterTheLockEnded()
{
    // Stamped before the lockout ended, decided after the next window began.
    QFETCH(bool, wide);
    Key k = fullKey(makeLevel(LOCKOUT, 6, 3000, 0, 3000), wide, 0);
    QVERIFY(!k.hit(100).allowed);  // locked until 3100
    QVERIFY(k.hit(3101).allowed);  // the next window
    const Verdict v = k.hit(3095);
    QVERIFY(v.allowed);  // before 0.5.0 the wide layout refused it (retry after 5 ms)
    QCOMPARE(v.used, 1u);
    QCOMPARE(v.windowStartMs, Millis(3101));
    QCOMPARE(v.resetMs, Millis(3000));  // judged at 3101
    QCOMPARE(k.resetAfterCount(3095), Millis(3000));
    QCOMPARE(k.eval(3101).used, 2u);
}

void TestLockout::lockoutLateStampLocksFromTheWindowStart()
{
    // A late request that finds the window full locks out from its start.
    QFETCH(bool, wide);
    Key k = fullKey(makeLevel(LOCKOUT, 6, 3000, 0, 3000), wide, 1000);
    const Verdict v = k.hit(990);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(3000));
    QCOMPARE(k.eval(3999).retryAfterMs, Millis(1));  // locked until 1000 + 3000, not 990 + 3000
    QVERIFY(k.eval(4000).allowed);
}

void TestLockout::lockoutLateCountedRefusalKeepsTheLockEnd()
{
    // A counted refusal restarts the lock; a late one never brings its end closer.
    QFETCH(bool, wide);
    Key k = fullKey(makeLevel(LOCKOUT, 6, 3000, 0, 3000, true), wide, 0);
    QVERIFY(!k.hit(100).allowed);   // locked until 3100
    QVERIFY(!k.hit(2000).allowed);  // until 5000
    const Verdict v = k.hit(1990);
    QVERIFY(!v.allowed);
    QCOMPARE(v.retryAfterMs, Millis(3010));
    QCOMPARE(k.eval(4999).retryAfterMs, Millis(1));  // still until 5000
    QVERIFY(k.eval(5000).allowed);
}

// ---- packed and wide layouts ------------------------------------------------------

void TestLockout::packedLockoutAgreesWithTheWideOne_data()
{
    QTest::addColumn<uint>("limit");
    QTest::addColumn<qint64>("period");
    QTest::addColumn<qint64>("lock");
    QTest::addColumn<bool>("countRefused");
    QTest::addColumn<qint64>("base");
    QTest::newRow("6/3s, 3s lock") << 6u << qint64(3000) << qint64(3000) << false << qint64(0);
    QTest::newRow("6/3s, 3s lock, 2026") << 6u << qint64(3000) << qint64(3000) << false << qint64(EPOCH_2026);
    QTest::newRow("5/1m, 15m lock, counts refused") << 5u << qint64(60'000) << qint64(900'000) << true << qint64(EPOCH_2026);
    QTest::newRow("1/10s, 2s lock") << 1u << qint64(10'000) << qint64(2000) << false << qint64(EPOCH_2026);
    QTest::newRow("65534/1s, 1s lock") << 65534u << qint64(1000) << qint64(1000) << false << qint64(0);
}

void TestLockout::packedLockoutAgreesWithTheWideOne()
{
    // The two-cell layout (one time, a 16-bit count) against the five-cell
    // one a cluster's shared level keeps; without a cluster view a shared
    // level's arithmetic is the single node's. Some stamps come late, up to
    // 50 ms before the latest, some of them across a lockout's end or a
    // window's.
    QFETCH(uint, limit);
    QFETCH(qint64, period);
    QFETCH(qint64, lock);
    QFETCH(bool, countRefused);
    QFETCH(qint64, base);
    const Level l = makeLevel(LOCKOUT, limit, period, 0, lock, countRefused);
    Key packed(l);
    Key wide = Key::shared(l);
    QVERIFY(packed.spec.packed);
    QVERIFY(!wide.spec.packed);
    QCOMPARE(int(packed.spec.cells), 2);
    QCOMPARE(int(wide.spec.cells), 5);
    compareLayouts(packed, wide, limit * 7919u + std::uint64_t(period) + std::uint64_t(lock), base,
                   RandomSteps{period / 2, std::max(period, lock) * 2, 50});
}

QTEST_APPLESS_MAIN(TestLockout)
#include "test_lockout.moc"
