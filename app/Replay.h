// SPDX-License-Identifier: GPL-3.0-or-later
// `floodgate replay ACCESS_LOG...` (docs/CLI.md): access logs through the
// rules of a database or a rules file, on the logs' own clock; nothing is
// sent anywhere and the database is only read.
#pragma once

#include "app/Options.h"

namespace Floodgate::App {

// Exit code: 0 done, 2 bad command line or a file that cannot be read,
// 4 the database cannot be used (missing: replay never creates one).
int runReplay(const Options& options);

} // namespace Floodgate::App
