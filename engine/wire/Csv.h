// SPDX-License-Identifier: GPL-3.0-or-later
// CSV as Floodgate writes and reads it (RFC 4180), for every file that is
// CSV: list exports and imports, limiter.log. One writer, so every field
// written anywhere is quoted and defused the same way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Wire::Csv {

// Appends one field. A field that starts with = + - @, a tab or a CR gets a
// leading apostrophe: a spreadsheet would run it as a formula (a user agent
// "=HYPERLINK(...)" typed by a visitor, OWASP's "CSV injection"). Then
// RFC 4180: quoted when it holds a comma, a quote, CR or LF, quotes doubled.
void appendField(std::string& out, std::string_view field);

// Takes off the apostrophe appendField put before such a field (on import).
std::string restoreField(std::string field);

struct Record {
    std::size_t line = 0;  // the line the record starts on (1-based)
    std::vector<std::string> fields;
};

// RFC 4180: fields separated by commas, records by CRLF or LF; a quoted
// field may hold commas, quotes (doubled) and line breaks. A UTF-8 byte
// order mark is skipped, blank lines are left out. False with `error` when a
// quoted field is not closed.
bool read(std::string_view text, std::vector<Record>& out, std::string& error);

} // namespace Floodgate::Wire::Csv
