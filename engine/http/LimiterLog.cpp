// SPDX-License-Identifier: MIT
#include "LimiterLog.h"

#include "Codec.h"
#include "Csv.h"
#include "PrivateFiles.h"
#include "Tuning.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace Floodgate::Http {

std::string formatLogLine(const LogRecord& r)
{
    std::string out;
    out.reserve(256);
    out += Core::Codec::formatTime(r.time, true);
    out += ',';
    out += Core::toString(r.action);
    out += ',';
    Core::Csv::appendField(out, r.rule.view());
    out += ',';
    out += r.ip.toString();
    out += ',';
    out += std::to_string(r.attempts);
    out += ',';
    Core::Csv::appendField(out, r.method);
    out += ',';
    Core::Csv::appendField(out, r.path);
    out += ',';
    Core::Csv::appendField(out, r.query);
    out += ',';
    Core::Csv::appendField(out, r.userAgent);
    out += ',';
    out += r.windowStart ? Core::Codec::formatTime(r.windowStart, true) : std::string();
    out += ',';
    out += std::to_string(r.cookies);
    out += ',';
    Core::Csv::appendField(out, r.customer);
    out += "\r\n";
    return out;
}

LimiterLog::LimiterLog(std::string path, std::size_t producers, std::size_t recordsPerProducer)
    : m_path(std::move(path))
{
    for (std::size_t i = 0; i < std::max<std::size_t>(1, producers); ++i)
        m_rings.push_back(std::make_unique<SpscRing<LogRecord>>(recordsPerProducer));
}

LimiterLog::~LimiterLog()
{
    stop();
}

bool LimiterLog::start(std::string* error)
{
    if (!m_path.empty()) {
        // Visitors' addresses: the owner's alone (created 0600, an older
        // looser file tightened).
        std::string why;
        const int fd = Files::openPrivateAppend(m_path, nullptr, &why);
        if (fd < 0) {
            if (error)
                *error = "limiter log: " + why;
            return false;
        }
        Files::tighten(m_path);
        struct stat st {};
        const bool existed = ::fstat(fd, &st) == 0 && st.st_size > 0;
        std::FILE* f = ::fdopen(fd, "ab");
        if (!f) {
            ::close(fd);
            if (error)
                *error = "limiter log: cannot open " + m_path + ": " + std::strerror(errno);
            return false;
        }
        if (!existed) {
            std::fputs(LimiterLogHeader, f);
            std::fputs("\r\n", f);
            std::fflush(f);
        }
        m_file = f;
    }
    m_started = true;
    m_thread = std::thread([this] { run(); });
    return true;
}

void LimiterLog::stop()
{
    if (!m_started)
        return;
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
    if (m_file) {
        std::fclose(static_cast<std::FILE*>(m_file));
        m_file = nullptr;
    }
    m_started = false;
}

void LimiterLog::push(std::size_t producer, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer,
                      std::string_view forwardedFor, Core::Millis now)
{
    SpscRing<LogRecord>& ring = *m_rings[producer % m_rings.size()];
    LogRecord* slot = ring.reserve();
    if (!slot)
        return;  // full: the request never waits for the disk
    LogRecord& r = *slot;
    r.time = now;
    r.action = d.action;
    r.wouldBe = d.wouldBe;
    r.reason = d.reason;
    r.rule = d.rule;
    r.ip = f.client;
    r.peer = f.peer;
    r.attempts = d.count;
    r.limit = d.limit;
    r.windowMs = d.windowMs;
    r.windowStart = d.windowStartMs;
    r.retryAfterMs = d.retryAfterMs;
    r.cookies = f.cookieCount;
    copyTruncated(r.forwardedFor, sizeof r.forwardedFor, forwardedFor);
    copyTruncated(r.method, sizeof r.method, f.method);
    copyTruncated(r.path, sizeof r.path, f.path);
    copyTruncated(r.query, sizeof r.query, f.query);
    copyTruncated(r.userAgent, sizeof r.userAgent, f.userAgent);
    copyTruncated(r.customer, sizeof r.customer, customer);
    ring.commit();
    // No notification: the writer polls every few milliseconds, so producers
    // share no cache line with it or with each other.
}

std::uint64_t LimiterLog::dropped() const
{
    std::uint64_t n = 0;
    for (const auto& r : m_rings)
        n += r->dropped();
    return n;
}

bool LimiterLog::drainOnce(std::size_t perRing)
{
    bool left = false;
    std::string batch;
    const std::size_t capacity = Core::Tuning::maxEventsKept;
    for (auto& ring : m_rings) {
        if (ring->empty())
            continue;
        std::lock_guard lock(m_eventsMutex);
        if (m_events.size() != capacity)
            m_events.resize(capacity);
        const std::size_t n = ring->drain(
            [&](const LogRecord& r) {
                if (m_file)
                    batch += formatLogLine(r);
                // Event n sits in slot (n - 1) % capacity: the newest
                // overwrite the oldest; no allocation per event.
                m_events[(m_nextEventId - 1) % capacity] = Event{m_nextEventId, r};
                ++m_nextEventId;
            },
            perRing);
        left = left || !ring->empty();
        m_written.fetch_add(n, std::memory_order_relaxed);
    }
    if (!batch.empty() && m_file) {
        std::fwrite(batch.data(), 1, batch.size(), static_cast<std::FILE*>(m_file));
        std::fflush(static_cast<std::FILE*>(m_file));
    }
    return left;
}

void LimiterLog::run()
{
    // Background work. When it shares a core with a listener thread (two
    // cores, a flood) the listener must win: a low priority (a nice value
    // applies to this thread alone on Linux; if it cannot be set, the log
    // still works), and small chunks with a pause between them, so it never
    // holds the core for more than a fraction of a millisecond.
    constexpr std::size_t CHUNK = 256;
    ::setpriority(PRIO_PROCESS, pid_t(::syscall(SYS_gettid)), 10);
    while (true) {
        const bool left = drainOnce(CHUNK);
        std::unique_lock lock(m_mutex);
        if (!left)
            m_drained.notify_all();
        if (m_stop)
            break;
        m_wake.wait_for(lock, std::chrono::milliseconds(left ? 1 : 20));
    }
    while (drainOnce(SIZE_MAX)) {
    }
    m_drained.notify_all();
}

void LimiterLog::flush()
{
    std::unique_lock lock(m_mutex);
    m_wake.notify_all();
    m_drained.wait_for(lock, std::chrono::seconds(5), [this] {
        for (const auto& r : m_rings)
            if (!r->empty())
                return false;
        return true;
    });
}

std::vector<Event> LimiterLog::events(std::uint64_t afterId, std::size_t limit) const
{
    std::lock_guard lock(m_eventsMutex);
    std::vector<Event> out;
    // Ids are consecutive and the ring keeps the newest: which ones are
    // there, and where, is arithmetic.
    const std::uint64_t newest = m_nextEventId - 1;
    const std::uint64_t kept = std::min<std::uint64_t>(newest, m_events.size());
    if (kept == 0 || limit == 0 || afterId >= newest)
        return out;
    std::uint64_t from = std::max(newest - kept + 1, afterId + 1);
    if (newest - from + 1 > limit)
        from = newest - limit + 1;
    out.reserve(std::size_t(newest - from + 1));
    for (std::uint64_t id = from; id <= newest; ++id)
        out.push_back(m_events[std::size_t((id - 1) % m_events.size())]);
    return out;
}

std::uint64_t LimiterLog::lastEventId() const
{
    std::lock_guard lock(m_eventsMutex);
    return m_nextEventId - 1;
}

} // namespace Floodgate::Http
