// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Window.h"

#include "core/Hash.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace Floodgate::Core {

namespace {

constexpr std::uint32_t SATURATED = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t SATURATED16 = 0xffffu;
// The live ring: 16-bit counts that saturate ("more than you need to know").
constexpr Lanes LIVE_LANES = Lanes::of(16, true);

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

// A ring's bucket counts: `lanes.perCell` per cell, position pos at
// cell pos / perCell, the lowest position in the low bits.
[[gnu::always_inline]] inline std::uint32_t bucketAt(const std::uint32_t* counts, Lanes lanes, std::size_t pos)
{
    if (lanes.perCell == 1)
        return counts[pos];
    const std::size_t cell = lanes.cellOf(pos);
    return (counts[cell] >> ((pos - cell * lanes.perCell) * lanes.bits)) & lanes.full();
}

void clearBucket(std::uint32_t* counts, Lanes lanes, std::size_t pos)
{
    if (lanes.perCell == 1) {
        counts[pos] = 0;
        return;
    }
    const std::size_t cell = lanes.cellOf(pos);
    counts[cell] &= ~(lanes.full() << ((pos - cell * lanes.perCell) * lanes.bits));
}

// The sum of a ring's n counts, a cell at a time (the lanes past the n-th
// in the last cell are never written, so they hold 0).
std::uint64_t sumOf(const std::uint32_t* counts, std::uint32_t n, Lanes lanes)
{
    const std::size_t used = lanes.cellsFor(n);
    std::uint64_t sum = 0;
    switch (lanes.bits) {
    case 8:
        for (std::size_t i = 0; i < used; ++i) {
            const std::uint32_t pairs = (counts[i] & 0x00ff00ffu) + ((counts[i] >> 8) & 0x00ff00ffu);
            sum += (pairs & 0xffffu) + (pairs >> 16);
        }
        break;
    case 10:
        for (std::size_t i = 0; i < used; ++i)
            sum += (counts[i] & 0x3ffu) + ((counts[i] >> 10) & 0x3ffu) + ((counts[i] >> 20) & 0x3ffu);
        break;
    case 16:
        for (std::size_t i = 0; i < used; ++i)
            sum += (counts[i] & 0xffffu) + (counts[i] >> 16);
        break;
    default:
        for (std::size_t i = 0; i < used; ++i)
            sum += counts[i];
    }
    return sum;
}

// The positions next to `pos` in a ring of n.
std::size_t nextPos(std::size_t pos, std::size_t n)
{
    return pos + 1 == n ? 0 : pos + 1;
}

std::size_t previousPos(std::size_t pos, std::size_t n)
{
    return pos == 0 ? n - 1 : pos - 1;
}

// One more, saturating: a full count stays full.
[[gnu::always_inline]] inline void addToBucket(std::uint32_t* counts, Lanes lanes, std::size_t pos)
{
    if (bucketAt(counts, lanes, pos) == lanes.full())
        return;
    const std::size_t cell = lanes.cellOf(pos);
    counts[cell] += 1u << ((pos - cell * lanes.perCell) * lanes.bits);
}

// One fewer, never below zero; a saturated count no longer says how many,
// so it stays (where counts can saturate: Lanes::sticky).
void takeFromBucket(std::uint32_t* counts, Lanes lanes, std::size_t pos)
{
    const std::uint32_t v = bucketAt(counts, lanes, pos);
    if (v == 0 || (v == lanes.full() && lanes.sticky))
        return;
    const std::size_t cell = lanes.cellOf(pos);
    counts[cell] -= 1u << ((pos - cell * lanes.perCell) * lanes.bits);
}

// The bucket index `now` falls in (nowBucket: floor(now / width)), never
// older than the newest bucket the cells already hold: two listener
// threads may take their timestamps in one order and the lock in the
// other, and a late-arriving older timestamp must count in the newest
// bucket rather than wipe the ring.
std::int64_t currentBucket(std::uint32_t stamp, std::int64_t nowBucket)
{
    const auto delta = std::int32_t(std::uint32_t(nowBucket) - stamp);
    return delta < 0 ? nowBucket - delta : nowBucket;
}

// Drops buckets that left the window; returns the current bucket index.
// `place` maps a bucket index to its position in the ring (b mod n).
template <class Place>
std::int64_t advanceRing(std::uint32_t* stampCell, std::uint32_t* counts, std::uint32_t n, std::int64_t nowBucket, Lanes lanes,
                         Place place)
{
    const std::size_t cellsUsed = lanes.cellsFor(n);
    std::int64_t cur = currentBucket(*stampCell, nowBucket);
    if (cur != nowBucket && std::all_of(counts, counts + cellsUsed, [](std::uint32_t c) { return c == 0; })) {
        // The stamp looks newer than now, but nothing was ever counted: a fresh
        // key (stamp 0) whose truncated bucket index has its top bit set. There
        // is no late request to protect; start the ring at now.
        cur = nowBucket;
        *stampCell = std::uint32_t(cur);
        return cur;
    }
    const std::uint32_t d = std::uint32_t(cur) - *stampCell;
    if (d == 0)
        return cur;
    if (d >= n) {
        std::memset(counts, 0, sizeof(std::uint32_t) * cellsUsed);
    } else {
        // Buckets cur - d + 1 .. cur are new: positions in a row, wrapping.
        std::size_t pos = place(cur - d + 1);
        for (std::uint32_t k = 0; k < d; ++k) {
            clearBucket(counts, lanes, pos);
            pos = nextPos(pos, n);
        }
    }
    *stampCell = std::uint32_t(cur);
    return cur;
}

// A sliding level's ring: where bucket b sits, and the ring brought up to now.
std::size_t placeOf(const LevelSpec& s, std::int64_t b)
{
    return std::size_t(s.byBuckets.mod(b));
}

std::int64_t advanceSliding(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    return advanceRing(cells, cells + 1, s.buckets, s.byBucket.floor(now), s.lanes,
                       [&](std::int64_t b) { return placeOf(s, b); });
}

std::int64_t currentSlidingBucket(const LevelSpec& s, const std::uint32_t* cells, Millis now)
{
    return currentBucket(cells[0], s.byBucket.floor(now));
}

Verdict evaluateSliding(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    const std::int64_t n = s.buckets;
    const std::uint32_t* counts = cells + 1;
    const std::int64_t cur = advanceSliding(s, cells, now);
    const std::uint64_t sum = sumOf(counts, s.buckets, s.lanes);
    Verdict v;
    v.windowStartMs = (cur - n + 1) * s.bucketMs;
    v.used = std::uint32_t(std::min<std::uint64_t>(sum, SATURATED));
    v.allowed = sum < s.limit;
    if (sum == 0)
        return v;
    // Reset: when the newest non-empty bucket leaves the window.
    const std::size_t curPos = placeOf(s, cur);
    std::size_t pos = curPos;
    for (std::int64_t b = cur; b > cur - n; --b) {
        if (bucketAt(counts, s.lanes, pos) != 0) {
            v.resetMs = (b + n) * s.bucketMs - now;
            break;
        }
        pos = previousPos(pos, std::size_t(n));
    }
    if (!v.allowed) {
        // Retry-after: when enough of the oldest buckets have left the window
        // for the sum to drop below the limit. Bucket b leaves at (b + n) * width.
        const std::uint64_t need = sum - s.limit + 1;
        std::uint64_t dropped = 0;
        pos = nextPos(curPos, std::size_t(n));  // the oldest, cur - n + 1
        for (std::int64_t b = cur - n + 1; b <= cur; ++b) {
            dropped += bucketAt(counts, s.lanes, pos);
            if (dropped >= need) {
                v.retryAfterMs = (b + n) * s.bucketMs - now;
                break;
            }
            pos = nextPos(pos, std::size_t(n));
        }
    }
    return v;
}

std::int64_t fixedWindowIndex(const LevelSpec& s, std::uint32_t* cells, Millis now)
{
    const std::int64_t idx = s.byPeriod.floor(now);
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

// A lockout level's state, whichever its layout:
//   wide:   [0..1] window start, [2] count, [3..4] locked until;
//   packed: [0] time, low 32 bits, [1] its next 16 bits | count << 16, the
//           count LOCKED while the time is when a lockout ends (a locked
//           key counts nothing: its count is 0 until the lockout ends).
// Both hold the same: a window (start, count) or a lockout's end. The next
// window's first count forgets a lockout that ended (count()), and
// judgedAt() keeps a late stamp from needing it.
constexpr std::uint32_t LOCKED = 0xffffu;
constexpr Millis NOT_LOCKED = std::numeric_limits<Millis>::min();

struct LockoutState {
    Millis start = 0;
    std::uint32_t count = 0;
    Millis lockedUntil = NOT_LOCKED;
};

[[gnu::always_inline]] inline LockoutState loadLockout(const LevelSpec& s, const std::uint32_t* cells)
{
    if (!s.packed)
        return LockoutState{load64(cells), cells[2], load64(cells + 3)};
    // 48 bits, sign-extended: +-4,462 years around the epoch.
    const Millis t = Millis((std::uint64_t(cells[0]) | (std::uint64_t(cells[1] & 0xffffu) << 32)) << 16) >> 16;
    const std::uint32_t c = cells[1] >> 16;
    if (c == LOCKED)
        return LockoutState{0, 0, t};
    return LockoutState{t, c, NOT_LOCKED};
}

[[gnu::always_inline]] inline void storeLockout(const LevelSpec& s, std::uint32_t* cells, const LockoutState& st)
{
    if (!s.packed) {
        store64(cells, st.start);
        cells[2] = st.count;
        store64(cells + 3, st.lockedUntil);
        return;
    }
    // A count goes with its window's start; no count with a lockout's end.
    const bool locked = st.count == 0 && st.lockedUntil != NOT_LOCKED;
    const auto t = std::uint64_t(locked ? st.lockedUntil : st.start);
    cells[0] = std::uint32_t(t);
    cells[1] = std::uint32_t((t >> 32) & 0xffffu) | ((locked ? LOCKED : st.count) << 16);
}

// The most a count may reach: a saturated wide count stays; a packed one
// cannot pass its limit (at most LOCKED - 1, LevelSpec::packs).
std::uint32_t lockoutMost(const LevelSpec& s)
{
    return s.packed ? LOCKED - 1 : SATURATED;
}

// When a lockout level judges a request stamped `now`: never before the
// start of the key's current window. Two listener threads may stamp in one
// order and decide in the other; a request stamped before the window that
// counts it began (say, just before a lockout ended, decided after a later
// request started the next window) counts in that window as if it came at
// its start: its reset, and a lockout it starts, run from there. The
// lockout that ended is not held against it: the packed layout no longer
// knows it, and answering alike in both layouts needs no memory this way.
// Every lockout function judges at this time (evaluate, and through it
// peek, bucketsOf and a cluster's merged view; resetAfterCount; refuse).
Millis judgedAt(const LockoutState& st, Millis now)
{
    return st.count != 0 ? std::max(now, st.start) : now;
}

Verdict evaluateLockout(const LevelSpec& s, std::uint32_t* cells, Millis stamp)
{
    Verdict v;
    LockoutState st = loadLockout(s, cells);
    const Millis now = judgedAt(st, stamp);
    if (now < st.lockedUntil) {
        v.windowStartMs = st.lockedUntil - s.lockoutMs;  // the lockout began with the refusal
        v.allowed = false;
        v.used = s.limit;
        v.retryAfterMs = st.lockedUntil - now;
        v.resetMs = v.retryAfterMs;
        return v;
    }
    if (st.count != 0 && now - st.start >= s.periodMs) {
        st.count = 0;  // the window ran out: start over
        storeLockout(s, cells, st);
    }
    v.used = st.count;
    v.windowStartMs = v.used ? st.start : now;
    v.allowed = v.used < s.limit;
    v.resetMs = v.used ? st.start + s.periodMs - now : 0;
    if (!v.allowed) {
        // Refusing now starts a lockout that long; the quota is whole again
        // when it ends (the next window starts empty), not at the window's end.
        v.retryAfterMs = s.lockoutMs;
        v.resetMs = s.lockoutMs;
    }
    return v;
}

} // namespace

namespace {

// A sliding level's bucket width: as configured, or its period over the
// default number of buckets (rounded up, at least 1 ms).
Millis bucketWidthOf(const Level& level)
{
    return level.bucketMs > 0 ? level.bucketMs : std::max<Millis>(1, ceilDiv(level.periodMs, Tuning::defaultSlidingBuckets));
}

// A sliding level's buckets: packed, the narrowest width its limit fits
// in (no bucket passes the limit, so none saturates); else 32 bits.
Lanes lanesOf(const Level& level, bool shared)
{
    if (level.algorithm != Algorithm::SlidingWindow || !LevelSpec::packs(level, shared))
        return Lanes::of(32, true);
    return Lanes::of(level.limit <= 0xffu ? 8 : level.limit <= 0x3ffu ? 10 : 16, false);
}

} // namespace

LevelSpec LevelSpec::compile(const Level& level, std::string_view name, bool shared)
{
    LevelSpec s;
    s.name.assign(name);
    s.algorithm = level.algorithm;
    s.limit = level.limit;
    s.periodMs = level.periodMs;
    s.countRefused = level.countRefused;
    s.shared = shared;
    s.packed = packs(level, shared);
    s.lanes = lanesOf(level, shared);
    s.cells = cellsFor(level, shared);
    if (level.algorithm == Algorithm::SlidingWindow) {
        s.bucketMs = bucketWidthOf(level);
        s.buckets = std::uint32_t(ceilDiv(level.periodMs, s.bucketMs));
        s.byBucket = Divisor(s.bucketMs);
        s.byBuckets = Divisor(s.buckets);
    } else if (level.algorithm == Algorithm::Lockout) {
        s.lockoutMs = level.lockoutMs > 0 ? level.lockoutMs : level.periodMs;
    } else {
        s.byPeriod = Divisor(s.periodMs);
    }
    return s;
}

bool LevelSpec::packs(const Level& level, bool shared)
{
    if (shared)
        return false;
    // Sliding: counts only admitted requests, under a limit that fits: no
    // bucket can pass the limit, so none can pass 65,535. Lockout: a count
    // never passes the limit (a refusal locks and empties it).
    if (level.algorithm == Algorithm::SlidingWindow)
        return !level.countRefused && level.limit <= SATURATED16;
    return level.algorithm == Algorithm::Lockout && level.limit < LOCKED;
}

std::uint16_t LevelSpec::cellsFor(const Level& level, bool shared)
{
    switch (level.algorithm) {
    case Algorithm::SlidingWindow:
        return std::uint16_t(1 + lanesOf(level, shared).cellsFor(std::uint32_t(ceilDiv(level.periodMs, bucketWidthOf(level)))));
    case Algorithm::FixedWindow: return 2;
    case Algorithm::Lockout: return packs(level, shared) ? 2 : 5;
    }
    return 0;
}

std::uint64_t LevelSpec::shapeSignature() const
{
    // Packed or not, and the counts' width, are part of the shape: the same
    // cells mean other counts.
    return hashWords(std::uint64_t(algorithm) + 1, std::uint64_t(periodMs),
                     std::uint64_t(bucketMs) ^ (std::uint64_t(offset) << 48) ^ (std::uint64_t(packed) << 47)
                         ^ (std::uint64_t(lanes.bits) << 40));
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
        // A shared level's cells are never packed (LevelSpec::packs).
        const std::int64_t n = s.buckets;
        const std::int64_t cur = currentSlidingBucket(s, merged, now);  // the full index of merged[0]
        const std::int64_t ahead = std::int32_t(merged[0] - remote[0]);  // own newest minus remote newest
        const std::int64_t from = std::max<std::int64_t>(0, ahead);
        const std::int64_t to = std::min<std::int64_t>(n, n + ahead);
        for (std::int64_t k = from; k < to; ++k) {  // bucket cur - k
            const std::size_t pos = placeOf(s, cur - k);
            merged[1 + pos] = saturatingAdd(merged[1 + pos], remote[1 + pos]);
        }
        break;
    }
    case Algorithm::FixedWindow:
        if (remote[0] == merged[0])
            merged[1] = saturatingAdd(merged[1], remote[1]);
        break;
    case Algorithm::Lockout: {
        // The other nodes' window counts if it has not run out when this
        // node judges the request (judgedAt: not before its own window's start).
        const Millis start = load64(remote);
        const Millis at = judgedAt(loadLockout(s, merged), now);
        if (remote[2] != 0 && at - start < s.periodMs) {
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
            remote[1 + placeOf(spec, r.stamp - k)] = r.counts[r.size - 1 - std::size_t(k)];
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
        const std::int64_t cur = currentSlidingBucket(spec, copy, now);
        r.stamp = cur;
        for (std::int64_t b = cur - n + 1; b <= cur; ++b)
            out.push_back(bucketAt(copy + 1, spec.lanes, placeOf(spec, b)));
        break;
    }
    case Algorithm::FixedWindow:
        r.stamp = fixedWindowIndex(spec, copy, now);
        out.push_back(copy[1]);
        break;
    case Algorithm::Lockout: {
        const LockoutState st = loadLockout(spec, copy);
        r.stamp = st.start;
        out.push_back(st.count);
        r.lockedUntil = st.lockedUntil == NOT_LOCKED ? 0 : st.lockedUntil;
        break;
    }
    }
    r.counts = out.data();
    r.size = out.size();
    return r;
}

void count(const LevelSpec& spec, std::uint32_t* cells, Millis now)
{
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow:
        addToBucket(cells + 1, spec.lanes, placeOf(spec, currentSlidingBucket(spec, cells, now)));
        break;
    case Algorithm::FixedWindow:
        if (cells[1] != SATURATED)
            ++cells[1];
        break;
    case Algorithm::Lockout: {
        LockoutState st = loadLockout(spec, cells);
        if (st.count == 0) {
            // The window starts with its first request, which forgets a
            // lockout that ended (the packed layout has no room for both).
            st.start = now;
            st.lockedUntil = NOT_LOCKED;
        }
        if (st.count != lockoutMost(spec))
            ++st.count;
        storeLockout(spec, cells, st);
        break;
    }
    }
}

Millis resetAfterCount(const LevelSpec& spec, const std::uint32_t* cells, Millis now)
{
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow:
        // The bucket just counted into is the newest non-empty one.
        return (currentSlidingBucket(spec, cells, now) + spec.buckets) * spec.bucketMs - now;
    case Algorithm::FixedWindow: {
        const std::int64_t idx = spec.byPeriod.floor(now);
        const auto delta = std::int32_t(std::uint32_t(idx) - cells[0]);
        return (idx - std::min(delta, 0) + 1) * spec.periodMs - now;
    }
    case Algorithm::Lockout: {
        const LockoutState st = loadLockout(spec, cells);
        return st.start + spec.periodMs - judgedAt(st, now);
    }
    }
    return 0;
}

void uncount(const LevelSpec& spec, std::uint32_t* cells, Millis now)
{
    std::uint32_t* c = nullptr;
    switch (spec.algorithm) {
    case Algorithm::SlidingWindow:
        takeFromBucket(cells + 1, spec.lanes, placeOf(spec, currentSlidingBucket(spec, cells, now)));
        return;
    case Algorithm::FixedWindow: c = &cells[1]; break;
    case Algorithm::Lockout: {
        LockoutState st = loadLockout(spec, cells);
        if (st.count != 0 && (spec.packed || st.count != SATURATED)) {
            --st.count;
            storeLockout(spec, cells, st);
        }
        return;
    }
    }
    if (*c != 0 && *c != SATURATED)
        --*c;
}

void refuse(const LevelSpec& spec, std::uint32_t* cells, Millis stamp)
{
    if (spec.algorithm != Algorithm::Lockout) {
        if (spec.countRefused)
            count(spec, cells, stamp);
        return;
    }
    LockoutState st = loadLockout(spec, cells);
    const Millis now = judgedAt(st, stamp);
    if (now < st.lockedUntil) {
        // Charlie Arehart's original: blocked until the client pauses. A
        // late stamp (before the refusal that set the end) never brings the
        // end closer.
        if (spec.countRefused && now + spec.lockoutMs > st.lockedUntil) {
            st.lockedUntil = now + spec.lockoutMs;
            storeLockout(spec, cells, st);
        }
        return;
    }
    // Over the limit: lock out from now; the next window starts empty after it.
    st.lockedUntil = now + spec.lockoutMs;
    st.count = 0;
    storeLockout(spec, cells, st);
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
        const std::int64_t cur = advanceSliding(spec, copy, now);
        for (std::int64_t b = cur - n + 1; b <= cur; ++b)
            out.push_back({b * spec.bucketMs, bucketAt(copy + 1, spec.lanes, placeOf(spec, b))});
        break;
    }
    case Algorithm::FixedWindow: {
        const std::int64_t idx = fixedWindowIndex(spec, copy, now);
        out.push_back({idx * spec.periodMs, copy[1]});
        break;
    }
    case Algorithm::Lockout: {
        evaluateLockout(spec, copy, now);
        const LockoutState st = loadLockout(spec, copy);
        out.push_back({st.count ? st.start : now, st.count});
        break;
    }
    }
    return out;
}

namespace LiveRing {

namespace {

// The ring's size and width are constants: the compiler divides by them
// with a multiply.
std::size_t livePlace(std::int64_t b)
{
    return std::size_t(modPos(b, std::int64_t(Tuning::liveBucketCount)));
}

std::int64_t advanceLive(std::uint32_t* cells, Millis now)
{
    return advanceRing(cells, cells + 1, Tuning::liveBucketCount, floorDiv(now, Tuning::liveBucketMs), LIVE_LANES, livePlace);
}

} // namespace

void count(std::uint32_t* cells, Millis now)
{
    // Saturates at 65,535 per 3 s: "more than you need to know".
    addToBucket(cells + 1, LIVE_LANES, livePlace(advanceLive(cells, now)));
}

std::array<std::uint32_t, Tuning::liveBucketCount> read(const std::uint32_t* cells, Millis now)
{
    std::uint32_t copy[Cells];
    std::memcpy(copy, cells, sizeof copy);
    const std::int64_t n = Tuning::liveBucketCount;
    const std::int64_t cur = advanceLive(copy, now);
    std::array<std::uint32_t, Tuning::liveBucketCount> out{};
    for (std::int64_t i = 0; i < n; ++i)
        out[std::size_t(i)] = bucketAt(copy + 1, LIVE_LANES, livePlace(cur - n + 1 + i));
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
