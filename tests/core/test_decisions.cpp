// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide end to end on the default per-IP levels (docs/INTERFACE.md):
// the binding level, Retry-After and the reset, steady bots and floods, and
// the seconds a Decision reports. Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestDecisions : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void firstRequestBindsTheTightestLevel();
    void seventhRequestInThreeSecondsIsThrottled();
    void throttledResetIsNotBeforeRetryAfter();
    void goodBotAtOneRequestPerSecond();
    void goodBotMeetsTheThirtyMinuteLevel();
    void oneRequestEveryThreeSecondsRunsForAnHour();
    void floodIsMostlyThrottled();

    void retryAfterSeconds_data();
    void retryAfterSeconds();
};

// ---- the default per-IP levels ---------------------------------------------------

void TestDecisions::firstRequestBindsTheTightestLevel()
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

void TestDecisions::seventhRequestInThreeSecondsIsThrottled()
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

void TestDecisions::throttledResetIsNotBeforeRetryAfter()
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

void TestDecisions::goodBotAtOneRequestPerSecond()
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

void TestDecisions::goodBotMeetsTheThirtyMinuteLevel()
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

void TestDecisions::oneRequestEveryThreeSecondsRunsForAnHour()
{
    // The sustainable rate of the defaults: at most 599 before any request in
    // the 30-minute window (10 buckets of 3 min).
    Engine engine;
    for (int k = 0; k <= 1200; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * 3 * SECOND);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(k) + ": " + describe(d)).constData());
    }
}

void TestDecisions::floodIsMostlyThrottled()
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

// ---- Decision arithmetic ---------------------------------------------------------

void TestDecisions::retryAfterSeconds_data()
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

void TestDecisions::retryAfterSeconds()
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

QTEST_APPLESS_MAIN(TestDecisions)
#include "test_decisions.moc"
