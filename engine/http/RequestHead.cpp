// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/RequestHead.h"

#include "core/Rules.h"

#include <algorithm>

namespace Floodgate::Http {

namespace {

std::string_view trimmed(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace

std::string_view headerValue(std::span<const Core::HeaderField> headers, std::string_view name)
{
    for (const auto& h : headers)
        if (Core::equalsIgnoreCase(h.name, name))
            return h.value;
    return {};
}

std::string joinedHeader(std::span<const Core::HeaderField> headers, std::string_view name)
{
    std::string out;
    for (const auto& h : headers) {
        if (!Core::equalsIgnoreCase(h.name, name))
            continue;
        if (!out.empty())
            out += ", ";
        out += h.value;
    }
    return out;
}

std::size_t countCookies(std::span<const Core::HeaderField> headers)
{
    std::size_t n = 0;
    for (const auto& h : headers) {
        if (!Core::equalsIgnoreCase(h.name, "cookie") || trimmed(h.value).empty())
            continue;
        n += 1 + std::size_t(std::count(h.value.begin(), h.value.end(), ';'));
    }
    return n;
}

bool describeRequest(const RequestHead& head, const TrustedProxies& proxies, Core::NormalisedTarget& target, ClientIdentity& identity,
                     std::string* forwarded, Core::RequestFacts& f)
{
    f = Core::RequestFacts{};
    f.peer = head.peer;
    const bool trustedPeer = proxies.contains(head.peer);
    f.fromTrustedProxy = trustedPeer;
    std::string_view raw = head.target;
    std::string_view method = head.method;
    if (trustedPeer && head.decisionMode) {
        // nginx auth_request / Traefik ForwardAuth carry the original
        // request in headers. (Proxy mode forwards the request line, so
        // it is what is decided on.)
        if (auto uri = headerValue(head.headers, "X-Original-URI"); !uri.empty())
            raw = uri;
        else if (auto fwdUri = headerValue(head.headers, "X-Forwarded-Uri"); !fwdUri.empty())
            raw = fwdUri;
        if (auto m = headerValue(head.headers, "X-Original-Method"); !m.empty())
            method = m;
        else if (auto fm = headerValue(head.headers, "X-Forwarded-Method"); !fm.empty())
            method = fm;
    }
    // One spelling per resource before anything matches it (and proxy
    // mode forwards exactly this).
    if (!Core::normaliseTarget(raw, target))
        return false;
    // Only the header the operator named (--real-ip-header), never another one.
    std::string trustedValue = trustedPeer ? joinedHeader(head.headers, proxies.header()) : std::string();
    if (forwarded)
        *forwarded = proxies.forwardedSyntax() ? trustedValue : std::string();
    identity = resolveClient(head.peer, std::move(trustedValue), proxies);
    f.client = identity.client;
    f.path = target.matchPath;
    f.query = target.query();
    f.method = method;
    f.userAgent = headerValue(head.headers, "User-Agent");
    f.cookieCount = std::uint32_t(countCookies(head.headers));
    f.headers = head.headers;
    return true;
}

} // namespace Floodgate::Http
