// SPDX-License-Identifier: GPL-3.0-or-later
// The words the engine's enums are written as in the API, the log and the UI.
#include "core/Decision.h"
#include "core/Snapshot.h"

namespace Floodgate::Core {

const char* toString(Action action)
{
    switch (action) {
    case Action::Allow: return "allow";
    case Action::Throttle: return "throttle";
    case Action::Block: return "block";
    case Action::DryRun: return "dry_run";
    }
    return "allow";
}

const char* toString(Reason reason)
{
    switch (reason) {
    case Reason::Counted: return "counted";
    case Reason::OverLimit: return "over_limit";
    case Reason::Cooldown: return "cooldown";
    case Reason::Blocklisted: return "blocklisted";
    case Reason::AutoBanned: return "auto_banned";
    case Reason::Safelisted: return "safelisted";
    case Reason::ExcludedPath: return "excluded_path";
    case Reason::SafeUserAgent: return "safe_user_agent";
    case Reason::HasCookies: return "has_cookies";
    case Reason::RangeContinuation: return "range_continuation";
    case Reason::ClusterDown: return "cluster_down";
    }
    return "counted";
}

const char* toString(Claim claim)
{
    switch (claim) {
    case Claim::None: return "none";
    case Claim::UnknownKey: return "unknown_key";
    case Claim::ExpiredKey: return "expired_key";
    case Claim::UntrustedHeader: return "untrusted_header";
    case Claim::HeaderNotAProof: return "header_not_a_proof";
    case Claim::UnknownCustomer: return "unknown_customer";
    }
    return "none";
}

const char* toString(ClientState state)
{
    switch (state) {
    case ClientState::Ok: return "ok";
    case ClientState::Throttled: return "throttled";
    case ClientState::Blocked: return "blocked";
    case ClientState::Safelisted: return "safelisted";
    }
    return "ok";
}

std::string keyText(const Cidr& range)
{
    return range.isSingleAddress() ? range.address().toString() : range.toString();
}

std::string ClientSummary::keyText() const
{
    return Core::keyText(Cidr(key, keyPrefix));
}

} // namespace Floodgate::Core
