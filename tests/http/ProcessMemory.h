// SPDX-License-Identifier: GPL-3.0-or-later
// A process's resident memory from /proc/<pid>/status, for the tests that
// prove a body is streamed rather than held: VmRSS now, VmHWM the peak since
// the last resetPeak() (Linux 4.0+, /proc/<pid>/clear_refs "5").
#pragma once

#include "Sanitizers.h"

#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace FloodgateTest {

// Under a sanitizer resident memory no longer says what the code holds
// (ASan keeps freed memory in a quarantine, TSan adds shadow memory for
// every byte touched): the bounds are checked in normal builds only.
inline constexpr bool residentMemoryIsMeaningful = !Sanitized;

// Kilobytes of `key` ("VmRSS", "VmHWM") for `pid` (0: this process); -1 when unreadable.
inline std::int64_t memoryKb(pid_t pid, const std::string& key)
{
    std::ifstream in(pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with(key + ":"))
            return std::strtoll(line.c_str() + key.size() + 1, nullptr, 10);
    return -1;
}

// Starts a new peak: VmHWM becomes VmRSS.
inline bool resetPeak(pid_t pid)
{
    std::ofstream out(pid == 0 ? std::string("/proc/self/clear_refs") : "/proc/" + std::to_string(pid) + "/clear_refs");
    out << "5";
    out.flush();
    return bool(out);
}

} // namespace FloodgateTest
