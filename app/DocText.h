// SPDX-License-Identifier: GPL-3.0-or-later
// The parts of the man page and of docs/ that are made from the tables
// (app/OptionTable.h, app/ExitCode.h, app/StartLines.h): each a region
// between two marker lines of a checked-in file,
//   ; generated: NAME ...        ; end generated: NAME          (scdoc)
//   <!-- generated: NAME ... --> <!-- end generated: NAME -->  (Markdown)
// `floodgate-docs SOURCE_DIR` (the `docs` build target) writes them;
// tests/app/test_docs fails while a checked-in region differs.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace Floodgate::App {

struct DocRegion {
    std::string file;  // from the source tree's root: "resources/man/floodgate.1.scd"
    std::string name;  // "options"
    std::string text;  // the lines between the markers, each ending in '\n'
};

// Every generated region, in file order.
std::vector<DocRegion> docRegions();

// `document` with the region's text between its markers; nullopt (and
// *why) when the markers are missing or out of order.
std::optional<std::string> withRegion(const std::string& document, const DocRegion& region, std::string* why);

// The text between the region's markers in `document` (nullopt: no markers).
std::optional<std::string> regionIn(const std::string& document, const DocRegion& region);

} // namespace Floodgate::App
