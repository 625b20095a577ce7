// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/LimiterLog.h"

#include "wire/Codec.h"
#include "wire/Csv.h"
#include "files/PrivateFiles.h"
#include "core/Hash.h"
#include "core/Printable.h"
#include "core/Tuning.h"

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace Floodgate::Http {

std::string formatLogLine(const LogRecord& r, std::uint64_t summarised)
{
    std::string out;
    out.reserve(256);
    // What a visitor chose (a header, the target) may hold bytes a terminal
    // obeys when the log is read there (a tab, a C1 CSI, a bidi override,
    // no UTF-8 at all): written as visible escapes, then as a CSV field.
    std::string shown;
    const auto field = [&](std::string_view s) {
        shown.clear();
        Core::appendPrintable(shown, s);
        Wire::Csv::appendField(out, shown);
    };
    out += Wire::Codec::formatTime(r.time, true);
    out += ',';
    out += Core::toString(r.action);
    if (summarised)
        out += LimiterLogSummarySuffix;
    out += ',';
    field(r.rule.view());
    out += ',';
    out += r.ip.toString();
    out += ',';
    out += std::to_string(summarised ? summarised : std::uint64_t(r.attempts));
    out += ',';
    field(r.method);
    out += ',';
    field(r.path);
    out += ',';
    field(r.query);
    out += ',';
    field(r.userAgent);
    out += ',';
    out += r.windowStart ? Wire::Codec::formatTime(r.windowStart, true) : std::string();
    out += ',';
    out += std::to_string(r.cookies);
    out += ',';
    field(r.customer);
    out += "\r\n";
    return out;
}

LimiterLog::LimiterLog(std::string path, std::size_t producers, std::size_t recordsPerProducer)
    : LimiterLog(std::move(path), producers, Core::systemClock(), recordsPerProducer)
{
}

LimiterLog::LimiterLog(std::string path, std::size_t producers, const Core::Clock& clock, std::size_t recordsPerProducer)
    : m_path(std::move(path)), m_clock(clock)
{
    for (std::size_t i = 0; i < std::max<std::size_t>(1, producers); ++i)
        m_producers.push_back(std::make_unique<Producer>(recordsPerProducer));
}

LimiterLog::Producer::Producer(std::size_t records) : ring(records)
{
    folded.reserve(Core::Tuning::limiterLogFoldSlots);
    index.fill(-1);
}

namespace {

// The hash of a client, action and rule: the writer's per-second table and
// a listener thread's fold table key records the same way.
std::uint64_t recordHash(const Core::IpAddress& ip, Core::Action action, std::string_view rule)
{
    return Core::hashWords(ip.hi(), ip.lo(), (std::uint64_t(action) << 56) ^ std::hash<std::string_view>{}(rule));
}

}  // namespace

std::size_t LimiterLog::KeyHash::operator()(const Key& k) const
{
    return std::size_t(recordHash(k.ip, k.action, k.rule));
}

LimiterLog::~LimiterLog()
{
    stop();
}

bool LimiterLog::openFile(std::string* error)
{
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
    const off_t size = ::fstat(fd, &st) == 0 ? st.st_size : 0;
    m_fd = fd;
    m_headerPending = size == 0;
    m_torn = false;
    if (size > 0) {
        // A file cut mid-record (a full disk before a restart): the
        // next record starts on a line of its own.
        char last = '\n';
        if (const int reader = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC); reader >= 0) {
            if (::pread(reader, &last, 1, size - 1) != 1)
                last = '\n';
            ::close(reader);
        }
        m_torn = last != '\n';
    }
    if (m_headerPending || m_torn)
        writeOut(std::string(), 0);
    return true;
}

bool LimiterLog::start(std::string* error)
{
    if (!m_path.empty() && !openFile(error))
        return false;
    m_started = true;
    m_thread = std::thread([this] { run(); });
    return true;
}

bool LimiterLog::reopen(std::string* error)
{
    std::lock_guard lock(m_fileMutex);
    if (m_path.empty() || m_fd < 0)
        return true;  // --log off, or not started: nothing to reopen
    const int old = m_fd;
    if (!openFile(error)) {
        m_fd = old;
        return false;
    }
    // Whatever the old descriptor still had was written (write(2) is
    // unbuffered): closing it loses nothing.
    ::close(old);
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
    std::lock_guard fileLock(m_fileMutex);
    // The listener has stopped (its owner stops it first): what its threads
    // folded and never handed over is taken here, then every second still
    // open is summed up.
    {
        std::string batch;
        std::uint64_t lines = 0;
        for (auto& p : m_producers) {
            for (const LogRecord& r : p->folded)
                take(r, batch, lines);
            p->folded.clear();
            p->index.fill(-1);
        }
        close(INT64_MAX, INT64_MAX, batch, lines);
        if (m_fd >= 0 && !batch.empty())
            writeOut(batch, lines);
    }
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    m_started = false;
}

void LimiterLog::writeOut(const std::string& batch, std::uint64_t lines)
{
    // What goes before the records: a line break ending a record a failed
    // write cut (when it could not be cut off), and the header line while
    // the file has none.
    std::string out;
    if (m_torn)
        out += "\r\n";
    if (m_headerPending) {
        out += LimiterLogHeader;
        out += "\r\n";
    }
    const std::size_t prefix = out.size();
    out += batch;
    std::size_t done = 0;
    int error = 0;
    while (done < out.size()) {
        const ssize_t n = ::write(m_fd, out.data() + done, out.size() - done);
        if (n > 0) {
            done += std::size_t(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            error = n < 0 ? errno : EIO;  // ENOSPC, EDQUOT, EFBIG, EIO
            break;
        }
    }
    // On disk now: whole lines up to `kept`. A record the failure cut in
    // two is cut off (the file had grown by `done` bytes), so the next
    // write starts on a line boundary; if the file cannot be shortened,
    // the next write begins with a line break instead.
    std::size_t kept = done;
    if (done < out.size()) {
        const auto nl = std::string_view(out.data(), done).rfind('\n');
        const std::size_t whole = nl == std::string_view::npos ? 0 : nl + 1;
        const off_t cut = off_t(done - whole);
        const off_t end = cut > 0 ? ::lseek(m_fd, 0, SEEK_END) : 0;
        if (cut == 0 || (end >= cut && ::ftruncate(m_fd, end - cut) == 0))
            kept = whole;
    }
    if (kept > 0)
        m_torn = out[kept - 1] != '\n';
    if (kept >= prefix)
        m_headerPending = false;
    std::uint64_t landed = 0;
    if (kept > prefix)
        landed = std::uint64_t(std::count(out.begin() + std::ptrdiff_t(prefix), out.begin() + std::ptrdiff_t(kept), '\n'));
    m_written.fetch_add(landed, std::memory_order_relaxed);
    if (done == out.size()) {
        if (m_failing.exchange(false, std::memory_order_relaxed))
            std::fprintf(stderr, "floodgate: limiter log %s: writing again (%llu lines were lost)\n", m_path.c_str(),
                         (unsigned long long)m_failed.load(std::memory_order_relaxed));
        return;
    }
    m_failed.fetch_add(lines - landed, std::memory_order_relaxed);
    if (m_failing.exchange(true, std::memory_order_relaxed))
        return;  // said once per episode
    std::string message = "cannot write " + m_path + ": " + std::strerror(error)
        + "; refusals are not logged (floodgate_limiter_log_lines_total{result=\"failed\"} counts them) until it can be written again";
    std::fprintf(stderr, "floodgate: limiter log: %s\n", message.c_str());
    std::lock_guard lock(m_problemMutex);
    const std::uint64_t serial = m_problem ? m_problem->serial + 1 : 1;
    m_problem = Core::Problem{serial, m_clock.now(), std::move(message)};
}

std::optional<Core::Problem> LimiterLog::lastProblem() const
{
    std::lock_guard lock(m_problemMutex);
    return m_problem;
}

void fillLogRecord(LogRecord& r, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer, std::string_view forwardedFor,
                   Core::Millis now)
{
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
    r.claim = d.claim;
    copyTruncated(r.claimed, sizeof r.claimed, d.claimed.view());
}

void LimiterLog::push(std::size_t producer, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer,
                      std::string_view forwardedFor, Core::Millis now)
{
    Producer& p = *m_producers[producer % m_producers.size()];
    // While refusals are folded, later ones are folded too (the ring gets
    // room for the table as the writer drains it, and the order holds).
    if (p.folded.empty() || handOver(p)) {
        if (LogRecord* slot = p.ring.tryReserve()) {
            fillLogRecord(*slot, d, f, customer, forwardedFor, now);
            slot->refusals = 1;
            slot->folded = false;
            p.ring.commit();
            // No notification: the writer polls every few milliseconds, so
            // producers share no cache line with it or with each other.
            return;
        }
    }
    fold(p, d, f, customer, forwardedFor, now);  // full: the request never waits for the disk
}

void LimiterLog::fold(Producer& p, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer,
                      std::string_view forwardedFor, Core::Millis now)
{
    constexpr std::size_t mask = std::tuple_size_v<decltype(p.index)> - 1;
    static_assert((mask & (mask + 1)) == 0, "the index is a power of two");
    const std::string_view rule = d.rule.view();
    // The slot of (ip, action, rule) in the index: its record, or the empty
    // place for it (the index is at most a quarter full: probing ends).
    auto probe = [&](const Core::IpAddress& ip) {
        std::size_t i = std::size_t(recordHash(ip, d.action, rule)) & mask;
        for (; p.index[i] >= 0; i = (i + 1) & mask) {
            const LogRecord& r = p.folded[std::size_t(p.index[i])];
            if (r.ip == ip && r.action == d.action && r.rule.view() == rule)
                break;
        }
        return i;
    };
    p.foldedTotal.store(p.foldedTotal.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    Core::IpAddress ip = f.client;
    std::size_t at = probe(ip);
    if (p.index[at] < 0 && p.folded.size() >= Core::Tuning::limiterLogFoldSlots - Core::Tuning::limiterLogFoldKinds) {
        // Past the clients the table tells apart: counted with every other
        // such client under the unspecified address.
        ip = Core::IpAddress{};
        at = probe(ip);
        if (p.index[at] < 0 && p.folded.size() >= Core::Tuning::limiterLogFoldSlots) {
            m_dropped.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    if (p.index[at] >= 0) {
        LogRecord& r = p.folded[std::size_t(p.index[at])];
        ++r.refusals;
        r.time = now;
        return;
    }
    p.index[at] = std::int16_t(p.folded.size());
    LogRecord& r = p.folded.emplace_back();  // within the capacity reserved: no allocation
    fillLogRecord(r, d, f, customer, forwardedFor, now);
    r.ip = ip;
    r.refusals = 1;
    r.folded = true;
}

bool LimiterLog::handOver(Producer& p)
{
    if (p.folded.empty())
        return true;
    if (p.ring.room() < p.folded.size())
        return false;
    for (const LogRecord& r : p.folded) {
        *p.ring.tryReserve() = r;
        p.ring.commit();
    }
    p.folded.clear();
    p.index.fill(-1);
    return true;
}

std::uint64_t LimiterLog::folded() const
{
    std::uint64_t n = 0;
    for (const auto& p : m_producers)
        n += p->foldedTotal.load(std::memory_order_relaxed);
    return n;
}

void LimiterLog::handOver(std::size_t producer)
{
    handOver(*m_producers[producer % m_producers.size()]);
}

void LimiterLog::take(const LogRecord& r, std::string& batch, std::uint64_t& lines)
{
    if (m_path.empty()) {
        m_written.fetch_add(1, std::memory_order_relaxed);  // --log off: counted as handled
        return;
    }
    const std::int64_t second = Core::floorDiv(r.time, Core::SECOND);
    m_latestSecond = std::max(m_latestSecond, second);
    Pending& e = m_pending[Key{r.ip, r.action, std::string(r.rule.view())}];
    if (second > e.second) {
        // A new second for this client: the last one's summary, then a
        // fresh budget. (A record of an earlier second, from a thread that
        // was behind, counts in the current one.)
        if (e.summary) {
            writeSummary(*e.summary, batch, lines);
            e.summary.reset();
        }
        e.second = second;
        e.opened = m_wallSecond;
        e.lines = 0;
    }
    if (!r.folded && r.refusals == 1 && e.lines < Core::Tuning::limiterLogLinesPerClientSecond) {
        batch += formatLogLine(r);
        ++lines;
        ++e.lines;
        return;
    }
    if (!e.summary) {
        e.summary = std::make_unique<LogRecord>(r);
        return;
    }
    e.summary->refusals += r.refusals;
    e.summary->time = std::max(e.summary->time, r.time);
}

void LimiterLog::writeSummary(const LogRecord& summary, std::string& batch, std::uint64_t& lines)
{
    batch += formatLogLine(summary, summary.refusals);
    ++lines;
    m_summarised.fetch_add(summary.refusals, std::memory_order_relaxed);
}

void LimiterLog::close(std::int64_t second, std::int64_t wallSecond, std::string& batch, std::uint64_t& lines)
{
    for (auto it = m_pending.begin(); it != m_pending.end();) {
        Pending& e = it->second;
        if (e.second >= second && e.opened >= wallSecond) {
            ++it;
            continue;
        }
        if (e.summary)
            writeSummary(*e.summary, batch, lines);
        it = m_pending.erase(it);
    }
    m_closedBefore = std::max(m_closedBefore, second);
    m_closedWall = std::max(m_closedWall, wallSecond);
}

bool LimiterLog::drainOnce(std::size_t perRing, bool closeAll)
{
    bool left = false;
    std::string batch;
    std::uint64_t lines = 0;
    const std::size_t capacity = Core::Tuning::maxEventsKept;
    m_wallSecond = Core::floorDiv(m_clock.now(), Core::SECOND);
    for (auto& p : m_producers) {
        SpscRing<LogRecord>& ring = p->ring;
        if (ring.empty())
            continue;
        std::lock_guard lock(m_eventsMutex);
        if (m_events.size() != capacity)
            m_events.resize(capacity);
        ring.drain(
            [&](const LogRecord& r) {
                take(r, batch, lines);
                // Event n sits in slot (n - 1) % capacity: the newest
                // overwrite the oldest; no allocation per event.
                m_events[(m_nextEventId - 1) % capacity] = Event{m_nextEventId, r};
                ++m_nextEventId;
            },
            perRing);
        left = left || !ring.empty();
    }
    // A client's second is over once a later record came, or once it has
    // been open for a second of the writer's clock (the listener may decide
    // on another clock): its summary is written. Checked when either second
    // moves, not per record.
    if (closeAll && !left)
        close(INT64_MAX, INT64_MAX, batch, lines);
    else if ((m_latestSecond > m_closedBefore || m_wallSecond > m_closedWall) && !m_pending.empty())
        close(m_latestSecond, m_wallSecond, batch, lines);
    if (!batch.empty()) {
        std::lock_guard fileLock(m_fileMutex);
        writeOut(batch, lines);
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
    // Producers never notify it, so it looks every 20 ms while refusals
    // come (1 ms while a ring is still full). After a second with none and
    // no client's second open it looks every 200 ms: an idle server is not
    // woken 50 times a second for nothing (a refusal after a quiet spell is
    // written within 200 ms; flush() and stop() wake it at once).
    constexpr std::size_t CHUNK = 256;
    constexpr auto BUSY_POLL = std::chrono::milliseconds(20);
    constexpr auto QUIET_POLL = std::chrono::milliseconds(200);
    constexpr int POLLS_BEFORE_QUIET = 50;
    ::setpriority(PRIO_PROCESS, pid_t(::syscall(SYS_gettid)), 10);
    std::uint64_t asked = 0;
    std::uint64_t drainedBefore = m_nextEventId;
    int emptyPolls = 0;
    while (true) {
        const bool left = drainOnce(CHUNK, asked > 0);
        const bool empty = !left && m_nextEventId == drainedBefore && m_pending.empty();
        drainedBefore = m_nextEventId;
        emptyPolls = empty ? std::min(emptyPolls + 1, POLLS_BEFORE_QUIET) : 0;
        std::unique_lock lock(m_mutex);
        if (!left) {
            m_flushDone = std::max(m_flushDone, asked);
            m_drained.notify_all();
        }
        if (m_stop)
            break;
        if (m_flushAsked == m_flushDone)
            m_wake.wait_for(lock, left ? std::chrono::milliseconds(1) : emptyPolls == POLLS_BEFORE_QUIET ? QUIET_POLL : BUSY_POLL);
        // A flush asked before this drain began covers what was pushed before it.
        asked = m_flushAsked > m_flushDone ? m_flushAsked : 0;
    }
    while (drainOnce(SIZE_MAX, true)) {
    }
    std::lock_guard lock(m_mutex);
    m_flushDone = m_flushAsked;
    m_drained.notify_all();
}

void LimiterLog::flush()
{
    std::unique_lock lock(m_mutex);
    const std::uint64_t ask = ++m_flushAsked;
    m_wake.notify_all();
    m_drained.wait_for(lock, std::chrono::seconds(5), [&] { return m_flushDone >= ask || !m_started; });
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
