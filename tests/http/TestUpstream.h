// SPDX-License-Identifier: MIT
// A tiny upstream for proxy-mode tests: accepts on 127.0.0.1 (any port),
// records every request it receives verbatim, and answers with whatever the
// test set (status, headers, body, delay). Keep-alive, one thread per connection.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace FloodgateTest {

class TestUpstream {
public:
    struct Reply {
        int status = 200;
        std::string reason = "OK";
        std::string headers;  // extra "Name: value\r\n" lines
        std::string body = "hello from upstream";
        int delayMs = 0;
    };

    TestUpstream()
    {
        m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = 0;
        ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        ::bind(m_listen, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::listen(m_listen, 64);
        socklen_t len = sizeof a;
        ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&a), &len);
        m_port = ntohs(a.sin_port);
        m_acceptor = std::thread([this] { acceptLoop(); });
    }
    ~TestUpstream()
    {
        m_stop = true;
        ::shutdown(m_listen, SHUT_RDWR);
        ::close(m_listen);
        if (m_acceptor.joinable())
            m_acceptor.join();
        for (auto& t : m_workers)
            if (t.joinable())
                t.join();
    }

    std::uint16_t port() const { return m_port; }
    void setReply(Reply r)
    {
        std::lock_guard lock(m_mutex);
        m_reply = std::move(r);
    }
    std::vector<std::string> requests()
    {
        std::lock_guard lock(m_mutex);
        return m_requests;
    }
    int connections() const { return m_connections.load(); }

private:
    void acceptLoop()
    {
        while (!m_stop) {
            pollfd p{m_listen, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0)
                continue;
            const int fd = ::accept(m_listen, nullptr, nullptr);
            if (fd < 0)
                continue;
            ++m_connections;
            std::lock_guard lock(m_mutex);
            m_workers.emplace_back([this, fd] { serve(fd); });
        }
    }

    void serve(int fd)
    {
        std::string buf;
        char chunk[16384];
        while (!m_stop) {
            std::size_t end;
            while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
                pollfd p{fd, POLLIN, 0};
                if (::poll(&p, 1, 100) <= 0) {
                    if (m_stop)
                        break;
                    continue;
                }
                const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) {
                    ::close(fd);
                    return;
                }
                buf.append(chunk, std::size_t(n));
            }
            if (end == std::string::npos)
                break;
            std::string head = buf.substr(0, end + 4);
            std::string lower = head;
            for (char& c : lower)
                c = char(std::tolower(static_cast<unsigned char>(c)));
            std::size_t length = 0;
            if (auto p = lower.find("\r\ncontent-length:"); p != std::string::npos)
                length = std::size_t(std::strtoul(lower.c_str() + p + 17, nullptr, 10));
            while (buf.size() < end + 4 + length) {
                const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) {
                    ::close(fd);
                    return;
                }
                buf.append(chunk, std::size_t(n));
            }
            Reply reply;
            {
                std::lock_guard lock(m_mutex);
                m_requests.push_back(buf.substr(0, end + 4 + length));
                reply = m_reply;
            }
            buf.erase(0, end + 4 + length);
            if (reply.delayMs)
                std::this_thread::sleep_for(std::chrono::milliseconds(reply.delayMs));
            const bool headRequest = lower.starts_with("head ");
            std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " + reply.reason + "\r\n" + reply.headers
                + "Content-Length: " + std::to_string(reply.body.size()) + "\r\n\r\n" + (headRequest ? std::string() : reply.body);
            if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) <= 0)
                break;
        }
        ::close(fd);
    }

    int m_listen = -1;
    std::uint16_t m_port = 0;
    std::thread m_acceptor;
    std::vector<std::thread> m_workers;
    std::mutex m_mutex;
    Reply m_reply;
    std::vector<std::string> m_requests;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_connections{0};
};

} // namespace FloodgateTest
