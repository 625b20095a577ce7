// SPDX-License-Identifier: GPL-3.0-or-later
// `floodgate replay ACCESS_LOG...` (docs/CLI.md): access logs through the
// rules of a database or a rules file, on the logs' own clock; nothing is
// sent anywhere and the database is only read.
#pragma once

#include "app/ExitCode.h"
#include "app/Options.h"

namespace Floodgate::App {

// Done; BadInput (a bad command line or a file that cannot be read);
// DatabaseUnusable (missing too: replay never creates one).
ExitCode runReplay(const Options& options);

} // namespace Floodgate::App
