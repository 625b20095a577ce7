// SPDX-License-Identifier: GPL-3.0-or-later
// What the replay suites share: files written into a temporary folder
// (plain and gzip) and combined-format lines at a given time.
#pragma once

#include "wire/Codec.h"

#include <zlib.h>

#include <ctime>
#include <fstream>
#include <string>

namespace FloodgateTest {

inline void writeFile(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

inline bool writeGzip(const std::string& path, const std::string& text)
{
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f)
        return false;
    const int n = gzwrite(f, text.data(), unsigned(text.size()));
    return gzclose(f) == Z_OK && n == int(text.size());
}

// "22/Nov/2026:05:00:03 +0000" for Unix milliseconds (the second it falls in).
inline std::string clfTime(Floodgate::Core::Millis ms)
{
    const std::time_t t = std::time_t(Floodgate::Core::floorDiv(ms, 1000));
    std::tm tm{};
    gmtime_r(&t, &tm);
    static const char* const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%02d/%s/%04d:%02d:%02d:%02d +0000", tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
                  tm.tm_min, tm.tm_sec);
    return buf;
}

inline std::string combinedLine(const std::string& client, Floodgate::Core::Millis ms, const std::string& target, int status = 200,
                                const std::string& agent = "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0")
{
    return client + " - - [" + clfTime(ms) + "] \"GET " + target + " HTTP/1.1\" " + std::to_string(status) + " 512 \"-\" \"" + agent
         + "\"\n";
}

// 2026-11-22T05:00:00Z: every generated log starts here.
inline Floodgate::Core::Millis logStart()
{
    return *Floodgate::Wire::Codec::parseTime("2026-11-22T05:00:00Z", nullptr);
}

} // namespace FloodgateTest
