// SPDX-License-Identifier: GPL-3.0-or-later
// A safelist or blocklist: CIDR entries with an absolute expiry, immutable
// once built (an edit makes a new list that is published in its place).
// Lookup finds the longest prefix that covers an address and has not
// expired: one hash probe per distinct prefix length present, longest first
// — no scan over entries.
//
// An edit must not copy 100,000 entries to change one, so a list is a base
// (the entries as last built, shared by every list made from it) and the
// edits made since: one record per range changed, with a table of its own.
// An edit copies the edits (pointers, not entries), never the base; when
// they grow, compacted() folds them into a new base, which the engine does
// in the background (Engine::compactLists).
#pragma once

#include "core/Address.h"
#include "core/Time.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace Floodgate::Core {

enum class ListKind : std::uint8_t { Safelist, Blocklist };
enum class ListSource : std::uint8_t { Operator, Automatic, Import };

inline constexpr Millis NeverExpires = std::numeric_limits<Millis>::max();

struct ListEntry {
    std::int64_t id = 0;  // storage row id (0 when not stored yet)
    Cidr range;
    std::string reason;
    ListSource source = ListSource::Operator;
    Millis createdAt = 0;
    std::string createdBy;
    Millis expiresAt = NeverExpires;  // the entry applies while now < expiresAt
    std::uint32_t banCount = 0;       // automatic entries: this client's how-many-th ban (1, 2, ...)

    bool activeAt(Millis now) const { return now < expiresAt; }
    // On disk. Operator and imported entries are written before they apply;
    // an automatic ban applies at once and its row is written behind.
    bool stored() const { return id != 0; }
};

// An entry with the list it is on: a stored row, a line of a list file.
struct ListedEntry {
    ListKind kind = ListKind::Blocklist;
    ListEntry entry;
};

// One operator change to a list, as storage commits it and a cluster
// carries it to the other nodes (docs/CLUSTER.md): an entry put (added or
// replaced) or a range taken off.
struct ListChange {
    ListKind kind = ListKind::Blocklist;
    ListEntry entry;       // a removal: only its range
    bool removed = false;
    std::string actor;     // who made it: "console:alice", "api:127.0.0.1", "cluster:web-2"
};

const char* toString(ListKind kind);      // "safelist" | "blocklist"
const char* toString(ListSource source);  // "operator" | "automatic" | "import"
std::optional<ListKind> listKindFromString(std::string_view text);
std::optional<ListSource> listSourceFromString(std::string_view text);

class AddressList {
public:
    AddressList() = default;
    // Later entries for the same range replace earlier ones.
    explicit AddressList(std::vector<ListEntry> entries);

    // The longest-prefix entry covering `address` that is active at `now`;
    // when the longest has expired, the next shorter one applies.
    const ListEntry* match(const IpAddress& address, Millis now) const;
    // The entry for exactly this range, expired or not.
    const ListEntry* find(const Cidr& range) const;

    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    std::size_t activeCount(Millis now) const;
    // Every entry, in order: as built, then the ranges added since (an entry
    // replaced by with() keeps its place, one put by edited() goes last).
    // With edits pending, the vector is made on the first call and kept with
    // this list; forEach() visits the same entries without making it.
    const std::vector<ListEntry>& entries() const;
    void forEach(const std::function<void(const ListEntry&)>& visit) const;

    // A copy with `entry` added (or replacing the same range in its place) /
    // without `range`. Each costs the edits pending, not the list's size.
    AddressList with(const ListEntry& entry) const;
    AddressList with(const std::vector<ListEntry>& entries) const;  // each in turn
    AddressList without(const Cidr& range) const;
    // A copy with the ranges of `removals` taken off, then each of `puts` put
    // (one already there is replaced and goes last), as storage commits a
    // batch of operator edits.
    AddressList edited(const std::vector<ListEntry>& puts, const std::vector<Cidr>& removals) const;
    // A copy without the entries that expired at or before `now` (this list
    // itself, shared, when none has).
    AddressList withoutExpired(Millis now) const;

    // ---- folding the edits into the base -------------------------------------
    std::size_t pendingEdits() const;
    // Enough edits pending that lookups and edits gain from a compaction.
    bool wantsCompaction() const;
    // The same entries, in the same order, as one base with no edits pending.
    AddressList compacted() const;
    // `merged` is `earlier.compacted()`, made while this list (a later edit
    // of `earlier`) was published: this list's entries on merged's base, the
    // edits made after `earlier` still pending. Null when this list does not
    // descend from `earlier` (it was replaced as a whole meanwhile).
    std::shared_ptr<const AddressList> rebased(const AddressList& earlier, const AddressList& merged) const;

private:
    struct Bucket;  // one prefix length of the base: an open-addressing table of entry indices
    struct Base;    // the entries as built, with a bucket per prefix length
    struct Edit;    // one range changed since the base was built: its entry, or its removal
    struct Edits;   // the edits, one per range, with a table over them
    struct Editor;  // makes the next list from this one
    struct Materialized;
    // One prefix length present in the base or the edits, longest first.
    struct Level {
        int prefix = 0;
        std::uint64_t hiMask = 0;
        std::uint64_t loMask = 0;
        const Bucket* base = nullptr;  // null: no base entry of this length
        bool edited = false;           // some edit is of this length
    };
    void setLevels();

    std::shared_ptr<const Base> m_base;    // null: empty
    std::shared_ptr<const Edits> m_edits;  // null: none pending
    std::vector<Level> m_levels;
    std::size_t m_size = 0;
    Millis m_earliestExpiry = NeverExpires;  // no entry expires before it (may be earlier than the real first)
    std::shared_ptr<Materialized> m_materialized;  // entries() with edits pending, made once
};

// The lists one decision reads, taken together from one publication: the
// safelist, the blocklist (operator and imported entries) and the automatic
// bans the engine made itself. Readers ask it rather than merging the
// blocklist with the automatic bans themselves.
struct ListSet {
    std::shared_ptr<const AddressList> safelist = std::make_shared<const AddressList>();
    std::shared_ptr<const AddressList> blocklist = std::make_shared<const AddressList>();
    std::shared_ptr<const AddressList> automatic = std::make_shared<const AddressList>();

    bool empty() const { return safelist->empty() && blocklist->empty() && automatic->empty(); }
    // The entry on `kind` for exactly `range`, expired or not: on the
    // blocklist, its own entry first, then an automatic ban.
    const ListEntry* find(ListKind kind, const Cidr& range) const;
    // The entry that decides for `address` at `now` (null: none), its list in
    // `kind`: the longest active prefix across the lists, the blocklist on a tie.
    const ListEntry* match(const IpAddress& address, Millis now, ListKind* kind) const;
    // Every entry of `kind` active at `now`, the blocklist with the automatic bans.
    std::vector<ListEntry> active(ListKind kind, Millis now) const;
};

} // namespace Floodgate::Core
