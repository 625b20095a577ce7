// SPDX-License-Identifier: GPL-3.0-or-later
// What `floodgate replay` is asked to do (docs/CLI.md): the command line
// fills it, app/Replay runs it. Plain values, so the parser and the replay
// do not depend on each other.
#pragma once

#include "core/Address.h"

#include <string>
#include <vector>

namespace Floodgate::App {

struct ReplayOptions {
    std::vector<std::string> logs;           // ACCESS_LOG...: read in this order (rotated logs oldest first)
    std::string rulesFile;                   // --rules FILE.json (the shape of GET /api/v1/rules); empty: the database's rules
    std::string format = "auto";             // --format auto|combined|common|nginx-json|floodgate-csv
    std::vector<Core::Cidr> trustedProxies;  // --trusted-proxy CIDR (repeatable)
    std::string customerParam;               // --customer-param NAME: the query parameter naming the customer each request proved
    std::string from;                        // --from TIME: lines before it are skipped (empty: from the start)
    std::string to;                          // --to TIME: lines after it are skipped (empty: to the end)
    bool json = false;                       // --json: the report as JSON on stdout
    std::string decisionsOut;                // --decisions OUT.csv: one row per request
};

} // namespace Floodgate::App
