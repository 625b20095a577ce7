// SPDX-License-Identifier: GPL-3.0-or-later
// Listener counters for /metrics (Prometheus text format). Each listener
// thread writes its own padded slot with plain stores (one writer per slot);
// the admin thread reads and sums them.
#pragma once

#include "core/Decision.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace Floodgate::Core {
class Engine;
}

namespace Floodgate::Http {

class LimiterLog;

class ListenerMetrics {
public:
    static constexpr std::size_t MaxRules = 64;
    // Upper bounds of the decision-latency histogram, in nanoseconds.
    static constexpr std::array<std::int64_t, 9> LatencyBoundsNs = {100, 250, 500, 1000, 2500, 5000, 10000, 100000, 1000000};
    // One decision in this many is timed (reading the clock costs as much as a decision).
    static constexpr std::uint32_t LatencySampleEvery = 16;

    explicit ListenerMetrics(std::size_t threads);
    ~ListenerMetrics();

    // Refusals (and dry-run would-be refusals) by action and rule.
    void countRefusal(std::size_t thread, const Core::Decision& d);
    void countHttpError(std::size_t thread, int status);
    void observeLatency(std::size_t thread, std::int64_t ns);
    bool shouldSample(std::size_t thread);

    std::atomic<std::int64_t> openConnections{0};
    std::atomic<std::uint64_t> acceptedConnections{0};
    std::atomic<std::uint64_t> rejectedConnections{0};  // over the connection cap
    std::atomic<std::uint64_t> acceptErrors{0};         // EMFILE and friends (accept backed off)
    std::atomic<std::uint64_t> upstreamErrors{0};       // 502/504 answered

    // The whole /metrics page.
    std::string render(const Core::Engine& engine, const LimiterLog* log, Core::Millis now) const;

private:
    struct Slot;
    std::unique_ptr<Slot[]> m_slots;
    std::size_t m_threads;
};

} // namespace Floodgate::Http
