// SPDX-License-Identifier: MIT
// The traffic listener in proxy mode, in process: an engine (escalation off,
// so a test's refusals never turn into bans), the limiter log in memory and
// the listener on 127.0.0.1 port 0 forwarding to a TestUpstream under /app.
// Header-only: the suites that include it link fg_http.
#pragma once

#include "Engine.h"
#include "LimiterLog.h"
#include "Listener.h"
#include "Metrics.h"

#include <memory>
#include <string>

namespace FloodgateTest {

struct ProxyServer {
    ProxyServer(std::uint16_t upstreamPort, Floodgate::Http::ListenerOptions options = {},
                Floodgate::Core::EngineConfig config = Floodgate::Core::defaultConfig())
        : engine([&] {
            config.escalation.enabled = false;
            return config;
        }())
        , log("", 1)
        , metrics(1)
    {
        options.port = 0;
        options.threads = 1;
        options.shutdownDeadlineMs = 500;
        std::string why;
        options.upstream = Floodgate::Http::UpstreamUrl::parse("http://127.0.0.1:" + std::to_string(upstreamPort) + "/app", &why);
        listener = std::make_unique<Floodgate::Http::Listener>(engine, options, &log, &metrics);
        log.start(&why);
        started = listener->start(&why);
        error = why;
    }
    ~ProxyServer() { listener->stop(); }
    ProxyServer(const ProxyServer&) = delete;
    ProxyServer& operator=(const ProxyServer&) = delete;
    std::uint16_t port() const { return listener->port(); }

    Floodgate::Core::Engine engine;
    Floodgate::Http::LimiterLog log;
    Floodgate::Http::ListenerMetrics metrics;
    std::unique_ptr<Floodgate::Http::Listener> listener;
    bool started = false;
    std::string error;
};

} // namespace FloodgateTest
