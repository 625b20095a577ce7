// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::setConfig while the engine decides (docs/INTERFACE.md): a new
// configuration applies to the next decision and keeps what was counted, an
// invalid one changes nothing; level names, method and path rules, and rules
// counted by a header value (their reservations given back on a refusal,
// colliding values kept apart). Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"
#include "core/Tuning.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestLiveConfig : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void setConfigAppliesToTheNextDecision();
    void setConfigRejectsInvalidAndChangesNothing();
    void levelNameFromConfig();
    void methodAndPathRule();
    void reservationIsReturnedOnRefusal();
    void everyKeyedRuleGivesItsReservationBack();
    void headerValuesWithCollidingOldHashesKeepTheirCounters();
};

// ---- live configuration ----------------------------------------------------------

void TestLiveConfig::setConfigAppliesToTheNextDecision()
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

void TestLiveConfig::setConfigRejectsInvalidAndChangesNothing()
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

void TestLiveConfig::levelNameFromConfig()
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

void TestLiveConfig::methodAndPathRule()
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

void TestLiveConfig::reservationIsReturnedOnRefusal()
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

void TestLiveConfig::everyKeyedRuleGivesItsReservationBack()
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

void TestLiveConfig::headerValuesWithCollidingOldHashesKeepTheirCounters()
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

QTEST_APPLESS_MAIN(TestLiveConfig)
#include "test_live_config.moc"
