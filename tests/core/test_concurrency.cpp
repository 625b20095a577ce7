// SPDX-License-Identifier: GPL-3.0-or-later
// Many listener threads deciding at once: a level never admits more than its
// limit, no decision is lost from the counters, and configuration, lists and
// snapshots may change or be read while traffic flows; a list edited entry
// by entry and folded in the background never answers wrong for a client
// the edits do not touch.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

EngineConfig oneLevel(Algorithm algorithm, bool escalation)
{
    EngineConfig c = defaultConfig();
    ThrottleRule r;
    r.name = "api";
    r.levels = {level(1000, HOUR, algorithm)};
    c.rules = {r};
    c.escalation.enabled = escalation;
    return c;
}

} // namespace

class TestConcurrency : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void oneClientManyThreads_data();
    void oneClientManyThreads();
    void distinctKeysTwoThreads();
    void editsAndSnapshotsDuringTraffic();
    void listEditsAndCompactionsDuringTraffic();
};

void TestConcurrency::oneClientManyThreads_data()
{
    QTest::addColumn<int>("algorithm");
    QTest::addColumn<bool>("escalation");

    QTest::newRow("fixed window") << int(Algorithm::FixedWindow) << false;
    QTest::newRow("sliding window") << int(Algorithm::SlidingWindow) << false;
    QTest::newRow("lockout") << int(Algorithm::Lockout) << false;
    // Escalation bans the client while other threads are still deciding.
    QTest::newRow("fixed window, escalation on") << int(Algorithm::FixedWindow) << true;
}

void TestConcurrency::oneClientManyThreads()
{
    QFETCH(int, algorithm);
    QFETCH(bool, escalation);

    Engine engine(oneLevel(Algorithm(algorithm), escalation));
    constexpr int THREADS = 4;
    constexpr int CALLS = 10'000;
    std::array<std::array<int, ActionCount>, THREADS> byThread{};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; ++t) {
        threads.emplace_back([&, t] {
            const Facts facts(Request().from("203.0.113.7"));
            ready.fetch_add(1);
            while (ready.load() < THREADS)
                std::this_thread::yield();  // start together, to contend on the key
            for (int i = 0; i < CALLS; ++i)
                ++byThread[std::size_t(t)][std::size_t(engine.decide(facts.get(), T0).action)];
        });
    }
    for (auto& th : threads)
        th.join();

    std::array<int, ActionCount> total{};
    for (const auto& counts : byThread)
        for (std::size_t a = 0; a < ActionCount; ++a)
            total[a] += counts[a];
    QCOMPARE(total[std::size_t(Action::Allow)], 1000);
    QCOMPARE(total[std::size_t(Action::Allow)] + total[std::size_t(Action::Throttle)] + total[std::size_t(Action::Block)],
             THREADS * CALLS);
    if (!escalation)
        QCOMPARE(total[std::size_t(Action::Throttle)], THREADS * CALLS - 1000);

    const EngineCounters c = engine.counters(T0);
    for (std::size_t a = 0; a < ActionCount; ++a)
        QCOMPARE(c.decisions[a], std::uint64_t(total[a]));
    const auto seconds = engine.perSecond(T0, 1);
    QCOMPARE(seconds.size(), std::size_t(1));
    QCOMPARE(seconds[0].total(), std::uint64_t(THREADS * CALLS));
}

void TestConcurrency::distinctKeysTwoThreads()
{
    Engine engine;
    constexpr int PER_THREAD = 20'000;
    std::array<int, 2> allowed{};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < PER_THREAD; ++i) {
                // Thread 0 in 10.0.0.0/16, thread 1 in 10.1.0.0/16: 40,000 distinct clients.
                const std::uint32_t a = 0x0A000000u | (std::uint32_t(t) << 16) | std::uint32_t(i);
                const Facts facts(Request().from(IpAddress::fromV4(a).toString()));
                if (engine.decide(facts.get(), T0 + i / 10).action == Action::Allow)
                    ++allowed[std::size_t(t)];
            }
        });
    }
    for (auto& th : threads)
        th.join();

    QCOMPARE(allowed[0] + allowed[1], 2 * PER_THREAD);
    const EngineCounters c = engine.counters(T0 + PER_THREAD);
    std::uint64_t decisions = 0;
    for (auto n : c.decisions)
        decisions += n;
    QCOMPARE(decisions, std::uint64_t(2 * PER_THREAD));
    QCOMPARE(c.decisions[std::size_t(Action::Allow)], std::uint64_t(2 * PER_THREAD));
    QCOMPARE(c.trackedKeys, std::uint64_t(2 * PER_THREAD));
    QCOMPARE(c.evictions, std::uint64_t(0));
}

void TestConcurrency::editsAndSnapshotsDuringTraffic()
{
    // Not a proof of thread safety (run under TSan for that), but every
    // decision must be accounted for while the operator edits and the
    // console reads.
    Engine engine;
    constexpr int CALLS = 20'000;
    std::atomic<bool> done{false};
    std::atomic<int> decided{0};

    std::thread traffic([&] {
        for (int i = 0; i < CALLS; ++i) {
            const Facts facts(Request().from("10.2." + std::to_string((i / 7) % 256) + "." + std::to_string(i % 7)));
            engine.decide(facts.get(), T0 + i);
            decided.fetch_add(1, std::memory_order_relaxed);
        }
        done.store(true);
    });
    std::thread editor([&] {
        int round = 0;
        while (!done.load()) {
            EngineConfig cfg = defaultConfig();
            cfg.rules[0].levels[0].limit = 6 + std::uint32_t(round % 2);
            engine.setConfig(cfg);
            engine.setList(ListKind::Blocklist, makeList({listEntry("10.2.0.0/24", "edit", T0 + round)}));
            engine.setList(ListKind::Safelist, makeList({listEntry("10.2.1.0/24", "edit")}));
            ++round;
        }
    });
    std::thread reader([&] {
        while (!done.load()) {
            const Millis now = T0 + decided.load(std::memory_order_relaxed);
            (void)engine.topClients(10, now);
            (void)engine.liveBuckets(3, now);
            (void)engine.client(ip("10.2.3.1"), now);
            (void)engine.perSecond(now, 60);
            (void)engine.counters(now);
            engine.purge(now);
        }
    });
    traffic.join();
    editor.join();
    reader.join();

    const EngineCounters c = engine.counters(T0 + CALLS);
    std::uint64_t decisions = 0;
    for (auto n : c.decisions)
        decisions += n;
    QCOMPARE(decisions, std::uint64_t(CALLS));
}

void TestConcurrency::listEditsAndCompactionsDuringTraffic()
{
    // A blocklist of 2,000 /32s and a /16, a safelist /32 inside the /16.
    // While a thread decides for clients the edits never touch, another
    // edits the blocklist one entry at a time (adds, removals of base
    // entries, TTLs) past the point where the engine folds the edits in the
    // background, and folds them itself now and then: every decision for
    // the untouched clients is the one the lists give them throughout.
    // Escalation is off: the blocklist is the operator's alone.
    EngineConfig config = defaultConfig();
    config.escalation.enabled = false;
    Engine engine(config);
    std::vector<ListEntry> base;
    for (int i = 0; i < 2000; ++i)
        base.push_back(listEntry("10.3." + std::to_string(i / 250) + "." + std::to_string(i % 250), "base"));
    base.push_back(listEntry("10.9.0.0/16", "base /16"));
    engine.setList(ListKind::Blocklist, makeList(std::move(base)));
    engine.setList(ListKind::Safelist, makeList({listEntry("10.9.1.1", "safe")}));

    constexpr int CALLS = 30'000;
    constexpr int EDITS = 3'000;
    std::atomic<bool> editing{true};
    std::atomic<int> wrong{0};
    std::thread traffic([&] {
        const Facts blocked(Request().from("10.3.0.5"));   // a base /32 no edit touches
        const Facts covered(Request().from("10.9.7.7"));   // inside the base /16
        const Facts safe(Request().from("10.9.1.1"));      // safelisted inside it
        const Facts clean(Request().from("192.0.2.55"));   // on no list
        for (int i = 0; i < CALLS || editing.load(); ++i) {
            const Millis now = T0 + i / 64;
            if (engine.decide(blocked.get(), now).action != Action::Block || engine.decide(covered.get(), now).action != Action::Block
                || engine.decide(safe.get(), now).reason != Reason::Safelisted || engine.decide(clean.get(), now).reason == Reason::Blocklisted)
                wrong.fetch_add(1);
        }
    });
    for (int i = 0; i < EDITS; ++i) {
        // Each edit: a new /32 in 10.4/16 (half of them ending at T0 + 500),
        // and every third a base /32 of 10.3.4.0 on taken off.
        std::vector<ListEntry> puts{listEntry("10.4." + std::to_string(i / 250) + "." + std::to_string(i % 250), "edit",
                                              i % 2 ? NeverExpires : T0 + 500)};
        std::vector<Cidr> removals;
        if (i % 3 == 0 && i / 3 < 1000)
            removals.push_back(cidr("10.3." + std::to_string(4 + i / 3 / 250) + "." + std::to_string(i / 3 % 250)));
        engine.editList(ListKind::Blocklist, puts, removals);
        if (i % 1000 == 999)
            engine.compactLists();
    }
    editing.store(false);
    traffic.join();
    QCOMPARE(wrong.load(), 0);

    // The background folds without being asked: wait (bounded) for it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (engine.list(ListKind::Blocklist)->wantsCompaction() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    QVERIFY(!engine.list(ListKind::Blocklist)->wantsCompaction());

    const auto list = engine.list(ListKind::Blocklist);
    QCOMPARE(list->size(), std::size_t(2001 + EDITS - 1000));
    QCOMPARE(list->activeCount(T0 + 500), std::size_t(2001 + EDITS / 2 - 1000));
    QVERIFY(!list->find(cidr("10.3.4.0/32")));
    QVERIFY(list->find(cidr("10.3.3.249/32")));
    COMPARE_ACTION(decide(engine, Request().from("10.4.0.1"), T0 + 500), Action::Block);
    COMPARE_ACTION(decide(engine, Request().from("10.4.0.0"), T0 + 499), Action::Block);
    QVERIFY(decide(engine, Request().from("10.4.0.0"), T0 + 500).reason != Reason::Blocklisted);  // its TTL ended
    // The order an operator reads: the base as built, less what was taken
    // off, then the edits in the order they were made.
    const std::vector<ListEntry> active = engine.lists().active(ListKind::Blocklist, T0);
    QCOMPARE(active.size(), list->size());
    QCOMPARE(qs(active[999].range.toString()), QStringLiteral("10.3.3.249/32"));
    QCOMPARE(qs(active[1000].range.toString()), QStringLiteral("10.9.0.0/16"));
    QCOMPARE(qs(active[1001].range.toString()), QStringLiteral("10.4.0.0/32"));
    QCOMPARE(qs(active.back().range.toString()), QStringLiteral("10.4.11.249/32"));
}

QTEST_APPLESS_MAIN(TestConcurrency)
#include "test_concurrency.moc"
