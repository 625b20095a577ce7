// SPDX-License-Identifier: GPL-3.0-or-later
// Headless mode: the runtime (Runtime.h) without a window, stopped by
// SIGINT/SIGTERM, reloaded by SIGHUP, printing who is hammering once a
// second with --demo.
#include "app/Headless.h"

#include "core/Engine.h"
#include "core/Printable.h"
#include "app/Runtime.h"
#include "storage/Store.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace Floodgate::App {

namespace {

Core::Millis wallMs()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void printDemoSummary(const Core::Engine& engine, Core::Millis now, Core::Millis start)
{
    const auto last = engine.perSecond(now - 1000, 1).back();
    const auto c = engine.counters(now);
    std::printf("[%4llds] allowed %3llu  throttled %3llu  blocked %3llu   tracked %llu, auto-bans %llu\n",
                (long long)((now - start) / 1000), (unsigned long long)last.byAction[0], (unsigned long long)last.byAction[1],
                (unsigned long long)last.byAction[2], (unsigned long long)c.trackedKeys, (unsigned long long)c.autoBans);
    for (const Core::ClientSummary& s : engine.topClients(5, now)) {
        char binding[96] = "";
        if (s.bindingLimit)
            std::snprintf(binding, sizeof binding, "%s %u/%u", Core::printable(s.bindingRule).c_str(), s.bindingUsed, s.bindingLimit);
        std::printf("   %-26s %6.1f req/s  %4u in 60 s  %-10s %-10s %s\n", s.keyText().c_str(), s.ratePerSecond, s.last60s,
                    Core::toString(s.state), Core::printable(s.customer).c_str(), binding);
    }
    std::fflush(stdout);
}

} // namespace

ExitCode runHeadless(const Options& o, int argc, char** argv)
{
    // SIGINT/SIGTERM/SIGHUP are taken by this thread alone (sigtimedwait
    // below); block them before any other thread exists.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    const Core::SystemClock clock;
    Runtime runtime(clock);
    if (auto failure = runtime.start(o)) {
        std::fprintf(stderr, "floodgate: %s\n", Core::printable(failure->message).c_str());
        return failure->exitCode;
    }
    runtime.printStartLines();

    const Core::Millis start = wallMs();
    Core::Millis nextTick = start + 1000;
    int stopSignal = 0;
    while (true) {
        const Core::Millis now = wallMs();
        if (o.seconds > 0 && now - start >= Core::Millis(o.seconds * 1000))
            break;
        const Core::Millis wait = std::max<Core::Millis>(1, std::min<Core::Millis>(nextTick - now, 1000));
        timespec ts{time_t(wait / 1000), long((wait % 1000) * 1'000'000)};
        const int sig = sigtimedwait(&signals, nullptr, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            stopSignal = sig;
            break;
        }
        if (sig == SIGHUP)
            reloadOnSignal(runtime, argc, argv);
        if (wallMs() >= nextTick) {
            nextTick += 1000;
            if (runtime.demoRunning())
                printDemoSummary(runtime.engine(), wallMs(), start);
        }
    }
    if (stopSignal)
        std::fprintf(stderr, "floodgate: %s received, stopping\n", stopSignal == SIGINT ? "SIGINT" : "SIGTERM");
    runtime.stop();
    return ExitCode::Done;
}

} // namespace Floodgate::App
