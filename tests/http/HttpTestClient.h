// SPDX-License-Identifier: GPL-3.0-or-later
// A deliberately small HTTP/1.1 client on POSIX sockets for the tests: it
// sends exactly the bytes a test writes (including malformed ones) and reads
// responses back, so nothing in between can "fix" a hostile request.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

namespace FloodgateTest {

struct Response {
    int status = 0;
    std::string reason;
    std::multimap<std::string, std::string> headers;  // names lower-cased
    std::string body;
    std::string header(const std::string& lowerName) const
    {
        auto it = headers.find(lowerName);
        return it == headers.end() ? std::string() : it->second;
    }
};

class Connection {
public:
    Connection() = default;
    explicit Connection(std::uint16_t port, const char* host = "127.0.0.1") { open(port, host); }
    ~Connection() { close(); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // `source`: a loopback address to send from (127.0.0.2...), so one test
    // can play several clients. `receiveBuffer`: a small socket receive
    // buffer in bytes (a slow reader's window fills after a few answers).
    bool open(std::uint16_t port, const char* host = "127.0.0.1", const char* source = nullptr, int receiveBuffer = 0)
    {
        close();
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (receiveBuffer > 0)
            ::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof receiveBuffer);
        if (source) {
            sockaddr_in s{};
            s.sin_family = AF_INET;
            ::inet_pton(AF_INET, source, &s.sin_addr);
            if (::bind(m_fd, reinterpret_cast<sockaddr*>(&s), sizeof s) != 0) {
                close();
                return false;
            }
        }
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        ::inet_pton(AF_INET, host, &a.sin_addr);
        if (::connect(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            close();
            return false;
        }
        int one = 1;
        ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        m_buffer.clear();
        return true;
    }
    void close()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }
    bool isOpen() const { return m_fd >= 0; }

    bool send(const std::string& bytes)
    {
        std::size_t off = 0;
        while (off < bytes.size()) {
            const ssize_t n = ::send(m_fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
            if (n <= 0)
                return false;
            off += std::size_t(n);
        }
        return true;
    }

    // Sends in pieces of `piece` bytes and stops early once the server has
    // answered: a server that refuses an oversized request answers and closes
    // before reading all of it, and writing on into the closed socket earns a
    // reset that can throw the answer away. Returns the bytes sent.
    std::size_t sendUntilAnswered(const std::string& bytes, std::size_t piece = 4096)
    {
        std::size_t off = 0;
        while (off < bytes.size()) {
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, 0) > 0)
                break;
            const ssize_t n = ::send(m_fd, bytes.data() + off, std::min(piece, bytes.size() - off), MSG_NOSIGNAL);
            if (n <= 0)
                break;
            off += std::size_t(n);
        }
        return off;
    }

    // Reads one response; nullopt on timeout or when the peer closed first.
    // A chunked body is decoded.
    std::optional<Response> read(int timeoutMs = 3000, bool headRequest = false)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        auto r = readHeader(deadline);
        if (!r)
            return std::nullopt;
        if (headRequest || r->status == 100 || r->status == 204 || r->status == 304)
            return r;
        if (r->header("transfer-encoding").find("chunked") != std::string::npos) {
            while (true) {
                std::size_t e;
                while ((e = m_buffer.find("\r\n")) == std::string::npos)
                    if (!fill(deadline))
                        return std::nullopt;
                const std::size_t size = std::size_t(std::strtoull(m_buffer.c_str(), nullptr, 16));
                m_buffer.erase(0, e + 2);
                while (m_buffer.size() < size + 2)
                    if (!fill(deadline))
                        return std::nullopt;
                r->body += m_buffer.substr(0, size);
                m_buffer.erase(0, size + 2);  // no trailers in these tests
                if (size == 0)
                    return r;
            }
        }
        std::size_t length = 0;
        if (!r->header("content-length").empty())
            length = std::size_t(std::stoull(r->header("content-length")));
        while (m_buffer.size() < length)
            if (!fill(deadline))
                return std::nullopt;
        r->body = m_buffer.substr(0, length);
        m_buffer.erase(0, length);
        return r;
    }

    // Reads one response's status line and header only: the body stays to
    // be read with readBody (for bodies too large to hold).
    std::optional<Response> readHeader(int timeoutMs = 3000)
    {
        return readHeader(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs));
    }

    // Reads up to `bytes` raw body bytes and hands each piece to `sink`
    // without keeping them; returns how many came before the time ran out
    // or the peer closed. A sink that returns bool stops the reading with false.
    template<class Sink>
    std::uint64_t readBody(std::uint64_t bytes, Sink&& sink, int timeoutMs = 3000)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        std::uint64_t got = 0;
        while (got < bytes) {
            if (m_buffer.empty() && !fill(deadline))
                break;
            const std::size_t n = std::size_t(std::min<std::uint64_t>(bytes - got, m_buffer.size()));
            const std::string_view piece = std::string_view(m_buffer).substr(0, n);
            bool more = true;
            if constexpr (std::is_same_v<decltype(sink(piece)), bool>)
                more = sink(piece);
            else
                sink(piece);
            m_buffer.erase(0, n);
            got += n;
            if (!more)
                break;
        }
        return got;
    }

    int fd() const { return m_fd; }

    // True when the server closed the connection within the time.
    bool closedByPeer(int timeoutMs = 3000)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{m_fd, POLLIN, 0};
            const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
            if (::poll(&p, 1, std::max(1, left)) <= 0)
                continue;
            char buf[4096];
            const ssize_t n = ::recv(m_fd, buf, sizeof buf, 0);
            if (n <= 0)
                return true;
            m_buffer.append(buf, std::size_t(n));
        }
        return false;
    }

    std::string& pending() { return m_buffer; }

    // True when something has arrived (bytes or the peer's close) and not
    // been read yet; waits at most timeoutMs.
    bool readable(int timeoutMs = 0)
    {
        if (!m_buffer.empty())
            return true;
        pollfd p{m_fd, POLLIN, 0};
        return ::poll(&p, 1, timeoutMs) > 0;
    }

private:
    std::optional<Response> readHeader(std::chrono::steady_clock::time_point deadline)
    {
        std::size_t end;
        while ((end = m_buffer.find("\r\n\r\n")) == std::string::npos)
            if (!fill(deadline))
                return std::nullopt;
        Response r;
        const std::string head = m_buffer.substr(0, end);
        std::size_t lineEnd = head.find("\r\n");
        const std::string statusLine = head.substr(0, lineEnd);
        if (statusLine.size() < 12)
            return std::nullopt;
        r.status = std::atoi(statusLine.c_str() + 9);
        r.reason = statusLine.size() > 13 ? statusLine.substr(13) : std::string();
        std::size_t pos = lineEnd == std::string::npos ? head.size() : lineEnd + 2;
        while (pos < head.size()) {
            std::size_t e = head.find("\r\n", pos);
            if (e == std::string::npos)
                e = head.size();
            const std::string line = head.substr(pos, e - pos);
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string name = line.substr(0, colon);
                for (char& c : name)
                    c = char(std::tolower(static_cast<unsigned char>(c)));
                std::string value = line.substr(colon + 1);
                while (!value.empty() && value.front() == ' ')
                    value.erase(0, 1);
                r.headers.emplace(name, value);
            }
            pos = e + 2;
        }
        m_buffer.erase(0, end + 4);
        return r;
    }

    bool fill(std::chrono::steady_clock::time_point deadline)
    {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0)
            return false;
        pollfd p{m_fd, POLLIN, 0};
        if (::poll(&p, 1, int(left)) <= 0)
            return false;
        char buf[16384];
        const ssize_t n = ::recv(m_fd, buf, sizeof buf, 0);
        if (n <= 0)
            return false;
        m_buffer.append(buf, std::size_t(n));
        return true;
    }

    int m_fd = -1;
    std::string m_buffer;
};

inline std::string get(const std::string& target, const std::string& extraHeaders = {})
{
    return "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" + extraHeaders + "\r\n";
}

// Any method, with a body and its Content-Length (the admin API's requests).
inline std::string withBody(const std::string& method, const std::string& target, const std::string& body = {},
                            const std::string& extraHeaders = {})
{
    return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:9090\r\nContent-Length: " + std::to_string(body.size()) + "\r\n"
        + extraHeaders + "\r\n" + body;
}

// Spellings of "/comments" that once slipped past rules for "/comments"
// (absolute-form, doubled slash, trailing slash, an escaped unreserved
// character, a dot segment, a path parameter).
inline const std::string bypassSpellings[] = {"http://127.0.0.1/comments", "//comments", "/comments/",
                                              "/%63omments", "/./comments", "/comments;jsessionid=1"};

// One request on a fresh connection.
inline std::optional<Response> fetch(std::uint16_t port, const std::string& request, int timeoutMs = 3000, const char* source = nullptr)
{
    Connection c;
    c.open(port, "127.0.0.1", source);
    if (!c.isOpen() || !c.send(request))
        return std::nullopt;
    return c.read(timeoutMs);
}

// The header line that carries the admin API's token.
// A socket listening on 127.0.0.1 on a port the kernel picked (written to
// `port`); -1 when it cannot be made. A test that needs a port held, or a
// peer of its own, closes it itself.
inline int listenOnLoopback(int backlog, std::uint16_t& port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        if (fd >= 0)
            ::close(fd);
        return -1;
    }
    port = ntohs(a.sin_port);
    return fd;
}

// A port nothing listens on right now: one the kernel picked, released
// again. For a server a test starts itself (nginx, redis-server); it can be
// taken in between, so such a start retries.
inline std::uint16_t freeLoopbackPort()
{
    std::uint16_t port = 0;
    ::close(listenOnLoopback(1, port));
    return port;
}

inline std::string bearer(const std::string& token)
{
    return "Authorization: Bearer " + token + "\r\n";
}

} // namespace FloodgateTest
