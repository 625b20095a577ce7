// SPDX-License-Identifier: MIT
// The forwarding-header parser (engine/http/ClientIdentity.h): any
// X-Forwarded-For / Forwarded text from a trusted proxy. Never crashes; with
// no usable hop the client is the peer; explaining the derivation never
// changes the result; an untrusted peer's headers are never read; and every
// address taken out of an element prints back to itself.
#include "ClientIdentity.h"
#include "FuzzCheck.h"

#include <cstdint>
#include <string_view>

using namespace Floodgate;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    // First line: X-Forwarded-For; the rest: Forwarded.
    const auto nl = input.find('\n');
    const std::string_view xff = input.substr(0, nl);
    const std::string_view forwarded = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);

    static const Http::TrustedProxies trusted({*Core::Cidr::parse("10.0.0.0/8"), *Core::Cidr::parse("fd00::/8"),
                                               *Core::Cidr::parse("127.0.0.1/32")});
    const Core::IpAddress peer = *Core::IpAddress::parse("10.1.2.3");
    const Http::ClientIdentity plain = Http::resolveClient(peer, xff, forwarded, trusted, false);
    const Http::ClientIdentity explained = Http::resolveClient(peer, xff, forwarded, trusted, true);
    if (!plain.viaProxy)
        FUZZ_CHECK(plain.client == peer);
    // Explaining changes nothing but the explanation.
    FUZZ_CHECK(explained.client == plain.client && explained.viaProxy == plain.viaProxy);
    FUZZ_CHECK(!explained.derivation.empty() && plain.derivation.empty());
    // An untrusted peer's headers are never read.
    const Core::IpAddress stranger = *Core::IpAddress::parse("203.0.113.9");
    FUZZ_CHECK(Http::resolveClient(stranger, xff, forwarded, trusted).client == stranger);

    // Each element on its own.
    std::string_view rest = xff;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (const auto a = Http::parseForwardedAddress(rest.substr(0, comma)))
            FUZZ_CHECK(Core::IpAddress::parse(a->toString()) == a);
        if (comma == std::string_view::npos)
            break;
        rest.remove_prefix(comma + 1);
    }
    return 0;
}
