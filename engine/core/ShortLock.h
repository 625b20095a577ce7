// SPDX-License-Identifier: GPL-3.0-or-later
// A mutex for critical sections of a few hundred nanoseconds (a key table
// shard, a shard of a small map): a thread that finds it taken spins a
// little before it sleeps. std::mutex (glibc) sleeps at once on the futex,
// and on a VM the sleep and the wake-up cost tens of microseconds for a lock
// that is free again after ~300 ns (docs/BENCHMARKS.md, "Engine: two threads
// over many keys"). Private to the engine.
#pragma once

#include "core/Tuning.h"

#include <atomic>
#include <cstdint>

namespace Floodgate::Core {

class ShortLock {
public:
    ShortLock() = default;
    ShortLock(const ShortLock&) = delete;
    ShortLock& operator=(const ShortLock&) = delete;

    void lock()
    {
        std::uint32_t c = FREE;
        if (m_state.compare_exchange_strong(c, TAKEN, std::memory_order_acquire, std::memory_order_relaxed))
            return;
        // Spin on a plain load (the line is shared, not written, while the
        // holder works) and try again only when it looks free.
        for (std::uint32_t i = 0; i < Tuning::shortLockSpins; ++i) {
            relax();
            c = m_state.load(std::memory_order_relaxed);
            if (c == FREE && m_state.compare_exchange_weak(c, TAKEN, std::memory_order_acquire, std::memory_order_relaxed))
                return;
        }
        // Sleep: WAITED tells unlock() to wake someone. A thread woken takes
        // the lock as WAITED, since others may still sleep (Drepper,
        // "Futexes Are Tricky", mutex 3).
        c = m_state.exchange(WAITED, std::memory_order_acquire);
        while (c != FREE) {
            m_state.wait(WAITED, std::memory_order_relaxed);
            c = m_state.exchange(WAITED, std::memory_order_acquire);
        }
    }

    bool try_lock()
    {
        std::uint32_t c = FREE;
        return m_state.compare_exchange_strong(c, TAKEN, std::memory_order_acquire, std::memory_order_relaxed);
    }

    void unlock()
    {
        if (m_state.exchange(FREE, std::memory_order_release) == WAITED)
            m_state.notify_one();
    }

private:
    static constexpr std::uint32_t FREE = 0;
    static constexpr std::uint32_t TAKEN = 1;
    static constexpr std::uint32_t WAITED = 2;  // taken, and someone may sleep on it

    static void relax()
    {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }

    std::atomic<std::uint32_t> m_state{FREE};
};

} // namespace Floodgate::Core
