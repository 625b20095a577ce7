// SPDX-License-Identifier: GPL-3.0-or-later
// The live records beside the key table (KeyTable.h, Tuning::liveRecordsFor):
// one per client seen lately, given in turn at the pool's hand, made as it
// first reaches them up to a bound, then taken back from the entry that had
// it longest; an entry whose record was taken or whose slot was reused has
// none. And what the engine shows of a client without one: no
// live history, the key as its address, its last request from its expiry,
// its counters untouched.
#include <QtTest>

#include "TestSupport.h"
#include "core/Engine.h"
#include "core/KeyTable.h"
#include "core/Tuning.h"

#include <memory>
#include <vector>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestLiveRecords : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void boundFollowsTheCapacity();
    void recordIsMadeOnceAndKept();
    void poolGrowsToItsBound();
    void fullPoolReclaimsInTurn();
    void reusedSlotHasNoRecord();
    void engineShowsAClientWithoutARecord();
};

namespace {

constexpr std::uint16_t STRIDE = 4;
constexpr std::uint32_t SIG = 7;
constexpr Millis KEEP_MS = 10 * MINUTE;  // longer than any test here: no entry expires

TableKey keyOf(std::uint32_t n)
{
    return TableKey{0, 0x0a000000u + n, 0, 0, 0};
}

// Counts one request of client n in its live record; returns the record's
// address (to tell records apart).
const LiveRecord* countIn(KeyTable& t, std::uint32_t n, Millis now)
{
    const LiveRecord* out = nullptr;
    t.with(keyOf(n), SIG, now, KEEP_MS, [&](KeyTable::Header&, std::uint32_t*, bool, KeyTable::Live& live) {
        LiveRecord& r = live.get();
        LiveRing::count(r.ring, now);
        out = &r;
    });
    return out;
}

// Client n's record as a reader sees it (null: none), and its last minute.
const LiveRecord* recordOf(const KeyTable& t, std::uint32_t n, Millis now, std::uint32_t* last60s = nullptr)
{
    const LiveRecord* out = nullptr;
    t.read(keyOf(n), now, [&](const KeyTable::Header&, const std::uint32_t*, const LiveRecord* r) {
        out = r;
        if (last60s)
            *last60s = r ? LiveRing::total(LiveRing::read(r->ring, now)) : 0;
    });
    return out;
}

// A table of 1,000 keys in one shard with 64 live records, `clients`
// of them counted at `now`.
std::unique_ptr<KeyTable> tableWith(std::uint32_t clients, Millis now)
{
    auto t = std::make_unique<KeyTable>(1000, STRIDE, 64);
    for (std::uint32_t n = 0; n < clients; ++n)
        countIn(*t, n, now);
    return t;
}

} // namespace

void TestLiveRecords::boundFollowsTheCapacity()
{
    // Small tables: one record for every key; large ones: one per eighth.
    QCOMPARE(Tuning::liveRecordsFor(100), std::size_t(100));
    QCOMPARE(Tuning::liveRecordsFor(10'000), std::size_t(4096));
    QCOMPARE(Tuning::liveRecordsFor(1'000'000), std::size_t(125'000));
    // A shard keeps its share in whole chunks, one at least.
    const KeyTable small(100, STRIDE, Tuning::liveRecordsFor(100));
    QCOMPARE(small.shardCount() * small.liveRecordsPerShard(), Tuning::liveRecordsPerChunk * 2);
    const KeyTable big(1'000'000, STRIDE, Tuning::liveRecordsFor(1'000'000));
    QVERIFY(big.shardCount() * big.liveRecordsPerShard() >= std::size_t(125'000));
    QVERIFY(big.shardCount() * big.liveRecordsPerShard() < std::size_t(125'000) + big.shardCount() * Tuning::liveRecordsPerChunk);
}

void TestLiveRecords::recordIsMadeOnceAndKept()
{
    KeyTable t(100, STRIDE, 64);
    QCOMPARE(t.liveRecordsHeld(), std::size_t(0));
    // An entry made without a record has none.
    t.with(keyOf(1), SIG, T0, KEEP_MS, [](KeyTable::Header&, std::uint32_t*, bool) {});
    QVERIFY(recordOf(t, 1, T0) == nullptr);
    const LiveRecord* first = countIn(t, 1, T0);
    QVERIFY(first);
    QCOMPARE(countIn(t, 1, T0 + 1), first);
    std::uint32_t last60s = 0;
    QCOMPARE(recordOf(t, 1, T0 + 1, &last60s), first);
    QCOMPARE(last60s, 2u);
    QCOMPARE(t.liveRecordsHeld(), std::size_t(1));
}

void TestLiveRecords::poolGrowsToItsBound()
{
    auto table = tableWith(10, T0);
    KeyTable& t = *table;
    QCOMPARE(t.liveRecordsHeld(), std::size_t(10));
    // A minute later the ten are quiet; the pool still grows in turn (a
    // record is given back only when the hand comes round to it).
    const Millis later = T0 + Tuning::liveWindowMs + Tuning::liveBucketMs;
    for (std::uint32_t n = 10; n < 64; ++n)
        countIn(t, n, later);
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    for (std::uint32_t n = 0; n < 64; ++n) {
        std::uint32_t last60s = 0;
        QVERIFY(recordOf(t, n, later, &last60s));
        QCOMPARE(last60s, n < 10 ? 0u : 1u);  // the first ten's minute has passed
    }
}

void TestLiveRecords::fullPoolReclaimsInTurn()
{
    auto table = tableWith(64, T0);
    KeyTable& t = *table;
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    // Full: the 65th client takes the record given longest ago (client 0's),
    // the 66th client 1's; the pool does not grow.
    const LiveRecord* zero = recordOf(t, 0, T0);
    const LiveRecord* one = recordOf(t, 1, T0);
    QCOMPARE(countIn(t, 64, T0 + 10), zero);
    QCOMPARE(countIn(t, 65, T0 + 10), one);
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    QVERIFY(recordOf(t, 0, T0 + 10) == nullptr);
    QVERIFY(recordOf(t, 1, T0 + 10) == nullptr);
    for (std::uint32_t n = 2; n < 66; ++n) {
        std::uint32_t last60s = 0;
        QVERIFY(recordOf(t, n, T0 + 10, &last60s));
        QCOMPARE(last60s, 1u);  // a reclaimed record starts empty
    }
    // Client 0 comes back: it takes the next in turn (client 2's), and its
    // live history starts again.
    QCOMPARE(countIn(t, 0, T0 + 20), recordOf(t, 2, T0));
    QVERIFY(recordOf(t, 2, T0 + 20) == nullptr);
    std::uint32_t last60s = 0;
    QVERIFY(recordOf(t, 0, T0 + 20, &last60s));
    QCOMPARE(last60s, 1u);
    // 65 clients in turn over 64 records: each request takes a record, so
    // the hand goes round about once per turn. After 17,000 turns (the lap
    // count wraps at 2^14) an entry whose record went round long ago still
    // has none, and the last 64 clients have theirs.
    const LiveRecord* zeros = recordOf(t, 0, T0 + 20);
    for (std::uint32_t turn = 0; turn < 17'000; ++turn)
        for (std::uint32_t n = 100; n < 165; ++n)
            countIn(t, n, T0 + 30);
    QVERIFY(recordOf(t, 0, T0 + 30) == nullptr);
    QVERIFY(zeros->owner != 1u);  // client 0's slot is the first: its record is another's now
    for (std::uint32_t n = 101; n < 165; ++n)
        QVERIFY(recordOf(t, n, T0 + 30));
    // Every key is still tracked: the table's capacity is not the pool's.
    QCOMPARE(t.size(), std::size_t(66 + 65));
}

void TestLiveRecords::reusedSlotHasNoRecord()
{
    KeyTable t(1, STRIDE, 64);  // one key at most
    QVERIFY(countIn(t, 1, T0));
    // Client 2 evicts client 1 and takes its slot: it starts without a record.
    t.with(keyOf(2), SIG, T0 + 1, KEEP_MS, [](KeyTable::Header&, std::uint32_t*, bool) {});
    QCOMPARE(t.size(), std::size_t(1));
    QVERIFY(recordOf(t, 2, T0 + 1) == nullptr);
    QVERIFY(countIn(t, 2, T0 + 2));
}

void TestLiveRecords::engineShowsAClientWithoutARecord()
{
    // 40,000 keys: 5,000 live records (8 shards of 640). 40,000 clients in
    // one second leave most without one.
    EngineConfig config = defaultConfig();
    config.settings.maxTrackedKeys = 40'000;
    Engine engine(config);
    RequestFacts f;
    f.method = "GET";
    f.path = "/";
    const auto address = [](std::uint32_t n) { return IpAddress::fromV4(0x0a000000u + n); };
    for (std::uint32_t n = 0; n < 40'000; ++n) {
        f.client = f.peer = address(n);
        const int times = n == 0 ? 3 : 1;
        for (int i = 0; i < times; ++i)
            engine.decide(f, T0 + Millis(n / 40));
    }
    const Millis now = T0 + 1000;
    QCOMPARE(engine.counters(now).trackedKeys, std::uint64_t(40'000));
    const auto first = engine.client(address(0), now);
    QVERIFY(first.has_value());
    const ClientSummary& s = first->summary;
    QCOMPARE(s.last60s, 0u);  // its record went to a later client
    for (const std::uint32_t b : s.live)
        QCOMPARE(b, 0u);
    QVERIFY(s.lastAddress == address(0));  // the key stands for the address
    QCOMPARE(s.lastSeen, T0);              // from the entry's expiry
    // Its counters are whole: three of the lockout level's six are spent.
    QCOMPARE(qs(s.bindingRule), QStringLiteral("ip-3s"));
    QCOMPARE(s.bindingUsed, 3u);
    // The last client has its record.
    const auto last = engine.client(address(39'999), now);
    QVERIFY(last.has_value());
    QCOMPARE(last->summary.last60s, 1u);
    QCOMPARE(last->summary.lastSeen, T0 + Millis(39'999 / 40));
    // The live view counts only the clients with a record, at most the bound.
    const LiveBuckets buckets = engine.liveBuckets(0, now);
    QVERIFY(buckets.keys > 0);
    QVERIFY(buckets.keys <= 5'120);
}

QTEST_APPLESS_MAIN(TestLiveRecords)
#include "test_live_records.moc"
