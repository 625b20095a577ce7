// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide with the safelist and the blocklist (docs/INTERFACE.md): a
// safelisted client skips every throttle, a blocklisted one is refused
// without spending counters and before any exclusion, the longest prefix
// wins, IPv4-mapped clients match IPv4 entries, an entry ends at its TTL.
// A list edited entry by entry (Engine::editList) and folded
// (Engine::compactLists) decides the same. A list replaced while a deciding
// thread still used it is freed by purge() or the next publication, not by
// that thread's next decision. Time is injected.
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
    void editsApplyOnTheNextDecision();
    void compactionChangesNoDecision();
    void replacedListIsNotFreedByADecision();
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

void TestLists::editsApplyOnTheNextDecision()
{
    Engine engine;
    std::vector<ListEntry> block;
    for (int i = 0; i < 1000; ++i)
        block.push_back(listEntry("198.18." + std::to_string(i / 200) + "." + std::to_string(i % 200), "base"));
    block.push_back(listEntry("203.0.113.0/24", "base /24"));
    engine.setList(ListKind::Blocklist, makeList(std::move(block)));
    const auto before = engine.list(ListKind::Blocklist);

    // An entry added: the next decision blocks.
    engine.editList(ListKind::Blocklist, {listEntry("192.0.2.9", "added", T0 + 5000)}, {});
    Decision d = decide(engine, Request().from("192.0.2.9"), T0 + 4999);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(d.listExpiresAt, T0 + 5000);
    // Its TTL ends to the millisecond.
    d = decide(engine, Request().from("192.0.2.9"), T0 + 5000);
    COMPARE_ACTION(d, Action::Allow);
    // A base entry taken off: the next decision allows; the others still block.
    engine.editList(ListKind::Blocklist, {}, {cidr("198.18.0.7/32")});
    COMPARE_ACTION(decide(engine, Request().from("198.18.0.7"), T0), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("198.18.0.8"), T0), Action::Block);
    // A safelist /32 added inside the blocked /24 is the longer prefix.
    engine.editList(ListKind::Safelist, {listEntry("203.0.113.7", "partner")}, {});
    d = decide(engine, Request().from("203.0.113.7"), T0);
    QCOMPARE(label(d.reason), label(Reason::Safelisted));
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.8"), T0), Action::Block);
    // The /24 replaced with a shorter TTL: the replacement decides.
    engine.editList(ListKind::Blocklist, {listEntry("203.0.113.0/24", "replaced", T0 + 100)}, {});
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.8"), T0 + 99), Action::Block);
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.8"), T0 + 100), Action::Allow);

    // None of it touched the list published before, nor copied its entries.
    QCOMPARE(before->size(), std::size_t(1001));
    QVERIFY(before->find(cidr("198.18.0.7/32")));
    const auto after = engine.list(ListKind::Blocklist);
    QCOMPARE(after->size(), std::size_t(1001));
    QCOMPARE(after->pendingEdits(), std::size_t(3));
    QCOMPARE(&after->entries()[0] == &before->entries()[0], false);  // materialised on demand, apart
    QCOMPARE(engine.counters(T0).blocklistEntries, std::size_t(1001));
}

void TestLists::compactionChangesNoDecision()
{
    Engine engine;
    engine.setList(ListKind::Blocklist, makeList({listEntry("10.0.0.0/8", "wide"), listEntry("10.1.0.0/16", "narrow")}));
    engine.editList(ListKind::Blocklist, {listEntry("10.1.2.3", "host", T0 + 50)}, {cidr("10.1.0.0/16")});
    engine.editList(ListKind::Safelist, {listEntry("10.2.0.0/16", "partner")}, {});
    QVERIFY(engine.compactLists());
    QCOMPARE(engine.list(ListKind::Blocklist)->pendingEdits(), std::size_t(0));
    QCOMPARE(engine.list(ListKind::Safelist)->pendingEdits(), std::size_t(0));
    QVERIFY(!engine.compactLists());  // nothing left to fold
    Decision d = decide(engine, Request().from("10.1.2.3"), T0 + 49);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(d.listExpiresAt, T0 + 50);  // the /32
    d = decide(engine, Request().from("10.1.2.3"), T0 + 50);
    COMPARE_ACTION(d, Action::Block);
    QCOMPARE(d.listExpiresAt, NeverExpires);  // the /8: the /16 was taken off
    QCOMPARE(engine.client(ip("10.1.9.9"), T0)->listEntry->reason, std::string("wide"));
    QCOMPARE(label(decide(engine, Request().from("10.2.0.1"), T0).reason), label(Reason::Safelisted));
    const std::vector<ListEntry> active = engine.lists().active(ListKind::Blocklist, T0);
    QCOMPARE(active.size(), std::size_t(2));
    QCOMPARE(qs(active[0].reason), QStringLiteral("wide"));
    QCOMPARE(qs(active[1].reason), QStringLiteral("host"));
}

void TestLists::replacedListIsNotFreedByADecision()
{
    Engine engine;
    std::weak_ptr<const AddressList> first;
    {
        auto list = makeList({listEntry("203.0.113.7/32", "first", T0 + DAY)});
        first = list;
        engine.setList(ListKind::Blocklist, std::move(list));
    }
    COMPARE_ACTION(decide(engine, Request(), T0), Action::Block);  // this thread now uses the first list
    engine.setList(ListKind::Blocklist, makeList({}));
    QVERIFY(!first.expired());  // still this thread's
    COMPARE_ACTION(decide(engine, Request(), T0 + 1), Action::Allow);  // the thread moved on to the empty list...
    QVERIFY(!first.expired());                                         // ...and did not free the first
    engine.purge(T0 + 2);
    QVERIFY(first.expired());

    // The same with the next publication instead of purge().
    engine.setList(ListKind::Blocklist, makeList({listEntry("203.0.113.7/32", "second", T0 + DAY)}));
    COMPARE_ACTION(decide(engine, Request(), T0 + 3), Action::Block);
    std::weak_ptr<const AddressList> second = engine.list(ListKind::Blocklist);
    engine.setList(ListKind::Blocklist, makeList({}));
    COMPARE_ACTION(decide(engine, Request(), T0 + 4), Action::Allow);
    QVERIFY(!second.expired());
    engine.setList(ListKind::Safelist, makeList({}));
    QVERIFY(second.expired());
}

QTEST_APPLESS_MAIN(TestLists)
#include "test_lists.moc"
