// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/AddressList.h"

#include "core/Hash.h"
#include "core/Tuning.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace Floodgate::Core {

namespace {

// Orders from here on: entries added after the base was built, by the
// edit that put them last (below it: a base entry's index).
constexpr std::uint64_t APPENDED = std::uint64_t(1) << 40;
constexpr std::size_t NONE = std::size_t(-1);

std::uint64_t hiMaskOf(int prefix)
{
    return prefix >= 64 ? ~0ULL : (prefix == 0 ? 0 : ~0ULL << (64 - prefix));
}

std::uint64_t loMaskOf(int prefix)
{
    return prefix <= 64 ? 0 : (prefix >= 128 ? ~0ULL : ~0ULL << (128 - prefix));
}

} // namespace

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

    // The index of the entry for this masked address, or NONE.
    std::size_t indexOf(std::uint64_t hi, std::uint64_t lo) const
    {
        hi &= hiMask;
        lo &= loMask;
        for (std::uint64_t i = slotOf(hi, lo);; i = (i + 1) & mask) {
            const Slot& s = slots[i];
            if (s.index == 0)
                return NONE;
            if (s.hi == hi && s.lo == lo)
                return s.index - 1;
        }
    }
};

struct AddressList::Base {
    std::vector<ListEntry> entries;
    std::vector<Bucket> buckets;         // longest prefix first
    std::array<std::int16_t, 129> bucketOf;  // prefix -> index in buckets, -1: none
    Millis earliestExpiry = NeverExpires;

    explicit Base(std::vector<ListEntry> list);

    const ListEntry* find(const Bucket& b, std::uint64_t hi, std::uint64_t lo) const
    {
        const std::size_t i = b.indexOf(hi, lo);
        return i == NONE ? nullptr : &entries[i];
    }
    std::size_t indexOf(const Cidr& range) const
    {
        const int b = bucketOf[std::size_t(range.prefix128())];
        return b < 0 ? NONE : buckets[std::size_t(b)].indexOf(range.address().hi(), range.address().lo());
    }
};

struct AddressList::Edit {
    ListEntry entry;       // a removal: only its range
    bool removed = false;
    std::uint64_t seq = 0;    // the how-many-th edit of the list since its base was built
    std::uint64_t order = 0;  // where the entry stands in entries(): a base index, or APPENDED + the seq that put it last
};

// The edits pending, one per range (the last one made), in an
// open-addressing table keyed by the masked address and the prefix.
struct AddressList::Edits {
    std::vector<std::shared_ptr<const Edit>> edits;
    struct Slot {
        std::uint64_t hi = 0;
        std::uint64_t lo = 0;
        std::uint32_t index = 0;  // edit index + 1; 0 = empty
        std::uint32_t prefix = 0;
    };
    std::vector<Slot> slots = std::vector<Slot>(16);
    std::uint64_t mask = 15;
    std::uint64_t seed = processHashSeed();
    std::array<std::uint32_t, 129> perPrefix{};  // edits of each prefix length
    std::uint64_t lastSeq = 0;

    std::uint64_t slotOf(std::uint64_t hi, std::uint64_t lo, std::uint32_t prefix) const
    {
        std::uint64_t h = (hi ^ seed) * GOLDEN_GAMMA ^ (lo + seed + prefix) * XXH_PRIME64_2;
        h ^= h >> 29;
        return h & mask;
    }
    // The edit for this masked address and prefix, or NONE.
    std::size_t indexOf(std::uint64_t hi, std::uint64_t lo, std::uint32_t prefix) const
    {
        for (std::uint64_t i = slotOf(hi, lo, prefix);; i = (i + 1) & mask) {
            const Slot& s = slots[i];
            if (s.index == 0)
                return NONE;
            if (s.hi == hi && s.lo == lo && s.prefix == prefix)
                return s.index - 1;
        }
    }
    std::size_t indexOf(const Cidr& range) const
    {
        return indexOf(range.address().hi(), range.address().lo(), std::uint32_t(range.prefix128()));
    }
    void place(std::size_t index)
    {
        const Cidr& r = edits[index]->entry.range;
        const std::uint64_t hi = r.address().hi(), lo = r.address().lo();
        std::uint64_t i = slotOf(hi, lo, std::uint32_t(r.prefix128()));
        while (slots[i].index != 0)
            i = (i + 1) & mask;
        slots[i] = Slot{hi, lo, std::uint32_t(index + 1), std::uint32_t(r.prefix128())};
    }
    // An edit of a range that has none yet.
    void append(std::shared_ptr<const Edit> edit)
    {
        ++perPrefix[std::size_t(edit->entry.range.prefix128())];
        edits.push_back(std::move(edit));
        if (edits.size() * 2 > slots.size()) {
            // At most half full, so a probe ends soon.
            slots.assign(slots.size() * 2, Slot{});
            mask = slots.size() - 1;
            for (std::size_t i = 0; i < edits.size(); ++i)
                place(i);
        } else {
            place(edits.size() - 1);
        }
    }
};

struct AddressList::Materialized {
    std::once_flag once;
    std::vector<ListEntry> entries;
};

// Makes the next list from `from`: a copy of its edits (pointers), the
// base shared.
struct AddressList::Editor {
    const AddressList& from;
    std::shared_ptr<Edits> edits;
    std::size_t size;
    Millis earliestExpiry;

    explicit Editor(const AddressList& list)
        : from(list)
        , edits(list.m_edits ? std::make_shared<Edits>(*list.m_edits) : std::make_shared<Edits>())
        , size(list.m_size)
        , earliestExpiry(list.m_earliestExpiry)
    {
    }

    struct Current {
        const ListEntry* entry = nullptr;  // null: the range is not on the list
        std::uint64_t order = 0;
        std::size_t edit = NONE;           // its edit, if it has one
    };
    Current current(const Cidr& range) const
    {
        if (const std::size_t i = edits->indexOf(range); i != NONE) {
            const Edit& e = *edits->edits[i];
            return {e.removed ? nullptr : &e.entry, e.order, i};
        }
        if (from.m_base)
            if (const std::size_t i = from.m_base->indexOf(range); i != NONE)
                return {&from.m_base->entries[i], i, NONE};
        return {};
    }
    void set(const Current& at, std::shared_ptr<const Edit> edit)
    {
        if (at.edit == NONE)
            edits->append(std::move(edit));
        else
            edits->edits[at.edit] = std::move(edit);
    }
    // `inPlace`: a range on the list keeps its place; otherwise it goes last.
    void put(const ListEntry& entry, bool inPlace)
    {
        const Current at = current(entry.range);
        const std::uint64_t seq = ++edits->lastSeq;
        const std::uint64_t order = inPlace && at.entry ? at.order : APPENDED + seq;
        if (!at.entry)
            ++size;
        earliestExpiry = std::min(earliestExpiry, entry.expiresAt);
        set(at, std::make_shared<const Edit>(Edit{entry, false, seq, order}));
    }
    void remove(const Cidr& range)
    {
        const Current at = current(range);
        if (!at.entry)
            return;  // not on the list: nothing changes
        --size;
        Edit removal;
        removal.entry.range = range;
        removal.removed = true;
        removal.seq = ++edits->lastSeq;
        set(at, std::make_shared<const Edit>(std::move(removal)));
    }
    AddressList finish() const
    {
        AddressList out;
        out.m_base = from.m_base;
        if (!edits->edits.empty()) {
            out.m_edits = edits;
            out.m_materialized = std::make_shared<Materialized>();
        }
        out.m_size = size;
        out.m_earliestExpiry = size ? earliestExpiry : NeverExpires;
        out.setLevels();
        return out;
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

AddressList::Base::Base(std::vector<ListEntry> list)
{
    // Deduplicate by range, the last one wins, keeping the first position.
    std::unordered_map<Cidr, std::size_t, CidrHash> seen;
    seen.reserve(list.size());
    entries.reserve(list.size());
    for (auto& e : list) {
        auto [it, inserted] = seen.try_emplace(e.range, entries.size());
        if (inserted)
            entries.push_back(std::move(e));
        else
            entries[it->second] = std::move(e);
    }
    std::map<int, std::vector<std::uint32_t>, std::greater<>> groups;
    for (std::uint32_t i = 0; i < entries.size(); ++i) {
        groups[entries[i].range.prefix128()].push_back(i);
        earliestExpiry = std::min(earliestExpiry, entries[i].expiresAt);
    }
    bucketOf.fill(-1);
    buckets.reserve(groups.size());
    const std::uint64_t seed = processHashSeed();
    for (auto& [prefix, indices] : groups) {
        bucketOf[std::size_t(prefix)] = std::int16_t(buckets.size());
        Bucket& b = buckets.emplace_back();
        b.prefix = prefix;
        b.hiMask = hiMaskOf(prefix);
        b.loMask = loMaskOf(prefix);
        b.seed = seed;
        std::size_t cap = 8;
        while (cap < indices.size() * 2)
            cap <<= 1;
        b.slots.assign(cap, Bucket::Slot{});
        b.mask = cap - 1;
        for (std::uint32_t idx : indices) {
            const IpAddress& a = entries[idx].range.address();
            const std::uint64_t hi = a.hi(), lo = a.lo();
            std::uint64_t i = b.slotOf(hi, lo);
            while (b.slots[i].index != 0)
                i = (i + 1) & b.mask;
            b.slots[i] = Bucket::Slot{hi, lo, idx + 1};
        }
    }
}

AddressList::AddressList(std::vector<ListEntry> entries)
{
    if (entries.empty())
        return;
    m_base = std::make_shared<const Base>(std::move(entries));
    m_size = m_base->entries.size();
    m_earliestExpiry = m_base->earliestExpiry;
    setLevels();
}

void AddressList::setLevels()
{
    m_levels.clear();
    for (int prefix = 128; prefix >= 0; --prefix) {
        const int b = m_base ? m_base->bucketOf[std::size_t(prefix)] : -1;
        const bool edited = m_edits && m_edits->perPrefix[std::size_t(prefix)] > 0;
        if (b >= 0 || edited)
            m_levels.push_back(Level{prefix, hiMaskOf(prefix), loMaskOf(prefix), b >= 0 ? &m_base->buckets[std::size_t(b)] : nullptr, edited});
    }
}

const ListEntry* AddressList::match(const IpAddress& address, Millis now) const
{
    const std::uint64_t hi = address.hi(), lo = address.lo();
    for (const Level& l : m_levels) {
        const ListEntry* e = nullptr;
        // An edit of this range decides at this length: its entry, or (a
        // removal) none, whatever the base holds.
        const std::size_t edit = l.edited ? m_edits->indexOf(hi & l.hiMask, lo & l.loMask, std::uint32_t(l.prefix)) : NONE;
        if (edit != NONE) {
            const Edit& ed = *m_edits->edits[edit];
            if (!ed.removed)
                e = &ed.entry;
        } else if (l.base) {
            e = m_base->find(*l.base, hi, lo);
        }
        if (e && e->activeAt(now))
            return e;
    }
    return nullptr;
}

const ListEntry* AddressList::find(const Cidr& range) const
{
    if (m_edits)
        if (const std::size_t i = m_edits->indexOf(range); i != NONE)
            return m_edits->edits[i]->removed ? nullptr : &m_edits->edits[i]->entry;
    if (m_base)
        if (const std::size_t i = m_base->indexOf(range); i != NONE)
            return &m_base->entries[i];
    return nullptr;
}

std::size_t AddressList::activeCount(Millis now) const
{
    if (now < m_earliestExpiry)
        return m_size;
    std::size_t n = 0;
    forEach([&](const ListEntry& e) { n += e.activeAt(now); });
    return n;
}

void AddressList::forEach(const std::function<void(const ListEntry&)>& visit) const
{
    if (m_base) {
        for (std::size_t i = 0; i < m_base->entries.size(); ++i) {
            const ListEntry& e = m_base->entries[i];
            if (m_edits) {
                if (const std::size_t j = m_edits->indexOf(e.range); j != NONE) {
                    const Edit& ed = *m_edits->edits[j];
                    if (!ed.removed && ed.order == i)
                        visit(ed.entry);  // replaced in its place
                    continue;             // removed, or put last
                }
            }
            visit(e);
        }
    }
    if (m_edits) {
        std::vector<const Edit*> appended;
        for (const auto& ed : m_edits->edits)
            if (!ed->removed && ed->order >= APPENDED)
                appended.push_back(ed.get());
        std::sort(appended.begin(), appended.end(), [](const Edit* a, const Edit* b) { return a->order < b->order; });
        for (const Edit* ed : appended)
            visit(ed->entry);
    }
}

const std::vector<ListEntry>& AddressList::entries() const
{
    static const std::vector<ListEntry> none;
    if (!m_edits)
        return m_base ? m_base->entries : none;
    std::call_once(m_materialized->once, [this] {
        m_materialized->entries.reserve(m_size);
        forEach([this](const ListEntry& e) { m_materialized->entries.push_back(e); });
    });
    return m_materialized->entries;
}

AddressList AddressList::with(const ListEntry& entry) const
{
    Editor ed(*this);
    ed.put(entry, true);
    return ed.finish();
}

AddressList AddressList::with(const std::vector<ListEntry>& entries) const
{
    if (pendingEdits() + entries.size() > Tuning::listEditsFoldMax * 4) {
        // Many at once: building the whole list is cheaper than as many edits.
        std::vector<ListEntry> next;
        next.reserve(m_size + entries.size());
        forEach([&](const ListEntry& e) { next.push_back(e); });
        next.insert(next.end(), entries.begin(), entries.end());
        return AddressList(std::move(next));  // the last for a range wins, in the first one's place
    }
    Editor ed(*this);
    for (const ListEntry& e : entries)
        ed.put(e, true);
    return ed.finish();
}

AddressList AddressList::without(const Cidr& range) const
{
    Editor ed(*this);
    ed.remove(range);
    return ed.finish();
}

AddressList AddressList::edited(const std::vector<ListEntry>& puts, const std::vector<Cidr>& removals) const
{
    if (pendingEdits() + puts.size() + removals.size() > Tuning::listEditsFoldMax * 4) {
        // An import: building the whole list once is cheaper than as many edits.
        std::unordered_set<Cidr, CidrHash> touched(removals.begin(), removals.end());
        for (const ListEntry& e : puts)
            touched.insert(e.range);
        std::vector<ListEntry> next;
        next.reserve(m_size + puts.size());
        forEach([&](const ListEntry& e) {
            if (!touched.count(e.range))
                next.push_back(e);
        });
        next.insert(next.end(), puts.begin(), puts.end());
        return AddressList(std::move(next));
    }
    Editor ed(*this);
    for (const Cidr& range : removals)
        ed.remove(range);
    for (const ListEntry& e : puts)
        ed.put(e, false);
    return ed.finish();
}

AddressList AddressList::withoutExpired(Millis now) const
{
    if (now < m_earliestExpiry)
        return *this;
    std::vector<ListEntry> copy;
    copy.reserve(m_size);
    forEach([&](const ListEntry& e) {
        if (e.activeAt(now))
            copy.push_back(e);
    });
    return AddressList(std::move(copy));
}

std::size_t AddressList::pendingEdits() const
{
    return m_edits ? m_edits->edits.size() : 0;
}

bool AddressList::wantsCompaction() const
{
    const std::size_t base = m_base ? m_base->entries.size() : 0;
    return pendingEdits() > std::clamp(base / 16, Tuning::listEditsFoldMin, Tuning::listEditsFoldMax);
}

AddressList AddressList::compacted() const
{
    if (!m_edits)
        return *this;
    std::vector<ListEntry> all;
    all.reserve(m_size);
    forEach([&](const ListEntry& e) { all.push_back(e); });
    return AddressList(std::move(all));
}

std::shared_ptr<const AddressList> AddressList::rebased(const AddressList& earlier, const AddressList& merged) const
{
    if (m_base != earlier.m_base)
        return nullptr;
    const std::uint64_t since = earlier.m_edits ? earlier.m_edits->lastSeq : 0;
    // This list descends from `earlier` when each of earlier's edits is
    // still here, or was edited again after it.
    if (earlier.m_edits) {
        if (!m_edits)
            return nullptr;
        for (const auto& old : earlier.m_edits->edits) {
            const std::size_t i = m_edits->indexOf(old->entry.range);
            if (i == NONE || (m_edits->edits[i] != old && m_edits->edits[i]->seq <= since))
                return nullptr;
        }
    }
    std::vector<std::shared_ptr<const Edit>> later;
    if (m_edits)
        for (const auto& e : m_edits->edits)
            if (e->seq > since)
                later.push_back(e);
    std::sort(later.begin(), later.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
    Editor ed(merged);
    ed.edits->lastSeq = m_edits ? m_edits->lastSeq : 0;  // orders given after `earlier` stay above the merged ones
    for (const auto& e : later) {
        const std::size_t inMerged = merged.m_base ? merged.m_base->indexOf(e->entry.range) : NONE;
        if (e->removed) {
            if (inMerged == NONE)
                continue;  // put and removed since: nothing left to hide
            --ed.size;
            ed.edits->append(e);
            continue;
        }
        if (inMerged == NONE)
            ++ed.size;
        ed.earliestExpiry = std::min(ed.earliestExpiry, e->entry.expiresAt);
        // Put last after `earlier`: it stays last. Otherwise it replaced, in
        // its place, an entry `earlier` held: that place is in merged now.
        const bool putLastSince = e->order >= APPENDED && e->order - APPENDED > since;
        const std::uint64_t order = putLastSince ? e->order : inMerged != NONE ? inMerged : APPENDED + e->seq;
        if (order == e->order) {
            ed.edits->append(e);
        } else {
            Edit moved = *e;
            moved.order = order;
            ed.edits->append(std::make_shared<const Edit>(std::move(moved)));
        }
    }
    return std::make_shared<const AddressList>(ed.finish());
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
        list.forEach([&](const ListEntry& e) {
            if (e.activeAt(now))
                out.push_back(e);
        });
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
