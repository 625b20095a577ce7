// SPDX-License-Identifier: GPL-3.0-or-later
// The configuration file's text, read safely. Only a regular file is read:
// a FIFO would block open() until a writer came (and the server with it,
// deaf to SIGTERM), a device or a socket is no configuration. The file is
// bounded, so a huge line costs no memory.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::App {

// A configuration file is a few dozen lines; one larger than this is
// refused by its size, before a byte of it is read.
inline constexpr std::size_t MaxConfigFileBytes = 4 * 1024 * 1024;

// Reads `path` into *text: opened without blocking (O_NONBLOCK: a FIFO
// with no writer opens at once) and refused unless a regular file of at
// most MaxConfigFileBytes. On failure the reason, for "FILE: reason"
// ("no such file", "not a regular file (a FIFO)", "5242893 bytes, over
// the 4 MiB a configuration file may hold", "Permission denied"); *error
// is the errno of a failed open() or read() (ENOENT: not there), else 0.
std::optional<std::string> readConfigFile(const std::string& path, std::string* text, int* error = nullptr);

} // namespace Floodgate::App
