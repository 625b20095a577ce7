// SPDX-License-Identifier: GPL-3.0-or-later
// The configuration file's text, read safely, and how a value is shown in
// an error. Only a regular file is read: a FIFO would block open() until a
// writer came (and the server with it, deaf to SIGTERM), a device or a
// socket is no configuration. The file and each value are bounded, so a
// huge line costs neither memory nor a screenful of error.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::App {

// A configuration file is a few dozen lines; one larger than this is
// refused by its size, before a byte of it is read.
inline constexpr std::size_t MaxConfigFileBytes = 4 * 1024 * 1024;
// The longest value an option takes, from the file or the command line: a
// path (PATH_MAX is 4096 with its NUL), a URL, an address.
inline constexpr std::size_t MaxValueBytes = 4096;
// How much of a value an error quotes; a longer one is cut with "…" and
// its length in bytes.
inline constexpr std::size_t ShownValueBytes = 48;

// Reads `path` into *text: opened without blocking (O_NONBLOCK: a FIFO
// with no writer opens at once) and refused unless a regular file of at
// most MaxConfigFileBytes. On failure the reason, for "FILE: reason"
// ("no such file", "not a regular file (a FIFO)", "5242893 bytes, over
// the 4 MiB a configuration file may hold", "Permission denied"); *error
// is the errno of a failed open() or read() (ENOENT: not there), else 0.
std::optional<std::string> readConfigFile(const std::string& path, std::string* text, int* error = nullptr);

// `value` for an error line: control bytes written \xHH (a NUL would end
// the line printf writes), at most ShownValueBytes of it followed by "…"
// and " (N bytes)". `quote`: inside double quotes, the length after them.
std::string shownValue(std::string_view value, bool quote = false);

// The whole error line with its control bytes written \xHH: what a parser
// quoted of a value stays one printable line.
std::string printable(std::string_view line);

} // namespace Floodgate::App
