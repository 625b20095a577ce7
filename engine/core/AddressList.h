// SPDX-License-Identifier: MIT
// A safelist or blocklist: CIDR entries with an absolute expiry, immutable
// once built (edits build a new list and publish it). Lookup finds the longest
// prefix that covers an address and has not expired: one hash probe per
// distinct prefix length present, longest first — no scan over entries.
#pragma once

#include "core/Address.h"
#include "core/Time.h"

#include <cstdint>
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

    std::size_t size() const { return m_entries.size(); }
    bool empty() const { return m_entries.empty(); }
    std::size_t activeCount(Millis now) const;
    const std::vector<ListEntry>& entries() const { return m_entries; }

    // A copy with `entry` added (or replacing the same range) / without `range`.
    AddressList with(const ListEntry& entry) const;
    AddressList without(const Cidr& range) const;
    // A copy without the entries that expired at or before `now`.
    AddressList withoutExpired(Millis now) const;

private:
    struct Bucket;  // one prefix length: an open-addressing table of entry indices
    void build();

    std::vector<ListEntry> m_entries;
    // Prefix lengths present, longest first, each with its table.
    std::vector<std::shared_ptr<const Bucket>> m_byPrefix;
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
