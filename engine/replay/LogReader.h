// SPDX-License-Identifier: GPL-3.0-or-later
// A log file read line by line in bounded memory: plain or gzip (by its
// magic bytes, so a rotated "access.log.1.gz" and a gzip without the
// suffix both work; concatenated gzip members as logrotate may leave them
// are read in a row). A line longer than MaxLineBytes is skipped up to its
// line break without being held (a binary or sparse file is not a log).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace Floodgate::Replay {

class LogReader {
public:
    static constexpr std::size_t MaxLineBytes = 64 * 1024;

    LogReader();
    ~LogReader();
    LogReader(const LogReader&) = delete;
    LogReader& operator=(const LogReader&) = delete;

    // Opens `path`; false with *why (the system's reason) when it cannot be read.
    bool open(const std::string& path, std::string* why);
    bool gzip() const;
    std::uint64_t sizeOnDisk() const;  // the file's size (compressed for gzip)
    std::uint64_t bytesRead() const;   // of sizeOnDisk(): how far reading has got

    enum class Next { Line, TooLong, End, Error };
    // The next line without its line break (and a CR before it). TooLong:
    // line `lineNumber()` was longer than MaxLineBytes and was skipped.
    // Error: reading failed (error() says why: an I/O error, gzip data that
    // is corrupt or ends early); the lines before it were whole.
    Next next(std::string_view& line);
    std::uint64_t lineNumber() const;  // of the line last returned (1-based)
    const std::string& error() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace Floodgate::Replay
