// SPDX-License-Identifier: GPL-3.0-or-later
#include "storage/Tables.h"

#include "wire/Codec.h"
#include "core/SettingTable.h"
#include "storage/Sqlite.h"

#include <cstring>
#include <stdexcept>

namespace Floodgate::Storage::Tables {

using namespace Core;
using namespace Wire;

namespace {

// A value read back that the schema's CHECKs should have made impossible:
// somebody wrote the file by hand. Reported like corruption, never guessed at.
[[noreturn]] void badRow(const std::string& what)
{
    throw SqliteError(11 /* SQLITE_CORRUPT */, "unreadable row: " + what);
}

ListSource sourceFrom(const std::string& text)
{
    const auto s = listSourceFromString(text);
    if (!s)
        badRow("list entry source \"" + text + "\"");
    return *s;
}

Cidr rangeFrom(const Statement& s, int addressColumn, int prefixColumn)
{
    if (s.blobSize(addressColumn) != 16)
        badRow("address of " + std::to_string(s.blobSize(addressColumn)) + " bytes");
    IpAddress::Bytes b{};
    std::memcpy(b.data(), s.blobData(addressColumn), 16);
    const std::int64_t prefix = s.integer(prefixColumn);
    if (prefix < 0 || prefix > 128)
        badRow("prefix " + std::to_string(prefix));
    return Cidr(IpAddress(b), int(prefix));
}

void bindRange(Statement& s, int addressIndex, const Cidr& range)
{
    s.bindBlob(addressIndex, range.address().bytes().data(), 16);
    s.bind(addressIndex + 1, range.prefix128());
}

ListEntry entryFrom(const Statement& s)
{
    // Columns: id, list, address, prefix, reason, source, created_at, created_by, expires_at
    ListEntry e;
    e.id = s.integer(0);
    e.range = rangeFrom(s, 2, 3);
    e.reason = s.text(4);
    e.source = sourceFrom(s.text(5));
    e.createdAt = s.integer(6);
    e.createdBy = s.text(7);
    e.expiresAt = s.isNull(8) ? NeverExpires : s.integer(8);
    return e;
}

constexpr const char* ENTRY_COLUMNS = "id, list, address, prefix, reason, source, created_at, created_by, expires_at";

ListKind kindFrom(const std::string& text)
{
    const auto k = listKindFromString(text);
    if (!k)
        badRow("list \"" + text + "\"");
    return *k;
}

// Levels live in rule_levels and tier_levels with the same columns.
std::vector<Level> readLevels(Connection& db, const char* table, const std::string& owner)
{
    Statement s = db.prepare(std::string("SELECT name, limit_count, period_ms, algorithm, bucket_ms, lockout_ms, count_refused FROM ")
                             + table + " WHERE owner = ? ORDER BY position");
    s.bind(1, owner);
    std::vector<Level> out;
    while (s.step()) {
        Level l;
        l.name = s.text(0);
        l.limit = std::uint32_t(s.integer(1));
        l.periodMs = s.integer(2);
        const auto alg = Codec::algorithmFromString(s.text(3));
        if (!alg)
            badRow("algorithm \"" + s.text(3) + "\"");
        l.algorithm = *alg;
        l.bucketMs = s.integer(4);
        l.lockoutMs = s.integer(5);
        l.countRefused = s.integer(6) != 0;
        out.push_back(std::move(l));
    }
    return out;
}

void writeLevels(Connection& db, const char* table, const std::string& owner, const std::vector<Level>& levels)
{
    Statement del = db.prepare(std::string("DELETE FROM ") + table + " WHERE owner = ?");
    del.bind(1, owner).run();
    Statement ins = db.prepare(std::string("INSERT INTO ") + table
                               + " (owner, position, name, limit_count, period_ms, algorithm, bucket_ms, lockout_ms, count_refused)"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (std::size_t i = 0; i < levels.size(); ++i) {
        const Level& l = levels[i];
        ins.reset();
        ins.bind(1, owner).bind(2, std::int64_t(i)).bind(3, l.name).bind(4, std::int64_t(l.limit)).bind(5, l.periodMs);
        ins.bind(6, Codec::toString(l.algorithm)).bind(7, l.bucketMs).bind(8, l.lockoutMs).bind(9, l.countRefused ? 1 : 0);
        ins.run();
    }
}

Discriminator discriminatorFrom(const std::string& t)
{
    const auto d = Codec::discriminatorFromString(t);
    if (!d)
        badRow("discriminator \"" + t + "\"");
    return *d;
}

// ---- settings: one row per scalar of SettingTable.h ----

void readSettings(Connection& db, EngineConfig& c)
{
    Statement s = db.prepare("SELECT key, value FROM settings");
    while (s.step()) {
        const SettingRow* row = findSettingColumn(s.text(0));
        if (!row)
            continue;  // a newer version's setting: left alone, not an error
        switch (row->kind) {
        case SettingKind::Text:
            row->access.setText(c, s.text(1));
            break;
        case SettingKind::Choice:
            // An unknown name keeps the default.
            if (const auto v = row->choiceValue(s.text(1)))
                row->access.setNumber(c, *v);
            break;
        case SettingKind::Integer:
        case SettingKind::Flag:
        case SettingKind::Duration:
            row->access.setNumber(c, s.integer(1));
            break;
        case SettingKind::Ranges:
            break;  // in a table of their own
        }
    }
}

void writeSettings(Connection& db, const EngineConfig& c)
{
    db.exec("DELETE FROM settings");
    Statement ins = db.prepare("INSERT INTO settings (key, value) VALUES (?, ?)");
    for (const SettingRow& row : settingTable()) {
        if (row.column.empty())
            continue;
        ins.reset();
        ins.bind(1, row.column);
        if (row.kind == SettingKind::Text)
            ins.bind(2, row.access.text(c));
        else if (row.kind == SettingKind::Choice)
            ins.bind(2, row.choiceName(row.access.number(c)));
        else
            ins.bind(2, row.access.number(c));
        ins.run();
    }
}

void writePatterns(Connection& db, const char* kind, const std::vector<std::string>& patterns)
{
    Statement del = db.prepare("DELETE FROM patterns WHERE kind = ?");
    del.bind(1, kind).run();
    Statement ins = db.prepare("INSERT INTO patterns (kind, position, pattern) VALUES (?, ?, ?)");
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        ins.reset();
        ins.bind(1, kind).bind(2, std::int64_t(i)).bind(3, patterns[i]).run();
    }
}

std::vector<std::string> readPatterns(Connection& db, const char* kind)
{
    Statement s = db.prepare("SELECT pattern FROM patterns WHERE kind = ? ORDER BY position");
    s.bind(1, kind);
    std::vector<std::string> out;
    while (s.step())
        out.push_back(s.text(0));
    return out;
}

} // namespace

// ---- lists -----------------------------------------------------------------------

std::vector<ListedEntry> readEntries(Connection& db)
{
    Statement s = db.prepare(std::string("SELECT ") + ENTRY_COLUMNS + " FROM list_entries ORDER BY id");
    std::vector<ListedEntry> out;
    while (s.step())
        out.push_back({kindFrom(s.text(1)), entryFrom(s)});
    return out;
}

std::optional<ListedEntry> findEntry(Connection& db, ListKind kind, const Cidr& range)
{
    Statement& s = db.cached(std::string("SELECT ") + ENTRY_COLUMNS + " FROM list_entries WHERE list = ? AND address = ? AND prefix = ?");
    s.bind(1, toString(kind));
    bindRange(s, 2, range);
    std::optional<ListedEntry> out;
    if (s.step())
        out = ListedEntry{kind, entryFrom(s)};
    s.reset();  // a cached statement must not hold its read open
    return out;
}

std::optional<ListEntry> upsertEntry(Connection& db, ListKind kind, ListEntry& e)
{
    std::optional<ListEntry> before;
    if (auto old = findEntry(db, kind, e.range))
        before = old->entry;
    Statement& s = db.cached(
        "INSERT INTO list_entries (list, address, prefix, reason, source, created_at, created_by, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (list, address, prefix) DO UPDATE SET reason = excluded.reason, source = excluded.source,"
        " created_at = excluded.created_at, created_by = excluded.created_by, expires_at = excluded.expires_at"
        " RETURNING id");
    s.bind(1, toString(kind));
    bindRange(s, 2, e.range);
    s.bind(4, e.reason).bind(5, toString(e.source)).bind(6, e.createdAt).bind(7, e.createdBy);
    s.bind(8, e.expiresAt == NeverExpires ? std::optional<std::int64_t>() : std::optional<std::int64_t>(e.expiresAt));
    if (!s.step())
        throw SqliteError(1, "upsert returned no row");
    e.id = s.integer(0);
    s.run();
    return before;
}

bool deleteEntry(Connection& db, ListKind kind, const Cidr& range)
{
    Statement& s = db.cached("DELETE FROM list_entries WHERE list = ? AND address = ? AND prefix = ?");
    s.bind(1, toString(kind));
    bindRange(s, 2, range);
    s.run();
    return db.changes() > 0;
}

std::vector<ListedEntry> deleteExpired(Connection& db, Millis now)
{
    Statement s = db.prepare(std::string("DELETE FROM list_entries WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING ")
                             + ENTRY_COLUMNS);
    s.bind(1, now);
    std::vector<ListedEntry> out;
    while (s.step())
        out.push_back({kindFrom(s.text(1)), entryFrom(s)});
    return out;
}

// ---- configuration ---------------------------------------------------------------

EngineConfig readConfig(Connection& db)
{
    EngineConfig c;  // defaults for anything a row does not say
    c.rules.clear();
    c.cooldowns.clear();
    c.tiers.clear();
    c.customers.clear();
    {
        Statement s = db.prepare("SELECT name, discriminator, header, method, path_glob FROM rules ORDER BY position");
        while (s.step()) {
            ThrottleRule r;
            r.name = s.text(0);
            r.discriminator = discriminatorFrom(s.text(1));
            r.header = s.text(2);
            r.method = s.text(3);
            r.pathGlob = s.text(4);
            c.rules.push_back(std::move(r));
        }
    }
    for (ThrottleRule& r : c.rules)
        r.levels = readLevels(db, "rule_levels", r.name);
    {
        Statement s = db.prepare("SELECT name, method, path_glob, duration_ms, user_header FROM cooldowns ORDER BY position");
        while (s.step()) {
            Cooldown cd;
            cd.name = s.text(0);
            cd.method = s.text(1);
            cd.pathGlob = s.text(2);
            cd.durationMs = s.integer(3);
            cd.userHeader = s.text(4);
            c.cooldowns.push_back(std::move(cd));
        }
    }
    {
        Statement s = db.prepare("SELECT name FROM tiers ORDER BY position, name");
        while (s.step())
            c.tiers.push_back(Tier{s.text(0), {}});
    }
    for (Tier& t : c.tiers)
        t.levels = readLevels(db, "tier_levels", t.name);
    {
        Statement s = db.prepare("SELECT id, name, tier FROM customers ORDER BY id");
        while (s.step()) {
            Customer cu;
            cu.id = s.text(0);
            cu.name = s.text(1);
            cu.tier = s.text(2);
            c.customers.push_back(std::move(cu));
        }
    }
    {
        Statement s = db.prepare("SELECT name, limit_count, period_ms FROM customer_overrides WHERE customer = ? ORDER BY position");
        for (Customer& cu : c.customers) {
            s.reset();
            s.bind(1, cu.id);
            while (s.step()) {
                Level l;
                l.name = s.text(0);
                l.limit = std::uint32_t(s.integer(1));
                l.periodMs = s.integer(2);
                cu.overrides.push_back(std::move(l));
            }
        }
    }
    {
        Statement s = db.prepare("SELECT id, sha256, created_at, expires_at FROM customer_keys WHERE customer = ? ORDER BY created_at, id");
        for (Customer& cu : c.customers) {
            s.reset();
            s.bind(1, cu.id);
            while (s.step())
                cu.keys.push_back(CustomerKey{s.text(0), s.text(1), s.integer(2), s.isNull(3) ? 0 : s.integer(3)});
        }
    }
    c.bot.excludedPaths = readPatterns(db, "excluded_path");
    c.bot.safeUserAgents = readPatterns(db, "safe_user_agent");
    {
        Statement s = db.prepare("SELECT address, prefix FROM trusted_proxies ORDER BY address, prefix");
        while (s.step())
            c.settings.trustedProxies.push_back(rangeFrom(s, 0, 1));
    }
    readSettings(db, c);
    return c;
}

void writeRules(Connection& db, const EngineConfig& c)
{
    db.exec("DELETE FROM rules");  // rule_levels follow by ON DELETE CASCADE
    Statement ins = db.prepare("INSERT INTO rules (name, position, discriminator, header, method, path_glob) VALUES (?, ?, ?, ?, ?, ?)");
    for (std::size_t i = 0; i < c.rules.size(); ++i) {
        const ThrottleRule& r = c.rules[i];
        ins.reset();
        ins.bind(1, r.name).bind(2, std::int64_t(i)).bind(3, Codec::toString(r.discriminator)).bind(4, r.header);
        ins.bind(5, r.method).bind(6, r.pathGlob).run();
        writeLevels(db, "rule_levels", r.name, r.levels);
    }
    db.exec("DELETE FROM cooldowns");
    Statement cd = db.prepare("INSERT INTO cooldowns (name, position, method, path_glob, duration_ms, user_header) VALUES (?, ?, ?, ?, ?, ?)");
    for (std::size_t i = 0; i < c.cooldowns.size(); ++i) {
        const Cooldown& x = c.cooldowns[i];
        cd.reset();
        cd.bind(1, x.name).bind(2, std::int64_t(i)).bind(3, x.method).bind(4, x.pathGlob).bind(5, x.durationMs).bind(6, x.userHeader);
        cd.run();
    }
    writePatterns(db, "excluded_path", c.bot.excludedPaths);
    writePatterns(db, "safe_user_agent", c.bot.safeUserAgents);
    db.exec("DELETE FROM trusted_proxies");
    Statement tp = db.prepare("INSERT OR IGNORE INTO trusted_proxies (address, prefix) VALUES (?, ?)");
    for (const Cidr& p : c.settings.trustedProxies) {
        tp.reset();
        bindRange(tp, 1, p);
        tp.run();
    }
    writeSettings(db, c);
}

void writeTier(Connection& db, const Tier& t)
{
    Statement s = db.prepare("INSERT INTO tiers (name, position) VALUES (?, (SELECT coalesce(max(position), -1) + 1 FROM tiers))"
                             " ON CONFLICT (name) DO NOTHING");
    s.bind(1, t.name).run();
    writeLevels(db, "tier_levels", t.name, t.levels);
}

bool deleteTier(Connection& db, const std::string& name)
{
    Statement s = db.prepare("DELETE FROM tiers WHERE name = ?");
    s.bind(1, name).run();
    return db.changes() > 0;
}

void writeCustomer(Connection& db, const Customer& c)
{
    Statement s = db.prepare("INSERT INTO customers (id, name, tier) VALUES (?, ?, ?)"
                             " ON CONFLICT (id) DO UPDATE SET name = excluded.name, tier = excluded.tier");
    s.bind(1, c.id).bind(2, c.name).bind(3, c.tier).run();
    Statement del = db.prepare("DELETE FROM customer_overrides WHERE customer = ?");
    del.bind(1, c.id).run();
    Statement ins = db.prepare("INSERT INTO customer_overrides (customer, position, name, limit_count, period_ms) VALUES (?, ?, ?, ?, ?)");
    for (std::size_t i = 0; i < c.overrides.size(); ++i) {
        const Level& l = c.overrides[i];
        ins.reset();
        ins.bind(1, c.id).bind(2, std::int64_t(i)).bind(3, l.name).bind(4, std::int64_t(l.limit)).bind(5, l.periodMs).run();
    }
    Statement delKeys = db.prepare("DELETE FROM customer_keys WHERE customer = ?");
    delKeys.bind(1, c.id).run();
    Statement key = db.prepare("INSERT INTO customer_keys (customer, id, sha256, created_at, expires_at) VALUES (?, ?, ?, ?, ?)");
    for (const CustomerKey& k : c.keys) {
        key.reset();
        key.bind(1, c.id).bind(2, k.id).bind(3, k.sha256).bind(4, k.createdAt);
        key.bind(5, k.expiresAt == 0 ? std::nullopt : std::optional<std::int64_t>(k.expiresAt)).run();
    }
}

bool deleteCustomer(Connection& db, const std::string& id)
{
    Statement s = db.prepare("DELETE FROM customers WHERE id = ?");
    s.bind(1, id).run();
    return db.changes() > 0;
}

void writeConfig(Connection& db, const EngineConfig& c)
{
    writeRules(db, c);
    for (const Tier& t : c.tiers)
        writeTier(db, t);
    for (const Customer& cu : c.customers)
        writeCustomer(db, cu);
}

// ---- escalation history --------------------------------------------------------

std::vector<OffenderRow> readOffenders(Connection& db)
{
    Statement s = db.prepare("SELECT address, prefix, bans, last_ban_at FROM offenders");
    std::vector<OffenderRow> out;
    while (s.step())
        out.push_back({rangeFrom(s, 0, 1), std::uint32_t(s.integer(2)), s.integer(3)});
    return out;
}

void upsertOffender(Connection& db, const OffenderRow& row)
{
    Statement& s = db.cached("INSERT INTO offenders (address, prefix, bans, last_ban_at) VALUES (?, ?, ?, ?)"
                             " ON CONFLICT (address, prefix) DO UPDATE SET bans = max(bans, excluded.bans),"
                             " last_ban_at = max(last_ban_at, excluded.last_ban_at)");
    bindRange(s, 1, row.key);
    s.bind(3, std::int64_t(row.bans)).bind(4, row.lastBanAt).run();
}

std::size_t deleteOffendersBefore(Connection& db, Millis lastBanBefore)
{
    Statement s = db.prepare("DELETE FROM offenders WHERE last_ban_at < ?");
    s.bind(1, lastBanBefore).run();
    return std::size_t(db.changes());
}

// ---- audit and meta ------------------------------------------------------------

std::int64_t appendAudit(Connection& db, const AuditRow& r)
{
    Statement s = db.prepare("INSERT INTO audit (at, actor, action, subject, before, after) VALUES (?, ?, ?, ?, ?, ?)");
    s.bind(1, r.at).bind(2, r.actor).bind(3, r.action).bind(4, r.subject);
    if (r.before.empty())
        s.bindNull(5);
    else
        s.bind(5, r.before);
    if (r.after.empty())
        s.bindNull(6);
    else
        s.bind(6, r.after);
    s.run();
    return db.lastInsertRowId();
}

std::vector<AuditRow> readAudit(Connection& db, std::int64_t afterId, std::size_t limit)
{
    // afterId < 0: the newest `limit` rows. Either way oldest first.
    Statement s = afterId < 0
        ? db.prepare("SELECT * FROM (SELECT id, at, actor, action, subject, before, after FROM audit ORDER BY id DESC LIMIT ?) ORDER BY id")
        : db.prepare("SELECT id, at, actor, action, subject, before, after FROM audit WHERE id > ? ORDER BY id LIMIT ?");
    if (afterId < 0)
        s.bind(1, std::int64_t(limit));
    else
        s.bind(1, afterId).bind(2, std::int64_t(limit));
    std::vector<AuditRow> out;
    while (s.step())
        out.push_back({s.integer(0), s.integer(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)});
    return out;
}

std::optional<std::string> meta(Connection& db, const std::string& key)
{
    Statement s = db.prepare("SELECT value FROM meta WHERE key = ?");
    s.bind(1, key);
    if (!s.step())
        return std::nullopt;
    return s.text(0);
}

void setMeta(Connection& db, const std::string& key, const std::string& value)
{
    Statement s = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    s.bind(1, key).bind(2, value).run();
}

} // namespace Floodgate::Storage::Tables
