// SPDX-License-Identifier: GPL-3.0-or-later
// Who is the client? The TCP peer, unless the peer is a trusted proxy: then
// the one forwarding header the operator names (--real-ip-header, like
// nginx's real_ip_header: X-Forwarded-For by default, Forwarded per RFC
// 7239, X-Real-IP or any other) is walked from the right, skipping trusted
// hops; the first untrusted address is the client. Every other forwarding
// header is ignored: behind a proxy that writes only Forwarded, an
// X-Forwarded-For is whatever the client typed. The leftmost value is never
// believed on its own, and headers from an untrusted peer are ignored.
#pragma once

#include "core/Address.h"
#include "core/Rules.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Http {

inline constexpr const char* DefaultRealIpHeader = "X-Forwarded-For";

// The proxies whose forwarding header is believed, and which header that is.
class TrustedProxies {
public:
    TrustedProxies() = default;
    explicit TrustedProxies(std::vector<Core::Cidr> ranges, std::string header = DefaultRealIpHeader);
    bool contains(const Core::IpAddress& a) const;
    bool empty() const { return m_ranges.empty(); }
    const std::vector<Core::Cidr>& ranges() const { return m_ranges; }
    const std::string& header() const { return m_header; }
    // The header is `Forwarded` (RFC 7239 syntax); otherwise a comma-separated list of addresses.
    bool forwardedSyntax() const { return m_forwarded; }

private:
    std::vector<Core::Cidr> m_ranges;
    std::string m_header = DefaultRealIpHeader;
    bool m_forwarded = false;
};

struct ClientIdentity {
    Core::IpAddress client;
    // What the trusted proxies reported, left to right, as an
    // X-Forwarded-For value ("203.0.113.7, 10.0.0.2"; a Forwarded header's
    // for= nodes, "unknown" where an element has none): what proxy mode
    // forwards before the peer and what an event shows. Empty when the
    // peer is not trusted or sent no such header.
    std::string chain;
};

// `headerValue`: every value of the trusted header in order, joined with ", "
// (empty when the peer is not a trusted proxy or sent none).
//
// Walking from the right, a hop that is not an address (garbage, an
// obfuscated `_hidden`, `unknown`, a Forwarded element without a for= or
// not following the grammar) stops the walk: the client is the last hop a
// trusted proxy vouched for (the peer itself when it is the rightmost).
// Whoever wrote that hop hid its client, and nothing further left can be
// believed; keying on the proxy that hid it is the one choice a client
// cannot steer.
ClientIdentity resolveClient(const Core::IpAddress& peer, std::string headerValue, const TrustedProxies& trusted);

// RFC 7239 section 4: the for= node of each element of a Forwarded value,
// left to right, with quotes and escapes taken off ("[2001:db8::1]:4711").
// Parameter names are case-insensitive; an element may carry several pairs
// (for=...;proto=https;by=...). nullopt for an element without exactly one
// for=, or one that does not follow the grammar (an unclosed quote, a pair
// without "="). Empty elements (", ,") are skipped as RFC 9110 asks.
std::vector<std::optional<std::string>> forwardedForNodes(std::string_view value);

// One address out of a hop: "203.0.113.7", " 203.0.113.7:4711",
// "[2001:db8::1]:443", "\"[2001:db8::1]\"". nullopt when it is not an
// address (including "unknown" and obfuscated "_hidden" identifiers).
std::optional<Core::IpAddress> parseForwardedAddress(std::string_view hop);

// An HTTP field name (RFC 9110 token): what --real-ip-header accepts.
using Core::isHeaderName;

} // namespace Floodgate::Http
