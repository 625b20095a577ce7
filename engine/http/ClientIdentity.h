// SPDX-License-Identifier: MIT
// Who is the client? The TCP peer, unless the peer is a trusted proxy: then
// X-Forwarded-For (or Forwarded) is walked from the right, skipping trusted
// hops; the first untrusted address is the client. The leftmost value is never
// believed on its own, and headers from an untrusted peer are ignored entirely.
#pragma once

#include "Address.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Http {

class TrustedProxies {
public:
    TrustedProxies() = default;
    explicit TrustedProxies(std::vector<Core::Cidr> ranges) : m_ranges(std::move(ranges)) {}
    bool contains(const Core::IpAddress& a) const;
    bool empty() const { return m_ranges.empty(); }
    const std::vector<Core::Cidr>& ranges() const { return m_ranges; }

private:
    std::vector<Core::Cidr> m_ranges;
};

struct ClientIdentity {
    Core::IpAddress client;
    bool viaProxy = false;   // the address came from forwarding headers
    std::string derivation;  // "peer 10.0.0.2 (trusted) -> X-Forwarded-For 203.0.113.7": the console's "why"
};

// xForwardedFor: every X-Forwarded-For value in order, joined with ", ";
// forwarded: every Forwarded value joined with ", " (used when there is no X-Forwarded-For).
ClientIdentity resolveClient(const Core::IpAddress& peer, std::string_view xForwardedFor, std::string_view forwarded,
                             const TrustedProxies& trusted, bool explain = false);

// One address out of a forwarding header element: "203.0.113.7", " 203.0.113.7:4711",
// "[2001:db8::1]:443", "\"[2001:db8::1]\"" (Forwarded quotes). Empty result when unparseable.
std::optional<Core::IpAddress> parseForwardedAddress(std::string_view element);

} // namespace Floodgate::Http
