// SPDX-License-Identifier: GPL-3.0-or-later
// limiter.log: one CSV line per throttled, blocked or would-be-throttled
// request (docs/BACKGROUND.md, N per D seconds), written by a background
// thread, up to Tuning::limiterLogLinesPerClientSecond lines a second for
// each client (and action and rule); the rest of that second's refusals go
// into one summary line whose `attempts` is how many it stands for, so the
// log accounts for every refusal and its size is bounded per client. Each
// listener thread has its own bounded ring of fixed-size records: pushing is
// a few copies and never waits; when a ring is full the thread folds the
// refusal into a small table of its own (per client, action and rule) and
// hands that table over when the ring has room again.
#pragma once

#include "core/Decision.h"
#include "core/Problem.h"
#include "http/SpscRing.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace Floodgate::Http {

inline constexpr const char* LimiterLogHeader =
    "time,action,rule,ip,attempts,method,path,query,user_agent,window_start,cookies,customer";

struct LogRecord {
    Core::Millis time = 0;
    Core::Action action = Core::Action::Throttle;
    Core::Action wouldBe = Core::Action::Throttle;  // for dry-run: what would have happened
    Core::Reason reason = Core::Reason::OverLimit;
    Core::ShortName rule;
    Core::IpAddress ip;        // the client, after trusted-proxy resolution
    Core::IpAddress peer;      // the TCP peer
    std::uint32_t attempts = 0;  // counted in the binding window
    std::uint32_t limit = 0;     // of the binding window
    Core::Millis windowMs = 0;
    Core::Millis windowStart = 0;
    Core::Millis retryAfterMs = 0;
    std::uint32_t cookies = 0;
    char forwardedFor[128] = {};  // the X-Forwarded-For chain a trusted proxy sent, if any
    // Truncated copies; `truncated` marks which were cut.
    char method[16] = {};
    char path[256] = {};
    char query[256] = {};
    char userAgent[192] = {};
    char customer[64] = {};
    // Not a customer: a customer it named without proof (Core::Decision::claim).
    Core::Claim claim = Core::Claim::None;
    char claimed[64] = {};
    // Refused requests this record stands for: more than one when a listener
    // thread folded them while its ring was full (`folded` set; the other
    // fields are the first one's, `time` the last one's).
    std::uint64_t refusals = 1;
    bool folded = false;
};

// A refusal kept in memory for the console and GET /api/v1/events.
struct Event {
    std::uint64_t id = 0;  // 1, 2, 3... in the order the writer saw them
    LogRecord record;
};

// The record of decision `d` on request `f` at `now` (strings cut to their
// fields' sizes): what the log writes and what `floodgate replay` explains.
void fillLogRecord(LogRecord& r, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer, std::string_view forwardedFor,
                   Core::Millis now);

// RFC 4180 line for a record (with CRLF), times in RFC 3339 UTC with
// milliseconds ("2026-11-22T05:00:00.123Z", Wire::Codec::formatTime).
// With `summarised` > 0 it is a summary line: the action is suffixed
// LimiterLogSummarySuffix ("throttle_summary") and `attempts` holds
// `summarised`, the refusals the line stands for.
std::string formatLogLine(const LogRecord& r, std::uint64_t summarised = 0);
inline constexpr std::string_view LimiterLogSummarySuffix = "_summary";

class LimiterLog {
public:
    // An empty path makes a log that counts but writes nothing (e.g. --log off).
    LimiterLog(std::string path, std::size_t producers, std::size_t recordsPerProducer = Core::Tuning::limiterLogRecordsPerThread);
    // The same, with a write failure's time read on `clock` (wall time); the
    // clock outlives the log. Records carry the time their request was decided at.
    LimiterLog(std::string path, std::size_t producers, const Core::Clock& clock, std::size_t recordsPerProducer = Core::Tuning::limiterLogRecordsPerThread);
    ~LimiterLog();

    // Opens the file (appending; writes the header if the file is new) and
    // starts the writer. False with a reason if the file cannot be opened.
    bool start(std::string* error);
    // Flushes what is queued and stops the writer.
    void stop();
    // Closes the file and opens its path again (SIGHUP after logrotate moved
    // it: the next lines go to a new file there, with its header). On
    // failure the old file is kept and written on, and `error` says why.
    bool reopen(std::string* error);

    // From listener thread `producer` only (each thread its own index).
    void push(std::size_t producer, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer,
              std::string_view forwardedFor, Core::Millis now);
    // From listener thread `producer` only, now and then (its sweep): hands
    // over the refusals it folded while its ring was full, if the ring has
    // room for them, so they reach the file when that thread sees no more
    // refusals. stop() takes what is left once the listener has stopped.
    void handOver(std::size_t producer);

    // The most recent refusals (at most Tuning::maxEventsKept), oldest first:
    // those with an id above `afterId`, at most `limit` of them (the newest
    // ones when there are more).
    std::vector<Event> events(std::uint64_t afterId, std::size_t limit) const;
    std::uint64_t lastEventId() const;

    // Lines on disk (with --log off: records handled).
    std::uint64_t written() const { return m_written.load(std::memory_order_relaxed); }
    // Refusals no line accounts for: a listener thread's ring was full and
    // its fold table too (more than Tuning::limiterLogFoldKinds distinct
    // actions and rules at once). Zero in practice.
    std::uint64_t dropped() const { return m_dropped.load(std::memory_order_relaxed); }
    // Refusals a listener thread folded because its ring was full (they
    // reach the file within summary lines).
    std::uint64_t folded() const;
    // Refusals written as part of summary lines (the rest have a line each).
    std::uint64_t summarised() const { return m_summarised.load(std::memory_order_relaxed); }
    // Lines the file did not take (a full disk, a quota, the file size
    // limit, an I/O error). A record cut by a failed write is cut off again
    // (or ended with a line break), so the file stays whole lines.
    std::uint64_t failed() const { return m_failed.load(std::memory_order_relaxed); }
    bool failing() const { return m_failing.load(std::memory_order_relaxed); }  // the last write failed
    // The latest write failure, for the console's banner (said once on
    // stderr per episode, and again when writing works again).
    std::optional<Core::Problem> lastProblem() const;
    const std::string& path() const { return m_path; }
    // Blocks until every record pushed before the call is written, summary
    // lines of the seconds still open included (tests). Refusals a listener
    // thread folded are not records yet: they come at its next handOver().
    void flush();

private:
    // A listener thread's own: its ring and its fold table.
    struct Producer {
        explicit Producer(std::size_t records);
        SpscRing<LogRecord> ring;
        // Refusals that found the ring full, one record per client, action
        // and rule (record.refusals counts them); this thread's alone, so no
        // atomics. Handed over whole when the ring has room for all of them.
        std::vector<LogRecord> folded;                 // capacity Tuning::limiterLogFoldSlots, allocated once
        std::array<std::int16_t, 4 * Core::Tuning::limiterLogFoldSlots> index;  // open addressing into `folded`; -1 empty
        std::atomic<std::uint64_t> foldedTotal{0};  // written by this thread only
    };
    // The writer's view of one client, action and rule in the current second.
    struct Key {
        Core::IpAddress ip;
        Core::Action action;
        std::string rule;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const;
    };
    struct Pending {
        std::int64_t second = INT64_MIN;   // of the records (the listener's clock)
        std::int64_t opened = INT64_MIN;   // the writer's clock's second when `second` began
        std::uint32_t lines = 0;             // lines of their own written in `second`
        std::unique_ptr<LogRecord> summary;  // refusals beyond them (summary->refusals); null: none
    };

    // Opens m_path for appending: sets m_fd, m_headerPending, m_torn.
    bool openFile(std::string* error);
    void run();
    void fold(Producer& p, const Core::Decision& d, const Core::RequestFacts& f, std::string_view customer,
              std::string_view forwardedFor, Core::Millis now);
    static bool handOver(Producer& p);
    // Writes at most `perRing` records of each ring; true when some are left.
    // With `closeAll`, when none is left, the summary lines of every second
    // still open are written too.
    bool drainOnce(std::size_t perRing, bool closeAll);
    // One record: a line of its own while its client has budget this
    // second, else into the client's summary.
    void take(const LogRecord& r, std::string& batch, std::uint64_t& lines);
    // Writes the summary lines of the seconds before `second`, and of those
    // opened before the writer's clock reached `wallSecond`.
    void close(std::int64_t second, std::int64_t wallSecond, std::string& batch, std::uint64_t& lines);
    // One summary line: the refusals `summary` stands for.
    void writeSummary(const LogRecord& summary, std::string& batch, std::uint64_t& lines);
    // Appends `lines` formatted records (and the header / a line break when
    // due), counts what landed and what did not, reports a failure.
    void writeOut(const std::string& batch, std::uint64_t lines);

    std::string m_path;
    const Core::Clock& m_clock;
    std::vector<std::unique_ptr<Producer>> m_producers;
    std::unordered_map<Key, Pending, KeyHash> m_pending;  // writer thread only
    std::int64_t m_closedBefore = INT64_MIN;  // summaries of the seconds before it are written (writer only)
    std::int64_t m_closedWall = INT64_MIN;    // ... and of those opened before this second of the writer's clock
    std::int64_t m_latestSecond = INT64_MIN;  // of the newest record the writer saw (writer only)
    std::int64_t m_wallSecond = 0;            // the writer's clock, read once per pass
    std::uint64_t m_flushAsked = 0;  // under m_mutex
    std::uint64_t m_flushDone = 0;   // under m_mutex
    std::atomic<std::uint64_t> m_dropped{0};
    std::atomic<std::uint64_t> m_summarised{0};
    std::thread m_thread;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_drained;
    bool m_stop = false;
    bool m_started = false;
    std::atomic<std::uint64_t> m_written{0};
    mutable std::mutex m_eventsMutex;
    std::vector<Event> m_events;  // a circular buffer of Tuning::maxEventsKept, allocated once; event n in slot (n - 1) % size
    std::uint64_t m_nextEventId = 1;
    std::mutex m_fileMutex;       // m_fd, m_headerPending, m_torn: the writer thread and reopen()
    int m_fd = -1;                // the file, O_APPEND; -1 with --log off
    bool m_headerPending = false;  // the file has no header line yet (writer thread only, after start)
    bool m_torn = false;           // the file ends inside a record
    std::atomic<std::uint64_t> m_failed{0};
    std::atomic<bool> m_failing{false};
    mutable std::mutex m_problemMutex;
    std::optional<Core::Problem> m_problem;
};

} // namespace Floodgate::Http
