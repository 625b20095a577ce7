// SPDX-License-Identifier: GPL-3.0-or-later
// The built `floodgate --headless` as a child process, over HTTP: start-up
// lines, decisions, /healthz and /metrics, exit codes 0, 2 and 3.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <csignal>
#endif

using namespace FloodgateTest;

class TestHeadless : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void servesDecidesReportsAndStopsCleanly()
    {
        QTemporaryDir dir;
        Child c;
        QVERIFY2(c.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                          QStringLiteral("127.0.0.1:0"), QStringLiteral("--db"), dir.filePath(QStringLiteral("data/floodgate.db"))}),
                 qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
        QCOMPARE(c.firstLine, QStringLiteral("listening on http://127.0.0.1:%1 (decision mode)").arg(c.port));
        QVERIFY(c.adminPort != 0);
        for (int i = 0; i < 6; ++i) {
            auto r = fetch(c.port, get("/"));
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        auto r = fetch(c.port, get("/"));
        QVERIFY(r);
        QCOMPARE(r->status, 429);
        QCOMPARE(QString::fromStdString(r->header("retry-after")), QStringLiteral("3"));

        auto health = fetch(c.adminPort, get("/healthz"));
        QVERIFY(health);
        QCOMPARE(health->status, 200);
        QCOMPARE(QString::fromStdString(health->body), QStringLiteral("ok"));
        auto metrics = fetch(c.adminPort, get("/metrics"));
        QVERIFY(metrics);
        QCOMPARE(metrics->status, 200);
        const QString m = QString::fromStdString(metrics->body);
        QVERIFY2(m.contains(QStringLiteral("floodgate_requests_total{action=\"allow\"} 6\n")), qPrintable(m));
        QVERIFY2(m.contains(QStringLiteral("floodgate_requests_total{action=\"throttle\"} 1\n")), qPrintable(m));
        QVERIFY2(m.contains(QStringLiteral("floodgate_refusals_total{action=\"throttle\",rule=\"ip-3s\"} 1\n")), qPrintable(m));
        QVERIFY(m.contains(QStringLiteral("floodgate_tracked_keys 1\n")));
        QVERIFY(m.contains(QStringLiteral("# TYPE floodgate_decision_seconds histogram")));
        // The version CMake's project() names, as a label (FLOODGATE_VERSION comes from CMake).
        QVERIFY2(m.contains(QStringLiteral("\nfloodgate_build_info{version=\"" FLOODGATE_VERSION "\"} 1\n")), qPrintable(m));
        QVERIFY(m.contains(QStringLiteral("# TYPE floodgate_build_info gauge\n")));

        QCOMPARE(c.stop(), 0);
        // The limiter log beside the database holds the refusal.
        QFile log(dir.filePath(QStringLiteral("data/limiter.log")));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = log.readAll().split('\n');
        QVERIFY(lines.size() >= 2);
        QVERIFY(lines[1].contains(",throttle,ip-3s,127.0.0.1,6,GET,/,"));
    }

    void theAdminApiWantsTheTokenOnLoopbackToo()
    {
        // As the README shows it: curl -H "Authorization: Bearer $(floodgate token)" localhost:9090/api/v1/clients?limit=5
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        Child c;
        QVERIFY(c.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                         QStringLiteral("127.0.0.1:0"), QStringLiteral("--db"), db}));
        QVERIFY2(c.startup.contains(QStringLiteral("admin API wants \"Authorization: Bearer TOKEN\"; `floodgate token --db %1` prints it").arg(db)),
                 qPrintable(c.startup));
        const auto refused = fetch(c.adminPort, get("/api/v1/clients?limit=5"));
        QVERIFY(refused);
        QCOMPARE(refused->status, 401);
        QCOMPARE(QString::fromStdString(refused->header("www-authenticate")), QStringLiteral("Bearer realm=\"floodgate\""));
        const auto forged = fetch(c.adminPort, withBody("POST", "/api/v1/lists/safelist", "{\"address\":\"127.0.0.9\"}"));
        QVERIFY(forged);
        QCOMPARE(forged->status, 401);
        const std::string token = adminToken(db);
        const auto clients = fetch(c.adminPort, get("/api/v1/clients?limit=5", bearer(token)));
        QVERIFY(clients);
        QCOMPARE(clients->status, 200);
        const auto safelist = fetch(c.adminPort, get("/api/v1/lists/safelist", bearer(token)));
        QVERIFY2(safelist && safelist->body.find("\"count\":0") != std::string::npos, safelist ? safelist->body.c_str() : "");
        QCOMPARE(fetch(c.adminPort, get("/healthz"))->status, 200);  // health checks and metrics stay open on loopback
        QCOMPARE(fetch(c.adminPort, get("/metrics"))->status, 200);
        QCOMPARE(c.stop(), 0);
    }

    void proxyModeSaysSo()
    {
        QTemporaryDir dir;
        Child c;
        QVERIFY(c.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                         QStringLiteral("off"), QStringLiteral("--upstream"), QStringLiteral("http://127.0.0.1:9"), QStringLiteral("--log"),
                         dir.filePath(QStringLiteral("l.log"))}));
        QCOMPARE(c.firstLine, QStringLiteral("listening on http://127.0.0.1:%1 (proxy mode -> http://127.0.0.1:9)").arg(c.port));
        auto r = fetch(c.port, get("/"));  // nothing listens on port 9
        QVERIFY(r);
        QCOMPARE(r->status, 502);
        QCOMPARE(c.stop(), 0);
    }

    void dryRunRefusesNothing()
    {
        QTemporaryDir dir;
        Child c;
        QVERIFY(c.start({QStringLiteral("--headless"), QStringLiteral("--dry-run"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                         QStringLiteral("--admin"), QStringLiteral("off"), QStringLiteral("--log"), dir.filePath(QStringLiteral("l.log"))}));
        for (int i = 0; i < 12; ++i) {
            auto r = fetch(c.port, get("/"));
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        QCOMPARE(c.stop(), 0);
    }

    // --real-ip-header Forwarded: the trusted proxy's Forwarded header names
    // the client, and the X-Forwarded-For a client sends along is ignored.
    void theRealIpHeaderOptionNamesTheOneHeaderBelieved()
    {
        QTemporaryDir dir;
        Child c;
        QVERIFY2(c.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                          QStringLiteral("127.0.0.1:0"), QStringLiteral("--db"), dir.filePath(QStringLiteral("floodgate.db")),
                          QStringLiteral("--trusted-proxy"), QStringLiteral("127.0.0.1"), QStringLiteral("--real-ip-header"), QStringLiteral("Forwarded")}),
                 qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
        int last = 0;
        for (int i = 1; i <= 7; ++i)
            last = fetch(c.port, get("/", "X-Forwarded-For: 198.51.100." + std::to_string(i) + "\r\nForwarded: for=\"[2001:db8::60]:4711\"\r\n"))
                       .value_or(Response{})
                       .status;
        QCOMPARE(last, 429);
        const std::string token = adminToken(dir.filePath(QStringLiteral("floodgate.db")));
        const auto client = fetch(c.adminPort, get("/api/v1/clients/2001:db8::60", bearer(token)));
        QVERIFY(client);
        QCOMPARE(client->status, 200);
        QCOMPARE(fetch(c.adminPort, get("/api/v1/clients/198.51.100.1", bearer(token)))->status, 404);
        QCOMPARE(c.stop(), 0);
    }

    void badCommandLineIsExit2_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("unknown option") << QStringList{QStringLiteral("--headless"), QStringLiteral("--frobnicate")};
        QTest::newRow("bad listen") << QStringList{QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("999.1.1.1:80")};
        QTest::newRow("bad port") << QStringList{QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:70000")};
        QTest::newRow("bad proxy range") << QStringList{QStringLiteral("--headless"), QStringLiteral("--trusted-proxy"), QStringLiteral("10.0.0.0/33")};
        QTest::newRow("https upstream") << QStringList{QStringLiteral("--headless"), QStringLiteral("--upstream"), QStringLiteral("https://x")};
        QTest::newRow("missing value") << QStringList{QStringLiteral("--headless"), QStringLiteral("--threads")};
        QTest::newRow("bad real-ip header") << QStringList{QStringLiteral("--headless"), QStringLiteral("--real-ip-header"), QStringLiteral("X-Real-IP:")};
    }
    void badCommandLineIsExit2()
    {
        QFETCH(QStringList, args);
        QString err;
        QCOMPARE(runToEnd(args, &err), 2);
        QVERIFY2(err.startsWith(QStringLiteral("floodgate: ")), qPrintable(err));
        QCOMPARE(err.count(QLatin1Char('\n')), 1);  // one line saying what was wrong
    }

    void cannotListenIsExit3()
    {
        QTemporaryDir dir;
        std::uint16_t port = 0;
        const int fd = listenOnLoopback(1, port);
        QVERIFY(fd >= 0);
        QString err;
        QCOMPARE(runToEnd({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port),
                           QStringLiteral("--admin"), QStringLiteral("off"), QStringLiteral("--log"), dir.filePath(QStringLiteral("l.log"))},
                          &err),
                 3);
        QVERIFY2(err.contains(QStringLiteral("cannot listen on 127.0.0.1:")), qPrintable(err));
        ::close(fd);
    }
};

QTEST_GUILESS_MAIN(TestHeadless)
#include "test_headless.moc"
