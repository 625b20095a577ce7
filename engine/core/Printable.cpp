// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Printable.h"

#include "core/Utf8.h"

#include <cstdint>

namespace Floodgate::Core {

namespace {

constexpr char HEX_DIGITS[] = "0123456789ABCDEF";

// The code point of the valid UTF-8 character of `length` (2-4) bytes at `s`.
std::uint32_t codePoint(const char* s, std::size_t length)
{
    const auto b = [s](std::size_t i) { return std::uint32_t(static_cast<unsigned char>(s[i])); };
    std::uint32_t cp = b(0) & (length == 2 ? 0x1Fu : length == 3 ? 0x0Fu : 0x07u);
    for (std::size_t i = 1; i < length; ++i)
        cp = (cp << 6) | (b(i) & 0x3Fu);
    return cp;
}

// Valid characters a terminal or a viewer obeys rather than shows.
bool isControl(std::uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F)          // C1
        || (cp >= 0x2028 && cp <= 0x2029)      // line and paragraph separators
        || (cp >= 0x202A && cp <= 0x202E)      // bidi embeddings and overrides
        || (cp >= 0x2066 && cp <= 0x2069);     // bidi isolates
}

void appendByte(std::string& out, unsigned char b)
{
    out += "\\x";
    out += HEX_DIGITS[b >> 4];
    out += HEX_DIGITS[b & 0xF];
}

void appendCodePoint(std::string& out, std::uint32_t cp)
{
    char digits[8];
    std::size_t n = 0;
    do {
        digits[n++] = HEX_DIGITS[cp & 0xF];
        cp >>= 4;
    } while (cp != 0);
    out += "\\u{";
    while (n > 0)
        out += digits[--n];
    out += '}';
}

} // namespace

void appendPrintable(std::string& out, std::string_view s)
{
    out.reserve(out.size() + s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        // Most text is printable ASCII: copy each such run whole.
        std::size_t run = i;
        while (run < s.size() && static_cast<unsigned char>(s[run]) >= 0x20 && static_cast<unsigned char>(s[run]) < 0x7F)
            ++run;
        out.append(s.data() + i, run - i);
        i = run;
        if (i == s.size())
            break;
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80) {  // C0 or DEL
            switch (b) {
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default: appendByte(out, b);
            }
            ++i;
            continue;
        }
        const std::size_t length = utf8SequenceLength(s.substr(i));
        if (length == 0) {
            appendByte(out, b);
            ++i;
            continue;
        }
        const std::uint32_t cp = codePoint(s.data() + i, length);
        if (isControl(cp))
            appendCodePoint(out, cp);
        else
            out.append(s.data() + i, length);
        i += length;
    }
}

std::string printable(std::string_view s)
{
    std::string out;
    appendPrintable(out, s);
    return out;
}

} // namespace Floodgate::Core
