// SPDX-License-Identifier: GPL-3.0-or-later
// RAII over the sqlite3 C API: a connection, prepared statements, and a
// write transaction. Errors throw SqliteError carrying SQLite's primary
// result code and message; the store turns them into one-line reasons.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace Floodgate::Storage {

class SqliteError : public std::runtime_error {
public:
    SqliteError(int code, const std::string& message) : std::runtime_error(message), m_code(code) {}
    int code() const { return m_code; }  // primary result code (SQLITE_BUSY, SQLITE_CORRUPT, ...)
    bool busy() const;                   // locked by another connection past the busy timeout
    bool corrupt() const;                // SQLITE_CORRUPT or SQLITE_NOTADB

private:
    int m_code;
};

class Statement;

class Connection {
public:
    enum class Mode { ReadWrite, ReadWriteCreate, ReadOnly };
    Connection(const std::string& path, Mode mode, int busyTimeoutMs);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    void exec(std::string_view sql);  // one or more statements, no results
    Statement prepare(std::string_view sql);
    // A statement prepared once per connection and reused, reset and with
    // its bindings cleared: for the statements that run per row.
    Statement& cached(const std::string& sql);
    std::int64_t lastInsertRowId() const;
    int changes() const;
    // PRAGMA data_version: changes when another connection committed.
    std::int64_t dataVersion();
    sqlite3* handle() const { return m_db; }
    [[noreturn]] void fail(int rc, std::string_view context) const;

private:
    sqlite3* m_db = nullptr;
    std::unordered_map<std::string, std::unique_ptr<Statement>> m_cache;
};

class Statement {
public:
    Statement(Connection& db, std::string_view sql);
    ~Statement();
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&&) = delete;
    Statement(const Statement&) = delete;

    // Binding is 1-based as in SQLite; each returns *this for chaining.
    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, int value) { return bind(index, std::int64_t(value)); }
    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
    Statement& bindBlob(int index, const void* data, std::size_t size);
    Statement& bindNull(int index);
    Statement& bind(int index, std::optional<std::int64_t> value)
    {
        return value ? bind(index, *value) : bindNull(index);
    }

    bool step();       // true while a row is available
    void run();        // step to the end (writes)
    void reset();      // ready to bind and step again

    bool isNull(int column) const;
    std::int64_t integer(int column) const;
    std::string text(int column) const;
    std::vector<std::uint8_t> blob(int column) const;
    std::size_t blobSize(int column) const;
    const void* blobData(int column) const;

private:
    Connection* m_db;
    sqlite3_stmt* m_stmt = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT: takes the write lock at the start (waiting up
// to the busy timeout) so two writers never deadlock on a lock upgrade.
// Rolls back unless committed.
class WriteTransaction {
public:
    explicit WriteTransaction(Connection& db);
    ~WriteTransaction();
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    void commit();

private:
    Connection& m_db;
    bool m_done = false;
};

// SAVEPOINT ... RELEASE inside a transaction: one job of a batch fails alone.
class Savepoint {
public:
    explicit Savepoint(Connection& db);
    ~Savepoint();
    Savepoint(const Savepoint&) = delete;
    Savepoint& operator=(const Savepoint&) = delete;
    void release();

private:
    Connection& m_db;
    bool m_done = false;
};

} // namespace Floodgate::Storage
