// SPDX-License-Identifier: GPL-3.0-or-later
// The wire shapes of the engine's values (docs/INTERFACE.md): list entries, tiers,
// customers, the rules document, clients and buckets, as JSON; RFC 3339 times
// and durations. Decoding is strict and names the field that is wrong
// ("levels[1].period must be > 0"). Used by the admin API, the audit trail,
// list import/export and the console. Plain C++20, no I/O.
#pragma once

#include "core/AddressList.h"
#include "wire/Json.h"
#include "core/Rules.h"
#include "core/Snapshot.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Wire::Codec {

// The engine's values this codec writes and reads.
using Core::Algorithm;
using Core::Cidr;
using Core::ClientDetail;
using Core::ClientSummary;
using Core::Customer;
using Core::Discriminator;
using Core::EngineConfig;
using Core::Level;
using Core::ListEntry;
using Core::ListKind;
using Core::LiveBuckets;
using Core::Millis;
using Core::NeverExpires;
using Core::Tier;

// "2026-11-22T05:00:00Z"; with milliseconds ("…:00.123Z") when they are not
// zero or when `alwaysMillis`.
std::string formatTime(Millis ms, bool alwaysMillis = false);
// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil): no time zone database, no locale (log timestamps too).
std::int64_t daysFromCivil(std::int64_t year, unsigned month, unsigned day);
// RFC 3339: "2026-11-22T05:00:00Z", "…T05:00:00.5+01:00"; nullopt + reason otherwise.
std::optional<Millis> parseTime(std::string_view text, std::string* why);

// A duration in seconds: a positive number (604800, 0.5) or a string with a
// unit ("30s", "90m", "24h", "7d", "2w"; a bare number string is seconds).
// Result in milliseconds, > 0.
std::optional<Millis> parseDuration(const Json& value, std::string* why);
// Whole seconds as an integer, otherwise a fraction: 3000 -> 3, 1500 -> 1.5.
Json seconds(Millis ms);
// A wait as a person reads it, rounded up to the unit shown: "3 s",
// "14 min 31 s", "2 h 5 min", "6 d 23 h".
std::string humanDuration(Millis ms);
// An exact length as a person reads it, in seconds: "3 s", "1.5 s", "0.25 s"
// (a window in an explanation, a wait in an error message).
std::string exactSeconds(Millis ms);

// ---- list entries ----------------------------------------------------------
Json toJson(const ListEntry& entry, ListKind kind, Millis now);

// What a client may send to add an entry: {"address", "ttl", "reason", "expires_at"}.
struct EntryInput {
    Cidr range;
    std::string reason;
    Millis expiresAt = NeverExpires;  // resolved against `now` and the default TTL
};
// ttl missing -> defaultTtlMs; ttl null -> permanent; "expires_at" (RFC 3339)
// instead of ttl for an absolute end. Rejects an end at or before now.
std::optional<EntryInput> entryFromJson(const Json& body, Millis now, Millis defaultTtlMs, std::string* why);

// ---- tiers, customers, rules ----------------------------------------------
Json toJson(const Level& level);
// A level as an operator types it: "LIMIT/PERIOD" (100/1m, 5000/1h, 10/2.5s),
// as the JSON a level decodes from ({"limit": 100, "period": 60}); the
// tier and customer decoders below check the rest.
std::optional<Json> levelFromText(std::string_view text, std::string* why);
// The other way: "100/1m" (the period as Core::formatPeriod writes it);
// levels that are not sliding say so: "6/3s lockout 3s".
std::string levelText(const Level& level);
// Names of tiers and customers (they appear in API paths): 1-max bytes of
// printable UTF-8 without '/'.
bool validName(std::string_view s, std::size_t max);
Json toJson(const Tier& tier);
Json toJson(const Customer& customer);  // with its keys (id, sha256, times; never the key itself)
Json toJson(const Core::CustomerKey& key);
std::optional<Tier> tierFromJson(const Json& body, std::string_view name, std::string* why);
std::optional<Customer> customerFromJson(const Json& body, std::string_view id, std::string* why);

// Everything configurable except tiers and customers: rules, cooldowns, bot
// options, escalation, settings.
Json rulesToJson(const EngineConfig& config);
// Applies the sections present in `body` onto `config` (absent ones stay);
// unknown fields are errors. Does not run validate(); the caller does.
bool rulesFromJson(const Json& body, EngineConfig& config, std::string* why);

// ---- snapshots for the admin API and the console ---------------------------
Json toJson(const ClientSummary& client, Millis now);
Json toJson(const ClientDetail& detail, Millis now);
Json toJson(const LiveBuckets& buckets);

const char* toString(Algorithm algorithm);  // "sliding" | "fixed" | "lockout"
std::optional<Algorithm> algorithmFromString(std::string_view text);
const char* toString(Discriminator d);  // "address" | "address_user_agent" | "header"
std::optional<Discriminator> discriminatorFromString(std::string_view text);

} // namespace Floodgate::Wire::Codec
