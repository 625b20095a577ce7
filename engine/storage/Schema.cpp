// SPDX-License-Identifier: GPL-3.0-or-later
#include "storage/Schema.h"

#include "wire/Json.h"
#include "core/Rules.h"
#include "storage/Sqlite.h"

#include <iterator>
#include <string>
#include <vector>

namespace Floodgate::Storage::Schema {

namespace {

// Addresses are 16-byte blobs (IPv4 mapped into IPv6) with the prefix in the
// 128-bit space (an IPv4 /24 is 120); times are integer milliseconds since
// the Unix epoch; periods and durations are integer milliseconds.
constexpr const char* MIGRATION_1 = R"SQL(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE list_entries (
  id         INTEGER PRIMARY KEY,
  list       TEXT    NOT NULL CHECK (list IN ('safelist', 'blocklist')),
  address    BLOB    NOT NULL CHECK (length(address) = 16),
  prefix     INTEGER NOT NULL CHECK (prefix BETWEEN 0 AND 128),
  reason     TEXT    NOT NULL DEFAULT '',
  source     TEXT    NOT NULL CHECK (source IN ('operator', 'automatic', 'import')),
  created_at INTEGER NOT NULL,
  created_by TEXT    NOT NULL DEFAULT '',
  expires_at INTEGER,  -- NULL: permanent
  UNIQUE (list, address, prefix)
);
CREATE INDEX list_entries_expiry ON list_entries (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE tiers (
  name     TEXT PRIMARY KEY,
  position INTEGER NOT NULL
);

CREATE TABLE tier_levels (
  owner         TEXT    NOT NULL REFERENCES tiers (name) ON DELETE CASCADE ON UPDATE CASCADE,
  position      INTEGER NOT NULL,
  name          TEXT    NOT NULL DEFAULT '',
  limit_count   INTEGER NOT NULL CHECK (limit_count > 0),
  period_ms     INTEGER NOT NULL CHECK (period_ms > 0),
  algorithm     TEXT    NOT NULL CHECK (algorithm IN ('sliding', 'fixed', 'lockout')),
  bucket_ms     INTEGER NOT NULL DEFAULT 0,
  lockout_ms    INTEGER NOT NULL DEFAULT 0,
  count_refused INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (owner, position)
) WITHOUT ROWID;

CREATE TABLE customers (
  id   TEXT PRIMARY KEY,
  name TEXT NOT NULL DEFAULT '',
  tier TEXT NOT NULL REFERENCES tiers (name) ON UPDATE CASCADE
);

CREATE TABLE customer_overrides (
  customer    TEXT    NOT NULL REFERENCES customers (id) ON DELETE CASCADE ON UPDATE CASCADE,
  position    INTEGER NOT NULL,
  name        TEXT    NOT NULL DEFAULT '',
  limit_count INTEGER NOT NULL CHECK (limit_count > 0),
  period_ms   INTEGER NOT NULL CHECK (period_ms > 0),
  PRIMARY KEY (customer, position)
) WITHOUT ROWID;

CREATE TABLE rules (
  name          TEXT PRIMARY KEY,
  position      INTEGER NOT NULL,
  discriminator TEXT NOT NULL CHECK (discriminator IN ('address', 'address_user_agent', 'header')),
  header        TEXT NOT NULL DEFAULT '',
  method        TEXT NOT NULL DEFAULT '',
  path_glob     TEXT NOT NULL DEFAULT ''
);

CREATE TABLE rule_levels (
  owner         TEXT    NOT NULL REFERENCES rules (name) ON DELETE CASCADE ON UPDATE CASCADE,
  position      INTEGER NOT NULL,
  name          TEXT    NOT NULL DEFAULT '',
  limit_count   INTEGER NOT NULL CHECK (limit_count > 0),
  period_ms     INTEGER NOT NULL CHECK (period_ms > 0),
  algorithm     TEXT    NOT NULL CHECK (algorithm IN ('sliding', 'fixed', 'lockout')),
  bucket_ms     INTEGER NOT NULL DEFAULT 0,
  lockout_ms    INTEGER NOT NULL DEFAULT 0,
  count_refused INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (owner, position)
) WITHOUT ROWID;

CREATE TABLE cooldowns (
  name        TEXT PRIMARY KEY,
  position    INTEGER NOT NULL,
  method      TEXT    NOT NULL DEFAULT '',
  path_glob   TEXT    NOT NULL,
  duration_ms INTEGER NOT NULL CHECK (duration_ms > 0),
  user_header TEXT    NOT NULL DEFAULT ''
);

-- Excluded paths and safe user agents, in order.
CREATE TABLE patterns (
  kind     TEXT    NOT NULL CHECK (kind IN ('excluded_path', 'safe_user_agent')),
  position INTEGER NOT NULL,
  pattern  TEXT    NOT NULL,
  PRIMARY KEY (kind, position)
) WITHOUT ROWID;

CREATE TABLE trusted_proxies (
  address BLOB    NOT NULL CHECK (length(address) = 16),
  prefix  INTEGER NOT NULL CHECK (prefix BETWEEN 0 AND 128),
  PRIMARY KEY (address, prefix)
) WITHOUT ROWID;

-- Scalar settings, one typed value per key (integers as INTEGER, words as TEXT).
CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value NOT NULL  -- no declared type: stored exactly as bound
) WITHOUT ROWID;

-- Who changed what, when; before/after are the API's JSON shapes.
CREATE TABLE audit (
  id      INTEGER PRIMARY KEY,
  at      INTEGER NOT NULL,
  actor   TEXT    NOT NULL,
  action  TEXT    NOT NULL,
  subject TEXT    NOT NULL,
  before  TEXT,
  after   TEXT
);
CREATE INDEX audit_at ON audit (at);
)SQL";

// Escalation history, so a client's next ban doubles after a restart too.
constexpr const char* MIGRATION_2 = R"SQL(
CREATE TABLE offenders (
  address     BLOB    NOT NULL CHECK (length(address) = 16),
  prefix      INTEGER NOT NULL CHECK (prefix BETWEEN 0 AND 128),
  bans        INTEGER NOT NULL CHECK (bans > 0),
  last_ban_at INTEGER NOT NULL,
  PRIMARY KEY (address, prefix)
) WITHOUT ROWID;
)SQL";

// Schema 3 changes no table. 0.3 wrote too short a list of excluded paths
// on a new database (no .woff, .ttf, .jpeg, .webp, .mjs, ...), so one page
// load counted many times. A database still holding exactly that list gets
// today's default; a list the operator changed in any way (added, removed,
// reordered, emptied) is theirs and stays as it is. The change is audited.
// Its own SQL, not Tables': a migration works on the schema of its version.
void migrateDefaultExclusions(Connection& db)
{
    const std::vector<std::string> old03 = {"*.css", "*.js", "*.png", "*.jpg", "*.gif", "*.svg", "*.ico", "*.woff2"};
    std::vector<std::string> stored;
    {
        Statement read = db.prepare("SELECT pattern FROM patterns WHERE kind = 'excluded_path' ORDER BY position");
        while (read.step())
            stored.push_back(read.text(0));
    }
    if (stored != old03)
        return;
    const std::vector<std::string>& now = Core::defaultConfig().bot.excludedPaths;
    db.exec("DELETE FROM patterns WHERE kind = 'excluded_path'");
    Statement insert = db.prepare("INSERT INTO patterns (kind, position, pattern) VALUES ('excluded_path', ?, ?)");
    for (std::size_t i = 0; i < now.size(); ++i) {
        insert.reset();
        insert.bind(1, std::int64_t(i)).bind(2, now[i]).run();
    }
    const auto listJson = [](const std::vector<std::string>& patterns) {
        std::string out = "{\"excluded_paths\":[";
        for (std::size_t i = 0; i < patterns.size(); ++i) {
            if (i > 0)
                out += ',';
            Wire::appendJsonString(out, patterns[i]);
        }
        return out + "]}";
    };
    // The migration has no clock of its own: SQLite's is the wall clock.
    Statement audit = db.prepare("INSERT INTO audit (at, actor, action, subject, before, after) VALUES "
                                 "(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'floodgate', "
                                 "'rules.migrate', 'excluded paths: the default of schema 3', ?, ?)");
    audit.bind(1, listJson(stored)).bind(2, listJson(now)).run();
}

// Customers' API keys: only each key's SHA-256, never the key.
constexpr const char* MIGRATION_4 = R"SQL(
CREATE TABLE customer_keys (
  customer   TEXT    NOT NULL REFERENCES customers (id) ON DELETE CASCADE ON UPDATE CASCADE,
  id         TEXT    NOT NULL,
  sha256     TEXT    NOT NULL UNIQUE CHECK (length(sha256) = 64),
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  PRIMARY KEY (customer, sha256)
) WITHOUT ROWID;
)SQL";

// Schema 4: until 0.6 a customer was whoever named it (customer_source: the
// customer_id parameter or the X-Customer-Id header, from anyone). From now
// on a customer proves who it is (settings.customer_auth, api_key by
// default), so the customers stored have no key yet and count as anonymous
// clients until the operator chooses: keys (`floodgate customers key ID`) or
// customer_auth trusted_header behind a proxy that authenticates them. The
// old settings go; the change is audited with what they were, and the
// start-up line names the customers without a key (docs/CHANGELOG.md, 0.6.0).
void migrateCustomerProof(Connection& db)
{
    std::string source = "either", param = "customer_id";
    {
        Statement read = db.prepare("SELECT key, value FROM settings WHERE key IN ('customer_source', 'customer_param')");
        while (read.step())
            (read.text(0) == "customer_source" ? source : param) = read.text(1);
    }
    std::int64_t customers = 0;
    {
        Statement count = db.prepare("SELECT count(*) FROM customers");
        count.step();
        customers = count.integer(0);
    }
    db.exec("DELETE FROM settings WHERE key IN ('customer_source', 'customer_param')");
    if (customers == 0)
        return;
    std::string before = "{\"customer_source\":";
    Wire::appendJsonString(before, source);
    before += ",\"customer_param\":";
    Wire::appendJsonString(before, param);
    before += "}";
    Statement audit = db.prepare("INSERT INTO audit (at, actor, action, subject, before, after) VALUES "
                                 "(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'floodgate', "
                                 "'rules.migrate', ?, ?, '{\"customer_auth\":\"api_key\"}')");
    audit.bind(1, "customers prove who they are: " + std::to_string(customers) + " customer" + (customers == 1 ? "" : "s")
                      + " without an API key count as anonymous clients until given one (schema 4)")
        .bind(2, before)
        .run();
}

struct Migration {
    int version;
    const char* sql;                 // the schema change
    void (*data)(Connection& db);    // then the data change, if any
};

constexpr Migration MIGRATIONS[] = {
    {1, MIGRATION_1, nullptr},
    {2, MIGRATION_2, nullptr},
    {3, "", migrateDefaultExclusions},
    {4, MIGRATION_4, migrateCustomerProof},
};
static_assert(std::size(MIGRATIONS) == CurrentVersion && MIGRATIONS[CurrentVersion - 1].version == CurrentVersion);

} // namespace

int versionOf(Connection& db)
{
    Statement s = db.prepare("PRAGMA user_version");
    s.step();
    return int(s.integer(0));
}

void migrate(Connection& db, int from)
{
    for (const Migration& m : MIGRATIONS) {
        if (m.version <= from)
            continue;
        db.exec(m.sql);
        if (m.data)
            m.data(db);
        db.exec("PRAGMA user_version = " + std::to_string(m.version));
    }
    db.exec("PRAGMA application_id = " + std::to_string(ApplicationId));
}

} // namespace Floodgate::Storage::Schema
