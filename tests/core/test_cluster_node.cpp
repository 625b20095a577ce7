// SPDX-License-Identifier: GPL-3.0-or-later
// One node of a cluster, on the engine alone (docs/CLUSTER.md): the error
// budget and the lease that bound what it admits before Redis acknowledges,
// the other nodes' counts it is given back, the reports it hands the sync,
// and what it enforces while Redis is out of reach. The acknowledgements
// here are what the report script answers; tests/cluster drives the same
// through a real Redis.
#include <QtTest>

#include "TestSupport.h"

#include <map>
#include <tuple>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

// One rule: `limit` per minute per address, sliding (6 buckets of 10 s).
EngineConfig perMinute(std::uint32_t limit)
{
    EngineConfig c = defaultConfig();
    c.rules.clear();
    ThrottleRule r;
    r.name = "ip";
    Level l = level(limit, MINUTE);
    l.bucketMs = 10 * SECOND;
    r.levels = {l};
    c.rules.push_back(r);
    c.bot.excludedPaths.clear();
    return c;
}

std::unique_ptr<Engine> node(EngineConfig c, std::uint32_t nodes = 2)
{
    auto e = std::make_unique<Engine>(std::move(c));
    e->enableCluster();
    e->setClusterState(ClusterState::Up, nodes);
    return e;
}

// Acknowledges every report as Redis would with no other node's counts,
// this grant (lasting `leaseMs`), and `reserved` held by other nodes'
// leases, the first of which lapses at `lapseAt`.
std::vector<SyncReport> ackAll(Engine& e, Millis now, std::uint32_t granted, std::uint32_t reserved = 0, Millis lapseAt = 0,
                               Millis leaseMs = Tuning::clusterLeaseMs)
{
    auto reports = e.takeReports(now, 1000, false);
    std::vector<SyncAck> acks;
    for (const SyncReport& r : reports) {
        SyncAck a;
        a.ok = true;
        a.granted = granted;
        a.reserved = reserved;
        a.reservedLapseAt = lapseAt;
        a.leaseMs = leaseMs;
        for (const SharedLevel& l : r.levels) {
            SharedLevel o = l;
            std::fill(o.counts.begin(), o.counts.end(), 0u);
            a.others.push_back(o);
        }
        acks.push_back(a);
    }
    e.applyAcks(reports, acks, now);
    return reports;
}

// Acknowledges `reports` as Redis answers a client far below its limits:
// `granted` more, for the report's quiet lease, no other node's counts.
void ackQuiet(Engine& e, const std::vector<SyncReport>& reports, Millis now, std::uint32_t granted)
{
    std::vector<SyncAck> acks;
    for (const SyncReport& r : reports) {
        SyncAck a;
        a.ok = true;
        a.granted = granted;
        a.leaseMs = r.quietLeaseMs;
        a.others = r.levels;
        for (SharedLevel& l : a.others)
            std::fill(l.counts.begin(), l.counts.end(), 0u);
        acks.push_back(std::move(a));
    }
    e.applyAcks(reports, acks, now);
}

} // namespace

class TestClusterNode : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aNewClientGetsItsErrorBudgetThenWaits()
    {
        // 1,000 / min over 2 nodes: E = max(1, 1000 * 1% / 2) = 5.
        auto e = node(perMinute(1000));
        for (int i = 0; i < 5; ++i) {
            const Decision d = decide(*e, Request(), T0 + i);
            QVERIFY2(!d.waitForCluster && d.action == Action::Allow, describe(d));
        }
        const Decision w = decide(*e, Request(), T0 + 5);
        QVERIFY(w.waitForCluster);
        QCOMPARE(e->clusterCounters().waits, std::uint64_t(1));
        // Nothing was counted for the request that waits.
        const auto reports = e->takeReports(T0 + 6, 100, false);
        QCOMPARE(reports.size(), std::size_t(1));
        QCOMPARE(reports[0].admitted, 5u);
        QCOMPARE(std::accumulate(reports[0].levels[0].counts.begin(), reports[0].levels[0].counts.end(), 0u), 5u);
        QCOMPARE(reports[0].held, 0u);
    }

    void aLeaseLetsItAdmitWithoutAskingAgain()
    {
        auto e = node(perMinute(1000));
        for (int i = 0; i < 5; ++i)
            QVERIFY(!decide(*e, Request(), T0 + i).waitForCluster);
        ackAll(*e, T0 + 10, 200);  // the lease: 200 more, plus the budget of 5
        for (int i = 0; i < 205; ++i) {
            const Decision d = decide(*e, Request(), T0 + 20 + i);
            QVERIFY2(!d.waitForCluster, QByteArray::number(i));
        }
        QVERIFY(decide(*e, Request(), T0 + 300).waitForCluster);
    }

    // Another node spends its lease without reporting: the room it holds is
    // not counted on here (the bound), but it is not shown as used either.
    void theOtherNodesLeasesAreNotCountedOnNorShownAsUsed()
    {
        auto e = node(perMinute(10));  // E = 1
        QVERIFY(!decide(*e, Request(), T0).waitForCluster);
        ackAll(*e, T0 + 1, 5, 6, T0 + 500);  // a lease of 5 here; the other node holds 6 until T0 + 0.5 s
        for (int i = 0; i < 3; ++i) {
            const Decision d = decide(*e, Request(), T0 + 2 + i);
            QVERIFY2(d.action == Action::Allow && !d.waitForCluster, describe(d));
            QCOMPARE(d.remaining, std::uint32_t(10 - 2 - i));  // what was admitted, exactly
        }
        // 4 admitted + 6 held elsewhere = 10: refused, until the lease lapses.
        QVERIFY(e->takeReports(T0 + 5, 100, false).empty());
        const Decision refused = decide(*e, Request(), T0 + 5);
        QCOMPARE(refused.action, Action::Throttle);
        QCOMPARE(refused.retryAfterMs, Millis(500 - 5));
        QVERIFY2(e->takeReports(T0 + 5, 100, false).empty(), "the node's knowledge is current: nothing to ask");
        // Once it has lapsed, what the node knows of it is old: the refusal
        // asks Redis at once, so the next request is decided on its answer.
        // (Its own lease, until T0 + 1.5 s, would not have made it report yet.)
        const Decision stale = decide(*e, Request(), T0 + 600);
        QCOMPARE(stale.action, Action::Throttle);
        QCOMPARE(stale.retryAfterMs, SECOND);
        const auto asked = e->takeReports(T0 + 600, 100, false);
        QCOMPARE(asked.size(), std::size_t(1));
        QCOMPARE(asked[0].admitted, 3u);
    }

    // A client far below its limits costs one report per quiet lease
    // (Tuning::clusterQuietReportMs plus its part of clusterQuietSpreadMs),
    // not one per request or per short lease.
    void aQuietClientReportsRarely()
    {
        // 100,000 / min over 2 nodes: E = 500.
        auto e = node(perMinute(100'000));
        for (int i = 0; i < 100; ++i)
            QVERIFY(!decide(*e, Request(), T0 + i).waitForCluster);
        QVERIFY2(e->takeReports(T0 + Tuning::clusterQuietReportMs - 1, 100, false).empty(), "well within its budget: no report yet");
        const Millis first = T0 + Tuning::clusterQuietReportMs + Tuning::clusterQuietSpreadMs;
        auto reports = e->takeReports(first, 100, false);
        QCOMPARE(reports.size(), std::size_t(1));
        QCOMPARE(reports[0].admitted, 100u);
        // The report names the entry's quiet lease, which Redis grants if it
        // finds the client far below its limits.
        const Millis quiet = reports[0].quietLeaseMs;
        QCOMPARE(quiet, quietLeaseMs(reports[0].key));
        std::vector<SyncAck> acks(1);
        acks[0].ok = true;
        acks[0].granted = 20'000;
        acks[0].leaseMs = quiet;
        acks[0].others = reports[0].levels;
        for (SharedLevel& l : acks[0].others)
            std::fill(l.counts.begin(), l.counts.end(), 0u);
        e->applyAcks(reports, acks, first + 1);
        // Half the budget or more admitted under the lease (a lease hardly
        // used is given up instead: aQuietLeaseHardlyUsedIsGivenUp).
        for (int i = 0; i < 300; ++i)
            QVERIFY(!decide(*e, Request(), first + 2 + i).waitForCluster);
        // The node ends a lease a margin early and reports a margin before that.
        const Millis renew = first + quiet - 2 * Tuning::clusterLeaseMarginMs;
        QVERIFY(e->takeReports(renew - 1, 100, false).empty());
        reports = e->takeReports(renew, 100, false);
        QCOMPARE(reports.size(), std::size_t(1));
        acks[0].others = reports[0].levels;
        e->applyAcks(reports, acks, renew + 1);
        // Back after a quiet minute (the lease long gone): a new client
        // again, which reports one quiet lease after it is back.
        const Millis back = renew + MINUTE;
        for (int i = 0; i < 10; ++i)
            QVERIFY(!decide(*e, Request(), back).waitForCluster);
        QVERIFY(e->takeReports(back + quiet - 1, 100, false).empty());
        QCOMPARE(e->takeReports(back + quiet, 100, false).size(), std::size_t(1));

        // Another new client that spends half its budget reports at once.
        auto busy = node(perMinute(100'000));
        for (int i = 0; i < 250; ++i)
            decide(*busy, Request(), T0 + i);
        QVERIFY(busy->takeReports(T0 + 300, 100, false).empty());
        decide(*busy, Request(), T0 + 300);
        QCOMPARE(busy->takeReports(T0 + 301, 100, false).size(), std::size_t(1));
    }

    // Many quiet clients first seen at the same instant (a node's start, a
    // benchmark's first second) do not report together, neither the first
    // time nor when their quiet leases come due: each entry's quiet lease
    // has its own length within the range, so their reports spread over it
    // and a steady calm load costs Redis a steady trickle.
    void quietClientsFirstSeenTogetherReportSpreadOverTheRange()
    {
        auto e = node(perMinute(100'000));  // E = 500: 2 requests a second each stay far within it
        constexpr int clients = 1000;
        constexpr Millis step = 100;
        constexpr Millis Q = Tuning::clusterQuietReportMs;
        constexpr Millis S = Tuning::clusterQuietSpreadMs;
        constexpr Millis margin = Tuning::clusterLeaseMarginMs;
        auto address = [](int c) { return "10.9." + std::to_string(c / 256) + "." + std::to_string(c % 256); };
        // Every client makes a request every 500 ms from T0 on; every 100 ms
        // the sync takes the reports due and Redis answers each as it
        // answers a client far below its limits: with the report's quiet
        // lease. Per client, the times its reports came due.
        std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint32_t>, std::vector<Millis>> due;
        int biggestStep = 0;
        for (Millis now = T0; now < T0 + 3 * (Q + S); now += step) {
            if ((now - T0) % 500 == 0)
                for (int c = 0; c < clients; ++c)
                    QVERIFY(!decide(*e, Request().from(address(c)), now).waitForCluster);
            const auto reports = e->takeReports(now, 100'000, false);
            std::vector<SyncAck> acks;
            for (const SyncReport& r : reports) {
                QCOMPARE(r.quietLeaseMs, quietLeaseMs(r.key));
                QVERIFY(r.quietLeaseMs >= Q && r.quietLeaseMs < Q + S);
                due[{r.key.a, r.key.b, r.key.extra, r.key.space}].push_back(now - T0);
                SyncAck a;
                a.ok = true;
                a.granted = 1000;
                a.leaseMs = r.quietLeaseMs;
                a.others = r.levels;
                for (SharedLevel& l : a.others)
                    std::fill(l.counts.begin(), l.counts.end(), 0u);
                acks.push_back(std::move(a));
            }
            e->applyAcks(reports, acks, now);
            biggestStep = std::max(biggestStep, int(reports.size()));
        }
        QCOMPARE(int(due.size()), clients);
        // Per second after T0: the first reports, and the second ones.
        // (A report came due at most a step before the sync took it.)
        std::map<Millis, int> first, renewal;
        for (const auto& [key, times] : due) {
            QVERIFY(times.size() >= 2);
            // A quiet lease after it was first seen; then, the lease (built
            // when the first report was taken) hardly used (2 requests a
            // second, under half of E), it is given up a margin before it
            // ends, less the margin, and the client reports a quiet lease
            // after that (aQuietLeaseHardlyUsedIsGivenUp): 3q - 1 s after it
            // was first seen. Each wait ends at the next step.
            const Millis q = quietLeaseMs(TableKey{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), 0});
            QVERIFY(times[0] >= q && times[0] < q + step);
            const Millis next = times[0] + 2 * q - 2 * margin;
            QVERIFY2(times[1] >= next && times[1] < next + 2 * step, qPrintable(QStringLiteral("%1 %2").arg(times[1]).arg(next)));
            ++first[q / SECOND];
            ++renewal[next / SECOND];
        }
        // The first reports spread over the range's 10 seconds, about a
        // tenth in each (each within half of that); the second ones over
        // three times that, none with more than a tenth; never more than
        // 5 % in one 100 ms step (about 1 % on average, with the later
        // rounds overlapping). Without the spread, all 1,000 came due in one step.
        const int seconds = int(S / SECOND);
        QCOMPARE(int(first.size()), seconds);
        for (const auto& [second, n] : first) {
            QVERIFY2(second >= Q / SECOND && second < (Q + S) / SECOND, qPrintable(QString::number(second)));
            QVERIFY2(n >= clients / seconds / 2 && n <= clients / seconds * 3 / 2, qPrintable(QStringLiteral("%1 s: %2").arg(second).arg(n)));
        }
        QVERIFY2(int(renewal.size()) >= 2 * seconds, qPrintable(QString::number(renewal.size())));
        for (const auto& [second, n] : renewal)
            QVERIFY2(second >= 3 * Q / SECOND - 1 && n <= clients / seconds, qPrintable(QStringLiteral("%1 s: %2").arg(second).arg(n)));
        QVERIFY2(biggestStep <= clients * 5 / 100, qPrintable(QString::number(biggestStep)));
    }

    void theOtherNodesCountsRefuseAtTheSharedLimit()
    {
        auto e = node(perMinute(10));  // E = 1
        QVERIFY(!decide(*e, Request(), T0).waitForCluster);
        auto reports = e->takeReports(T0 + 1, 100, false);
        QCOMPARE(reports.size(), std::size_t(1));
        // The other node admitted 8 in the newest bucket; no lease is left.
        SyncAck a;
        a.ok = true;
        SharedLevel o = reports[0].levels[0];
        std::fill(o.counts.begin(), o.counts.end(), 0u);
        o.counts.back() = 8;
        a.others.push_back(o);
        e->applyAcks(reports, {a}, T0 + 2);
        // 1 own + 8 theirs: one more fits (the budget of 1), then the shared limit refuses.
        const Decision d = decide(*e, Request(), T0 + 3);
        QVERIFY2(d.action == Action::Allow && d.count == 10 && d.remaining == 0, describe(d));
        const Decision r = decide(*e, Request(), T0 + 4);
        QVERIFY2(r.action == Action::Throttle && r.count == 10 && !r.waitForCluster, describe(r));
        // Retry-After is the shared window's: the first bucket holding counts
        // leaves the 60 s window at T0 + 60 s.
        QCOMPARE(r.retryAfterMs, 60 * SECOND - 4);
    }

    void aClientsSummaryAndLevelsSayHereAndInTheCluster()
    {
        // What the console shows for a client: the binding level's count in
        // the cluster (what the limit is judged on) and this node's share.
        auto e = node(perMinute(30));  // E = 1
        QVERIFY(!decide(*e, Request(), T0).waitForCluster);
        auto reports = e->takeReports(T0 + 1, 100, false);
        QCOMPARE(reports.size(), std::size_t(1));
        SyncAck a;
        a.ok = true;
        a.granted = 10;
        SharedLevel o = reports[0].levels[0];
        std::fill(o.counts.begin(), o.counts.end(), 0u);
        o.counts.back() = 5;  // the other node's requests
        a.others.push_back(o);
        e->applyAcks(reports, {a}, T0 + 2);
        for (int i = 0; i < 3; ++i)
            QVERIFY(!decide(*e, Request(), T0 + 3 + i).waitForCluster);
        const auto top = e->topClients(10, T0 + 10);
        QCOMPARE(top.size(), std::size_t(1));
        QCOMPARE(top[0].bindingUsed, 9u);      // 4 here + 5 on the other node
        QCOMPARE(top[0].bindingUsedHere, 4u);
        QCOMPARE(top[0].bindingLimit, 30u);
        const auto detail = e->client(*IpAddress::parse("203.0.113.7"), T0 + 10);
        QVERIFY(detail);
        QCOMPARE(detail->summary.bindingUsedHere, 4u);
        QCOMPARE(detail->levels.size(), std::size_t(1));
        QCOMPARE(detail->levels[0].used, 9u);
        QCOMPARE(detail->levels[0].usedHere, 4u);
        // The buckets, bucket by bucket: every node's and this node's.
        auto sum = [](const std::vector<BucketView>& b) {
            return std::accumulate(b.begin(), b.end(), 0u, [](std::uint32_t n, const BucketView& v) { return n + v.count; });
        };
        QCOMPARE(detail->levels[0].buckets.size(), detail->levels[0].bucketsHere.size());
        QCOMPARE(sum(detail->levels[0].buckets), 9u);
        QCOMPARE(sum(detail->levels[0].bucketsHere), 4u);

        // A single node: both counts are the same.
        Engine alone(perMinute(30));
        for (int i = 0; i < 3; ++i)
            decide(alone, Request(), T0 + i);
        const auto single = alone.topClients(10, T0 + 10);
        QCOMPARE(single.size(), std::size_t(1));
        QCOMPARE(single[0].bindingUsed, 3u);
        QCOMPARE(single[0].bindingUsedHere, 3u);
    }

    void aWaitedRequestIsAdmittedAndCountedAsAnOverdraft()
    {
        auto e = node(perMinute(10));
        QVERIFY(!decide(*e, Request(), T0).waitForCluster);
        QVERIFY(decide(*e, Request(), T0 + 1).waitForCluster);
        Request r;
        const Facts f(r);
        RequestFacts waited = f.get();
        waited.clusterWaited = true;
        const Decision d = e->decide(waited, T0 + 2);
        QVERIFY2(!d.waitForCluster && d.action == Action::Allow && d.count == 2, describe(d));
        QCOMPARE(e->clusterCounters().overdrafts, std::uint64_t(1));
    }

    // A quiet lease that the client has hardly used (less than half the
    // error budget admitted since the report that got it) is given up when
    // it comes due, not renewed: no report then, and from then on only what
    // is left of the budget, as for a client back after its lease lapsed,
    // so what Redis has not seen of this node stays at most E. The client
    // reports once half of that is spent, or a quiet lease later.
    void aQuietLeaseHardlyUsedIsGivenUp()
    {
        // 100,000 / min over 2 nodes: E = 500.
        constexpr Millis margin = Tuning::clusterLeaseMarginMs;
        const Millis first = T0 + Tuning::clusterQuietReportMs + Tuning::clusterQuietSpreadMs;
        for (const bool busy : {false, true}) {
            auto e = node(perMinute(100'000));
            for (int i = 0; i < 10; ++i)
                QVERIFY(!decide(*e, Request(), T0 + i).waitForCluster);
            auto reports = e->takeReports(first, 100, false);
            QCOMPARE(reports.size(), std::size_t(1));
            const Millis quiet = reports[0].quietLeaseMs;
            ackQuiet(*e, reports, first, 20'000);
            for (int i = 0; i < 249; ++i)
                QVERIFY(!decide(*e, Request(), first + 1 + i).waitForCluster);
            const Millis due = first + quiet - 2 * margin;
            QVERIFY2(e->takeReports(due, 100, false).empty(), "given up, not renewed");
            QCOMPARE(e->clusterCounters().leasesGivenUp, std::uint64_t(1));
            QCOMPARE(e->clusterCounters().queued, std::size_t(1));  // its counts are still to report
            if (!busy) {
                // Quiet still: its counts go a quiet lease later.
                QVERIFY(!decide(*e, Request(), due + 1).waitForCluster);
                QVERIFY(e->takeReports(due + quiet - 1, 100, false).empty());
                reports = e->takeReports(due + quiet, 100, false);
                QCOMPARE(reports.size(), std::size_t(1));
                QCOMPARE(reports[0].admitted, 250u);
                QCOMPARE(reports[0].held, 0u);
                continue;
            }
            // 500 - 249 = 251 left of the budget, and no more: Redis has
            // seen none of the 500, so the next request waits.
            for (int i = 0; i < 251; ++i)
                QVERIFY2(!decide(*e, Request(), due + 1).waitForCluster, QByteArray::number(i));
            QVERIFY(decide(*e, Request(), due + 1).waitForCluster);
            // Half of what was left was spent long before: it reports at once.
            reports = e->takeReports(due + 2, 100, false);
            QCOMPARE(reports.size(), std::size_t(1));
            QCOMPARE(reports[0].admitted, 500u);
            QCOMPARE(reports[0].held, 0u);
        }
    }

    // The entries a node holds back are mostly its calm clients' next
    // reports, each waiting for its lease's end (docs/CLUSTER.md, "The
    // reports a node holds back"). One of them that turns into a flood is
    // reported as soon as its lease is spent, ahead of all of them, even
    // when they come due at that moment.
    void aQuietClientThatFloodsReportsAheadOfTheScheduledOnes()
    {
        auto e = node(perMinute(100'000));  // E = 500
        constexpr int clients = 1000;
        auto address = [](int c) { return "10.9." + std::to_string(c / 256) + "." + std::to_string(c % 256); };
        for (int c = 0; c < clients; ++c)
            QVERIFY(!decide(*e, Request().from(address(c)), T0).waitForCluster);
        const Millis first = T0 + Tuning::clusterQuietReportMs + Tuning::clusterQuietSpreadMs;
        auto reports = e->takeReports(first, 100'000, false);
        QCOMPARE(int(reports.size()), clients);
        for (SyncReport& r : reports)
            r.quietLeaseMs = Tuning::clusterQuietReportMs;  // one length for all: they come due together
        ackQuiet(*e, reports, first, 1000);
        // 300 requests each (over half the budget: they renew), then every
        // one of them waits for its renewal.
        for (int c = 0; c < clients; ++c)
            for (int i = 0; i < 300; ++i)
                QVERIFY(!decide(*e, Request().from(address(c)), first + 1).waitForCluster);
        QVERIFY(e->takeReports(first + 2, 100'000, false).empty());
        QCOMPARE(e->clusterCounters().scheduled, std::size_t(clients));
        // At the moment all of them come due, client 7 has spent its lease
        // (1,000) and half its budget: it is in the next batch, first.
        const Millis due = first + Tuning::clusterQuietReportMs - 2 * Tuning::clusterLeaseMarginMs;
        for (int i = 0; i < 1000; ++i)
            QVERIFY(!decide(*e, Request().from(address(7)), due).waitForCluster);
        reports = e->takeReports(due, 1, false);
        QCOMPARE(reports.size(), std::size_t(1));
        QCOMPARE(reports[0].admitted, 1300u);
        // The scheduled ones follow.
        QCOMPARE(int(e->takeReports(due, 100'000, false).size()), clients - 1);
    }

    void aLapsedLeaseLeavesOnlyTheBudget()
    {
        auto e = node(perMinute(1000));
        for (int i = 0; i < 5; ++i)
            decide(*e, Request(), T0 + i);
        ackAll(*e, T0 + 10, 200);
        QVERIFY(!decide(*e, Request(), T0 + 20).waitForCluster);
        // The lease ends (Tuning::clusterLeaseMs after its report, less the
        // margin); one request was admitted since the report, so 4 of the
        // budget of 5 are left.
        const Millis later = T0 + 10 + Tuning::clusterLeaseMs;
        for (int i = 0; i < 4; ++i)
            QVERIFY2(!decide(*e, Request(), later + i).waitForCluster, QByteArray::number(i));
        QVERIFY(decide(*e, Request(), later + 4).waitForCluster);
    }

    void reportsAreAbsoluteAndAnUndeliveredOneIsNotLost()
    {
        auto e = node(perMinute(1000));
        for (int i = 0; i < 3; ++i)
            decide(*e, Request(), T0 + i);
        auto first = e->takeReports(T0 + 5, 100, true);
        QCOMPARE(first.size(), std::size_t(1));
        QCOMPARE(first[0].admitted, 3u);
        // Redis did not answer: the next report carries the same counts again.
        e->applyAcks(first, {SyncAck{}}, T0 + 6);
        decide(*e, Request(), T0 + 7);
        auto second = e->takeReports(T0 + 8, 100, true);
        QCOMPARE(second.size(), std::size_t(1));
        QCOMPARE(second[0].admitted, 4u);
        QCOMPARE(std::accumulate(second[0].levels[0].counts.begin(), second[0].levels[0].counts.end(), 0u), 4u);
        QCOMPARE(second[0].entry, first[0].entry);
    }

    void entriesAreNamedTheSameOnEveryNode()
    {
        // Two engines in one process stand for two nodes: the same client
        // under the same rules is the same entry in Redis.
        auto a = node(perMinute(1000));
        auto b = node(perMinute(1000));
        decide(*a, Request(), T0);
        decide(*b, Request(), T0);
        const auto ra = a->takeReports(T0 + 1, 10, true);
        const auto rb = b->takeReports(T0 + 1, 10, true);
        QCOMPARE(ra.size(), std::size_t(1));
        QCOMPARE(rb.size(), std::size_t(1));
        QCOMPARE(ra[0].entry, rb[0].entry);
        // Another shape of levels is another entry (another limit is not:
        // counts survive a change of limit, as they do on one node).
        EngineConfig other = perMinute(1000);
        other.rules[0].levels[0].periodMs = 2 * MINUTE;
        auto d = node(other);
        decide(*d, Request(), T0);
        QVERIFY(d->takeReports(T0 + 1, 10, true)[0].entry != ra[0].entry);
    }

    void whileRedisIsDownEachNodeEnforcesItsShare()
    {
        auto e = node(perMinute(10), 2);
        e->setClusterState(ClusterState::Down, 2);
        for (int i = 0; i < 5; ++i) {
            const Decision d = decide(*e, Request(), T0 + i);
            QVERIFY2(d.action == Action::Allow && !d.waitForCluster, describe(d));
        }
        const Decision r = decide(*e, Request(), T0 + 5);
        QVERIFY2(r.action == Action::Throttle && r.limit == 10, describe(r));
        // What it admitted meanwhile is reported when Redis is back.
        e->setClusterState(ClusterState::Up, 2);
        const auto reports = e->takeReports(T0 + 6, 10, true);
        QCOMPARE(reports.size(), std::size_t(1));
        QCOMPARE(std::accumulate(reports[0].levels[0].counts.begin(), reports[0].levels[0].counts.end(), 0u), 5u);
    }

    void openAndClosedWhenDown()
    {
        EngineConfig open = perMinute(10);
        open.settings.whenClusterDown = WhenClusterDown::Open;
        auto o = node(open, 3);
        o->setClusterState(ClusterState::Down, 3);
        for (int i = 0; i < 10; ++i)
            QCOMPARE(label(decide(*o, Request(), T0 + i).action), label(Action::Allow));
        QCOMPARE(label(decide(*o, Request(), T0 + 10).action), label(Action::Throttle));

        EngineConfig closed = perMinute(10);
        closed.settings.whenClusterDown = WhenClusterDown::Closed;
        auto c = node(closed, 3);
        c->setClusterState(ClusterState::Down, 3);
        const Decision d = decide(*c, Request(), T0);
        QVERIFY2(d.action == Action::Throttle && d.reason == Reason::ClusterDown && d.retryAfterSeconds() == 1, describe(d));
        // Excluded and safelisted requests are not counted, so not refused either.
        closed.bot.excludedPaths = {"*.css"};
        QVERIFY(c->setConfig(closed) == std::nullopt);
        QCOMPARE(label(decide(*c, Request().at("/site.css"), T0).action), label(Action::Allow));
    }

    void aCustomerWaitsAsOneAndGivesBackWhatItReserved()
    {
        // A Pro customer (100 / min, 5,000 / h) on 2 nodes: E = max(1, 100 * 1% / 2) = 1.
        EngineConfig cfg = defaultConfig();
        cfg.customers.push_back(Customer{"acme", "Acme", "Pro", {}, {}});
        auto e = node(cfg);
        const Request r = Request().customer("acme");
        QVERIFY(!decide(*e, r, T0).waitForCluster);
        QVERIFY(decide(*e, r, T0 + 1).waitForCluster);
        const auto reports = e->takeReports(T0 + 2, 10, false);
        QCOMPARE(reports.size(), std::size_t(1));
        QCOMPARE(reports[0].entry.substr(0, 2), std::string("u:"));
        QCOMPARE(reports[0].levels.size(), std::size_t(2));
        QCOMPARE(reports[0].admitted, 1u);  // the request that waited gave its reservation back
    }
};

QTEST_APPLESS_MAIN(TestClusterNode)
#include "test_cluster_node.moc"
