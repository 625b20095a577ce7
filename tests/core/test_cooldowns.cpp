// SPDX-License-Identifier: GPL-3.0-or-later
// Engine cooldowns (docs/INTERFACE.md): after a successful create the same
// user waits before the next one; only a success starts the clock, a request
// without the user header is keyed by its address, and users whose ids
// collided under the old hash are apart. Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestCooldowns : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cooldownAfterSuccess();
    void cooldownNeedsASuccess();
    void cooldownFallsBackToClientAddress();
    void cooldownUsersWithCollidingOldHashesAreApart();
};

// ---- cooldowns -------------------------------------------------------------------

void TestCooldowns::cooldownAfterSuccess()
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

void TestCooldowns::cooldownNeedsASuccess()
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

void TestCooldowns::cooldownFallsBackToClientAddress()
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

void TestCooldowns::cooldownUsersWithCollidingOldHashesAreApart()
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

QTEST_APPLESS_MAIN(TestCooldowns)
#include "test_cooldowns.moc"
