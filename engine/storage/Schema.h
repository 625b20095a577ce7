// SPDX-License-Identifier: GPL-3.0-or-later
// The database schema: a version in PRAGMA user_version, ordered migrations
// (schema changes, and the data changes that go with them) applied inside
// the caller's write transaction, and the application id that tells a
// Floodgate database from any other SQLite file.
#pragma once

namespace Floodgate::Storage {

class Connection;

namespace Schema {

inline constexpr int CurrentVersion = 4;
// PRAGMA application_id of a Floodgate database ("FLDG").
inline constexpr int ApplicationId = 0x464c4447;

// The version the file says it has (0 for a new, empty database).
int versionOf(Connection& db);
// Applies every migration after `from` up to CurrentVersion, in order, and
// stamps the version and application id. Call inside a write transaction.
void migrate(Connection& db, int from);

} // namespace Schema
} // namespace Floodgate::Storage
