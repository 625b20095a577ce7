// SPDX-License-Identifier: GPL-3.0-or-later
// A node's link to its cluster (docs/CLUSTER.md): one background thread
// that sends the engine's reports to Redis in batches, brings back the
// other nodes' counts and this node's leases, keeps this node's heartbeat
// and the list of nodes, measures how far Redis's clock is from this one,
// and opens a circuit breaker when Redis is down, hung or answering
// errors, so the request path never waits on it.
#pragma once

#include "cluster/ClusterKey.h"
#include "cluster/RedisUrl.h"
#include "cluster/SharedRecord.h"
#include "core/Cluster.h"
#include "core/Time.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace Floodgate::Core {
class Engine;
}

namespace Floodgate::Cluster {

// The clock a cluster node decides on: its own wall clock moved by how far
// Redis's is from it, so window boundaries fall at the same moment on every
// node whatever their clocks say. Waits (monotonic) stay local.
class ClusterClock final : public Core::Clock {
public:
    explicit ClusterClock(const Core::Clock& base) : m_base(base) {}
    Core::Millis now() const override { return m_base.now() + m_offset.load(std::memory_order_relaxed); }
    Core::Millis monotonic() const override { return m_base.monotonic(); }
    void setOffset(Core::Millis ms) { m_offset.store(ms, std::memory_order_relaxed); }
    Core::Millis offset() const { return m_offset.load(std::memory_order_relaxed); }
    const Core::Clock& base() const { return m_base; }

private:
    const Core::Clock& m_base;
    std::atomic<Core::Millis> m_offset{0};
};

struct NodeStatus {
    std::string name;
    std::string address;          // where it serves, as it says
    Core::Millis lastSeenMs = 0;  // its last heartbeat (Redis's clock)
    double requestsPerSecond = 0;
    bool self = false;
};

struct ClusterStatus {
    enum class Redis : std::uint8_t {
        Up,        // answering within its deadlines
        Degraded,  // answering, but slowly (round trip over Tuning) or with errors lately
        Down,      // out of reach: the breaker is open, when_cluster_down applies
    };
    Redis redis = Redis::Down;
    std::string url;   // redacted: never the password
    std::string node;
    std::int64_t roundTripMicros = 0;  // the last batch's
    Core::Millis syncLagMs = 0;        // from the oldest report of the last batch to its acknowledgement
    Core::Millis clockOffsetMs = 0;    // Redis's clock minus this node's
    std::vector<NodeStatus> nodes;     // seen in the last heartbeats, this one included
    std::uint32_t nodesCounting = 1;   // the N of the error bound
    std::uint64_t batches = 0;
    std::uint64_t reports = 0;
    std::size_t lastBatchSize = 0;
    std::uint64_t errors = 0;
    std::uint64_t breakerOpened = 0;
    bool breakerOpen = true;
    std::string lastError;  // one line, no password
    // Changes made on this node that never reached the cluster: while Redis
    // was out of reach more than ClusterSync::maxPendingChanges waited, and
    // the oldest went (after those that had ended by themselves).
    std::uint64_t droppedChanges = 0;
    // Shared changes read from Redis that no node of this cluster wrote (a
    // tag that does not verify: written by hand, or with another cluster
    // key) or that do not read (a list entry for another range than its
    // key): none was applied. The last one in a line naming it.
    std::uint64_t refusedChanges = 0;
    std::string lastRefused;
    // Fields in entries' hashes that were not a node's counts, removed by
    // the report script (each cost its entry one report); the last one named.
    std::uint64_t malformedFields = 0;
    std::string lastMalformed;
    // The last levelling with the cluster that would have removed more of
    // what this node holds than Tuning allows at once: what it would have
    // removed, and that nothing was (empty: none refused since the start).
    std::string levellingRefused;
};

// What the nodes hold once for the whole cluster (docs/CLUSTER.md, "what
// the nodes share"): named collections (the safelist, the tiers, ...) of
// items, each a value under a key; a change to one is a SharedChange
// (SharedRecord.h). The sync carries them without reading them; what they
// mean, and how a change is applied, is the caller's.
using SharedItems = std::map<std::string, std::string>;  // key -> value

struct Sharing {
    // In the order a node applies them: a customer after its tier. Removals
    // go in the reverse order.
    std::vector<std::string> collections;
    // What this node holds now (called on the sync thread when it joins or
    // comes back, to seed an empty cluster or to compare with it).
    std::function<SharedItems(const std::string& collection)> read;
    // Another node's change, or the cluster's item where this node differs
    // (its actor is "cluster:NODE/WHO" then): to be made here (on the sync
    // thread; the callee queues the write, and calls ClusterSync::refuse
    // for a change it cannot apply).
    std::function<void(const SharedChange&)> apply;
    // When an item ends by itself (an entry's expiry, a ban's or a
    // cooldown's end; 0: never), on the cluster's clock. Redis forgets it
    // then, without a change in the stream (every node ends it at the same
    // moment), and a change still waiting to be sent then is not sent. Unset:
    // the collections' items never end.
    std::function<Core::Millis(const std::string& collection, const std::string& value)> expiresAt;
};

// What the first contact came to.
struct JoinResult {
    enum class Kind : std::uint8_t {
        Joined,     // Redis answered: the node counts with the cluster
        CutOff,     // unreachable or silent for now: the node starts in when_cluster_down and joins later
        Refused,    // the operator must fix something (password, not a Redis): exit 5
    };
    Kind kind = Kind::Joined;
    std::string message;  // one line, no password
};

class ClusterSync {
public:
    struct Options {
        RedisUrl url;
        std::string node;                       // --node-name
        std::string address;                    // this node's listening address, shown to the others (setAddress once known)
        std::function<double()> requestRate;    // requests per second on this node, for the heartbeat
        std::chrono::milliseconds connectTimeout{500};
        std::chrono::milliseconds ioTimeout{250};  // a hung Redis (SIGSTOP) is noticed after this
        ClusterKey key;                         // --cluster-key: tags every shared change, names customers
        // One line for the operator (stderr, the journal): a change refused,
        // a levelling refused, a malformed field removed. Any untrusted text
        // in it is the callee's to escape. Unset: nothing is said.
        std::function<void(const std::string&)> notice;
    };

    // `base`: this node's wall clock (the system's unless a test injects one).
    ClusterSync(Core::Engine& engine, Options options, const Core::Clock& base);
    ~ClusterSync();
    ClusterSync(const ClusterSync&) = delete;
    ClusterSync& operator=(const ClusterSync&) = delete;

    // The first contact, before traffic: lays the engine out for the
    // cluster, adopts the cluster's hash key and measures the clock offset.
    JoinResult join();
    void start();
    void stop();

    // ---- what the nodes share (docs/CLUSTER.md) ----
    // Set before join().
    void share(Sharing sharing);
    // A change made on this node, for the other nodes. Any thread (a
    // listener's too: it only queues); the sync thread sends it (after an
    // outage, before anything else). At most maxPendingChanges wait: beyond,
    // those that have ended go first, then the oldest, counted
    // (ClusterStatus::droppedChanges).
    void publish(SharedChange change);
    static constexpr std::size_t maxPendingChanges = 100'000;
    // A change from the cluster that was not applied here, with the reason:
    // counted, shown (ClusterStatus::refusedChanges) and said (notice). Any
    // thread.
    void refuse(const SharedChange& change, const std::string& why);
    // A tombstone (a removal) stays in Redis this long, so a node cut off
    // for less does not bring the item back when it returns; a node away
    // longer, holding it, may.
    static constexpr Core::Millis tombstoneKeepMs = 30 * Core::DAY;
    // A levelling (a node joining, or Redis found emptied) that would remove
    // more than this many items of one collection that this node holds
    // removes none of them, and says so (ClusterStatus::levellingRefused).
    static constexpr std::size_t maxLevellingRemovals = 10;

    // Where this node serves, for its next heartbeat: the listener's real
    // port once it listens (with --listen HOST:0 it is only known then, and
    // it changes when such a listener restarts). Any thread.
    void setAddress(std::string address);

    // What decisions are timed by (docs/CLUSTER.md, "one clock").
    const ClusterClock& clock() const { return m_clock; }
    ClusterStatus status() const;

    struct State;

private:
    void run();

    Core::Engine& m_engine;
    Options m_options;
    ClusterClock m_clock;
    std::unique_ptr<State> m_state;
};

} // namespace Floodgate::Cluster
