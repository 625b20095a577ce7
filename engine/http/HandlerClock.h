// SPDX-License-Identifier: GPL-3.0-or-later
// A listener thread's clock, read at most once per completion handler. A
// request in decision mode read the clock five times: when its bytes arrived
// (its header's deadline), for its decision, for its cooldown, when its answer
// was written (the write's deadline), and when the next read began (the idle
// deadline); a pipelined batch read it once more per request. The first four
// happen in one handler, microseconds apart. Here the wall time and the
// monotonic time are each read once per handler and kept until it returns:
// three clock reads per request (two in the read's handler, one in the
// write's), three per pipelined batch.
//
// Outside a handler (a session's constructor in the accept handler, the
// sweep) every read goes to the clock it wraps, as before. The clock it wraps
// is still the injected one: a test's manual clock is read afresh by every
// handler, so moving it between two handlers is seen by the second.
//
// Not thread-safe, and need not be: one per listener thread, read on that
// thread alone (ThreadContext).
#pragma once

#include "core/Time.h"

namespace Floodgate::Http {

class HandlerClock final : public Core::Clock {
public:
    explicit HandlerClock(const Core::Clock& clock) : m_clock(clock) {}

    Core::Millis now() const override { return m_inHandler ? cached(m_wall, &Core::Clock::now) : m_clock.now(); }
    Core::Millis monotonic() const override { return m_inHandler ? cached(m_monotonic, &Core::Clock::monotonic) : m_clock.monotonic(); }

    // For the length of a handler's run: what is read is kept until it ends.
    // Nested runs (a handler invoked from inside another) share the outer
    // one's readings and leave them as they were.
    class Handling {
    public:
        explicit Handling(HandlerClock& clock) : m_clock(clock), m_outer(clock.m_inHandler)
        {
            if (!m_outer) {
                m_clock.m_inHandler = true;
                m_clock.m_wall = m_clock.m_monotonic = Unread;
            }
        }
        ~Handling()
        {
            if (!m_outer)
                m_clock.m_inHandler = false;
        }
        Handling(const Handling&) = delete;
        Handling& operator=(const Handling&) = delete;

    private:
        HandlerClock& m_clock;
        bool m_outer;
    };

private:
    static constexpr Core::Millis Unread = INT64_MIN;

    Core::Millis cached(Core::Millis& slot, Core::Millis (Core::Clock::*read)() const) const
    {
        if (slot == Unread)
            slot = (m_clock.*read)();
        return slot;
    }

    const Core::Clock& m_clock;
    bool m_inHandler = false;
    mutable Core::Millis m_wall = Unread;
    mutable Core::Millis m_monotonic = Unread;
};

} // namespace Floodgate::Http
