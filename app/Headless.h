// SPDX-License-Identifier: MIT
#pragma once

#include "app/Options.h"

namespace Floodgate::App {

// Runs engine + listener + admin API until SIGINT/SIGTERM (or --seconds).
// Returns the process exit code: 0 clean stop, 3 cannot listen, 4 storage unusable.
int runHeadless(const Options& options);

} // namespace Floodgate::App
