// SPDX-License-Identifier: GPL-3.0-or-later
// A listener thread's clock (HandlerClock.h): inside a handler the wall and
// the monotonic time are each read once and kept until it returns; outside
// one, and in the next handler, every read goes to the injected clock; a
// handler run from inside another shares the outer one's readings.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "http/HandlerMemory.h"
#endif

using namespace Floodgate;

namespace {

// A manual clock that counts how often it is read, its monotonic time apart
// from its wall time.
class CountingClock final : public Core::Clock {
public:
    Core::Millis now() const override
    {
        ++wallReads;
        return wall;
    }
    Core::Millis monotonic() const override
    {
        ++monotonicReads;
        return mono;
    }
    Core::Millis wall = 1'000'000;
    Core::Millis mono = 50;
    mutable int wallReads = 0;
    mutable int monotonicReads = 0;
};

// The clock a listener thread would have over it.
struct Clocks {
    CountingClock base;
    Http::HandlerClock clock{base};
};

} // namespace

class TestHandlerClock : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void outsideAHandlerEveryReadGoesThrough()
    {
        Clocks c;
        auto& [base, clock] = c;
        QCOMPARE(clock.now(), 1'000'000);
        base.wall += 5;
        QCOMPARE(clock.now(), 1'000'005);
        QCOMPARE(clock.monotonic(), 50);
        QCOMPARE(base.wallReads, 2);
        QCOMPARE(base.monotonicReads, 1);
    }

    void aHandlerReadsEachTimeOnce()
    {
        Clocks c;
        auto& [base, clock] = c;
        {
            const Http::HandlerClock::Handling handling(clock);
            QCOMPARE(clock.now(), 1'000'000);
            base.wall += 7;  // moved while the handler runs: it keeps what it read
            base.mono += 7;
            QCOMPARE(clock.now(), 1'000'000);
            {
                // A handler run from inside another shares its readings ...
                const Http::HandlerClock::Handling inner(clock);
                QCOMPARE(clock.now(), 1'000'000);
            }
            QCOMPARE(clock.now(), 1'000'000);  // ... and leaves them to the outer one
            QCOMPARE(clock.monotonic(), 57);  // the first monotonic read is now
            QCOMPARE(clock.monotonic(), 57);
            QCOMPARE(base.wallReads, 1);
            QCOMPARE(base.monotonicReads, 1);
        }
        // Past the handler: read afresh.
        QCOMPARE(clock.now(), 1'000'007);
        QCOMPARE(base.wallReads, 2);
    }

    void theNextHandlerSeesTheClockMoved()
    {
        Clocks c;
        auto& [base, clock] = c;
        Http::HandlerMemory memory;
        std::vector<Core::Millis> seen;
        auto handler = Http::Recycled(memory, clock, [&](int) {
            seen.push_back(clock.now());
            seen.push_back(clock.now());
        });
        handler(0);
        base.wall += 1000;
        handler(0);
        QCOMPARE(seen, (std::vector<Core::Millis>{1'000'000, 1'000'000, 1'001'000, 1'001'000}));
        QCOMPARE(base.wallReads, 2);
    }
};

QTEST_GUILESS_MAIN(TestHandlerClock)
#include "test_handler_clock.moc"
