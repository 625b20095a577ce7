// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "app/Options.h"

namespace Floodgate::App {

// Runs engine + listener + admin API until SIGINT/SIGTERM (or --seconds);
// SIGHUP reloads (argc/argv: the command line, parsed again with the
// configuration file). Returns the process exit code: 0 clean stop,
// 3 cannot listen, 4 storage unusable.
int runHeadless(const Options& options, int argc, char** argv);

} // namespace Floodgate::App
