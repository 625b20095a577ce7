// SPDX-License-Identifier: GPL-3.0-or-later
// The tracked keys: a sharded open-addressing hash table whose entries carry
// their own cells (bucket rings, lockout state), an LRU list per shard for
// eviction at capacity, and idle expiry when a key's last bucket has left its
// longest window. Beside the entries, a bounded pool of live records (the
// live view's minute of 3 s buckets and the last full address) for the
// entries seen lately. Internal to the engine; no I/O, no Qt.
#pragma once

#include "core/TableKey.h"
#include "core/Time.h"
#include "core/ShortLock.h"
#include "core/Window.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace Floodgate::Core {

std::uint64_t hashKey(const TableKey& key);

// What the live view keeps of a client seen lately, one cache line, in a
// pool of its own beside the table (KeyTable::Live).
struct alignas(64) LiveRecord {
    std::uint32_t ring[LiveRing::Cells];  // the 3 s x 20 live ring
    std::uint32_t owner;                  // slot + 1 of the entry it was last given to
    std::uint64_t detail;                 // the low 64 bits of the client's last full address
    Millis lastSeen;                      // the client's last request
};
static_assert(sizeof(LiveRecord) == 64);

class KeyTable {
public:
    struct Header {
        std::uint64_t a = 0;            // the key (TableKey without its pad)
        std::uint64_t b = 0;
        std::uint64_t extra = 0;
        std::uint32_t space = 0;
        std::uint32_t signature = 0;    // the cell layout the cells were written with
        std::uint32_t prev = 0;         // LRU neighbours (slot index + 1; 0 = none)
        std::uint32_t next = 0;
        Millis expiresAt = 0;           // when nothing in the cells matters any more
        std::uint32_t flags = 0;        // free for the owner (the client space keeps the customer tag)
        std::uint32_t live = 0;         // its live record (record + 1 in the shard's pool, 0 = none) and the LIVE_* marks

        TableKey key() const { return TableKey{a, b, extra, space, 0}; }
        bool holds(const TableKey& k) const { return a == k.a && b == k.b && extra == k.extra && space == k.space; }
        void setKey(const TableKey& k)
        {
            a = k.a;
            b = k.b;
            extra = k.extra;
            space = k.space;
        }
    };
    static_assert(sizeof(Header) == 56);

    // Header::live: the record in its low bits, and what the live view
    // knows of requests no record holds.
    // LIVE_ONE_UNRECORDED: the entry's last request is on no record, and it
    //   was its only one in the live window (past the pool's bound, a
    //   client's first request takes no record: a spray of addresses seen
    //   once takes none).
    // LIVE_UNRECORDED: requests in the window are on no record, how many is
    //   not known (no record was free for the entry's second one).
    static constexpr std::uint32_t LIVE_ONE_UNRECORDED = 1u << 31;
    static constexpr std::uint32_t LIVE_UNRECORDED = 1u << 30;
    static constexpr std::uint32_t LIVE_RECORD_MASK = LIVE_UNRECORDED - 1;

    struct Shard;
    // An entry's access to its live record, under the entry's shard lock
    // (the 4th argument of a with() callback that takes one).
    class Live {
    public:
        // The entry's record, or null: none yet, or taken for another entry
        // once this one was not seen for a live window.
        LiveRecord* find() const;
        // Counts the request at `now` in the live view, `detail` the low 64
        // bits of its full address. While the pool grows to its bound every
        // client takes a new record. Past it, a client's first request in the
        // window is kept in its header only; the second takes a free record
        // (one whose client has not been seen for a live window) and counts
        // both. No record is ever taken from a client seen within the window:
        // when none is free the entry goes without (LIVE_UNRECORDED) and asks
        // again with its next request.
        void count(Millis now, std::uint64_t detail);

    private:
        friend class KeyTable;
        Live(KeyTable& t, Shard& s, std::uint32_t slot, Millis previous)
            : m_table(t), m_shard(s), m_slot(slot), m_previous(previous) {}
        KeyTable& m_table;
        Shard& m_shard;
        std::uint32_t m_slot;
        Millis m_previous;  // the entry's last request before this one; NO_PREVIOUS when new or reshaped
    };
    static constexpr Millis NO_PREVIOUS = std::numeric_limits<Millis>::min();

    // liveRecords: live records kept at most over all shards (each shard
    // keeps its share, rounded up to a whole chunk; at least one chunk, at
    // most LIVE_RECORD_MASK - 1).
    KeyTable(std::size_t capacity, std::uint16_t strideCells, std::size_t liveRecords = 0);
    ~KeyTable();
    KeyTable(const KeyTable&) = delete;
    KeyTable& operator=(const KeyTable&) = delete;

    std::uint16_t strideCells() const { return m_stride; }
    std::size_t capacity() const { return m_capacity; }

    // Finds or creates the entry for `key` under its shard lock and calls
    // fn(Header&, std::uint32_t* cells, bool created), or with a 4th
    // argument, fn(..., Live&), when fn takes one. When the entry's
    // signature differs from `signature`, its cells are zeroed first (the
    // rule shape changed) and its expiry is now + keepMs. The entry becomes
    // most recently used and its expiry moves to at least now + keepMs, so
    // under one signature (and one keepMs) the expiry less keepMs is the
    // entry's latest request.
    template <class Fn>
    decltype(auto) with(const TableKey& key, std::uint32_t signature, Millis now, Millis keepMs, Fn&& fn)
    {
        return with(key, hashKey(key), signature, now, keepMs, std::forward<Fn>(fn));
    }
    // The same with the key's hash known (prefetch()).
    template <class Fn>
    decltype(auto) with(const TableKey& key, std::uint64_t hash, std::uint32_t signature, Millis now, Millis keepMs, Fn&& fn);

    // Calls fn(const Header&, const std::uint32_t* cells) for every live entry,
    // one shard at a time under its lock. Entries whose expiry has passed are skipped.
    // A fn that takes a 3rd argument gets the entry's const LiveRecord* (or null).
    template <class Fn>
    void forEach(Millis now, Fn&& fn) const;
    // The same with fn(Header&, std::uint32_t* cells): may change the cells
    // (not the key), and touches nothing else.
    template <class Fn>
    void forEachMutable(Millis now, Fn&& fn);

    // Looks an entry up without creating or touching it (a 3rd argument
    // as for forEach).
    template <class Fn>
    bool read(const TableKey& key, Millis now, Fn&& fn) const;

    // Calls fn(Header&, std::uint32_t* cells) on an existing, unexpired
    // entry under its shard lock, without creating one or moving its
    // expiry; false when there is none.
    template <class Fn>
    bool update(const TableKey& key, Millis now, Fn&& fn);

    // Starts loading the index position where `key` is looked up first,
    // without the shard lock (a hint for the cache: no entry is read), so a
    // caller with other work before with() does it while the line comes.
    // Returns the key's hash, for with().
    std::uint64_t prefetch(const TableKey& key) const;

    // Removes entries that expired at or before now; returns how many.
    std::size_t purge(Millis now);

    std::size_t size() const;
    std::uint64_t evictions() const;
    std::uint64_t expirations() const;
    std::size_t bytesPerSlot() const { return m_slotBytes; }
    // Live records: the most a shard keeps, and how many all shards hold now.
    std::size_t liveRecordsPerShard() const { return m_liveCap; }
    std::size_t shardCount() const { return m_shardCount; }
    std::size_t liveRecordsHeld() const;
    // The index's positions over all shards (4 bytes each).
    std::size_t indexPositions() const;

private:
    Shard& shardFor(std::uint64_t hash) const;
    std::uint32_t findOrInsert(Shard& s, const TableKey& key, std::uint64_t hash, Millis now, bool& created);
    std::uint32_t find(const Shard& s, const TableKey& key, std::uint64_t hash) const;
    Header& header(const Shard& s, std::uint32_t slot) const;
    std::uint32_t* cells(const Shard& s, std::uint32_t slot) const;
    void touch(Shard& s, std::uint32_t slot);
    void linkHead(Shard& s, std::uint32_t slot);
    void unlinkLru(Shard& s, std::uint32_t slot);
    void remove(Shard& s, std::uint32_t slot, bool eviction);
    LiveRecord& record(const Shard& s, std::uint32_t r) const;
    const LiveRecord* liveOf(const Shard& s, std::uint32_t slot) const;
    // A record free at `now`, given to the entry at `slot` (zeroed, its
    // owner and the header's record set), or null when none is.
    LiveRecord* takeRecord(Shard& s, std::uint32_t slot, Millis now);
    // fn(header, cells) or, when fn takes it, fn(header, cells, live record or null).
    template <class Fn>
    void visit(const Shard& s, std::uint32_t slot, Fn& fn) const;
    std::size_t expireTail(Shard& s, Millis now, std::size_t maxCount);

    std::size_t m_capacity;
    // Keys across all shards. Touched only when a key is created or removed,
    // never for a key that exists, so the hot path does not share its line.
    alignas(64) std::atomic<std::size_t> m_count{0};
    std::uint16_t m_stride;
    std::size_t m_slotBytes;
    std::size_t m_shardCount;
    std::uint32_t m_liveCap;  // live records per shard
    std::unique_ptr<Shard[]> m_shards;
};

// ---- implementation of the templates -------------------------------------

struct alignas(64) KeyTable::Shard {
    mutable ShortLock mutex;
    std::vector<std::uint32_t> index;  // linear probing; 0 = empty, else the slot + 1 and more (KeyTable.cpp, INDEX_*)
    std::uint64_t mask = 0;
    // The index's place and mask for prefetch(), written under the lock
    // when the index grows, read without it (a stale pair only prefetches
    // a useless line).
    std::atomic<const std::uint32_t*> indexHint{nullptr};
    std::atomic<std::uint64_t> maskHint{0};
    std::vector<std::unique_ptr<std::byte[]>> chunks;
    std::uint32_t used = 0;      // slots ever handed out
    std::uint32_t freeHead = 0;  // slot + 1 of the first free slot (chained through Header::next)
    std::uint32_t head = 0;      // most recently used (slot + 1)
    std::uint32_t tail = 0;      // least recently used (slot + 1)
    std::uint32_t count = 0;
    // The live records: made as the hand first reaches them, up to
    // m_liveCap, then the hand goes round them and takes one whose client
    // was not seen for a live window (its lastSeen), looking at a few per
    // request at most. Over a lap it keeps the least lastSeen it passed:
    // when it comes round, no record can be free before that + the window
    // (lastSeen only grows), so until then nobody looks.
    std::vector<std::unique_ptr<LiveRecord[]>> liveChunks;
    std::uint32_t liveUsed = 0;
    std::uint32_t liveHand = 0;
    Millis liveLapLeast = std::numeric_limits<Millis>::max();
    Millis liveFreeFrom = std::numeric_limits<Millis>::min();
    // The first lap: the hand is at the end of the records made so far.
    bool liveGrowing() const { return liveHand == liveUsed; }
    std::atomic<std::uint64_t> evictions{0};
    std::atomic<std::uint64_t> expirations{0};
};

template <class Fn>
decltype(auto) KeyTable::with(const TableKey& key, std::uint64_t h, std::uint32_t signature, Millis now, Millis keepMs, Fn&& fn)
{
    Shard& s = shardFor(h);
    std::lock_guard lock(s.mutex);
    bool created = false;
    const std::uint32_t slot = findOrInsert(s, key, h, now, created);
    Header& hd = header(s, slot);
    std::uint32_t* c = cells(s, slot);
    Millis previous = NO_PREVIOUS;
    if (hd.signature != signature) {
        std::memset(c, 0, sizeof(std::uint32_t) * m_stride);
        hd.signature = signature;
        hd.expiresAt = now + keepMs;
    } else {
        previous = hd.expiresAt - keepMs;
        if (now + keepMs > hd.expiresAt)
            hd.expiresAt = now + keepMs;
    }
    touch(s, slot);
    if constexpr (std::is_invocable_v<Fn&, Header&, std::uint32_t*, bool, Live&>) {
        Live live(*this, s, slot, created ? NO_PREVIOUS : previous);
        return fn(hd, c, created, live);
    } else {
        return fn(hd, c, created);
    }
}

template <class Fn>
void KeyTable::visit(const Shard& s, std::uint32_t slot, Fn& fn) const
{
    const Header& hd = header(s, slot);
    const auto* c = static_cast<const std::uint32_t*>(cells(s, slot));
    if constexpr (std::is_invocable_v<Fn&, const Header&, const std::uint32_t*, const LiveRecord*>)
        fn(hd, c, liveOf(s, slot));
    else
        fn(hd, c);
}

template <class Fn>
void KeyTable::forEach(Millis now, Fn&& fn) const
{
    for (std::size_t i = 0; i < m_shardCount; ++i) {
        const Shard& s = m_shards[i];
        std::lock_guard lock(s.mutex);
        for (std::uint32_t p = s.head; p != 0;) {
            const Header& hd = header(s, p - 1);
            if (hd.expiresAt > now)
                visit(s, p - 1, fn);
            p = hd.next;
        }
    }
}

template <class Fn>
void KeyTable::forEachMutable(Millis now, Fn&& fn)
{
    for (std::size_t i = 0; i < m_shardCount; ++i) {
        Shard& s = m_shards[i];
        std::lock_guard lock(s.mutex);
        for (std::uint32_t p = s.head; p != 0;) {
            Header& hd = header(s, p - 1);
            if (hd.expiresAt > now)
                fn(hd, cells(s, p - 1));
            p = hd.next;
        }
    }
}

template <class Fn>
bool KeyTable::read(const TableKey& key, Millis now, Fn&& fn) const
{
    const std::uint64_t h = hashKey(key);
    const Shard& s = shardFor(h);
    std::lock_guard lock(s.mutex);
    const std::uint32_t slot = find(s, key, h);
    if (slot == 0)
        return false;
    const Header& hd = header(s, slot - 1);
    if (hd.expiresAt <= now)
        return false;
    visit(s, slot - 1, fn);
    return true;
}

template <class Fn>
bool KeyTable::update(const TableKey& key, Millis now, Fn&& fn)
{
    const std::uint64_t h = hashKey(key);
    Shard& s = shardFor(h);
    std::lock_guard lock(s.mutex);
    const std::uint32_t slot = find(s, key, h);
    if (slot == 0)
        return false;
    Header& hd = header(s, slot - 1);
    if (hd.expiresAt <= now)
        return false;
    touch(s, slot - 1);
    fn(hd, cells(s, slot - 1));
    return true;
}

} // namespace Floodgate::Core
