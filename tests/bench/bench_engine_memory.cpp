// SPDX-License-Identifier: GPL-3.0-or-later
// Bytes per tracked key: the RSS delta of tracking 1,000,000 distinct clients
// with the default rules (6/3 s lockout + 300/5 min + 600/30 min, and the
// live view), all seen within one second, so the pool of live records is at
// its bound. Then where the bytes go: the layout of a slot, the live records
// and the index, from a table filled with the same keys.
#include "core/Engine.h"
#include "core/EngineImpl.h"

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

    // The breakdown (one "name value" per line, as above).
    const auto compiled = compile(std::make_shared<const EngineConfig>(config), false);
    KeyTable table(keys, compiled->tableStride, Tuning::liveRecordsFor(keys));
    for (std::size_t i = 1; i <= keys; ++i) {
        const IpAddress a = IpAddress::fromV4(0x0a000000u + std::uint32_t(i));
        table.with(TableKey{a.hi(), a.lo(), 0, 0, 0}, compiled->clientSignature, now, compiled->clientKeepMs,
                   [&](KeyTable::Header&, std::uint32_t*, bool, KeyTable::Live& live) { live.count(now, i); });
    }
    std::printf("layout_header_bytes %zu\n", sizeof(KeyTable::Header));
    for (const LevelSpec& l : compiled->clientLevels)
        std::printf("layout_level_%s_bytes %d\n", std::string(l.name.view()).c_str(), 4 * int(l.cells));
    std::printf("layout_slot_bytes %zu\n", table.bytesPerSlot());
    const std::size_t records = table.liveRecordsPerShard() * table.shardCount();
    std::printf("layout_live_record_bytes %zu\nlayout_live_records_bound %zu\nlayout_live_records_held %zu\n", sizeof(LiveRecord),
                records, table.liveRecordsHeld());
    std::printf("layout_live_bytes_per_key %.1f\n", double(records * sizeof(LiveRecord)) / double(keys));
    std::printf("layout_index_bytes_per_key %.1f\n", double(table.indexPositions() * sizeof(std::uint32_t)) / double(keys));
    return tracked >= keys ? 0 : 1;
}
