// SPDX-License-Identifier: MIT
// Engine::decide with the safelist and the blocklist (docs/INTERFACE.md): a
// safelisted client skips every throttle, a blocklisted one is refused
// without spending counters and before any exclusion, the longest prefix
// wins, IPv4-mapped clients match IPv4 entries, an entry ends at its TTL.
// Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestLists : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void safelistSkipsEveryThrottle();
    void blocklistRefusesWithoutSpendingCounters();
    void blocklistComesBeforeExclusions();
    void mappedClientMatchesIpv4Entry();
    void listsLongestPrefixWins_data();
    void listsLongestPrefixWins();
    void listEntryExpiresExactlyAtItsTtl();
};

// ---- lists -----------------------------------------------------------------------

void TestLists::safelistSkipsEveryThrottle()
{
    Engine engine;
    engine.setList(ListKind::Safelist, makeList({listEntry("203.0.113.7/32", "monitoring", T0 + DAY)}));
    QCOMPARE(engine.list(ListKind::Safelist)->size(), std::size_t(1));
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, Request(), T0 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Safelisted));
        QCOMPARE(d.listExpiresAt, T0 + DAY);
        QCOMPARE(d.retryAfterMs, Millis(0));
    }
    // Nothing was counted while safelisted.
    engine.setList(ListKind::Safelist, makeList({}));
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + 200 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Counted));
    }
    COMPARE_ACTION(decide(engine, Request(), T0 + 300), Action::Throttle);
}

void TestLists::blocklistRefusesWithoutSpendingCounters()
{
    Engine engine;
    const Millis expires = T0 + 7 * DAY;
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "scraper", expires)}));
    QCOMPARE(engine.list(ListKind::Blocklist)->size(), std::size_t(1));
    for (int i = 0; i < 10; ++i) {
        const Millis now = T0 + i * 100;
        const Decision d = decide(engine, Request(), now);
        COMPARE_ACTION(d, Action::Block);
        QCOMPARE(label(d.reason), label(Reason::Blocklisted));
        QCOMPARE(ruleOf(d), QByteArray("blocklist"));
        QCOMPARE(d.listExpiresAt, expires);
        QCOMPARE(d.retryAfterMs, expires - now);  // the request passes once the entry ends
        QVERIFY(d.refused());
        QVERIFY(!d.autoBanned);
    }
    // Another address is not affected.
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.8"), T0 + 1000), Action::Allow);

    engine.setList(ListKind::Blocklist, makeList({}));
    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request(), T0 + 1000 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, Request(), T0 + 1100), Action::Throttle);
}

void TestLists::blocklistComesBeforeExclusions()
{
    EngineConfig cfg = defaultConfig();
    cfg.bot.safeUserAgents = {"Googlebot"};
    Engine engine(cfg);
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "scraper")}));

    Decision d = decide(engine, Request().at("/style.css"), T0);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(label(d.reason), label(Reason::Blocklisted));
    QCOMPARE(d.listExpiresAt, NeverExpires);
    d = decide(engine, Request().agent("Googlebot/2.1"), T0);
    COMPARE_ACTION(d, Action::Block);
}

void TestLists::mappedClientMatchesIpv4Entry()
{
    Engine engine;
    engine.setList(ListKind::Blocklist, makeList({listEntry("198.51.100.0/24", "bad neighbourhood")}));
    Decision d = decide(engine, Request().from("::ffff:198.51.100.9"), T0);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(label(d.reason), label(Reason::Blocklisted));
    d = decide(engine, Request().from("198.51.100.200"), T0);
    COMPARE_ACTION(d, Action::Block);
    d = decide(engine, Request().from("198.51.101.1"), T0);
    COMPARE_ACTION(d, Action::Allow);
}

void TestLists::listsLongestPrefixWins_data()
{
    QTest::addColumn<QByteArray>("safe");
    QTest::addColumn<QByteArray>("block");
    QTest::addColumn<QByteArray>("client");
    QTest::addColumn<int>("action");
    QTest::addColumn<int>("reason");

    const int allow = int(Action::Allow), block = int(Action::Block);
    const int safelisted = int(Reason::Safelisted), blocklisted = int(Reason::Blocklisted);
    QTest::newRow("safe /32 inside blocked /24") << QByteArray("198.51.100.9/32") << QByteArray("198.51.100.0/24")
                                                 << QByteArray("198.51.100.9") << allow << safelisted;
    QTest::newRow("its neighbour stays blocked") << QByteArray("198.51.100.9/32") << QByteArray("198.51.100.0/24")
                                                 << QByteArray("198.51.100.10") << block << blocklisted;
    QTest::newRow("blocked /32 inside safe /24") << QByteArray("198.51.100.0/24") << QByteArray("198.51.100.9/32")
                                                 << QByteArray("198.51.100.9") << block << blocklisted;
    QTest::newRow("same range on both: blocklist") << QByteArray("198.51.100.0/24") << QByteArray("198.51.100.0/24")
                                                   << QByteArray("198.51.100.9") << block << blocklisted;
    QTest::newRow("v6 safe /64 inside blocked /48") << QByteArray("2001:db8:1:2::/64") << QByteArray("2001:db8:1::/48")
                                                    << QByteArray("2001:db8:1:2::5") << allow << safelisted;
    QTest::newRow("v6 elsewhere in the /48") << QByteArray("2001:db8:1:2::/64") << QByteArray("2001:db8:1::/48")
                                             << QByteArray("2001:db8:1:3::5") << block << blocklisted;
}

void TestLists::listsLongestPrefixWins()
{
    QFETCH(QByteArray, safe);
    QFETCH(QByteArray, block);
    QFETCH(QByteArray, client);
    QFETCH(int, action);
    QFETCH(int, reason);

    Engine engine;
    engine.setList(ListKind::Safelist, makeList({listEntry(safe.toStdString(), "safe")}));
    engine.setList(ListKind::Blocklist, makeList({listEntry(block.toStdString(), "block")}));
    const Decision d = decide(engine, Request().from(client.toStdString()), T0);
    COMPARE_ACTION(d, Action(action));
    QCOMPARE(label(d.reason), label(Reason(reason)));
}

void TestLists::listEntryExpiresExactlyAtItsTtl()
{
    Engine engine;
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "scraper", T0 + 5000)}));
    Decision d = decide(engine, Request(), T0 + 4999);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(d.retryAfterMs, Millis(1));
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(1));
    QCOMPARE(d.listExpiresAt, T0 + 5000);
    d = decide(engine, Request(), T0 + 5000);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(label(d.reason), label(Reason::Counted));

    engine.setList(ListKind::Safelist, makeList({listEntry("198.51.100.9/32", "partner", T0 + 5000)}));
    d = decide(engine, Request().from("198.51.100.9"), T0 + 4999);
    QCOMPARE(label(d.reason), label(Reason::Safelisted));
    d = decide(engine, Request().from("198.51.100.9"), T0 + 5000);
    QCOMPARE(label(d.reason), label(Reason::Counted));
}

QTEST_APPLESS_MAIN(TestLists)
#include "test_lists.moc"
