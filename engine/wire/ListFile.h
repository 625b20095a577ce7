// SPDX-License-Identifier: GPL-3.0-or-later
// Safelist and blocklist files for import and export, as CSV (RFC 4180, a
// header line) or JSON (the API's entry shape). Parsing reports every line
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

enum class Format { Csv, Json };
// By extension: ".csv" or ".json" (case-insensitive).
std::optional<Format> formatForPath(std::string_view path);

struct Rejected {
    std::size_t line = 0;  // CSV: the line the record starts on; JSON: the entry's position (1-based)
    std::string why;
};

struct Parsed {
    std::string fileError;  // the file as a whole cannot be read (no header, malformed JSON)
    std::vector<ListedEntry> rows;  // source Import; createdBy from the file when it has one
    std::vector<Rejected> rejected;
    bool ok() const { return fileError.empty() && rejected.empty(); }
};

// CSV header: list,address[,reason][,expires_at | ttl][,created_by] — other
// columns of an export (source, created_at, expires_in) are accepted and
// ignored. expires_at empty = permanent; ttl empty = the default TTL; with
// neither column, the default TTL.
Parsed parse(std::string_view content, Format format, Millis now, Millis defaultTtlMs);

std::string format(const std::vector<ListedEntry>& entries, Format format, Millis now);

inline constexpr const char* CsvHeader = "list,address,reason,source,created_at,created_by,expires_at";

} // namespace Floodgate::Wire::ListFile
