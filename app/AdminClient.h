// SPDX-License-Identifier: GPL-3.0-or-later
// A blocking GET against a running Floodgate's admin API, for `floodgate
// explain`: one request per connection, loopback or wherever --admin points,
// bounded in time. Boost stays in the .cpp file.
#pragma once

#include "app/Options.h"

#include <optional>
#include <string>

namespace Floodgate::App {

struct AdminAnswer {
    int status = 0;
    std::string body;
};

// nullopt with *why when nothing answered (refused, timed out, not HTTP).
std::optional<AdminAnswer> adminGet(const HostPort& at, const std::string& target, const std::string& token, std::string* why);

} // namespace Floodgate::App
