// SPDX-License-Identifier: GPL-3.0-or-later
// The throttle engine: decides every request (allow, throttle, block, dry-run)
// and keeps the counters that explain why. Plain C++20: no Qt, no I/O, time
// passed in by the caller. Safe to call from many listener threads at once.
//
// Order of one decision (EngineDecide.cpp; engine/core/README.md explains each):
//   lists (the longest active prefix across blocklist, automatic bans and
//   safelist; the blocklist on a tie) -> what is not counted (excluded paths,
//   safe user agents, cookies in cookie-less-only mode, Range continuations)
//   -> cooldowns -> levels (a customer's tier, or keyed rules and the per-IP
//   rules) -> the binding level's answer -> escalation (an automatic ban)
//
// Configuration and lists are immutable sets published atomically: an edit
// builds a new set and swaps it in; deciding threads pick it up on their next
// request without taking a lock on the common path. A list edit shares the
// list's entries with the set before it (AddressList); a thread of the
// engine's own folds the edits in once they grow.
#pragma once

#include "core/AddressList.h"
#include "core/Cluster.h"
#include "core/Decision.h"
#include "core/Rules.h"
#include "core/Snapshot.h"
#include "core/Time.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Core {

class Engine {
public:
    explicit Engine(EngineConfig config = defaultConfig());
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // ---- configuration (operator edits; never on the request path) ----------
    // Validates, compiles and publishes; the next decision uses it. On a
    // validation error nothing changes and the reason (naming the field) is returned.
    std::optional<std::string> setConfig(EngineConfig config);
    std::shared_ptr<const EngineConfig> config() const;

    // The operator's lists (stored before they are published here).
    void setList(ListKind kind, std::shared_ptr<const AddressList> list);
    // One batch of edits to a list (AddressList::edited: the removals, then
    // the puts, each put last), published at a cost that grows with the
    // edits pending, not with the list: the edits are folded into the list
    // in the background once they grow (compactLists).
    void editList(ListKind kind, const std::vector<ListEntry>& puts, const std::vector<Cidr>& removals);
    // Folds the edits pending on every list (the automatic bans included)
    // into their bases now; what the background does once they grow. The
    // lists read the same before and after. True when any list had edits.
    bool compactLists();
    std::shared_ptr<const AddressList> list(ListKind kind) const;
    // Every list at once, from one publication: what readers use to find the
    // entry for a range or every entry of a list (the blocklist with the
    // automatic bans), so none of them merges the lists itself.
    ListSet lists() const;

    // ---- automatic bans (escalation) ------------------------------------------
    // The engine is their only in-memory owner. It makes them on the request
    // path and hands each to the onAutomaticBan hook; storage journals them
    // behind and reports each written row back (automaticBansStored), so an
    // entry knows whether it is on disk (ListEntry::stored()).
    std::shared_ptr<const AddressList> automaticBans() const;
    // Called on the deciding thread, outside every engine lock, when escalation
    // bans a client. Must be quick (queue it); set before traffic starts.
    void onAutomaticBan(std::function<void(const ListEntry&)> hook);
    // Rows written for these bans (their ids set): each held ban with the same
    // range and expiry becomes stored. A ban lifted meanwhile stays lifted.
    void automaticBansStored(const std::vector<ListEntry>& written);
    // The database's automatic bans after another process changed it: they
    // replace the stored ones; bans not written yet stay.
    void reloadAutomaticBans(std::vector<ListEntry> stored);
    // Lifts an automatic ban (the operator's "remove"); true when one was there.
    bool removeAutomaticBan(const Cidr& range);
    // Adds automatic bans (loaded after a restart with their remaining time).
    void restoreAutomaticBans(const std::vector<ListEntry>& entries);
    // Escalation history: how many times a client was banned and when last,
    // so the next ban doubles after a restart too (fail2ban's bantime.increment).
    struct OffenderRecord {
        IpAddress key;  // the counting key
        std::uint32_t bans = 0;
        Millis lastBanAt = 0;
    };
    void restoreOffenders(const std::vector<OffenderRecord>& offenders);
    // An automatic ban another node of the cluster made (docs/CLUSTER.md):
    // held like one made here (unstored until storage journals it), and its
    // ban number and time go into the client's history, so the next ban here
    // continues the escalation. Never handed to onAutomaticBan: it is the
    // other node's to announce. A ban held here that ends as late or later
    // stays. False when nothing was taken (ended already, or held already);
    // the history is taken either way.
    bool takeAutomaticBan(const ListEntry& ban, Millis now);
    // The escalation history held at `now`: every client banned within
    // Tuning::escalationMemoryMs (what purge() has not forgotten).
    std::vector<OffenderRecord> offenders(Millis now) const;

    // ---- the request path ------------------------------------------------------
    Decision decide(const RequestFacts& facts, Millis now);
    // The action succeeded (the upstream answered 2xx): start the cooldowns
    // that match it (docs/BACKGROUND.md, cooldown: only a successful create starts the clock).
    void reportSuccess(const RequestFacts& facts, Millis now);

    // ---- cooldowns in a cluster (docs/CLUSTER.md) ----
    // Called on the deciding thread by reportSuccess for each cooldown it
    // starts, outside every engine lock. Must be quick (queue it); set
    // before traffic starts.
    void onCooldownStarted(std::function<void(const SharedCooldown&)> hook);
    // A cooldown another node started: held here until its end (a later end
    // held here stays). False when the key is not one of SharedCooldown's.
    bool takeCooldown(const SharedCooldown& cooldown);
    // Forgets one (the cluster does not hold it); false when none was held.
    bool dropCooldown(std::string_view key);
    // The cooldowns running at `now`, as the cluster keeps them.
    std::vector<SharedCooldown> cooldowns(Millis now) const;

    // ---- observability (bounded copies for the console and the admin API) ----
    EngineCounters counters(Millis now) const;
    // The last `seconds` seconds by action, oldest first; the last element is
    // the second holding `now` (still filling). At most Tuning::statsSeconds.
    std::vector<SecondCounts> perSecond(Millis now, std::size_t seconds) const;
    // Clients by recent rate, most first. With `tracked`, also what the
    // tracked keys are, counted in the same pass (no extra walk).
    std::vector<ClientSummary> topClients(std::size_t limit, Millis now, TrackedKeys* tracked = nullptr) const;
    // The live view: 20 buckets of 3 s, each with its top keys.
    LiveBuckets liveBuckets(std::size_t topPerBucket, Millis now) const;
    // One client: every applicable level with its buckets. nullopt if unknown
    // and on no list.
    std::optional<ClientDetail> client(const IpAddress& address, Millis now) const;
    // A customer's effective levels (tier with overrides) and their use now;
    // nullopt when `id` is not a known customer.
    std::optional<std::vector<LevelUsage>> customerUsage(std::string_view id, Millis now) const;
    // The counting key the engine uses for an address (IPv6 cut to its prefix).
    Cidr countingRange(const IpAddress& address) const;

    // Forgets idle keys, stale escalation history, expired cooldowns and
    // expired automatic bans, and frees the lists and tables deciding
    // threads have stopped using (never freed on the request path).
    // Cheap to call every second or so.
    std::size_t purge(Millis now);

    // ---- the cluster (docs/CLUSTER.md; engine/cluster syncs it with Redis) ----
    // Lays every entry out with room for the other nodes' counts and a
    // lease, and from then on decides as one node of a cluster. Call once,
    // before traffic; counts held so far start over.
    void enableCluster();
    bool clustered() const;
    // The sync's verdict on Redis and how many nodes count together.
    void setClusterState(ClusterState state, std::uint32_t nodes);
    ClusterState clusterState() const;
    std::uint32_t clusterNodes() const;
    // Called on a deciding thread, outside every engine lock, when an entry
    // needs its report at once (a request waits for it). Must be quick (wake
    // the sync thread); set before traffic starts.
    void onClusterWork(std::function<void()> wake);
    // The reports of the entries due for one: at most `max`; with `all`,
    // every entry that has anything unreported.
    std::vector<SyncReport> takeReports(Millis now, std::size_t max, bool all);
    // What Redis answered, acks[i] for reports[i].
    void applyAcks(const std::vector<SyncReport>& reports, const std::vector<SyncAck>& acks, Millis now);
    // Redis lost what it held (restarted empty): every live entry reports again.
    void resyncAll(Millis now);
    ClusterCounters clusterCounters() const;

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

} // namespace Floodgate::Core
