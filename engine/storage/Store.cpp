// SPDX-License-Identifier: MIT
#include "Store.h"

#include "Codec.h"
#include "Decimal.h"
#include "Engine.h"
#include "PrivateFiles.h"
#include "Schema.h"
#include "Sqlite.h"
#include "Tuning.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

namespace Floodgate::Storage {

using namespace Core;
using namespace Wire;

struct Store::Effects {
    bool config = false;
    std::vector<std::pair<ListKind, ListEntry>> upserts;
    std::vector<std::pair<ListKind, Cidr>> removals;

    void merge(Effects&& other)
    {
        config = config || other.config;
        for (auto& u : other.upserts)
            upserts.push_back(std::move(u));
        for (auto& r : other.removals)
            removals.push_back(r);
    }
    bool empty() const { return !config && upserts.empty() && removals.empty(); }
};

namespace {

std::string randomToken()
{
    std::random_device device;  // /dev/urandom on Linux
    static constexpr char HEX[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 8; ++i) {
        std::uint32_t v = device();
        for (int k = 0; k < 8; ++k) {
            out += HEX[v & 0xF];
            v >>= 4;
        }
    }
    return out;  // 256 bits
}

std::string subjectOf(ListKind kind, const Cidr& range)
{
    return std::string(toString(kind)) + " " + range.toString();
}

// Puts item in place of the element with the same key, or at the end; the
// JSON of the element it replaced, if any, for the audit trail.
template <class T, class KeyOf>
std::optional<Json> replaceOrAdd(std::vector<T>& items, const T& item, KeyOf keyOf)
{
    auto it = std::find_if(items.begin(), items.end(), [&](const T& x) { return keyOf(x) == keyOf(item); });
    if (it == items.end()) {
        items.push_back(item);
        return std::nullopt;
    }
    Json before = Codec::toJson(*it);
    *it = item;
    return before;
}

// Where the caller left them open: the entry starts now and is the actor's.
// A start the caller fixed stands (it computed the expiry from it: a 7-day
// block lasts exactly 7 days), unless it lies in the future.
void completeEntry(ListEntry& entry, Millis now, const Actor& actor)
{
    if (entry.createdAt == 0 || entry.createdAt > now)
        entry.createdAt = now;
    if (entry.createdBy.empty())
        entry.createdBy = actor.name;
}

std::string seconds(int ms)
{
    return Wire::decimal(ms / 1000.0, 6) + " s";  // as %g wrote it, whatever the locale
}

} // namespace

const char* toString(OpenError error)
{
    switch (error) {
    case OpenError::Corrupt: return "corrupt";
    case OpenError::Locked: return "locked";
    case OpenError::NewerSchema: return "newer schema";
    case OpenError::Foreign: return "not a Floodgate database";
    case OpenError::Io: return "cannot open";
    case OpenError::Unsafe: return "writable by others";
    }
    return "cannot open";
}

Store::Store(StoreOptions options, const Clock& clock)
    : m_options(std::move(options))
    , m_clock(clock)
{
}

Store::~Store()
{
    stop();
}

std::unique_ptr<Store> Store::open(const StoreOptions& options, const Clock& clock, OpenFailure* failure)
{
    namespace fs = std::filesystem;
    const std::string& path = options.path;
    auto fail = [&](OpenError kind, std::string message) -> std::unique_ptr<Store> {
        if (failure)
            *failure = {kind, std::move(message)};
        return nullptr;
    };
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    // The database and the side files SQLite keeps beside it (they hold
    // the same rows); SQLite makes the side files with the database's mode.
    const std::string files[] = {path, path + "-wal", path + "-shm", path + "-journal"};
    std::string why;
    if (!exists) {
        // SQLite would create the file 0644 whatever the umask: it is
        // created here, owner-only, in a folder only the owner can enter.
        const fs::path dir = fs::path(path).parent_path();
        if (!dir.empty() && !Files::createPrivateFolders(dir.string(), &why))
            return fail(OpenError::Io, why + " (choose another place with --db)");
        if (!Files::createPrivateFile(path, &why))
            return fail(OpenError::Io, why + " (choose another place with --db)");
    } else if (fs::is_directory(path, ec)) {
        return fail(OpenError::Io, "the database path " + path + " is a folder (give a file with --db)");
    } else {
        // Someone else could have changed the rules and the lists (a
        // safelisted range, an open admin token): nothing is read from it,
        // and it is not "fixed" either, since it needs looking at first.
        for (const std::string& f : files)
            if (const auto mode = Files::permissionsOf(f); mode && Files::writableByOthers(*mode))
                return fail(OpenError::Unsafe, f + " is writable by group or others (mode " + Files::modeText(*mode)
                                                   + "): check that its rules and lists are yours, then chmod 600 it");
    }

    std::unique_ptr<Store> s(new Store(options, clock));
    try {
        s->m_writer = std::make_unique<Connection>(path, exists ? Connection::Mode::ReadWrite : Connection::Mode::ReadWriteCreate,
                                                   options.busyTimeoutMs);
        Connection& db = *s->m_writer;
        if (sqlite3_db_readonly(db.handle(), "main") == 1)
            return fail(OpenError::Io, "the database " + path + " is read-only (check its permissions, or choose another with --db)");
        int version = 0;
        if (exists) {
            // Everything here only reads: a file that fails a check is left
            // exactly as it was, byte for byte.
            Statement app = db.prepare("PRAGMA application_id");
            app.step();
            const std::int64_t appId = app.integer(0);
            version = Schema::versionOf(db);
            if (appId != 0 && appId != Schema::ApplicationId)
                return fail(OpenError::Foreign, path + " is a SQLite database of another application (application_id "
                                                    + std::to_string(appId) + "); it was left untouched (choose another with --db)");
            if (version > Schema::CurrentVersion)
                return fail(OpenError::NewerSchema, path + " was written by a newer Floodgate (schema " + std::to_string(version)
                                                        + ", this one knows " + std::to_string(Schema::CurrentVersion)
                                                        + "); it was left untouched: upgrade Floodgate or use another --db");
            if (appId == 0 && version == 0) {
                Statement tables = db.prepare("SELECT count(*) FROM sqlite_schema");
                tables.step();
                if (tables.integer(0) > 0)
                    return fail(OpenError::Foreign, path + " holds another application's tables; it was left untouched"
                                                           " (choose another with --db)");
            }
            Statement check = db.prepare("PRAGMA quick_check");
            check.step();
            if (const std::string result = check.text(0); result != "ok") {
                const std::string first = result.substr(0, result.find('\n')).substr(0, 160);  // the first problem, on one line
                return fail(OpenError::Corrupt, path + " is damaged (" + first + "); it was left untouched:"
                                                    " restore a backup or move it away");
            }
        }
        // It passed: from now on it is written to, and it is the owner's
        // alone (Floodgate 0.3 made it 0644).
        for (const std::string& f : files)
            Files::tighten(f);
        {
            Statement wal = db.prepare("PRAGMA journal_mode = WAL");
            wal.step();
        }
        db.exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON");
        {
            WriteTransaction tx(db);
            version = Schema::versionOf(db);
            if (version < Schema::CurrentVersion)
                Schema::migrate(db, version);
            if (version == 0) {
                Tables::writeConfig(db, defaultConfig());
                Tables::setMeta(db, "created_at", Codec::formatTime(clock.now()));
                s->m_created = true;
            }
            auto token = Tables::meta(db, "admin_token");
            if (!token) {
                token = randomToken();
                Tables::setMeta(db, "admin_token", *token);
            }
            s->m_adminToken = *token;
            tx.commit();
        }
        s->m_dataVersion = db.dataVersion();
        s->m_reader = std::make_unique<Connection>(path, Connection::Mode::ReadWrite, options.busyTimeoutMs);
        s->m_reader->exec("PRAGMA query_only = ON; PRAGMA foreign_keys = ON");
    } catch (const SqliteError& e) {
        if (e.corrupt())
            return fail(OpenError::Corrupt, path + " is not a Floodgate database or is damaged (" + e.what()
                                                + "); it was left untouched: restore a backup or move it away");
        if (e.busy())
            return fail(OpenError::Locked, path + " is locked by another process (waited " + seconds(options.busyTimeoutMs)
                                               + "): stop the other writer, or use another --db");
        return fail(OpenError::Io, "cannot open the database " + path + ": " + e.what());
    }
    return s;
}

namespace {

// One read transaction: in WAL mode every statement inside it sees the same
// commit, so a configuration read in ten statements is never half old, half new.
class ReadTransaction {
public:
    explicit ReadTransaction(Connection& db) : m_db(db) { m_db.exec("BEGIN"); }
    ~ReadTransaction()
    {
        try {
            m_db.exec("COMMIT");
        } catch (const SqliteError&) {
        }
    }

private:
    Connection& m_db;
};

} // namespace

Loaded Store::readStored(Connection& db)
{
    // One read transaction: the rules and the lists of one committed state.
    ReadTransaction tx(db);
    Loaded out;
    out.config = Tables::readConfig(db);
    for (ListedEntry& e : Tables::readEntries(db)) {
        if (e.kind == ListKind::Safelist)
            out.safelist.push_back(std::move(e.entry));
        else if (e.entry.source == ListSource::Automatic)
            out.automatic.push_back(std::move(e.entry));
        else
            out.blocklist.push_back(std::move(e.entry));
    }
    out.offenders = Tables::readOffenders(db);
    return out;
}

Loaded Store::load()
{
    std::lock_guard lock(m_readerMutex);
    return readStored(*m_reader);
}

std::vector<AuditRow> Store::audit(std::int64_t afterId, std::size_t limit)
{
    std::lock_guard lock(m_readerMutex);
    return Tables::readAudit(*m_reader, afterId, limit);
}

std::vector<ListedEntry> Store::entries()
{
    std::lock_guard lock(m_readerMutex);
    ReadTransaction tx(*m_reader);
    return Tables::readEntries(*m_reader);
}

EngineConfig Store::config()
{
    std::lock_guard lock(m_readerMutex);
    ReadTransaction tx(*m_reader);
    return Tables::readConfig(*m_reader);
}

std::uint64_t Store::droppedAutoBans() const
{
    return m_droppedAutoBans.load(std::memory_order_relaxed);
}

std::optional<Problem> Store::lastProblem() const
{
    std::lock_guard lock(m_problemMutex);
    return m_problem;
}

void Store::report(std::string message)
{
    std::fprintf(stderr, "floodgate: storage: %s\n", message.c_str());
    std::lock_guard lock(m_problemMutex);
    const std::uint64_t serial = m_problem ? m_problem->serial + 1 : 1;
    m_problem = Problem{serial, m_clock.now(), std::move(message)};
}

std::uint64_t Store::reloads() const
{
    return m_reloads.load(std::memory_order_relaxed);
}

void Store::start(Engine* engine, std::function<void(EngineConfig&)> adjust, std::function<void(const EngineConfig&)> published)
{
    m_engine = engine;
    m_adjust = std::move(adjust);
    m_published = std::move(published);
    m_thread = std::thread([this] { writerLoop(); });
}

void Store::stop()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void Store::submit(std::string what, std::function<Outcome(Connection&, Effects&)> run, Done done)
{
    {
        std::lock_guard lock(m_mutex);
        // Queued before start() is fine (it runs once started); once the
        // writer has left its loop nothing would ever run it.
        if (!m_exited) {
            m_jobs.push_back(Job{std::move(what), std::move(run), std::move(done)});
            m_wake.notify_one();
            return;
        }
    }
    if (done)
        done(Outcome{503, "the store is stopped", {}});
}

void Store::recordAutomaticBan(const ListEntry& entry)
{
    {
        std::lock_guard lock(m_mutex);
        // Until its row is written, a reload must not lift the ban and a
        // removal must find it here.
        m_unwrittenBans[entry.range] = entry.expiresAt;
        if (m_autoBans.size() >= m_options.autoBanQueue) {
            // The ban applies (the engine holds it); only its row is lost:
            // it will not survive a restart.
            m_droppedAutoBans.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        m_autoBans.push_back(entry);
    }
    m_wake.notify_one();
}

void Store::writeAudit(Connection& db, const Actor& actor, std::string action, std::string subject, const Json* before, const Json* after)
{
    AuditRow row;
    row.at = m_clock.now();
    row.actor = actor.name;
    row.action = std::move(action);
    row.subject = std::move(subject);
    if (before)
        row.before = before->dump();
    if (after)
        row.after = after->dump();
    Tables::appendAudit(db, row);
}

void Store::writerLoop()
{
    while (true) {
        std::vector<Job> batch;
        std::vector<ListEntry> bans;
        bool stopping = false;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait_for(lock, std::chrono::milliseconds(m_options.pollIntervalMs),
                            [this] { return m_stop || !m_jobs.empty() || !m_autoBans.empty(); });
            while (!m_jobs.empty()) {
                batch.push_back(std::move(m_jobs.front()));
                m_jobs.pop_front();
            }
            bans.swap(m_autoBans);
            stopping = m_stop;
        }
        for (ListEntry& ban : bans)
            batch.push_back(Job{"automatic ban",
                                [this, ban = std::move(ban)](Connection& db, Effects& fx) mutable { return writeAutoBan(db, fx, ban); }, {}});
        if (!batch.empty())
            runBatch(batch);
        if (stopping) {
            std::lock_guard lock(m_mutex);
            if (m_jobs.empty() && m_autoBans.empty()) {
                m_exited = true;  // from here on submit() refuses
                break;
            }
            continue;
        }
        try {
            const Millis now = m_clock.now();
            if (now >= m_nextPurge) {
                purgeExpired();
                m_nextPurge = now + m_options.purgeIntervalMs;
            }
            const std::int64_t version = m_writer->dataVersion();
            if (version != m_dataVersion || m_fullReload) {
                if (version != m_dataVersion)
                    m_reloads.fetch_add(1, std::memory_order_relaxed);
                m_dataVersion = version;
                m_fullReload = false;
                publishAll();
            }
        } catch (const std::exception& e) {
            m_fullReload = true;
            report(std::string(e.what()) + " (will retry)");
        }
    }
}

Outcome Store::writeAutoBan(Connection& db, Effects& fx, ListEntry& ban)
{
    // An operator's or an import's entry for the same range stands.
    if (auto old = Tables::findEntry(db, ListKind::Blocklist, ban.range);
        old && old->entry.source != ListSource::Automatic && old->entry.activeAt(m_clock.now())) {
        std::lock_guard lock(m_mutex);
        m_unwrittenBans.erase(ban.range);
        return Outcome{200, {}, {}};
    }
    {
        std::lock_guard lock(m_mutex);
        auto it = m_unwrittenBans.find(ban.range);
        if (it == m_unwrittenBans.end())
            return Outcome{200, {}, {}};  // an operator lifted it meanwhile
        // Written from now on (once committed): a reload keeps it by itself.
        if (it->second == ban.expiresAt)
            m_unwrittenBans.erase(it);
    }
    Tables::upsertEntry(db, ListKind::Blocklist, ban);
    if (ban.banCount > 0)
        Tables::upsertOffender(db, {ban.range, ban.banCount, ban.createdAt});
    const Json after = Codec::toJson(ban, ListKind::Blocklist, m_clock.now());
    writeAudit(db, Actor{"floodgate"}, "list.autoban", subjectOf(ListKind::Blocklist, ban.range), nullptr, &after);
    fx.upserts.emplace_back(ListKind::Blocklist, ban);
    return Outcome{201, {}, after};
}

void Store::runBatch(std::vector<Job>& jobs)
{
    std::vector<Outcome> outcomes(jobs.size());
    Effects effects;
    try {
        WriteTransaction tx(*m_writer);
        for (std::size_t i = 0; i < jobs.size(); ++i) {
            if (sqlite3_get_autocommit(m_writer->handle())) {
                // SQLite rolled the whole transaction back (disk full, I/O
                // error): the jobs left would each commit on their own.
                // None of them runs; the batch fails as one.
                throw SqliteError(SQLITE_ABORT, "the transaction was rolled back by an earlier error");
            }
            Effects mine;
            try {
                Savepoint sp(*m_writer);
                outcomes[i] = jobs[i].run(*m_writer, mine);
                if (outcomes[i].ok()) {
                    sp.release();
                    effects.merge(std::move(mine));
                }
            } catch (const SqliteError& e) {
                outcomes[i] = Outcome{e.busy() ? 503 : 500, std::string("not saved: ") + e.what(), {}};
            } catch (const std::exception& e) {
                outcomes[i] = Outcome{500, std::string("not saved: ") + e.what(), {}};
            }
        }
        tx.commit();
    } catch (const SqliteError& e) {
        // Nothing of the batch is on disk: every job fails, nothing is published.
        for (Outcome& o : outcomes)
            if (o.ok())
                o = Outcome{503, std::string("not saved: ") + e.what(), {}};
        effects = Effects{};
    }
    if (!effects.empty()) {
        try {
            publish(effects);
        } catch (const std::exception& e) {
            // Committed but not (wholly) applied: apply everything again next round.
            m_fullReload = true;
            report(std::string("a committed change could not be applied yet: ") + e.what() + " (retrying)");
        }
    }
    // After COMMIT and after the engine has the change: the caller may now
    // say "saved", and the very next request is decided under it.
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (!outcomes[i].ok() && outcomes[i].status >= 500 && !jobs[i].done)
            report(jobs[i].what + ": " + outcomes[i].error);  // nobody waits for this one: say it here
        if (jobs[i].done)
            jobs[i].done(outcomes[i]);
    }
}

void Store::publishConfig(EngineConfig config)
{
    if (!m_engine)
        return;
    if (m_adjust)
        m_adjust(config);
    if (auto error = m_engine->setConfig(config)) {
        report("the stored configuration is not valid (" + *error + "); the running one stays");
        return;
    }
    if (m_published)
        m_published(config);
}

void Store::publish(const Effects& fx)
{
    if (!m_engine)
        return;
    if (fx.config)
        publishConfig(Tables::readConfig(*m_writer));
    for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
        std::set<Cidr> touched;
        std::vector<ListEntry> added;
        for (const auto& [k, e] : fx.upserts) {
            if (k != kind)
                continue;
            if (e.source == ListSource::Automatic) {
                // The engine's own list of escalation bans: make sure it holds
                // this one (it may have been replaced by a reload meanwhile),
                // and that no operator copy of the range is left beside it.
                const auto current = m_engine->automaticBans();
                const ListEntry* have = current->find(e.range);
                if (!have || have->expiresAt != e.expiresAt)
                    m_engine->restoreAutomaticBans({e});
                touched.insert(e.range);
                continue;
            }
            touched.insert(e.range);
            added.push_back(e);
            if (kind == ListKind::Blocklist)
                m_engine->removeAutomaticBan(e.range);  // the operator's entry replaces it
        }
        for (const auto& [k, range] : fx.removals) {
            if (k != kind)
                continue;
            touched.insert(range);
            if (kind == ListKind::Blocklist)
                m_engine->removeAutomaticBan(range);
        }
        if (touched.empty())
            continue;
        std::vector<ListEntry> next;
        const auto current = m_engine->list(kind);
        next.reserve(current->size() + added.size());
        for (const ListEntry& e : current->entries())
            if (!touched.count(e.range))
                next.push_back(e);
        for (ListEntry& e : added)
            next.push_back(std::move(e));
        m_engine->setList(kind, std::make_shared<const AddressList>(std::move(next)));
    }
}

void Store::publishAll()
{
    if (!m_engine)
        return;
    Loaded stored = readStored(*m_writer);
    {
        // Bans the engine made whose rows are not written yet (queued, or
        // dropped from a full queue) stay: the database does not know them.
        std::lock_guard lock(m_mutex);
        const auto current = m_engine->automaticBans();
        for (const auto& [range, expiresAt] : m_unwrittenBans)
            if (const ListEntry* e = current->find(range); e && e->expiresAt == expiresAt)
                stored.automatic.push_back(*e);
    }
    publishConfig(std::move(stored.config));
    m_engine->setList(ListKind::Safelist, std::make_shared<const AddressList>(std::move(stored.safelist)));
    m_engine->setList(ListKind::Blocklist, std::make_shared<const AddressList>(std::move(stored.blocklist)));
    m_engine->setAutomaticBans(std::make_shared<const AddressList>(std::move(stored.automatic)));
}

void Store::purgeExpired()
{
    const Millis now = m_clock.now();
    {
        std::lock_guard lock(m_mutex);
        std::erase_if(m_unwrittenBans, [now](const auto& kv) { return kv.second <= now; });
    }
    std::vector<ListedEntry> gone;
    {
        WriteTransaction tx(*m_writer);
        // Escalation history is forgotten after a week without a new ban, as the engine does.
        const std::size_t forgotten = Tables::deleteOffendersBefore(*m_writer, now - Tuning::escalationMemoryMs);
        gone = Tables::deleteExpired(*m_writer, now);
        if (gone.empty()) {
            if (forgotten)
                tx.commit();
            return;  // otherwise the transaction rolls back: nothing was written
        }
        // One audit row per purge; the rows that created the entries stay.
        Json before = Json::array();
        for (std::size_t i = 0; i < gone.size() && i < 100; ++i)
            before.push(Codec::toJson(gone[i].entry, gone[i].kind, now));
        writeAudit(*m_writer, Actor{"floodgate"}, "list.expire", std::to_string(gone.size()) + (gone.size() == 1 ? " entry" : " entries"),
                   &before, nullptr);
        tx.commit();
    }
    if (!m_engine)
        return;
    // Expired entries already stopped applying at their expiry; this only
    // frees their memory. The engine forgets its own expired bans in purge().
    for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
        const bool any = std::any_of(gone.begin(), gone.end(), [&](const ListedEntry& e) {
            return e.kind == kind && e.entry.source != ListSource::Automatic;
        });
        if (any)
            m_engine->setList(kind, std::make_shared<const AddressList>(m_engine->list(kind)->withoutExpired(now)));
    }
}

// ---- the jobs ----------------------------------------------------------------------

void Store::addEntry(ListKind kind, ListEntry entry, Actor actor, Done done)
{
    submit("add to the " + std::string(toString(kind)), [this, kind, entry = std::move(entry), actor = std::move(actor)](Connection& db, Effects& fx) mutable {
        const Millis now = m_clock.now();
        if (entry.expiresAt <= now)
            return Outcome{400, "the entry would already be expired", {}};
        completeEntry(entry, now, actor);
        const auto before = Tables::upsertEntry(db, kind, entry);
        const Json after = Codec::toJson(entry, kind, now);
        if (before) {
            const Json old = Codec::toJson(*before, kind, now);
            writeAudit(db, actor, "list.replace", subjectOf(kind, entry.range), &old, &after);
        } else {
            writeAudit(db, actor, "list.add", subjectOf(kind, entry.range), nullptr, &after);
        }
        fx.upserts.emplace_back(kind, entry);
        return Outcome{before ? 200 : 201, {}, after};
    }, std::move(done));
}

void Store::removeEntry(ListKind kind, Cidr range, Actor actor, Done done)
{
    submit("remove from the " + std::string(toString(kind)), [this, kind, range, actor = std::move(actor)](Connection& db, Effects& fx) {
        const Millis now = m_clock.now();
        std::optional<Json> before;
        if (const auto old = Tables::findEntry(db, kind, range)) {
            Tables::deleteEntry(db, kind, range);
            before = Codec::toJson(old->entry, kind, now);
        } else if (kind == ListKind::Blocklist && m_engine) {
            // An escalation ban made a moment ago, its row not written yet:
            // drop it from the queue and lift it, so it does not come back.
            bool pending = false;
            {
                std::lock_guard lock(m_mutex);
                pending = m_unwrittenBans.erase(range) > 0;
                std::erase_if(m_autoBans, [&](const ListEntry& e) { return e.range == range; });
            }
            if (const ListEntry* held = m_engine->automaticBans()->find(range); pending && held)
                before = Codec::toJson(*held, kind, now);
        }
        if (!before)
            return Outcome{404, range.toString() + " is not on the " + toString(kind), {}};
        writeAudit(db, actor, "list.remove", subjectOf(kind, range), &*before, nullptr);
        fx.removals.emplace_back(kind, range);
        return Outcome{204, {}, *before};
    }, std::move(done));
}

void Store::putTier(Tier tier, Actor actor, Done done)
{
    std::string label = "save tier " + tier.name;  // before tier is moved into the job
    submit(std::move(label), [this, tier = std::move(tier), actor = std::move(actor)](Connection& db, Effects& fx) {
        EngineConfig config = Tables::readConfig(db);
        const std::optional<Json> before = replaceOrAdd(config.tiers, tier, [](const Tier& t) -> const std::string& { return t.name; });
        if (auto error = validate(config))
            return Outcome{400, *error, {}};
        Tables::writeTier(db, tier);
        const Json after = Codec::toJson(tier);
        writeAudit(db, actor, before ? "tier.replace" : "tier.add", "tier " + tier.name, before ? &*before : nullptr, &after);
        fx.config = true;
        return Outcome{before ? 200 : 201, {}, after};
    }, std::move(done));
}

void Store::deleteTier(std::string name, Actor actor, Done done)
{
    std::string label = "delete tier " + name;
    submit(std::move(label), [this, name = std::move(name), actor = std::move(actor)](Connection& db, Effects& fx) {
        const EngineConfig config = Tables::readConfig(db);
        auto it = std::find_if(config.tiers.begin(), config.tiers.end(), [&](const Tier& t) { return t.name == name; });
        if (it == config.tiers.end())
            return Outcome{404, "there is no tier \"" + name + "\"", {}};
        std::string users;
        std::size_t count = 0;
        for (const Customer& c : config.customers) {
            if (c.tier != name)
                continue;
            if (count++ < 3)
                users += (users.empty() ? "" : ", ") + c.id;
        }
        if (count)
            return Outcome{409, "tier \"" + name + "\" is used by " + std::to_string(count) + " customer" + (count == 1 ? "" : "s")
                                    + " (" + users + (count > 3 ? ", ..." : "") + "): move them to another tier first", {}};
        const Json before = Codec::toJson(*it);
        Tables::deleteTier(db, name);
        writeAudit(db, actor, "tier.delete", "tier " + name, &before, nullptr);
        fx.config = true;
        return Outcome{204, {}, before};
    }, std::move(done));
}

void Store::putCustomer(Customer customer, Actor actor, Done done)
{
    std::string label = "save customer " + customer.id;
    submit(std::move(label), [this, customer = std::move(customer), actor = std::move(actor)](Connection& db, Effects& fx) {
        EngineConfig config = Tables::readConfig(db);
        if (std::none_of(config.tiers.begin(), config.tiers.end(), [&](const Tier& t) { return t.name == customer.tier; }))
            return Outcome{400, "tier \"" + customer.tier + "\" is not a known tier", {}};
        const std::optional<Json> before = replaceOrAdd(config.customers, customer, [](const Customer& c) -> const std::string& { return c.id; });
        if (auto error = validate(config))
            return Outcome{400, *error, {}};
        Tables::writeCustomer(db, customer);
        const Json after = Codec::toJson(customer);
        writeAudit(db, actor, before ? "customer.replace" : "customer.add", "customer " + customer.id, before ? &*before : nullptr, &after);
        fx.config = true;
        return Outcome{before ? 200 : 201, {}, after};
    }, std::move(done));
}

void Store::deleteCustomer(std::string id, Actor actor, Done done)
{
    std::string label = "delete customer " + id;
    submit(std::move(label), [this, id = std::move(id), actor = std::move(actor)](Connection& db, Effects& fx) {
        const EngineConfig config = Tables::readConfig(db);
        auto it = std::find_if(config.customers.begin(), config.customers.end(), [&](const Customer& c) { return c.id == id; });
        if (it == config.customers.end())
            return Outcome{404, "there is no customer \"" + id + "\"", {}};
        const Json before = Codec::toJson(*it);
        Tables::deleteCustomer(db, id);
        writeAudit(db, actor, "customer.delete", "customer " + id, &before, nullptr);
        fx.config = true;
        return Outcome{204, {}, before};
    }, std::move(done));
}

void Store::putRules(EngineConfig rules, Actor actor, Done done)
{
    // The sections the rules are made of replace the stored ones; tiers and
    // customers stay.
    updateRules(
        [rules = std::move(rules)](EngineConfig& config) -> std::optional<std::string> {
            config.rules = rules.rules;
            config.cooldowns = rules.cooldowns;
            config.bot = rules.bot;
            config.escalation = rules.escalation;
            config.settings = rules.settings;
            return std::nullopt;
        },
        std::move(actor), std::move(done));
}

void Store::updateRules(std::function<std::optional<std::string>(EngineConfig&)> change, Actor actor, Done done)
{
    submit("change rules", [this, change = std::move(change), actor = std::move(actor)](Connection& db, Effects& fx) {
        // Read, changed and written inside one write transaction: an edit
        // committed by anyone else in between is not reverted.
        EngineConfig config = Tables::readConfig(db);
        const Json before = Codec::rulesToJson(config);
        if (auto why = change(config))
            return Outcome{400, *why, {}};
        if (auto error = validate(config))
            return Outcome{400, *error, {}};
        const Json after = Codec::rulesToJson(config);
        if (after == before)
            return Outcome{200, {}, after};  // nothing to write, nothing to audit
        Tables::writeRules(db, config);
        writeAudit(db, actor, "rules.replace", "rules", &before, &after);
        fx.config = true;
        return Outcome{200, {}, after};
    }, std::move(done));
}

void Store::republish(Done done)
{
    submit("publish the configuration", [](Connection&, Effects& fx) {
        fx.config = true;  // read back and published by the writer, in order with every write
        return Outcome{200, {}, {}};
    }, std::move(done));
}

void Store::importEntries(std::vector<ListedEntry> rows, Actor actor, Done done)
{
    submit("import list entries", [this, rows = std::move(rows), actor = std::move(actor)](Connection& db, Effects& fx) mutable {
        const Millis now = m_clock.now();
        std::size_t replaced = 0;
        for (ListedEntry& r : rows) {
            if (r.entry.expiresAt <= now)
                return Outcome{400, r.entry.range.toString() + ": already expired", {}};
            completeEntry(r.entry, now, actor);
            if (Tables::upsertEntry(db, r.kind, r.entry))
                ++replaced;
            fx.upserts.emplace_back(r.kind, r.entry);
        }
        Json summary = Json::object();
        summary.set("imported", rows.size());
        summary.set("replaced", replaced);
        writeAudit(db, actor, "lists.import", std::to_string(rows.size()) + (rows.size() == 1 ? " entry" : " entries"), nullptr, &summary);
        return Outcome{200, {}, summary};
    }, std::move(done));
}

} // namespace Floodgate::Storage
