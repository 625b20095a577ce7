// SPDX-License-Identifier: GPL-3.0-or-later
// The commands of docs/CLI.md: the lists, tiers, customers and rules of the
// database, through the same storage code and audit trail as the console and
// the admin API ("cli:$USER"); `token`; `explain` asks a running instance's
// admin API; `replay` runs logs through the engine (app/Replay.h).
// Read-only commands never create a database.
#pragma once

#include "app/ExitCode.h"
#include "app/Options.h"

namespace Floodgate::App {

// Returns the exit code (app/ExitCode.h): Done, Rejected (a rejected import,
// an unwritable file, nothing to remove, no admin API answering), BadInput
// (nothing written) or DatabaseUnusable (or, for a read-only command, missing).
ExitCode runCommand(const Options& options);

} // namespace Floodgate::App
