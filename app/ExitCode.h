// SPDX-License-Identifier: GPL-3.0-or-later
// The process's exit codes: one enum that every return and exit in app/
// uses, and one table that says what each means. --help's footer, the man
// page's EXIT STATUS and the exit-code tables of docs/INTERFACE.md and
// docs/CLI.md are made from the table (app/DocText.h; tests/app/test_docs
// fails when the checked-in text differs).
#pragma once

#include <span>
#include <string_view>

namespace Floodgate::App {

enum class ExitCode : int {
    Done = 0,              // a clean stop, or a command done
    Rejected = 1,          // a rejected import, an unwritable file, nothing to remove, no admin API answering
    BadInput = 2,          // a bad command line, configuration file or input: nothing written
    CannotListen = 3,      // the listener's or the admin API's address cannot be had
    DatabaseUnusable = 4,  // corrupt, locked, newer, unsafe; or missing for a command that only reads
    ClusterRefused = 5,    // --redis refused at start-up, or the cluster key unusable
};

// What main() returns.
constexpr int exitStatus(ExitCode code)
{
    return static_cast<int>(code);
}

// What an exit code means. The texts mark literal words (options, commands,
// signals) with `backquotes`: the man page writes them in bold, the
// Markdown documents as code, --help as they are.
struct ExitCodeRow {
    ExitCode code;
    std::string_view brief;     // --help's footer: a few words
    std::string_view meaning;   // the man page and docs/INTERFACE.md
    std::string_view commands;  // docs/CLI.md: what it means for a command (empty: no command exits so)
};

// Every exit code, in order.
std::span<const ExitCodeRow> exitCodeTable();

} // namespace Floodgate::App
