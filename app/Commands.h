// SPDX-License-Identifier: MIT
// The command-line tools that work on the database without serving:
// `floodgate lists export|import FILE`, `floodgate token`, `floodgate replay` (app/Replay.h).
#pragma once

#include "app/Options.h"

namespace Floodgate::App {

// Returns the exit code: 0 done, 1 rejected import or unwritable file,
// 2 bad command line, 4 database unusable.
int runCommand(const Options& options);

} // namespace Floodgate::App
