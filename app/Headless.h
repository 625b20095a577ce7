// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "app/ExitCode.h"
#include "app/Options.h"

namespace Floodgate::App {

// Runs engine + listener + admin API until SIGINT/SIGTERM (or --seconds);
// SIGHUP reloads (argc/argv: the command line, parsed again with the
// configuration file). Returns Done on a clean stop, else what start-up
// failed with (CannotListen, DatabaseUnusable, ClusterRefused).
ExitCode runHeadless(const Options& options, int argc, char** argv);

} // namespace Floodgate::App
