// SPDX-License-Identifier: GPL-3.0-or-later
// The per-key counting algorithms, working on a key's own small array of
// 32-bit cells (docs/BACKGROUND.md, time buckets: each key carries its ring of buckets stamped with
// the bucket epoch, so a window sum is a loop over a few integers).
//
// Cell layouts (all counts saturate instead of wrapping):
//   sliding:  [newest bucket index (epoch, truncated to 32 bits)] [count x N]
//             or, packed, [newest bucket index] [N counts of 8, 10 or 16 bits,
//             four, three or two per cell] (Lanes)
//   fixed:    [window index (truncated to 32 bits)] [count]
//   lockout:  [window start ms lo][hi] [count] [locked-until ms lo][hi]
//             or, packed, [time ms, low 32 bits] [time, next 16 bits | count << 16]:
//             the time is the window's start, or, while the count is LOCKED,
//             when the lockout ends (a locked key counts nothing). Both
//             layouts answer alike: the next window's first count forgets
//             a lockout that ended, and a request stamped before its key's
//             window began (decided after a later one) counts in that
//             window as of its start, so an ended lockout never refuses it
//   live ring (3 s x 20): [newest bucket index] [20 x 16-bit counts packed in 10 cells]
#pragma once

#include "core/Decision.h"
#include "core/Rules.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <array>
#include <cstdint>

namespace Floodgate::Core {

// How a ring's bucket counts share its 32-bit cells: `bits` each (8, 10, 16
// or 32), `perCell` of them in a cell, the lowest position in the
// low bits. `sticky`: a count at its width's most has saturated and stays
// (the live ring, wide counts); false where no count can pass the level's
// limit, so the most is a plain count a refusal may take back.
struct Lanes {
    std::uint8_t bits = 32;
    std::uint8_t perCell = 1;
    std::uint8_t mul = 128;  // pos / perCell == (pos * mul) >> 7 for every pos < 128
    bool sticky = true;
    static constexpr Lanes of(std::uint8_t bits, bool sticky)
    {
        const std::uint8_t per = std::uint8_t(32 / bits);
        return Lanes{bits, per, std::uint8_t((128 + per - 1) / per), sticky};
    }
    std::uint32_t full() const { return bits == 32 ? 0xffff'ffffu : (1u << bits) - 1; }
    std::size_t cellOf(std::size_t pos) const { return (pos * mul) >> 7; }
    std::size_t cellsFor(std::size_t n) const { return cellOf(n + perCell - 1); }
};

// A level compiled for the engine: fixed numbers and its place in the cells.
struct LevelSpec {
    ShortName name;
    Algorithm algorithm = Algorithm::SlidingWindow;
    std::uint32_t limit = 0;
    Millis periodMs = 0;
    Millis bucketMs = 0;       // sliding: bucket width
    std::uint32_t buckets = 0; // sliding: number of buckets (period / bucketMs, rounded up)
    Millis lockoutMs = 0;      // lockout
    bool countRefused = false;
    std::uint16_t offset = 0;  // first cell
    std::uint16_t cells = 0;   // cells used (this node's own counts)
    // Sliding: counts of 8, 10 or 16 bits, several per cell, the narrowest
    // the limit fits in (up to 255, 1,023, 65,535). Only where no bucket can
    // pass the limit: a level that counts only admitted requests (not
    // countRefused) on one node's own counts (not shared).
    // Lockout: the two-cell layout (one time, a 16-bit count); a limit of at
    // most 65,534 on one node's own counts.
    bool packed = false;
    Lanes lanes;               // sliding: the buckets' width
    Divisor byBucket;          // sliding: floor(now / bucketMs) without a division
    Divisor byBuckets;         // sliding: a bucket index's place in the ring
    Divisor byPeriod;          // fixed: the window's index
    // In a cluster (docs/CLUSTER.md): the other nodes' counts, as the last
    // sync with Redis brought them, follow the own cells in the same layout
    // (cells more cells). Only the sync writes them; this node counts in its own.
    bool shared = false;

    // `shared`: the level is counted across a cluster (its remote cells
    // follow its own, in the same wide layout).
    static LevelSpec compile(const Level& level, std::string_view name, bool shared = false);
    static std::uint16_t cellsFor(const Level& level, bool shared = false);
    static bool packs(const Level& level, bool shared);
    // Identifies the cell layout (algorithm, period, bucket width): a key's
    // counts survive a change of limit but not of shape.
    std::uint64_t shapeSignature() const;
    // How long after its last counted request a key's state matters.
    Millis keepMs() const;
};

struct Verdict {
    bool allowed = true;
    std::uint32_t used = 0;      // counted in the window now (before this request)
    Millis resetMs = 0;          // until the counted requests have all left the window
    Millis retryAfterMs = 0;     // when refused: until a request would pass
    Millis windowStartMs = 0;    // when the counted window began (sliding: the oldest bucket's start)
};

// Brings the cells up to `now` (drops buckets that left the window, ends an
// elapsed lockout) and says whether one more request fits.
Verdict evaluate(const LevelSpec& spec, std::uint32_t* cells, Millis now);

// What a shared level is judged on (docs/CLUSTER.md, "when the cluster is down").
struct LevelView {
    enum class Kind : std::uint8_t {
        Own,       // this node's counts against the whole limit (a single node; "open")
        Combined,  // this node's counts plus the other nodes' against the whole limit
        Share,     // this node's counts against its share of the limit ("local")
    };
    Kind kind = Kind::Own;
    std::uint32_t nodes = 1;  // Share: the limit is split this many ways (rounded up)
    // Combined: room the other nodes hold as leases (docs/CLUSTER.md, "what a
    // node checks the limit against"). A request that fits the counts but
    // not the counts and this is refused; nobody admitted it, so it is not
    // in `used` unless the request is refused for it.
    std::uint32_t reserved = 0;
    // How long until the first of those leases lapses: a request refused for
    // them may come back then (0: already lapsed, the node is asking Redis).
    Millis reservedLapseMs = 0;
};
// evaluate() for a level that may be shared: brings the own cells up to
// `now`, then judges the view asked for (the other nodes' counts only for a
// shared level). The verdict's numbers (used, retry-after, reset) are the view's.
Verdict evaluate(const LevelSpec& spec, std::uint32_t* cells, Millis now, LevelView view);
// Counts one request (call after evaluate at the same `now`).
void count(const LevelSpec& spec, std::uint32_t* cells, Millis now);
// After count(): how long until the window's quota is whole again.
Millis resetAfterCount(const LevelSpec& spec, const std::uint32_t* cells, Millis now);
// Takes back a count made at the same `now` (a reservation the rest of the
// decision did not confirm). Never goes below zero.
void uncount(const LevelSpec& spec, std::uint32_t* cells, Millis now);
// The level refused this request: a lockout level starts (or, with
// countRefused, restarts) its lockout; the others count it if countRefused.
void refuse(const LevelSpec& spec, std::uint32_t* cells, Millis now);
// The buckets of a level, oldest first, for the console ("what sits in each bucket").
struct BucketView {
    Millis startMs = 0;
    std::uint32_t count = 0;
};
// For a shared level, `cluster` adds the other nodes' counts (the
// cluster-wide view); without it, this node's own.
std::vector<BucketView> bucketsOf(const LevelSpec& spec, const std::uint32_t* cells, Millis now, bool cluster = true);
// The verdict without bringing the cells forward (for snapshots of a const table).
Verdict peek(const LevelSpec& spec, const std::uint32_t* cells, Millis now, bool cluster = true);

// The other nodes' counts of a shared level as the sync reports them:
// `stamp` is the newest bucket's index (sliding), the window's index
// (fixed) or the window's start (lockout); `counts` oldest first (one for
// fixed and lockout).
struct RemoteCounts {
    std::int64_t stamp = 0;
    const std::uint32_t* counts = nullptr;
    std::size_t size = 0;
    Millis lockedUntil = 0;
};
// Writes them into the level's remote cells (`cells` is the level's own
// first cell, as for evaluate(); the remote ones follow at cells + spec.cells).
void storeRemote(const LevelSpec& spec, std::uint32_t* cells, const RemoteCounts& remote);
// This node's own counts of a level as of `now`, in the same form (for its report).
// `out` receives the counts; the stamp (and lockedUntil) come back.
RemoteCounts ownCounts(const LevelSpec& spec, const std::uint32_t* cells, Millis now, std::vector<std::uint32_t>& out);

// A window of uncounted continuations (HTTP Range reads, Tuning.h): it
// begins when the resource's first part is counted and lasts windowMs.
// Cells: [window start ms lo][hi][continuations taken].
namespace ContinuationWindow {
inline constexpr std::uint16_t Cells = 3;
bool open(const std::uint32_t* cells, Millis now, Millis windowMs);
void begin(std::uint32_t* cells, Millis now);
// Takes one continuation when the window is open and has one left.
bool take(std::uint32_t* cells, Millis now, Millis windowMs, std::uint32_t bound);
} // namespace ContinuationWindow

// The live view of a client seen lately (its LiveRecord, KeyTable.h): 3 s x 20 buckets.
namespace LiveRing {
inline constexpr std::uint16_t Cells = 1 + Tuning::liveBucketCount / 2;
static_assert(Tuning::liveBucketCount < 128);  // Lanes::cellOf
void count(std::uint32_t* cells, Millis now);
// Counts oldest first; the last element is the bucket holding `now`.
std::array<std::uint32_t, Tuning::liveBucketCount> read(const std::uint32_t* cells, Millis now);
// Requests in the whole minute the ring covers.
std::uint32_t total(const std::array<std::uint32_t, Tuning::liveBucketCount>& live);
// Recent rate: the current and the previous bucket over the time they cover.
double recentRate(const std::array<std::uint32_t, Tuning::liveBucketCount>& live, Millis now);
} // namespace LiveRing

} // namespace Floodgate::Core
