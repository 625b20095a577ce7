// SPDX-License-Identifier: GPL-3.0-or-later
// Bounded copies of the engine's state for the console and the admin API.
// Taking one never holds more than one shard lock at a time.
#pragma once

#include "core/AddressList.h"
#include "core/Decision.h"
#include "core/Time.h"
#include "core/Tuning.h"
#include "core/Window.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace Floodgate::Core {

enum class ClientState : std::uint8_t { Ok, Throttled, Blocked, Safelisted };
const char* toString(ClientState state);  // "ok" | "throttled" | "blocked" | "safelisted"

// One second of traffic by action.
struct SecondCounts {
    Millis second = 0;  // start of the second, ms since the epoch
    std::array<std::uint64_t, ActionCount> byAction{};  // indexed by Action
    std::uint64_t total() const { return byAction[0] + byAction[1] + byAction[2] + byAction[3]; }
};

struct EngineCounters {
    std::array<std::uint64_t, ActionCount> decisions{};  // since start, by Action
    std::array<std::uint64_t, ClaimCount> claims{};      // since start, by Claim: customers named without proof
    std::uint64_t trackedKeys = 0;
    std::uint64_t evictions = 0;     // keys dropped at capacity (least recently used)
    std::uint64_t expirations = 0;   // idle keys forgotten when their last bucket left the window
    std::uint64_t autoBans = 0;      // escalations since start
    std::uint64_t activeCooldowns = 0;
    std::size_t blocklistEntries = 0;
    std::size_t safelistEntries = 0;
    std::size_t automaticEntries = 0;
    std::size_t capacity = 0;
};

// What the tracked keys are at one moment (Engine::topClients), entries
// whose time has passed left out (EngineCounters::trackedKeys counts them
// until they are purged).
struct TrackedKeys {
    std::uint64_t clients = 0;     // addresses and IPv6 prefixes: one per client the Clients view can list
    std::uint64_t customers = 0;   // API customers' own counters
    std::uint64_t ruleKeys = 0;    // keys of rules that count by another key (address + user agent, a header's value)
    std::uint64_t rangeReads = 0;  // HTTP Range reads in progress: one per resource being read in parts, one per client reading
    std::uint64_t total() const { return clients + customers + ruleKeys + rangeReads; }
};

// The state of one level for one key.
struct LevelUsage {
    std::string name;
    Algorithm algorithm = Algorithm::SlidingWindow;
    std::uint32_t limit = 0;
    Millis periodMs = 0;
    std::uint32_t used = 0;       // counted in the window now (in a cluster: by every node)
    std::uint32_t usedHere = 0;   // of which by this node (equal to used on a single node)
    std::uint32_t remaining = 0;
    Millis resetMs = 0;
    Millis retryAfterMs = 0;      // > 0 while this level refuses
    bool refusing = false;
    std::vector<BucketView> buckets;  // oldest first (in a cluster: every node's requests)
    std::vector<BucketView> bucketsHere;  // the same buckets, this node's requests only
};

struct ClientSummary {
    IpAddress key;            // the counting key (IPv6 cut to its prefix)
    int keyPrefix = 128;      // prefix of the key in the 128-bit space
    // The full address last seen under this key; unknown for a prefix key
    // whose live record went to another client (a single address is its key).
    std::optional<IpAddress> lastAddress;
    std::uint32_t lastBucket = 0;  // requests in the current 3 s bucket
    std::uint32_t last60s = 0;     // requests in the live window (60 s)
    double ratePerSecond = 0;      // last60s over the live window... of what was observed
    // False when requests of the last minute are in no live record (none
    // was free: KeyTable::Live); live, lastBucket, last60s and the rate then
    // count only what one holds.
    bool liveComplete = true;
    std::array<std::uint32_t, Tuning::liveBucketCount> live{};  // oldest first
    // The binding level: least remaining.
    std::string bindingRule;
    std::uint32_t bindingUsed = 0;     // in a cluster: by every node (what the limit is judged on)
    std::uint32_t bindingUsedHere = 0; // of which by this node (equal to bindingUsed on a single node)
    std::uint32_t bindingLimit = 0;
    Millis retryAfterMs = 0;
    ClientState state = ClientState::Ok;
    Millis lastSeen = 0;
    std::string customer;          // the customer id this address last spoke for, if any
    std::uint32_t customerTag = 0; // internal: which customer (0 = anonymous)
    std::string keyText() const;  // "203.0.113.7" or "2001:db8:1:2::/64"
};

// A counting range as the operator reads it: a single address bare
// ("203.0.113.7"), a prefix as CIDR ("2001:db8:1:2::/64").
std::string keyText(const Cidr& range);

struct ClientDetail {
    ClientSummary summary;
    std::vector<LevelUsage> levels;
    std::optional<ListEntry> listEntry;  // the block/safelist entry that applies, if any
    std::optional<ListKind> listKind;
};

// The "dump of the buckets" (docs/BACKGROUND.md, time buckets): each live bucket with its top keys.
struct LiveBucket {
    Millis startMs = 0;
    std::uint64_t total = 0;  // all keys' requests in this bucket
    std::vector<std::pair<Cidr, std::uint32_t>> top;  // counting range, requests; most first
};

struct LiveBuckets {
    Millis bucketMs = Tuning::liveBucketMs;
    std::vector<LiveBucket> buckets;  // oldest first, Tuning::liveBucketCount of them
    std::size_t keys = 0;             // keys with any request in the window
};

} // namespace Floodgate::Core
