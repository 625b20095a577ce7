// SPDX-License-Identifier: GPL-3.0-or-later
// Every tunable of the engine core in one place, units in the names.
#pragma once

#include "core/Time.h"

#include <cstddef>
#include <cstdint>

namespace Floodgate::Core::Tuning {

// Live view (docs/BACKGROUND.md, time buckets): 3 s buckets, 20 of them, so 60 s of history per client.
inline constexpr std::int64_t liveBucketMs = 3 * SECOND;
inline constexpr std::size_t liveBucketCount = 20;
inline constexpr std::int64_t liveWindowMs = liveBucketMs * static_cast<std::int64_t>(liveBucketCount);
// That minute (and the client's last full address and request time) is
// kept apart from the client's counters, in a pool of 64-byte live records
// (KeyTable.h) for the clients seen lately: at most one per
// liveRecordsShare tracked keys, and never fewer than min(capacity,
// liveRecordsFloor), so a small table has one for every key. The pool
// grows to that bound as clients come; past it, a client's first request
// in the minute is kept in its entry's header (a spray of addresses seen
// once takes no record) and its second takes a free record, counting both.
// A record is free once its client has not been seen for the live window:
// none is ever taken from a client seen within it, so whoever keeps coming
// keeps its history on a bad day. When none is free, the
// client is counted without live history (shown as such) and asks again
// with its next request; the pool's hand looks at liveRecordProbes records
// at most per request, and after a lap in which none was free nobody looks
// until the earliest one can be. Records are made in chunks of
// liveRecordsPerChunk per shard as the hand first reaches them.
inline constexpr std::size_t liveRecordsShare = 8;
inline constexpr std::size_t liveRecordsFloor = 4096;
inline constexpr std::size_t liveRecordsPerChunk = 64;
inline constexpr std::size_t liveRecordProbes = 4;
// How many earlier rule sets' keep a client entry's last request can still
// be read back through (Compiled::earlierClientKeeps).
inline constexpr std::size_t earlierClientKeeps = 16;
constexpr std::size_t liveRecordsFor(std::size_t capacity)
{
    const std::size_t floor = capacity < liveRecordsFloor ? capacity : liveRecordsFloor;
    return capacity / liveRecordsShare > floor ? capacity / liveRecordsShare : floor;
}

// Sliding-window levels split their period into this many buckets unless a
// level names its own bucket width. More buckets = a closer approximation of
// a true sliding log, and 4 bytes more per tracked key per bucket.
inline constexpr std::uint32_t defaultSlidingBuckets = 10;
// A level may not ask for more buckets than this (memory per key is bounded).
inline constexpr std::uint32_t maxSlidingBuckets = 120;

// Levels one decision evaluates over one entry: the client's entry holds the
// levels of every rule counted by address, a customer's entry its effective
// levels (tier and overrides), a keyed rule's entry its own. validate()
// refuses a configuration past it, naming the field.
inline constexpr std::size_t maxLevelsPerEntry = 64;
// API keys one customer may hold at once (a rotation keeps the old ones a while).
inline constexpr std::size_t maxKeysPerCustomer = 10;
// Rules counted by something other than the client address (a header, or the
// address with the user agent). Each is one more entry a decision reserves a
// count in and gives it back from when the decision ends in a refusal.
// validate() refuses a configuration past it, naming the field.
inline constexpr std::size_t maxKeyedRules = 16;
// Globs: a rule's or a cooldown's path, each excluded path, each safe user
// agent. A glob costs one pass over the path (or user agent) per decision,
// with ceil(characters / 64) words of work per byte (Glob.h), so its length
// and the number in a list are bounded: at most maxGlobLength characters
// each, at most maxGlobsPerField excluded paths, safe user agents and
// cooldowns (rules are bounded by the two caps above: 64 levels counted by
// address, 16 keyed rules). validate() refuses a configuration past them,
// naming the field.
inline constexpr std::size_t maxGlobLength = 512;
inline constexpr std::size_t maxGlobsPerField = 256;

// HTTP Range reads. A GET with a Range header for a path the same client
// (counting key) began reading with a counted, allowed Range GET less than
// rangeWindowMs ago continues that resource and is not counted again: a
// download in 20 parts, or pdf.js reading a PDF in 64 KiB chunks, is one
// page hit per window, not 20 or 200. Each (client, path) being read this
// way and each client with continuations take one entry of the key table
// (a key space of their own, with the window as their lifetime); clients
// that send no Range header take nothing more.
inline constexpr std::int64_t rangeWindowMs = MINUTE;
// Uncounted continuations one resource gets per window: 256 parts of 64 KiB
// (pdf.js's chunk) are a 16 MiB document. Past it, each part is counted as
// any request is, so a Range header never buys unlimited requests.
inline constexpr std::uint32_t rangeContinuationsPerResource = 256;
// Uncounted continuations one client gets per window over all the resources
// it reads (so starting many resources does not multiply the bound above):
// 1024 parts, 64 MiB of pdf.js chunks a minute.
inline constexpr std::uint32_t rangeContinuationsPerClient = 1024;

// Tracked keys across all shards before least-recently-used eviction.
inline constexpr std::size_t defaultMaxTrackedKeys = 1'000'000;
// Shards of the key table; a power of two. Each has its own lock and is
// padded to its own cache lines so two listener threads do not share one.
inline constexpr std::size_t keyTableShards = 64;
// Times a thread that finds a shard lock taken polls it (one pause each,
// ~20-60 ns on current x86) before it sleeps (ShortLock.h): a few
// microseconds, longer than a shard's critical section with its cache
// misses, far shorter than a sleep and a wake-up on a VM.
inline constexpr std::uint32_t shortLockSpins = 128;
// Entries are allocated in chunks of this many slots (no up-front reservation
// of the whole capacity: a desktop console with 50 clients stays small).
inline constexpr std::size_t slotsPerChunk = 512;

// Per-second counters by action kept for the charts: one hour.
inline constexpr std::size_t statsSeconds = 3600;
// Per-thread counter slots; threads beyond this share slots (still correct,
// the counters are atomic, only slower).
inline constexpr std::size_t statsThreadSlots = 32;

// IPv6 clients are counted per this prefix unless the rules say otherwise.
inline constexpr int defaultIpv6CountingPrefix = 64;

// Default TTL for safelist/blocklist entries: 7 days.
inline constexpr std::int64_t defaultListTtlMs = 7 * DAY;

// A list's edits are folded into a new base (Engine::compactLists, in the
// background) once more are pending than a sixteenth of its entries, kept
// between these bounds: each edit copies the pending ones (pointers, about
// 10 µs per thousand) and a lookup probes them once per prefix length they
// hold, while a fold rebuilds the whole list (about 15 ms per 100,000).
inline constexpr std::size_t listEditsFoldMin = 64;
inline constexpr std::size_t listEditsFoldMax = 1024;

// Escalation history (how many times a client was banned) is forgotten after
// this long without a new ban (fail2ban keeps it in its database; we bound it).
inline constexpr std::int64_t escalationMemoryMs = 7 * DAY;

// Snapshot bounds (what the console and the admin API may ask for).
inline constexpr std::size_t maxTopClients = 1000;
inline constexpr std::size_t maxEventsKept = 10'000;

// Connection deadlines of the traffic listener and the admin server: one
// model, checked by a sweeper every sweepIntervalMs. A connection waiting
// for a request (nothing sent yet, or kept alive after an answer) is closed
// after idleTimeoutMs; a request's header must be complete headerTimeoutMs
// after its first byte (slowloris); a body may pause at most bodyTimeoutMs
// between reads; an answer the client does not take is dropped after
// writeTimeoutMs.
inline constexpr std::int64_t idleTimeoutMs = MINUTE;
inline constexpr std::int64_t headerTimeoutMs = 10'000;
inline constexpr std::int64_t bodyTimeoutMs = 30'000;
inline constexpr std::int64_t writeTimeoutMs = 30'000;
inline constexpr std::int64_t sweepIntervalMs = 250;

// The database: how long a write waits for another process's lock before
// it fails as "locked" (--db-timeout), how often commits by other processes
// are looked for (PRAGMA data_version), how often expired list entries are
// deleted, and how many automatic bans may wait for their rows (beyond:
// the ban applies, its row is dropped and counted).
inline constexpr std::int64_t dbBusyTimeoutMs = 5 * SECOND;
inline constexpr std::int64_t dbPollIntervalMs = 500;
// What the commands, --help and the documents promise an operator: a
// change another process committed is in force within this long (the
// poll above, the load and the publication, with room to spare).
inline constexpr std::int64_t changeAppliedWithinMs = 2 * SECOND;
static_assert(changeAppliedWithinMs >= 2 * dbPollIntervalMs, "the promise leaves room for a poll missed by a hair");
inline constexpr std::int64_t listPurgeIntervalMs = MINUTE;
inline constexpr std::size_t autoBanQueue = 10'000;

// The traffic listener's caps: connections open at once (beyond: the
// connection is closed at accept), the request head (414 for a longer
// request line, 431 for more bytes or fields), a request body (413), how
// many pipelined answers go out in one write, and limiter.log records each
// listener thread may have waiting (beyond: folded per client, below).
inline constexpr std::size_t maxConnections = 10'000;
inline constexpr std::size_t headerLimitBytes = 8 * 1024;
inline constexpr std::size_t maxHeaderFields = 100;
inline constexpr std::size_t bodyLimitBytes = 8 * 1024 * 1024;
inline constexpr std::size_t pipelineDepth = 16;
inline constexpr std::size_t limiterLogRecordsPerThread = 4096;
// limiter.log under a flood: each client (and action and rule) gets this
// many lines of its own a second, then one summary line for the rest of the
// second. A listener thread whose ring is full folds refusals into a table
// of limiterLogFoldSlots records: one per client for the first
// (limiterLogFoldSlots - limiterLogFoldKinds) clients, then one per action
// and rule for any further client (a summary line from `::`).
inline constexpr std::uint32_t limiterLogLinesPerClientSecond = 10;
inline constexpr std::size_t limiterLogFoldSlots = 256;
inline constexpr std::size_t limiterLogFoldKinds = 32;
// Proxy mode: 502 when the upstream cannot be reached in this long, 504 when
// it does not answer in this long; idle keep-alive upstream connections
// kept per listener thread. A graceful stop gives in-flight requests
// shutdownDeadlineMs.
inline constexpr std::int64_t upstreamConnectTimeoutMs = 3 * SECOND;
inline constexpr std::int64_t upstreamResponseTimeoutMs = 30 * SECOND;
inline constexpr std::size_t upstreamPoolPerThread = 64;
inline constexpr std::int64_t shutdownDeadlineMs = 5 * SECOND;

// The admin API's request body (a list import included): 413 beyond.
inline constexpr std::size_t adminBodyLimitBytes = 1024 * 1024;

// Admin port connections: at most this many in all and from one client
// address. A new connection over a cap closes the oldest one that is only
// waiting for its client (of that client, or of the client holding the
// most), so slow connections cannot lock health checks and the API out.
inline constexpr std::size_t adminMaxConnections = 256;
inline constexpr std::size_t adminMaxConnectionsPerClient = 16;

// JSON documents (admin API bodies, list files): bounds that keep a hostile
// document from costing more than its size says. No document Floodgate
// reads needs more than a few dozen keys in one object; beyond a bound the
// parse fails with an error naming it (400 from the admin API).
inline constexpr int jsonMaxDepth = 64;
inline constexpr std::size_t jsonMaxKeysPerObject = 1000;
// Values (every number, string, array, object...) in one admin API request
// body. A full 1 MiB list import holds about 75,000.
inline constexpr std::size_t jsonMaxValues = 250'000;
// Values in a list file read by `floodgate lists import` (about a million entries).
inline constexpr std::size_t jsonMaxValuesInAFile = 10'000'000;

// ---- the cluster (docs/CLUSTER.md) ----
// The error bound: a node admits at most E = max(1, floor(limit * epsilon /
// nodes)) requests of one client beyond what Redis has acknowledged (the
// lowest E of the client's levels), so the cluster admits at most
// nodes * E <= epsilon * limit (or `nodes` for small limits) over a limit.
// Epsilon in parts per thousand.
inline constexpr std::uint32_t clusterEpsilonPerMille = 10;
// A lease: requests a node may admit for one client without asking Redis,
// reserved in Redis for it. It lapses after this long (in Redis, on Redis's
// clock; here a margin sooner), so a lease a node stops using is given back.
inline constexpr std::int64_t clusterLeaseMs = 2 * SECOND;
// A client far below its limits (everything counted and leased at most
// half of each) gets a quiet lease instead, and a new client whose first
// requests are well within the error budget (half of it left) reports them
// that late at most: such clients cost one report per quiet lease, not one
// per short lease. A quiet lease lasts clusterQuietReportMs plus a part of
// clusterQuietSpreadMs that a hash of the entry's key fixes
// (Core::quietLeaseMs, the same on every node), so clients first seen
// together (a node's start, Redis back after an outage) do not renew
// together ever after: their reports spread over the range. What the other
// nodes show of a quiet client is at most the longest of these old. The
// length does not enter the error bound (docs/CLUSTER.md).
inline constexpr std::int64_t clusterQuietReportMs = 10 * SECOND;
inline constexpr std::int64_t clusterQuietSpreadMs = 10 * SECOND;
// An entry whose lease ends within this reports its counts before it does.
inline constexpr std::int64_t clusterLeaseMarginMs = 500;
// The longest a request waits for Redis to acknowledge its client's earlier
// requests (Decision::waitForCluster) before it is decided on what the node
// knows, and how often it looks again meanwhile.
inline constexpr std::int64_t clusterWaitMicros = 1000;
inline constexpr std::int64_t clusterWaitPollMicros = 100;
// A node counts (is one of the N of the error bound) while its last
// heartbeat is at most this old; the console marks the others as silent.
inline constexpr std::int64_t clusterAliveMs = 3 * SECOND;
// Redis is "degraded" (ClusterStatus, the console, /api/v1/cluster) while
// the last batch's round trip is over clusterSlowMicros, or for
// clusterErrorMemoryMs after a failed call.
inline constexpr std::int64_t clusterSlowMicros = 5000;
inline constexpr std::int64_t clusterErrorMemoryMs = 10 * SECOND;

} // namespace Floodgate::Core::Tuning
