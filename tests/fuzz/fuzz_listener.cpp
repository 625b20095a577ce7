// SPDX-License-Identifier: GPL-3.0-or-later
// The whole HTTP request path through the real listener: its parser (a Beast
// basic_parser private to Listener.cpp, reachable only through a socket), the
// smuggling checks, pipelining, the trusted-proxy headers, the engine and the
// answer. One listener in decision mode runs for the whole fuzzing session on
// 127.0.0.1; each input is written on a fresh connection, the write side is
// shut, and the answers are read until the listener closes. Properties: the
// listener never crashes, always closes (no hang past the deadline), every
// answer is a well-framed HTTP/1.1 response, and it still serves a normal
// request after every input.
#include "core/Engine.h"
#include "FuzzCheck.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "http/Metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

using namespace Floodgate;

namespace {

struct Server {
    Server()
        : engine([] {
            Core::EngineConfig c = Core::defaultConfig();
            c.escalation.enabled = false;
            c.rules.clear();  // nothing throttled: every input reaches the whole path
            return c;
        }())
    {
        Http::ListenerOptions o;
        o.port = 0;
        o.threads = 1;
        o.headerTimeoutMs = 2000;
        o.bodyLimitBytes = 64 * 1024;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.0/8")});
        listener = std::make_unique<Http::Listener>(engine, o, &log, &metrics);
        std::string why;
        log.start(&why);
        if (!listener->start(&why)) {
            std::fprintf(stderr, "listener: %s\n", why.c_str());
            std::abort();
        }
    }
    Core::Engine engine;
    Http::LimiterLog log{std::string(), 1};
    Http::ListenerMetrics metrics{1};
    std::unique_ptr<Http::Listener> listener;
};

// libFuzzer's -timeout runs a once-a-second SIGALRM, so every blocking
// call here may return EINTR: each is retried (connect() by waiting for the
// handshake it had started).
int connectTo(std::uint16_t port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        FUZZ_CHECK(errno == EINTR);
        pollfd p{fd, POLLOUT, 0};
        while (::poll(&p, 1, 5000) < 0 && errno == EINTR) {
        }
        int error = 0;
        socklen_t length = sizeof error;
        FUZZ_CHECK(::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0 && (p.revents & POLLOUT));
    }
    return fd;
}

// Sends what it can; false once the listener closed (it may refuse and
// close before reading everything).
bool sendAll(int fd, const char* data, std::size_t size)
{
    std::size_t off = 0;
    while (off < size) {
        const ssize_t n = ::send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        off += std::size_t(n);
    }
    return true;
}

// Everything the listener answers until it closes; false when it did not
// close within `ms`.
bool readToClose(int fd, std::string& out, int ms)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    char buf[16384];
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0)
            return false;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, int(left)) <= 0)
            continue;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return true;  // closed (or reset: the listener closed with unread input)
        out.append(buf, std::size_t(n));
    }
}

// Every byte is one well-framed response after another, each with a
// Content-Length (HEAD answers have the header only, and a short tail is
// allowed for a HEAD answered last).
void checkResponses(std::string_view s)
{
    while (!s.empty()) {
        FUZZ_CHECK(s.starts_with("HTTP/1.1 ") || s.starts_with("HTTP/1.0 "));
        const auto end = s.find("\r\n\r\n");
        FUZZ_CHECK(end != std::string_view::npos);
        const std::string_view head = s.substr(0, end);
        const int status = std::atoi(std::string(head.substr(9, 3)).c_str());
        FUZZ_CHECK(status >= 100 && status <= 599);
        std::size_t length = 0;
        if (const auto cl = head.find("\r\nContent-Length: "); cl != std::string_view::npos)
            std::from_chars(head.data() + cl + 18, head.data() + head.size(), length);
        else
            FUZZ_CHECK(status == 100 || status == 204 || status == 304);
        s.remove_prefix(end + 4);
        // An answer to HEAD carries the Content-Length of the body it leaves
        // out: when the next answer follows at once, this one had no body.
        if (!s.starts_with("HTTP/1.1 ") && !s.starts_with("HTTP/1.0 "))
            s.remove_prefix(std::min(length, s.size()));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static Server server;
    const std::uint16_t port = server.listener->port();
    const int fd = connectTo(port);
    sendAll(fd, reinterpret_cast<const char*>(data), size);
    ::shutdown(fd, SHUT_WR);
    std::string answer;
    FUZZ_CHECK(readToClose(fd, answer, 5000));
    ::close(fd);
    checkResponses(answer);

    // Still serving.
    const int ok = connectTo(port);
    static const std::string get = "GET /fuzz-health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    FUZZ_CHECK(sendAll(ok, get.data(), get.size()));
    std::string health;
    FUZZ_CHECK(readToClose(ok, health, 5000));
    ::close(ok);
    FUZZ_CHECK(health.starts_with("HTTP/1.1 200 "));
    return 0;
}
