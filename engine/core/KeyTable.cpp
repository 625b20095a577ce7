// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/KeyTable.h"

#include "core/Hash.h"
#include "core/Tuning.h"

#include <algorithm>
#include <bit>
#include <new>

namespace Floodgate::Core {

std::uint64_t hashKey(const TableKey& key)
{
    return hashWords(key.a, key.b ^ (key.extra * GOLDEN_GAMMA), key.space);
}

namespace {

// An index position, 32 bits, so that neither a lookup nor a removal reads
// another key's slot (a cache miss each):
//   bits 0-21:  the slot + 1 (0 = empty);
//   bits 22-27: 6 bits of the key's hash (its 32nd to 37th, which neither
//               the position, from the low bits, nor the shard, from the
//               40th, uses): a lookup passes over a position whose bits
//               differ without reading its slot (1 in 64 still does);
//   bits 28-31: how far the position is from the key's home position, 0 to
//               14, or 15 for "15 or more" (then read from its slot): a
//               removal's backward shift needs every following key's home.
constexpr std::uint32_t INDEX_SLOT_BITS = 22;
constexpr std::uint32_t INDEX_SLOT_MASK = (1u << INDEX_SLOT_BITS) - 1;
constexpr std::uint32_t INDEX_FINGERPRINT_MASK = 0x3fu << INDEX_SLOT_BITS;
constexpr std::uint32_t INDEX_DISTANCE_SHIFT = 28;
constexpr std::uint32_t INDEX_DISTANCE_UNKNOWN = 15;

std::uint32_t fingerprintOf(std::uint64_t hash)
{
    return std::uint32_t(hash >> 32) << INDEX_SLOT_BITS & INDEX_FINGERPRINT_MASK;
}

// The position's value with its distance from home set to `distance`.
std::uint32_t atDistance(std::uint32_t v, std::uint64_t distance)
{
    const auto d = std::uint32_t(std::min<std::uint64_t>(distance, INDEX_DISTANCE_UNKNOWN));
    return (v & (INDEX_SLOT_MASK | INDEX_FINGERPRINT_MASK)) | (d << INDEX_DISTANCE_SHIFT);
}

std::size_t shardCountFor(std::size_t capacity)
{
    // Small tables (tests, customer tables) keep one shard so LRU order and
    // capacity are exact; large ones spread over up to Tuning::keyTableShards.
    std::size_t n = std::bit_floor(std::max<std::size_t>(1, capacity / 4096));
    return std::min(n, Tuning::keyTableShards);
}

} // namespace

KeyTable::KeyTable(std::size_t capacity, std::uint16_t strideCells, std::size_t liveRecords)
    : m_capacity(std::max<std::size_t>(1, capacity))
    , m_stride(strideCells)
    , m_slotBytes((sizeof(Header) + sizeof(std::uint32_t) * strideCells + 7) & ~std::size_t(7))
    , m_shardCount(shardCountFor(m_capacity))
    , m_liveCap(std::min(LIVE_RECORD_MASK - 1,
                         std::uint32_t(std::max<std::size_t>(1, ceilDiv(std::int64_t(liveRecords),
                                                                        std::int64_t(m_shardCount * Tuning::liveRecordsPerChunk))))
                             * std::uint32_t(Tuning::liveRecordsPerChunk)))
    , m_shards(std::make_unique<Shard[]>(m_shardCount))
{
    for (std::size_t i = 0; i < m_shardCount; ++i) {
        m_shards[i].index.assign(16, 0);
        m_shards[i].mask = 15;
        m_shards[i].indexHint.store(m_shards[i].index.data(), std::memory_order_relaxed);
        m_shards[i].maskHint.store(15, std::memory_order_relaxed);
    }
}

KeyTable::~KeyTable() = default;

KeyTable::Shard& KeyTable::shardFor(std::uint64_t hash) const
{
    // High bits pick the shard, low bits the index position: independent.
    return m_shards[(hash >> 40) & (m_shardCount - 1)];
}

KeyTable::Header& KeyTable::header(const Shard& s, std::uint32_t slot) const
{
    std::byte* base = s.chunks[slot / Tuning::slotsPerChunk].get();
    return *reinterpret_cast<Header*>(base + (slot % Tuning::slotsPerChunk) * m_slotBytes);
}

std::uint32_t* KeyTable::cells(const Shard& s, std::uint32_t slot) const
{
    return reinterpret_cast<std::uint32_t*>(reinterpret_cast<std::byte*>(&header(s, slot)) + sizeof(Header));
}

std::uint32_t KeyTable::find(const Shard& s, const TableKey& key, std::uint64_t hash) const
{
    std::uint64_t i = hash & s.mask;
    const std::uint32_t fingerprint = fingerprintOf(hash);
    while (true) {
        const std::uint32_t v = s.index[i];
        if (v == 0)
            return 0;
        if ((v & INDEX_FINGERPRINT_MASK) == fingerprint && header(s, (v & INDEX_SLOT_MASK) - 1).holds(key))
            return v & INDEX_SLOT_MASK;
        i = (i + 1) & s.mask;
    }
}

void KeyTable::unlinkLru(Shard& s, std::uint32_t slot)
{
    Header& h = header(s, slot);
    if (h.prev)
        header(s, h.prev - 1).next = h.next;
    else
        s.head = h.next;
    if (h.next)
        header(s, h.next - 1).prev = h.prev;
    else
        s.tail = h.prev;
    h.prev = h.next = 0;
}

void KeyTable::touch(Shard& s, std::uint32_t slot)
{
    if (s.head == slot + 1)
        return;  // already most recent: the hot key costs nothing here
    unlinkLru(s, slot);
    linkHead(s, slot);
}

void KeyTable::linkHead(Shard& s, std::uint32_t slot)
{
    Header& h = header(s, slot);
    h.prev = 0;
    h.next = s.head;
    if (s.head)
        header(s, s.head - 1).prev = slot + 1;
    s.head = slot + 1;
    if (!s.tail)
        s.tail = slot + 1;
}

void KeyTable::remove(Shard& s, std::uint32_t slot, bool eviction)
{
    Header& h = header(s, slot);
    // Backward-shift deletion keeps linear probing correct without tombstones.
    std::uint64_t i = hashKey(h.key()) & s.mask;
    while ((s.index[i] & INDEX_SLOT_MASK) != slot + 1)
        i = (i + 1) & s.mask;
    std::uint64_t j = i;
    while (true) {
        j = (j + 1) & s.mask;
        const std::uint32_t v = s.index[j];
        if (v == 0)
            break;
        // Move v back to the hole at i unless its home lies cyclically in
        // (i, j], that is unless it is fewer than j - i from home.
        std::uint64_t distance = v >> INDEX_DISTANCE_SHIFT;
        if (distance == INDEX_DISTANCE_UNKNOWN)
            distance = (j - hashKey(header(s, (v & INDEX_SLOT_MASK) - 1).key())) & s.mask;
        const std::uint64_t gap = (j - i) & s.mask;
        if (distance >= gap) {
            s.index[i] = atDistance(v, distance - gap);
            i = j;
        }
    }
    s.index[i] = 0;
    unlinkLru(s, slot);
    h.setKey(TableKey{});
    h.signature = 0;
    h.live = 0;  // its live record, if it still has one, is free once its last request is a live window old
    h.next = s.freeHead;
    s.freeHead = slot + 1;
    --s.count;
    m_count.fetch_sub(1, std::memory_order_relaxed);
    (eviction ? s.evictions : s.expirations).fetch_add(1, std::memory_order_relaxed);
}

std::size_t KeyTable::expireTail(Shard& s, Millis now, std::size_t maxCount)
{
    std::size_t n = 0;
    while (n < maxCount && s.tail) {
        const std::uint32_t t = s.tail - 1;
        if (header(s, t).expiresAt > now)
            break;
        remove(s, t, false);
        ++n;
    }
    return n;
}

std::uint32_t KeyTable::findOrInsert(Shard& s, const TableKey& key, std::uint64_t hash, Millis now, bool& created)
{
    if (const std::uint32_t v = find(s, key, hash))
        return v - 1;
    created = true;
    // Forget a little idle state on every insert (amortised expiry), then make
    // room at capacity by evicting the least recently used key.
    expireTail(s, now, 2);
    // The capacity is one count across all shards (a per-shard share would
    // evict early in whichever shard the hash fills first). Reserve a place
    // first, then give one back from this shard's LRU end: at most one key
    // over the capacity per shard that is empty when the table is full.
    // A shard also gives one back when its slots reach what an index
    // position can name (INDEX_SLOT_MASK: 4,194,303, well above a shard's
    // share of the largest capacity, 100,000,000 / 64).
    const bool overCapacity = m_count.fetch_add(1, std::memory_order_relaxed) >= m_capacity;
    if ((overCapacity || (s.freeHead == 0 && s.used >= INDEX_SLOT_MASK)) && s.tail)
        remove(s, s.tail - 1, header(s, s.tail - 1).expiresAt > now);

    std::uint32_t slot;
    if (s.freeHead) {
        slot = s.freeHead - 1;
        s.freeHead = header(s, slot).next;
    } else {
        slot = s.used++;
        if (slot / Tuning::slotsPerChunk >= s.chunks.size())
            s.chunks.push_back(std::make_unique<std::byte[]>(Tuning::slotsPerChunk * m_slotBytes));
    }
    Header& h = *new (&header(s, slot)) Header{};
    h.setKey(key);
    h.expiresAt = now;
    std::memset(cells(s, slot), 0, sizeof(std::uint32_t) * m_stride);
    ++s.count;  // m_count was reserved above
    // A new entry is not on the LRU list yet: unlinking it (as touch() does)
    // would take the list's head and tail with it.
    linkHead(s, slot);

    // Keep the index at most 3/4 full.
    if ((std::uint64_t(s.count) + 1) * 4 > (s.mask + 1) * 3) {
        const std::uint64_t cap = (s.mask + 1) * 2;
        std::vector<std::uint32_t> bigger(cap, 0);
        for (std::uint32_t v : s.index) {
            if (v == 0)
                continue;
            const std::uint64_t home = hashKey(header(s, (v & INDEX_SLOT_MASK) - 1).key()) & (cap - 1);
            std::uint64_t i = home;
            while (bigger[i] != 0)
                i = (i + 1) & (cap - 1);
            bigger[i] = atDistance(v, (i - home) & (cap - 1));
        }
        s.index.swap(bigger);
        s.mask = cap - 1;
        s.indexHint.store(s.index.data(), std::memory_order_relaxed);
        s.maskHint.store(s.mask, std::memory_order_relaxed);
    }
    std::uint64_t i = hash & s.mask;
    while (s.index[i] != 0)
        i = (i + 1) & s.mask;
    s.index[i] = atDistance(fingerprintOf(hash) | (slot + 1), (i - hash) & s.mask);
    return slot;
}

std::size_t KeyTable::purge(Millis now)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < m_shardCount; ++i) {
        Shard& s = m_shards[i];
        std::lock_guard lock(s.mutex);
        // The LRU order is by last use, expiry can differ by key shape: walk
        // the whole list, it is cheap next to the work of keeping it ordered.
        for (std::uint32_t p = s.tail; p != 0;) {
            const std::uint32_t prev = header(s, p - 1).prev;
            if (header(s, p - 1).expiresAt <= now) {
                remove(s, p - 1, false);
                ++n;
            }
            p = prev;
        }
    }
    return n;
}

std::uint64_t KeyTable::prefetch(const TableKey& key) const
{
    const std::uint64_t h = hashKey(key);
    const Shard& s = shardFor(h);
    const std::uint32_t* index = s.indexHint.load(std::memory_order_relaxed);
    const std::uint64_t mask = s.maskHint.load(std::memory_order_relaxed);
    // A prefetch never faults, even on an array freed since.
    __builtin_prefetch(index + (h & mask));
    return h;
}

LiveRecord& KeyTable::record(const Shard& s, std::uint32_t r) const
{
    return s.liveChunks[r / Tuning::liveRecordsPerChunk][r % Tuning::liveRecordsPerChunk];
}

const LiveRecord* KeyTable::liveOf(const Shard& s, std::uint32_t slot) const
{
    const std::uint32_t live = header(s, slot).live & LIVE_RECORD_MASK;
    if (live == 0)
        return nullptr;
    // Still this entry's unless the hand gave it to another since (a
    // removed entry's header forgets its record, so a slot reused by a new
    // entry claims none).
    const LiveRecord& rec = record(s, live - 1);
    return rec.owner == slot + 1 ? &rec : nullptr;
}

LiveRecord* KeyTable::takeRecord(Shard& s, std::uint32_t slot, Millis now)
{
    if (now < s.liveFreeFrom)
        return nullptr;  // every record's client was seen within the window
    LiveRecord* taken = nullptr;
    std::uint32_t takenIndex = 0;
    for (std::size_t probe = 0; probe < Tuning::liveRecordProbes && !taken; ++probe) {
        const std::uint32_t r = s.liveHand;
        if (s.liveGrowing()) {
            if (r / Tuning::liveRecordsPerChunk >= s.liveChunks.size())
                s.liveChunks.push_back(std::make_unique<LiveRecord[]>(Tuning::liveRecordsPerChunk));
            ++s.liveUsed;
            taken = &record(s, r);
        } else if (LiveRecord& rec = record(s, r); rec.lastSeen <= now - Tuning::liveWindowMs) {
            taken = &rec;
        } else {
            s.liveLapLeast = std::min(s.liveLapLeast, rec.lastSeen);
        }
        if (taken) {
            takenIndex = r;
            s.liveLapLeast = std::min(s.liveLapLeast, now);  // its client is seen now
        }
        if (r + 1 < m_liveCap) {
            s.liveHand = r + 1;
        } else {
            s.liveHand = 0;
            s.liveFreeFrom = s.liveLapLeast + Tuning::liveWindowMs;
            s.liveLapLeast = std::numeric_limits<Millis>::max();
            if (now < s.liveFreeFrom)
                break;
        }
    }
    if (s.liveHand < s.liveUsed)
        __builtin_prefetch(&record(s, s.liveHand), 1);  // the next to look at
    if (taken) {
        *taken = LiveRecord{};
        taken->owner = slot + 1;
        taken->lastSeen = std::numeric_limits<Millis>::min();
        header(s, slot).live = takenIndex + 1;
    }
    return taken;
}

LiveRecord* KeyTable::Live::find() const
{
    return const_cast<LiveRecord*>(m_table.liveOf(m_shard, m_slot));
}

void KeyTable::Live::count(Millis now, std::uint64_t detail)
{
    Header& h = m_table.header(m_shard, m_slot);
    LiveRecord* rec = find();
    if (!rec) {
        // The entry's requests in the window before this one, none on a record.
        const bool inWindow = m_previous != NO_PREVIOUS && now - m_previous < Tuning::liveWindowMs;
        const std::uint32_t before = inWindow ? h.live & (LIVE_ONE_UNRECORDED | LIVE_UNRECORDED) : 0;
        // A first request takes a record only while the pool grows (a
        // newly made one); past its bound, the header holds it.
        const bool first = before == 0;
        rec = first && !m_shard.liveGrowing() ? nullptr : m_table.takeRecord(m_shard, m_slot, now);
        if (!rec) {
            h.live = first ? LIVE_ONE_UNRECORDED : LIVE_UNRECORDED;
            return;
        }
        if (before == LIVE_ONE_UNRECORDED) {
            LiveRing::count(rec->ring, m_previous);
            rec->lastSeen = m_previous;
        }
    }
    rec->detail = detail;
    rec->lastSeen = std::max(rec->lastSeen, now);
    LiveRing::count(rec->ring, now);
}

std::size_t KeyTable::liveRecordsHeld() const
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < m_shardCount; ++i) {
        std::lock_guard lock(m_shards[i].mutex);
        n += m_shards[i].liveUsed;
    }
    return n;
}

std::size_t KeyTable::indexPositions() const
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < m_shardCount; ++i) {
        std::lock_guard lock(m_shards[i].mutex);
        n += m_shards[i].index.size();
    }
    return n;
}

std::size_t KeyTable::size() const
{
    // The one count the capacity is kept with (while an insert is under way
    // it already includes that key).
    return m_count.load(std::memory_order_relaxed);
}

std::uint64_t KeyTable::evictions() const
{
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < m_shardCount; ++i)
        n += m_shards[i].evictions.load(std::memory_order_relaxed);
    return n;
}

std::uint64_t KeyTable::expirations() const
{
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < m_shardCount; ++i)
        n += m_shards[i].expirations.load(std::memory_order_relaxed);
    return n;
}

} // namespace Floodgate::Core
