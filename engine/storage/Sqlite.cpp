// SPDX-License-Identifier: GPL-3.0-or-later
#include "storage/Sqlite.h"

#include <sqlite3.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace Floodgate::Storage {

namespace {

// SQLite does not always keep the errno of a failed write (a WAL write on
// ext4 gone read-only after an error left it 0, and the mount is flagged
// read-only only later): create and remove a file beside the database to
// learn what the file system says now. Only on a failed write's path.
int probeFolder(const char* file)
{
    if (!file || !*file)
        return 0;
    std::string probe(file);
    probe += ".probe-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EEXIST ? 0 : errno;
    int e = 0;
    if (::write(fd, "x", 1) < 0)
        e = errno;
    ::close(fd);
    ::unlink(probe.c_str());
    return e;
}

// SQLite's message, and for a failure of the file system below it the
// cause an operator can act on: "disk I/O error" alone does not say that
// the disk is full or was remounted read-only (sqlite3_system_errno keeps
// the errno of the failed call).
std::string describe(sqlite3* db, int rc, const char* message)
{
    std::string out = message ? message : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
        break;
    default:
        return out;
    }
    int e = db ? sqlite3_system_errno(db) : 0;
    if (e == 0 && db)
        e = probeFolder(sqlite3_db_filename(db, "main"));
    switch (e) {
    case 0: return out;
    case EROFS: return out + " (the file system is read-only)";
    case ENOSPC: return out + " (no space left on the device)";
    case EDQUOT: return out + " (the disk quota is used up)";
    case EACCES:
    case EPERM: return out + " (permission denied by the file system)";
    default: return out + " (" + std::strerror(e) + ")";
    }
}

} // namespace

bool SqliteError::busy() const
{
    return m_code == SQLITE_BUSY || m_code == SQLITE_LOCKED;
}

bool SqliteError::corrupt() const
{
    return m_code == SQLITE_CORRUPT || m_code == SQLITE_NOTADB;
}

Connection::Connection(const std::string& path, Mode mode, int busyTimeoutMs)
{
    int flags = SQLITE_OPEN_NOMUTEX;  // one thread per connection; the store keeps it so
    switch (mode) {
    case Mode::ReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::ReadWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    case Mode::ReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    }
    const int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string message = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw SqliteError(rc & 0xff, message);
    }
    sqlite3_extended_result_codes(m_db, 0);
    sqlite3_busy_timeout(m_db, busyTimeoutMs);
}

Connection::~Connection()
{
    m_cache.clear();  // finalize before closing
    // close_v2: statements still alive (a bug) would keep the handle; they
    // are all RAII and gone by now.
    sqlite3_close_v2(m_db);
}

void Connection::fail(int rc, std::string_view context) const
{
    std::string message(context);
    if (!message.empty())
        message += ": ";
    message += describe(m_db, rc, sqlite3_errmsg(m_db));
    throw SqliteError(rc & 0xff, message);
}

void Connection::exec(std::string_view sql)
{
    const std::string text(sql);
    char* error = nullptr;
    const int rc = sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &error);
    if (rc != SQLITE_OK) {
        std::string message = describe(m_db, rc, error);
        sqlite3_free(error);
        throw SqliteError(rc & 0xff, message);
    }
}

Statement Connection::prepare(std::string_view sql)
{
    return Statement(*this, sql);
}

Statement& Connection::cached(const std::string& sql)
{
    auto it = m_cache.find(sql);
    if (it == m_cache.end())
        it = m_cache.emplace(sql, std::make_unique<Statement>(*this, sql)).first;
    it->second->reset();
    return *it->second;
}

std::int64_t Connection::lastInsertRowId() const
{
    return sqlite3_last_insert_rowid(m_db);
}

int Connection::changes() const
{
    return sqlite3_changes(m_db);
}

std::int64_t Connection::dataVersion()
{
    Statement s(*this, "PRAGMA data_version");
    s.step();
    return s.integer(0);
}

Statement::Statement(Connection& db, std::string_view sql)
    : m_db(&db)
{
    const int rc = sqlite3_prepare_v2(db.handle(), sql.data(), int(sql.size()), &m_stmt, nullptr);
    if (rc != SQLITE_OK)
        db.fail(rc, "preparing \"" + std::string(sql.substr(0, 60)) + "\"");
}

Statement::~Statement()
{
    sqlite3_finalize(m_stmt);
}

Statement::Statement(Statement&& other) noexcept
    : m_db(other.m_db)
    , m_stmt(other.m_stmt)
{
    other.m_stmt = nullptr;
}

Statement& Statement::bind(int index, std::int64_t value)
{
    if (const int rc = sqlite3_bind_int64(m_stmt, index, value); rc != SQLITE_OK)
        m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bind(int index, std::string_view text)
{
    if (const int rc = sqlite3_bind_text(m_stmt, index, text.data(), int(text.size()), SQLITE_TRANSIENT); rc != SQLITE_OK)
        m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bindBlob(int index, const void* data, std::size_t size)
{
    if (const int rc = sqlite3_bind_blob(m_stmt, index, data, int(size), SQLITE_TRANSIENT); rc != SQLITE_OK)
        m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bindNull(int index)
{
    if (const int rc = sqlite3_bind_null(m_stmt, index); rc != SQLITE_OK)
        m_db->fail(rc, "bind");
    return *this;
}

bool Statement::step()
{
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    m_db->fail(rc, "");
}

void Statement::run()
{
    while (step()) {
    }
}

void Statement::reset()
{
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

bool Statement::isNull(int column) const
{
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

std::int64_t Statement::integer(int column) const
{
    return sqlite3_column_int64(m_stmt, column);
}

std::string Statement::text(int column) const
{
    const auto* p = sqlite3_column_text(m_stmt, column);
    const int n = sqlite3_column_bytes(m_stmt, column);
    return p ? std::string(reinterpret_cast<const char*>(p), std::size_t(n)) : std::string();
}

const void* Statement::blobData(int column) const
{
    return sqlite3_column_blob(m_stmt, column);
}

std::size_t Statement::blobSize(int column) const
{
    return std::size_t(sqlite3_column_bytes(m_stmt, column));
}

std::vector<std::uint8_t> Statement::blob(int column) const
{
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(m_stmt, column));
    const std::size_t n = blobSize(column);
    return p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
}

WriteTransaction::WriteTransaction(Connection& db)
    : m_db(db)
{
    m_db.exec("BEGIN IMMEDIATE");
}

WriteTransaction::~WriteTransaction()
{
    if (!m_done) {
        try {
            m_db.exec("ROLLBACK");
        } catch (const SqliteError&) {
            // A failed COMMIT may already have rolled back; nothing more to undo.
        }
    }
}

void WriteTransaction::commit()
{
    m_db.exec("COMMIT");
    m_done = true;
}

Savepoint::Savepoint(Connection& db)
    : m_db(db)
{
    m_db.exec("SAVEPOINT job");
}

Savepoint::~Savepoint()
{
    if (!m_done) {
        try {
            m_db.exec("ROLLBACK TO job; RELEASE job");
        } catch (const SqliteError&) {
        }
    }
}

void Savepoint::release()
{
    m_db.exec("RELEASE job");
    m_done = true;
}

} // namespace Floodgate::Storage
