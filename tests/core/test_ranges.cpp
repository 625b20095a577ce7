// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide on HTTP Range reads (docs/INTERFACE.md): a download in parts
// is one page hit, its uncounted continuations bounded per resource and per
// client; a refused first part opens no window; what is not a continuation;
// range state only for clients that read ranges. Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"
#include "core/Tuning.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

// Part `n` of a resource read in 64 KiB chunks: a GET with a Range header.
Request part(std::string path, int n, std::string client = "203.0.113.7")
{
    const long from = long(n) * 65536;
    return Request().from(std::move(client)).at(std::move(path)).header("Range", "bytes=" + std::to_string(from) + "-" + std::to_string(from + 65535));
}

} // namespace

class TestRanges : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rangeDownloadIsOnePageHit();
    void rangeContinuationsAreBoundedPerResource();
    void rangeContinuationsAreBoundedPerClient();
    void aRefusedFirstPartOpensNoWindow();
    void whatIsNotAContinuation();
    void rangeStateOnlyForClientsThatReadRanges();
};

// ---- HTTP Range reads ------------------------------------------------------------

void TestRanges::rangeDownloadIsOnePageHit()
{
    // A download in 20 parts in 1 s: the first part is counted, the rest
    // continue it. Before, the 7th part was refused by the 6-per-3-s level.
    Engine engine;
    for (int n = 0; n < 20; ++n) {
        const Decision d = decide(engine, part("/files/report.zip", n), T0 + n * 50);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(n == 0 ? Reason::Counted : Reason::RangeContinuation));
    }
    // The burst level saw one request: five pages more pass, the sixth does not.
    for (int i = 0; i < 5; ++i)
        COMPARE_ACTION(decide(engine, Request().at("/page/" + std::to_string(i)), T0 + SECOND + i), Action::Allow);
    const Decision d = decide(engine, Request().at("/page/9"), T0 + SECOND + 10);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    // The live view still shows every request.
    QCOMPARE(engine.client(ip("203.0.113.7"), T0 + 2 * SECOND)->summary.last60s, 26u);
}

void TestRanges::rangeContinuationsAreBoundedPerResource()
{
    // A Range header does not buy unlimited requests: one resource gets
    // Tuning::rangeContinuationsPerResource uncounted parts per window.
    QCOMPARE(Tuning::rangeContinuationsPerResource, 256u);
    QCOMPARE(Tuning::rangeWindowMs, Millis(60'000));
    Engine engine;
    const std::string pdf = "/docs/manual.pdf";
    QCOMPARE(label(decide(engine, part(pdf, 0), T0).reason), label(Reason::Counted));
    for (int n = 1; n <= 256; ++n)
        QCOMPARE(label(decide(engine, part(pdf, n), T0 + n * 100).reason), label(Reason::RangeContinuation));
    // Spent: from here each part counts, and a flood of them is refused.
    const Millis t = T0 + 30 * SECOND;
    for (int n = 0; n < 6; ++n) {
        const Decision d = decide(engine, part(pdf, 300 + n), t + n * 10);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Counted));
    }
    COMPARE_ACTION(decide(engine, part(pdf, 306), t + 100), Action::Throttle);
    // The window began with the first part (T0) and lasts 60 s: still spent
    // just before its end, a new window after it.
    QCOMPARE(label(decide(engine, part(pdf, 400), T0 + 59 * SECOND).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part(pdf, 401), T0 + 60 * SECOND).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part(pdf, 402), T0 + 60 * SECOND + 1).reason), label(Reason::RangeContinuation));
}

void TestRanges::rangeContinuationsAreBoundedPerClient()
{
    // Starting many resources does not multiply the bound: one client gets
    // Tuning::rangeContinuationsPerClient uncounted parts per window in all.
    QCOMPARE(Tuning::rangeContinuationsPerClient, 1024u);
    Engine engine;
    for (int r = 0; r < 5; ++r)
        QCOMPARE(label(decide(engine, part("/r" + std::to_string(r), 0), T0 + r * 100).reason), label(Reason::Counted));
    Millis t = T0 + SECOND;
    for (int r = 0; r < 4; ++r)
        for (int n = 1; n <= 256; ++n)
            QCOMPARE(label(decide(engine, part("/r" + std::to_string(r), n), t += 10).reason), label(Reason::RangeContinuation));
    QCOMPARE(label(decide(engine, part("/r4", 1), t += 10).reason), label(Reason::Counted));
    // Another client has its own.
    QCOMPARE(label(decide(engine, part("/r4", 0, "198.51.100.1"), t).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part("/r4", 1, "198.51.100.1"), t + 1).reason), label(Reason::RangeContinuation));
}

void TestRanges::aRefusedFirstPartOpensNoWindow()
{
    Engine engine;
    for (int i = 0; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request().at("/p" + std::to_string(i)), T0 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, part("/video.mp4", 0), T0 + 10), Action::Throttle);
    COMPARE_ACTION(decide(engine, part("/video.mp4", 1), T0 + 20), Action::Throttle);
    // Once the lockout is over the next part is counted (and opens the window).
    const Millis t = T0 + 7 * SECOND;
    QCOMPARE(label(decide(engine, part("/video.mp4", 2), t).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part("/video.mp4", 3), t + 1).reason), label(Reason::RangeContinuation));
}

void TestRanges::whatIsNotAContinuation()
{
    Engine engine;
    QCOMPARE(label(decide(engine, part("/a.zip", 0), T0).reason), label(Reason::Counted));
    // Another path, another client, no Range header, another method.
    QCOMPARE(label(decide(engine, part("/b.zip", 1), T0 + 1).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, part("/a.zip", 1, "198.51.100.1"), T0 + 2).reason), label(Reason::Counted));
    QCOMPARE(label(decide(engine, Request().at("/a.zip"), T0 + 3).reason), label(Reason::Counted));
    Request post = part("/a.zip", 1);
    post.method = "POST";
    QCOMPARE(label(decide(engine, post, T0 + 4).reason), label(Reason::Counted));
    // An empty Range header is no Range read; the method's case does not matter.
    QCOMPARE(label(decide(engine, Request().at("/a.zip").header("Range", ""), T0 + 5).reason), label(Reason::Counted));
    Request lower = part("/a.zip", 2, "198.51.100.2");
    lower.method = "get";
    QCOMPARE(label(decide(engine, lower, T0 + 6).reason), label(Reason::Counted));
    lower = part("/a.zip", 3, "198.51.100.2");
    lower.method = "get";
    QCOMPARE(label(decide(engine, lower, T0 + 7).reason), label(Reason::RangeContinuation));
}

void TestRanges::rangeStateOnlyForClientsThatReadRanges()
{
    // A client that sends no Range header costs one entry, as before; one
    // that reads a resource in parts costs one entry per resource and one
    // for its continuations, and both end with the window.
    Engine engine;
    for (int i = 0; i < 100; ++i)
        COMPARE_ACTION(decide(engine, Request().from("10.0.0.1").at("/p" + std::to_string(i)), T0 + i * SECOND), Action::Allow);
    QCOMPARE(engine.counters(T0 + 100 * SECOND).trackedKeys, std::uint64_t(1));
    const Millis t = T0 + 200 * SECOND;
    for (int n = 0; n < 20; ++n)
        COMPARE_ACTION(decide(engine, part("/big.iso", n, "10.0.0.2"), t + n * 10), Action::Allow);
    QCOMPARE(engine.counters(t + SECOND).trackedKeys, std::uint64_t(4));
    engine.purge(t + Tuning::rangeWindowMs + 10 * SECOND);
    QCOMPARE(engine.counters(t + Tuning::rangeWindowMs + 10 * SECOND).trackedKeys, std::uint64_t(2));
}

QTEST_APPLESS_MAIN(TestRanges)
#include "test_ranges.moc"
