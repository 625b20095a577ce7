// SPDX-License-Identifier: GPL-3.0-or-later
// The traffic listener in process on 127.0.0.1 port 0, with its engine
// (escalation off, so a test's refusals never turn into bans), the limiter
// log in memory and metrics. ProxyServer puts it in proxy mode in front of a
// TestUpstream, under the base path /app. A test may hand it a manual clock
// for the listener's time. Header-only: the suites that include it link fg_http.
#pragma once

#include "core/Engine.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "http/Metrics.h"

#include <memory>
#include <string>

namespace FloodgateTest {

struct ListenerStack {
    explicit ListenerStack(Floodgate::Core::EngineConfig config = Floodgate::Core::defaultConfig(),
                           Floodgate::Http::ListenerOptions options = {},
                           const Floodgate::Core::Clock& clock = Floodgate::Core::systemClock())
        : engine([&] {
            config.escalation.enabled = false;
            return config;
        }())
        , log("", options.threads ? options.threads : 1, clock)
        , metrics(options.threads ? options.threads : 1)
    {
        options.port = 0;
        if (options.threads == 0)
            options.threads = 1;
        options.shutdownDeadlineMs = 500;
        std::string why;
        listener = std::make_unique<Floodgate::Http::Listener>(engine, options, &log, &metrics, clock);
        log.start(&why);
        started = listener->start(&why);
        error = why;
    }
    ~ListenerStack() { listener->stop(); }
    ListenerStack(const ListenerStack&) = delete;
    ListenerStack& operator=(const ListenerStack&) = delete;
    std::uint16_t port() const { return listener->port(); }

    Floodgate::Core::Engine engine;
    Floodgate::Http::LimiterLog log;
    Floodgate::Http::ListenerMetrics metrics;
    std::unique_ptr<Floodgate::Http::Listener> listener;
    bool started = false;
    std::string error;
};

inline Floodgate::Http::ListenerOptions towardsUpstream(Floodgate::Http::ListenerOptions options, std::uint16_t upstreamPort)
{
    std::string why;
    options.upstream = Floodgate::Http::UpstreamUrl::parse("http://127.0.0.1:" + std::to_string(upstreamPort) + "/app", &why);
    return options;
}

struct ProxyServer : ListenerStack {
    explicit ProxyServer(std::uint16_t upstreamPort, Floodgate::Http::ListenerOptions options = {},
                         Floodgate::Core::EngineConfig config = Floodgate::Core::defaultConfig())
        : ListenerStack(std::move(config), towardsUpstream(std::move(options), upstreamPort))
    {
    }
};

} // namespace FloodgateTest
