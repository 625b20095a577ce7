// SPDX-License-Identifier: GPL-3.0-or-later
// Safelist and blocklist files for import and export, as CSV (RFC 4180, a
// header line) or JSON (the API's entry shape); for import also a plain
// file of one address or range a line (blocklist entries). Parsing reports every line
// it rejects and why, so an import can be all or nothing with a full report.
// Plain C++20 over strings; the caller reads and writes the file.
#pragma once

#include "core/AddressList.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Wire::ListFile {

using Core::ListedEntry;
using Core::Millis;

enum class Format { Csv, Json, Text };
// By extension: ".csv", ".json" or ".txt" (case-insensitive).
std::optional<Format> formatForPath(std::string_view path);
// By content, for a file whose name or Content-Type does not say: JSON when
// it starts with '[' or '{', a plain address file when its first line that
// is not blank or a '#' comment has no ',' (a CSV header has one), else CSV.
Format formatOfContent(std::string_view content);

struct Rejected {
    std::size_t line = 0;  // CSV: the line the record starts on; JSON: the entry's position (1-based)
    std::string why;
};

struct Parsed {
    std::string fileError;  // the file as a whole cannot be read (no header, malformed JSON)
    std::vector<ListedEntry> rows;  // source, createdAt and createdBy from the file when it has them
    std::vector<Rejected> rejected;
    bool ok() const { return fileError.empty() && rejected.empty(); }
};

// CSV header: list,address[,reason][,expires_at | ttl][,source][,created_at]
// [,created_by] (an export has them all) — expires_in of an export is
// accepted and ignored. expires_at empty = permanent; ttl `permanent` =
// permanent, empty = the default TTL; with neither column, the default TTL.
// source operator or import is kept, automatic (an escalation ban) becomes
// import, empty is import. A CSV whose first line is an address, not a
// header, is read as Text.
// Text: one address or CIDR range a line, '#' starting a comment, blank
// lines and surrounding whitespace ignored; each a blocklist entry with the
// default TTL and the reason "imported"; an address given twice is one entry.
Parsed parse(std::string_view content, Format format, Millis now, Millis defaultTtlMs);

// Csv or Json (Text is for import only).
std::string format(const std::vector<ListedEntry>& entries, Format format, Millis now);

inline constexpr const char* CsvHeader = "list,address,reason,source,created_at,created_by,expires_at";

} // namespace Floodgate::Wire::ListFile
