// SPDX-License-Identifier: GPL-3.0-or-later
// The admin listener (its own port): /healthz, /metrics and the admin API.
// A small Beast server: one I/O thread carries the bytes and answers what
// never waits (health checks, metrics) at once; everything else runs on a
// worker thread and may answer later from any thread (a write answers after
// its COMMIT, from the store's writer), so a request that waits on storage
// never holds up the others. Header, body and write deadlines and caps on
// connections (in all and per client) keep slow clients from taking the port. Routing is plain functions so the API lives in
// ordinary C++ without Boost.
#pragma once

#include "core/Address.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace Floodgate::Http {

struct AdminRequest {
    std::string method;
    std::string target;
    std::string path;   // without the query
    std::string query;  // without '?'
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    Core::IpAddress peer;
    std::string header(std::string_view name) const;
};

struct AdminResponse {
    int status = 200;
    std::string contentType = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// Sends the answer to one request: call it once, from any thread, now or
// later. After the server stopped it does nothing.
using AdminReply = std::function<void(AdminResponse)>;

struct AdminHandlers {
    // On the I/O thread, for every request first: an answer that needs no
    // waiting (a health check, the metrics, a refusal), or nullopt to pass
    // the request to `handle`. Must never block.
    std::function<std::optional<AdminResponse>(const AdminRequest&)> atOnce;
    // On the worker thread; replies through the AdminReply.
    std::function<void(const AdminRequest&, AdminReply)> handle;
};

struct AdminOptions {
    std::string address = "127.0.0.1";
    std::uint16_t port = 9090;  // 0 = any free port
    std::size_t bodyLimitBytes = Core::Tuning::adminBodyLimitBytes;
    // Caps and deadlines (Tuning.h says why): slow clients cannot take the port.
    std::size_t maxConnections = Core::Tuning::adminMaxConnections;
    std::size_t maxConnectionsPerClient = Core::Tuning::adminMaxConnectionsPerClient;
    Core::Millis idleTimeoutMs = Core::Tuning::idleTimeoutMs;
    Core::Millis headerTimeoutMs = Core::Tuning::headerTimeoutMs;
    Core::Millis bodyTimeoutMs = Core::Tuning::bodyTimeoutMs;
    Core::Millis writeTimeoutMs = Core::Tuning::writeTimeoutMs;
};

class AdminServer {
public:
    // `clock`: connection deadlines are judged on its monotonic time; it
    // outlives the server.
    AdminServer(AdminOptions options, AdminHandlers handlers, const Core::Clock& clock = Core::systemClock());
    ~AdminServer();
    AdminServer(const AdminServer&) = delete;
    AdminServer& operator=(const AdminServer&) = delete;

    bool start(std::string* error);
    // Closes every connection, drops the answers still to come and joins the threads.
    void stop();
    std::uint16_t port() const;

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

} // namespace Floodgate::Http
