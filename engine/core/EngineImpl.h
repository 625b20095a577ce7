// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's insides, shared by its source files and private to them:
// the compiled configuration, what is published to deciding threads, the
// state kept beside the key table (cooldowns, escalation history), and
// Engine::Impl, which owns it all.
//
//   Engine.cpp         construction, publishing configuration and lists, purge
//   EngineCompile.cpp  EngineConfig -> Compiled (levels laid out in cells, keys hashed)
//   EngineDecide.cpp   decide() and reportSuccess(): the request path
//   EngineBans.cpp     escalation and the automatic bans the engine owns
//   EngineQueries.cpp  the bounded snapshots the console and the admin API read
//   EngineCluster.cpp  a cluster node's side of the sync: gates, reports, acks
//   EngineCooldowns.cpp cooldowns shared with the other nodes of a cluster
#pragma once

#include "core/CustomerKey.h"
#include "core/Engine.h"
#include "core/Glob.h"
#include "core/Hash.h"
#include "core/KeyTable.h"
#include "core/LevelRun.h"
#include "core/ShardedMap.h"
#include "core/Stats.h"
#include "core/Tuning.h"
#include "core/Window.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace Floodgate::Core {

inline constexpr std::uint32_t CLIENT_SPACE = 0;
// Key spaces of their own in the client table for HTTP Range reads (rules
// take 1, 2, ...): (client, path) for a resource being read in parts, and
// (client) for its continuations over all resources. Cells: a ContinuationWindow.
inline constexpr std::uint32_t RANGE_RESOURCE_SPACE = 0xffff'fff0u;
inline constexpr std::uint32_t RANGE_CLIENT_SPACE = 0xffff'fff1u;
inline constexpr std::uint32_t RANGE_SIGNATURE = 0x7a46e5u;  // any constant no level layout folds to
// Seeds of the shape signatures (EngineCompile.cpp): any distinct constants,
// so a client entry and a customer entry with the same levels never share
// a signature.
inline constexpr std::uint64_t CLIENT_SHAPE_SEED = 0x51ed27u;
inline constexpr std::uint64_t CUSTOMER_SHAPE_SEED = 0xc0ffeeu;
// Mixed into every signature of a cluster node's layout (the other nodes'
// counts and the sync cells make its entries wider).
inline constexpr std::uint64_t CLUSTER_SHAPE_SEED = 0xc1u << 24;
// Rules that key on something other than the client address, or a customer,
// keep their own entries; a decision touches the customer's or those rules'
// (never both), so validate()'s cap on keyed rules bounds them.
inline constexpr std::size_t MAX_SECONDARY = std::max<std::size_t>(Tuning::maxKeyedRules, 1);

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// In a cluster: where an entry keeps its sync cells, the lowest limit of its
// levels (what its error budget is cut from) and a name for its layout that
// is the same on every node (process-independent, unlike `signature`).
struct SharedEntry {
    std::uint16_t sync = 0;
    std::uint32_t minLimit = 0;
    std::uint64_t shape = 0;
};

struct CompiledRule {
    std::string name;
    Discriminator discriminator = Discriminator::ClientAddress;
    std::string header;
    std::string method;  // empty = any
    PatternSet path;
    bool anyPath = true;
    std::vector<LevelSpec> levels;
    std::uint32_t space = CLIENT_SPACE;
    std::uint32_t signature = 0;  // own-space rules
    Millis keepMs = 0;
    SharedEntry shared;           // own-space rules, in a cluster

    bool applies(const RequestFacts& f) const
    {
        return (method.empty() || equalsIgnoreCase(method, f.method)) && (anyPath || path.matches(f.path));
    }
};

struct CompiledCustomer {
    std::string id;
    std::string name;
    std::string tier;
    std::vector<LevelSpec> levels;
    std::uint32_t signature = 0;
    Millis keepMs = 0;
    SharedEntry shared;
    TableKey key;
    std::uint32_t tag = 0;  // kept in the client's entry: "this address spoke for that customer"
};

struct CompiledCooldown {
    ShortName rule;  // "cooldown:<name>"
    std::string method;
    PatternSet path;
    Millis durationMs = 0;
    std::string userHeader;
    std::uint64_t actionHash = 0;

    bool applies(const RequestFacts& f) const
    {
        return (method.empty() || equalsIgnoreCase(method, f.method)) && path.matches(f.path);
    }
};

struct Compiled {
    std::shared_ptr<const EngineConfig> source;
    bool clustered = false;  // every level shared, entries with sync cells
    std::vector<CompiledRule> rules;
    std::uint16_t clientStride = 0;
    std::uint32_t clientSignature = 0;
    Millis clientKeepMs = 0;
    std::vector<LevelSpec> clientLevels;  // every per-address rule's, in the entry's order
    SharedEntry clientShared;
    std::uint16_t tableStride = 0;
    std::unordered_map<std::string, CompiledCustomer, StringHash, std::equal_to<>> customers;
    std::uint16_t customerStride = 1;
    std::unordered_map<std::uint32_t, std::string> customerByTag;
    // Whose each key is (its SHA-256): filled once every customer is in
    // `customers`, whose nodes stay where they are.
    struct KeyOwner {
        const CompiledCustomer* customer = nullptr;
        Millis expiresAt = 0;  // 0: none
    };
    std::unordered_map<KeyDigest, KeyOwner, KeyDigestHash> customerKeys;
    std::vector<CompiledCooldown> cooldowns;
    PatternSet excluded;
    PatternSet safeAgents;
    bool cookielessOnly = false;
    Escalation escalation;
    Settings settings;

    // The client entry's keep under the signatures of the configurations
    // before this one (the latest first, a few), so that an entry not
    // written since the rules changed still tells its last request.
    std::vector<std::pair<std::uint32_t, Millis>> earlierClientKeeps;

    int keyPrefix(const IpAddress& key) const
    {
        return key.isV4() ? 96 + settings.ipv4PrefixBits : settings.ipv6PrefixBits;
    }
    // A client entry's latest request: its expiry less the keep of the
    // rules it was last written under (KeyTable::with); 0 when those rules
    // are too far back to know.
    Millis lastRequestOf(const KeyTable::Header& h) const;
};

// The configuration as the request path reads it; built once per edit.
// `previous`: the configuration it replaces over the same tables, if any.
std::shared_ptr<const Compiled> compile(std::shared_ptr<const EngineConfig> cfg, bool clustered, const Compiled* previous = nullptr);

// The cells at the end of a shared entry (docs/CLUSTER.md, "the error bound"):
//   [0] allowance: requests this node may still admit for the entry before
//       Redis acknowledges more (signed; lease + E, less what was admitted)
//   [1] requests admitted since its last report was taken
//   [2] flags
//   [3..4] when its lease ends (ms, this node's clock)
//   [5] the other nodes' leases at the last acknowledgement (LevelView::reserved)
namespace SyncCells {
// [0] allowance, [1] admitted since the last report, [2] the flags below,
// [3..4] when the lease ends (or, for a new entry, when it reports at the
// latest), [5] the other nodes' leases, [6] when the first of them lapses
// (the low 32 bits of the time in ms; 0: none).
inline constexpr std::uint16_t Count = 7;
inline constexpr std::uint16_t Reserved = 5;
inline constexpr std::uint16_t ReservedLapse = 6;
inline constexpr std::uint32_t Ready = 1;     // allowance set (a new entry starts with E)
inline constexpr std::uint32_t Queued = 2;    // in the report queue (or its report in flight)
inline constexpr std::uint32_t InFlight = 4;  // a report is on its way to Redis
inline constexpr std::uint32_t Urgent = 8;    // report at once: a request waits, or the lease is spent
inline constexpr std::uint32_t Leased = 16;   // Redis granted a lease that has not lapsed
inline constexpr std::uint32_t QuietLease = 32;  // and it is a quiet lease (the client far below its limits)
} // namespace SyncCells

// The tag a customer's entry key folds to (Compiled::customerByTag).
inline std::uint32_t customerTag(const TableKey& key)
{
    return std::uint32_t(key.a ^ (key.a >> 32)) | 1u;
}

// Which table an entry lives in, for the report queue.
inline constexpr std::uint8_t CLIENT_TABLE = 0;
inline constexpr std::uint8_t CUSTOMER_TABLE = 1;

struct QueuedEntry {
    std::uint8_t table = CLIENT_TABLE;
    TableKey key;
    std::uint32_t signature = 0;
};

// What a deciding thread does with one shared entry's sync cells: may it
// admit one more request, and what follows (a report queued, the sync woken).
struct ClusterGate {
    Engine::Impl* impl = nullptr;
    ClusterState state = ClusterState::Up;
    std::uint32_t budget = 1;  // E
    bool waited = false;       // RequestFacts::clusterWaited
    QueuedEntry entry;
    std::uint32_t* sync = nullptr;
    Millis now = 0;
    bool waiting = false;      // out: the request must wait
    bool wake = false;         // out: wake the sync thread (after the locks are released)

    // Called when the levels would admit the request, before they count it:
    // true = count it (and it is charged to the allowance).
    bool admit();
    // A reservation counted by admit() was given back.
    void giveBack();
    // What the node knows of the other nodes' leases is out of date: report
    // at once, so the next decision has Redis's answer.
    void refresh();

private:
    void urgent();  // report at once: queued to be looked at now (the sync thread is woken after the locks are released)
};

// The table of client entries (and the keyed rules' and Range reads'):
// `capacity` keys, with live records for the clients seen lately (Tuning.h).
inline std::shared_ptr<KeyTable> clientTable(std::size_t capacity, std::uint16_t stride)
{
    return std::make_shared<KeyTable>(capacity, stride, Tuning::liveRecordsFor(capacity));
}

// A client's entry in the client table: its counting key (IPv6 cut to its prefix).
inline TableKey clientKeyOf(const IpAddress& key)
{
    return TableKey{key.hi(), key.lo(), 0, CLIENT_SPACE, 0};
}

// Everything a deciding thread reads, published as one immutable set: an
// edit builds the next set and swaps it in (Engine::Impl::publish).
struct Published {
    std::shared_ptr<const Compiled> compiled;
    ListSet lists;
    std::shared_ptr<KeyTable> clients;
    std::shared_ptr<KeyTable> customers;
};

// Who is cooling down from which action: the user id's 128-bit keyed hash,
// or (no user header) the counting key's own address words; the two kinds
// never share an entry.
struct CooldownKey {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    std::uint64_t action = 0;
    bool byAddress = false;
    friend bool operator==(const CooldownKey&, const CooldownKey&) = default;
};
struct CooldownKeyHash {
    std::size_t operator()(const CooldownKey& k) const { return hashWords(k.a ^ k.action, k.b, k.byAddress); }
};

inline CooldownKey cooldownKey(std::string_view user, const IpAddress& key, std::uint64_t action)
{
    if (user.empty())
        return CooldownKey{key.hi(), key.lo(), action, true};
    const Hash128 h = keyedHash128(user);
    return CooldownKey{h.lo, h.hi, action, false};
}
// SharedCooldown::key: "a" (by address) or "u" (by user), then the key's
// three words in hex.
std::string encodeCooldownKey(const CooldownKey& key);
std::optional<CooldownKey> decodeCooldownKey(std::string_view text);

struct AddressHash {
    std::size_t operator()(const IpAddress& a) const { return hashAddress(a); }
};

struct Offender {
    Millis windowStart = 0;
    std::uint32_t refusals = 0;
    std::uint32_t bans = 0;
    Millis lastBanAt = 0;
};


// The address a table key stands for (its two big-endian words).
inline IpAddress addressOfKey(std::uint64_t hi, std::uint64_t lo)
{
    IpAddress::Bytes b{};
    for (int i = 0; i < 8; ++i) {
        b[std::size_t(i)] = std::uint8_t(hi >> (56 - 8 * i));
        b[std::size_t(8 + i)] = std::uint8_t(lo >> (56 - 8 * i));
    }
    return IpAddress(b);
}

struct Engine::Impl {
    std::uint64_t id = 0;  // tells this engine's entries apart in a thread's cache
    mutable std::mutex publishMutex;
    std::shared_ptr<const Published> published;
    std::atomic<std::uint64_t> version{1};
    Stats stats;
    ShardedMap<CooldownKey, Millis, CooldownKeyHash> cooldowns;
    ShardedMap<IpAddress, Offender, AddressHash> offenders;
    std::function<void(const ListEntry&)> onAutomaticBan;
    std::function<void(const SharedCooldown&)> onCooldownStarted;
    std::atomic<std::uint64_t> autoBans{0};

    // ---- the cluster (EngineCluster.cpp) ----
    struct ClusterPart {
        bool enabled = false;
        std::atomic<ClusterState> state{ClusterState::Up};
        std::atomic<std::uint32_t> nodes{1};
        std::mutex queueMutex;  // taken inside a shard lock, never the other way round
        std::vector<QueuedEntry> queue;  // entries to look at now: new in the queue, or urgent
        // The sync thread's own (takeReports, applyAcks): queued entries
        // that are not due before `at` (a lease that lasts, a quiet new
        // client), so a tick does not look at every one of them again.
        struct Later {
            Millis at = 0;
            QueuedEntry entry;
            bool operator>(const Later& o) const { return at > o.at; }
        };
        std::priority_queue<Later, std::vector<Later>, std::greater<Later>> later;
        std::atomic<std::size_t> laterSize{0};
        std::function<void()> wake;
        std::atomic<std::uint64_t> waits{0};
        std::atomic<std::uint64_t> overdrafts{0};
        std::atomic<std::uint64_t> reports{0};
        std::atomic<std::uint64_t> leasesGivenUp{0};  // quiet leases hardly used, not renewed (takeReports)
    } cluster;
    // E for an entry whose lowest limit is minLimit.
    std::uint32_t clusterBudget(std::uint32_t minLimit) const;
    void enqueue(const QueuedEntry& e);

    // The set in force for this thread (re-read only after a publication),
    // and the thread's statistics slot.
    const Published& current(std::size_t& slot);

    std::shared_ptr<const Published> snapshot() const
    {
        std::lock_guard lock(publishMutex);
        return published;
    }

    // Builds the next set from a copy of the current one and publishes it,
    // then frees the sets deciding threads let go of since the last time.
    template <class Fn>
    void publish(Fn&& change)
    {
        {
            std::lock_guard lock(publishMutex);
            auto next = std::make_shared<Published>(*published);
            change(*next);
            published = std::move(next);
            version.fetch_add(1, std::memory_order_acq_rel);
        }
        freeRetired();
    }

    // A set a deciding thread has stopped using may be the last reference
    // to an old list of 100,000 entries, or to a key table replaced by a
    // change of capacity: freeing it costs a free per entry, so a deciding
    // thread hands it over here (current()) and the next publish() or
    // purge() frees it, on the thread that calls them, never on the request
    // path. Between two publications each deciding thread hands over at most
    // one set, so what waits here is bounded by the threads.
    std::mutex retiredMutex;
    std::vector<std::shared_ptr<const Published>> retired;
    void freeRetired()
    {
        std::vector<std::shared_ptr<const Published>> dead;
        {
            std::lock_guard lock(retiredMutex);
            dead.swap(retired);
        }
    }

    // ---- folding list edits (Engine.cpp) ----
    // A thread started on the first list that wants a compaction; it folds
    // the lists' edits while the deciding threads read the lists as they were.
    struct Compactor {
        std::mutex mutex;
        std::condition_variable wake;
        bool due = false;
        bool stop = false;
        std::thread thread;
    } compactor;
    // Called after a publication that left `list` with edits pending.
    void compactLater(const AddressList& list);
    bool compactLists();
    void stopCompactor();

    // ---- the request path (EngineDecide.cpp) ----
    void finish(Decision& d, const Compiled& c, std::size_t slot, Millis now);
    void trackOnly(const Published& p, const IpAddress& key, const RequestFacts& f, Millis now, std::uint32_t customerTag);
    bool continuesResource(const Published& p, const IpAddress& key, std::uint64_t resource, Millis now);
    void beginResource(const Published& p, const IpAddress& key, std::uint64_t resource, Millis now);

    // ---- escalation (EngineBans.cpp) ----
    // Counts an over-limit refusal; true when it earned a ban, which is then
    // in the automatic list and was handed to onAutomaticBan.
    bool escalate(const Compiled& c, const IpAddress& key, Millis now);

    // ---- snapshots (EngineQueries.cpp) ----
    ClientSummary summarize(const Compiled& c, const KeyTable::Header& h, const LiveRecord* live, Millis now) const;
    void describe(const Published& p, ClientSummary& s, const std::uint32_t* cells, Millis now, std::vector<LevelUsage>* levels) const;
};

} // namespace Floodgate::Core
