// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/Explain.h"

#include "wire/Codec.h"
#include "core/Printable.h"
#include "core/Time.h"

namespace Floodgate::Http {

namespace {

// A customer the request named without proving it (settings.customer_auth).
std::string claimSentence(const LogRecord& r)
{
    const std::string named = "\"" + Core::printable(r.claimed) + "\"";
    const char* anonymous = ": counted as the anonymous client it is.";
    switch (r.claim) {
    case Core::Claim::None: return {};
    case Core::Claim::UnknownKey: return " It sent an API key (" + named + "...) that is no customer's" + anonymous;
    case Core::Claim::ExpiredKey: return " It sent an API key of customer " + named + " that has expired (rotated out)" + anonymous;
    case Core::Claim::UntrustedHeader:
        return " It named customer " + named + " in the customer header, which is believed only from a trusted proxy" + anonymous;
    case Core::Claim::HeaderNotAProof:
        return " It named customer " + named + " in the customer header, which proves nothing while customers prove who they "
               "are with their API key (customer_auth api_key)" + anonymous;
    case Core::Claim::UnknownCustomer: return " Its trusted proxy named customer " + named + ", and there is none" + anonymous;
    }
    return {};
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
    why += claimSentence(r);
    return why;
}

} // namespace Floodgate::Http
