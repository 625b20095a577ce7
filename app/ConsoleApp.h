// SPDX-License-Identifier: GPL-3.0-or-later
// The console: the runtime (Runtime.h) with the window on top.
#pragma once

#include "app/Options.h"
#include "ui/ConsoleServices.h"

namespace Floodgate::App {

class Runtime;

// What the console is given of a started runtime (the GUI suites build
// their console on a Runtime the same way).
Ui::ConsoleServices consoleServices(Runtime& runtime, const Options& options);

// Returns the process exit code: 0 when the window is closed, 3 cannot
// listen, 4 database unusable (after saying why in a dialog and on stderr).
int runConsole(const Options& options, int argc, char** argv);

} // namespace Floodgate::App
