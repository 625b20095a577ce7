// SPDX-License-Identifier: GPL-3.0-or-later
// Rows <-> engine values: list entries, tiers, customers, rules and settings,
// the audit trail and meta values. Plain functions over one connection; the
// caller owns the transaction. The functions are fg_storage's own; the row
// types (AuditRow, OffenderRow) are also what Store.h hands out.
#pragma once

#include "core/AddressList.h"
#include "core/Rules.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace Floodgate::Storage {

class Connection;

struct AuditRow {
    std::int64_t id = 0;
    Core::Millis at = 0;
    std::string actor;    // "console:alice", "api:127.0.0.1", "floodgate"
    std::string action;   // "list.add", "tier.put", "rules.put", "list.expire", ...
    std::string subject;  // "blocklist 203.0.113.7/32", "tier Pro"
    std::string before;   // JSON or empty
    std::string after;    // JSON or empty
};

// Escalation history of one counting key: how many bans, the last one when.
struct OffenderRow {
    Core::Cidr key;
    std::uint32_t bans = 0;
    Core::Millis lastBanAt = 0;
};

namespace Tables {

// ---- lists ----
std::vector<Core::ListedEntry> readEntries(Connection& db);
std::optional<Core::ListedEntry> findEntry(Connection& db, Core::ListKind kind, const Core::Cidr& range);
// Inserts or replaces the entry for (kind, range); sets entry.id. Returns the
// entry it replaced, if any.
std::optional<Core::ListEntry> upsertEntry(Connection& db, Core::ListKind kind, Core::ListEntry& entry);
bool deleteEntry(Connection& db, Core::ListKind kind, const Core::Cidr& range);
// Deletes entries that ended at or before `now`; returns them.
std::vector<Core::ListedEntry> deleteExpired(Connection& db, Core::Millis now);

// ---- configuration ----
Core::EngineConfig readConfig(Connection& db);
// Replaces rules, cooldowns, patterns, trusted proxies, settings and escalation.
void writeRules(Connection& db, const Core::EngineConfig& config);
void writeTier(Connection& db, const Core::Tier& tier);  // insert or replace (keeps its position)
bool deleteTier(Connection& db, const std::string& name);
void writeCustomer(Connection& db, const Core::Customer& customer);
bool deleteCustomer(Connection& db, const std::string& id);
// Everything in `config` (first run).
void writeConfig(Connection& db, const Core::EngineConfig& config);

// ---- escalation history ----
std::vector<OffenderRow> readOffenders(Connection& db);
void upsertOffender(Connection& db, const OffenderRow& row);
std::size_t deleteOffendersBefore(Connection& db, Core::Millis lastBanBefore);

// ---- audit and meta ----
std::int64_t appendAudit(Connection& db, const AuditRow& row);
std::vector<AuditRow> readAudit(Connection& db, std::int64_t afterId, std::size_t limit);
std::optional<std::string> meta(Connection& db, const std::string& key);
void setMeta(Connection& db, const std::string& key, const std::string& value);

} // namespace Tables
} // namespace Floodgate::Storage
