// SPDX-License-Identifier: GPL-3.0-or-later
// The fixed window of Window.h over a key's own cells: the window is keyed by
// the clock, Retry-After and the reset, refusals counted or not.
// Time is injected; most cases run twice, from t = 0 and from a 2026
// wall-clock time, to show the arithmetic does not depend on the epoch.
#include <QtTest>

#include "TestSupport.h"
#include "core/Window.h"

#include <vector>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestFixedWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
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
};

// ---- fixed window ----------------------------------------------------------------

void TestFixedWindow::fixedWindow()
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

void TestFixedWindow::fixedWindowRetryAfter()
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

void TestFixedWindow::fixedWindowResetsAtTheClockBoundary()
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

void TestFixedWindow::fixedWindowReset()
{
    QFETCH(qint64, base);
    Key k(makeLevel(FIXED, 6, 3000));

    QCOMPARE(k.eval(base + 500).resetMs, Millis(0));  // nothing counted: nothing to reset
    QVERIFY(k.hit(base + 500).allowed);
    QCOMPARE(k.resetAfterCount(base + 500), Millis(2500));
    QCOMPARE(k.eval(base + 1000).resetMs, Millis(2000));
}

void TestFixedWindow::fixedWindowCountRefused_data()
{
    QTest::addColumn<bool>("countRefused");
    QTest::addColumn<uint>("usedAfter");
    QTest::newRow("refusals not counted (default)") << false << 2u;
    QTest::newRow("refusals counted (plain N per D)") << true << 4u;
}

void TestFixedWindow::fixedWindowCountRefused()
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

QTEST_APPLESS_MAIN(TestFixedWindow)
#include "test_fixed_window.moc"
