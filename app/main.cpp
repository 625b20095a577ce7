// SPDX-License-Identifier: MIT
// The floodgate executable. This build holds the engine core; the traffic
// listener (--headless) and the console come with the next issues, and the
// command line says so instead of pretending.
#include "DemoTraffic.h"
#include "Engine.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

using namespace Floodgate;

namespace {

constexpr const char* VERSION = "0.1.0";

std::atomic<bool> g_stop{false};

void onSignal(int)
{
    g_stop.store(true);
}

void usage(std::FILE* out)
{
    std::fprintf(out,
                 "usage: floodgate --simulate [--seconds N] [--virtual]\n"
                 "       floodgate --version | --help\n"
                 "\n"
                 "  --simulate    run the throttle engine in this terminal on built-in demo traffic\n"
                 "                (browsers, a good bot at 1 req/s, a scraper flood at 20 req/s,\n"
                 "                a double-submitter, API customers of each tier, an IPv6 rotator)\n"
                 "                and print what it decides, once a second\n"
                 "  --seconds N   stop after N seconds (default: until Ctrl-C)\n"
                 "  --virtual     run on a simulated clock, as fast as possible\n"
                 "\n"
                 "The console window, --headless and the HTTP listener are not in this build yet.\n");
}

int simulate(long seconds, bool virtualClock)
{
    Core::EngineConfig config = Core::defaultConfig();
    config.customers = App::DemoTraffic::demoCustomers();
    Core::Engine engine(config);
    App::DemoTraffic traffic;
    Core::SystemClock wall;
    Core::Millis now = wall.now();
    const Core::Millis start = now;
    traffic.due(now);
    Core::Millis nextReport = now + 1000;
    std::printf("Floodgate %s engine simulation: default rules (6/3 s lockout, 300/5 min, 600/30 min), "
                "tiers Free/Pro/Enterprise. Ctrl-C stops.\n",
                VERSION);
    std::fflush(stdout);
    while (!g_stop.load() && (seconds <= 0 || now - start < seconds * 1000)) {
        if (virtualClock)
            now += 100;
        else {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            now = wall.now();
        }
        for (const App::DemoRequest& r : traffic.due(now)) {
            std::vector<Core::HeaderField> headers;
            for (const auto& [k, v] : r.headers)
                headers.push_back({k, v});
            Core::RequestFacts f;
            f.client = f.peer = *Core::IpAddress::parse(r.client);
            f.method = r.method;
            f.path = r.path;
            f.query = r.query;
            f.userAgent = r.userAgent;
            f.cookieCount = r.cookies;
            f.headers = headers;
            const Core::Decision d = engine.decide(f, now);
            if (d.action == Core::Action::Allow && r.method == "POST")
                engine.reportSuccess(f, now);  // the comment was created
        }
        if (now < nextReport)
            continue;
        nextReport += 1000;
        engine.purge(now);
        const auto last = engine.perSecond(now - 1000, 1).back();
        std::printf("\n[%3llds] allowed %3llu  throttled %3llu  blocked %3llu   tracked %llu, auto-bans %llu\n",
                    (long long)((now - start) / 1000), (unsigned long long)last.byAction[0], (unsigned long long)last.byAction[1],
                    (unsigned long long)last.byAction[2], (unsigned long long)engine.counters(now).trackedKeys,
                    (unsigned long long)engine.counters(now).autoBans);
        for (const Core::ClientSummary& c : engine.topClients(5, now)) {
            char binding[64] = "";
            if (c.bindingLimit)
                std::snprintf(binding, sizeof binding, "%s %u/%u", c.bindingRule.c_str(), c.bindingUsed, c.bindingLimit);
            std::printf("   %-26s %6.1f req/s  %4u in 60 s  %-10s %s\n", c.keyText().c_str(), c.ratePerSecond, c.last60s,
                        Core::toString(c.state), binding);
        }
        std::fflush(stdout);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    bool simulateMode = false, virtualClock = false;
    long seconds = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        if (a == "--version") {
            std::printf("floodgate %s\n", VERSION);
            return 0;
        }
        if (a == "--simulate") {
            simulateMode = true;
        } else if (a == "--virtual") {
            virtualClock = true;
        } else if (a == "--seconds" && i + 1 < argc) {
            char* end = nullptr;
            seconds = std::strtol(argv[++i], &end, 10);
            if (*end != '\0' || seconds <= 0) {
                std::fprintf(stderr, "floodgate: --seconds needs a positive whole number, got \"%s\"\n", argv[i]);
                return 2;
            }
        } else {
            std::fprintf(stderr, "floodgate: unknown option \"%s\" (this build has the engine only; try --help)\n", argv[i]);
            return 2;
        }
    }
    if (!simulateMode) {
        usage(stderr);
        return 2;
    }
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    return simulate(seconds, virtualClock);
}
