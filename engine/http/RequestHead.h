// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's description of a request (Core::RequestFacts) from its head.
// The listener builds it for every request it decides and `floodgate
// replay` (engine/replay) for every access-log line, through this one
// function, so a replay decides on exactly the facts live traffic gives:
// the same target normalisation, the same trusted-proxy rules, the same
// user agent and cookie count.
#pragma once

#include "core/Decision.h"
#include "core/Target.h"
#include "http/ClientIdentity.h"

#include <span>
#include <string>
#include <string_view>

namespace Floodgate::Http {

struct RequestHead {
    Core::IpAddress peer;                         // the TCP peer (a log's remote address)
    std::string_view method;
    std::string_view target;                      // as on the request line
    std::span<const Core::HeaderField> headers;   // every field, in the order received
    // Decision mode (nginx auth_request, Traefik ForwardAuth): a trusted
    // peer's X-Original-URI / X-Forwarded-Uri and X-Original-Method /
    // X-Forwarded-Method are the request. Proxy mode decides on the request line.
    bool decisionMode = true;
};

// The first value of a header (case-insensitive name); empty when absent.
std::string_view headerValue(std::span<const Core::HeaderField> headers, std::string_view name);
// Every value of a repeatable header, joined with ", " (X-Forwarded-For may come twice).
std::string joinedHeader(std::span<const Core::HeaderField> headers, std::string_view name);
// Cookies sent, over every Cookie field ("a=1; b=2" is two; a blank field none).
std::size_t countCookies(std::span<const Core::HeaderField> headers);

// Fills `facts` (peer, client, method, path, query, user agent, cookie
// count, headers). `target` receives the normalised target the facts' path
// and query point into; `identity` who the client is and the chain trusted
// proxies reported; `forwarded` (when not null) the trusted Forwarded value
// when that is the real-IP header (proxy mode carries it on). False when the
// target does not normalise: target.reason says why (the listener answers 400).
bool describeRequest(const RequestHead& head, const TrustedProxies& proxies, Core::NormalisedTarget& target, ClientIdentity& identity,
                     std::string* forwarded, Core::RequestFacts& facts);

} // namespace Floodgate::Http
