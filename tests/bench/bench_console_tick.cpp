// SPDX-License-Identifier: GPL-3.0-or-later
// The console's refresh tick with 100,000 tracked clients and the demo
// traffic running: the runtime starts as `floodgate --demo` does (a fresh
// database, the listener on 127.0.0.1, the demo driving it over loopback),
// 100,000 more clients are decided into the engine, then the window
// (offscreen) takes refresh after refresh on each view in turn. Two costs
// are timed apart: taking the snapshot (on the snapshot thread in the real
// console) and the GUI thread's tick: merging it into the models and charts
// and painting what changed, as the event loop does (the figure that must
// stay under 10 ms).
//
//   QT_QPA_PLATFORM=offscreen bench_console_tick [CLIENTS=100000] [TICKS_PER_VIEW=40]
#include "ui/Console.h"
#include "core/Engine.h"
#include "ui/MainWindow.h"
#include "app/Runtime.h"
#include "ui/SnapshotWorker.h"
#include "storage/Store.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QThread>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace Floodgate;

namespace {

struct Stats {
    double median = 0, p99 = 0, max = 0;
};

Stats stats(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    if (v.empty())
        return {};
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], v.back()};
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    const std::size_t clients = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100'000;
    const int ticksPerView = argc > 2 ? std::atoi(argv[2]) : 40;
    QTemporaryDir dir;
    const Core::SystemClock clock;
    App::Runtime runtime(clock);
    App::Options o;
    o.db = dir.filePath(QStringLiteral("floodgate.db")).toStdString();
    o.listen = {"127.0.0.1", 0};
    o.admin.reset();
    o.demo = true;
    o.threads = 1;
    if (auto failure = runtime.start(o)) {
        std::fprintf(stderr, "bench_console_tick: %s\n", failure->message.c_str());
        return 1;
    }
    // 100,000 more clients, each with a request in the live window.
    Core::Engine& engine = runtime.engine();
    Core::RequestFacts f;
    f.method = "GET";
    f.path = "/";
    for (std::size_t i = 0; i < clients; ++i) {
        f.client = f.peer = Core::IpAddress::fromV4(0x0a000000u + std::uint32_t(i));
        engine.decide(f, clock.now());
    }
    // FG_BENCH_LIST=N: N blocklist entries too, and the lists view sees one
    // more added every fifth refresh (its model merges the whole list then).
    const std::size_t listEntries = qEnvironmentVariableIsSet("FG_BENCH_LIST") ? std::size_t(qEnvironmentVariableIntValue("FG_BENCH_LIST")) : 0;
    if (listEntries > 0) {
        std::vector<Core::ListedEntry> rows;
        for (std::size_t i = 0; i < listEntries; ++i) {
            Core::ListEntry e;
            e.range = Core::Cidr(Core::IpAddress::fromV4(0x64000000u + std::uint32_t(i)), 128);
            e.reason = "imported";
            e.expiresAt = Core::NeverExpires;
            rows.push_back({Core::ListKind::Blocklist, e});
        }
        runtime.store().wait([&](auto done) { runtime.store().importEntries(std::move(rows), Storage::Actor{"bench"}, done); });
    }
    QThread::msleep(1500);  // the demo's actors get going

    Ui::ConsoleServices s;
    s.engine = &engine;
    s.store = &runtime.store();
    s.log = &runtime.log();
    s.samples = &runtime.samples();
    s.clock = &clock;
    s.listenUrl = [&runtime] { return runtime.listenUrl(); };
    s.modeText = runtime.modeText();
    s.databasePath = runtime.databasePath();
    Ui::Console console(s);
    Ui::SnapshotWorker worker(s);
    Ui::MainWindow window(console);
    window.resize(1366, 768);
    window.show();
    QApplication::processEvents();

    std::printf("tracked keys: %llu (demo running: %s)\n", (unsigned long long)engine.counters(clock.now()).trackedKeys,
                runtime.demoRunning() ? "yes" : "no");
    std::printf("| view | snapshot (snapshot thread) median | merge into models median | GUI tick median | GUI tick p99 | GUI tick max | "
                "first tick (view shown) |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    const char* names[] = {"Live traffic", "Clients", "Buckets", "Access lists", "Customers & tiers", "Rules", "Events"};
    std::vector<double> allApply;
    const int only = qEnvironmentVariableIsSet("FG_BENCH_VIEW") ? qEnvironmentVariableIntValue("FG_BENCH_VIEW") : -1;
    for (int view = 0; view < Ui::MainWindow::ViewCount; ++view) {
        if (only >= 0 && view != only)
            continue;
        window.showView(view);
        if (view == Ui::MainWindow::Buckets)
            console.follow(QStringLiteral("10.0.0.7"));
        std::vector<double> take, apply, merge;
        double first = 0;  // the tick that shows the view: a full paint
        for (int t = 0; t < ticksPerView; ++t) {
            if (listEntries > 0 && view == Ui::MainWindow::Lists && t % 5 == 1) {
                Core::ListEntry e;
                e.range = Core::Cidr(Core::IpAddress::fromV4(0x65000000u + std::uint32_t(t)), 128);
                e.expiresAt = Core::NeverExpires;
                runtime.store().wait([&](auto done) { runtime.store().addEntry(Core::ListKind::Blocklist, e, Storage::Actor{"bench"}, done); });
            }
            QElapsedTimer timer;
            timer.start();
            const Ui::SnapshotPtr snap = worker.take();
            take.push_back(double(timer.nsecsElapsed()) / 1e6);
            timer.restart();
            window.applySnapshot(snap);
            QApplication::processEvents();  // the paint of what the refresh changed, as the event loop does it
            if (t == 0) {
                first = double(timer.nsecsElapsed()) / 1e6;
                continue;
            }
            apply.push_back(double(timer.nsecsElapsed()) / 1e6);
            if (qEnvironmentVariableIsSet("FG_BENCH_TRACE"))
                std::printf("  tick %d: %.2f ms (merge %.2f ms)\n", t, apply.back(), double(window.lastApplyNanoseconds()) / 1e6);
            merge.push_back(double(window.lastApplyNanoseconds()) / 1e6);
            allApply.push_back(apply.back());
            QThread::msleep(20);
        }
        const Stats a = stats(apply);
        std::printf("| %s | %.1f ms | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f ms |\n", names[view], stats(take).median,
                    stats(merge).median, a.median, a.p99, a.max, first);
    }
    const Stats all = stats(allApply);
    std::printf("\nGUI tick (merge + paint) over every view: median %.2f ms, p99 %.2f ms, max %.2f ms (target: under 10 ms)\n",
                all.median, all.p99, all.max);
    std::fflush(stdout);
    runtime.stop();
    return 0;
}
