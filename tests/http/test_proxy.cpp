// SPDX-License-Identifier: GPL-3.0-or-later
// Proxy mode over real sockets: Floodgate between a raw test client and a
// test upstream that records exactly what it received.
#include <QElapsedTimer>
#include <QtTest>

#ifndef Q_MOC_RUN
#include "HttpTestClient.h"
#include "ListenerStack.h"
#include "ProcessMemory.h"
#include "TestUpstream.h"

#include <cstdio>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

using Proxy = ProxyServer;

bool contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
}

} // namespace

class TestProxy : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void upstreamUrlParsing_data()
    {
        QTest::addColumn<QString>("url");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("base");
        QTest::newRow("plain") << QStringLiteral("http://127.0.0.1:3000") << true << QStringLiteral("127.0.0.1") << 3000 << QString();
        QTest::newRow("default port, path") << QStringLiteral("http://app.internal/api/") << true << QStringLiteral("app.internal") << 80
                                            << QStringLiteral("/api");
        QTest::newRow("ipv6") << QStringLiteral("http://[::1]:8081") << true << QStringLiteral("::1") << 8081 << QString();
        QTest::newRow("https refused") << QStringLiteral("https://example.com") << false << QString() << 0 << QString();
        QTest::newRow("no scheme") << QStringLiteral("127.0.0.1:3000") << false << QString() << 0 << QString();
        QTest::newRow("bad port") << QStringLiteral("http://h:99999") << false << QString() << 0 << QString();
    }
    void upstreamUrlParsing()
    {
        QFETCH(QString, url);
        QFETCH(bool, ok);
        QFETCH(QString, host);
        QFETCH(int, port);
        QFETCH(QString, base);
        std::string why;
        auto u = Http::UpstreamUrl::parse(url.toStdString(), &why);
        QCOMPARE(u.has_value(), ok);
        if (!ok) {
            QVERIFY(!why.empty());
            return;
        }
        QCOMPARE(QString::fromStdString(u->host), host);
        QCOMPARE(int(u->port), port);
        QCOMPARE(QString::fromStdString(u->basePath), base);
    }

    void roundTripIsReserialised()
    {
        TestUpstream up;
        up.setReply({201, "Created", "X-Upstream: yes\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive, X-Secret\r\nX-Secret: hop\r\n",
                     "{\"id\":7}", 0});
        Proxy p(up.port());
        QVERIFY2(p.started, p.error.c_str());
        Connection c(p.port());
        QVERIFY(c.send("PUT /items/7?full=1&x=%20y HTTP/1.1\r\nHost: shop.example\r\nX-Custom: kept\r\nConnection: keep-alive, X-Drop\r\n"
                       "X-Drop: dropped\r\nTE: trailers\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"name\":1}\n"));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 201);
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("{\"id\":7}"));
        QCOMPARE(QString::fromStdString(r->header("x-upstream")), QStringLiteral("yes"));
        QVERIFY(r->header("keep-alive").empty());
        QVERIFY(r->header("x-secret").empty());  // named in the upstream's Connection header: hop-by-hop
        QCOMPARE(QString::fromStdString(r->header("ratelimit")), QStringLiteral("\"ip-3s\";r=5;t=3"));

        const auto reqs = up.requests();
        QCOMPARE(int(reqs.size()), 1);
        const std::string& got = reqs[0];
        QVERIFY2(got.starts_with("PUT /app/items/7?full=1&x=%20y HTTP/1.1\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nHost: shop.example\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Custom: kept\r\n"), got.c_str());
        QVERIFY2(!contains(got, "X-Drop"), got.c_str());
        QVERIFY2(!contains(got, "\r\nTE:"), got.c_str());
        // The client's Connection header ends at this hop, and none is
        // written: HTTP/1.1 keeps the upstream connection by default.
        QVERIFY2(!contains(got, "\r\nConnection:"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-For: 127.0.0.1\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Proto: http\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Host: shop.example\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nContent-Length: 11\r\n"), got.c_str());
        QVERIFY2(got.ends_with("\r\n\r\n{\"name\":1}\n"), got.c_str());
    }

    void chunkedBodiesStreamOnChunked()
    {
        // A chunked body is passed on as it comes (chunked again), not
        // gathered first to count it.
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const auto reqs = up.requests();
        QCOMPARE(int(reqs.size()), 1);
        QVERIFY2(contains(reqs[0], "\r\nTransfer-Encoding: chunked\r\n"), reqs[0].c_str());
        QVERIFY2(!contains(reqs[0], "Content-Length"), reqs[0].c_str());
        QVERIFY2(reqs[0].ends_with("0\r\n\r\n"), reqs[0].c_str());
        BodyHash expected;
        expected.add("hello world");
        QCOMPARE(up.lastBody().bytes, expected.bytes);
        QCOMPARE(up.lastBody().value, expected.value);
    }

    void expectContinueIsAnsweredHere()
    {
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send("PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
        auto interim = c.read();
        QVERIFY(interim);
        QCOMPARE(interim->status, 100);
        QVERIFY(c.send("data"));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::string got = up.requests().at(0);
        QVERIFY2(!contains(got, "Expect"), got.c_str());  // the expectation was met on this hop
        QVERIFY2(got.ends_with("\r\nContent-Length: 4\r\n\r\ndata"), got.c_str());
    }

    void spoofedForwardingFromAnUntrustedPeerIsReplaced()
    {
        TestUpstream up;
        Proxy p(up.port());
        QVERIFY(fetch(p.port(), get("/", "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\n")));
        const auto reqs = up.requests();
        QCOMPARE(int(reqs.size()), 1);
        QVERIFY2(contains(reqs[0], "\r\nX-Forwarded-For: 127.0.0.1\r\n"), reqs[0].c_str());
        QVERIFY2(contains(reqs[0], "\r\nX-Forwarded-Proto: http\r\n"), reqs[0].c_str());
        QVERIFY2(!contains(reqs[0], "6.6.6.6"), reqs[0].c_str());
    }

    void forwardingHeadersFromAnUntrustedClientAreAllReplaced()
    {
        TestUpstream up;
        Proxy p(up.port());
        auto r = fetch(p.port(), "GET /x HTTP/1.1\r\nHost: shop.example\r\nForwarded: for=6.6.6.6;proto=https\r\nX-Real-IP: 6.6.6.6\r\n"
                                 "X-Forwarded-Host: evil.example\r\nX-Forwarded-Port: 6666\r\nX-Forwarded-Prefix: /evil\r\n"
                                 "True-Client-IP: 6.6.6.6\r\nX-Client-IP: 6.6.6.6\r\nX-Original-URL: /evil\r\nX-Rewrite-URL: /evil\r\n\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const auto reqs = up.requests();
        QCOMPARE(int(reqs.size()), 1);
        const std::string& got = reqs[0];
        QVERIFY2(!contains(got, "6.6.6.6") && !contains(got, "evil") && !contains(got, "6666"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-For: 127.0.0.1\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Real-IP: 127.0.0.1\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Host: shop.example\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Proto: http\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nForwarded: for=127.0.0.1;host=shop.example;proto=http\r\n"), got.c_str());
    }

    void aTrustedProxysChainIsCarriedOn()
    {
        TestUpstream up;
        Http::ListenerOptions o;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1")});
        Proxy p(up.port(), o);
        auto r = fetch(p.port(), "GET /x HTTP/1.1\r\nHost: backend:8080\r\nX-Forwarded-For: 203.0.113.9\r\n"
                                 "Forwarded: for=203.0.113.9;proto=https\r\nX-Forwarded-Proto: https\r\n"
                                 "X-Forwarded-Host: www.example\r\nX-Forwarded-Prefix: /shop\r\nX-Real-IP: 10.9.9.9\r\n\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::string got = up.requests().at(0);
        QVERIFY2(contains(got, "\r\nX-Forwarded-For: 203.0.113.9, 127.0.0.1\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Real-IP: 203.0.113.9\r\n"), got.c_str());  // the resolved client, not what was sent
        QVERIFY2(!contains(got, "10.9.9.9"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Proto: https\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Host: www.example\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Prefix: /shop\r\n"), got.c_str());
        // X-Forwarded-For is the header the operator trusts: a Forwarded the
        // client may have sent through the proxy is not carried on.
        QVERIFY2(contains(got, "\r\nForwarded: for=127.0.0.1;host=\"backend:8080\";proto=https\r\n"), got.c_str());
    }

    // With --real-ip-header Forwarded, the Forwarded chain is the one carried
    // on, and X-Forwarded-For is written from it.
    void aTrustedForwardedChainIsCarriedOn()
    {
        TestUpstream up;
        Http::ListenerOptions o;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1")}, "Forwarded");
        Proxy p(up.port(), o);
        auto r = fetch(p.port(), "GET /x HTTP/1.1\r\nHost: backend:8080\r\nX-Forwarded-For: 198.51.100.1\r\n"
                                 "Forwarded: for=203.0.113.9;proto=https\r\nX-Forwarded-Proto: https\r\n\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::string got = up.requests().at(0);
        QVERIFY2(contains(got, "\r\nX-Forwarded-For: 203.0.113.9, 127.0.0.1\r\n"), got.c_str());
        QVERIFY2(!contains(got, "198.51.100.1"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Real-IP: 203.0.113.9\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nForwarded: for=203.0.113.9;proto=https, for=127.0.0.1;host=\"backend:8080\";proto=https\r\n"),
                 got.c_str());
    }

    void requestsHttpSaysToRefuseAreNotForwarded_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<int>("status");
        QTest::newRow("no Host") << QByteArray("GET / HTTP/1.1\r\nX-A: 1\r\n\r\n") << 400;
        QTest::newRow("two Hosts") << QByteArray("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") << 400;
        QTest::newRow("two equal Hosts") << QByteArray("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n") << 400;
        QTest::newRow("folded Host") << QByteArray("GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n") << 400;
        QTest::newRow("folded Host, empty first line") << QByteArray("GET / HTTP/1.1\r\nHost:\r\n\ta\r\n\r\n") << 400;
        QTest::newRow("folded other header") << QByteArray("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n") << 400;
        QTest::newRow("Host with a space") << QByteArray("GET / HTTP/1.1\r\nHost: a b\r\n\r\n") << 400;
        QTest::newRow("Host with a path") << QByteArray("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n") << 400;
        QTest::newRow("Host with user information") << QByteArray("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n") << 400;
        QTest::newRow("absolute-form still needs a Host") << QByteArray("GET http://a/ HTTP/1.1\r\n\r\n") << 400;
        QTest::newRow("CONNECT") << QByteArray("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n") << 501;
        QTest::newRow("OPTIONS *") << QByteArray("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
        QTest::newRow("authority-form with GET") << QByteArray("GET a:443 HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
        QTest::newRow("GET abc") << QByteArray("GET abc HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    }
    void requestsHttpSaysToRefuseAreNotForwarded()
    {
        QFETCH(QByteArray, request);
        QFETCH(int, status);
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send(request.toStdString()));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, status);
        QVERIFY2(!r->body.empty(), "the answer says why");
        QVERIFY(c.closedByPeer());
        QVERIFY(up.requests().empty());
        QCOMPARE(p.metrics.upstreamErrors.load(), std::uint64_t(0));
    }

    void http10WithoutHostIsForwardedWithTheUpstreamsName()
    {
        TestUpstream up;
        Proxy p(up.port());
        auto r = fetch(p.port(), "GET /old HTTP/1.0\r\n\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::string got = up.requests().at(0);
        QVERIFY2(contains(got, "\r\nHost: 127.0.0.1:" + std::to_string(up.port()) + "\r\n"), got.c_str());
    }

    void headersWithUnderscoresAreDropped()
    {
        // "Transfer_Encoding" beside a Content-Length is a smuggling attempt
        // on upstreams that read it as Transfer-Encoding; "X_User_Id" would
        // shadow X-User-Id behind CGI-style frameworks.
        TestUpstream up;
        Proxy p(up.port());
        auto r = fetch(p.port(), "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer_Encoding: chunked\r\n"
                                 "X_User_Id: mallory\r\nX-Kept: yes\r\n\r\nhello");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::string got = up.requests().at(0);
        QVERIFY2(!contains(got, "_"), got.c_str());
        QVERIFY2(!contains(got, "mallory"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Kept: yes\r\n"), got.c_str());
        QVERIFY2(got.ends_with("\r\n\r\nhello"), got.c_str());
    }

    void refusedRequestsNeverReachTheUpstream()
    {
        TestUpstream up;
        Proxy p(up.port());
        for (int i = 0; i < 10; ++i)
            QVERIFY(fetch(p.port(), get("/")));
        QCOMPARE(int(up.requests().size()), 6);
    }

    void upstreamConnectionsAreReused()
    {
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        for (int i = 0; i < 5; ++i) {
            QVERIFY(c.send(get("/a" + std::to_string(i))));
            auto r = c.read();
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        QCOMPARE(up.connections(), 1);
        // Kept by HTTP/1.1's default alone: no forwarded request asks for it.
        const auto reqs = up.requests();
        QCOMPARE(int(reqs.size()), 5);
        for (const std::string& got : reqs) {
            QVERIFY2(got.starts_with("GET /app/a"), got.c_str());
            QVERIFY2(!contains(got, "\r\nConnection:"), got.c_str());
        }
    }

    void upstreamDownIs502()
    {
        std::uint16_t deadPort = 0;
        {
            TestUpstream gone;
            deadPort = gone.port();
        }
        Proxy p(deadPort);
        auto r = fetch(p.port(), get("/"));
        QVERIFY(r);
        QCOMPARE(r->status, 502);
        QCOMPARE(p.metrics.upstreamErrors.load(), std::uint64_t(1));
    }

    void slowUpstreamIs504()
    {
        TestUpstream up;
        up.setReply({200, "OK", "", "late", 1500});
        Http::ListenerOptions o;
        o.upstreamResponseTimeoutMs = 300;
        Proxy p(up.port(), o);
        QElapsedTimer t;
        t.start();
        auto r = fetch(p.port(), get("/"), 5000);
        QVERIFY(r);
        QCOMPARE(r->status, 504);
        QVERIFY(t.elapsed() >= 250);
        QVERIFY(t.elapsed() < 1400);
    }

    void cooldownStartsOnlyAfterAnUpstream2xx()
    {
        TestUpstream up;
        Proxy p(up.port());
        const std::string post = "POST /comments HTTP/1.1\r\nHost: h\r\nX-User-Id: carol\r\nContent-Length: 2\r\n\r\nhi";
        up.setReply({500, "Internal Server Error", "", "db down", 0});
        auto r = fetch(p.port(), post);
        QVERIFY(r);
        QCOMPARE(r->status, 500);  // relayed as it is
        up.setReply({201, "Created", "", "ok", 0});
        r = fetch(p.port(), post);  // the failed attempt started no cooldown
        QVERIFY(r);
        QCOMPARE(r->status, 201);
        r = fetch(p.port(), post);
        QVERIFY(r);
        QCOMPARE(r->status, 429);
        QCOMPARE(QString::fromStdString(r->header("retry-after")), QStringLiteral("30"));
        QCOMPARE(QString::fromStdString(r->header("ratelimit-policy")), QStringLiteral("\"cooldown:comments\";q=1;w=30"));
        QCOMPARE(int(up.requests().size()), 2);
        // Another user is not held back.
        r = fetch(p.port(), "POST /comments HTTP/1.1\r\nHost: h\r\nX-User-Id: dave\r\nContent-Length: 2\r\n\r\nhi");
        QVERIFY(r);
        QCOMPARE(r->status, 201);
    }

    void everySpellingIsForwardedNormalisedAndMeetsTheCooldown()
    {
        TestUpstream up;
        up.setReply({201, "Created", "", "ok", 0});
        Proxy p(up.port());
        auto post = [](const std::string& target, const std::string& user) {
            return "POST " + target + " HTTP/1.1\r\nHost: h\r\nX-User-Id: " + user + "\r\nContent-Length: 2\r\n\r\nhi";
        };
        // What the upstream receives: the normalised target (trailing slash
        // and parameters are the application's business), under the base path.
        const std::string forwarded[] = {"/app/comments", "/app/comments", "/app/comments/", "/app/comments", "/app/comments",
                                         "/app/comments;jsessionid=1"};
        int source = 10;
        for (std::size_t i = 0; i < std::size(bypassSpellings); ++i) {
            const std::string from = "127.0.0." + std::to_string(source++);
            auto r = fetch(p.port(), post(bypassSpellings[i], "user" + std::to_string(i)), 3000, from.c_str());
            QVERIFY2(r && r->status == 201, bypassSpellings[i].c_str());
            const std::string got = up.requests().back();
            QVERIFY2(got.starts_with("POST " + forwarded[i] + " HTTP/1.1\r\n"), got.c_str());
            // Absolute-form: the Host is the target's (RFC 9112 §3.2.2).
            QVERIFY2(contains(got, i == 0 ? "\r\nHost: 127.0.0.1\r\n" : "\r\nHost: h\r\n"), got.c_str());
            QVERIFY2(!contains(got, "\r\nHost: h\r\n") || i != 0, got.c_str());
        }
        // carol's comment succeeds and starts her cooldown; no spelling gets past it.
        auto r = fetch(p.port(), post("/comments", "carol"), 3000, "127.0.0.2");
        QVERIFY(r);
        QCOMPARE(r->status, 201);
        const auto before = up.requests().size();
        for (const std::string& spelling : bypassSpellings) {
            const std::string from = "127.0.0." + std::to_string(source++);
            r = fetch(p.port(), post(spelling, "carol"), 3000, from.c_str());
            QVERIFY2(r, spelling.c_str());
            QVERIFY2(r->status == 429, (spelling + " got " + std::to_string(r->status)).c_str());
        }
        QCOMPARE(up.requests().size(), before);  // none of them reached the upstream
    }

    void malformedTargetsAreRefusedNotForwarded()
    {
        TestUpstream up;
        Proxy p(up.port());
        for (const char* target : {"/a%zz", "/a%00", "/a%4", "/a#frag", "abc", "http://user@h/a", "ftp://h/a"}) {
            auto r = fetch(p.port(), std::string("GET ") + target + " HTTP/1.1\r\nHost: h\r\n\r\n");
            QVERIFY2(r, target);
            QVERIFY2(r->status == 400, (std::string(target) + " got " + std::to_string(r->status)).c_str());
        }
        QVERIFY(up.requests().empty());
    }

    void responsesAreFramedForTheClient()
    {
        TestUpstream up;
        Proxy p(up.port());
        // Chunked from the upstream: chunked to an HTTP/1.1 client.
        up.setReply({200, "OK", "", "", 0, 300'000, TestUpstream::Framing::Chunked});
        Connection c(p.port());
        QVERIFY(c.send(get("/chunked")));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->header("transfer-encoding"), std::string("chunked"));
        QCOMPARE(r->body.size(), std::size_t(300'000));
        for (std::size_t i = 0; i < r->body.size(); ++i)
            QVERIFY(r->body[i] == patternByte(i));
        // Until the upstream closes: chunked to HTTP/1.1, and the client's
        // connection goes on.
        up.setReply({200, "OK", "", "until the end", 0, 0, TestUpstream::Framing::UntilClose});
        QVERIFY(c.send(get("/close-delimited")));
        r = c.read();
        QVERIFY(r);
        QCOMPARE(r->header("transfer-encoding"), std::string("chunked"));
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("until the end"));
        // To HTTP/1.0: no length to give, so the body ends with the connection.
        Connection old(p.port());
        QVERIFY(old.send("GET /close-delimited HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        auto head = old.readHeader();
        QVERIFY(head);
        QCOMPARE(head->header("connection"), std::string("close"));
        QVERIFY(head->header("content-length").empty() && head->header("transfer-encoding").empty());
        QVERIFY(old.closedByPeer());
        QCOMPARE(QString::fromStdString(old.pending()), QStringLiteral("until the end"));
    }

    void noBodyStatusesCarryNone()
    {
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        up.setReply({204, "No Content", "", "", 0});
        QVERIFY(c.send(get("/gone")));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 204);
        QVERIFY(r->header("content-length").empty() && r->header("transfer-encoding").empty());
        up.setReply({304, "Not Modified", "ETag: \"v1\"\r\n", "abc", 0});
        QVERIFY(c.send(get("/cached")));
        r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 304);
        QCOMPARE(r->header("content-length"), std::string("3"));  // the length a 200 would have
        QVERIFY(c.pending().empty());
        up.setReply({});
        QVERIFY(c.send(get("/next")));
        r = c.read();
        QVERIFY(r);
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("hello from upstream"));
        QCOMPARE(up.connections(), 1);
    }

    void anUpstreamDyingMidBodyClosesTheClient()
    {
        TestUpstream up;
        TestUpstream::Reply reply{200, "OK", "", "", 0, 1'000'000};
        reply.cutAfterBytes = 100'000;
        up.setReply(reply);
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send(get("/big")));
        auto head = c.readHeader();
        QVERIFY(head);
        QCOMPARE(head->status, 200);  // the head was relayed before the upstream broke
        QCOMPARE(head->header("content-length"), std::string("1000000"));
        std::uint64_t got = c.readBody(1'000'000, [](std::string_view) {}, 3000);
        QVERIFY2(got < 1'000'000, "the body is short");
        QVERIFY(c.closedByPeer(1000));  // and the close says so; no 502 is appended to a started response
        QCOMPARE(p.metrics.upstreamErrors.load(), std::uint64_t(1));
        QVERIFY(got >= 100'000 - 65536);
    }

    void aKeepAliveTheUpstreamDroppedIsNotReused()
    {
        TestUpstream up;
        TestUpstream::Reply reply;
        reply.closeAfterReply = true;  // no Connection: close, the connection just ends
        up.setReply(reply);
        Proxy p(up.port());
        Connection c(p.port());
        for (int i = 0; i < 3; ++i) {
            QVERIFY(c.send(get("/r" + std::to_string(i))));
            auto r = c.read();
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            QTest::qWait(50);  // the upstream's close arrives
        }
        QCOMPARE(up.connections(), 3);
        QCOMPARE(p.metrics.upstreamErrors.load(), std::uint64_t(0));
    }

    // Bytes waiting on a pooled connection (here a late "408" the upstream
    // sent on its own) would be read as the next request's answer: the
    // connection is not reused. Forwarder.cpp checks a pooled connection by
    // the read of the response, started before the request is sent
    // (probePooled), or with a MSG_PEEK when the request has a body.
    void strayBytesOnAPooledConnectionAreNotTakenForAnAnswer()
    {
        TestUpstream up;
        TestUpstream::Reply reply;
        reply.afterReply = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n";
        up.setReply(reply);
        Proxy p(up.port());
        Connection c(p.port());
        for (const std::string& request : {get("/s1"), get("/s2"), withBody("PUT", "/item", "x=1"), get("/s3")}) {
            QVERIFY(c.send(request));
            auto r = c.read();
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            QTest::qWait(60);  // the stray bytes arrive on the pooled connection
        }
        QCOMPARE(up.connections(), 4);
        QCOMPARE(p.metrics.upstreamErrors.load(), std::uint64_t(0));
    }

    // The one retry (Forwarder.cpp, upstreamBroke): a pooled connection the
    // upstream closes under a request that got nothing back is tried again on a
    // new one only if the request can be sent twice: an idempotent method, no
    // body (a body was streamed on and is gone). Otherwise 502.
    void aPooledConnectionClosedUnderARequestIsRetriedOnce()
    {
        TestUpstream up;
        TestUpstream::Reply reply;
        reply.answersPerConnection = 1;  // a connection's second request is read, then the connection closed
        up.setReply(reply);
        Proxy p(up.port());
        Connection c(p.port());
        auto status = [&](const std::string& request) {
            const auto r = c.send(request) ? c.read() : std::nullopt;
            return r ? r->status : 0;
        };
        QCOMPARE(status(get("/first")), 200);
        QCOMPARE(status(get("/again")), 200);  // on the pooled connection, then on a new one
        QCOMPARE(up.connections(), 2);
        QVERIFY(up.requests().size() == 3 && up.requests()[2].starts_with("GET /app/again "));
        QCOMPARE(status(withBody("PUT", "/item", "x=1")), 502);  // idempotent, but with a body
        QCOMPARE(status(get("/third")), 200);
        QCOMPARE(status(withBody("POST", "/form")), 502);  // no body, but not idempotent
        QCOMPARE(up.connections(), 3);
        QCOMPARE(p.metrics.upstreamErrors.load(), std::uint64_t(2));
    }

    void largeUploadsStream_data()
    {
        QTest::addColumn<bool>("chunked");
        QTest::newRow("Content-Length") << false;
        QTest::newRow("chunked") << true;
    }
    void largeUploadsStream()
    {
        // 200 MiB up through the listener in this process: what it holds at
        // any time is a few relay buffers, so the process's peak resident
        // size moves by far less than the body (the old proxy held the body
        // twice: as read and as re-serialised).
        QFETCH(bool, chunked);
        TestUpstream up;
        Http::ListenerOptions o;
        o.bodyLimitBytes = 256ull << 20;
        Proxy p(up.port(), o);
        QVERIFY(fetch(p.port(), withBody("POST", "/warm-up", "x")));
        const std::uint64_t size = 200ull << 20;
        const std::int64_t before = memoryKb(0, "VmRSS");
        QVERIFY(resetPeak(0));
        Connection c(p.port());
        QVERIFY(c.send("POST /upload HTTP/1.1\r\nHost: h\r\n"
                       + (chunked ? std::string("Transfer-Encoding: chunked\r\n") : "Content-Length: " + std::to_string(size) + "\r\n")
                       + "\r\n"));
        std::string piece(100'000, '\0');
        BodyHash sent;
        for (std::uint64_t at = 0; at < size; at += piece.size()) {
            piece.resize(std::size_t(std::min<std::uint64_t>(100'000, size - at)));
            for (std::size_t i = 0; i < piece.size(); ++i)
                piece[i] = patternByte(at + i);
            sent.add(piece);
            if (chunked) {
                char line[24];
                std::snprintf(line, sizeof line, "%zx\r\n", piece.size());
                QVERIFY(c.send(line + piece + "\r\n"));
            } else {
                QVERIFY(c.send(piece));
            }
        }
        if (chunked)
            QVERIFY(c.send("0\r\n\r\n"));
        auto r = c.read(60'000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::int64_t peak = memoryKb(0, "VmHWM");
        QCOMPARE(up.lastBody().bytes, size);
        QCOMPARE(up.lastBody().value, sent.value);
        qInfo("test process: VmRSS %lld kB before, peak %lld kB during a %llu MiB upload", (long long)before, (long long)peak,
              (unsigned long long)(size >> 20));
        if (!residentMemoryIsMeaningful)
            QSKIP("the body arrived whole; its memory bound is checked without a sanitizer (tests/http/Sanitizers.h)");
        QVERIFY2(peak - before < 16 * 1024, qPrintable(QStringLiteral("grew by %1 kB").arg(peak - before)));
    }

    void headRequestsGetNoBody()
    {
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n"));
        auto r = c.read(3000, true);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        // The length a GET would get (RFC 9110 §9.3.2), not the empty body's.
        QCOMPARE(QString::fromStdString(r->header("content-length")), QStringLiteral("19"));
        QVERIFY(c.pending().empty());  // and no body bytes behind the header
        QVERIFY(c.send(get("/next")));
        r = c.read();
        QVERIFY(r);
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("hello from upstream"));
    }
};

QTEST_APPLESS_MAIN(TestProxy)
#include "test_proxy.moc"
