// SPDX-License-Identifier: GPL-3.0-or-later
// Time in the engine: integer milliseconds since the Unix epoch, always passed
// in by the caller (one timestamp per event-loop pass), so tests inject it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace Floodgate::Core {

__extension__ typedef unsigned __int128 UInt128;  // GCC and Clang's; -Wpedantic knows it is an extension

using Millis = std::int64_t;  // milliseconds since 1970-01-01T00:00:00Z

// The units, stated once: every duration in the code is built from these.
inline constexpr Millis SECOND = 1000;
inline constexpr Millis MINUTE = 60 * SECOND;
inline constexpr Millis HOUR = 60 * MINUTE;
inline constexpr Millis DAY = 24 * HOUR;

// Ceiling division for non-negative numerators and positive divisors; the
// "whole seconds, rounded up" of Retry-After.
constexpr std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

// Whole seconds, rounded up: a reset or a time to live shown in seconds
// never says a moment sooner than the truth.
constexpr std::int64_t secondsRoundedUp(Millis ms) { return ceilDiv(ms, SECOND); }

// HTTP Retry-After (RFC 9110 section 10.2.3) and every "retry after" a
// client or an operator reads: whole seconds, rounded up, at least 1 (a
// client told 0 would retry at once).
constexpr std::int64_t retryAfterSeconds(Millis ms)
{
    const std::int64_t s = secondsRoundedUp(ms);
    return s < 1 ? 1 : s;
}

// Floor division that is right for negative numerators too (times before the
// epoch never occur in practice, tests may still use small numbers).
constexpr std::int64_t floorDiv(std::int64_t a, std::int64_t b)
{
    const std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// floorDiv by a divisor fixed once (a level's bucket width, its number of
// buckets) without a division instruction on the request path: a multiply
// by a precomputed reciprocal and a shift (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994, theorem 4.2:
// with l = ceil(log2 d) and m = ceil(2^(63 + l) / d), floor(m n / 2^(63 + l))
// = floor(n / d) for every 0 <= n < 2^63). Negative numerators take floorDiv.
class Divisor {
public:
    constexpr Divisor() = default;
    constexpr explicit Divisor(std::int64_t d) : m_d(d)
    {
        unsigned l = 0;
        while ((std::uint64_t(1) << l) < std::uint64_t(d))
            ++l;
        m_shift = 63 + l;
        const UInt128 one = 1;
        m_magic = std::uint64_t(((one << m_shift) + std::uint64_t(d) - 1) / std::uint64_t(d));
    }
    constexpr std::int64_t value() const { return m_d; }
    constexpr std::int64_t floor(std::int64_t n) const
    {
        if (n < 0)
            return floorDiv(n, m_d);
        return std::int64_t((UInt128(std::uint64_t(n)) * m_magic) >> m_shift);
    }
    // n mod d in [0, d).
    constexpr std::int64_t mod(std::int64_t n) const { return n - floor(n) * m_d; }

private:
    std::int64_t m_d = 1;
    std::uint64_t m_magic = std::uint64_t(1) << 63;
    unsigned m_shift = 63;
};

class Clock {
public:
    virtual ~Clock() = default;
    // Wall time: what decisions, records and reports are stamped with.
    virtual Millis now() const = 0;
    // Time that never steps back, for how long something has waited (a
    // connection's deadlines). A clock that does not say otherwise measures
    // waits on its own time, so a test's manual clock moves both.
    virtual Millis monotonic() const { return now(); }
};

class SystemClock final : public Clock {
public:
    Millis now() const override
    {
        using namespace std::chrono;
        return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    }
    // The steady clock: setting the wall clock neither expires nor spares a connection.
    Millis monotonic() const override
    {
        using namespace std::chrono;
        return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
    }
};

// The process's system clock: what a part takes when its owner injects none.
inline const Clock& systemClock()
{
    static const SystemClock clock;
    return clock;
}

// A clock tests move by hand.
class ManualClock final : public Clock {
public:
    explicit ManualClock(Millis start = 0) : m_now(start) {}
    Millis now() const override { return m_now.load(std::memory_order_relaxed); }
    void set(Millis t) { m_now.store(t, std::memory_order_relaxed); }
    void advance(Millis d) { m_now.fetch_add(d, std::memory_order_relaxed); }

private:
    std::atomic<Millis> m_now;
};

} // namespace Floodgate::Core
