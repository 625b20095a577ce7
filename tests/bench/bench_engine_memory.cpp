// SPDX-License-Identifier: GPL-3.0-or-later
// Bytes per tracked key: the RSS delta of tracking 1,000,000 distinct clients
// with the default rules (the live ring + 6/3 s lockout + 300/5 min + 600/30 min).
#include "core/Engine.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace Floodgate::Core;

namespace {

long rssBytes()
{
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

} // namespace

int main(int argc, char** argv)
{
    const std::size_t keys = argc > 1 ? std::stoul(argv[1]) : 1'000'000;
    EngineConfig config = defaultConfig();
    config.settings.maxTrackedKeys = keys;
    Engine engine(config);
    const Millis now = 1'790'000'000'000;
    RequestFacts f;
    f.method = "GET";
    f.path = "/";
    // Warm up allocator and the engine's own fixed structures with one key.
    f.client = f.peer = IpAddress::fromV4(0x01000000u);
    engine.decide(f, now);
    const long before = rssBytes();
    for (std::size_t i = 1; i <= keys; ++i) {
        f.client = f.peer = IpAddress::fromV4(0x0a000000u + std::uint32_t(i));
        engine.decide(f, now + Millis(i / 1000));
    }
    const long after = rssBytes();
    const auto tracked = engine.counters(now + Millis(keys / 1000)).trackedKeys;
    std::printf("tracked_keys %llu\nrss_delta_bytes %ld\nbytes_per_key %.1f\n", (unsigned long long)tracked, after - before,
                double(after - before) / double(keys));
    return tracked >= keys ? 0 : 1;
}
