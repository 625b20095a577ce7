// SPDX-License-Identifier: GPL-3.0-or-later
// The one escaper for text from outside (a request, a log line, Redis, the
// database) on its way to a person: stderr, the terminal, limiter.log.
// Such text may hold bytes a terminal obeys: a line break forges a log line
// ("floodgate: SIGHUP: ..."), ESC ]0;...BEL retitles the window, ESC [2J
// clears it, U+202E turns the rest of the line around. They are written as
// visible escapes; valid printable UTF-8 is kept as it is. For display
// only: a backslash is kept too, so the escapes cannot be undone (JSON,
// which can, has its own writer: Wire::Json).
#pragma once

#include <string>
#include <string_view>

namespace Floodgate::Core {

// `s` with
//  - \n, \r, \t for those, \xNN for the other C0 controls and DEL;
//  - \xNN for each byte that starts no valid UTF-8 character (Utf8.h);
//  - \u{NN} for the C1 controls U+0080-009F (a C1 CSI, U+009B, is ESC [ to
//    some terminals), the bidi controls U+202A-202E and U+2066-2069 and the
//    line and paragraph separators U+2028-2029 (line breaks to some viewers).
// Hex digits upper case: "\x1B]0;t\x07" -> `\x1B]0;t\x07`.
std::string printable(std::string_view s);

// The same, appended to `out`.
void appendPrintable(std::string& out, std::string_view s);

} // namespace Floodgate::Core
