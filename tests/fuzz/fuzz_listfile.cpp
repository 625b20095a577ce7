// SPDX-License-Identifier: GPL-3.0-or-later
// The list-file reader (engine/core/ListFile.h), CSV or JSON by the first
// byte (a "CSV" whose first line is no header is read as a plain address
// file): never crashes, every refusal has a reason, and a file it accepts
// whole exports to a file that imports again whole, with the same entries
// (source, creation time and creator included).
#include "FuzzCheck.h"
#include "wire/ListFile.h"

#include <cstdint>
#include <string_view>

using namespace Floodgate::Core;
using namespace Floodgate::Wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const ListFile::Format format = (data[0] & 1) ? ListFile::Format::Json : ListFile::Format::Csv;
    const std::string_view content(reinterpret_cast<const char*>(data + 1), size - 1);
    const Millis now = 1'800'000'000'000;
    const Millis ttl = 7LL * 24 * 3600 * 1000;
    const ListFile::Parsed parsed = ListFile::parse(content, format, now, ttl);
    for (const auto& r : parsed.rejected)
        FUZZ_CHECK(!r.why.empty() && r.line > 0);
    if (!parsed.ok())
        return 0;
    const std::string exported = ListFile::format(parsed.rows, format, now);
    const ListFile::Parsed again = ListFile::parse(exported, format, now, ttl);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again.rows.size() == parsed.rows.size());
    for (std::size_t i = 0; i < again.rows.size(); ++i) {
        FUZZ_CHECK(again.rows[i].kind == parsed.rows[i].kind);
        FUZZ_CHECK(again.rows[i].entry.range == parsed.rows[i].entry.range);
        FUZZ_CHECK(again.rows[i].entry.reason == parsed.rows[i].entry.reason);
        FUZZ_CHECK(again.rows[i].entry.expiresAt == parsed.rows[i].entry.expiresAt);
        FUZZ_CHECK(again.rows[i].entry.source == parsed.rows[i].entry.source);
        FUZZ_CHECK(again.rows[i].entry.createdAt == parsed.rows[i].entry.createdAt);
        FUZZ_CHECK(again.rows[i].entry.createdBy == parsed.rows[i].entry.createdBy);
    }
    return 0;
}
