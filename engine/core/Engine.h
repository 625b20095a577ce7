// SPDX-License-Identifier: MIT
// The throttle engine: decides every request (allow, throttle, block, dry-run)
// and keeps the counters that explain why. Plain C++20: no Qt, no I/O, time
// passed in by the caller. Safe to call from many listener threads at once.
//
// Data flow of one decision (docs/ARCHITECTURE.md):
//   blocklist -> safelist -> exclusions -> customer tier levels | per-IP rules
//   -> cooldowns -> escalation (automatic blocklist entry with a TTL)
//
// Configuration and lists are immutable sets published atomically: an edit
// builds a new set and swaps it in; deciding threads pick it up on their next
// request without taking a lock on the common path.
#pragma once

#include "AddressList.h"
#include "Decision.h"
#include "Rules.h"
#include "Snapshot.h"
#include "Time.h"

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

    void setList(ListKind kind, std::shared_ptr<const AddressList> list);
    std::shared_ptr<const AddressList> list(ListKind kind) const;
    // Escalation bans the engine made itself (source = automatic). Storage
    // persists them through the listener and may fold them into the blocklist.
    std::shared_ptr<const AddressList> automaticBans() const;
    // Replaces every automatic ban (storage, after another process changed the database).
    void setAutomaticBans(std::shared_ptr<const AddressList> list);
    // Lifts an automatic ban (the operator's "remove"); true when one was there.
    bool removeAutomaticBan(const Cidr& range);
    // Adds automatic bans (e.g. loaded after a restart with their remaining time).
    void restoreAutomaticBans(const std::vector<ListEntry>& entries);
    // Escalation history: how many times a client was banned and when last,
    // so the next ban doubles after a restart too (fail2ban's bantime.increment).
    struct OffenderRecord {
        IpAddress key;  // the counting key
        std::uint32_t bans = 0;
        Millis lastBanAt = 0;
    };
    void restoreOffenders(const std::vector<OffenderRecord>& offenders);
    // Called on the deciding thread, outside every engine lock, when escalation
    // bans a client. Must be quick (queue it); set before traffic starts.
    void setAutoBanListener(std::function<void(const ListEntry&)> listener);

    // ---- the request path ------------------------------------------------------
    Decision decide(const RequestFacts& facts, Millis now);
    // The action succeeded (the upstream answered 2xx): start the cooldowns
    // that match it (docs/BACKGROUND.md, cooldown: only a successful create starts the clock).
    void reportSuccess(const RequestFacts& facts, Millis now);

    // ---- observability (bounded copies for the console and the admin API) ----
    EngineCounters counters(Millis now) const;
    // The last `seconds` seconds by action, oldest first; the last element is
    // the second holding `now` (still filling). At most Tuning::statsSeconds.
    std::vector<SecondCounts> perSecond(Millis now, std::size_t seconds) const;
    // Clients by recent rate, most first.
    std::vector<ClientSummary> topClients(std::size_t limit, Millis now) const;
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
    // expired automatic bans. Cheap to call every second or so.
    std::size_t purge(Millis now);

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

} // namespace Floodgate::Core
