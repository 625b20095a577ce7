// SPDX-License-Identifier: GPL-3.0-or-later
// What the admin API's read routes answer over real sockets: events that
// explain each refusal, valid UTF-8 and locale-independent numbers whatever
// the request sent, clients and buckets.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ApiTestSupport.h"

#include <clocale>
#endif

using namespace Floodgate;
using namespace FloodgateTest;
using Wire::Json;

class TestAdminReads : public ApiSuite {
    Q_OBJECT

private Q_SLOTS:
    void eventsExplainEachRefusal()
    {
        Stack s(freshDb());
        for (int i = 0; i < 7; ++i)
            s.request("127.0.0.40", "/search?q=x");
        s.log.flush();
        const Json events = s.callJson("GET", "/api/v1/events?since=0");
        const auto& list = events.find("events")->asArray();
        QCOMPARE(list.size(), std::size_t(1));
        const Json& e = list[0];
        QCOMPARE(str(e.find("action")), QStringLiteral("throttle"));
        QCOMPARE(str(e.find("rule")), QStringLiteral("ip-3s"));
        QCOMPARE(str(e.find("ip")), QStringLiteral("127.0.0.40"));
        QCOMPARE(str(e.find("path")), QStringLiteral("/search"));
        QCOMPARE(str(e.find("query")), QStringLiteral("q=x"));
        QCOMPARE(e.find("attempts")->asInteger(), std::int64_t(6));
        QCOMPARE(e.find("retry_after")->asInteger(), std::int64_t(3));
        QCOMPARE(str(e.find("why")), QStringLiteral("6 requests in the 3 s window of ip-3s (limit 6); passes again in 3 s. "
                                                    "Client 127.0.0.40 is the TCP peer."));
        const std::int64_t last = events.find("last_id")->asInteger();
        QVERIFY(s.callJson("GET", "/api/v1/events?since=" + std::to_string(last)).find("events")->asArray().empty());
        QCOMPARE(s.call("GET", "/api/v1/events?since=abc").status, 400);
    }

    void numbersInAnswersIgnoreTheCLibraryLocale()
    {
        // The console runs the admin API in a process whose C library
        // locale is the user's (Qt sets it): under de_DE, printf writes 1,5.
        if (!std::setlocale(LC_ALL, "de_DE.UTF-8"))
            QSKIP("the de_DE.UTF-8 locale is not installed (scripts/setup generates it)");
        struct Restore {
            ~Restore() { std::setlocale(LC_ALL, "C"); }
        } restore;
        Stack s(freshDb());
        QCOMPARE(s.call("PUT", "/api/v1/rules", "{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":1,\"period\":1.5}]}]}").status, 200);
        QCOMPARE(s.request("127.0.0.46"), 200);
        QCOMPARE(s.request("127.0.0.46"), 429);
        s.log.flush();
        const Response r = s.call("GET", "/api/v1/events?since=0");
        QVERIFY2(r.body.find("\"window\":1.5,") != std::string::npos, r.body.c_str());
        QVERIFY2(r.body.find("1 request in the 1.5 s window of ip-1500ms (limit 1)") != std::string::npos, r.body.c_str());
        QVERIFY2(s.call("GET", "/api/v1/rules").body.find("\"period\":1.5}") != std::string::npos, "the rules as written");
    }

    void eventsAreValidUtf8WhateverTheRequestSent()
    {
        // A user agent and a path with bytes that are no UTF-8, each long
        // enough to be cut with a two-byte character across the cut. The
        // events API used to copy them as they were and cut mid-character:
        // its answer was not valid JSON.
        Stack s(freshDb());
        std::string agent = "bad \xff\xc3( ";
        agent += std::string(190 - agent.size(), 'u') + "\xc3\xa9" + "tail";  // the record keeps 191 bytes
        std::string path = "/caf\xc3\xa9/\xfe/";
        path += std::string(254 - path.size(), 'p') + "\xc3\xa9";  // 255 kept: the character would end at 256
        for (int i = 0; i < 7; ++i)
            s.request("127.0.0.45", path, "User-Agent: " + agent + "\r\n");
        s.log.flush();
        const Response r = s.call("GET", "/api/v1/events?since=0");
        QCOMPARE(r.status, 200);
        std::string why;
        const auto events = Json::parse(r.body, &why);
        QVERIFY2(events.has_value(), why.c_str());
        const auto& list = events->find("events")->asArray();
        QCOMPARE(list.size(), std::size_t(1));
        const std::string replacement = "\xef\xbf\xbd";
        QCOMPARE(list[0].find("user_agent")->asString(), "bad " + replacement + replacement + "( " + std::string(182, 'u'));
        QCOMPARE(list[0].find("path")->asString(), "/caf\xc3\xa9/" + replacement + "/" + std::string(254 - 9, 'p'));
    }

    void clientsAndBuckets()
    {
        Stack s(freshDb());
        for (int i = 0; i < 3; ++i)
            s.request("127.0.0.50");
        const Json clients = s.callJson("GET", "/api/v1/clients?limit=5");
        QCOMPARE(clients.find("tracked")->asInteger(), std::int64_t(1));
        const Json& c = clients.find("clients")->asArray()[0];
        QCOMPARE(str(c.find("address")), QStringLiteral("127.0.0.50"));
        QCOMPARE(str(c.find("state")), QStringLiteral("ok"));
        QCOMPARE(c.find("last_60s")->asInteger(), std::int64_t(3));
        QCOMPARE(str(c.find("binding")->find("rule")), QStringLiteral("ip-3s"));
        QCOMPARE(c.find("binding")->find("remaining")->asInteger(), std::int64_t(3));

        const Json detail = s.callJson("GET", "/api/v1/clients/127.0.0.50");
        const auto& levels = detail.find("levels")->asArray();
        QCOMPARE(levels.size(), std::size_t(3));
        QCOMPARE(str(levels[1].find("name")), QStringLiteral("ip-5m"));
        QCOMPARE(levels[1].find("used")->asInteger(), std::int64_t(3));
        QCOMPARE(levels[1].find("remaining")->asInteger(), std::int64_t(297));
        QCOMPARE(levels[1].find("buckets")->asArray().size(), std::size_t(10));
        QCOMPARE(s.call("GET", "/api/v1/clients/10.9.9.9").status, 404);
        QCOMPARE(s.call("GET", "/api/v1/clients/not-an-address").status, 400);

        const Json buckets = s.callJson("GET", "/api/v1/buckets?top=3");
        QCOMPARE(buckets.find("bucket_seconds")->asInteger(), std::int64_t(3));
        const auto& b = buckets.find("buckets")->asArray();
        QCOMPARE(b.size(), std::size_t(20));
        QCOMPARE(b.back().find("total")->asInteger(), std::int64_t(3));
        QCOMPARE(str(b.back().find("top")->asArray()[0].find("address")), QStringLiteral("127.0.0.50"));
    }
};

QTEST_GUILESS_MAIN(TestAdminReads)
#include "test_admin_reads.moc"
