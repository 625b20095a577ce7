// SPDX-License-Identifier: GPL-3.0-or-later
// One deadline model for both servers (the traffic listener and the admin
// server): what a connection waits for from its client, the moment it stops
// waiting, and the sweep that closes connections past that moment. Deadlines
// are read on the injected clock's monotonic time (Core::Clock), so a test's
// manual clock decides when one has passed; only the sweep's wake-ups run on
// a real timer. Private to engine/http (included by .cpp files and
// Session.h); free of Boost: the sweep takes the server's own Asio timer.
#pragma once

#include "core/Time.h"
#include "core/Tuning.h"

#include <chrono>

namespace Floodgate::Http {

// How long a client is given, at most (Tuning.h says why).
struct ClientTimeouts {
    Core::Millis idleMs = 0;    // to begin a request on an open connection
    Core::Millis headerMs = 0;  // to complete a header, counted from its first byte (slowloris)
    Core::Millis bodyMs = 0;    // between two pieces of a body
    Core::Millis writeMs = 0;   // to take an answer (a client that does not read)

    // From either server's options (ListenerOptions, AdminOptions).
    template<class Options>
    static ClientTimeouts of(const Options& o)
    {
        return {o.idleTimeoutMs, o.headerTimeoutMs, o.bodyTimeoutMs, o.writeTimeoutMs};
    }
};

// What a connection waits for from its client.
enum class Awaiting { Request, Header, Body, Answer };

// One connection's deadline. Not thread-safe: a connection's I/O thread only.
class ClientDeadline {
public:
    ClientDeadline(const Core::Clock& clock, const ClientTimeouts& timeouts) : m_clock(clock), m_timeouts(timeouts) {}

    // A new request: its header's time has not started.
    void newRequest() { m_requestStarted = 0; }
    // Bytes of the request arrived: the first ones start its header's time,
    // which later bytes never extend (a header dribbled a byte at a time).
    void requestBegan()
    {
        if (m_requestStarted == 0)
            m_requestStarted = m_clock.monotonic();
    }
    // About to read: nothing of a request yet (idle), the rest of its
    // header, or more of its body.
    void awaitRead(bool nothingYet, bool headerDone)
    {
        await(nothingYet ? Awaiting::Request : !headerDone ? Awaiting::Header : Awaiting::Body);
    }
    void await(Awaiting what)
    {
        const Core::Millis now = m_clock.monotonic();
        switch (what) {
        case Awaiting::Request: m_at = now + m_timeouts.idleMs; return;
        case Awaiting::Header:
            if (m_requestStarted == 0)
                m_requestStarted = now;
            m_at = m_requestStarted + m_timeouts.headerMs;
            return;
        case Awaiting::Body: m_at = now + m_timeouts.bodyMs; return;
        case Awaiting::Answer: m_at = now + m_timeouts.writeMs; return;
        }
    }
    // Not waiting for the client: the API or the upstream has the request,
    // or the connection is closed.
    void clear() { m_at = 0; }
    // `now` on the clock's monotonic time, as the sweep hands it.
    bool passed(Core::Millis now) const { return m_at != 0 && now >= m_at; }

private:
    const Core::Clock& m_clock;
    const ClientTimeouts& m_timeouts;
    Core::Millis m_at = 0;              // monotonic ms; 0 = none
    Core::Millis m_requestStarted = 0;  // the first byte of the request in progress
};

// The sweep: every Tuning::sweepIntervalMs, `expire` gets the clock's
// monotonic time and closes the connections past their deadline. Stop means
// stop: a wake-up that fired before stop() cancelled the timer (its handler
// queued, no longer cancellable) sees `stopping()` and does not arm the
// timer again, or the I/O thread never runs out of work and stop() waits
// for it forever.
template<class Timer, class Stopping, class Expire>
void sweepEvery(Timer& timer, const Core::Clock& clock, Stopping stopping, Expire expire)
{
    timer.expires_after(std::chrono::milliseconds(Core::Tuning::sweepIntervalMs));
    timer.async_wait([&timer, &clock, stopping, expire](const auto& ec) {
        if (ec || stopping())
            return;
        expire(clock.monotonic());
        sweepEvery(timer, clock, stopping, expire);
    });
}

} // namespace Floodgate::Http
