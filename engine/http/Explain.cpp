// SPDX-License-Identifier: MIT
#include "Explain.h"

#include "Codec.h"
#include "Time.h"

#include <charconv>

namespace Floodgate::Http {

namespace {

// A window's length: "3 s", "1.5 s" (std::to_chars: the same under any C
// library locale; the console's Qt sets the user's, and snprintf would
// write "1,5 s").
std::string formatSeconds(Core::Millis ms)
{
    if (ms % Core::SECOND == 0)
        return std::to_string(ms / Core::SECOND) + " s";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, double(ms) / double(Core::SECOND), std::chars_format::fixed, 1);
    return std::string(buf, r.ptr) + " s";
}

} // namespace

std::string explain(const LogRecord& r)
{
    std::string why;
    const std::string rule(r.rule.view());
    switch (r.reason) {
    case Core::Reason::Blocklisted: why = "On the blocklist"; break;
    case Core::Reason::AutoBanned: why = "Banned automatically after repeated refusals"; break;
    case Core::Reason::Cooldown:
        why = std::string(r.method) + " " + r.path + " was repeated inside the " + formatSeconds(r.windowMs) + " " + rule;
        break;
    default:
        why = std::to_string(r.attempts) + " request" + (r.attempts == 1 ? "" : "s") + " in the " + formatSeconds(r.windowMs)
            + " window of " + rule + " (limit " + std::to_string(r.limit) + ")";
    }
    if (r.retryAfterMs > 0)
        why += "; passes again in " + Wire::Codec::humanDuration(r.retryAfterMs);
    if (r.action == Core::Action::DryRun)
        why += " (dry run: let through)";
    why += ". ";
    if (r.forwardedFor[0])
        why += "Client " + r.ip.toString() + " taken from X-Forwarded-For \"" + r.forwardedFor + "\" sent by trusted proxy "
            + r.peer.toString() + ".";
    else if (r.ip != r.peer)
        why += "Client " + r.ip.toString() + " named by trusted proxy " + r.peer.toString() + ".";
    else
        why += "Client " + r.ip.toString() + " is the TCP peer.";
    return why;
}

} // namespace Floodgate::Http
