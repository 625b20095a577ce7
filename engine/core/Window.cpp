// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Window.h"

#include "core/Hash.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace Floodgate::Core {

namespace {

constexpr std::uint32_t SATURATED = std::numeric_limits<std::uint32_t>::max();

std::int64_t modPos(std::int64_t b, std::int64_t n)
{
    const std::int64_t m = b % n;
    return m < 0 ? m + n : m;
}

Millis load64(const std::uint32_t* c)
{
    return Millis(std::uint64_t(c[0]) | (std::uint64_t(c[1]) << 32));
}

void store64(std::uint32_t* c, Millis v)
{
    c[0] = std::uint32_t(std::uint64_t(v));
    c[1] = std::uint32_t(std::uint64_t(v) >> 32);
}

// The bucket index `now` falls in, never older than the newest bucket the
// cells already hold: two listener threads may take their timestamps in one
// order and the lock in the other, and a late-arriving older timestamp must
// count in the newest bucket rather than wipe the ring.
std::int64_t currentBucket(std::uint32_t stamp, Millis now, Millis width)
{
    const std::int64_t cur = floorDiv(now, width);
    const auto delta = std::int32_t(std::uint32_t(cur) - stamp);
    return delta < 0 ? cur - delta : cur;
}

// Drops buckets that left the window; returns the current bucket index.
std::int64_t advanceRing(std::uint32_t* stampCell, std::uint32_t* counts, std::uint32_t n, Millis now, Millis width,
                         bool packed16)
{
    const std::size_t countCells = packed16 ? (n + 1) / 2 : n;
    std::int64_t cur = currentBucket(*stampCell, now, width);
    if (cur != floorDiv(now, width)
        && std::all_of(counts, counts + countCells, [](std::uint32_t c) { return c == 0; })) {
        // The stamp looks newer than now, but nothing was ever counted: a fresh
        // key (stamp 0) whose truncated bucket index has its top bit set. There
        // is no late request to protect; start the ring at now.
        cur = floorDiv(now, width);
        *stampCell = std::uint32_t(cur);
        return cur;
    }
    const std::uint32_t d = std::uint32_t(cur) - *stampCell;
    if (d == 0)
        return cur;
    auto zero = [&](std::int64_t b) {
        const auto pos = std::size_t(modPos(b, n));
        if (packed16)
            counts[pos / 2] &= (pos % 2) ? 0x0000ffffu : 0xffff0000u;
        else
            counts[pos] = 0;
    };
    if (d >= n) {
        std::memset(counts, 0, sizeof(std::uint32_t) * countCells);
    } else {
        for (std::uint32_t k = 1; k <= d; ++k)
            zero(cur - d + k);
    }
    *stampCell = std::uint32_t(cur);
    return cur;
}

Verdict evaluateSliding(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    const std::int64_t n = s.buckets;
    std::uint32_t* counts = cells + 1;
    const std::int64_t cur = advanceRing(cells, counts, s.buckets, now, s.bucketMs, false);
    std::uint64_t sum = 0;
    for (std::int64_t i = 0; i < n; ++i)
        sum += counts[i];
    Verdict v;
    v.windowStartMs = (cur - n + 1) * s.bucketMs;
    v.used = std::uint32_t(std::min<std::uint64_t>(sum, SATURATED));
    v.allowed = sum < s.limit;
    // Reset: when the newest non-empty bucket leaves the window.
    for (std::int64_t b = cur; b > cur - n; --b) {
        if (counts[modPos(b, n)] != 0) {
            v.resetMs = (b + n) * s.bucketMs - now;
            break;
        }
    }
    if (!v.allowed) {
        // Retry-after: when enough of the oldest buckets have left the window
        // for the sum to drop below the limit. Bucket b leaves at (b + n) * width.
        const std::uint64_t need = sum - s.limit + 1;
        std::uint64_t dropped = 0;
        for (std::int64_t b = cur - n + 1; b <= cur; ++b) {
            dropped += counts[modPos(b, n)];
            if (dropped >= need) {
                v.retryAfterMs = (b + n) * s.bucketMs - now;
                break;
            }
        }
    }
    return v;
}

std::int64_t fixedWindowIndex(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    const std::int64_t idx = floorDiv(now, s.periodMs);
    const auto delta = std::int32_t(std::uint32_t(idx) - cells[0]);
    if (delta > 0 || (cells[1] == 0 && delta != 0)) {
        cells[0] = std::uint32_t(idx);
        cells[1] = 0;
        return idx;
    }
    return idx - delta;  // the stored (newest) window
}

Verdict evaluateFixed(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    const std::int64_t idx = fixedWindowIndex(s, cells, now);
    Verdict v;
    v.windowStartMs = idx * s.periodMs;
    v.used = cells[1];
    v.allowed = v.used < s.limit;
    const Millis end = (idx + 1) * s.periodMs - now;
    v.resetMs = v.used ? end : 0;
    if (!v.allowed)
        v.retryAfterMs = end;
    return v;
}

// Lockout cells: [0..1] window start, [2] count, [3..4] locked until.
Verdict evaluateLockout(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    Verdict v;
    const Millis lockedUntil = load64(cells + 3);
    if (now < lockedUntil) {
        v.windowStartMs = lockedUntil - s.lockoutMs;  // the lockout began with the refusal
        v.allowed = false;
        v.used = s.limit;
        v.retryAfterMs = lockedUntil - now;
        v.resetMs = v.retryAfterMs;
        return v;
    }
    const Millis start = load64(cells);
    if (cells[2] != 0 && now - start >= s.periodMs)
        cells[2] = 0;  // the window ran out: start over
    v.used = cells[2];
    v.windowStartMs = v.used ? start : now;
    v.allowed = v.used < s.limit;
    v.resetMs = v.used ? start + s.periodMs - now : 0;
    if (!v.allowed) {
        // Refusing now starts a lockout that long; the quota is whole again
        // when it ends (the next window starts empty), not at the window's end.
        v.retryAfterMs = s.lockoutMs;
        v.resetMs = s.lockoutMs;
    }
    return v;
}

} // namespace

LevelSpec LevelSpec::compile(const Level& level, std::string_view name)
{
    LevelSpec s;
    s.name.assign(name);
    s.algorithm = level.algorithm;
    s.limit = level.limit;
    s.periodMs = level.periodMs;
    s.countRefused = level.countRefused;
    s.cells = cellsFor(level);
    if (level.algorithm == Algorithm::SlidingWindow) {
        s.bucketMs = level.bucketMs > 0 ? level.bucketMs
                                        : std::max<Millis>(1, ceilDiv(level.periodMs, Tuning::defaultSlidingBuckets));
        s.buckets = std::uint32_t(ceilDiv(level.periodMs, s.bucketMs));
    } else if (level.algorithm == Algorithm::Lockout) {
        s.lockoutMs = level.lockoutMs > 0 ? level.lockoutMs : level.periodMs;
    }
    return s;
}

std::uint16_t LevelSpec::cellsFor(const Level& level)
{
    switch (level.algorithm) {
    case Algorithm::SlidingWindow: {
        const Millis width = level.bucketMs > 0
            ? level.bucketMs
            : std::max<Millis>(1, ceilDiv(level.periodMs, Tuning::defaultSlidingBuckets));
        return std::uint16_t(1 + ceilDiv(level.periodMs, width));
    }
    case Algorithm::FixedWindow: return 2;
    case Algorithm::Lockout: return 5;
    }
    return 0;
}

std::uint64_t LevelSpec::shapeSignature() const
{
    return hashWords(std::uint64_t(algorithm) + 1, std::uint64_t(periodMs), std::uint64_t(bucketMs) ^ (std::uint64_t(offset) << 48));
}

Millis LevelSpec::keepMs() const
{
    switch (algorithm) {
    case Algorithm::SlidingWindow: return Millis(buckets) * bucketMs + bucketMs;
    case Algorithm::FixedWindow: return periodMs;
    case Algorithm::Lockout: return std::max(periodMs, lockoutMs);
    }
    return periodMs;
}

Verdict evaluate(const LevelSpec& spec, std::uint32_t* cells, Millis now)
{
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow: return evaluateSliding(spec, cells, now);
    case Algorithm::FixedWindow: return evaluateFixed(spec, cells, now);
    case Algorithm::Lockout: return evaluateLockout(spec, cells, now);
    }
    return {};
}

namespace {

std::uint32_t saturatingAdd(std::uint32_t a, std::uint32_t b)
{
    return b > SATURATED - a ? SATURATED : a + b;
}

// Adds the other nodes' counts (remote, the level's remote cells) to
// `merged`, a copy of the own cells already brought up to `now`.
void mergeRemote(const LevelSpec& s, std::uint32_t* merged, const std::uint32_t* remote, Millis now)
{
    switch (s.algorithm) {
    case Algorithm::SlidingWindow: {
        // The remote ring holds the buckets up to its stamp; the own ring is
        // at least as new (the sync stamps it with the bucket of its report).
        const std::int64_t n = s.buckets;
        const std::int64_t cur = currentBucket(merged[0], now, s.bucketMs);  // the full index of merged[0]
        const std::int64_t ahead = std::int32_t(merged[0] - remote[0]);     // own newest minus remote newest
        const std::int64_t from = std::max<std::int64_t>(0, ahead);
        const std::int64_t to = std::min<std::int64_t>(n, n + ahead);
        for (std::int64_t k = from; k < to; ++k) {  // bucket cur - k
            const auto pos = std::size_t(modPos(cur - k, n));
            merged[1 + pos] = saturatingAdd(merged[1 + pos], remote[1 + pos]);
        }
        break;
    }
    case Algorithm::FixedWindow:
        if (remote[0] == merged[0])
            merged[1] = saturatingAdd(merged[1], remote[1]);
        break;
    case Algorithm::Lockout: {
        const Millis start = load64(remote);
        if (remote[2] != 0 && now - start < s.periodMs) {
            if (merged[2] == 0)
                store64(merged, start);
            merged[2] = saturatingAdd(merged[2], remote[2]);
        }
        store64(merged + 3, std::max(load64(merged + 3), load64(remote + 3)));
        break;
    }
    }
}

} // namespace

Verdict evaluate(const LevelSpec& spec, std::uint32_t* cells, Millis now, LevelView view)
{
    if (!spec.shared || view.kind == LevelView::Kind::Own)
        return evaluate(spec, cells, now);
    if (view.kind == LevelView::Kind::Share) {
        LevelSpec share = spec;
        share.limit = std::uint32_t(std::max<std::int64_t>(1, ceilDiv(spec.limit, std::max<std::uint32_t>(view.nodes, 1))));
        return evaluate(share, cells, now);
    }
    evaluate(spec, cells, now);  // brings the own cells forward
    std::uint32_t merged[1 + Tuning::maxSlidingBuckets];
    std::memcpy(merged, cells, sizeof(std::uint32_t) * spec.cells);
    mergeRemote(spec, merged, cells + spec.cells, now);
    Verdict v = evaluate(spec, merged, now);
    // A lockout counts failures: another node's lease is not one.
    if (v.allowed && view.reserved && spec.algorithm != Algorithm::Lockout && std::uint64_t(v.used) + view.reserved >= spec.limit) {
        v.allowed = false;
        v.used = spec.limit;  // the limit is taken: counted, or held by other nodes
        // The room comes back when their leases lapse (or is counted by
        // then); once they have, the node's next report says how much.
        const Millis lapse = view.reservedLapseMs > 0 ? view.reservedLapseMs : SECOND;
        v.retryAfterMs = std::min<Millis>(lapse, std::max<Millis>(v.resetMs, 1));
    }
    return v;
}

void storeRemote(const LevelSpec& spec, std::uint32_t* cells, const RemoteCounts& r)
{
    std::uint32_t* remote = cells + spec.cells;
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow: {
        const std::int64_t n = spec.buckets;
        std::memset(remote, 0, sizeof(std::uint32_t) * spec.cells);
        remote[0] = std::uint32_t(r.stamp);
        const std::int64_t given = std::min<std::int64_t>(n, std::int64_t(r.size));
        for (std::int64_t k = 0; k < given; ++k)  // counts[size - 1] is bucket stamp
            remote[1 + modPos(r.stamp - k, n)] = r.counts[r.size - 1 - std::size_t(k)];
        break;
    }
    case Algorithm::FixedWindow:
        remote[0] = std::uint32_t(r.stamp);
        remote[1] = r.size ? r.counts[0] : 0;
        break;
    case Algorithm::Lockout:
        store64(remote, r.stamp);
        remote[2] = r.size ? r.counts[0] : 0;
        store64(remote + 3, r.lockedUntil);
        break;
    }
}

RemoteCounts ownCounts(const LevelSpec& spec, const std::uint32_t* cells, Millis now, std::vector<std::uint32_t>& out)
{
    std::uint32_t copy[1 + Tuning::maxSlidingBuckets];
    std::memcpy(copy, cells, sizeof(std::uint32_t) * spec.cells);
    evaluate(spec, copy, now);
    RemoteCounts r;
    out.clear();
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow: {
        const std::int64_t n = spec.buckets;
        const std::int64_t cur = currentBucket(copy[0], now, spec.bucketMs);
        r.stamp = cur;
        for (std::int64_t b = cur - n + 1; b <= cur; ++b)
            out.push_back(copy[1 + modPos(b, n)]);
        break;
    }
    case Algorithm::FixedWindow:
        r.stamp = fixedWindowIndex(spec, copy, now);
        out.push_back(copy[1]);
        break;
    case Algorithm::Lockout:
        r.stamp = load64(copy);
        out.push_back(copy[2]);
        r.lockedUntil = load64(copy + 3);
        break;
    }
    r.counts = out.data();
    r.size = out.size();
    return r;
}

void count(const LevelSpec& spec, std::uint32_t* cells, Millis now)
{
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow: {
        const std::int64_t cur = currentBucket(cells[0], now, spec.bucketMs);
        std::uint32_t& c = cells[1 + modPos(cur, spec.buckets)];
        if (c != SATURATED)
            ++c;
        break;
    }
    case Algorithm::FixedWindow:
        if (cells[1] != SATURATED)
            ++cells[1];
        break;
    case Algorithm::Lockout:
        if (cells[2] == 0)
            store64(cells, now);  // the window starts with its first request
        if (cells[2] != SATURATED)
            ++cells[2];
        break;
    }
}

Millis resetAfterCount(const LevelSpec& spec, const std::uint32_t* cells, Millis now)
{
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow:
        // The bucket just counted into is the newest non-empty one.
        return (currentBucket(cells[0], now, spec.bucketMs) + spec.buckets) * spec.bucketMs - now;
    case Algorithm::FixedWindow: {
        const std::int64_t idx = floorDiv(now, spec.periodMs);
        const auto delta = std::int32_t(std::uint32_t(idx) - cells[0]);
        return (idx - std::min(delta, 0) + 1) * spec.periodMs - now;
    }
    case Algorithm::Lockout: return load64(cells) + spec.periodMs - now;
    }
    return 0;
}

void uncount(const LevelSpec& spec, std::uint32_t* cells, Millis now)
{
    std::uint32_t* c = nullptr;
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow:
        c = &cells[1 + modPos(currentBucket(cells[0], now, spec.bucketMs), spec.buckets)];
        break;
    case Algorithm::FixedWindow: c = &cells[1]; break;
    case Algorithm::Lockout: c = &cells[2]; break;
    }
    if (*c != 0 && *c != SATURATED)
        --*c;
}

void refuse(const LevelSpec& spec, std::uint32_t* cells, Millis now)
{
    if (spec.algorithm != Algorithm::Lockout) {
        if (spec.countRefused)
            count(spec, cells, now);
        return;
    }
    const Millis lockedUntil = load64(cells + 3);
    if (now < lockedUntil) {
        if (spec.countRefused)  // Charlie Arehart's original: blocked until the client pauses
            store64(cells + 3, now + spec.lockoutMs);
        return;
    }
    // Over the limit: lock out from now; the next window starts empty after it.
    store64(cells + 3, now + spec.lockoutMs);
    cells[2] = 0;
}

namespace {

// A copy of a level's cells brought up to `now`, with the other nodes'
// counts added when asked for (and the level is shared).
void viewCopy(const LevelSpec& spec, const std::uint32_t* cells, Millis now, bool cluster, std::uint32_t* copy)
{
    std::memcpy(copy, cells, sizeof(std::uint32_t) * spec.cells);
    if (!spec.shared || !cluster)
        return;
    evaluate(spec, copy, now);
    mergeRemote(spec, copy, cells + spec.cells, now);
}

} // namespace

Verdict peek(const LevelSpec& spec, const std::uint32_t* cells, Millis now, bool cluster)
{
    std::uint32_t copy[1 + Tuning::maxSlidingBuckets];
    viewCopy(spec, cells, now, cluster, copy);
    return evaluate(spec, copy, now);
}

std::vector<BucketView> bucketsOf(const LevelSpec& spec, const std::uint32_t* cells, Millis now, bool cluster)
{
    std::uint32_t copy[1 + Tuning::maxSlidingBuckets];
    viewCopy(spec, cells, now, cluster, copy);
    std::vector<BucketView> out;
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow: {
        const std::int64_t n = spec.buckets;
        const std::int64_t cur = advanceRing(copy, copy + 1, spec.buckets, now, spec.bucketMs, false);
        for (std::int64_t b = cur - n + 1; b <= cur; ++b)
            out.push_back({b * spec.bucketMs, copy[1 + modPos(b, n)]});
        break;
    }
    case Algorithm::FixedWindow: {
        const std::int64_t idx = fixedWindowIndex(spec, copy, now);
        out.push_back({idx * spec.periodMs, copy[1]});
        break;
    }
    case Algorithm::Lockout: {
        evaluateLockout(spec, copy, now);
        out.push_back({copy[2] ? load64(copy) : now, copy[2]});
        break;
    }
    }
    return out;
}

namespace LiveRing {

void count(std::uint32_t* cells, Millis now)
{
    const std::int64_t cur = advanceRing(cells, cells + 1, Tuning::liveBucketCount, now, Tuning::liveBucketMs, true);
    const auto pos = std::size_t(modPos(cur, Tuning::liveBucketCount));
    std::uint32_t& cell = cells[1 + pos / 2];
    const unsigned shift = (pos % 2) ? 16 : 0;
    const std::uint32_t value = (cell >> shift) & 0xffffu;
    if (value != 0xffffu)  // 65,535 per 3 s is "more than you need to know"
        cell += 1u << shift;
}

std::array<std::uint32_t, Tuning::liveBucketCount> read(const std::uint32_t* cells, Millis now)
{
    std::uint32_t copy[Cells];
    std::memcpy(copy, cells, sizeof copy);
    const std::int64_t n = Tuning::liveBucketCount;
    const std::int64_t cur = advanceRing(copy, copy + 1, Tuning::liveBucketCount, now, Tuning::liveBucketMs, true);
    std::array<std::uint32_t, Tuning::liveBucketCount> out{};
    for (std::int64_t i = 0; i < n; ++i) {
        const auto pos = std::size_t(modPos(cur - n + 1 + i, n));
        out[std::size_t(i)] = (copy[1 + pos / 2] >> ((pos % 2) ? 16 : 0)) & 0xffffu;
    }
    return out;
}

std::uint32_t total(const std::array<std::uint32_t, Tuning::liveBucketCount>& live)
{
    std::uint32_t sum = 0;
    for (const std::uint32_t v : live)
        sum += v;
    return sum;
}

double recentRate(const std::array<std::uint32_t, Tuning::liveBucketCount>& live, Millis now)
{
    const Millis covered = now - (floorDiv(now, Tuning::liveBucketMs) - 1) * Tuning::liveBucketMs;
    return double(live[Tuning::liveBucketCount - 1] + live[Tuning::liveBucketCount - 2]) * 1000.0 / double(covered);
}

} // namespace LiveRing

namespace ContinuationWindow {

bool open(const std::uint32_t* cells, Millis now, Millis windowMs)
{
    const Millis start = load64(cells);
    return start != 0 && now >= start && now - start < windowMs;
}

void begin(std::uint32_t* cells, Millis now)
{
    store64(cells, now);
    cells[2] = 0;
}

bool take(std::uint32_t* cells, Millis now, Millis windowMs, std::uint32_t bound)
{
    if (!open(cells, now, windowMs) || cells[2] >= bound)
        return false;
    ++cells[2];
    return true;
}

} // namespace ContinuationWindow

} // namespace Floodgate::Core
