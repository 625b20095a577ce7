// SPDX-License-Identifier: GPL-3.0-or-later
// The 3 s x 20 live ring of Window.h (a client's last minute for the live
// view): counting and reading oldest first, forgetting after sixty seconds,
// saturating per bucket. Time is injected; the first case runs from t = 0
// and from a 2026 wall-clock time.
#include <QtTest>

#include "TestSupport.h"
#include "core/Window.h"

#include <vector>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestLiveRing : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void liveRing_data() { addBases(); }
    void liveRing();
    void liveRingForgetsAfterSixtySeconds();
    void liveRingSaturatesPerBucket();
};

// ---- live ring -------------------------------------------------------------------

void TestLiveRing::liveRing()
{
    QFETCH(qint64, base);
    QCOMPARE(int(LiveRing::Cells), 11);
    std::vector<std::uint32_t> cells(LiveRing::Cells, 0u);

    LiveRing::count(cells.data(), base);          // bucket 0
    LiveRing::count(cells.data(), base + 2999);   // bucket 0
    LiveRing::count(cells.data(), base + 3000);   // bucket 1
    for (int i = 0; i < 5; ++i)
        LiveRing::count(cells.data(), base + 10500);  // bucket 3

    auto r = LiveRing::read(cells.data(), base + 10500);
    for (std::size_t i = 0; i < r.size(); ++i) {
        const std::uint32_t expected = i == 16 ? 2u : i == 17 ? 1u : i == 19 ? 5u : 0u;
        QCOMPARE(r[i], expected);
    }
    // Oldest first: at 59999 (bucket 19) bucket 0 is the oldest still in.
    r = LiveRing::read(cells.data(), base + 59999);
    QCOMPARE(r[0], 2u);
    QCOMPARE(r[1], 1u);
    QCOMPARE(r[3], 5u);
    QCOMPARE(r[19], 0u);
    // At 60000 bucket 0 has left.
    r = LiveRing::read(cells.data(), base + 60000);
    QCOMPARE(r[0], 1u);
    QCOMPARE(r[2], 5u);
    std::uint32_t sum = 0;
    for (auto c : r)
        sum += c;
    QCOMPARE(sum, 6u);
}

void TestLiveRing::liveRingForgetsAfterSixtySeconds()
{
    std::vector<std::uint32_t> cells(LiveRing::Cells, 0u);
    for (int i = 0; i < 7; ++i)
        LiveRing::count(cells.data(), 9000 + i);  // bucket 3
    auto r = LiveRing::read(cells.data(), 68999);  // bucket 22: bucket 3 is the oldest
    QCOMPARE(r[0], 7u);
    r = LiveRing::read(cells.data(), 69000);  // bucket 23
    for (auto c : r)
        QCOMPARE(c, 0u);
    r = LiveRing::read(cells.data(), 10'000'000);  // long silence
    for (auto c : r)
        QCOMPARE(c, 0u);

    // Counting after the silence starts from a clean ring.
    LiveRing::count(cells.data(), 10'000'000);
    r = LiveRing::read(cells.data(), 10'000'000);
    QCOMPARE(r[19], 1u);
    std::uint32_t sum = 0;
    for (auto c : r)
        sum += c;
    QCOMPARE(sum, 1u);
}

void TestLiveRing::liveRingSaturatesPerBucket()
{
    // 16-bit counts, two per cell: a saturated bucket must not spill into its neighbour.
    std::vector<std::uint32_t> cells(LiveRing::Cells, 0u);
    for (int i = 0; i < 70000; ++i)
        LiveRing::count(cells.data(), 0);  // bucket 0, low half of its cell
    auto r = LiveRing::read(cells.data(), 0);
    QCOMPARE(r[19], 65535u);
    QCOMPARE(r[18], 0u);

    LiveRing::count(cells.data(), 3000);  // bucket 1, high half of the same cell
    r = LiveRing::read(cells.data(), 3000);
    QCOMPARE(r[18], 65535u);
    QCOMPARE(r[19], 1u);
}

QTEST_APPLESS_MAIN(TestLiveRing)
#include "test_live_ring.moc"
