// SPDX-License-Identifier: GPL-3.0-or-later
// Bounded memory: tracked keys are capped with least-recently-used eviction,
// idle keys expire once their last bucket has left the longest window, and
// list entries never count as tracked keys.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"
#include "core/Tuning.h"
#include "core/Window.h"

#include <algorithm>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

// A small capacity keeps the key table in one shard, so LRU order is exact.
EngineConfig smallTable()
{
    EngineConfig c = defaultConfig();
    c.settings.maxTrackedKeys = 100;
    return c;
}

std::string client(int n)
{
    return "10.0." + std::to_string(n / 256) + "." + std::to_string(n % 256);
}

// How long a key on the default rules is kept after its last request: the
// longest keepMs of its levels (and at least the 60 s live view).
Millis defaultKeepMs()
{
    Millis keep = Tuning::liveWindowMs;
    const EngineConfig config = defaultConfig();  // the loop below must not outlive it
    for (const Level& l : config.rules[0].levels)
        keep = std::max(keep, LevelSpec::compile(l, "").keepMs());
    return keep;
}

} // namespace

class TestCapacity : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void capacityEvictsLeastRecentlyUsed();
    void touchingAKeyKeepsIt();
    void evictedListedClientIsStillListed();
    void idleKeyExpires();
    void idleKeysAllExpire();
    void laterRequestExtendsTheKey();
    void snapshotsSeeEveryTrackedKey();
    void listEntriesAreNotTrackedKeys();
};

void TestCapacity::capacityEvictsLeastRecentlyUsed()
{
    Engine engine(smallTable());
    for (int n = 0; n < 150; ++n)
        QCOMPARE(label(decide(engine, Request().from(client(n)), T0 + n).action), label(Action::Allow));

    const EngineCounters c = engine.counters(T0 + 150);
    QCOMPARE(c.capacity, std::size_t(100));
    QCOMPARE(c.trackedKeys, std::uint64_t(100));
    QCOMPARE(c.evictions, std::uint64_t(50));
    QCOMPARE(c.expirations, std::uint64_t(0));

    // The 50 oldest are gone, the 100 most recent are there.
    QVERIFY(!engine.client(ip(client(0)), T0 + 150).has_value());
    QVERIFY(!engine.client(ip(client(49)), T0 + 150).has_value());
    QVERIFY(engine.client(ip(client(50)), T0 + 150).has_value());
    QVERIFY(engine.client(ip(client(149)), T0 + 150).has_value());
    QCOMPARE(engine.client(ip(client(149)), T0 + 150)->summary.last60s, 1u);

    // An evicted client starts over: its first request again has 5 left.
    const Decision d = decide(engine, Request().from(client(0)), T0 + 200);
    QCOMPARE(d.remaining, 5u);
    QCOMPARE(engine.counters(T0 + 200).evictions, std::uint64_t(51));
}

void TestCapacity::touchingAKeyKeepsIt()
{
    Engine engine(smallTable());
    for (int n = 0; n < 100; ++n)
        decide(engine, Request().from(client(n)), T0 + n);
    QCOMPARE(engine.counters(T0 + 100).evictions, std::uint64_t(0));

    decide(engine, Request().from(client(0)), T0 + 100);  // client 0 is now the most recent
    decide(engine, Request().from(client(100)), T0 + 101);
    QCOMPARE(engine.counters(T0 + 101).evictions, std::uint64_t(1));
    QVERIFY(engine.client(ip(client(0)), T0 + 101).has_value());
    QVERIFY(!engine.client(ip(client(1)), T0 + 101).has_value());  // the least recently used went
    QCOMPARE(engine.client(ip(client(0)), T0 + 101)->summary.last60s, 2u);
}

void TestCapacity::evictedListedClientIsStillListed()
{
    Engine engine(smallTable());
    for (int n = 0; n < 150; ++n)
        decide(engine, Request().from(client(n)), T0 + n);
    engine.setList(ListKind::Blocklist, makeList({listEntry(client(0) + "/32", "scraper")}));

    const auto detail = engine.client(ip(client(0)), T0 + 150);
    QVERIFY(detail.has_value());  // not tracked any more, but on a list
    QCOMPARE(label(detail->summary.state), label(ClientState::Blocked));
    QVERIFY(detail->listKind.has_value());
    QCOMPARE(label(*detail->listKind), label(ListKind::Blocklist));
    QCOMPARE(detail->summary.last60s, 0u);
    QCOMPARE(label(decide(engine, Request().from(client(0)), T0 + 151).action), label(Action::Block));
}

void TestCapacity::idleKeyExpires()
{
    // Sliding 600/30m: 10 buckets of 3 min, kept buckets * width + width = 33 min.
    const Millis keep = defaultKeepMs();
    QCOMPARE(keep, Millis(33 * MINUTE));

    Engine engine;
    decide(engine, Request(), T0);
    QCOMPARE(engine.counters(T0).trackedKeys, std::uint64_t(1));

    engine.purge(T0 + keep - 1);
    QCOMPARE(engine.counters(T0 + keep - 1).trackedKeys, std::uint64_t(1));
    QVERIFY(engine.client(ip("203.0.113.7"), T0 + keep - 1).has_value());

    engine.purge(T0 + keep);
    const EngineCounters c = engine.counters(T0 + keep);
    QCOMPARE(c.trackedKeys, std::uint64_t(0));
    QCOMPARE(c.expirations, std::uint64_t(1));
    QCOMPARE(c.evictions, std::uint64_t(0));
    QVERIFY(!engine.client(ip("203.0.113.7"), T0 + keep).has_value());
}

void TestCapacity::idleKeysAllExpire()
{
    // Ten keys in one shard, a millisecond apart: each expires keepMs after its
    // own request, and purge finds every one of them.
    const Millis keep = defaultKeepMs();
    Engine engine(smallTable());
    for (int n = 0; n < 10; ++n)
        decide(engine, Request().from(client(n)), T0 + n);
    QCOMPARE(engine.counters(T0 + 10).trackedKeys, std::uint64_t(10));

    engine.purge(T0 + 4 + keep);  // keys 0..4 are over
    QCOMPARE(engine.counters(T0 + 4 + keep).trackedKeys, std::uint64_t(5));
    QVERIFY(!engine.client(ip(client(0)), T0 + 4 + keep).has_value());
    QVERIFY(engine.client(ip(client(5)), T0 + 4 + keep).has_value());

    engine.purge(T0 + 9 + keep);
    const EngineCounters c = engine.counters(T0 + 9 + keep);
    QCOMPARE(c.trackedKeys, std::uint64_t(0));
    QCOMPARE(c.expirations, std::uint64_t(10));
}

void TestCapacity::snapshotsSeeEveryTrackedKey()
{
    // One shard holding ten keys: the console's views must list all ten.
    Engine engine(smallTable());
    for (int n = 0; n < 10; ++n)
        for (int i = 0; i <= n; ++i)
            decide(engine, Request().from(client(n)), T0 + i);  // client n sends n + 1
    QCOMPARE(engine.counters(T0 + 10).trackedKeys, std::uint64_t(10));

    const auto top = engine.topClients(20, T0 + 10);
    QCOMPARE(top.size(), std::size_t(10));
    QVERIFY(top.front().key == ip(client(9)));
    QCOMPARE(top.front().last60s, 6u + 4u);  // 10 requests (the 7th..10th throttled, still seen)
    QVERIFY(top.back().key == ip(client(0)));

    const LiveBuckets live = engine.liveBuckets(20, T0 + 10);
    QCOMPARE(live.keys, std::size_t(10));
    QCOMPARE(live.buckets.back().total, std::uint64_t(55));  // 1 + 2 + ... + 10
    QCOMPARE(live.buckets.back().top.size(), std::size_t(10));
}

void TestCapacity::laterRequestExtendsTheKey()
{
    const Millis keep = defaultKeepMs();
    Engine engine;
    decide(engine, Request(), T0);
    decide(engine, Request(), T0 + 10 * MINUTE);
    engine.purge(T0 + 10 * MINUTE + keep - 1);
    QCOMPARE(engine.counters(T0 + 10 * MINUTE + keep - 1).trackedKeys, std::uint64_t(1));
    engine.purge(T0 + 10 * MINUTE + keep);
    QCOMPARE(engine.counters(T0 + 10 * MINUTE + keep).trackedKeys, std::uint64_t(0));
}

void TestCapacity::listEntriesAreNotTrackedKeys()
{
    Engine engine(smallTable());
    std::vector<ListEntry> entries;
    for (int n = 0; n < 1000; ++n)
        entries.push_back(listEntry("172.16." + std::to_string(n / 256) + "." + std::to_string(n % 256), "imported"));
    engine.setList(ListKind::Blocklist, makeList(std::move(entries)));

    EngineCounters c = engine.counters(T0);
    QCOMPARE(c.trackedKeys, std::uint64_t(0));
    QCOMPARE(c.blocklistEntries, std::size_t(1000));

    // A full table of other clients evicts nothing from the list.
    for (int n = 0; n < 300; ++n)
        decide(engine, Request().from(client(n)), T0 + n);
    c = engine.counters(T0 + 300);
    QCOMPARE(c.trackedKeys, std::uint64_t(100));
    QCOMPARE(c.blocklistEntries, std::size_t(1000));
    QCOMPARE(label(decide(engine, Request().from("172.16.0.1"), T0 + 301).action), label(Action::Block));
    QCOMPARE(label(decide(engine, Request().from("172.16.3.231"), T0 + 302).action), label(Action::Block));
}

QTEST_APPLESS_MAIN(TestCapacity)
#include "test_capacity.moc"
