// SPDX-License-Identifier: GPL-3.0-or-later
// The sentence that says why a request was refused, for a person: the
// admin API's events ("why") and the console's events view both show it.
#pragma once

#include "http/LimiterLog.h"

#include <string>

namespace Floodgate::Http {

// "7 requests in the 3 s window of ip-3s (limit 6); passes again in 3 s.
// Client 203.0.113.7 is the TCP peer."
std::string explain(const LogRecord& record);

} // namespace Floodgate::Http
