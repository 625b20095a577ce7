// SPDX-License-Identifier: GPL-3.0-or-later
// The writer thread: jobs queued by anyone, run in one transaction per batch, answered after COMMIT; automatic bans written behind.
#include "storage/Store.h"

#include "wire/Codec.h"
#include "core/Engine.h"
#include "core/Printable.h"
#include "storage/Sqlite.h"
#include "storage/StoreEffects.h"
#include "storage/Tables.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>

namespace Floodgate::Storage {

using namespace Core;
using namespace Wire;

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
    std::fprintf(stderr, "floodgate: storage: %s\n", Core::printable(message).c_str());
    std::lock_guard lock(m_problemMutex);
    const std::uint64_t serial = m_problem ? m_problem->serial + 1 : 1;
    m_problem = Problem{serial, m_clock.now(), std::move(message)};
}

std::uint64_t Store::reloads() const
{
    return m_reloads.load(std::memory_order_relaxed);
}

void Store::onListChange(std::function<void(const ListChange&)> hook)
{
    m_listChanged = std::move(hook);
}

void Store::onConfigChange(std::function<void(const ConfigChange&)> hook)
{
    m_configChanged = std::move(hook);
}

void Store::start(Engine* engine, std::function<void(EngineConfig&)> adjust, std::function<void(const EngineConfig&)> published)
{
    m_engine = engine;
    m_adjust = std::move(adjust);
    m_published = std::move(published);
    if (m_engine) {
        // What the engine was built from: where telling another process's changes starts.
        try {
            m_stored = Tables::readConfig(*m_writer);
        } catch (const std::exception& e) {
            report(std::string(e.what()) + " (changes made by other processes are picked up but not sent to a cluster)");
        }
    }
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

const char* toString(Result result)
{
    switch (result) {
    case Result::Updated: return "updated";
    case Result::Created: return "created";
    case Result::Removed: return "removed";
    case Result::Invalid: return "invalid";
    case Result::NotFound: return "not found";
    case Result::Conflict: return "conflict";
    case Result::Unavailable: return "unavailable";
    case Result::Failed: return "failed";
    }
    return "?";
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
        done(Outcome{Result::Unavailable, "the store is stopped", {}});
}

void Store::journalAutomaticBan(const ListEntry& entry, std::string actor)
{
    {
        std::lock_guard lock(m_mutex);
        if (m_autoBans.size() >= m_options.autoBanQueue) {
            // The ban applies (the engine holds it, unstored, so reloads
            // keep it); only its row is lost: it will not survive a restart.
            m_droppedAutoBans.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        m_autoBans.push_back(JournalledBan{entry, std::move(actor)});
    }
    m_wake.notify_one();
}

void Store::recordOffender(OffenderRow row)
{
    submit("escalation history", [row](Connection& db, Effects&) {
        Tables::upsertOffender(db, row);
        return Outcome{Result::Updated, {}, {}};
    }, {});
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
        std::vector<JournalledBan> bans;
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
        for (JournalledBan& ban : bans)
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

Outcome Store::writeAutoBan(Connection& db, Effects& fx, JournalledBan& journalled)
{
    ListEntry& ban = journalled.entry;
    // An operator's or an import's entry for the same range stands, and
    // replaces the ban (as an operator's entry added later would).
    if (auto old = Tables::findEntry(db, ListKind::Blocklist, ban.range);
        old && old->entry.source != ListSource::Automatic && old->entry.activeAt(m_clock.now())) {
        if (m_engine)
            m_engine->removeAutomaticBan(ban.range);
        return Outcome{Result::Updated, {}, {}};
    }
    if (m_engine && !m_engine->automaticBans()->find(ban.range))
        return Outcome{Result::Updated, {}, {}};  // lifted meanwhile (by an operator, or expired)
    Tables::upsertEntry(db, ListKind::Blocklist, ban);
    if (ban.banCount > 0)
        Tables::upsertOffender(db, {ban.range, ban.banCount, ban.createdAt});
    const Json after = Codec::toJson(ban, ListKind::Blocklist, m_clock.now());
    writeAudit(db, Actor{journalled.actor}, "list.autoban", subjectOf(ListKind::Blocklist, ban.range), nullptr, &after);
    fx.upserts.emplace_back(ListKind::Blocklist, ban);
    return Outcome{Result::Created, {}, after};
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
                outcomes[i] = Outcome{e.busy() ? Result::Unavailable : Result::Failed, std::string("not saved: ") + e.what(), {}};
            } catch (const std::exception& e) {
                outcomes[i] = Outcome{Result::Failed, std::string("not saved: ") + e.what(), {}};
            }
        }
        tx.commit();
    } catch (const SqliteError& e) {
        // Nothing of the batch is on disk: every job fails, nothing is published.
        for (Outcome& o : outcomes)
            if (o.ok())
                o = Outcome{Result::Unavailable, std::string("not saved: ") + e.what(), {}};
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
        if (outcomes[i].storageFailed() && !jobs[i].done)
            report(jobs[i].what + ": " + outcomes[i].error);  // nobody waits for this one: say it here
        if (jobs[i].done)
            jobs[i].done(outcomes[i]);
    }
}

} // namespace Floodgate::Storage
