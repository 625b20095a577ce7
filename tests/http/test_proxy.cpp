// SPDX-License-Identifier: MIT
// Proxy mode over real sockets: Floodgate between a raw test client and a
// test upstream that records exactly what it received.
#include <QElapsedTimer>
#include <QtTest>

#ifndef Q_MOC_RUN
#include "HttpTestClient.h"
#include "ListenerStack.h"
#include "TestUpstream.h"
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
        QVERIFY2(contains(got, "\r\nX-Forwarded-For: 127.0.0.1\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Proto: http\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nX-Forwarded-Host: shop.example\r\n"), got.c_str());
        QVERIFY2(contains(got, "\r\nContent-Length: 11\r\n"), got.c_str());
        QVERIFY2(got.ends_with("\r\n\r\n{\"name\":1}\n"), got.c_str());
    }

    void chunkedBodiesAreReframed()
    {
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
        auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const auto reqs = up.requests();
        QCOMPARE(int(reqs.size()), 1);
        QVERIFY2(!contains(reqs[0], "Transfer-Encoding"), reqs[0].c_str());
        QVERIFY2(contains(reqs[0], "\r\nContent-Length: 11\r\n"), reqs[0].c_str());
        QVERIFY2(reqs[0].ends_with("\r\n\r\nhello world"), reqs[0].c_str());
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

    void headRequestsGetNoBody()
    {
        TestUpstream up;
        Proxy p(up.port());
        Connection c(p.port());
        QVERIFY(c.send("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n"));
        auto r = c.read(3000, true);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(c.send(get("/next")));
        r = c.read();
        QVERIFY(r);
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("hello from upstream"));
    }
};

QTEST_APPLESS_MAIN(TestProxy)
#include "test_proxy.moc"
