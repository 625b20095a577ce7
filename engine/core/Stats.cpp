// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Stats.h"

namespace Floodgate::Core {

namespace {

template <class T>
void bump(std::atomic<T>& x)
{
    x.store(x.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

} // namespace

Stats::Stats()
    : m_slots(std::make_unique<Slot[]>(Tuning::statsThreadSlots))
{
    for (std::size_t i = 0; i < Tuning::statsThreadSlots; ++i)
        m_slots[i].ring = std::make_unique<Second[]>(Tuning::statsSeconds);
}

Stats::~Stats() = default;

void Stats::record(std::size_t slot, Action action, Millis now)
{
    Slot& s = m_slots[slot];
    const auto a = std::size_t(action);
    // A slot has one writer (its thread), so a plain load and store is enough
    // and avoids a locked instruction per request. Beyond statsThreadSlots
    // threads two may share a slot and, rarely, lose an increment.
    bump(s.totals[a]);
    const std::int64_t sec = floorDiv(now, 1000);
    Second& e = s.ring[std::size_t(sec % std::int64_t(Tuning::statsSeconds))];
    const std::int64_t stamped = e.second.load(std::memory_order_relaxed);
    if (stamped != sec) {
        if (stamped > sec)
            return;  // an out-of-order timestamp from an hour ago: the total counts it, the ring cannot
        // One thread owns a slot (unless more threads than slots): clearing
        // before stamping is enough; a reader may see a second half-filled.
        for (auto& c : e.counts)
            c.store(0, std::memory_order_relaxed);
        e.second.store(sec, std::memory_order_release);
    }
    bump(e.counts[a]);
}

void Stats::recordClaim(std::size_t slot, Claim claim)
{
    bump(m_slots[slot].claims[std::size_t(claim)]);
}

std::array<std::uint64_t, ClaimCount> Stats::claims() const
{
    std::array<std::uint64_t, ClaimCount> out{};
    for (std::size_t i = 0; i < Tuning::statsThreadSlots; ++i)
        for (std::size_t c = 0; c < ClaimCount; ++c)
            out[c] += m_slots[i].claims[c].load(std::memory_order_relaxed);
    return out;
}

std::array<std::uint64_t, ActionCount> Stats::totals() const
{
    std::array<std::uint64_t, ActionCount> out{};
    for (std::size_t i = 0; i < Tuning::statsThreadSlots; ++i)
        for (std::size_t a = 0; a < ActionCount; ++a)
            out[a] += m_slots[i].totals[a].load(std::memory_order_relaxed);
    return out;
}

std::vector<SecondCounts> Stats::perSecond(Millis now, std::size_t seconds) const
{
    if (seconds > Tuning::statsSeconds)
        seconds = Tuning::statsSeconds;
    const std::int64_t cur = floorDiv(now, 1000);
    std::vector<SecondCounts> out(seconds);
    for (std::size_t k = 0; k < seconds; ++k) {
        const std::int64_t sec = cur - std::int64_t(seconds) + 1 + std::int64_t(k);
        SecondCounts& sc = out[k];
        sc.second = sec * 1000;
        if (sec < 0)
            continue;
        const auto pos = std::size_t(sec % std::int64_t(Tuning::statsSeconds));
        for (std::size_t i = 0; i < Tuning::statsThreadSlots; ++i) {
            const Second& e = m_slots[i].ring[pos];
            if (e.second.load(std::memory_order_acquire) != sec)
                continue;
            for (std::size_t a = 0; a < ActionCount; ++a)
                sc.byAction[a] += e.counts[a].load(std::memory_order_relaxed);
        }
    }
    return out;
}

} // namespace Floodgate::Core
