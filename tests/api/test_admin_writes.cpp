// SPDX-License-Identifier: GPL-3.0-or-later
// Admin API writes over real sockets on a real SQLite file (lists, imports,
// tiers, customers, rules): each answers after COMMIT and the very next
// request to the traffic listener is decided under it.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ApiTestSupport.h"
#endif

using namespace Floodgate;
using namespace FloodgateTest;
using Wire::Json;

class TestAdminWrites : public ApiSuite {
    Q_OBJECT

private Q_SLOTS:
    void blockAndUnblockApplyToTheNextRequest()
    {
        Stack s(freshDb());
        QCOMPARE(s.request("127.0.0.7"), 200);
        const Response created = s.call("POST", "/api/v1/lists/blocklist", "{\"address\":\"127.0.0.7\",\"ttl\":\"7d\",\"reason\":\"scraper\"}");
        QCOMPARE(created.status, 201);
        QCOMPARE(QString::fromStdString(created.header("content-type")), QStringLiteral("application/json"));
        const Json entry = Json::parse(created.body).value_or(Json());
        QCOMPARE(str(entry.find("address")), QStringLiteral("127.0.0.7/32"));
        QCOMPARE(str(entry.find("list")), QStringLiteral("blocklist"));
        QCOMPARE(str(entry.find("reason")), QStringLiteral("scraper"));
        QCOMPARE(str(entry.find("source")), QStringLiteral("operator"));
        QCOMPARE(str(entry.find("created_by")), QStringLiteral("api:127.0.0.1"));
        QVERIFY(entry.find("created_at")->isString());
        QCOMPARE(entry.find("expires_in")->asInteger(), std::int64_t(7 * 86400));
        // The very next request from that address is refused, others pass.
        QCOMPARE(s.request("127.0.0.7"), 403);
        QCOMPARE(s.request("127.0.0.8"), 200);

        const Json list = s.callJson("GET", "/api/v1/lists/blocklist");
        QCOMPARE(list.find("count")->asInteger(), std::int64_t(1));
        QCOMPARE(str(list.find("entries")->asArray()[0].find("address")), QStringLiteral("127.0.0.7/32"));

        QCOMPARE(s.call("POST", "/api/v1/lists/blocklist", "{\"address\":\"127.0.0.7\",\"ttl\":null}").status, 200);  // replaced: permanent
        QVERIFY(s.callJson("GET", "/api/v1/lists/blocklist").find("entries")->asArray()[0].find("expires_at")->isNull());

        QCOMPARE(s.call("DELETE", "/api/v1/lists/blocklist/127.0.0.7").status, 204);
        QCOMPARE(s.request("127.0.0.7"), 200);
        const Response again = s.call("DELETE", "/api/v1/lists/blocklist/127.0.0.7");
        QCOMPARE(again.status, 404);
        QCOMPARE(str(Json::parse(again.body)->find("error")), QStringLiteral("127.0.0.7/32 is not on the blocklist"));

        // A range with its slash, in the path as it is or percent-encoded.
        QCOMPARE(s.call("POST", "/api/v1/lists/safelist", "{\"address\":\"2001:DB8:0::/48\"}").status, 201);
        QCOMPARE(str(s.callJson("GET", "/api/v1/lists/safelist").find("entries")->asArray()[0].find("address")), QStringLiteral("2001:db8::/48"));
        QCOMPARE(s.call("DELETE", "/api/v1/lists/safelist/2001:db8::/48").status, 204);
        QCOMPARE(s.call("POST", "/api/v1/lists/safelist", "{\"address\":\"10.0.0.0/8\"}").status, 201);
        QCOMPARE(s.call("DELETE", "/api/v1/lists/safelist/10.0.0.0%2F8").status, 204);
    }

    void tierAndCustomerEditsChangeTheNextDecision()
    {
        Stack s(freshDb());
        QCOMPARE(s.call("PUT", "/api/v1/customers/acme", "{\"name\":\"Acme Inc.\",\"tier\":\"Free\"}").status, 201);
        const Json customers = s.callJson("GET", "/api/v1/customers");
        const Json& acme = customers.find("customers")->asArray()[0];
        QCOMPARE(str(acme.find("tier")), QStringLiteral("Free"));
        QCOMPARE(acme.find("usage")->asArray()[0].find("remaining")->asInteger(), std::int64_t(100));

        Connection c;
        QVERIFY(c.open(s.listener->port(), "127.0.0.1", "127.0.0.20"));
        int status = 0;
        for (int i = 0; i < 101; ++i) {
            QVERIFY(c.send(get("/api/things?customer_id=acme")));
            status = c.read().value_or(Response{}).status;
            if (i < 100)
                QCOMPARE(status, 200);
        }
        QCOMPARE(status, 429);  // Free: 100 per hour
        QCOMPARE(s.callJson("GET", "/api/v1/customers/acme").find("usage")->asArray()[0].find("used")->asInteger(), std::int64_t(100));

        // The operator raises Free to 150/h: the next request passes.
        const Response put = s.call("PUT", "/api/v1/tiers/Free", "{\"levels\":[{\"limit\":150,\"period\":3600}]}");
        QCOMPARE(put.status, 200);
        QCOMPARE(QString::fromStdString(put.body), QStringLiteral("{\"name\":\"Free\",\"levels\":[{\"limit\":150,\"period\":3600}]}\n"));
        QVERIFY(c.send(get("/api/things?customer_id=acme")));
        const Response r = c.read().value_or(Response{});
        QCOMPARE(r.status, 200);
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")), QStringLiteral("\"free-1h\";q=150;w=3600"));

        // An override for acme alone: 1,000 per hour.
        QCOMPARE(s.call("PUT", "/api/v1/customers/acme", "{\"tier\":\"Free\",\"overrides\":[{\"limit\":1000,\"period\":\"1h\"}]}").status, 200);
        QVERIFY(c.send(get("/api/things?customer_id=acme")));
        QCOMPARE(QString::fromStdString(c.read().value_or(Response{}).header("ratelimit-policy")), QStringLiteral("\"acme-1h\";q=1000;w=3600"));

        QCOMPARE(s.call("DELETE", "/api/v1/tiers/Free").status, 409);
        QCOMPARE(s.call("DELETE", "/api/v1/customers/acme").status, 204);
        QCOMPARE(s.call("DELETE", "/api/v1/tiers/Free").status, 204);
        QCOMPARE(s.callJson("GET", "/api/v1/tiers").find("tiers")->asArray().size(), std::size_t(2));
    }

    // Tier names are one namespace, case-insensitively (as for the CLI and
    // the console: the store decides): PUT /tiers/pro changes Pro.
    void tierNamesAreMatchedCaseInsensitively()
    {
        Stack s(freshDb());
        const Response put = s.call("PUT", "/api/v1/tiers/pro", "{\"levels\":[{\"limit\":200,\"period\":60}]}");
        QCOMPARE(put.status, 200);
        QCOMPARE(QString::fromStdString(put.body), QStringLiteral("{\"name\":\"Pro\",\"levels\":[{\"limit\":200,\"period\":60}]}\n"));
        const Json tiers = s.callJson("GET", "/api/v1/tiers");
        QCOMPARE(tiers.find("tiers")->asArray().size(), std::size_t(3));
        QCOMPARE(str(s.callJson("GET", "/api/v1/tiers/PRO").find("name")), QStringLiteral("Pro"));
        QCOMPARE(s.call("PUT", "/api/v1/customers/acme", "{\"tier\":\"PRO\"}").status, 201);
        QCOMPARE(str(s.callJson("GET", "/api/v1/customers/acme").find("tier")), QStringLiteral("Pro"));
        const Response used = s.call("DELETE", "/api/v1/tiers/pro");
        QCOMPARE(used.status, 409);
        QCOMPARE(str(Json::parse(used.body)->find("error")), QStringLiteral("tier \"Pro\" is used by 1 customer (acme): move them to another tier first"));
        QCOMPARE(s.call("DELETE", "/api/v1/tiers/enterprise").status, 204);
        QCOMPARE(s.callJson("GET", "/api/v1/tiers").find("tiers")->asArray().size(), std::size_t(2));
    }

    // A plain file of one address or range a line (by format=txt or by its
    // content), and a CSV that states source and ttl permanent.
    void importPlainAddressesAndSources()
    {
        Stack s(freshDb());
        for (const char* target : {"/api/v1/lists/import?format=txt", "/api/v1/lists/import"}) {
            const Response plain = s.call("POST", target, "# blocklist\n127.0.0.61\n\n127.0.1.0/24 # scanners\n", "Content-Type: text/plain\r\n");
            QCOMPARE(plain.status, 200);
            QCOMPARE(QString::fromStdString(plain.body), QString::fromUtf8(std::string_view(target).find('?') != std::string_view::npos ? "{\"imported\":2,\"replaced\":0}\n" : "{\"imported\":2,\"replaced\":2}\n"));
        }
        QCOMPARE(s.request("127.0.0.61"), 403);
        QCOMPARE(s.request("127.0.1.9"), 403);
        const Json listed = s.callJson("GET", "/api/v1/lists/blocklist");  // kept: entries point into it
        const Json& first = listed.find("entries")->asArray()[0];
        QCOMPARE(str(first.find("reason")), QStringLiteral("imported"));
        QCOMPARE(str(first.find("source")), QStringLiteral("import"));
        QCOMPARE(first.find("expires_in")->asInteger(), std::int64_t(7 * 86400));
        const Response bad = s.call("POST", "/api/v1/lists/import?format=txt", "127.0.0.62\n127.0.0.x\n");
        QCOMPARE(bad.status, 400);
        QCOMPARE(Json::parse(bad.body)->find("rejected")->asArray()[0].find("line")->asInteger(), std::int64_t(2));

        const Response csv = s.call("POST", "/api/v1/lists/import?format=csv",
                                    "list,address,reason,source,ttl\r\nsafelist,127.0.0.63,office,operator,permanent\r\n");
        QCOMPARE(csv.status, 200);
        const Json safelist = s.callJson("GET", "/api/v1/lists/safelist");
        const Json& safe = safelist.find("entries")->asArray()[0];
        QCOMPARE(str(safe.find("source")), QStringLiteral("operator"));
        QVERIFY(safe.find("expires_at")->isNull());
    }

    void rulesReadAndReplace()
    {
        Stack s(freshDb());
        const Json rules = s.callJson("GET", "/api/v1/rules");
        const Json& ip = rules.find("rules")->asArray()[0];
        QCOMPARE(QString::fromStdString(ip.dump()),
                 QStringLiteral("{\"name\":\"ip\",\"key\":\"address\",\"method\":\"\",\"path\":\"\",\"levels\":["
                                "{\"limit\":6,\"period\":3,\"algorithm\":\"lockout\",\"lockout\":3},"
                                "{\"limit\":300,\"period\":300},{\"limit\":600,\"period\":1800}]}"));
        QCOMPARE(rules.find("settings")->find("throttle_status")->asInteger(), std::int64_t(429));

        QCOMPARE(s.call("PUT", "/api/v1/rules", "{\"settings\":{\"throttle_status\":503}}").status, 200);
        for (int i = 0; i < 6; ++i)
            QCOMPARE(s.request("127.0.0.30"), 200);
        QCOMPARE(s.request("127.0.0.30"), 503);
        // The rest of the document stayed as it was.
        QCOMPARE(s.callJson("GET", "/api/v1/rules").find("rules")->dump(), rules.find("rules")->dump());
    }

    void perIpLimitingIsTurnedOffOnlyOnPurpose()
    {
        Stack s(freshDb());
        const std::string offMessage = "rules: no rule counts every request by address (key \"address\", no method, no path), which "
                                       "turns per-IP limiting off for every anonymous client; keep one, or say \"ip_levels_disabled\": true";
        // An empty list, or only narrower rules, would silently stop limiting every anonymous client.
        const std::string login = "{\"name\":\"login\",\"method\":\"POST\",\"path\":\"/login\",\"levels\":[{\"limit\":5,\"period\":60}]}";
        for (const std::string& body : {std::string("{\"rules\":[]}"), "{\"rules\":[" + login + "]}"}) {
            const Response r = s.call("PUT", "/api/v1/rules", body);
            QCOMPARE(r.status, 400);
            QCOMPARE(Json::parse(r.body)->find("error")->asString(), offMessage);
        }
        QCOMPARE(s.callJson("GET", "/api/v1/rules").find("ip_levels_disabled")->asBool(), false);
        // Said on purpose: stored, shown, and anonymous clients are not limited.
        QCOMPARE(s.call("PUT", "/api/v1/rules", "{\"rules\":[" + login + "],\"ip_levels_disabled\":true}").status, 200);
        const Json off = s.callJson("GET", "/api/v1/rules");
        QCOMPARE(off.find("ip_levels_disabled")->asBool(), true);
        for (int i = 0; i < 10; ++i)
            QCOMPARE(s.request("127.0.0.47"), 200);
        // Other edits go on while it is off; the document read is the document written.
        QCOMPARE(s.call("PUT", "/api/v1/rules", "{\"settings\":{\"throttle_status\":503}}").status, 200);
        QCOMPARE(s.call("PUT", "/api/v1/rules", s.call("GET", "/api/v1/rules").body).status, 200);
        // Saying the opposite of the rules is refused.
        const std::string ip = "{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3}]}";
        const Response both = s.call("PUT", "/api/v1/rules", "{\"rules\":[" + ip + "],\"ip_levels_disabled\":true}");
        QCOMPARE(both.status, 400);
        QCOMPARE(Json::parse(both.body)->find("error")->asString(),
                 std::string("ip_levels_disabled is true but rules[0] counts every request by address; remove it or leave ip_levels_disabled out"));
        const Response stillOff = s.call("PUT", "/api/v1/rules", "{\"ip_levels_disabled\":false}");
        QCOMPARE(stillOff.status, 400);
        QCOMPARE(Json::parse(stillOff.body)->find("error")->asString(), offMessage);
        // A per-IP rule again: limiting is back for the next request.
        QCOMPARE(s.call("PUT", "/api/v1/rules", "{\"rules\":[" + ip + "]}").status, 200);
        QCOMPARE(s.callJson("GET", "/api/v1/rules").find("ip_levels_disabled")->asBool(), false);
        for (int i = 0; i < 6; ++i)
            QCOMPARE(s.request("127.0.0.48"), 200);
        QCOMPARE(s.request("127.0.0.48"), 503);
    }

    void importAndExportThroughTheApi()
    {
        Stack s(freshDb());
        const Response bad = s.call("POST", "/api/v1/lists/import?format=csv",
                                    "list,address,reason\nblocklist,127.0.0.60,scraper\nblocklist,nonsense,x\n");
        QCOMPARE(bad.status, 400);
        const Json report = Json::parse(bad.body).value_or(Json());
        QCOMPARE(str(report.find("error")), QStringLiteral("1 line rejected; nothing was imported"));
        QCOMPARE(report.find("rejected")->asArray()[0].find("line")->asInteger(), std::int64_t(3));
        QCOMPARE(s.request("127.0.0.60"), 200);

        const Response good = s.call("POST", "/api/v1/lists/import", "[{\"list\":\"blocklist\",\"address\":\"127.0.0.60\",\"ttl\":3600}]");
        QCOMPARE(good.status, 200);
        QCOMPARE(QString::fromStdString(good.body), QStringLiteral("{\"imported\":1,\"replaced\":0}\n"));
        QCOMPARE(s.request("127.0.0.60"), 403);

        const Response csv = s.call("GET", "/api/v1/lists?format=csv");
        QCOMPARE(csv.status, 200);
        QVERIFY2(csv.body.rfind("list,address,reason,source,created_at,created_by,expires_at\r\nblocklist,127.0.0.60/32,,import,", 0) == 0,
                 csv.body.c_str());
    }
};

QTEST_GUILESS_MAIN(TestAdminWrites)
#include "test_admin_writes.moc"
