// SPDX-License-Identifier: GPL-3.0-or-later
// Start-up with a big database, and the price of operator edits on it:
//   1. writes N list entries (99 % /32 blocklist, 1 % /24, plus 1,000
//      safelist entries) into a new database in a temporary folder;
//   2. what one synchronous SQLite commit costs on this disk (WAL,
//      synchronous=FULL, as the store runs; and synchronous=OFF beside it,
//      so the fsync's share shows), and one "block this address" job
//      committed by the store with no engine to publish into;
//   3. R times: open it (integrity check included), load everything, build
//      the engine and publish the lists, as floodgate does at start;
//   4. with everything loaded and the writer running: M single "block this
//      address" writes, each timed from submit to "committed and published";
//   5. the admin API on 127.0.0.1 (the same store and engine): P single-entry
//      POST /api/v1/lists/blocklist in a row on one keep-alive connection,
//      each timed to its 201 (the first on its own, then the rate), while a
//      thread calls decide() without pause; decide()'s time per call with
//      no edits, then while the POSTs stream in; then 20 POSTs each on a
//      new connection, timed from its connect (a script running curl);
//   6. the engine alone: P single-entry edits published, and one fold of the
//      edits into the list.
// Run by scripts/bench-storage; prints the medians.
//
//   bench_storage [ENTRIES=100000] [RUNS=5] [EDITS=20] [POSTS=1000]
#include "api/AdminApi.h"
#include "core/Engine.h"
#include "http/AdminServer.h"
#include "storage/Sqlite.h"
#include "storage/Store.h"

#include "HttpTestClient.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace Floodgate;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double quantile(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[std::min(v.size() - 1, std::size_t(double(v.size()) * q))];
}

double median(std::vector<double> v)
{
    return quantile(std::move(v), 0.5);
}

Core::ListEntry entry(std::uint32_t v4, int prefix128)
{
    Core::ListEntry e;
    e.range = Core::Cidr(Core::IpAddress::fromV4(v4), prefix128);
    e.reason = "imported from the abuse feed";
    e.expiresAt = Core::NeverExpires;
    return e;
}

// `edits` single "block this address" jobs through the store, one after
// the other, each timed from submit to its outcome (ms); exits on a failure.
std::vector<double> timedAdds(Storage::Store& store, int edits, std::uint32_t& nextAddress, const Core::Clock& clock)
{
    std::vector<double> ms;
    for (int i = 0; i < edits; ++i) {
        Core::ListEntry e = entry(nextAddress++, 128);
        e.expiresAt = clock.now() + 3'600'000;
        const auto t = Clock::now();
        const auto o = store.wait([&](auto done) { store.addEntry(Core::ListKind::Blocklist, e, Storage::Actor{"bench"}, done); });
        ms.push_back(msSince(t));
        if (o.result != Storage::Result::Created) {
            std::fprintf(stderr, "bench_storage: add: %s %s\n", Storage::toString(o.result), o.error.c_str());
            std::exit(1);
        }
    }
    return ms;
}

// One commit of one row, `runs` times, at the given synchronous level: the
// median in ms.
double commitMs(const std::string& path, const char* synchronous, int runs)
{
    Storage::Connection db(path, Storage::Connection::Mode::ReadWriteCreate, 5000);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(std::string("PRAGMA synchronous = ") + synchronous);
    db.exec("CREATE TABLE IF NOT EXISTS t (x TEXT)");
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        const auto t = Clock::now();
        db.exec("BEGIN IMMEDIATE; INSERT INTO t VALUES ('203.0.113.7/32 blocked by the bench'); COMMIT");
        ms.push_back(msSince(t));
    }
    return median(ms);
}

// decide() without pause on one thread, counting calls and their time, until
// stopped; read the counts between phases.
struct Decider {
    Core::Engine& engine;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> nanos{0};
    std::thread thread;

    explicit Decider(Core::Engine& e)
        : engine(e)
    {
        thread = std::thread([this] { run(); });
    }
    ~Decider() { finish(); }
    void finish()
    {
        stop = true;
        if (thread.joinable())
            thread.join();
    }
    void run()
    {
        // A client on no list, one on the blocklist, one in a blocklisted
        // /24, one on the safelist: every list is looked at.
        std::vector<Core::RequestFacts> facts;
        for (std::uint32_t a : {0xc0000201u, 0x64000000u + 7u, 0x65000105u, 0x66000003u}) {
            Core::RequestFacts f;
            f.peer = f.client = Core::IpAddress::fromV4(a);
            f.method = "GET";
            f.path = "/products/42";
            f.userAgent = "Mozilla/5.0";
            facts.push_back(f);
        }
        const Core::SystemClock clock;
        std::uint64_t i = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            const auto t = Clock::now();
            for (int k = 0; k < 256; ++k, ++i) {
                Core::Decision d = engine.decide(facts[i & 3], clock.now());
                asm volatile("" : : "r"(&d) : "memory");
            }
            nanos.fetch_add(std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count()),
                            std::memory_order_relaxed);
            calls.fetch_add(256, std::memory_order_relaxed);
        }
    }
    std::pair<std::uint64_t, std::uint64_t> read() const { return {calls.load(), nanos.load()}; }
};

} // namespace

int main(int argc, char** argv)
{
    const std::size_t entries = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100'000;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
    const int edits = argc > 3 ? std::atoi(argv[3]) : 20;
    const int posts = argc > 4 ? std::atoi(argv[4]) : 1000;
    char tmpl[] = "/tmp/floodgate-bench-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string path = dir + "/floodgate.db";
    const Core::SystemClock clock;
    Storage::StoreOptions so;
    so.path = path;

    std::printf("one commit of one row, WAL: synchronous=FULL %.2f ms, synchronous=OFF %.3f ms (median of 200)\n",
                commitMs(dir + "/scratch.db", "FULL", 200), commitMs(dir + "/scratch-off.db", "OFF", 200));
    std::uint32_t nextAddress = 0x0a000000u;  // the addresses the edits block: 10.0.0.0 on
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
        // The store's own part of an edit: the job, its audit row, COMMIT.
        const std::vector<double> commitOnly = timedAdds(*store, edits, nextAddress, clock);
        std::printf("one blocklist add, committed with no engine to publish into (median of %d): %.2f ms\n", edits, median(commitOnly));
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
        const std::vector<double> editMs = timedAdds(*store, edits, nextAddress, clock);
        std::printf("one blocklist add with %zu entries loaded (commit + publish, median of %d): %.2f ms\n", entries + 1000, edits,
                    median(editMs));

        // The same edit through the admin API, as an operator's script sends it.
        Api::ApiOptions ao;
        ao.token = store->adminToken();
        Api::AdminApi api(engine, *store, nullptr, nullptr, clock, ao);
        Http::AdminOptions adminOptions;
        adminOptions.port = 0;
        Http::AdminServer admin(adminOptions, api.handlers());
        std::string why;
        if (!admin.start(&why)) {
            std::fprintf(stderr, "bench_storage: admin server: %s\n", why.c_str());
            return 1;
        }
        FloodgateTest::Connection connection(admin.port());
        // One POST on `c`, timed from `t` (its send, or its connect) to the 201.
        auto postOn = [&](FloodgateTest::Connection& c, Clock::time_point t) -> double {
            const std::string body = "{\"address\":\"" + Core::IpAddress::fromV4(nextAddress++).toString() + "\",\"reason\":\"bench\",\"ttl\":\"1h\"}";
            const auto res = c.send(FloodgateTest::withBody("POST", "/api/v1/lists/blocklist", body,
                                                            FloodgateTest::bearer(store->adminToken())
                                                                + "Content-Type: application/json\r\n"))
                ? c.read(5000)
                : std::nullopt;
            const double ms = msSince(t);
            if (!res || res->status != 201) {
                std::fprintf(stderr, "bench_storage: POST answered %d: %s\n", res ? res->status : 0, res ? res->body.c_str() : "");
                std::exit(1);
            }
            return ms;
        };
        auto post = [&] { return postOn(connection, Clock::now()); };
        const double first = post();
        Decider decider(engine);
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        const auto quiet = decider.read();
        std::vector<double> postMs;
        const auto t = Clock::now();
        for (int i = 0; i < posts; ++i)
            postMs.push_back(post());
        const double seconds = msSince(t) / 1000;
        const auto streaming = decider.read();
        decider.finish();
        // What a script that runs curl once per edit sees: a new connection
        // for every POST, timed from before its connect.
        std::vector<double> freshMs;
        for (int i = 0; i < 20; ++i) {
            const auto t0 = Clock::now();
            FloodgateTest::Connection fresh(admin.port());
            freshMs.push_back(postOn(fresh, t0));
        }
        admin.stop();
        store->stop();
        std::printf("admin API, one POST /api/v1/lists/blocklist to its 201 with %zu entries loaded: %.2f ms\n", entries + 1000, first);
        std::printf("admin API, one POST on a new connection each, connect to 201 (20 connections): median %.2f ms, max %.2f ms\n",
                    median(freshMs), quantile(freshMs, 1.0));
        std::printf("admin API, %d POSTs in a row on one connection: %.0f per second; per POST median %.2f ms, p99 %.2f ms, max %.2f ms\n",
                    posts, double(posts) / seconds, median(postMs), quantile(postMs, 0.99), quantile(postMs, 1.0));
        const double quietNs = quiet.first ? double(quiet.second) / double(quiet.first) : 0;
        const std::uint64_t calls = streaming.first - quiet.first;
        const double streamingNs = calls ? double(streaming.second - quiet.second) / double(calls) : 0;
        std::printf("decide() on one thread: %.0f ns per call with no edits, %.0f ns while the POSTs stream in (%.2fx)\n", quietNs,
                    streamingNs, quietNs > 0 ? streamingNs / quietNs : 0.0);

        // The engine's part alone: publishing one edit, folding the edits,
        // and decide() with none and with 1,000 pending (no edits streaming).
        auto quietDecide = [&engine] {
            Decider d(engine);
            std::this_thread::sleep_for(std::chrono::milliseconds(1000));
            const auto [n, ns] = d.read();
            return n ? double(ns) / double(n) : 0.0;
        };
        engine.compactLists();
        const double nonePending = quietDecide();
        std::vector<double> publishUs;
        for (int i = 0; i < posts; ++i) {
            Core::ListEntry e = entry(nextAddress++, 128);
            e.expiresAt = clock.now() + 3'600'000;
            const auto t0 = Clock::now();
            engine.editList(Core::ListKind::Blocklist, {e}, {});
            publishUs.push_back(msSince(t0) * 1000);
        }
        const std::size_t pending = engine.list(Core::ListKind::Blocklist)->pendingEdits();
        const double somePending = quietDecide();
        const auto foldStart = Clock::now();
        engine.compactLists();
        const double foldMs = msSince(foldStart);
        std::printf("engine alone, %d single-entry edits published in a row: median %.1f us, p99 %.1f us; a fold of the edits pending "
                    "into the list (%zu entries): %.1f ms\n",
                    posts, median(publishUs), quantile(publishUs, 0.99), engine.list(Core::ListKind::Blocklist)->size(), foldMs);
        std::printf("decide() on one thread, no edits streaming: %.0f ns per call with no edit pending, %.0f ns with %zu pending (%.2fx)\n",
                    nonePending, somePending, pending, nonePending > 0 ? somePending / nonePending : 0.0);
    }
    std::printf("start with %zu entries (median of %d): open + integrity check %.0f ms, load %.0f ms, build and publish %.0f ms; "
                "total %.0f ms\n",
                entries + 1000, runs, median(openMs), median(loadMs), median(publishMs), median(totalMs));
    std::filesystem::remove_all(dir);
    return 0;
}
