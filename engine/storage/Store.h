// SPDX-License-Identifier: GPL-3.0-or-later
// The SQLite store: opens (or creates, with docs/INTERFACE.md's defaults) the
// database, refuses a corrupt, locked, foreign or newer file without touching
// it, and runs every write on one writer thread that batches queued jobs into
// one transaction (a savepoint per job). A job's result is delivered only
// after COMMIT; the engine's immutable sets are republished right after, so
// the next request sees the change. Changes made by another process are
// picked up by polling PRAGMA data_version. Never on the request path.
#pragma once

#include "core/AddressList.h"
#include "wire/Json.h"
#include "core/Rules.h"
#include "storage/Tables.h"
#include "core/Problem.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace Floodgate::Core {
class Engine;
}

namespace Floodgate::Storage {

class Connection;

enum class OpenError {
    Corrupt,      // not a database, or pages that fail PRAGMA quick_check
    Locked,       // another connection held the write lock past the busy timeout
    NewerSchema,  // written by a newer Floodgate
    Foreign,      // a SQLite database of some other application
    Io,           // cannot create the folder or the file, or it is read-only
    Unsafe,       // group or others may write it (or a side file): left untouched
};

struct OpenFailure {
    OpenError kind = OpenError::Io;
    std::string message;  // one line: what is wrong and what to do
};

struct StoreOptions {
    std::string path;
    int busyTimeoutMs = int(Core::Tuning::dbBusyTimeoutMs);  // how long a write waits for another writer's lock
    Core::Millis pollIntervalMs = Core::Tuning::dbPollIntervalMs;  // PRAGMA data_version polling (other processes' changes)
    Core::Millis purgeIntervalMs = Core::Tuning::listPurgeIntervalMs;  // expired list entries deleted this often
    std::size_t autoBanQueue = Core::Tuning::autoBanQueue;  // automatic bans waiting for their rows; beyond: dropped, counted
};

// Who made a change: "console:alice", "api:127.0.0.1", "cli:alice", "floodgate".
struct Actor {
    std::string name;
};

// What a write came to, in storage's own terms (the admin API maps them to
// HTTP statuses, the console to words).
enum class Result : std::uint8_t {
    Updated,      // done: an existing row replaced, or nothing needed writing
    Created,      // done: a new row
    Removed,      // done: a row deleted
    Invalid,      // refused: the input is not acceptable (error names the field)
    NotFound,     // refused: nothing to change
    Conflict,     // refused: other rows depend on it (a tier customers use)
    Unavailable,  // not saved: the database is locked or stopped, or the batch was rolled back
    Failed,       // not saved: the database failed this one write
};
const char* toString(Result result);  // "updated", "created", ...

// The outcome of a write, delivered after COMMIT (or the failure).
struct Outcome {
    Result result = Result::Updated;
    std::string error;    // empty on success; names the field when Invalid
    Wire::Json value;     // the stored value in the API's shape
    bool ok() const { return result <= Result::Removed; }
    // The database, not the request, was the problem: worth the operator's attention.
    bool storageFailed() const { return result >= Result::Unavailable; }
};

// Everything the engine needs at start.
struct Loaded {
    Core::EngineConfig config;
    std::vector<Core::ListEntry> safelist;
    std::vector<Core::ListEntry> blocklist;   // operator and imported entries
    std::vector<Core::ListEntry> automatic;   // escalation bans, with their absolute expiry
    std::vector<OffenderRow> offenders;        // escalation history: how many bans, the last one when
};

// A change to the configuration (a tier, a customer, the rules document),
// as storage commits it and a cluster carries it to the other nodes
// (docs/CLUSTER.md), in the admin API's JSON.
struct ConfigChange {
    enum class Part : std::uint8_t { Tier, Customer, Rules };
    Part part = Part::Rules;
    std::string key;     // the tier's name, the customer's id; "rules"
    Wire::Json value;    // Codec's JSON of the item; null when removed
    bool removed = false;
    std::string actor;
};

// Something that went wrong in the background (a purge, a reload, a
// publish) that no caller was waiting for: the console shows it.
using Problem = Core::Problem;

class Store {
public:
    using Done = std::function<void(const Outcome&)>;

    // Opens or creates the database at options.path. On failure returns null
    // and fills *failure; the file is left exactly as it was.
    static std::unique_ptr<Store> open(const StoreOptions& options, const Core::Clock& clock, OpenFailure* failure);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    bool created() const { return m_created; }  // this open made a new database
    const std::string& path() const { return m_options.path; }
    const std::string& adminToken() const { return m_adminToken; }

    Loaded load();

    // Starts the writer thread, publishing every committed change into
    // `engine` (null: no engine, e.g. the command-line import). `adjust` is
    // applied to every configuration before it is published (command-line
    // overrides such as --dry-run); `published` is told after each publish.
    void start(Core::Engine* engine, std::function<void(Core::EngineConfig&)> adjust = {},
               std::function<void(const Core::EngineConfig&)> published = {});
    // Finishes queued jobs and stops the writer thread. Idempotent.
    void stop();
    // Called on the writer thread after each operator change to a list, or
    // to the configuration, is committed and published, except the changes
    // a cluster brought (actor "cluster:..."), which are not sent back.
    // What another process wrote into the file (`floodgate lists import`,
    // the sqlite3 shell) is found by comparing when it is picked up, and
    // told the same way (actor "another process"). Set before start().
    void onListChange(std::function<void(const Core::ListChange&)> hook);
    void onConfigChange(std::function<void(const ConfigChange&)> hook);

    // ---- writes (asynchronous; `done` runs on the writer thread after COMMIT) ----
    // Created or Updated (it replaced one). entry.createdAt: when the caller computed the
    // expiry from (kept when set and not in the future), else now.
    void addEntry(Core::ListKind kind, Core::ListEntry entry, Actor actor, Done done);
    void removeEntry(Core::ListKind kind, Core::Cidr range, Actor actor, Done done);    // Removed, NotFound
    // A tier is named case-insensitively (Core::findTier): "pro" is the
    // stored "Pro", kept so spelt (a customer's tier too).
    void putTier(Core::Tier tier, Actor actor, Done done);                               // Created, Updated
    void deleteTier(std::string name, Actor actor, Done done);                           // Removed, NotFound, Conflict (in use)
    // Created, Updated, Invalid (an unknown tier). Keys::Keep: a stored customer keeps the
    // keys it has and customer.keys are only a new one's (an API PUT or
    // `floodgate customers set` that says nothing of keys); Keys::Replace:
    // exactly customer.keys (the console, the cluster, an import).
    enum class Keys : std::uint8_t { Replace, Keep };
    void putCustomer(Core::Customer customer, Actor actor, Done done, Keys keys = Keys::Replace);
    void deleteCustomer(std::string id, Actor actor, Done done);                         // Removed, NotFound
    // Adds `key` to customer `id`'s keys (Created; NotFound: no such customer). Its
    // other keys expire `keepOthersMs` from now (0: at once, removed; those
    // that expire sooner keep their expiry). What the customer becomes is
    // the outcome's value.
    void addCustomerKey(std::string id, Core::CustomerKey key, Core::Millis keepOthersMs, Actor actor, Done done);
    // Removes the key whose id is `keyId` (Removed; NotFound: no such customer or key).
    void revokeCustomerKey(std::string id, std::string keyId, Actor actor, Done done);
    // Replaces rules, cooldowns, bot options, escalation and settings with
    // those in `config` (tiers and customers in it are ignored).
    void putRules(Core::EngineConfig config, Actor actor, Done done);
    // Changes the rules inside the writer's transaction: `change` gets the
    // configuration as committed and edits it, or returns why not (Invalid).
    void updateRules(std::function<std::optional<std::string>(Core::EngineConfig&)> change, Actor actor, Done done);
    // A rules document (the JSON of GET /api/v1/rules): the sections it has
    // replace the stored ones, decoded onto the rules as committed (the admin
    // API's PUT, `floodgate rules import`). Invalid with the reason when it
    // does not decode or validate.
    void putRulesDocument(Wire::Json document, Actor actor, Done done);
    // Publishes the stored configuration again (after the command-line
    // overrides changed), in order with every write.
    void republish(Done done = {});
    // All or nothing: Updated with {"imported": n, "replaced": m}.
    void importEntries(std::vector<Core::ListedEntry> rows, Actor actor, Done done);
    // The write-behind journal of the engine's automatic bans (the engine's
    // onAutomaticBan hook): queued without waiting (called on listener
    // threads); dropped and counted when the queue is full. Once its row is
    // committed the engine is told (Engine::automaticBansStored). `actor`:
    // who the audit trail names; a ban another node of a cluster made
    // (Engine::takeAutomaticBan) is journalled the same way as
    // "cluster:NODE/floodgate".
    void journalAutomaticBan(const Core::ListEntry& entry, std::string actor = "floodgate");
    // Escalation history another node of a cluster holds (a client banned
    // there, its ban over before this node heard of it): kept, the larger
    // count and the later time winning, for this node's next start.
    void recordOffender(OffenderRow row);

    // Blocking forms for callers that may wait (the admin API thread, the
    // command line, tests). Never call them on the writer thread.
    template <class Fn>
    Outcome wait(Fn&& submit)
    {
        auto promise = std::make_shared<std::promise<Outcome>>();
        auto future = promise->get_future();
        submit([promise](const Outcome& o) { promise->set_value(o); });
        return future.get();
    }

    // ---- reads (their own connection) ----
    std::vector<AuditRow> audit(std::int64_t afterId, std::size_t limit);  // afterId < 0: the newest
    std::vector<Core::ListedEntry> entries();
    Core::EngineConfig config();

    std::uint64_t droppedAutoBans() const;
    std::optional<Problem> lastProblem() const;
    std::uint64_t reloads() const;  // changes picked up from other processes

    struct Effects;

private:
    struct Job {
        std::string what;  // for the log of failures
        std::function<Outcome(Connection&, Effects&)> run;
        Done done;
    };

    Store(StoreOptions options, const Core::Clock& clock);
    void submit(std::string what, std::function<Outcome(Connection&, Effects&)> run, Done done);
    // Changes stored customer `id` inside the writer's transaction: `change`
    // edits it, or returns the refusal; then it is written and audited as
    // `action`, and published.
    void changeCustomer(std::string id, std::string action, std::function<std::optional<Outcome>(Core::Customer&, Core::Millis now)> change,
                        Result success, Actor actor, Done done);
    void writerLoop();
    void runBatch(std::vector<Job>& jobs);
    void publish(const Effects& effects);
    void publishAll();
    // Everything stored, as of one committed state.
    static Loaded readStored(Connection& db);
    // What another process changed, from the difference between what was
    // published last and what is stored now: to the change hooks.
    void tellReloaded(const Loaded& stored);
    void tellChanges(const Effects& effects);
    // The writer's job for an escalation ban the engine made.
    struct JournalledBan {
        Core::ListEntry entry;
        std::string actor;
    };
    Outcome writeAutoBan(Connection& db, Effects& fx, JournalledBan& ban);
    void purgeExpired();
    void publishConfig(Core::EngineConfig config);
    void report(std::string message);
    void writeAudit(Connection& db, const Actor& actor, std::string action, std::string subject, const Wire::Json* before,
               const Wire::Json* after);

    StoreOptions m_options;
    const Core::Clock& m_clock;
    bool m_created = false;
    std::string m_adminToken;
    std::unique_ptr<Connection> m_writer;
    std::unique_ptr<Connection> m_reader;
    std::mutex m_readerMutex;

    Core::Engine* m_engine = nullptr;
    std::function<void(Core::EngineConfig&)> m_adjust;
    std::function<void(const Core::EngineConfig&)> m_published;
    std::function<void(const Core::ListChange&)> m_listChanged;
    std::function<void(const ConfigChange&)> m_configChanged;
    std::optional<Core::EngineConfig> m_stored;  // writer thread: as last published, before m_adjust

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Job> m_jobs;
    std::vector<JournalledBan> m_autoBans;  // the journal: bans whose rows are not written yet
    bool m_stop = false;
    bool m_exited = false;  // the writer left its loop
    bool m_fullReload = false;  // writer thread only: a publish failed, apply everything again
    std::thread m_thread;
    std::int64_t m_dataVersion = 0;
    Core::Millis m_nextPurge = 0;
    std::atomic<std::uint64_t> m_droppedAutoBans{0};
    std::atomic<std::uint64_t> m_reloads{0};
    mutable std::mutex m_problemMutex;
    std::optional<Problem> m_problem;
};

const char* toString(OpenError error);

} // namespace Floodgate::Storage
