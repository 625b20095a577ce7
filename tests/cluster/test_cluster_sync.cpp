// SPDX-License-Identifier: GPL-3.0-or-later
// The sync's queue of changes made on a node while Redis is out of reach
// (ClusterSync::publish): at most ClusterSync::maxPendingChanges wait; what
// has ended by itself goes first, then the oldest, and every change dropped
// is counted where the operator sees it: ClusterStatus, GET /api/v1/cluster
// and /metrics.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "api/AdminApi.h"
#include "cluster/ClusterSync.h"
#include "core/Engine.h"
#endif

using namespace Floodgate;

namespace {

constexpr Core::Millis T0 = 1'700'000'000'000;

// A node whose Redis is nowhere (nothing listens on port 1): never joined,
// never started, so everything it publishes waits.
Cluster::ClusterSync::Options cutOff()
{
    Cluster::ClusterSync::Options o;
    o.url = *Cluster::RedisUrl::parse("redis://127.0.0.1:1");
    o.node = "alone";
    return o;
}

// A collection "c" whose items end at the time their value says (0: never).
Cluster::Sharing endingAtTheirValue()
{
    Cluster::Sharing s;
    s.collections = {"c"};
    s.read = [](const std::string&) { return Cluster::SharedItems{}; };
    s.apply = [](const Cluster::SharedChange&) {};
    s.expiresAt = [](const std::string&, const std::string& value) { return Core::Millis(std::stoll(value)); };
    return s;
}

Cluster::SharedChange put(std::size_t i, Core::Millis endsAt)
{
    return Cluster::SharedChange::put("c", "k" + std::to_string(i), std::to_string(endsAt), "test");
}

} // namespace

class TestClusterSync : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void droppedChangesAreCountedAndShown()
    {
        Core::Engine engine;
        Core::ManualClock clock(T0);
        Cluster::ClusterSync sync(engine, cutOff(), clock);
        sync.share(endingAtTheirValue());
        QCOMPARE(sync.status().droppedChanges, std::uint64_t(0));
        const std::string quiet = Api::clusterJson(&sync, engine).dump();
        QVERIFY2(quiet.find("\"dropped_changes\":0") != std::string::npos, quiet.c_str());

        // Changes that never end: the queue full, the oldest go, counted.
        const std::size_t max = Cluster::ClusterSync::maxPendingChanges;
        for (std::size_t i = 0; i < max + 7; ++i)
            sync.publish(put(i, 0));
        QCOMPARE(sync.status().droppedChanges, std::uint64_t(7));

        const std::string json = Api::clusterJson(&sync, engine).dump();
        QVERIFY2(json.find("\"dropped_changes\":7") != std::string::npos, json.c_str());
        const std::string metrics = Api::clusterMetrics(&sync, engine);
        QVERIFY2(metrics.find("# HELP floodgate_cluster_dropped_changes_total ") != std::string::npos, metrics.c_str());
        QVERIFY2(metrics.find("# TYPE floodgate_cluster_dropped_changes_total counter\n") != std::string::npos, metrics.c_str());
        QVERIFY2(metrics.find("\nfloodgate_cluster_dropped_changes_total 7\n") != std::string::npos, metrics.c_str());
    }

    void whatHasEndedGoesBeforeAnythingIsDropped()
    {
        Core::Engine engine;
        Core::ManualClock clock(T0);
        Cluster::ClusterSync sync(engine, cutOff(), clock);
        sync.share(endingAtTheirValue());
        // A long outage: the queue full of cooldowns, half of them ending
        // within a second, and an operator's change that never ends.
        const std::size_t max = Cluster::ClusterSync::maxPendingChanges;
        sync.publish(put(0, 0));
        for (std::size_t i = 1; i < max; ++i)
            sync.publish(put(i, i % 2 ? T0 + 1000 : T0 + 60'000));
        clock.advance(2000);
        // Full: the ended ones make room, nothing is dropped.
        for (std::size_t i = 0; i < 1000; ++i)
            sync.publish(put(max + i, 0));
        QCOMPARE(sync.status().droppedChanges, std::uint64_t(0));
        // It holds 1 + 49,999 changes not ended + 1,000 = 51,000. Full again
        // with nothing ended: the 1,000 over go, oldest first, counted.
        for (std::size_t i = 0; i < max / 2; ++i)
            sync.publish(put(2 * max + i, 0));
        QCOMPARE(sync.status().droppedChanges, std::uint64_t(1000));
    }
};

QTEST_APPLESS_MAIN(TestClusterSync)
#include "test_cluster_sync.moc"
