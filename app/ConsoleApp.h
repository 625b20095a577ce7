// SPDX-License-Identifier: GPL-3.0-or-later
// The console: the runtime (Runtime.h) with the window on top.
#pragma once

#include "app/ExitCode.h"
#include "app/Options.h"
#include "ui/ConsoleServices.h"

namespace Floodgate::App {

class Runtime;

// What the console is given of a started runtime (the GUI suites build
// their console on a Runtime the same way).
Ui::ConsoleServices consoleServices(Runtime& runtime, const Options& options);

// Returns Done when the window is closed, else what start-up failed with
// (CannotListen, DatabaseUnusable, ...: said in a dialog and on stderr).
ExitCode runConsole(const Options& options, int argc, char** argv);

} // namespace Floodgate::App
