// SPDX-License-Identifier: GPL-3.0-or-later
// The report script's two ways to a lease (engine/cluster/Scripts.cpp,
// docs/CLUSTER.md "What a report costs Redis") against a real redis-server:
// the fields' totals decide for a client far below its limits, the aligned
// buckets for any other, and the totals never grant more than the buckets
// would; a field written by a node built before the summary (none) is
// read in full. And, with no Redis, how a node aligns the other nodes' fields that
// the script sends back (Cluster::decodeAck).
#include <QtTest>

#ifndef Q_MOC_RUN
#include "cluster/RedisConnection.h"
#include "cluster/RedisUrl.h"
#include "cluster/Scripts.h"
#include "cluster/SyncProtocol.h"
#include "RedisServer.h"
#endif

#include <string>
#include <vector>

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

constexpr Core::Millis NOW = 1'700'000'000'000;

// One sliding level of 1,000 per minute in 10 s buckets (6), this node's
// newest bucket `stamp` holding `count`.
Core::SyncReport slidingReport(const std::string& entry, std::int64_t stamp, std::uint32_t count, std::uint32_t held = 0)
{
    Core::SyncReport r;
    r.entry = entry;
    r.held = held;
    r.quietLeaseMs = 15'000;
    r.levels = {Core::SharedLevel{Core::Algorithm::SlidingWindow, 1000, Core::MINUTE, 10 * Core::SECOND, stamp, {0, 0, 0, 0, 0, count}, 0}};
    return r;
}

std::string str(std::int64_t v)
{
    return std::to_string(v);
}

} // namespace

class TestReportScript : public QObject {
    Q_OBJECT

private:
    RedisServer m_redis;
    std::unique_ptr<Cluster::RedisConnection> m_conn;
    std::unique_ptr<Cluster::Script> m_script;

    // `node` reports `r` as the sync does (two nodes counting); the answer read.
    std::optional<Core::SyncAck> report(const std::string& node, const Core::SyncReport& r)
    {
        std::vector<Cluster::Reply> replies;
        const auto o = m_conn->pipeline({Cluster::Command::eval(*m_script, {"fg:e:" + r.entry},
                                                                {node, "2", str(Core::Tuning::clusterLeaseMs),
                                                                 str(Core::Tuning::clusterQuietReportMs + Core::Tuning::clusterQuietSpreadMs),
                                                                 Cluster::encodeReport(r)})},
                                        replies);
        if (!o.ok() || replies.size() != 1 || replies[0].elements.size() != 1) {
            qWarning("%s %s", o.message.c_str(), replies.empty() ? "" : replies[0].text.c_str());
            return std::nullopt;
        }
        return Cluster::decodeAck(replies[0].elements[0].text, r);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(m_redis.start(), qPrintable(m_redis.error()));
        std::string why;
        const auto url = Cluster::RedisUrl::parse(m_redis.nodeUrl(), &why);
        QVERIFY2(url, why.c_str());
        m_conn = std::make_unique<Cluster::RedisConnection>(*url, std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
        QVERIFY(m_conn->connect().ok());
        m_script = std::make_unique<Cluster::Script>(std::string(Cluster::Scripts::report));
    }

    // b's 300 requests sit in a bucket that has left a's window: everything
    // stored (476 with b's lease) is not far below the limit, the buckets
    // aligned to a's window (176) are. The script reads the buckets and
    // grants a's share of what they leave, with the quiet lease.
    void theBucketsDecideWhenTheTotalsAreNotFarBelow()
    {
        const auto b = report("b", slidingReport("c:stale", 95, 300));
        QVERIFY(b);
        QCOMPARE(b->granted, std::uint32_t((1000 - 300) / 4));  // 175, far: (300 + 175) * 2 <= 1000
        QCOMPARE(b->leaseMs, Core::Millis(15'000));
        const auto a = report("a", slidingReport("c:stale", 106, 1));
        QVERIFY(a);
        QCOMPARE(a->reserved, std::uint32_t(175));
        QCOMPARE(a->granted, std::uint32_t((1000 - 175 - 1) / 4));  // 206: b's bucket is out of the window
        QCOMPARE(a->leaseMs, Core::Millis(15'000));
        QCOMPARE(a->others.size(), std::size_t(1));
        for (const std::uint32_t c : a->others[0].counts)
            QCOMPARE(c, 0u);
    }

    // Far below the limit even by everything stored: the totals decide,
    // and their lease is at most what the aligned buckets would give.
    void theTotalsDecideFarBelowAndNeverGrantMore()
    {
        const auto b = report("b", slidingReport("c:far", 95, 10));
        QVERIFY(b);
        QCOMPARE(b->granted, std::uint32_t((1000 - 10) / 4));  // 247
        const auto a = report("a", slidingReport("c:far", 106, 1));
        QVERIFY(a);
        const std::uint32_t byTotals = (1000 - 247 - 1 - 10) / 4;  // 185
        const std::uint32_t byBuckets = (1000 - 247 - 1) / 4;      // 188
        QCOMPARE(a->granted, byTotals);
        QVERIFY(a->granted <= byBuckets);
        QCOMPARE(a->leaseMs, Core::Millis(15'000));
        // Near the limit by the totals and by the buckets: the short lease.
        const auto near = report("b", slidingReport("c:far", 106, 400, 247));
        QVERIFY(near);
        QCOMPARE(near->leaseMs, Core::Tuning::clusterLeaseMs);
        QCOMPARE(near->others[0].counts[5], 1u);  // a's request, aligned by the node
    }

    // A field as a node built before the summary wrote it: read in full.
    void aFieldWithoutASummaryIsReadInFull()
    {
        Cluster::ServerTime t;
        QVERIFY(m_conn->time(t).ok());
        const std::int64_t now = t.serverMicros / 1000;
        const std::string old = str(now) + ";" + str(now + 15'000) + ";100;95,0,10,6,6,10";
        QCOMPARE(m_redis.command({"HSET", "fg:e:c:old", "b", old}).integer, 1LL);
        const auto a = report("a", slidingReport("c:old", 98, 1));
        QVERIFY(a);
        QCOMPARE(a->reserved, std::uint32_t(100));
        QCOMPARE(a->granted, std::uint32_t((1000 - 100 - 1 - 10) / 4));  // 222
        QCOMPARE(a->leaseMs, Core::Millis(15'000));
        const std::vector<std::uint32_t> aligned{0, 0, 10, 0, 0, 0};  // b's newest bucket (95) is 3 older than a's (98)
        QCOMPARE(a->others[0].counts, aligned);
        // What a writes ends with the summary, after the levels, where such
        // a node never reads (it reads the levels after the lease).
        const std::string mine = m_redis.command({"HGET", "fg:e:c:old", "a"}).text;
        QVERIFY2(mine.ends_with(";98,0,1,6,6,1;=1,0"), mine.c_str());
    }

    // The answer's fields, aligned by the node as the script did before:
    // a sliding window's buckets by their stamps (one too old dropped, one
    // newer than the report's counted as its newest), a fixed window of
    // the same index, a lockout window still open and its latest end.
    void theNodeAlignsTheOtherNodesFields()
    {
        Core::SyncReport r;
        r.levels = {Core::SharedLevel{Core::Algorithm::SlidingWindow, 100, Core::MINUTE, 10 * Core::SECOND, 100, {0, 0, 0, 0, 0, 1}, 0},
                    Core::SharedLevel{Core::Algorithm::FixedWindow, 100, Core::MINUTE, 0, 50, {1}, 0},
                    Core::SharedLevel{Core::Algorithm::Lockout, 6, 3 * Core::SECOND, 0, NOW - 1000, {1}, 0}};
        const std::string one = str(NOW) + ";" + str(NOW + 2000) + ";5;98,0,5,6,1,1,4,3,6,1;50,0,4,1;" + str(NOW - 2000) + "," +
                                str(NOW + 500) + ",2,1;=5,4,2," + str(NOW + 500);
        const std::string two = str(NOW) + ";" + str(NOW + 2000) + ";0;101,0,2,6,6,2;49,0,9,1;" + str(NOW - 4000) + ",0,3,1";
        const auto ack = Cluster::decodeAck("3,7,2000," + str(NOW + 1500) + "," + str(NOW) + "|" + one + "|" + two, r);
        QVERIFY(ack);
        QCOMPARE(ack->granted, 3u);
        QCOMPARE(ack->reserved, 7u);
        QCOMPARE(ack->leaseMs, Core::Millis(2000));
        QCOMPARE(ack->reservedLapseAt, NOW + 1500);
        QCOMPARE(ack->others.size(), std::size_t(3));
        const std::vector<std::uint32_t> sliding{0, 3, 0, 1, 0, 2};
        QCOMPARE(ack->others[0].counts, sliding);
        QCOMPARE(ack->others[0].stamp, std::int64_t(100));
        QCOMPARE(ack->others[1].counts, std::vector<std::uint32_t>{4});
        QCOMPARE(ack->others[2].counts, std::vector<std::uint32_t>{2});
        QCOMPARE(ack->others[2].stamp, NOW - 2000);
        QCOMPARE(ack->others[2].lockedUntil, NOW + 500);
        // No other node: nothing counted.
        const auto alone = Cluster::decodeAck("0,0,15000,0," + str(NOW), r);
        QVERIFY(alone);
        QCOMPARE(alone->others[0].counts, std::vector<std::uint32_t>(6, 0));
        // What does not read is not an answer.
        QVERIFY(!Cluster::decodeAck("3,7,2000,0", r));                           // the answer of the script before the summary
        QVERIFY(!Cluster::decodeAck("3,7,2000,0," + str(NOW) + "|1;2;3;x", r));  // a level that is not numbers
        QVERIFY(!Cluster::decodeAck("3,7,2000,0," + str(NOW) + "|12", r));       // no level at all
    }
};

QTEST_GUILESS_MAIN(TestReportScript)
#include "test_report_script.moc"
