// SPDX-License-Identifier: GPL-3.0-or-later
// UTF-8 as RFC 3629 defines it, for the bytes requests bring (a user agent,
// a path, a customer id may be anything): where a valid character starts
// and ends, and where a field may be cut without splitting one. Header-only
// and allocation-free: used on the request path (ShortName, the limiter
// log's fixed-size records) and by the JSON writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace Floodgate::Core {

// The length (1-4) of the valid UTF-8 character at the start of `s`; 0 when
// there is none: empty, a stray continuation byte, an overlong form, a
// surrogate (U+D800-DFFF), beyond U+10FFFF, or a character cut short.
inline std::size_t utf8SequenceLength(std::string_view s)
{
    if (s.empty())
        return 0;
    const auto b = static_cast<unsigned char>(s[0]);
    if (b < 0x80)
        return 1;
    std::size_t length;
    std::uint32_t cp;
    if (b >= 0xC2 && b <= 0xDF) {
        length = 2;
        cp = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
        length = 3;
        cp = b & 0x0Fu;
    } else if (b >= 0xF0 && b <= 0xF4) {
        length = 4;
        cp = b & 0x07u;
    } else {
        return 0;  // a continuation byte, C0/C1 (always overlong) or F5-FF
    }
    if (s.size() < length)
        return 0;
    for (std::size_t i = 1; i < length; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (c & 0x3Fu);
    }
    const bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return length;
}

// How many bytes of `s` to keep so that at most `max` are kept and the cut
// does not fall inside a character: a multi-byte character that would not
// fit whole is dropped whole. (Bytes that are no valid character are kept
// as they are; whoever writes them out replaces them.)
inline std::size_t utf8Cut(std::string_view s, std::size_t max)
{
    if (s.size() <= max)
        return s.size();
    // Step back over at most three continuation bytes to the start of the
    // character that the cut would split.
    std::size_t start = max;
    while (start > 0 && max - start < 3 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
        --start;
    const std::size_t length = utf8SequenceLength(s.substr(start));
    return length != 0 && start + length > max ? start : max;
}

} // namespace Floodgate::Core
