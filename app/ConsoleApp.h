// SPDX-License-Identifier: MIT
// The console: the runtime (Runtime.h) with the window on top.
#pragma once

#include "app/Options.h"

namespace Floodgate::App {

// Returns the process exit code: 0 when the window is closed, 3 cannot
// listen, 4 database unusable (after saying why in a dialog and on stderr).
int runConsole(const Options& options, int argc, char** argv);

} // namespace Floodgate::App
