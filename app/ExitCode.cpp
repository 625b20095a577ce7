// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/ExitCode.h"

namespace Floodgate::App {

namespace {

constexpr ExitCodeRow TABLE[] = {
    {ExitCode::Done, "clean stop or done",
     "A clean stop (`SIGTERM` or `SIGINT`, headless and console alike; `--seconds` elapsed), or a command done.",
     "done"},
    {ExitCode::Rejected, "rejected import, unwritable file, nothing to remove or no admin API answering explain",
     "A rejected import (lists or rules), a file that cannot be read or written, nothing to remove (`unblock`, `unsafelist`, "
     "`customers remove`, `tiers remove`), a tier customers are on (`tiers remove`), or `explain` with no admin API answering or the "
     "token refused.",
     "a rejected import (lists or rules), a file that cannot be read or written, nothing to remove (`unblock` of an address that is not "
     "blocked, `customers remove` of an unknown id, `tiers remove` of an unknown tier or of one customers are on), `explain` without a "
     "running instance to ask (nothing answers, or the token is refused)"},
    {ExitCode::BadInput, "bad command line, configuration file or input (nothing written)",
     "A bad command line, a bad configuration file (an unknown key, a bad value, a syntax error: the line names FILE:LINE), or a "
     "command's bad input; nothing is written.",
     "bad command line or bad input: an unparseable address, a prefix out of range, a negative or unparseable TTL, an unknown tier, a "
     "malformed `LIMIT/PERIOD`. One line on stderr names the problem; nothing is written, and no database is created"},
    {ExitCode::CannotListen, "cannot listen",
     "Cannot listen: the address is in use, or no permission. Also a second Floodgate on a port another Floodgate of the same user "
     "listens on: the line names that one's address, database and admin API (the sockets would share the port, and the two would each "
     "count alone).",
     {}},
    {ExitCode::DatabaseUnusable, "database unusable (corrupt, locked, newer schema) or, for a command that only reads, missing",
     "The database is unusable: corrupt, locked past `--db-timeout`, written by a newer Floodgate, not a Floodgate database, or "
     "writable by other users; or missing, for a command that only reads.",
     "the database is unusable (corrupt, locked, newer), or a command that only reads or removes (`show`, `export`, `explain`, "
     "`tiers remove`) was pointed at a database that does not exist: it says so and creates none"},
    {ExitCode::ClusterRefused, "--redis refused (wrong password, or not Redis)",
     "`--redis` was refused at start-up: a wrong password or user, a Redis in protected mode, a cluster key that cannot be read or "
     "that is not the cluster's, or the server on that address does not speak Redis. (Redis merely unreachable is not an error: the "
     "node starts on its own and joins when it answers.)",
     {}},
};

// The table is in the enum's order: row i is exit code i.
constexpr bool inOrder()
{
    for (int i = 0; i < int(std::size(TABLE)); ++i)
        if (exitStatus(TABLE[i].code) != i)
            return false;
    return true;
}
static_assert(inOrder(), "one row per exit code, in order");
static_assert(exitStatus(TABLE[std::size(TABLE) - 1].code) == exitStatus(ExitCode::ClusterRefused), "every exit code has its row");

} // namespace

std::span<const ExitCodeRow> exitCodeTable()
{
    return TABLE;
}

} // namespace Floodgate::App
