// SPDX-License-Identifier: GPL-3.0-or-later
// Admin API writes over real sockets on a real SQLite file (lists, imports,
// tiers, customers, rules): each answers after COMMIT and the very next
// request to the traffic listener is decided under it.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ApiTestSupport.h"
#include "core/CustomerKey.h"
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
        const Response created = s.call("PUT", "/api/v1/customers/acme", "{\"name\":\"Acme Inc.\",\"tier\":\"Free\"}");
        QCOMPARE(created.status, 201);
        const std::string key = Json::parse(created.body).value_or(Json()).find("api_key")->asString();
        const std::string asAcme = "X-Api-Key: " + key + "\r\n";
        const Json customers = s.callJson("GET", "/api/v1/customers");
        const Json& acme = customers.find("customers")->asArray()[0];
        QCOMPARE(str(acme.find("tier")), QStringLiteral("Free"));
        QCOMPARE(acme.find("usage")->asArray()[0].find("remaining")->asInteger(), std::int64_t(100));

        Connection c;
        QVERIFY(c.open(s.listener->port(), "127.0.0.1", "127.0.0.20"));
        int status = 0;
        for (int i = 0; i < 101; ++i) {
            QVERIFY(c.send(get("/api/things", asAcme)));
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
        QVERIFY(c.send(get("/api/things", asAcme)));
        const Response r = c.read().value_or(Response{});
        QCOMPARE(r.status, 200);
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")), QStringLiteral("\"free-1h\";q=150;w=3600"));

        // An override for acme alone: 1,000 per hour.
        QCOMPARE(s.call("PUT", "/api/v1/customers/acme", "{\"tier\":\"Free\",\"overrides\":[{\"limit\":1000,\"period\":\"1h\"}]}").status, 200);
        QVERIFY(c.send(get("/api/things", asAcme)));
        QCOMPARE(QString::fromStdString(c.read().value_or(Response{}).header("ratelimit-policy")), QStringLiteral("\"acme-1h\";q=1000;w=3600"));

        QCOMPARE(s.call("DELETE", "/api/v1/tiers/Free").status, 409);
        QCOMPARE(s.call("DELETE", "/api/v1/customers/acme").status, 204);
        QCOMPARE(s.call("DELETE", "/api/v1/tiers/Free").status, 204);
        QCOMPARE(s.callJson("GET", "/api/v1/tiers").find("tiers")->asArray().size(), std::size_t(2));
    }

    // A customer proves who it is with a key the API makes, shows once and
    // keeps only the SHA-256 of; a rotation may keep the old keys a while;
    // a revoked key, or the customer's id in a header, is anyone's claim:
    // counted by address, and the event's why says so.
    void customerKeysOverTheApi()
    {
        Stack s(freshDb());
        const Response created = s.call("PUT", "/api/v1/customers/acme", "{\"tier\":\"Pro\"}");
        QCOMPARE(created.status, 201);
        const Json body = Json::parse(created.body).value_or(Json());
        const std::string first = body.find("api_key")->asString();
        QVERIFY2(first.starts_with("fgk_") && first.size() == 47, first.c_str());
        QCOMPARE(body.find("keys")->asArray().size(), std::size_t(1));
        QCOMPARE(str(body.find("keys")->asArray()[0].find("id")), QString::fromStdString(first.substr(0, 12)));
        // Shown once: GET has the key's id and SHA-256, never the key.
        const Response got = s.call("GET", "/api/v1/customers/acme");
        QVERIFY(got.body.find(first) == std::string::npos);
        QVERIFY(got.body.find("api_key") == std::string::npos);
        QCOMPARE(str(Json::parse(got.body).value_or(Json()).find("keys")->asArray()[0].find("sha256")),
                 QString::fromStdString(Core::toHex(Core::keyDigest(first))));

        auto policy = [&](const char* from, const std::string& headers) {
            Connection c;
            if (!c.open(s.listener->port(), "127.0.0.1", from) || !c.send(get("/api/things", headers)))
                return std::string("(no answer)");
            return c.read().value_or(Response{}).header("ratelimit-policy");
        };
        auto keyHeader = [](const std::string& k) { return "X-Api-Key: " + k + "\r\n"; };
        QCOMPARE(QString::fromStdString(policy("127.0.0.30", keyHeader(first))).left(8), QStringLiteral("\"pro-1m\""));
        QCOMPARE(QString::fromStdString(policy("127.0.0.31", "X-Customer-Id: acme\r\n")).left(7), QStringLiteral("\"ip-3s\""));

        // A PUT that says nothing of keys keeps them, and shows none.
        const Response again = s.call("PUT", "/api/v1/customers/acme", "{\"tier\":\"Enterprise\"}");
        QCOMPARE(again.status, 200);
        QVERIFY(again.body.find("api_key") == std::string::npos);
        QCOMPARE(QString::fromStdString(policy("127.0.0.30", keyHeader(first))).left(15), QStringLiteral("\"enterprise-1m\""));

        // Rotation with an overlap: both keys work, the old one expires in an hour.
        const Response rotated = s.call("POST", "/api/v1/customers/acme/keys", "{\"keep_old\":3600}");
        QCOMPARE(rotated.status, 201);
        const Json r = Json::parse(rotated.body).value_or(Json());
        const std::string second = r.find("api_key")->asString();
        QVERIFY(second != first);
        const auto& keys = r.find("customer")->find("keys")->asArray();
        QCOMPARE(keys.size(), std::size_t(2));
        QVERIFY(keys[0].find("expires_at")->isString());
        QVERIFY(keys[1].find("expires_at")->isNull());
        QCOMPARE(QString::fromStdString(policy("127.0.0.30", keyHeader(first))).left(15), QStringLiteral("\"enterprise-1m\""));
        QCOMPARE(QString::fromStdString(policy("127.0.0.32", keyHeader(second))).left(15), QStringLiteral("\"enterprise-1m\""));

        // Revoking the old key by its id: it is anyone's claim from now on.
        QCOMPARE(s.call("DELETE", "/api/v1/customers/acme/keys/" + first.substr(0, 12)).status, 204);
        QCOMPARE(QString::fromStdString(policy("127.0.0.33", keyHeader(first))).left(7), QStringLiteral("\"ip-3s\""));
        QCOMPARE(s.call("DELETE", "/api/v1/customers/acme/keys/" + first.substr(0, 12)).status, 404);
        // A new key without keep_old revokes the others at once.
        const std::string third = Json::parse(s.call("POST", "/api/v1/customers/acme/keys").body).value_or(Json()).find("api_key")->asString();
        QCOMPARE(QString::fromStdString(policy("127.0.0.34", keyHeader(second))).left(7), QStringLiteral("\"ip-3s\""));
        QCOMPARE(QString::fromStdString(policy("127.0.0.34", keyHeader(third))).left(15), QStringLiteral("\"enterprise-1m\""));
        QCOMPARE(s.call("POST", "/api/v1/customers/nobody/keys").status, 404);
        QCOMPARE(s.call("GET", "/api/v1/customers/acme/keys").status, 405);
        QCOMPARE(s.call("POST", "/api/v1/customers/acme/keys", "{\"keep_old\":\"forever\"}").status, 400);
        QCOMPARE(s.callWithout("POST", "/api/v1/customers/acme/keys").status, 401);

        // Whoever names acme without its key is refused at the per-IP
        // level, and the event says what it claimed.
        Connection c;
        QVERIFY(c.open(s.listener->port(), "127.0.0.1", "127.0.0.35"));
        int status = 0;
        for (int i = 0; i < 7; ++i) {
            QVERIFY(c.send(get("/api/things", "X-Customer-Id: acme\r\n")));
            status = c.read().value_or(Response{}).status;
        }
        QCOMPARE(status, 429);
        // /metrics counts the claims by kind: the header eight times, the two revoked keys once each.
        const std::string metrics = s.call("GET", "/metrics").body;
        QVERIFY2(metrics.find("floodgate_customer_claims_total{claim=\"header_not_a_proof\"} 8\n") != std::string::npos, metrics.c_str());
        QVERIFY2(metrics.find("floodgate_customer_claims_total{claim=\"unknown_key\"} 2\n") != std::string::npos, metrics.c_str());
        QTRY_VERIFY(!s.callJson("GET", "/api/v1/events").find("events")->asArray().empty());
        const Json events = s.callJson("GET", "/api/v1/events");
        const std::string why = events.find("events")->asArray().back().find("why")->asString();
        QVERIFY2(why.find("It named customer \"acme\" in the customer header, which proves nothing") != std::string::npos, why.c_str());
        // The audit trail has each key's making and revocation, with no key in it.
        const Response audit = s.call("GET", "/api/v1/audit");
        QVERIFY(audit.body.find("customer.key_add") != std::string::npos);
        QVERIFY(audit.body.find("customer.key_revoke") != std::string::npos);
        for (const std::string& k : {first, second, third})
            QVERIFY(audit.body.find(k) == std::string::npos);
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
