// SPDX-License-Identifier: MIT
// Start-up with a big database, and the price of one operator edit on it:
//   1. writes N list entries (99 % /32 blocklist, 1 % /24, plus 1,000
//      safelist entries) into a new database in a temporary folder;
//   2. R times: open it (integrity check included), load everything, build
//      the engine and publish the lists, as floodgate does at start;
//   3. with everything loaded and the writer running: M single "block this
//      address" writes, each timed from submit to "committed and published".
// Run by scripts/bench-storage; prints the medians.
//
//   bench_storage [ENTRIES=100000] [RUNS=5] [EDITS=20]
#include "core/Engine.h"
#include "storage/Store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace Floodgate;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

Core::ListEntry entry(std::uint32_t v4, int prefix128)
{
    Core::ListEntry e;
    e.range = Core::Cidr(Core::IpAddress::fromV4(v4), prefix128);
    e.reason = "imported from the abuse feed";
    e.expiresAt = Core::NeverExpires;
    return e;
}

} // namespace

int main(int argc, char** argv)
{
    const std::size_t entries = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100'000;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
    const int edits = argc > 3 ? std::atoi(argv[3]) : 20;
    char tmpl[] = "/tmp/floodgate-bench-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string path = dir + "/floodgate.db";
    const Core::SystemClock clock;
    Storage::StoreOptions so;
    so.path = path;

    {
        Storage::OpenFailure failure;
        auto store = Storage::Store::open(so, clock, &failure);
        if (!store) {
            std::fprintf(stderr, "bench_storage: %s\n", failure.message.c_str());
            return 1;
        }
        std::vector<Core::ListedEntry> rows;
        const std::size_t ranges = entries / 100;
        for (std::size_t i = 0; i < entries - ranges; ++i)
            rows.push_back({Core::ListKind::Blocklist, entry(0x64000000u + std::uint32_t(i) * 7u, 128)});
        for (std::size_t i = 0; i < ranges; ++i)
            rows.push_back({Core::ListKind::Blocklist, entry(0x65000000u + (std::uint32_t(i) << 8), 120)});
        for (std::uint32_t i = 0; i < 1000; ++i)
            rows.push_back({Core::ListKind::Safelist, entry(0x66000000u + i, 128)});
        store->start(nullptr);
        const auto t = Clock::now();
        const auto o = store->wait([&](auto done) { store->importEntries(std::move(rows), Storage::Actor{"bench"}, done); });
        if (!o.ok()) {
            std::fprintf(stderr, "bench_storage: import: %s\n", o.error.c_str());
            return 1;
        }
        std::printf("import of %zu entries in one transaction: %.0f ms\n", entries + 1000, msSince(t));
    }
    std::printf("database: %.1f MiB\n", double(std::filesystem::file_size(path)) / (1 << 20));

    std::vector<double> openMs, loadMs, publishMs, totalMs;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = Clock::now();
        Storage::OpenFailure failure;
        auto store = Storage::Store::open(so, clock, &failure);
        const double opened = msSince(t0);
        auto t1 = Clock::now();
        Storage::Loaded loaded = store->load();
        const double load = msSince(t1);
        t1 = Clock::now();
        Core::Engine engine(loaded.config);
        engine.setList(Core::ListKind::Safelist, std::make_shared<const Core::AddressList>(std::move(loaded.safelist)));
        engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::move(loaded.blocklist)));
        engine.restoreAutomaticBans(loaded.automatic);
        publishMs.push_back(msSince(t1));
        openMs.push_back(opened);
        loadMs.push_back(load);
        totalMs.push_back(msSince(t0));
        if (r + 1 < runs)
            continue;

        // The last run stays up for the edits.
        store->start(&engine);
        std::vector<double> editMs;
        for (int i = 0; i < edits; ++i) {
            Core::ListEntry e = entry(0x0a000000u + std::uint32_t(i), 128);
            e.expiresAt = clock.now() + 3'600'000;
            const auto t = Clock::now();
            const auto o = store->wait([&](auto done) { store->addEntry(Core::ListKind::Blocklist, e, Storage::Actor{"bench"}, done); });
            editMs.push_back(msSince(t));
            if (o.result != Storage::Result::Created) {
                std::fprintf(stderr, "bench_storage: add: %s %s\n", Storage::toString(o.result), o.error.c_str());
                return 1;
            }
        }
        store->stop();
        std::printf("one blocklist add with %zu entries loaded (commit + publish, median of %d): %.1f ms\n", entries + 1000, edits,
                    median(editMs));
    }
    std::printf("start with %zu entries (median of %d): open + integrity check %.0f ms, load %.0f ms, build and publish %.0f ms; "
                "total %.0f ms\n",
                entries + 1000, runs, median(openMs), median(loadMs), median(publishMs), median(totalMs));
    std::filesystem::remove_all(dir);
    return 0;
}
