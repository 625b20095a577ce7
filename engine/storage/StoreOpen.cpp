// SPDX-License-Identifier: GPL-3.0-or-later
// Opening the database (the checks that refuse a file, schema migration), and the reads: what the engine loads at start, the audit trail, the lists, the rules.
#include "storage/Store.h"

#include "wire/Codec.h"
#include "core/Engine.h"
#include "storage/Tables.h"
#include "files/PrivateFiles.h"
#include "storage/Schema.h"
#include "storage/Sqlite.h"
#include "core/Tuning.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

namespace Floodgate::Storage {

using namespace Core;
using namespace Wire;

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
            return fail(OpenError::Locked, path + " is locked by another process (waited " + Codec::exactSeconds(options.busyTimeoutMs)
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

} // namespace Floodgate::Storage
