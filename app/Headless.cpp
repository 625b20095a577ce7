// SPDX-License-Identifier: MIT
// The composition root of headless mode: creates the parts in order and stops
// them in reverse (stop accepting -> finish requests -> flush the log -> engine).
#include "Headless.h"

#include "AdminServer.h"
#include "DemoDriver.h"
#include "DemoTraffic.h"
#include "Engine.h"
#include "LimiterLog.h"
#include "Listener.h"
#include "Metrics.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

namespace Floodgate::App {

namespace {

Core::Millis wallMs()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string urlOf(const std::string& host, std::uint16_t port)
{
    return host.find(':') != std::string::npos ? "http://[" + host + "]:" + std::to_string(port)
                                               : "http://" + host + ":" + std::to_string(port);
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
            std::snprintf(binding, sizeof binding, "%s %u/%u", s.bindingRule.c_str(), s.bindingUsed, s.bindingLimit);
        std::printf("   %-26s %6.1f req/s  %4u in 60 s  %-10s %-10s %s\n", s.keyText().c_str(), s.ratePerSecond, s.last60s,
                    Core::toString(s.state), s.customer.c_str(), binding);
    }
    std::fflush(stdout);
}

} // namespace

int runHeadless(const Options& o)
{
    Core::EngineConfig config = Core::defaultConfig();
    config.settings.dryRun = o.dryRun;
    config.settings.trustedProxies = o.trustedProxies;
    if (o.demo) {
        // The demo's actors speak through one loopback connection each and
        // name their address in X-Forwarded-For.
        config.customers = DemoTraffic::demoCustomers();
        config.settings.trustedProxies.push_back(*Core::Cidr::parse("127.0.0.1/32"));
        config.settings.trustedProxies.push_back(*Core::Cidr::parse("::1/128"));
    }
    Core::Engine engine(config);

    std::string upstreamWhy;
    Http::ListenerOptions lo;
    lo.address = o.listen.host;
    lo.port = o.listen.port;
    lo.threads = o.threads;
    lo.trustedProxies = Http::TrustedProxies(config.settings.trustedProxies);
    if (!o.upstream.empty()) {
        lo.upstream = Http::UpstreamUrl::parse(o.upstream, &upstreamWhy);
        if (!lo.upstream) {
            std::fprintf(stderr, "floodgate: --upstream %s: %s\n", o.upstream.c_str(), upstreamWhy.c_str());
            return 2;
        }
    }
    if (lo.threads == 0)
        lo.threads = std::max(1u, std::thread::hardware_concurrency());

    // Where the data lives: the database (storage comes with its own issue)
    // and limiter.log beside it.
    const std::string db = o.db.empty() ? defaultDatabasePath() : o.db;
    std::string logPath = o.log.empty() ? (std::filesystem::path(db).parent_path() / "limiter.log").string() : o.log;
    if (logPath == "off")
        logPath.clear();
    if (!logPath.empty()) {
        std::error_code ec;
        const auto dir = std::filesystem::path(logPath).parent_path();
        if (!dir.empty())
            std::filesystem::create_directories(dir, ec);
        if (ec) {
            std::fprintf(stderr, "floodgate: cannot create %s: %s (choose another place with --db or --log)\n", dir.c_str(),
                         ec.message().c_str());
            return 4;
        }
    }
    Http::LimiterLog log(logPath, lo.threads);
    std::string why;
    if (!log.start(&why)) {
        std::fprintf(stderr, "floodgate: %s (choose another place with --log)\n", why.c_str());
        return 4;
    }
    Http::ListenerMetrics metrics(lo.threads);

    // SIGINT/SIGTERM are taken by this thread alone (sigtimedwait below);
    // block them before any other thread exists.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    Http::Listener listener(engine, lo, &log, &metrics);
    if (!listener.start(&why)) {
        std::fprintf(stderr, "floodgate: %s (is another server on that port? choose another with --listen)\n", why.c_str());
        return 3;
    }
    std::unique_ptr<Http::AdminServer> admin;
    if (o.admin) {
        Http::AdminOptions ao;
        ao.address = o.admin->host;
        ao.port = o.admin->port;
        admin = std::make_unique<Http::AdminServer>(ao, [&](const Http::AdminRequest& r) {
            Http::AdminResponse res;
            if (r.method != "GET" && r.method != "HEAD") {
                res.status = 405;
                res.body = "use GET\n";
                return res;
            }
            if (r.path == "/healthz") {
                res.body = "ok";
            } else if (r.path == "/metrics") {
                res.contentType = "text/plain; version=0.0.4; charset=utf-8";
                res.body = metrics.render(engine, &log, wallMs());
            } else {
                res.status = 404;
                res.body = "not found: the admin API has /healthz and /metrics in this build\n";
            }
            return res;
        });
        if (!admin->start(&why)) {
            listener.stop();
            std::fprintf(stderr, "floodgate: admin: %s (choose another with --admin ADDR:PORT or --admin off)\n", why.c_str());
            return 3;
        }
    }

    std::printf("listening on %s (%s)\n", urlOf(lo.address, listener.port()).c_str(),
                lo.upstream ? ("proxy mode -> " + lo.upstream->text).c_str() : "decision mode");
    if (admin)
        std::printf("admin on %s\n", urlOf(o.admin->host, admin->port()).c_str());
    std::printf("limiter log %s%s\n", logPath.empty() ? "off" : logPath.c_str(), o.dryRun ? " (dry run: nothing is refused)" : "");
    std::fflush(stdout);

    std::unique_ptr<DemoDriver> demo;
    if (o.demo) {
        demo = std::make_unique<DemoDriver>(lo.address == "0.0.0.0" ? "127.0.0.1" : (lo.address == "::" ? "::1" : lo.address),
                                            listener.port());
        demo->start();
    }

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
        if (wallMs() >= nextTick) {
            nextTick += 1000;
            engine.purge(wallMs());
            if (demo)
                printDemoSummary(engine, wallMs(), start);
        }
    }
    if (stopSignal)
        std::fprintf(stderr, "floodgate: %s received, stopping\n", stopSignal == SIGINT ? "SIGINT" : "SIGTERM");
    if (demo)
        demo->stop();
    listener.stop();
    if (admin)
        admin->stop();
    log.stop();
    return 0;
}

} // namespace Floodgate::App
