// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/Explain.h"

#include "wire/Codec.h"
#include "core/Time.h"

namespace Floodgate::Http {

std::string explain(const LogRecord& r)
{
    std::string why;
    const std::string rule(r.rule.view());
    switch (r.reason) {
    case Core::Reason::Blocklisted: why = "On the blocklist"; break;
    case Core::Reason::AutoBanned: why = "Banned automatically after repeated refusals"; break;
    case Core::Reason::Cooldown:
        why = std::string(r.method) + " " + r.path + " was repeated inside the " + Wire::Codec::exactSeconds(r.windowMs) + " " + rule;
        break;
    default:
        why = std::to_string(r.attempts) + " request" + (r.attempts == 1 ? "" : "s") + " in the " + Wire::Codec::exactSeconds(r.windowMs)
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
