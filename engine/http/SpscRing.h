// SPDX-License-Identifier: GPL-3.0-or-later
// A bounded single-producer single-consumer ring of fixed-size records: one
// listener thread writes, one background thread reads. Writing never waits:
// when the ring is full the record is dropped and counted. The producer's and
// the consumer's positions live on their own cache lines.
#pragma once

#include "core/Utf8.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace Floodgate::Http {

// Copies `src` into a fixed-size record field, cut to fit (never inside a
// UTF-8 character: a user agent's last character is dropped whole),
// NUL-terminated.
inline void copyTruncated(char* dst, std::size_t capacity, std::string_view src)
{
    const std::size_t n = Core::utf8Cut(src, capacity - 1);
    if (n != 0)  // an empty view may have no data at all: memcpy from null is undefined
        std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

template <class T>
class SpscRing {
public:
    explicit SpscRing(std::size_t capacity) : m_records(roundUp(capacity)), m_mask(m_records.size() - 1) {}

    // Producer: the slot to fill, or nullptr when full (the drop is counted).
    // Call commit() after filling it.
    T* reserve()
    {
        T* slot = tryReserve();
        if (!slot)
            m_dropped.fetch_add(1, std::memory_order_relaxed);
        return slot;
    }
    // Producer: the same, for a caller that keeps what did not fit itself
    // (nothing counted as dropped).
    T* tryReserve()
    {
        const std::uint64_t head = m_head.load(std::memory_order_relaxed);
        if (head - m_tail.load(std::memory_order_acquire) > m_mask)
            return nullptr;
        return &m_records[head & m_mask];
    }
    // Producer: how many records fit now (at least this many; the consumer
    // may free more meanwhile).
    std::size_t room() const
    {
        return std::size_t(m_mask + 1 - (m_head.load(std::memory_order_relaxed) - m_tail.load(std::memory_order_acquire)));
    }
    void commit() { m_head.store(m_head.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

    // Consumer: calls fn(const T&) for what is written, oldest first, at
    // most `max` of them; returns how many.
    template <class Fn>
    std::size_t drain(Fn&& fn, std::size_t max = SIZE_MAX)
    {
        std::uint64_t tail = m_tail.load(std::memory_order_relaxed);
        const std::uint64_t head = m_head.load(std::memory_order_acquire);
        const std::size_t n = std::min<std::size_t>(std::size_t(head - tail), max);
        for (const std::uint64_t end = tail + n; tail != end; ++tail)
            fn(m_records[tail & m_mask]);
        m_tail.store(tail, std::memory_order_release);
        return n;
    }

    bool empty() const { return m_head.load(std::memory_order_acquire) == m_tail.load(std::memory_order_acquire); }
    std::uint64_t dropped() const { return m_dropped.load(std::memory_order_relaxed); }

private:
    static std::size_t roundUp(std::size_t n)
    {
        std::size_t p = 2;
        while (p < n)
            p <<= 1;
        return p;
    }

    std::vector<T> m_records;
    std::size_t m_mask;
    alignas(64) std::atomic<std::uint64_t> m_head{0};  // next to write (producer)
    alignas(64) std::atomic<std::uint64_t> m_tail{0};  // next to read (consumer)
    alignas(64) std::atomic<std::uint64_t> m_dropped{0};
};

} // namespace Floodgate::Http
