// SPDX-License-Identifier: GPL-3.0-or-later
// Address and CIDR parsing (engine/core/Address.h): never crashes, says why
// it refused, and whatever it accepts prints back as text that parses to the
// same value (the console, the lists and the API all round-trip through it).
#include "core/Address.h"
#include "FuzzCheck.h"

#include <cstdint>
#include <string_view>

using namespace Floodgate::Core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string why;
    if (const auto a = IpAddress::parse(text, &why)) {
        const auto again = IpAddress::parse(a->toString());
        FUZZ_CHECK(again && *again == *a);
        FUZZ_CHECK(a->masked(128) == *a);
        FUZZ_CHECK(a->masked(0) == IpAddress());
        const IpAddress key = countingKey(*a, 64);
        FUZZ_CHECK(a->isV4() ? key == *a : key == a->masked(64));
    } else {
        FUZZ_CHECK(!why.empty());
    }
    why.clear();
    if (const auto c = Cidr::parse(text, &why)) {
        const auto again = Cidr::parse(c->toString());
        FUZZ_CHECK(again && *again == *c);
        FUZZ_CHECK(c->contains(c->address()));
        FUZZ_CHECK(c->prefixLength() >= 0 && c->prefixLength() <= (c->isV4() ? 32 : 128));
    } else {
        FUZZ_CHECK(!why.empty());
    }
    return 0;
}
