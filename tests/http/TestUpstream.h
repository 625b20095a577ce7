// SPDX-License-Identifier: GPL-3.0-or-later
// A tiny upstream for proxy-mode tests: accepts on 127.0.0.1 (any port),
// records every request it receives verbatim (Content-Length or chunked
// bodies; a large body is counted and hashed, not kept), and answers with
// whatever the test set (status, headers, body, delay). A body can also be
// generated as it is sent, never held in memory, with a length, chunked or
// until the connection closes; a send that blocks is the client's
// back-pressure. Keep-alive, one thread per connection.
// Besides the requests as it framed them, it keeps the exact bytes each
// connection delivered (the first KeptStreamBytes), so a test can count the
// requests in them with a strict RFC 9112 reading (frameRequests) instead of
// trusting this server's own lenient framing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace FloodgateTest {

// The byte at `offset` of a generated body: a period of 251 (a prime), so a
// lost or repeated piece shows wherever it falls.
inline char patternByte(std::uint64_t offset)
{
    return char(offset % 251);
}

// FNV-1a, fed piece by piece: what a body's bytes were, without keeping them.
struct BodyHash {
    std::uint64_t value = 14695981039346656037ull;
    std::uint64_t bytes = 0;
    void add(std::string_view piece)
    {
        for (char c : piece) {
            value ^= static_cast<unsigned char>(c);
            value *= 1099511628211ull;
        }
        bytes += piece.size();
    }
};

class TestUpstream {
public:
    enum class Framing { Length, Chunked, UntilClose };
    struct Reply {
        int status = 200;
        std::string reason = "OK";
        std::string headers;  // extra "Name: value\r\n" lines
        std::string body = "hello from upstream";
        int delayMs = 0;
        // When set, `body` is ignored: this many bytes of patternByte() are
        // generated and sent in pieces as the socket takes them.
        std::uint64_t generatedBytes = 0;
        Framing framing = Framing::Length;
        // A broken upstream: the connection is cut after this many body bytes.
        std::uint64_t cutAfterBytes = UINT64_MAX;
        bool closeAfterReply = false;  // close the connection without saying so (a keep-alive the upstream drops)
        // A keep-alive the upstream closes just as it is reused: after this
        // many answers on one connection, the next request is read (and
        // recorded) and the connection closed unanswered. 0: never.
        int answersPerConnection = 0;
        // Like Python's http.server and Node: answer "Expect: 100-continue"
        // with an interim 100 before the final response.
        bool continueOnExpect = false;
        // Adds "X-Echo-Target: <request target>" so a test can match answers to requests.
        bool echoTarget = false;
        // Bytes nobody asked for, sent on the keep-alive connection 20 ms
        // after each reply (an upstream's late "408" before it closes).
        std::string afterReply{};
    };
    static constexpr std::size_t KeptRequestBytes = 1 << 20;  // longer requests are recorded as head + byte count
    static constexpr std::size_t KeptStreamBytes = 4 << 20;   // per connection, for streams()

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
    // The decoded body of the last request, counted and hashed.
    BodyHash lastBody()
    {
        std::lock_guard lock(m_mutex);
        return m_lastBody;
    }
    int connections() const { return m_connections.load(); }
    std::uint64_t bodyBytesSent() const { return m_bodyBytesSent.load(); }
    // The exact bytes received, one string per connection in accept order.
    std::vector<std::string> streams()
    {
        std::lock_guard lock(m_mutex);
        return m_streams;
    }

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
            // A head and its body go out in separate sends: without this,
            // Nagle holds the body until the peer's delayed ACK (40 ms a reply).
            int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ++m_connections;
            std::lock_guard lock(m_mutex);
            m_streams.emplace_back();
            const std::size_t stream = m_streams.size() - 1;
            m_workers.emplace_back([this, fd, stream] { serve(fd, stream); });
        }
    }

    // More bytes into buf; false when the peer closed or the test is over.
    bool fill(int fd, std::string& buf, std::size_t stream)
    {
        char chunk[16384];
        while (!m_stop) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0)
                continue;
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0)
                return false;
            buf.append(chunk, std::size_t(n));
            std::lock_guard lock(m_mutex);
            std::string& kept = m_streams[stream];
            kept.append(chunk, std::min(std::size_t(n), KeptStreamBytes - std::min(KeptStreamBytes, kept.size())));
            return true;
        }
        return false;
    }

    bool sendAll(int fd, std::string_view bytes)
    {
        while (!bytes.empty()) {
            const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0)
                return false;
            bytes.remove_prefix(std::size_t(n));
        }
        return true;
    }

    // One request: its bytes as received (while short) and its decoded body's hash.
    bool readRequest(int fd, std::size_t stream, std::string& buf, std::string& raw, std::string& lower, BodyHash& body)
    {
        std::size_t end;
        while ((end = buf.find("\r\n\r\n")) == std::string::npos)
            if (!fill(fd, buf, stream))
                return false;
        raw = buf.substr(0, end + 4);
        buf.erase(0, end + 4);
        lower = raw;
        for (char& c : lower)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        auto keepRaw = [&](std::string_view piece) {
            if (raw.size() <= KeptRequestBytes)
                raw += piece;
        };
        // `n` body bytes from buf (filling it as needed), into the hash.
        auto take = [&](std::uint64_t n) {
            while (n > 0) {
                if (buf.empty() && !fill(fd, buf, stream))
                    return false;
                const std::size_t piece = std::size_t(std::min<std::uint64_t>(n, buf.size()));
                body.add(std::string_view(buf).substr(0, piece));
                keepRaw(std::string_view(buf).substr(0, piece));
                buf.erase(0, piece);
                n -= piece;
            }
            return true;
        };
        auto line = [&](std::string& out) {
            std::size_t e;
            while ((e = buf.find("\r\n")) == std::string::npos)
                if (!fill(fd, buf, stream))
                    return false;
            out = buf.substr(0, e);
            keepRaw(std::string_view(buf).substr(0, e + 2));
            buf.erase(0, e + 2);
            return true;
        };
        if (lower.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
            std::string sizeLine;
            while (true) {
                if (!line(sizeLine))
                    return false;
                const std::uint64_t size = std::strtoull(sizeLine.c_str(), nullptr, 16);
                if (size == 0) {
                    std::string trailer;
                    do {
                        if (!line(trailer))
                            return false;
                    } while (!trailer.empty());
                    return true;
                }
                std::string crlf;
                if (!take(size) || !line(crlf))
                    return false;
            }
        }
        std::uint64_t length = 0;
        if (auto p = lower.find("\r\ncontent-length:"); p != std::string::npos)
            length = std::strtoull(lower.c_str() + p + 17, nullptr, 10);
        return take(length);
    }

    bool sendReply(int fd, const Reply& reply, const std::string& raw, const std::string& lower)
    {
        const bool headRequest = lower.starts_with("head ");
        const bool generated = reply.generatedBytes > 0;
        const std::uint64_t length = generated ? reply.generatedBytes : reply.body.size();
        std::string head;
        if (reply.continueOnExpect && lower.find("\r\nexpect: 100-continue\r\n") != std::string::npos)
            head += "HTTP/1.1 100 Continue\r\n\r\n";
        head += "HTTP/1.1 " + std::to_string(reply.status) + " " + reply.reason + "\r\n" + reply.headers;
        if (reply.echoTarget) {
            const auto sp = raw.find(' ');
            head += "X-Echo-Target: " + raw.substr(sp + 1, raw.find(' ', sp + 1) - sp - 1) + "\r\n";
        }
        if (reply.framing == Framing::Length)
            head += "Content-Length: " + std::to_string(length) + "\r\n";
        else if (reply.framing == Framing::Chunked)
            head += "Transfer-Encoding: chunked\r\n";
        else
            head += "Connection: close\r\n";
        head += "\r\n";
        if (!sendAll(fd, head))
            return false;
        if (headRequest || reply.status == 204 || reply.status == 304)
            return true;
        std::string piece;
        std::uint64_t sent = 0;
        while (sent < length) {
            const std::size_t n = std::size_t(std::min<std::uint64_t>(length - sent, 64 * 1024));
            if (generated) {
                piece.resize(n);
                for (std::size_t i = 0; i < n; ++i)
                    piece[i] = patternByte(sent + i);
            } else {
                piece = reply.body.substr(std::size_t(sent), n);
            }
            if (sent + n > reply.cutAfterBytes) {
                sendAll(fd, std::string_view(piece).substr(0, std::size_t(reply.cutAfterBytes - sent)));
                return false;
            }
            if (reply.framing == Framing::Chunked) {
                char size[20];
                std::snprintf(size, sizeof size, "%zx\r\n", n);
                if (!sendAll(fd, size))
                    return false;
                piece += "\r\n";
            }
            if (!sendAll(fd, piece))
                return false;
            sent += n;
            m_bodyBytesSent += n;
        }
        if (reply.framing == Framing::Chunked && !sendAll(fd, "0\r\n\r\n"))
            return false;
        return reply.framing != Framing::UntilClose;
    }

    void serve(int fd, std::size_t stream)
    {
        std::string buf;
        int answered = 0;
        while (!m_stop) {
            std::string raw, lower;
            BodyHash body;
            if (!readRequest(fd, stream, buf, raw, lower, body))
                break;
            Reply reply;
            {
                std::lock_guard lock(m_mutex);
                if (raw.size() > KeptRequestBytes)
                    raw = raw.substr(0, raw.find("\r\n\r\n") + 4) + "[" + std::to_string(body.bytes) + " body bytes]";
                m_requests.push_back(raw);
                m_lastBody = body;
                reply = m_reply;
            }
            if (reply.answersPerConnection > 0 && answered >= reply.answersPerConnection)
                break;
            if (reply.delayMs)
                std::this_thread::sleep_for(std::chrono::milliseconds(reply.delayMs));
            if (!sendReply(fd, reply, raw, lower) || reply.closeAfterReply)
                break;
            if (!reply.afterReply.empty()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                if (!sendAll(fd, reply.afterReply))
                    break;
            }
            ++answered;
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
    std::vector<std::string> m_streams;
    BodyHash m_lastBody;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_connections{0};
    std::atomic<std::uint64_t> m_bodyBytesSent{0};
};

// How RFC 9112 frames a stream of requests, read strictly (what a careful
// origin server would accept): CRLF line ends only; "METHOD SP target SP
// HTTP/1.1" with a token method and an origin-form target ("/..." or "*");
// fields "token: value" with no control characters in the value; at most one
// Content-Length (digits only) or one "Transfer-Encoding: chunked", never
// both; chunked bodies with hex sizes, extensions and trailers. `requests` is
// how many complete requests the bytes hold; `problem` is empty when every
// byte belongs to one of them, otherwise it says what is wrong and where.
struct StrictFraming {
    int requests = 0;
    std::string problem;
};

inline StrictFraming frameRequests(std::string_view s)
{
    StrictFraming out;
    std::size_t pos = 0;
    auto fail = [&](const std::string& why) {
        out.problem = why + " at byte " + std::to_string(pos) + " (request " + std::to_string(out.requests + 1) + ")";
        return out;
    };
    auto isTchar = [](unsigned char c) {
        return std::isalnum(c) || (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
    };
    auto isToken = [&](std::string_view t) {
        if (t.empty())
            return false;
        for (unsigned char c : t)
            if (!isTchar(c))
                return false;
        return true;
    };
    auto lower = [](std::string_view t) {
        std::string l(t);
        for (char& c : l)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        return l;
    };
    // One CRLF-terminated line from pos; false when there is none. A bare CR
    // or LF inside the line is a problem of its own.
    std::string_view line;
    auto nextLine = [&]() -> int {  // 1 line, 0 incomplete, -1 bare CR/LF
        const auto eol = s.find("\r\n", pos);
        const auto lf = s.find('\n', pos);
        const auto cr = s.find('\r', pos);
        if (lf != std::string_view::npos && (eol == std::string_view::npos || lf < eol + 1))
            return -1;
        if (cr != std::string_view::npos && cr < eol)
            return -1;
        if (eol == std::string_view::npos)
            return 0;
        line = s.substr(pos, eol - pos);
        pos = eol + 2;
        return 1;
    };
    while (pos < s.size()) {
        if (int r = nextLine(); r <= 0)
            return fail(r == 0 ? "incomplete request line" : "bare CR or LF");
        const auto sp1 = line.find(' ');
        const auto sp2 = line.find(' ', sp1 == std::string_view::npos ? sp1 : sp1 + 1);
        if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
            return fail("request line is not METHOD SP target SP version");
        const std::string_view method = line.substr(0, sp1);
        const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        if (!isToken(method))
            return fail("method is not a token");
        if (target.empty() || (target[0] != '/' && target != "*"))
            return fail("target is not in origin form");
        for (unsigned char c : target)
            if (c <= 0x20 || c == 0x7f)
                return fail("control character in the target");
        if (line.substr(sp2 + 1) != "HTTP/1.1")
            return fail("version is not HTTP/1.1");
        int lengths = 0;
        int codings = 0;
        std::uint64_t length = 0;
        while (true) {
            if (int r = nextLine(); r <= 0)
                return fail(r == 0 ? "incomplete header" : "bare CR or LF");
            if (line.empty())
                break;
            const auto colon = line.find(':');
            if (colon == std::string_view::npos || !isToken(line.substr(0, colon)))
                return fail("field name is not a token followed by ':'");
            std::string_view value = line.substr(colon + 1);
            for (unsigned char c : value)
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                    return fail("control character in a field value");
            while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
                value.remove_prefix(1);
            while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
                value.remove_suffix(1);
            const std::string name = lower(line.substr(0, colon));
            if (name == "content-length") {
                ++lengths;
                if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos)
                    return fail("Content-Length is not a plain number");
                length = std::stoull(std::string(value));
            } else if (name == "transfer-encoding") {
                ++codings;
                if (lower(value) != "chunked")
                    return fail("Transfer-Encoding other than chunked");
            }
        }
        if (lengths > 1 || codings > 1 || (lengths && codings))
            return fail("more than one framing (Content-Length / Transfer-Encoding)");
        if (codings) {
            while (true) {
                if (int r = nextLine(); r <= 0)
                    return fail(r == 0 ? "incomplete chunk size" : "bare CR or LF");
                const std::string_view size = line.substr(0, line.find(';'));
                if (size.empty() || size.size() > 15 || size.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
                    return fail("chunk size is not hex");
                const std::uint64_t n = std::stoull(std::string(size), nullptr, 16);
                if (n == 0)
                    break;
                if (s.size() - pos < n + 2)
                    return fail("incomplete chunk");
                pos += n;
                if (s.substr(pos, 2) != "\r\n")
                    return fail("chunk data not followed by CRLF");
                pos += 2;
            }
            while (true) {  // trailer fields, then the empty line
                if (int r = nextLine(); r <= 0)
                    return fail(r == 0 ? "incomplete trailer" : "bare CR or LF");
                if (line.empty())
                    break;
            }
        } else {
            if (s.size() - pos < length)
                return fail("incomplete body");
            pos += std::size_t(length);
        }
        ++out.requests;
    }
    return out;
}

} // namespace FloodgateTest
