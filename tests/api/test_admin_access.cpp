// SPDX-License-Identifier: GPL-3.0-or-later
// Whom the admin API answers, over real sockets: never a web page (Origin, a
// rebound Host); every API request wants the bearer token on loopback too,
// and beyond loopback /healthz and /metrics want it as well.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ApiTestSupport.h"
#endif

using namespace Floodgate;
using namespace FloodgateTest;
using Wire::Json;

class TestAdminAccess : public ApiSuite {
    Q_OBJECT

private Q_SLOTS:
    void webPagesAreNotAnswered()
    {
        // A page in the operator's browser posting to the loopback API
        // (cross-site request forgery), or reading it under a rebound name.
        Stack s(freshDb());
        const Response forged = s.call("POST", "/api/v1/lists/safelist", "{\"address\":\"0.0.0.0/0\"}", "Origin: https://evil.example\r\n");
        QCOMPARE(forged.status, 403);
        QCOMPARE(str(Json::parse(forged.body).value_or(Json()).find("error")),
                 QStringLiteral("origin: the admin API does not answer requests made by web pages"));
        QCOMPARE(s.callJson("GET", "/api/v1/lists/safelist").find("count")->asInteger(), std::int64_t(0));
        const std::string token = bearer(s.store->adminToken());
        const Response rebound = fetch(s.admin->port(), "GET /api/v1/rules HTTP/1.1\r\nHost: evil.example:9090\r\n" + token + "\r\n").value_or(Response{});
        QCOMPARE(rebound.status, 403);
        QVERIFY(rebound.body.find("not \\\"evil.example\\\"") != std::string::npos);
        for (const char* host : {"localhost:9090", "127.0.0.1", "[::1]:9090"}) {
            const auto ok = fetch(s.admin->port(), std::string("GET /api/v1/rules HTTP/1.1\r\nHost: ") + host + "\r\n" + token + "\r\n");
            QVERIFY(ok);
            QCOMPARE(ok->status, 200);
        }
    }

    void everyApiRequestWantsTheTokenOnLoopbackToo()
    {
        // A server-side request forgery in the protected application comes
        // from loopback: it must not safelist its sender nor read visitors.
        Stack s(freshDb());
        const std::string token = s.store->adminToken();
        const Response forged = s.callWithout("POST", "/api/v1/lists/safelist", "{\"address\":\"203.0.113.66\"}");
        QCOMPARE(forged.status, 401);
        QCOMPARE(QString::fromStdString(forged.header("www-authenticate")), QStringLiteral("Bearer realm=\"floodgate\""));
        QVERIFY(str(Json::parse(forged.body).value_or(Json()).find("error")).startsWith(QStringLiteral("authorization: ")));
        QCOMPARE(s.callJson("GET", "/api/v1/lists/safelist").find("count")->asInteger(), std::int64_t(0));
        for (const char* target : {"/api/v1/clients?limit=5", "/api/v1/events", "/api/v1/rules", "/api/v1/nothing", "/elsewhere"})
            QCOMPARE(s.callWithout("GET", target).status, 401);
        // A token of the right length with one byte changed, another scheme, none at all.
        std::string near = token;
        near.back() = near.back() == 'a' ? 'b' : 'a';
        QCOMPARE(s.callWithout("GET", "/api/v1/rules", {}, bearer(near)).status, 401);
        QCOMPARE(s.callWithout("GET", "/api/v1/rules", {}, "Authorization: Basic " + token + "\r\n").status, 401);
        QCOMPARE(s.callWithout("GET", "/api/v1/rules", {}, "Authorization: Bearer \r\n").status, 401);
        // The scheme is case-insensitive; the token is not.
        QCOMPARE(s.callWithout("GET", "/api/v1/rules", {}, "Authorization: bearer " + token + "\r\n").status, 200);
        QCOMPARE(s.call("GET", "/api/v1/rules").status, 200);
        // Health checks and metrics tell nothing about visitors: open on loopback.
        QCOMPARE(s.callWithout("GET", "/healthz").status, 200);
        QCOMPARE(s.callWithout("GET", "/metrics").status, 200);
    }

    void beyondLoopbackHealthAndMetricsWantTheTokenToo()
    {
        Stack s(freshDb(), Setup{.beyondLoopback = true});
        QCOMPARE(s.callWithout("GET", "/healthz").status, 401);
        QCOMPARE(s.callWithout("GET", "/metrics").status, 401);
        QCOMPARE(s.callWithout("GET", "/api/v1/rules").status, 401);
        QCOMPARE(s.callWithout("GET", "/api/v1/rules", {}, bearer(s.store->adminToken().substr(1) + "x")).status, 401);
        QCOMPARE(s.call("GET", "/healthz").status, 200);
        QCOMPARE(s.call("GET", "/metrics").status, 200);
        QCOMPARE(s.call("GET", "/api/v1/rules").status, 200);
    }
};

QTEST_GUILESS_MAIN(TestAdminAccess)
#include "test_admin_access.moc"
