// SPDX-License-Identifier: MIT
// The admin listener (its own port): /healthz, /metrics and the admin API.
// A small Beast server on one thread; routing is a plain function so the API
// lives in ordinary C++ without Boost.
#pragma once

#include "Address.h"

#include <cstdint>
#include <functional>
#include <memory>
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

struct AdminOptions {
    std::string address = "127.0.0.1";
    std::uint16_t port = 9090;  // 0 = any free port
    std::size_t bodyLimitBytes = 1024 * 1024;
    std::size_t maxConnections = 256;
};

class AdminServer {
public:
    using Handler = std::function<AdminResponse(const AdminRequest&)>;
    AdminServer(AdminOptions options, Handler handler);
    ~AdminServer();
    AdminServer(const AdminServer&) = delete;
    AdminServer& operator=(const AdminServer&) = delete;

    bool start(std::string* error);
    void stop();
    std::uint16_t port() const;
    bool loopbackOnly() const;  // bound to a loopback address

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

} // namespace Floodgate::Http
