// SPDX-License-Identifier: GPL-3.0-or-later
// Replays access logs through the real engine (Core::Engine::decide, the
// code live traffic goes through) on the logs' own clock, for one or more
// configurations side by side, and keeps what an operator needs to judge
// them: totals by action and rule, and every client that would have been
// refused with its first refusal and why.
//
// Time: lines are decided in timestamp order. A log with one-second
// timestamps (combined, common, $time_local, $time_iso8601) has the lines
// of one second spread evenly over it in file order: n lines of second s are
// decided at s + i*1000/n ms (i = 0..n-1), so a burst stays a burst and
// nothing moves into the next second. Lines with milliseconds (nginx
// $msec, limiter.log) keep their time. Lines are held in a window of
// ReorderSeconds to put slightly late ones (nginx logs a request when it
// ends) in order; a line earlier than what was already decided is decided
// at the time reached (the engine's clock never steps back) and counted.
// The window holds at most ReorderMaxLines lines: when it is full, the
// oldest second is decided as far as it has come, over the first half of
// what is left of it, and stays open: its later lines are in order, held
// as before and spread over the rest (a second of 3,000,000 lines is
// decided in parts over 1/2, 1/4, ... of it, in file order, and not one
// line of it is out of order).
//
// Client identity: each line's facts are built by Http::describeRequest,
// the function the listener uses, with the configuration's trusted proxies
// (settings.trusted_proxies plus the extra ranges given) and the log's
// X-Forwarded-For. Cooldowns start on an allowed request the server
// answered 2xx (or whose status the log does not give). A log keeps no
// Range header: a 206 (Partial Content) answer is taken as a request that
// carried one, so Range continuations are not counted, as live.
//
// Memory: the files are streamed; what grows is the engine's table (bounded
// by settings.max_tracked_keys), the reorder window, and a per-client
// counter table bounded by the same number (clients beyond it are counted,
// not listed).
#pragma once

#include "core/AddressList.h"
#include "core/Decision.h"
#include "core/Rules.h"
#include "replay/LogFormat.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace Floodgate::Replay {

inline constexpr Core::Millis ReorderSeconds = 10;
// At most this many lines are held for reordering, whatever the time they
// span (memory: their text); a second with more is decided in parts (above).
inline constexpr std::size_t ReorderMaxLines = 200'000;
// The engine forgets idle clients (Engine::purge) this often in log time.
// A running Floodgate does it every second of wall time; a replay goes
// through hours a second, and a purge walks the whole table. What a purge
// drops no longer counts, so how often it runs changes no decision, only
// how many idle entries wait (the table's capacity still bounds them).
inline constexpr Core::Millis PurgeEveryMs = 5 * Core::MINUTE;
// Lines that did not parse: how many are kept to show (all are counted).
inline constexpr std::size_t BadLinesKept = 10;

// One set of rules to replay the logs through.
struct Configuration {
    std::string name;  // "rules in force", "edited", a file name
    Core::EngineConfig config = Core::defaultConfig();
    std::vector<Core::ListEntry> safelist;
    std::vector<Core::ListEntry> blocklist;
};

struct Progress {
    std::uint64_t lines = 0;        // read so far, every file
    std::uint64_t bytesDone = 0;    // of the files on disk (compressed bytes for gzip)
    std::uint64_t bytesTotal = 0;
    std::size_t file = 0;           // the index of the file being read
};

// Where a request came from in the logs.
struct LineRef {
    std::size_t file = 0;
    std::uint64_t line = 0;
};

// One decision, as --decisions writes it.
struct DecisionEvent {
    std::size_t run = 0;  // which configuration
    LineRef where;
    Core::Millis time = 0;
    const Core::RequestFacts* facts = nullptr;
    const Core::Decision* decision = nullptr;
};

struct Input {
    std::vector<std::string> files;                // read in this order
    LogFormat format = LogFormat::Auto;            // Auto: recognised per file
    std::vector<Core::Cidr> trustedProxies;        // added to each configuration's settings.trusted_proxies
    // A query parameter of the logged requests that names the customer each
    // one proved when it was served (a log keeps no API key); empty: none,
    // and only a limiter.log's customer column names one.
    std::string customerParam;
    std::optional<Core::Millis> from, to;          // lines outside [from, to] are skipped (counted)
    std::function<void(const Progress&)> progress; // every ProgressEveryLines lines and at the end
    std::function<bool()> cancelled;               // checked as often; true stops the replay
    std::function<void(const DecisionEvent&)> onDecision;  // every decision of every configuration
};
inline constexpr std::uint64_t ProgressEveryLines = 65'536;

struct BadLine {
    LineRef where;
    std::string why;
};

struct FileSummary {
    std::string path;
    LogFormat format = LogFormat::Auto;  // as read (Auto: the file was empty or not recognised)
    bool gzip = false;
    std::uint64_t lines = 0;
    std::uint64_t requests = 0;
    std::uint64_t bad = 0;
    std::string error;  // reading stopped early (a truncated gzip...); empty when read to the end
};

struct Refusal {
    LineRef where;
    Core::Millis time = 0;
    std::string method;
    std::string path;
    Core::Action action = Core::Action::Throttle;
    Core::Reason reason = Core::Reason::OverLimit;
    std::string rule;
    std::uint32_t count = 0;
    std::uint32_t limit = 0;
    Core::Millis windowMs = 0;
    Core::Millis retryAfterMs = 0;
    std::string why;  // the sentence the console's events show (Http::explain)
};

// A client the rules refused at least once, by its counting key (an IPv6
// client's /64, Engine::countingRange).
struct RefusedClient {
    Core::Cidr key;
    std::string address;     // the address, or the range for a wider counting key
    std::string userAgent;   // of its first refused request
    std::string crawler;     // knownCrawler(userAgent), empty when none
    std::uint64_t requests = 0;
    std::uint64_t refusals = 0;
    Refusal first;
};

struct RunResult {
    std::string name;
    std::array<std::uint64_t, Core::ActionCount> byAction{};
    std::map<std::string, std::uint64_t> refusalsByRule;  // the binding rule of each refusal ("automatic ban": escalation's, made during the replay)
    std::vector<RefusedClient> refused;  // most refusals first
    std::uint64_t clientsSeen = 0;       // distinct counting keys tracked
    std::uint64_t untrackedRequests = 0;  // of clients first seen after the client table was full: in the totals, not listed
    std::uint64_t untrackedRefusals = 0;
    std::uint64_t requests() const;
    std::uint64_t refusals() const;  // throttle + block
};

struct Result {
    std::vector<FileSummary> files;
    std::uint64_t lines = 0;      // every line read
    std::uint64_t requests = 0;   // decided
    std::uint64_t badLines = 0;
    std::vector<BadLine> firstBad;          // at most BadLinesKept
    std::uint64_t outsideRange = 0;         // skipped by from/to
    std::uint64_t late = 0;                 // earlier than the time already reached
    std::vector<LineRef> firstLate;         // at most BadLinesKept
    Core::Millis lateBy = 0;                // the most any late line was behind
    std::optional<Core::Millis> firstTime, lastTime;  // of the requests decided
    std::vector<RunResult> runs;            // one per configuration, in order
    bool cancelled = false;
    // A file that cannot be opened or read at all: nothing was replayed.
    std::string fatal;
};

// Replays `input` through each configuration. A configuration that does not
// validate is a fatal error naming it (nothing is replayed).
Result replay(const Input& input, const std::vector<Configuration>& configurations);

// Clients whose outcome differs between two runs of one replay.
struct Difference {
    const RefusedClient* before = nullptr;  // in `a`; null when `a` never refused it
    const RefusedClient* after = nullptr;   // in `b`; null when `b` never refused it
};
std::vector<Difference> compare(const RunResult& a, const RunResult& b);

} // namespace Floodgate::Replay
