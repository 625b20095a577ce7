// SPDX-License-Identifier: GPL-3.0-or-later
// The traffic listener: an HTTP/1.1 server (Boost.Beast, hidden in the .cpp)
// that puts the engine in front of every request. Decision mode answers
// 200/429/403 itself (nginx auth_request, Traefik ForwardAuth, Envoy
// ext_authz); proxy mode forwards allowed requests to an upstream.
#pragma once

#include "http/ClientIdentity.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::Core {
class Engine;
}

namespace Floodgate::Http {

class LimiterLog;
class ListenerMetrics;
class RequestSamples;

struct UpstreamUrl {
    std::string host;  // name or address
    std::uint16_t port = 80;
    std::string basePath;  // prefix added to every forwarded target ("" or "/app")
    std::string text;      // as given: "http://127.0.0.1:3000"
    std::string hostHeader;  // "127.0.0.1:3000", "[::1]:8081": the Host of a request that named none
    // Parses "http://host[:port][/path]"; https is refused with a reason.
    static std::optional<UpstreamUrl> parse(std::string_view url, std::string* why);
};

struct ListenerOptions {
    std::string address = "127.0.0.1";
    std::uint16_t port = 8080;      // 0 = any free port; see Listener::port()
    unsigned threads = 0;           // 0 = number of cores
    std::optional<UpstreamUrl> upstream;  // proxy mode when set
    // Caps (Tuning.h says what each one refuses).
    std::size_t maxConnections = Core::Tuning::maxConnections;
    std::size_t headerLimitBytes = Core::Tuning::headerLimitBytes;  // request line + fields (414 / 431 beyond)
    std::size_t maxHeaderFields = Core::Tuning::maxHeaderFields;    // 431 beyond
    std::size_t bodyLimitBytes = Core::Tuning::bodyLimitBytes;      // 413 beyond
    std::size_t pipelineDepth = Core::Tuning::pipelineDepth;        // requests answered per write when pipelined
    // The deadlines of Tuning.h, shared with the admin server.
    Core::Millis headerTimeoutMs = Core::Tuning::headerTimeoutMs;  // slowloris: the header must arrive within this
    Core::Millis idleTimeoutMs = Core::Tuning::idleTimeoutMs;      // keep-alive connections idle this long are closed
    Core::Millis bodyTimeoutMs = Core::Tuning::bodyTimeoutMs;      // between body reads
    Core::Millis writeTimeoutMs = Core::Tuning::writeTimeoutMs;
    Core::Millis upstreamConnectTimeoutMs = Core::Tuning::upstreamConnectTimeoutMs;    // 502 beyond
    Core::Millis upstreamResponseTimeoutMs = Core::Tuning::upstreamResponseTimeoutMs;  // 504 beyond
    std::size_t upstreamPoolPerThread = Core::Tuning::upstreamPoolPerThread;
    Core::Millis shutdownDeadlineMs = Core::Tuning::shutdownDeadlineMs;  // graceful stop: in-flight requests get this long
    TrustedProxies trustedProxies;
};

class Listener {
public:
    // `clock`: the time requests are decided and recorded at (wall) and
    // connection deadlines are judged on (monotonic); it outlives the listener.
    Listener(Core::Engine& engine, ListenerOptions options, LimiterLog* log, ListenerMetrics* metrics,
             const Core::Clock& clock = Core::systemClock());
    ~Listener();
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;

    // Binds and starts the I/O threads. False with a reason when the address
    // cannot be bound (exit code 3 in headless mode).
    bool start(std::string* error);
    // Stops accepting, lets in-flight requests finish until the deadline,
    // closes the rest and joins the threads. Idempotent.
    void stop();

    // Where to copy a sample of requests for the console (last path, user
    // agent). Set before start(); null: no samples.
    void setRequestSamples(RequestSamples* samples);

    // Replaces the trusted proxies (the rules changed); the next request on
    // every thread uses the new ones.
    void setTrustedProxies(TrustedProxies proxies);

    std::uint16_t port() const;  // the real port (after binding port 0)
    unsigned threads() const;
    const ListenerOptions& options() const;

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

} // namespace Floodgate::Http
