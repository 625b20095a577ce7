// SPDX-License-Identifier: GPL-3.0-or-later
// The forwarding-header parser (engine/http/ClientIdentity.h): any
// X-Forwarded-For or Forwarded text from a trusted proxy. Never crashes; the
// chain is empty exactly when the client is the peer itself or no hop was
// usable; an untrusted peer's header is never read; every address taken out
// of an element prints back to itself.
#include "http/ClientIdentity.h"
#include "FuzzCheck.h"

#include <cstdint>
#include <string>
#include <string_view>

using namespace Floodgate;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    // First line: an X-Forwarded-For value; the rest: a Forwarded value.
    const auto nl = input.find('\n');
    const std::string_view xff = input.substr(0, nl);
    const std::string_view forwarded = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);

    static const std::vector<Core::Cidr> ranges{*Core::Cidr::parse("10.0.0.0/8"), *Core::Cidr::parse("fd00::/8"),
                                                *Core::Cidr::parse("127.0.0.1/32")};
    static const Http::TrustedProxies byXff(ranges, "X-Forwarded-For");
    static const Http::TrustedProxies byForwarded(ranges, "Forwarded");
    const Core::IpAddress peer = *Core::IpAddress::parse("10.1.2.3");
    const Http::ClientIdentity a = Http::resolveClient(peer, std::string(xff), byXff);
    const Http::ClientIdentity b = Http::resolveClient(peer, std::string(forwarded), byForwarded);
    // No chain reported: the client is the peer.
    if (a.chain.empty())
        FUZZ_CHECK(a.client == peer);
    if (b.chain.empty())
        FUZZ_CHECK(b.client == peer);
    // An untrusted peer's header is never read.
    const Core::IpAddress stranger = *Core::IpAddress::parse("203.0.113.9");
    FUZZ_CHECK(Http::resolveClient(stranger, std::string(xff), byXff).client == stranger);
    FUZZ_CHECK(Http::resolveClient(stranger, std::string(forwarded), byForwarded).client == stranger);
    (void)Http::forwardedForNodes(forwarded);

    // Each element on its own.
    std::string_view rest = xff;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (const auto addr = Http::parseForwardedAddress(rest.substr(0, comma)))
            FUZZ_CHECK(Core::IpAddress::parse(addr->toString()) == addr);
        if (comma == std::string_view::npos)
            break;
        rest.remove_prefix(comma + 1);
    }
    return 0;
}
