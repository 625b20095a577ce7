// SPDX-License-Identifier: GPL-3.0-or-later
// The live records beside the key table (KeyTable.h, Tuning::liveRecordsFor):
// made as clients come up to a bound; past it, a client's first request of
// the minute is held in its header, its second takes a free record and
// counts both, and a record is free only once its client was not seen for a
// live window,
// so a client that keeps coming keeps its record under a spray, and a new
// one goes without (shown as incomplete). And what the engine shows of a
// client without a record: its single request of the minute, the key as
// its address (none for a prefix), its last request from its expiry, also
// after the rules changed.
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
    void firstRequestTakesNoRecord();
    void poolGrowsToItsBound();
    void busyClientsKeepTheirRecords();
    void recordIsFreeOnceItsClientIsQuietForAWindow();
    void reusedSlotHasNoRecord();
    void engineShowsClientsWithoutARecord();
    void lastRequestSurvivesARuleChange();
};

namespace {

constexpr std::uint16_t STRIDE = 4;
constexpr std::uint32_t SIG = 7;
constexpr Millis KEEP_MS = 10 * MINUTE;  // longer than any test here: no entry expires

TableKey keyOf(std::uint32_t n)
{
    return TableKey{0, 0x0a000000u + n, 0, 0, 0};
}

// Counts one request of client n in the live view; returns its record
// afterwards (null: none), to tell records apart.
const LiveRecord* countIn(KeyTable& t, std::uint32_t n, Millis now)
{
    const LiveRecord* out = nullptr;
    t.with(keyOf(n), SIG, now, KEEP_MS, [&](KeyTable::Header&, std::uint32_t*, bool, KeyTable::Live& live) {
        live.count(now, n);
        out = live.find();
    });
    return out;
}

// Client n's header marks (KeyTable::LIVE_*).
std::uint32_t marksOf(const KeyTable& t, std::uint32_t n, Millis now)
{
    std::uint32_t out = 0;
    t.read(keyOf(n), now, [&](const KeyTable::Header& h, const std::uint32_t*, const LiveRecord*) {
        out = h.live & ~KeyTable::LIVE_RECORD_MASK;
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
// of them seen twice, client n at now + n.
std::unique_ptr<KeyTable> tableWith(std::uint32_t clients, Millis now)
{
    auto t = std::make_unique<KeyTable>(1000, STRIDE, 64);
    for (std::uint32_t n = 0; n < clients; ++n) {
        countIn(*t, n, now + n);
        countIn(*t, n, now + n);
    }
    return t;
}

// A request from address n through the engine.
void request(Engine& engine, const IpAddress& address, Millis now)
{
    RequestFacts f;
    f.method = "GET";
    f.path = "/";
    f.client = f.peer = address;
    engine.decide(f, now);
}

IpAddress v4(std::uint32_t n)
{
    return IpAddress::fromV4(0x0a000000u + n);
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

void TestLiveRecords::firstRequestTakesNoRecord()
{
    KeyTable t(1000, STRIDE, 64);
    // An entry made without counting has no record and no mark.
    t.with(keyOf(1), SIG, T0, KEEP_MS, [](KeyTable::Header&, std::uint32_t*, bool) {});
    QVERIFY(recordOf(t, 1, T0) == nullptr);
    QCOMPARE(marksOf(t, 1, T0), 0u);
    // While the pool grows, a first request makes a record.
    for (std::uint32_t n = 1; n <= 64; ++n)
        QVERIFY(countIn(t, n, T0));
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    // Past its bound, a first request (a minute later, every record is
    // free) is held in the header, with no record.
    const Millis later = T0 + Tuning::liveWindowMs + 1;
    QVERIFY(countIn(t, 100, later) == nullptr);
    QCOMPARE(marksOf(t, 100, later), KeyTable::LIVE_ONE_UNRECORDED);
    // The second, in the next 3 s bucket: a record holding both, each in its bucket.
    const Millis second = later + Tuning::liveBucketMs;
    const LiveRecord* r = countIn(t, 100, second);
    QVERIFY(r);
    QCOMPARE(marksOf(t, 100, second), 0u);
    const auto live = LiveRing::read(r->ring, second);
    QCOMPARE(live[Tuning::liveBucketCount - 2], 1u);
    QCOMPARE(live[Tuning::liveBucketCount - 1], 1u);
    QCOMPARE(r->lastSeen, second);
    // Kept: the third request counts in the same record.
    QCOMPARE(countIn(t, 100, second + 1), r);
    std::uint32_t last60s = 0;
    QCOMPARE(recordOf(t, 100, second + 1, &last60s), r);
    QCOMPARE(last60s, 3u);
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    // A request a whole window after the one before is a first request again.
    QVERIFY(countIn(t, 200, later) == nullptr);
    QVERIFY(countIn(t, 200, later + Tuning::liveWindowMs) == nullptr);
    QCOMPARE(marksOf(t, 200, later + Tuning::liveWindowMs), KeyTable::LIVE_ONE_UNRECORDED);
}

void TestLiveRecords::poolGrowsToItsBound()
{
    auto table = tableWith(10, T0);
    KeyTable& t = *table;
    QCOMPARE(t.liveRecordsHeld(), std::size_t(10));
    // A minute later the ten are quiet; the pool still grows to its bound
    // before any record goes round again.
    const Millis later = T0 + Tuning::liveWindowMs + Tuning::liveBucketMs;
    for (std::uint32_t n = 10; n < 64; ++n) {
        countIn(t, n, later);
        QVERIFY(countIn(t, n, later));
    }
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    for (std::uint32_t n = 0; n < 64; ++n) {
        std::uint32_t last60s = 0;
        QVERIFY(recordOf(t, n, later, &last60s));
        QCOMPARE(last60s, n < 10 ? 0u : 2u);  // the first ten's minute has passed
    }
}

void TestLiveRecords::busyClientsKeepTheirRecords()
{
    // 64 records held by 64 clients seen at T0 .. T0 + 63.
    auto table = tableWith(64, T0);
    KeyTable& t = *table;
    std::vector<const LiveRecord*> held;
    for (std::uint32_t n = 0; n < 64; ++n)
        held.push_back(recordOf(t, n, T0 + 64));
    // A spray: 800 addresses seen once take nothing; 100 seen twice find
    // every record's client seen within the minute and go without.
    for (std::uint32_t n = 1000; n < 1800; ++n)
        QVERIFY(countIn(t, n, T0 + 100) == nullptr);
    for (std::uint32_t n = 2000; n < 2100; ++n) {
        countIn(t, n, T0 + 100);
        QVERIFY(countIn(t, n, T0 + 200) == nullptr);
        QCOMPARE(marksOf(t, n, T0 + 200), KeyTable::LIVE_UNRECORDED);
    }
    QCOMPARE(t.liveRecordsHeld(), std::size_t(64));
    // The 64 keep theirs, with their counts; client 5 comes back and counts on.
    for (std::uint32_t n = 0; n < 64; ++n) {
        std::uint32_t last60s = 0;
        QCOMPARE(recordOf(t, n, T0 + 200, &last60s), held[n]);
        QCOMPARE(last60s, 2u);
    }
    QCOMPARE(countIn(t, 5, T0 + 300), held[5]);
    // Every key is still tracked: the table's capacity is not the pool's.
    QCOMPARE(t.size(), std::size_t(64 + 800 + 100));
}

void TestLiveRecords::recordIsFreeOnceItsClientIsQuietForAWindow()
{
    // Client n was last seen at T0 + n; client 5 again at T0 + 30 s.
    auto table = tableWith(64, T0);
    KeyTable& t = *table;
    countIn(t, 5, T0 + 30 * SECOND);
    const LiveRecord* zero = recordOf(t, 0, T0);
    const LiveRecord* five = recordOf(t, 5, T0);
    // A millisecond before client 0's minute is over, nothing is free (and
    // after the hand's lap, nobody looks until the first can be).
    countIn(t, 500, T0 + 10);
    const Millis window = Tuning::liveWindowMs;
    QVERIFY(countIn(t, 500, T0 + window - 1) == nullptr);
    QVERIFY(countIn(t, 500, T0 + window - 1) == nullptr);
    // At T0 + window client 0's is, and only it.
    QCOMPARE(countIn(t, 500, T0 + window), zero);
    QVERIFY(recordOf(t, 0, T0 + window) == nullptr);
    std::uint32_t last60s = 0;
    QVERIFY(recordOf(t, 500, T0 + window, &last60s));
    QCOMPARE(last60s, 1u);  // the requests before were in no record
    countIn(t, 501, T0 + window);
    QVERIFY(countIn(t, 501, T0 + window) == nullptr);
    // A little later every record but client 5's is free: newcomers take
    // them in turn, never client 5's.
    const Millis later = T0 + window + 100;
    for (std::uint32_t n = 501; n < 600; ++n) {
        countIn(t, n, later);
        const LiveRecord* r = countIn(t, n, later);
        QVERIFY(r != five);
        QCOMPARE(bool(r), n < 501 + 62);  // 64 records, client 500's and client 5's held
    }
    QCOMPARE(recordOf(t, 5, later), five);
    // Client 0 comes back: its first request takes nothing, its second finds none free.
    QVERIFY(countIn(t, 0, later) == nullptr);
    QVERIFY(countIn(t, 0, later) == nullptr);
    QCOMPARE(marksOf(t, 0, later), KeyTable::LIVE_UNRECORDED);
}

void TestLiveRecords::reusedSlotHasNoRecord()
{
    KeyTable t(1, STRIDE, 64);  // one key at most
    countIn(t, 1, T0);
    QVERIFY(countIn(t, 1, T0));
    // Client 2 evicts client 1 and takes its slot: it starts without a record or a mark.
    t.with(keyOf(2), SIG, T0 + 1, KEEP_MS, [](KeyTable::Header&, std::uint32_t*, bool) {});
    QCOMPARE(t.size(), std::size_t(1));
    QVERIFY(recordOf(t, 2, T0 + 1) == nullptr);
    QCOMPARE(marksOf(t, 2, T0 + 1), 0u);
    countIn(t, 2, T0 + 2);
    QVERIFY(countIn(t, 2, T0 + 2));
}

void TestLiveRecords::engineShowsClientsWithoutARecord()
{
    // 40,000 keys: 5,000 live records (8 shards of 640).
    EngineConfig config = defaultConfig();
    config.settings.maxTrackedKeys = 40'000;
    Engine engine(config);
    // 40,000 addresses seen once in a second (the first 5,120 make the
    // pool's records); address 0 three times.
    for (std::uint32_t n = 0; n < 40'000; ++n)
        for (int i = 0; i < (n == 0 ? 3 : 1); ++i)
            request(engine, v4(n), T0 + Millis(n / 40));
    Millis now = T0 + 1000;
    QCOMPARE(engine.counters(now).trackedKeys, std::uint64_t(40'000));
    QCOMPARE(engine.client(v4(0), now)->summary.last60s, 3u);
    // One seen once has no record: its request is counted from its header.
    const ClientSummary one = engine.client(v4(39'999), now)->summary;
    QCOMPARE(one.last60s, 1u);
    QCOMPARE(one.lastBucket, 1u);
    QVERIFY(one.liveComplete);
    QVERIFY(one.lastAddress == v4(39'999));
    QCOMPARE(one.lastSeen, T0 + Millis(39'999 / 40));
    QCOMPARE(one.bindingUsed, 1u);
    // The live view counts every request, with or without a record.
    LiveBuckets buckets = engine.liveBuckets(0, now);
    QCOMPARE(buckets.keys, std::size_t(40'000));
    std::uint64_t total = 0;
    for (const LiveBucket& b : buckets.buckets)
        total += b.total;
    QCOMPARE(total, std::uint64_t(40'002));

    // 6,000 of them come back within the minute: those with a record count
    // on, the rest find none free and are shown as incomplete.
    now = T0 + 10 * SECOND;
    for (std::uint32_t n = 1; n <= 6'000; ++n)
        request(engine, v4(n), now);
    std::size_t complete = 0;
    std::size_t incomplete = 0;
    for (std::uint32_t n = 1; n <= 6'000; ++n) {
        const ClientSummary s = engine.client(v4(n), now)->summary;
        if (s.liveComplete) {
            ++complete;
            QCOMPARE(s.last60s, 2u);
        } else {
            ++incomplete;
            QCOMPARE(s.last60s, 0u);  // its two requests are in no record
            QCOMPARE(s.lastSeen, now);
        }
    }
    QCOMPARE(complete + incomplete, std::size_t(6'000));
    QVERIFY2(complete >= 4'000 && complete <= 5'120, std::to_string(complete).c_str());
    // A minute after, nothing of the window is missing any more.
    QVERIFY(engine.client(v4(6'000), now + Tuning::liveWindowMs)->summary.liveComplete);

    // An IPv6 /64 seen once, past the pool's bound: no record, so no last
    // full address, only its prefix.
    const IpAddress six = ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
    request(engine, six, now);
    const ClientSummary prefix = engine.client(six, now)->summary;
    QCOMPARE(prefix.keyPrefix, 64);
    QVERIFY(!prefix.lastAddress.has_value());
    QCOMPARE(prefix.last60s, 1u);
    request(engine, six, now + 1);
    const ClientSummary prefixAgain = engine.client(six, now + 1)->summary;
    if (prefixAgain.liveComplete)
        QVERIFY(prefixAgain.lastAddress == six);
}

void TestLiveRecords::lastRequestSurvivesARuleChange()
{
    // A client seen once, then the per-address rules change their keep (the
    // 30-minute level made two hours: the same cells, a longer keep) and
    // change back: its last request stays exact.
    EngineConfig config = defaultConfig();
    Engine engine(config);
    request(engine, v4(1), T0);
    QCOMPARE(engine.client(v4(1), T0 + 5)->summary.lastSeen, T0);
    EngineConfig longer = config;
    QCOMPARE(qs(longer.rules.front().name), QStringLiteral("ip"));
    QCOMPARE(longer.rules.front().levels.back().periodMs, 30 * MINUTE);
    longer.rules.front().levels.back().periodMs = 2 * HOUR;
    QVERIFY(!engine.setConfig(longer).has_value());
    QCOMPARE(engine.client(v4(1), T0 + 10)->summary.lastSeen, T0);
    QCOMPARE(engine.client(v4(1), T0 + 10)->summary.last60s, 1u);
    // A client seen under the longer rules, then the rules go back.
    request(engine, v4(2), T0 + 20);
    QVERIFY(!engine.setConfig(config).has_value());
    QCOMPARE(engine.client(v4(1), T0 + 30)->summary.lastSeen, T0);
    QCOMPARE(engine.client(v4(2), T0 + 30)->summary.lastSeen, T0 + 20);
}

QTEST_APPLESS_MAIN(TestLiveRecords)
#include "test_live_records.moc"
