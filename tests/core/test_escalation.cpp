// SPDX-License-Identifier: GPL-3.0-or-later
// fail2ban-style escalation: K over-limit refusals within F put the client's
// counting key on the automatic blocklist for T, T x factor on each repeat up
// to a cap. Here K = 5, F = 10 s, T = 60 s, cap 240 s, factor 2.
#include <QtTest>

#include "core/Engine.h"
#include "core/Tuning.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

EngineConfig escalating(bool enabled = true)
{
    EngineConfig c = defaultConfig();
    c.escalation = Escalation{enabled, 5, 10 * SECOND, MINUTE, 4 * MINUTE, 2};
    return c;
}

struct Flood {
    int requests = 0;
    Millis bannedAt = -1;
    Decision decision;
};

// One request every 10 ms until a decision says it banned the client. On the
// default levels: 6 pass, then the 6/3s level refuses; the 5th refusal bans.
Flood floodUntilBanned(Engine& engine, const Request& r, Millis start, int maxRequests = 200)
{
    Flood f;
    for (int k = 0; k < maxRequests; ++k) {
        const Millis now = start + k * 10;
        const Decision d = decide(engine, r, now);
        ++f.requests;
        if (d.autoBanned) {
            f.bannedAt = now;
            f.decision = d;
            break;
        }
    }
    return f;
}

} // namespace

class TestEscalation : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fifthRefusalBans();
    void banExpiresWithoutPurge();
    void purgeDropsExpiredBans();
    void banDoublesUpToTheCap();
    void refusalsOlderThanFindAreForgotten();
    void spacedRefusalsNeverBan();
    void cooldownRefusalsDoNotEscalate();
    void disabledNeverBans();
    void dryRunNeverBans();
    void removeAutomaticBanLiftsIt();
    void ipv6BanCoversThePrefix();
    void restoredBansApply();
    void restoredHistoryKeepsDoubling();
    void aBanFromAnotherNodeHoldsAndContinuesTheEscalation();
    void anEndedBanFromAnotherNodeStillCounts();
    void aCooldownFromAnotherNodeHolds();
};

void TestEscalation::fifthRefusalBans()
{
    Engine engine(escalating());
    std::vector<ListEntry> heard;
    engine.onAutomaticBan([&heard](const ListEntry& e) { heard.push_back(e); });

    // 6 allowed (0..50 ms), refusals at 60, 70, 80, 90: not yet.
    for (int k = 0; k < 10; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * 10);
        QVERIFY2(!d.autoBanned, describe(d).constData());
        QVERIFY2(d.action == (k < 6 ? Action::Allow : Action::Throttle), describe(d).constData());
    }
    QVERIFY(engine.automaticBans()->empty());
    QVERIFY(heard.empty());

    // The 5th refusal (allowed requests do not count) bans.
    Decision d = decide(engine, Request(), T0 + 100);
    QVERIFY2(d.autoBanned, describe(d).constData());
    QVERIFY(d.refused());

    QCOMPARE(heard.size(), std::size_t(1));
    const auto bans = engine.automaticBans();
    QCOMPARE(bans->size(), std::size_t(1));
    const ListEntry& e = bans->entries().front();
    QCOMPARE(qs(e.range.toString()), QStringLiteral("203.0.113.7/32"));
    QCOMPARE(label(e.source), label(ListSource::Automatic));
    QCOMPARE(e.createdAt, T0 + 100);
    QCOMPARE(e.expiresAt, T0 + 100 + MINUTE);
    QVERIFY(!e.reason.empty());
    QVERIFY(heard[0].range == e.range);
    QCOMPARE(heard[0].expiresAt, e.expiresAt);
    QCOMPARE(label(heard[0].source), label(ListSource::Automatic));

    const EngineCounters c = engine.counters(T0 + 100);
    QCOMPARE(c.autoBans, std::uint64_t(1));
    QCOMPARE(c.automaticEntries, std::size_t(1));

    // From now on the client is blocked, and the listener is not called again.
    for (int k = 1; k <= 20; ++k) {
        const Millis now = T0 + 100 + k * 10;
        d = decide(engine, Request(), now);
        QCOMPARE(label(d.action), label(Action::Block));
        QCOMPARE(label(d.reason), label(Reason::AutoBanned));
        QCOMPARE(QByteArray(d.rule.text, d.rule.length), QByteArray("blocklist"));
        QCOMPARE(d.listExpiresAt, T0 + 100 + MINUTE);
        QCOMPARE(d.retryAfterMs, T0 + 100 + MINUTE - now);
        QVERIFY(!d.autoBanned);
    }
    QCOMPARE(heard.size(), std::size_t(1));
    // Other clients are not affected.
    QCOMPARE(label(decide(engine, Request().from("203.0.113.8"), T0 + 400).action), label(Action::Allow));
}

void TestEscalation::banExpiresWithoutPurge()
{
    Engine engine(escalating());
    const Flood f = floodUntilBanned(engine, Request(), T0);
    QCOMPARE(f.requests, 11);
    QCOMPARE(f.bannedAt, T0 + 100);

    Decision d = decide(engine, Request(), T0 + 100 + MINUTE - 1);
    QCOMPARE(label(d.action), label(Action::Block));
    QCOMPARE(d.retryAfterMs, Millis(1));
    // match() honours the expiry; no purge needed. The lockout (until 3060)
    // is long over and blocked requests spent nothing.
    d = decide(engine, Request(), T0 + 100 + MINUTE);
    QCOMPARE(label(d.action), label(Action::Allow));
    QCOMPARE(label(d.reason), label(Reason::Counted));
    QCOMPARE(d.remaining, 5u);
    QCOMPARE(engine.counters(T0 + 100 + MINUTE).automaticEntries, std::size_t(0));
}

void TestEscalation::purgeDropsExpiredBans()
{
    Engine engine(escalating());
    QCOMPARE(floodUntilBanned(engine, Request(), T0).bannedAt, T0 + 100);
    engine.purge(T0 + 100 + MINUTE - 1);
    QCOMPARE(engine.automaticBans()->size(), std::size_t(1));
    QCOMPARE(label(decide(engine, Request(), T0 + 100 + MINUTE - 1).action), label(Action::Block));

    engine.purge(T0 + 100 + MINUTE);
    QCOMPARE(engine.automaticBans()->size(), std::size_t(0));
    QCOMPARE(label(decide(engine, Request(), T0 + 100 + MINUTE).action), label(Action::Allow));
}

void TestEscalation::banDoublesUpToTheCap()
{
    Engine engine(escalating());
    int calls = 0;
    engine.onAutomaticBan([&calls](const ListEntry&) { ++calls; });

    const Millis durations[] = {MINUTE, 2 * MINUTE, 4 * MINUTE, 4 * MINUTE, 4 * MINUTE};
    Millis start = T0;
    for (std::size_t i = 0; i < std::size(durations); ++i) {
        const Flood f = floodUntilBanned(engine, Request(), start);
        QVERIFY2(f.bannedAt >= 0, qPrintable(QStringLiteral("ban #%1 never came").arg(i + 1)));
        QCOMPARE(f.requests, 11);
        QCOMPARE(f.bannedAt, start + 100);
        const ListEntry* e = engine.automaticBans()->find(cidr("203.0.113.7/32"));
        QVERIFY(e);
        QCOMPARE(e->expiresAt, f.bannedAt + durations[i]);
        // Blocked until the very end of the ban, let in from then on.
        QCOMPARE(label(decide(engine, Request(), e->expiresAt - 1).action), label(Action::Block));
        start = e->expiresAt;
    }
    QCOMPARE(calls, 5);
    QCOMPARE(engine.counters(start).autoBans, std::uint64_t(5));
}

void TestEscalation::refusalsOlderThanFindAreForgotten()
{
    Engine engine(escalating());
    // 6 allowed, 4 refusals (60..90 ms): one short.
    for (int k = 0; k < 10; ++k)
        QVERIFY(!decide(engine, Request(), T0 + k * 10).autoBanned);
    // More than 10 s later (and after the lockout): 6 allowed, 4 refusals at
    // 10160..10190. The four old ones are out of the 10 s window.
    for (int k = 0; k < 10; ++k) {
        const Decision d = decide(engine, Request(), T0 + 10100 + k * 10);
        QVERIFY2(!d.autoBanned, describe(d).constData());
        QVERIFY2(d.action == (k < 6 ? Action::Allow : Action::Throttle), describe(d).constData());
    }
    // The fifth within 10 s bans.
    const Decision d = decide(engine, Request(), T0 + 10200);
    QVERIFY2(d.autoBanned, describe(d).constData());
}

void TestEscalation::spacedRefusalsNeverBan()
{
    // One refusal every 3006 ms (6 pass, the 7th locks out for 3 s, repeat):
    // never more than 4 refusals within any 10 s.
    Engine engine(escalating());
    int refusals = 0;
    Millis start = T0;
    for (int cycle = 0; cycle < 20; ++cycle) {
        for (int i = 0; i < 6; ++i) {
            const Decision d = decide(engine, Request(), start + i);
            QVERIFY2(d.action == Action::Allow, describe(d).constData());
        }
        const Decision d = decide(engine, Request(), start + 6);
        QCOMPARE(label(d.action), label(Action::Throttle));
        QVERIFY2(!d.autoBanned, qPrintable(QStringLiteral("cycle %1").arg(cycle)));
        ++refusals;
        start += 3006;
    }
    QCOMPARE(refusals, 20);
    QVERIFY(engine.automaticBans()->empty());
    QCOMPARE(engine.counters(start).autoBans, std::uint64_t(0));
}

void TestEscalation::cooldownRefusalsDoNotEscalate()
{
    // Escalation counts over-limit refusals; a user repeating a cooled-down
    // action is told to wait, not banned.
    Engine engine(escalating());
    const Request post = Request().to("POST", "/comments").header("X-User-Id", "u1");
    QCOMPARE(label(decide(engine, post, T0).action), label(Action::Allow));
    reportSuccess(engine, post, T0);
    for (int k = 1; k <= 10; ++k) {
        const Decision d = decide(engine, post, T0 + k * SECOND);
        QCOMPARE(label(d.reason), label(Reason::Cooldown));
        QVERIFY(!d.autoBanned);
    }
    QVERIFY(engine.automaticBans()->empty());
}

void TestEscalation::disabledNeverBans()
{
    Engine engine(escalating(false));
    int throttled = 0;
    for (int k = 0; k < 2000; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * 10);
        QVERIFY(!d.autoBanned);
        QVERIFY(d.action != Action::Block);
        if (d.action == Action::Throttle)
            ++throttled;
    }
    QVERIFY(throttled > 1000);
    QVERIFY(engine.automaticBans()->empty());
    QCOMPARE(engine.counters(T0 + 20 * SECOND).autoBans, std::uint64_t(0));
}

void TestEscalation::dryRunNeverBans()
{
    EngineConfig cfg = escalating();
    cfg.settings.dryRun = true;
    Engine engine(cfg);
    int wouldThrottle = 0;
    for (int k = 0; k < 2000; ++k) {
        const Decision d = decide(engine, Request(), T0 + k * 10);
        QVERIFY(!d.autoBanned);
        QVERIFY(d.action == Action::Allow || d.action == Action::DryRun);
        if (d.wouldBe == Action::Throttle)
            ++wouldThrottle;
    }
    QVERIFY(wouldThrottle > 1000);
    QVERIFY(engine.automaticBans()->empty());
}

void TestEscalation::removeAutomaticBanLiftsIt()
{
    Engine engine(escalating());
    QCOMPARE(floodUntilBanned(engine, Request(), T0).bannedAt, T0 + 100);
    QVERIFY(engine.removeAutomaticBan(cidr("203.0.113.7/32")));
    QVERIFY(engine.automaticBans()->empty());
    QVERIFY(!engine.removeAutomaticBan(cidr("203.0.113.7/32")));  // nothing left to lift

    // No longer blocked; the lockout from the refusal at 60 ms still runs until 3060.
    Decision d = decide(engine, Request(), T0 + 200);
    QCOMPARE(label(d.action), label(Action::Throttle));
    QCOMPARE(label(d.reason), label(Reason::OverLimit));
    QCOMPARE(d.retryAfterMs, Millis(2860));
    d = decide(engine, Request(), T0 + 3060);
    QCOMPARE(label(d.action), label(Action::Allow));
}

void TestEscalation::ipv6BanCoversThePrefix()
{
    Engine engine(escalating());
    const Flood f = floodUntilBanned(engine, Request().from("2001:db8:1:2::1"), T0);
    QCOMPARE(f.bannedAt, T0 + 100);
    const auto bans = engine.automaticBans();
    QCOMPARE(bans->size(), std::size_t(1));
    QCOMPARE(qs(bans->entries().front().range.toString()), QStringLiteral("2001:db8:1:2::/64"));

    Decision d = decide(engine, Request().from("2001:db8:1:2::99"), T0 + 200);
    QCOMPARE(label(d.action), label(Action::Block));
    QCOMPARE(label(d.reason), label(Reason::AutoBanned));
    d = decide(engine, Request().from("2001:db8:1:3::1"), T0 + 200);
    QCOMPARE(label(d.action), label(Action::Allow));
}

void TestEscalation::restoredBansApply()
{
    Engine engine(escalating());
    engine.restoreAutomaticBans({listEntry("198.51.100.9/32", "restored after restart", T0 + 1000, ListSource::Automatic)});
    QCOMPARE(engine.automaticBans()->size(), std::size_t(1));

    Decision d = decide(engine, Request().from("198.51.100.9"), T0);
    QCOMPARE(label(d.action), label(Action::Block));
    QCOMPARE(label(d.reason), label(Reason::AutoBanned));
    QCOMPARE(d.listExpiresAt, T0 + 1000);
    d = decide(engine, Request().from("198.51.100.9"), T0 + 1000);
    QCOMPARE(label(d.action), label(Action::Allow));
}


void TestEscalation::restoredHistoryKeepsDoubling()
{
    // A client banned twice before a restart: the new engine is told so, and
    // its next ban is the third (4 minutes), not the first (1 minute) again.
    Engine engine(escalating());
    std::vector<ListEntry> heard;
    engine.onAutomaticBan([&heard](const ListEntry& e) { heard.push_back(e); });
    engine.restoreOffenders({{ip("203.0.113.7"), 2, T0 - HOUR}});
    const Flood f = floodUntilBanned(engine, Request(), T0);
    QVERIFY(f.bannedAt >= 0);
    const ListEntry* e = engine.automaticBans()->find(cidr("203.0.113.7/32"));
    QVERIFY(e);
    QCOMPARE(e->expiresAt, f.bannedAt + 4 * MINUTE);
    QCOMPARE(heard.size(), std::size_t(1));
    QCOMPARE(heard[0].banCount, 3u);
    // Another client's history is its own.
    const Flood other = floodUntilBanned(engine, Request().from("198.51.100.1"), T0);
    QCOMPARE(engine.automaticBans()->find(cidr("198.51.100.1/32"))->expiresAt, other.bannedAt + MINUTE);
}

void TestEscalation::aBanFromAnotherNodeHoldsAndContinuesTheEscalation()
{
    // Two engines stand for two nodes of a cluster: what a's hook hands on
    // (app/ClusterLink.cpp sends it through Redis) is taken by b.
    Engine a(escalating());
    Engine b(escalating());
    std::vector<ListEntry> fromA, fromB;
    a.onAutomaticBan([&fromA](const ListEntry& e) { fromA.push_back(e); });
    b.onAutomaticBan([&fromB](const ListEntry& e) { fromB.push_back(e); });
    const Flood first = floodUntilBanned(a, Request(), T0);
    QVERIFY(first.bannedAt >= 0);
    QCOMPARE(fromA.size(), std::size_t(1));
    QCOMPARE(fromA[0].banCount, 1u);

    const Millis arrives = first.bannedAt + 50;
    QVERIFY(b.offenders(arrives).empty());
    QVERIFY(b.takeAutomaticBan(fromA[0], arrives));
    // Its history is b's now too (what b would offer a node that joins later).
    QCOMPARE(b.offenders(arrives).size(), std::size_t(1));
    QCOMPARE(b.offenders(arrives)[0].bans, 1u);
    QCOMPARE(b.offenders(arrives)[0].lastBanAt, first.bannedAt);
    QVERIFY(b.offenders(first.bannedAt + Tuning::escalationMemoryMs).empty());  // forgotten after a week
    QVERIFY(fromB.empty());  // not announced again by b
    const ListEntry* held = b.automaticBans()->find(cidr("203.0.113.7/32"));
    QVERIFY(held);
    QCOMPARE(held->expiresAt, first.bannedAt + MINUTE);  // the same absolute end
    QCOMPARE(held->banCount, 1u);
    QCOMPARE(held->reason, fromA[0].reason);
    QVERIFY(!held->stored());
    Decision d = decide(b, Request(), arrives + 10);
    QCOMPARE(label(d.action), label(Action::Block));
    QCOMPARE(label(d.reason), label(Reason::AutoBanned));
    QCOMPARE(d.listExpiresAt, first.bannedAt + MINUTE);
    // Taken twice (the stream read again after a reconnect): held already,
    // so nothing new (storage is not asked to journal it again).
    QVERIFY(!b.takeAutomaticBan(fromA[0], arrives + 20));
    QCOMPARE(b.automaticBans()->size(), std::size_t(1));
    // A shorter ban from elsewhere does not cut a longer one held here.
    ListEntry shorter = fromA[0];
    shorter.expiresAt = first.bannedAt + SECOND;
    QVERIFY(!b.takeAutomaticBan(shorter, arrives + 30));
    QCOMPARE(b.automaticBans()->find(cidr("203.0.113.7/32"))->expiresAt, first.bannedAt + MINUTE);

    // Once it has ended, b's own next ban of the client is its second:
    // twice as long (120 s), announced by b.
    const Flood second = floodUntilBanned(b, Request(), first.bannedAt + MINUTE + SECOND);
    QVERIFY(second.bannedAt >= 0);
    QCOMPARE(fromB.size(), std::size_t(1));
    QCOMPARE(fromB[0].banCount, 2u);
    QCOMPARE(fromB[0].expiresAt, second.bannedAt + 2 * MINUTE);
    QVERIFY2(fromB[0].reason.find("ban #2") != std::string::npos, fromB[0].reason.c_str());
    // And a, told of it, goes on from there: its next one is the third (240 s).
    QVERIFY(a.takeAutomaticBan(fromB[0], second.bannedAt + 50));
    const Flood third = floodUntilBanned(a, Request(), second.bannedAt + 2 * MINUTE + SECOND);
    QVERIFY(third.bannedAt >= 0);
    QCOMPARE(fromA.size(), std::size_t(2));
    QCOMPARE(fromA[1].banCount, 3u);
    QCOMPARE(fromA[1].expiresAt, third.bannedAt + 4 * MINUTE);
}

void TestEscalation::anEndedBanFromAnotherNodeStillCounts()
{
    // A ban that ended before it arrived (a node cut off for longer) is not
    // held, but it is the client's history all the same.
    Engine b(escalating());
    std::vector<ListEntry> fromB;
    b.onAutomaticBan([&fromB](const ListEntry& e) { fromB.push_back(e); });
    ListEntry ended;
    ended.range = cidr("203.0.113.7/32");
    ended.source = ListSource::Automatic;
    ended.createdAt = T0 - 2 * MINUTE;
    ended.expiresAt = T0 - MINUTE;
    ended.banCount = 1;
    QVERIFY(!b.takeAutomaticBan(ended, T0));
    QVERIFY(b.automaticBans()->empty());
    QCOMPARE(label(decide(b, Request(), T0).action), label(Action::Allow));
    const Flood f = floodUntilBanned(b, Request(), T0 + SECOND);
    QVERIFY(f.bannedAt >= 0);
    QCOMPARE(fromB.size(), std::size_t(1));
    QCOMPARE(fromB[0].banCount, 2u);
    QCOMPARE(fromB[0].expiresAt, f.bannedAt + 2 * MINUTE);
}

void TestEscalation::aCooldownFromAnotherNodeHolds()
{
    // POST /comments cools down for 30 s (the default rules). A success on
    // a is handed to its hook; b, told of it, refuses the same user.
    Engine a(escalating());
    Engine b(escalating());
    std::vector<SharedCooldown> started;
    a.onCooldownStarted([&started](const SharedCooldown& c) { started.push_back(c); });
    const Request post = Request().to("POST", "/comments").header("X-User-Id", "u1");
    QCOMPARE(label(decide(a, post, T0).action), label(Action::Allow));
    reportSuccess(a, post, T0);
    QCOMPARE(started.size(), std::size_t(1));
    QCOMPARE(started[0].until, T0 + 30 * SECOND);
    QCOMPARE(a.cooldowns(T0).size(), std::size_t(1));
    QCOMPARE(a.cooldowns(T0)[0].key, started[0].key);

    QVERIFY(b.takeCooldown(started[0]));
    Decision d = decide(b, Request(post).from("198.51.100.9"), T0 + SECOND);  // the user, from another address
    QCOMPARE(label(d.reason), label(Reason::Cooldown));
    QCOMPARE(d.retryAfterMs, 29 * SECOND);
    QCOMPARE(label(decide(b, Request().to("POST", "/comments").header("X-User-Id", "u2"), T0 + SECOND).action), label(Action::Allow));
    // An earlier end from elsewhere does not shorten it.
    QVERIFY(b.takeCooldown(SharedCooldown{started[0].key, T0 + 2 * SECOND}));
    QCOMPARE(label(decide(b, post, T0 + 5 * SECOND).reason), label(Reason::Cooldown));
    // Ended: the same action passes, and it is no longer listed.
    QCOMPARE(label(decide(b, post, T0 + 30 * SECOND).action), label(Action::Allow));
    QVERIFY(b.cooldowns(T0 + 30 * SECOND).empty());
    // Dropped (the cluster does not hold it): gone at once.
    QVERIFY(b.takeCooldown(SharedCooldown{started[0].key, T0 + HOUR}));
    QVERIFY(b.dropCooldown(started[0].key));
    QVERIFY(!b.dropCooldown(started[0].key));
    QCOMPARE(label(decide(b, post, T0 + 31 * SECOND).action), label(Action::Allow));
    // Not a key: refused, nothing held.
    QVERIFY(!b.takeCooldown(SharedCooldown{"u123", T0 + HOUR}));
    QVERIFY(!b.takeCooldown(SharedCooldown{"x" + started[0].key.substr(1), T0 + HOUR}));
    QVERIFY(b.cooldowns(T0 + 31 * SECOND).empty());
}

QTEST_APPLESS_MAIN(TestEscalation)
#include "test_escalation.moc"
