// SPDX-License-Identifier: MIT
#include "ClientIdentity.h"

#include "Rules.h"

#include <optional>

namespace Floodgate::Http {

using Core::IpAddress;

namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// Splits on commas, right to left.
std::vector<std::string_view> splitList(std::string_view s)
{
    std::vector<std::string_view> out;
    while (true) {
        const auto comma = s.find(',');
        out.push_back(trim(s.substr(0, comma)));
        if (comma == std::string_view::npos)
            break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

// The for= parameter of one Forwarded element ("for=192.0.2.60;proto=http;by=203.0.113.43").
std::string_view forwardedFor(std::string_view element)
{
    while (!element.empty()) {
        const auto semi = element.find(';');
        std::string_view pair = trim(element.substr(0, semi));
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && Core::equalsIgnoreCase(trim(pair.substr(0, eq)), "for"))
            return trim(pair.substr(eq + 1));
        if (semi == std::string_view::npos)
            break;
        element.remove_prefix(semi + 1);
    }
    return {};
}

} // namespace

bool TrustedProxies::contains(const IpAddress& a) const
{
    for (const auto& r : m_ranges)
        if (r.contains(a))
            return true;
    return false;
}

std::optional<IpAddress> parseForwardedAddress(std::string_view e)
{
    e = trim(e);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"')
        e = e.substr(1, e.size() - 2);
    if (e.empty())
        return std::nullopt;
    if (e.front() == '[') {  // [v6] or [v6]:port
        const auto close = e.find(']');
        if (close == std::string_view::npos)
            return std::nullopt;
        return IpAddress::parse(e.substr(1, close - 1));
    }
    // IPv4 with a port ("192.0.2.1:8080"): exactly one colon.
    const auto colon = e.find(':');
    if (colon != std::string_view::npos && e.find(':', colon + 1) == std::string_view::npos)
        e = e.substr(0, colon);
    return IpAddress::parse(e);
}

ClientIdentity resolveClient(const IpAddress& peer, std::string_view xff, std::string_view forwarded, const TrustedProxies& trusted,
                             bool explain)
{
    ClientIdentity id;
    id.client = peer;
    if (trusted.empty() || !trusted.contains(peer)) {
        if (explain)
            id.derivation = "peer " + peer.toString() + (trusted.empty() ? "" : " (not a trusted proxy: forwarding headers ignored)");
        return id;
    }
    std::vector<std::string_view> hops;
    const char* header = "X-Forwarded-For";
    if (!trim(xff).empty()) {
        hops = splitList(xff);
    } else if (!trim(forwarded).empty()) {
        header = "Forwarded";
        for (auto element : splitList(forwarded))
            hops.push_back(forwardedFor(element));
    }
    if (explain)
        id.derivation = "peer " + peer.toString() + " (trusted)";
    // Right to left: skip trusted hops; the first untrusted one is the client.
    // An unparseable hop ends the walk: whoever wrote it is not to be believed,
    // so the client is the last hop we could verify.
    for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
        auto a = parseForwardedAddress(*it);
        if (!a) {
            if (explain)
                id.derivation += std::string(" -> ") + header + " \"" + std::string(*it) + "\" unreadable, stopped";
            break;
        }
        id.client = *a;
        id.viaProxy = true;
        if (explain)
            id.derivation += std::string(" -> ") + header + " " + a->toString();
        if (!trusted.contains(*a))
            break;
        if (explain)
            id.derivation += " (trusted)";
    }
    return id;
}

} // namespace Floodgate::Http
