// SPDX-License-Identifier: GPL-3.0-or-later
// A problem a background writer ran into (the store's writer, limiter.log's
// writer), kept for the console's banner: it shows each serial once.
#pragma once

#include "core/Time.h"

#include <cstdint>
#include <string>

namespace Floodgate::Core {

struct Problem {
    std::uint64_t serial = 0;  // grows with each new problem
    Millis at = 0;             // wall clock, ms since the epoch
    std::string message;       // one line
};

} // namespace Floodgate::Core
