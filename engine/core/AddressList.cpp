// SPDX-License-Identifier: MIT
#include "core/AddressList.h"

#include "core/Hash.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace Floodgate::Core {

// One prefix length: an open-addressing table whose slots carry the masked
// address inline, so a probe that misses (the common case: most clients are
// on no list) touches one cache line and no entry.
struct AddressList::Bucket {
    int prefix = 0;
    std::uint64_t hiMask = 0;  // the prefix as masks over the address's two big-endian words
    std::uint64_t loMask = 0;
    struct Slot {
        std::uint64_t hi = 0;
        std::uint64_t lo = 0;
        std::uint32_t index = 0;  // entry index + 1; 0 = empty
    };
    std::vector<Slot> slots;
    std::uint64_t mask = 0;
    std::uint64_t seed = 0;

    // Two multiplies and a fold: enough mixing for a table that bounds its
    // own load factor, cheap enough to run three times per request.
    std::uint64_t slotOf(std::uint64_t hi, std::uint64_t lo) const
    {
        std::uint64_t h = (hi ^ seed) * GOLDEN_GAMMA ^ (lo + seed) * XXH_PRIME64_2;
        h ^= h >> 29;
        return h & mask;
    }

    const ListEntry* find(const std::vector<ListEntry>& entries, std::uint64_t hi, std::uint64_t lo) const
    {
        hi &= hiMask;
        lo &= loMask;
        for (std::uint64_t i = slotOf(hi, lo);; i = (i + 1) & mask) {
            const Slot& s = slots[i];
            if (s.index == 0)
                return nullptr;
            if (s.hi == hi && s.lo == lo)
                return &entries[s.index - 1];
        }
    }
};

const char* toString(ListKind kind)
{
    return kind == ListKind::Safelist ? "safelist" : "blocklist";
}

const char* toString(ListSource source)
{
    switch (source) {
    case ListSource::Operator: return "operator";
    case ListSource::Automatic: return "automatic";
    case ListSource::Import: return "import";
    }
    return "operator";
}

std::optional<ListKind> listKindFromString(std::string_view text)
{
    if (text == "safelist")
        return ListKind::Safelist;
    if (text == "blocklist")
        return ListKind::Blocklist;
    return std::nullopt;
}

std::optional<ListSource> listSourceFromString(std::string_view text)
{
    if (text == "operator")
        return ListSource::Operator;
    if (text == "automatic")
        return ListSource::Automatic;
    if (text == "import")
        return ListSource::Import;
    return std::nullopt;
}

AddressList::AddressList(std::vector<ListEntry> entries)
{
    // Deduplicate by range, the last one wins, keeping the first position.
    std::unordered_map<Cidr, std::size_t, CidrHash> seen;
    seen.reserve(entries.size());
    m_entries.reserve(entries.size());
    for (auto& e : entries) {
        auto [it, inserted] = seen.try_emplace(e.range, m_entries.size());
        if (inserted)
            m_entries.push_back(std::move(e));
        else
            m_entries[it->second] = std::move(e);
    }
    build();
}

void AddressList::build()
{
    std::map<int, std::vector<std::uint32_t>, std::greater<>> groups;
    for (std::uint32_t i = 0; i < m_entries.size(); ++i)
        groups[m_entries[i].range.prefix128()].push_back(i);
    m_byPrefix.clear();
    const std::uint64_t seed = processHashSeed();
    for (auto& [prefix, indices] : groups) {
        auto b = std::make_shared<Bucket>();
        b->prefix = prefix;
        b->hiMask = prefix >= 64 ? ~0ULL : (prefix == 0 ? 0 : ~0ULL << (64 - prefix));
        b->loMask = prefix <= 64 ? 0 : (prefix >= 128 ? ~0ULL : ~0ULL << (128 - prefix));
        b->seed = seed;
        std::size_t cap = 8;
        while (cap < indices.size() * 2)
            cap <<= 1;
        b->slots.assign(cap, Bucket::Slot{});
        b->mask = cap - 1;
        for (std::uint32_t idx : indices) {
            const IpAddress& a = m_entries[idx].range.address();
            const std::uint64_t hi = a.hi(), lo = a.lo();
            std::uint64_t i = b->slotOf(hi, lo);
            while (b->slots[i].index != 0)
                i = (i + 1) & b->mask;
            b->slots[i] = Bucket::Slot{hi, lo, idx + 1};
        }
        m_byPrefix.push_back(std::move(b));
    }
}

const ListEntry* AddressList::match(const IpAddress& address, Millis now) const
{
    const std::uint64_t hi = address.hi(), lo = address.lo();
    for (const auto& b : m_byPrefix) {
        const ListEntry* e = b->find(m_entries, hi, lo);
        if (e && e->activeAt(now))
            return e;
    }
    return nullptr;
}

const ListEntry* AddressList::find(const Cidr& range) const
{
    for (const auto& b : m_byPrefix)
        if (b->prefix == range.prefix128())
            return b->find(m_entries, range.address().hi(), range.address().lo());
    return nullptr;
}

std::size_t AddressList::activeCount(Millis now) const
{
    return std::size_t(std::count_if(m_entries.begin(), m_entries.end(), [now](const ListEntry& e) { return e.activeAt(now); }));
}

AddressList AddressList::with(const ListEntry& entry) const
{
    std::vector<ListEntry> copy = m_entries;
    copy.push_back(entry);
    return AddressList(std::move(copy));
}

AddressList AddressList::without(const Cidr& range) const
{
    std::vector<ListEntry> copy;
    copy.reserve(m_entries.size());
    for (const auto& e : m_entries)
        if (e.range != range)
            copy.push_back(e);
    return AddressList(std::move(copy));
}

AddressList AddressList::withoutExpired(Millis now) const
{
    std::vector<ListEntry> copy;
    copy.reserve(m_entries.size());
    for (const auto& e : m_entries)
        if (e.activeAt(now))
            copy.push_back(e);
    return AddressList(std::move(copy));
}

const ListEntry* ListSet::find(ListKind kind, const Cidr& range) const
{
    if (kind == ListKind::Safelist)
        return safelist->find(range);
    if (const ListEntry* e = blocklist->find(range))
        return e;
    return automatic->find(range);
}

const ListEntry* ListSet::match(const IpAddress& address, Millis now, ListKind* kind) const
{
    const ListEntry* blk = blocklist->empty() ? nullptr : blocklist->match(address, now);
    if (!automatic->empty()) {
        const ListEntry* aut = automatic->match(address, now);
        if (aut && (!blk || aut->range.prefix128() > blk->range.prefix128()))
            blk = aut;
    }
    const ListEntry* safe = safelist->empty() ? nullptr : safelist->match(address, now);
    if (blk && (!safe || blk->range.prefix128() >= safe->range.prefix128())) {
        if (kind)
            *kind = ListKind::Blocklist;
        return blk;
    }
    if (safe && kind)
        *kind = ListKind::Safelist;
    return safe;
}

std::vector<ListEntry> ListSet::active(ListKind kind, Millis now) const
{
    std::vector<ListEntry> out;
    auto add = [&](const AddressList& list) {
        for (const ListEntry& e : list.entries())
            if (e.activeAt(now))
                out.push_back(e);
    };
    if (kind == ListKind::Safelist) {
        add(*safelist);
    } else {
        add(*blocklist);
        add(*automatic);
    }
    return out;
}

} // namespace Floodgate::Core
