// SPDX-License-Identifier: GPL-3.0-or-later
// Drives DemoTraffic into a running listener over real loopback HTTP. Each
// actor keeps its own keep-alive connection; the actor's address travels in
// the header --real-ip-header names (X-Forwarded-For by default), which the
// listener believes because --demo trusts 127.0.0.1.
#pragma once

#include "app/DemoTraffic.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>

namespace Floodgate::App {

class DemoDriver {
public:
    DemoDriver(std::string host, std::uint16_t port, std::string realIpHeader, DemoCustomerProof proof);
    ~DemoDriver();
    void start();
    void stop();

    std::uint64_t sent() const { return m_sent.load(); }
    std::uint64_t failed() const { return m_failed.load(); }

private:
    void run();
    bool send(const DemoRequest& r);
    int connectionFor(const std::string& actor);
    void drop(const std::string& actor);

    std::string m_host;
    std::uint16_t m_port;
    std::string m_realIpHeader;
    DemoTraffic m_traffic;
    std::map<std::string, int> m_connections;  // actor -> socket
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    std::atomic<std::uint64_t> m_sent{0};
    std::atomic<std::uint64_t> m_failed{0};
};

} // namespace Floodgate::App
