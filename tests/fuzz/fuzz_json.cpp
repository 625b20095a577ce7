// SPDX-License-Identifier: GPL-3.0-or-later
// The JSON reader (engine/core/Json.h) on any bytes: never crashes, bounded
// depth, a reason on refusal, and what it accepts dumps to a document that
// reads back to the same value.
#include "FuzzCheck.h"
#include "wire/Json.h"

#include <cstdint>
#include <string_view>

using namespace Floodgate::Core;
using namespace Floodgate::Wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string why;
    const auto doc = Json::parse(text, &why);
    if (!doc) {
        FUZZ_CHECK(!why.empty());
        return 0;
    }
    const std::string once = doc->dump();
    const auto again = Json::parse(once, &why);
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(again->dump() == once);
    return 0;
}
