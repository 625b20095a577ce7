// SPDX-License-Identifier: GPL-3.0-or-later
// A fixed-rate HTTP load for scripts/bench-cluster, which wrk cannot give
// (wrk sends as fast as it can): request i leaves at start + i / RATE on a
// keep-alive connection, whatever the answers, and names its client in
// X-Forwarded-For (the nodes trust 127.0.0.1 as a proxy), so one process can
// be one attacker, a thousand calm clients or a spray of a hundred thousand.
// With --rate max it sends as fast as the answers come instead (each
// connection's next request leaves when its answer is in), for
// scripts/bench-spray, which needs an exact count of requests that each name
// a client of their own (wrk's Lua cannot stop at a count without cutting
// requests in flight).
//
//   bench_cluster_load --targets HOST:PORT[,HOST:PORT...] --rate R (--seconds S | --requests N)
//                      [--clients K] [--first-client A.B.C.D] [--connections C]
//   bench_cluster_load --targets HOST:PORT[,HOST:PORT...] --rate max --seconds S [--requests N]
//                      [--clients K | --clients distinct] [--first-client A.B.C.D] [--connections C]
//
// Request i is client (first + i % K). A client's m-th request goes to target
// (m + client) % T: each client alternates over the targets (round robin, as
// a load balancer would spread it), and so does the stream as a whole.
// With --rate max, S is a time limit: sending stops after N requests or S
// seconds, whichever comes first, and the answers still due are waited for.
// --clients distinct gives every request a client of its own (a spray of
// spoofed addresses), request i going to target i % T: of each eight
// requests, seven come from IPv4 addresses counting up from 10.0.0.0
// (10.0.0.0/8 holds 16,777,216; beyond it the count runs on into 11.0.0.0
// and up) and the eighth from an IPv6 address in a /64 of its own
// (2001:db8:X:Y::1; IPv6 clients are counted per /64 by default). At most
// 1,000,000,000 requests then, so that no address reaches 127.0.0.0/8.
// One outstanding request per connection; C connections per target (default
// 8). When every connection of the next request's target is busy, the
// request waits and is counted late; a rate the nodes cannot follow shows
// as `late_max_ms` and an achieved rate below the one asked for.
//
// Prints "name value" lines: sent, answered, status_NNN per status seen,
// errors (connection lost or refused), seconds, rate, p50_us, p99_us,
// late_over_1ms, late_max_ms, and ok_per_second: the 2xx answers to the
// requests due in each second of the run, comma-separated (when the
// admissions happened, for an attack). Exit code 1 on bad arguments or when no
// connection can be made.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Target {
    sockaddr_in addr{};
    std::vector<int> idle;  // indexes into the connection list
};

struct Connection {
    int fd = -1;
    std::size_t target = 0;
    bool busy = false;
    std::uint64_t request = 0;  // the index of the request it waits for
    Clock::time_point sentAt;
    std::string in;
};

[[noreturn]] void usage(const char* why)
{
    std::fprintf(stderr,
                 "bench_cluster_load: %s\nusage: bench_cluster_load --targets HOST:PORT[,HOST:PORT...] --rate R (--seconds S | --requests N)\n"
                 "                          [--clients K] [--first-client A.B.C.D] [--connections C]\n"
                 "       bench_cluster_load --targets HOST:PORT[,HOST:PORT...] --rate max --seconds S [--requests N]\n"
                 "                          [--clients K | --clients distinct] [--first-client A.B.C.D] [--connections C]\n",
                 why);
    std::exit(1);
}

bool parseTarget(const std::string& s, sockaddr_in& out)
{
    const auto colon = s.rfind(':');
    if (colon == std::string::npos)
        return false;
    out.sin_family = AF_INET;
    char* end = nullptr;
    const long port = std::strtol(s.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535)
        return false;
    out.sin_port = htons(std::uint16_t(port));
    return inet_pton(AF_INET, s.substr(0, colon).c_str(), &out.sin_addr) == 1;
}

int openConnection(const sockaddr_in& addr)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

bool sendAll(int fd, const std::string& data)
{
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += std::size_t(n);
    }
    return true;
}

bool startsWithName(std::string_view line, std::string_view lowerName)
{
    return line.size() > lowerName.size()
        && std::equal(lowerName.begin(), lowerName.end(), line.begin(), [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
}

// A complete response at the start of `in`: its status, whether the server
// closes the connection after it, and its length; 0 while incomplete.
std::size_t completeResponse(const std::string& in, int& status, bool& closes)
{
    const auto headEnd = in.find("\r\n\r\n");
    if (headEnd == std::string::npos || in.size() < 12)
        return 0;
    status = std::atoi(in.c_str() + 9);
    std::size_t length = 0;
    std::size_t pos = in.find("\r\n");
    while (pos < headEnd) {
        const std::size_t next = in.find("\r\n", pos + 2);
        const std::string_view line(in.data() + pos + 2, next - pos - 2);
        if (startsWithName(line, "content-length:"))
            length = std::strtoul(std::string(line.substr(15)).c_str(), nullptr, 10);
        else if (startsWithName(line, "connection:") && line.find("close") != std::string_view::npos)
            closes = true;
        pos = next;
    }
    const std::size_t total = headEnd + 4 + length;
    return in.size() >= total ? total : 0;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<Target> targets;
    double rate = 0, seconds = 0;
    bool closedLoop = false;  // --rate max
    bool distinct = false;    // --clients distinct
    bool firstGiven = false;
    std::uint64_t requests = 0, clients = 1;
    std::uint32_t firstClient = 0x0a000001;  // 10.0.0.1
    int perTarget = 8;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc)
            usage(("missing the value of " + a).c_str());
        const std::string v = argv[++i];
        if (a == "--targets") {
            std::size_t start = 0;
            while (start <= v.size()) {
                const auto comma = v.find(',', start);
                Target t;
                if (!parseTarget(v.substr(start, comma - start), t.addr))
                    usage("--targets: expected HOST:PORT[,HOST:PORT...] with IPv4 hosts");
                targets.push_back(t);
                if (comma == std::string::npos)
                    break;
                start = comma + 1;
            }
        } else if (a == "--rate") {
            closedLoop = v == "max";
            rate = closedLoop ? 0 : std::atof(v.c_str());
        } else if (a == "--seconds") {
            seconds = std::atof(v.c_str());
        } else if (a == "--requests") {
            requests = std::strtoull(v.c_str(), nullptr, 10);
        } else if (a == "--clients") {
            distinct = v == "distinct";
            clients = distinct ? 1 : std::strtoull(v.c_str(), nullptr, 10);
        } else if (a == "--first-client") {
            in_addr addr{};
            if (inet_pton(AF_INET, v.c_str(), &addr) != 1)
                usage("--first-client: expected an IPv4 address");
            firstClient = ntohl(addr.s_addr);
            firstGiven = true;
        } else if (a == "--connections") {
            perTarget = std::atoi(v.c_str());
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (targets.empty() || clients == 0 || perTarget <= 0)
        usage("need --targets, and positive --clients and --connections");
    if (closedLoop) {
        if (!(seconds > 0))
            usage("--rate max needs --seconds (the time limit)");
        if (requests == 0)
            requests = UINT64_MAX;
    } else {
        if (!(rate > 0) || (requests == 0) == (seconds <= 0))
            usage("need a positive --rate (or max), and one of --seconds or --requests");
        if (requests == 0)
            requests = std::uint64_t(rate * seconds);
    }
    if (distinct && firstGiven)
        usage("--clients distinct has its own addresses: no --first-client");
    if (distinct && requests > 1'000'000'000)
        usage("--clients distinct: at most 1,000,000,000 requests (--requests)");

    std::vector<Connection> conns;
    for (std::size_t t = 0; t < targets.size(); ++t)
        for (int c = 0; c < perTarget; ++c) {
            Connection k;
            k.fd = openConnection(targets[t].addr);
            if (k.fd < 0) {
                std::fprintf(stderr, "bench_cluster_load: cannot connect to target %zu: %s\n", t, std::strerror(errno));
                return 1;
            }
            k.target = t;
            targets[t].idle.push_back(int(conns.size()));
            conns.push_back(std::move(k));
        }

    std::map<int, std::uint64_t> statuses;
    std::vector<std::uint32_t> latencies;
    std::vector<std::uint64_t> okPerSecond;
    latencies.reserve(std::min<std::uint64_t>(requests, 100'000'000));
    std::uint64_t sent = 0, answered = 0, errors = 0, lateOver1ms = 0;
    double lateMaxMs = 0;
    std::size_t outstanding = 0;
    // Closed loop: every request is due at the start, sent when a connection is free.
    const double interval = closedLoop ? 0.0 : 1.0 / rate;
    const Clock::time_point start = Clock::now();
    auto after = [&](double s) { return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
    // No request leaves after this (closed loop: the time limit).
    const Clock::time_point sendUntil = closedLoop ? after(seconds) : Clock::time_point::max();
    // Answers still missing this long after the last request was due are errors.
    const Clock::time_point deadline = closedLoop ? after(seconds + 5.0) : after(double(requests) * interval + 5.0);
    auto dueAt = [&](std::uint64_t i) { return after(double(i) * interval); };
    auto targetOf = [&](std::uint64_t i) { return std::size_t((distinct ? i : i / clients + i % clients) % targets.size()); };
    auto requestFor = [&](std::uint64_t i) {
        char buf[160];
        int n;
        if (distinct && i % 8 == 7) {
            const std::uint64_t v6 = i / 8;
            n = std::snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 2001:db8:%x:%x::1\r\n\r\n", unsigned(v6 >> 16),
                              unsigned(v6 & 0xffff));
        } else {
            const std::uint32_t c = distinct ? 0x0a000000u + std::uint32_t(i / 8 * 7 + i % 8) : firstClient + std::uint32_t(i % clients);
            n = std::snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: %u.%u.%u.%u\r\n\r\n", c >> 24, (c >> 16) & 255,
                              (c >> 8) & 255, c & 255);
        }
        return std::string(buf, std::size_t(n));
    };
    auto lose = [&](Connection& k) {  // the connection failed: its request is an error, a new one replaces it
        if (k.busy) {
            ++errors;
            --outstanding;
            k.busy = false;
        }
        ::close(k.fd);
        k.in.clear();
        k.fd = openConnection(targets[k.target].addr);
        if (k.fd >= 0)
            targets[k.target].idle.push_back(int(&k - conns.data()));
    };

    std::vector<pollfd> fds;
    std::vector<int> fdConn;
    char buf[65536];
    while (((sent < requests && Clock::now() < sendUntil) || outstanding > 0) && Clock::now() < deadline) {
        Clock::time_point now = Clock::now();
        while (sent < requests && dueAt(sent) <= now && now < sendUntil) {
            Target& t = targets[targetOf(sent)];
            if (t.idle.empty())
                break;  // late: waits for an answer on that target
            const int ci = t.idle.back();
            t.idle.pop_back();
            Connection& k = conns[std::size_t(ci)];
            if (!closedLoop) {
                const double late = std::chrono::duration<double, std::milli>(now - dueAt(sent)).count();
                lateMaxMs = std::max(lateMaxMs, late);
                lateOver1ms += late > 1.0;
            }
            k.busy = true;
            k.request = sent;
            k.sentAt = now;
            ++outstanding;
            ++sent;
            if (!sendAll(k.fd, requestFor(sent - 1)))
                lose(k);
            now = Clock::now();
        }
        // Sleep until the next request is due (if its target has a free
        // connection) or an answer comes.
        int timeoutUs = 100'000;
        if (sent < requests && now < sendUntil && !targets[targetOf(sent)].idle.empty())
            timeoutUs = int(std::clamp<std::int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(dueAt(sent) - now).count(), 0, 100'000));
        fds.clear();
        fdConn.clear();
        for (std::size_t i = 0; i < conns.size(); ++i)
            if (conns[i].busy) {
                fds.push_back(pollfd{conns[i].fd, POLLIN, 0});
                fdConn.push_back(int(i));
            }
        const timespec ts{timeoutUs / 1'000'000, long(timeoutUs % 1'000'000) * 1000};
        const int ready = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
        if (ready <= 0)
            continue;
        for (std::size_t f = 0; f < fds.size(); ++f) {
            if (!fds[f].revents)
                continue;
            Connection& k = conns[std::size_t(fdConn[f])];
            const ssize_t n = ::recv(k.fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0) {
                lose(k);
                continue;
            }
            k.in.append(buf, std::size_t(n));
            int status = 0;
            bool closes = false;
            const std::size_t length = completeResponse(k.in, status, closes);
            if (length == 0)
                continue;
            const auto done = Clock::now();
            latencies.push_back(std::uint32_t(std::chrono::duration_cast<std::chrono::microseconds>(done - k.sentAt).count()));
            ++statuses[status];
            if (status >= 200 && status < 300) {
                const std::size_t second = closedLoop ? std::size_t(std::chrono::duration<double>(k.sentAt - start).count())
                                                      : std::size_t(double(k.request) * interval);
                if (okPerSecond.size() <= second)
                    okPerSecond.resize(second + 1);
                ++okPerSecond[second];
            }
            ++answered;
            --outstanding;
            k.busy = false;
            k.in.erase(0, length);
            if (closes || !k.in.empty() || status == 0)
                lose(k);
            else
                targets[k.target].idle.push_back(fdConn[f]);
        }
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    errors += outstanding;  // still unanswered at the deadline
    std::sort(latencies.begin(), latencies.end());
    auto pct = [&](double p) { return latencies.empty() ? 0u : latencies[std::min(latencies.size() - 1, std::size_t(double(latencies.size()) * p))]; };
    std::printf("sent %llu\nanswered %llu\n", static_cast<unsigned long long>(sent), static_cast<unsigned long long>(answered));
    for (const auto& [status, count] : statuses)
        std::printf("status_%d %llu\n", status, static_cast<unsigned long long>(count));
    std::printf("errors %llu\nseconds %.3f\nrate %.1f\np50_us %u\np99_us %u\nlate_over_1ms %llu\nlate_max_ms %.1f\n", static_cast<unsigned long long>(errors),
                elapsed, double(sent) / elapsed, pct(0.50), pct(0.99), static_cast<unsigned long long>(lateOver1ms), lateMaxMs);
    std::printf("ok_per_second ");
    for (std::size_t s = 0; s < okPerSecond.size(); ++s)
        std::printf("%s%llu", s ? "," : "", static_cast<unsigned long long>(okPerSecond[s]));
    std::printf("%s\n", okPerSecond.empty() ? "-" : "");
    for (Connection& k : conns)
        if (k.fd >= 0)
            ::close(k.fd);
    return 0;
}
