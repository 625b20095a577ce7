// SPDX-License-Identifier: GPL-3.0-or-later
#include "wire/Csv.h"

namespace Floodgate::Wire::Csv {

namespace {

// What a spreadsheet takes as the start of a formula (OWASP): = + - @, and
// a tab or CR, which some strip before looking at the next character.
constexpr std::string_view FORMULA_STARTS = "=+-@\t\r";

bool blank(std::string_view s)
{
    return s.find_first_not_of(" \t") == std::string_view::npos;
}

} // namespace

void appendField(std::string& out, std::string_view field)
{
    const bool defuse = !field.empty() && FORMULA_STARTS.find(field.front()) != std::string_view::npos;
    const bool quote = field.find_first_of(",\"\r\n") != std::string_view::npos;
    if (quote)
        out += '"';
    if (defuse)
        out += '\'';
    if (!quote) {
        out += field;
        return;
    }
    for (char c : field) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
}

std::string restoreField(std::string field)
{
    if (field.size() >= 2 && field.front() == '\'' && FORMULA_STARTS.find(field[1]) != std::string_view::npos)
        field.erase(0, 1);
    return field;
}

bool read(std::string_view text, std::vector<Record>& out, std::string& error)
{
    std::size_t i = 0, line = 1;
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        i = 3;  // a UTF-8 byte order mark from a spreadsheet
    while (i < text.size()) {
        Record r;
        r.line = line;
        std::string field;
        bool quoted = false, wasQuoted = false;
        while (true) {
            if (i >= text.size()) {
                if (quoted) {
                    error = "line " + std::to_string(r.line) + ": a quoted field is not closed";
                    return false;
                }
                r.fields.push_back(std::move(field));
                break;
            }
            const char c = text[i];
            if (quoted) {
                if (c == '"') {
                    if (i + 1 < text.size() && text[i + 1] == '"') {
                        field += '"';
                        i += 2;
                    } else {
                        quoted = false;
                        ++i;
                    }
                } else {
                    if (c == '\n')
                        ++line;
                    field += c;
                    ++i;
                }
                continue;
            }
            if (c == '"' && field.empty() && !wasQuoted) {
                quoted = wasQuoted = true;
                ++i;
            } else if (c == ',') {
                r.fields.push_back(std::move(field));
                field.clear();
                wasQuoted = false;
                ++i;
            } else if (c == '\r' || c == '\n') {
                r.fields.push_back(std::move(field));
                i += (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
                ++line;
                break;
            } else {
                field += c;
                ++i;
            }
        }
        if (!(r.fields.size() == 1 && blank(r.fields[0])))
            out.push_back(std::move(r));
    }
    return true;
}

} // namespace Floodgate::Wire::Csv
