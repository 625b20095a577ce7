// SPDX-License-Identifier: GPL-3.0-or-later
// The pure parts of the sync (no I/O, tested on their own): how an entry's
// report is written for the report script and its answer read back, the
// circuit breaker that keeps a sick Redis off the request path, and the
// estimate of how far Redis's clock is from this node's.
#pragma once

#include "core/AddressList.h"
#include "core/Cluster.h"
#include "core/Time.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::Cluster {

// "QH1;H2;...#S1;S2;...;=T" (Scripts.cpp): the few numbers the script
// needs for a client far below its limits, in binary (what is left of the
// lease, the entry's quiet lease, each level's limit and total), the
// levels' headers,
// then the field Redis keeps (only a sliding window's buckets that are not
// zero, and a summary of the totals).
std::string encodeReport(const Core::SyncReport& report);
// "granted,reserved,leaseMs,lapseAt,now|F|F...", each F another node's
// field as Redis keeps it: the other nodes' counts come back aligned to the
// report's buckets (summed here, not in Redis). nullopt when it does not
// read (a level that is not numbers), which the sync counts as an error.
std::optional<Core::SyncAck> decodeAck(std::string_view text, const Core::SyncReport& report);

// A list entry as Redis keeps it (the list's hash, the change stream):
// range, reason, source, created at, created by and expiry (absolute, so it
// ends at the same moment on every node), and for an automatic ban its
// number (the client's escalation history), separated by 0x1f.
std::string encodeEntry(const Core::ListEntry& entry);
std::optional<Core::ListEntry> decodeEntry(std::string_view text);

// Closed while Redis answers; opens on a failure (a deadline passed, the
// connection broke, an error reply such as OOM or READONLY), after which
// nothing is sent but a probe every probeMs; the probe's success closes it.
class Breaker {
public:
    enum class State : std::uint8_t { Closed, Open };
    explicit Breaker(Core::Millis probeMs) : m_probeMs(probeMs) {}

    State state() const { return m_state; }
    // May the sync send now (closed), or is it time for a probe (open)?
    bool mayTry(Core::Millis now) const { return m_state == State::Closed || now >= m_nextProbe; }
    void success();
    void failure(Core::Millis now);
    std::uint64_t opened() const { return m_opened; }  // times it opened

private:
    Core::Millis m_probeMs;
    State m_state = State::Closed;
    Core::Millis m_nextProbe = 0;
    std::uint64_t m_opened = 0;
};

// Redis's clock minus this node's, from TIME answers: each sample's
// offset is taken at the middle of its round trip, and the sample with the
// shortest round trip of the last few wins (the least uncertain).
class ClockOffset {
public:
    // sentMs/receivedMs: this node's wall clock around the call; redisMicros: TIME's answer.
    void sample(Core::Millis sentMs, Core::Millis receivedMs, std::int64_t redisMicros);
    bool known() const { return m_known; }
    Core::Millis offsetMs() const { return m_offsetMs; }

private:
    static constexpr int Window = 8;
    struct Sample {
        Core::Millis rtt = 0;
        Core::Millis offset = 0;
    };
    Sample m_samples[Window];
    int m_count = 0;
    int m_next = 0;
    bool m_known = false;
    Core::Millis m_offsetMs = 0;
};

} // namespace Floodgate::Cluster
