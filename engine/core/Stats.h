// SPDX-License-Identifier: GPL-3.0-or-later
// Per-second decision counters by action, one hour deep. Each listener thread
// writes its own padded slot (no shared cache line on the request path); a
// reader sums the slots.
#pragma once

#include "core/Decision.h"
#include "core/Snapshot.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <array>
#include <atomic>
#include <memory>
#include <vector>

namespace Floodgate::Core {

class Stats {
public:
    Stats();
    ~Stats();

    std::size_t claimSlot() { return m_nextSlot.fetch_add(1, std::memory_order_relaxed) % Tuning::statsThreadSlots; }
    void record(std::size_t slot, Action action, Millis now);
    // A request that named a customer without proving it (Decision::claim).
    void recordClaim(std::size_t slot, Claim claim);

    std::array<std::uint64_t, ActionCount> totals() const;
    std::array<std::uint64_t, ClaimCount> claims() const;
    std::vector<SecondCounts> perSecond(Millis now, std::size_t seconds) const;

private:
    struct Second {
        std::atomic<std::int64_t> second{-1};
        std::array<std::atomic<std::uint32_t>, ActionCount> counts{};
    };
    struct alignas(64) Slot {
        std::array<std::atomic<std::uint64_t>, ActionCount> totals{};
        std::array<std::atomic<std::uint64_t>, ClaimCount> claims{};
        std::unique_ptr<Second[]> ring;  // Tuning::statsSeconds entries, by second modulo
    };
    std::unique_ptr<Slot[]> m_slots;
    std::atomic<std::size_t> m_nextSlot{0};
};

} // namespace Floodgate::Core
