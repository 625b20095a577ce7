// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/DemoDriver.h"

#include "core/Rules.h"

#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace Floodgate::App {

namespace {

Core::Millis wallMs()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

bool writeAll(int fd, const std::string& data)
{
    std::size_t off = 0;
    while (off < data.size()) {
        const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        off += std::size_t(n);
    }
    return true;
}

// Reads one response (status line, headers, Content-Length body). Returns the
// status, 0 on failure; sets close when the server will close.
int readResponse(int fd, bool& close)
{
    std::string buf;
    char chunk[4096];
    std::size_t headerEnd = std::string::npos;
    while ((headerEnd = buf.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0)
            return 0;
        buf.append(chunk, std::size_t(n));
        if (buf.size() > 1 << 20)
            return 0;
    }
    int status = 0;
    if (buf.size() > 12)
        status = std::atoi(buf.c_str() + 9);
    std::size_t length = 0;
    std::string lower = buf.substr(0, headerEnd);
    for (char& c : lower)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    if (auto p = lower.find("\r\ncontent-length:"); p != std::string::npos)
        length = std::size_t(std::strtoul(lower.c_str() + p + 17, nullptr, 10));
    close = lower.find("\r\nconnection: close") != std::string::npos;
    std::size_t have = buf.size() - headerEnd - 4;
    while (have < length) {
        const ssize_t n = ::recv(fd, chunk, std::min(sizeof chunk, length - have), 0);
        if (n <= 0)
            return 0;
        have += std::size_t(n);
    }
    return status;
}

} // namespace

DemoDriver::DemoDriver(std::string host, std::uint16_t port, std::string realIpHeader, DemoCustomerProof proof)
    : m_host(std::move(host))
    , m_port(port)
    , m_realIpHeader(std::move(realIpHeader))
    , m_traffic(std::move(proof))
{
}

DemoDriver::~DemoDriver()
{
    stop();
}

void DemoDriver::start()
{
    m_stop = false;
    m_thread = std::thread([this] { run(); });
}

void DemoDriver::stop()
{
    m_stop = true;
    if (m_thread.joinable())
        m_thread.join();
    for (auto& [actor, fd] : m_connections)
        ::close(fd);
    m_connections.clear();
}

int DemoDriver::connectionFor(const std::string& actor)
{
    if (auto it = m_connections.find(actor); it != m_connections.end())
        return it->second;
    const bool v6 = m_host.find(':') != std::string::npos;
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc;
    if (v6) {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(m_port);
        ::inet_pton(AF_INET6, m_host.c_str(), &a.sin6_addr);
        rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(m_port);
        ::inet_pton(AF_INET, m_host.c_str(), &a.sin_addr);
        rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0) {
        ::close(fd);
        return -1;
    }
    m_connections[actor] = fd;
    return fd;
}

void DemoDriver::drop(const std::string& actor)
{
    if (auto it = m_connections.find(actor); it != m_connections.end()) {
        ::close(it->second);
        m_connections.erase(it);
    }
}

bool DemoDriver::send(const DemoRequest& r)
{
    std::string req = r.method + " " + r.path + (r.query.empty() ? "" : "?" + r.query) + " HTTP/1.1\r\n";
    req += "Host: demo.floodgate.test\r\n";
    if (Core::equalsIgnoreCase(m_realIpHeader, "Forwarded"))  // RFC 7239: an IPv6 node is quoted and bracketed
        req += r.client.find(':') == std::string::npos ? "Forwarded: for=" + r.client + "\r\n" : "Forwarded: for=\"[" + r.client + "]\"\r\n";
    else
        req += m_realIpHeader + ": " + r.client + "\r\n";
    req += "User-Agent: " + r.userAgent + "\r\n";
    if (r.cookies) {
        req += "Cookie: session=demo";
        for (std::uint32_t i = 1; i < r.cookies; ++i)
            req += "; pref" + std::to_string(i) + "=1";
        req += "\r\n";
    }
    for (const auto& [k, v] : r.headers)
        req += k + ": " + v + "\r\n";
    if (r.method == "POST") {
        static const std::string body = "text=first%21";
        req += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    } else {
        req += "\r\n";
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int fd = connectionFor(r.actor);
        if (fd < 0)
            return false;
        bool close = false;
        if (writeAll(fd, req) && readResponse(fd, close) != 0) {
            if (close)
                drop(r.actor);
            return true;
        }
        drop(r.actor);  // a stale keep-alive connection: try once more on a new one
    }
    return false;
}

void DemoDriver::run()
{
    m_traffic.due(wallMs());
    while (!m_stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (const DemoRequest& r : m_traffic.due(wallMs())) {
            if (m_stop)
                break;
            (send(r) ? m_sent : m_failed).fetch_add(1);
        }
    }
}

} // namespace Floodgate::App
