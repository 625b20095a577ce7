// SPDX-License-Identifier: GPL-3.0-or-later
// Bad input to the admin API over real sockets is 400 naming the field (or
// the query parameter) and changes nothing in the SQLite file or the engine;
// oversized bodies and wrong methods are refused; a seeded fuzzer sends
// mutated bodies to every writing route.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ApiTestSupport.h"

#include <chrono>
#include <climits>
#include <random>
#endif

using namespace Floodgate;
using namespace FloodgateTest;
using Wire::Json;

namespace {

// ---- the fuzzer (this suite for ~8 s; scripts/fuzz-admin for longer) ----

// One request of a writing route, as a valid client sends it.
struct FuzzSeed {
    std::string method;
    std::string target;
    std::string body;
    std::string headers;
};

std::vector<FuzzSeed> fuzzSeeds(const std::string& rulesDocument)
{
    return {
        {"POST", "/api/v1/lists/blocklist", "{\"address\":\"203.0.113.7\",\"ttl\":\"7d\",\"reason\":\"scraper\"}", {}},
        {"POST", "/api/v1/lists/safelist", "{\"address\":\"2001:db8::/48\",\"expires_at\":\"2040-01-01T00:00:00Z\"}", {}},
        {"POST", "/api/v1/lists/safelist", "{\"address\":\"10.0.0.0/8\",\"ttl\":null,\"reason\":\"office\"}", {}},
        {"DELETE", "/api/v1/lists/blocklist/203.0.113.7", {}, {}},
        {"POST", "/api/v1/lists/import", "[{\"list\":\"blocklist\",\"address\":\"10.1.2.3\",\"ttl\":3600,\"reason\":\"x\"}]", {}},
        {"POST", "/api/v1/lists/import?format=csv", "list,address,reason\r\nblocklist,10.1.2.4,\"a, b\"\r\n", "Content-Type: text/csv\r\n"},
        {"PUT", "/api/v1/tiers/Pro", "{\"name\":\"Pro\",\"levels\":[{\"limit\":100,\"period\":60},{\"limit\":5000,\"period\":\"1h\"}]}", {}},
        {"DELETE", "/api/v1/tiers/Free", {}, {}},
        {"PUT", "/api/v1/customers/acme", "{\"name\":\"Acme\",\"tier\":\"Pro\",\"overrides\":[{\"limit\":1000,\"period\":3600}]}", {}},
        {"DELETE", "/api/v1/customers/acme", {}, {}},
        {"PUT", "/api/v1/rules", rulesDocument, {}},
        {"PUT", "/api/v1/rules",
         "{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3,\"algorithm\":\"lockout\",\"lockout\":3}]},"
         "{\"name\":\"key\",\"key\":\"header\",\"header\":\"X-Api-Key\",\"levels\":[{\"limit\":10,\"period\":1,\"bucket\":0.5}]}]}",
         {}},
        {"PUT", "/api/v1/rules", "{\"settings\":{\"throttle_status\":503,\"trusted_proxies\":[\"10.0.0.0/8\"]},\"escalation\":{\"refusals\":5}}", {}},
    };
}

// One to three edits of a valid body: bytes changed, inserted, cut or
// repeated; a value swapped for an extreme or another type; deep nesting;
// a duplicate key; a long or invalid string. Sometimes the name in the path.
std::string mutate(std::string s, std::mt19937& rng)
{
    static const char* const VALUES[] = {"1e400", "-1e400", "-0", "99999999999999999999", "1.5", "-1", "0", "1e-400", "null", "true",
                                         "[]", "{}", "\"\"", "\"\\ud800\"", "\"\xff\xfe\"", "\"7d\"", "\"-5s\"", "\"1e400s\"",
                                         "\"0.0.0.0/0\"", "\"::/0\"", "18446744073709551616", "[1,[2,[3]]]"};
    static const char RAW[] = "{}[]\",:\\0123456789-+.eEtrufalsn \t\r\n\x01\x7f\x80\xc3\xff";
    static const std::string BYTES = std::string(RAW, sizeof RAW - 1) + '\0';
    auto pick = [&](std::size_t n) { return n == 0 ? std::size_t(0) : std::size_t(rng() % n); };
    const int edits = 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e) {
        const std::size_t at = pick(s.size() + 1);
        switch (rng() % 10) {
        case 0:
            if (!s.empty())
                s[pick(s.size())] = char(rng() % 256);
            break;
        case 1: s.insert(at, 1, BYTES[pick(BYTES.size())]); break;
        case 2: s.erase(at, pick(9)); break;
        case 3: {
            const std::string slice = s.substr(pick(s.size() + 1), pick(33));
            s.insert(at, slice);
            break;
        }
        case 4: s.resize(at); break;
        case 5:
        case 6: {
            // A value (after a ':' or in an array) replaced by another.
            const std::size_t colon = s.find_first_of(":[,", at);
            if (colon == std::string::npos)
                break;
            const std::size_t end = s.find_first_of(",}]", colon + 1);
            s.replace(colon + 1, (end == std::string::npos ? s.size() : end) - colon - 1, VALUES[pick(std::size(VALUES))]);
            break;
        }
        case 7: {
            const std::size_t depth = 1 + pick(120);
            s.insert(at, std::string(depth, '[') + "1" + std::string(depth, ']'));
            break;
        }
        case 8: {
            const std::size_t brace = s.find('{', at);
            if (brace != std::string::npos)
                s.insert(brace + 1, pick(2) ? "\"address\":\"1.2.3.4\"," : "\"levels\":[],");
            break;
        }
        default: {
            const std::size_t quote = s.find('"', at);
            if (quote != std::string::npos)
                s.insert(quote + 1, pick(2) ? std::string(300, 'x') : std::string("\xc3\x28\xed\xa0\x80\xf4\x90\x80\x80"));
        }
        }
    }
    return s;
}

std::string fuzzPath(const std::string& target, std::mt19937& rng)
{
    static const char* const NAMES[] = {"%ff", "%00x", "a%2Fb", "%c3%a9t%c3%a9", "", "..", "Pro%20", "%", "%zz", "%7f",
                                        "2001:db8::%2F200", "1.2.3.4%2F-1", "999.1.1.1", "greylist"};
    const auto slash = target.rfind('/');
    const std::string name = rng() % 5 == 0 ? std::string(150 + rng() % 100, 'n') : NAMES[rng() % std::size(NAMES)];
    return target.substr(0, slash + 1) + name;
}

// The first `n` bytes of a body, printable, for a failure message.
std::string shown(const std::string& body)
{
    std::string out;
    for (char c : body.substr(0, 400))
        out += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : "\\x" + QByteArray(1, c).toHex().toStdString();
    return out;
}

int environmentNumber(const char* name, int fallback)
{
    const QByteArray v = qgetenv(name);
    bool ok = false;
    const int n = v.toInt(&ok);
    return ok ? n : fallback;
}

} // namespace

class TestAdminInput : public ApiSuite {
    Q_OBJECT

private Q_SLOTS:
    void badInputIs400NamingTheFieldAndChangesNothing_data()
    {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("error");
        const QString block = QStringLiteral("/api/v1/lists/blocklist");
        QTest::newRow("unparseable address") << "POST" << block << "{\"address\":\"999.1.1.1\"}"
                                             << "address: part 1 of the IPv4 address is over 255";
        QTest::newRow("prefix out of range") << "POST" << block << "{\"address\":\"1.2.3.4/33\"}"
                                             << "address: prefix length /33 is out of range (0-32 for IPv4)";
        QTest::newRow("negative ttl") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":-5}" << "ttl must be > 0";
        QTest::newRow("zero ttl") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":0}" << "ttl must be > 0";
        QTest::newRow("unknown ttl unit") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":\"5y\"}"
                                          << "ttl has an unknown unit \"y\" (use s, m, h, d or w)";
        QTest::newRow("missing address") << "POST" << block << "{\"reason\":\"x\"}" << "address is required";
        QTest::newRow("unknown field") << "POST" << block << "{\"addr\":\"1.2.3.4\"}" << "addr is not a known field";
        QTest::newRow("malformed JSON") << "POST" << block << "{\"address\":" << "body: malformed JSON: unexpected end of input at offset 11";
        QTest::newRow("unknown list") << "POST" << "/api/v1/lists/greylist" << "{\"address\":\"1.2.3.4\"}"
                                      << "list: unknown list \"greylist\" (safelist or blocklist)";
        QTest::newRow("unknown tier") << "PUT" << "/api/v1/customers/acme" << "{\"tier\":\"Platinum\"}"
                                      << "tier \"Platinum\" is not a known tier";
        QTest::newRow("a name that is no UTF-8") << "PUT" << "/api/v1/customers/%ff" << "{\"tier\":\"Pro\"}"
                                                 << "id: a customer id is 1-100 bytes of printable UTF-8 without '/'";
        QTest::newRow("limit of zero") << "PUT" << "/api/v1/tiers/Pro" << "{\"levels\":[{\"limit\":0,\"period\":60}]}"
                                       << "levels[0].limit must be > 0";
        QTest::newRow("period of zero") << "PUT" << "/api/v1/tiers/Pro" << "{\"levels\":[{\"limit\":10,\"period\":0}]}"
                                        << "levels[0].period must be > 0";
        QTest::newRow("negative override") << "PUT" << "/api/v1/customers/acme" << "{\"tier\":\"Pro\",\"overrides\":[{\"limit\":-1,\"period\":60}]}"
                                           << "overrides[0].limit must be > 0";
        QTest::newRow("bad throttle status") << "PUT" << "/api/v1/rules" << "{\"settings\":{\"throttle_status\":418}}"
                                             << "settings.throttle_status must be 429, 503 or 403";
        QTest::newRow("bad trusted proxy") << "PUT" << "/api/v1/rules" << "{\"settings\":{\"trusted_proxies\":[\"10.0.0.0/33\"]}}"
                                           << "settings.trusted_proxies[0]: prefix length /33 is out of range (0-32 for IPv4)";
        // Numbers outside their field's range, however they are written.
        const QString pro = QStringLiteral("/api/v1/tiers/Pro");
        const QString rules = QStringLiteral("/api/v1/rules");
        auto level = [](const char* limit, const char* period) {
            return QStringLiteral("{\"levels\":[{\"limit\":%1,\"period\":%2}]}").arg(QLatin1String(limit), QLatin1String(period));
        };
        QTest::newRow("limit 1e400") << "PUT" << pro << level("1e400", "60") << "levels[0].limit must be <= 1000000000";
        QTest::newRow("limit -1e400") << "PUT" << pro << level("-1e400", "60") << "levels[0].limit must be > 0";
        QTest::newRow("limit beyond 64 bits") << "PUT" << pro << level("99999999999999999999", "60") << "levels[0].limit must be <= 1000000000";
        QTest::newRow("limit -0") << "PUT" << pro << level("-0", "60") << "levels[0].limit must be > 0";
        QTest::newRow("limit fraction") << "PUT" << pro << level("1.5", "60") << "levels[0].limit must be a whole number";
        QTest::newRow("limit as a string") << "PUT" << pro << level("\"10\"", "60") << "levels[0].limit must be a whole number";
        QTest::newRow("period 1e400") << "PUT" << pro << level("10", "1e400") << "levels[0].period must be at most 100 years";
        QTest::newRow("period -0") << "PUT" << pro << level("10", "-0") << "levels[0].period must be > 0";
        QTest::newRow("period beyond 64 bits") << "PUT" << pro << level("10", "99999999999999999999") << "levels[0].period must be at most 100 years";
        QTest::newRow("ttl 1e400") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":1e400}" << "ttl must be at most 100 years";
        QTest::newRow("ttl -0") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":-0}" << "ttl must be > 0";
        QTest::newRow("ttl beyond 64 bits") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":99999999999999999999}"
                                            << "ttl must be at most 100 years";
        QTest::newRow("ttl tiny") << "POST" << block << "{\"address\":\"1.2.3.4\",\"ttl\":1e-400}" << "ttl must be > 0";
        QTest::newRow("tracked keys 1e400") << "PUT" << rules << "{\"settings\":{\"max_tracked_keys\":1e400}}"
                                            << "settings.max_tracked_keys must be <= 100000000";
        QTest::newRow("prefix beyond 64 bits") << "PUT" << rules << "{\"settings\":{\"ipv6_prefix\":99999999999999999999}}"
                                               << "settings.ipv6_prefix must be <= 128";
        QTest::newRow("refusals fraction") << "PUT" << rules << "{\"escalation\":{\"refusals\":2.5}}" << "escalation.refusals must be a whole number";
        QTest::newRow("factor -0") << "PUT" << rules << "{\"escalation\":{\"factor\":-0}}" << "escalation.factor must be > 0";
        QTest::newRow("lockout of zero") << "PUT" << rules
                                         << "{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3,\"algorithm\":\"lockout\",\"lockout\":0}]}]}"
                                         << "rules[0].levels[0].lockout must be > 0 (leave it out for the period)";
        QTest::newRow("bucket of zero") << "PUT" << rules << "{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3,\"bucket\":0}]}]}"
                                        << "rules[0].levels[0].bucket must be > 0 (leave it out for a tenth of the period)";
        QTest::newRow("bad algorithm") << "PUT" << "/api/v1/rules" << "{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":5,\"period\":1,\"algorithm\":\"leaky\"}]}]}"
                                       << "rules[0].levels[0].algorithm must be \"sliding\", \"fixed\" or \"lockout\"";
        // The engine's caps (Tuning.h) are refused by name, never silently cut.
        QString keyed = QStringLiteral("{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3}]}");
        for (int i = 0; i < 17; ++i)
            keyed += QStringLiteral(",{\"name\":\"key%1\",\"key\":\"header\",\"header\":\"X-Api-Key\",\"levels\":[{\"limit\":5,\"period\":60}]}").arg(i);
        keyed += QStringLiteral("]}");
        QTest::newRow("17 rules counted by a header") << "PUT" << "/api/v1/rules" << keyed
                                                    << "rules[17].key: at most 16 rules may count by a header or by address and user agent";
        QString levels = QStringLiteral("{\"levels\":[");
        for (int i = 1; i <= 65; ++i)
            levels += QStringLiteral("%1{\"limit\":10,\"period\":%2}").arg(i > 1 ? QStringLiteral(",") : QString()).arg(i);
        levels += QStringLiteral("]}");
        QTest::newRow("a tier with 65 levels") << "PUT" << "/api/v1/tiers/Pro" << levels << "levels has 65 levels: at most 64";
        // Globs: at most 512 characters each, 256 in a list (each costs a pass over every request's path).
        const QString long513 = QStringLiteral("*") + QString(511, QLatin1Char('a')) + QStringLiteral("*");
        QTest::newRow("an excluded path of 513 characters") << "PUT" << rules
                                                            << QStringLiteral("{\"excluded_paths\":[\"*.css\",\"%1\"]}").arg(long513)
                                                            << "excluded_paths[1] must be at most 512 characters";
        QStringList many;
        for (int i = 0; i < 257; ++i)
            many << QStringLiteral("\"/p%1/*\"").arg(i);
        QTest::newRow("257 excluded paths") << "PUT" << rules << QStringLiteral("{\"excluded_paths\":[%1]}").arg(many.join(QLatin1Char(',')))
                                            << "excluded_paths has 257 patterns: at most 256";
        QTest::newRow("257 safe user agents") << "PUT" << rules << QStringLiteral("{\"safe_user_agents\":[%1]}").arg(many.join(QLatin1Char(',')))
                                              << "safe_user_agents has 257 patterns: at most 256";
        QTest::newRow("a safe user agent of 513 characters") << "PUT" << rules
                                                             << QStringLiteral("{\"safe_user_agents\":[\"%1\"]}").arg(long513)
                                                             << "safe_user_agents[0] must be at most 512 characters";
        QTest::newRow("a rule path of 513 characters")
            << "PUT" << rules
            << QStringLiteral("{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3}]},"
                              "{\"name\":\"long\",\"path\":\"%1\",\"levels\":[{\"limit\":5,\"period\":60}]}]}")
                   .arg(long513)
            << "rules[1].path must be at most 512 characters";
        QTest::newRow("a cooldown path of 513 characters")
            << "PUT" << rules << QStringLiteral("{\"cooldowns\":[{\"name\":\"c\",\"path\":\"%1\",\"duration\":30}]}").arg(long513)
            << "cooldowns[0].path must be at most 512 characters";
        QStringList cooldowns;
        for (int i = 0; i < 257; ++i)
            cooldowns << QStringLiteral("{\"name\":\"c%1\",\"path\":\"/c%1\",\"duration\":30}").arg(i);
        QTest::newRow("257 cooldowns") << "PUT" << rules << QStringLiteral("{\"cooldowns\":[%1]}").arg(cooldowns.join(QLatin1Char(',')))
                                       << "cooldowns has 257 cooldowns: at most 256";
    }
    void badInputIs400NamingTheFieldAndChangesNothing()
    {
        QFETCH(QString, method);
        QFETCH(QString, target);
        QFETCH(QString, body);
        QFETCH(QString, error);
        Stack s(freshDb());
        const std::string rulesBefore = s.call("GET", "/api/v1/rules").body;
        const std::string tiersBefore = s.call("GET", "/api/v1/tiers").body;
        const Response r = s.call(method.toStdString(), target.toStdString(), body.toStdString());
        QCOMPARE(r.status, 400);
        QCOMPARE(str(Json::parse(r.body).value_or(Json()).find("error")), error);
        QCOMPARE(s.callJson("GET", "/api/v1/lists/blocklist").find("count")->asInteger(), std::int64_t(0));
        QCOMPARE(s.call("GET", "/api/v1/rules").body, rulesBefore);
        QCOMPARE(s.call("GET", "/api/v1/tiers").body, tiersBefore);
        QVERIFY(s.callJson("GET", "/api/v1/customers").find("customers")->asArray().empty());
        QVERIFY(s.callJson("GET", "/api/v1/audit").find("audit")->asArray().empty());
    }

    void globsAtTheirCapsAreAccepted()
    {
        // 512 characters, 256 in a list: accepted, stored and in force (the
        // body is past this suite's 64 KiB limit: the product's is taken).
        Setup setup;
        setup.admin.bodyLimitBytes = Http::AdminOptions{}.bodyLimitBytes;
        Stack s(freshDb(), setup);
        const std::string longest = "*" + std::string(509, 'a') + "b*";
        std::string excluded;
        for (int i = 0; i < 256; ++i)
            excluded += (i ? ",\"" : "\"") + (i == 255 ? std::string("/static/*") : longest) + "\"";
        const std::string body = "{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3}]},"
                                 "{\"name\":\"long\",\"path\":\"" + longest + "\",\"levels\":[{\"limit\":5,\"period\":60}]}],"
                                 "\"excluded_paths\":[" + excluded + "]}";
        const Response r = s.call("PUT", "/api/v1/rules", body);
        QVERIFY2(r.status == 200, r.body.c_str());
        const Json stored = s.callJson("GET", "/api/v1/rules");
        QCOMPARE(stored.find("excluded_paths")->asArray().size(), std::size_t(256));
        QCOMPARE(str(stored.find("rules")->asArray()[1].find("path")), QString::fromStdString(longest));
        QCOMPARE(s.engine->config()->bot.excludedPaths.size(), std::size_t(256));
    }

    void oversizedBodiesAndWrongMethods()
    {
        Stack s(freshDb());
        const Response big = s.call("POST", "/api/v1/lists/blocklist", std::string(100 * 1024, 'x'));
        QCOMPARE(big.status, 413);
        QCOMPARE(str(Json::parse(big.body).value_or(Json()).find("error")), QStringLiteral("body: the request body is too large"));
        const Response patch = s.call("PATCH", "/api/v1/rules", "{}");
        QCOMPARE(patch.status, 405);
        QCOMPARE(QString::fromStdString(patch.header("allow")), QStringLiteral("GET, PUT"));
        // HEAD: the headers of GET, no body; the connection goes on.
        Connection c;
        QVERIFY(c.open(s.admin->port()));
        QVERIFY(c.send("HEAD /api/v1/rules HTTP/1.1\r\nHost: 127.0.0.1:9090\r\n" + bearer(s.store->adminToken()) + "\r\n"));
        const Response head = c.read(3000, true).value_or(Response{});
        QCOMPARE(head.status, 200);
        QVERIFY(std::stoi(head.header("content-length")) > 100);
        QVERIFY(head.body.empty());
        QVERIFY(c.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:9090\r\n\r\n"));
        QCOMPARE(QString::fromStdString(c.read().value_or(Response{}).body), QStringLiteral("ok"));
        QCOMPARE(s.call("GET", "/api/v2/rules").status, 404);
        QCOMPARE(s.call("GET", "/api/v1/nothing").status, 404);
    }

    void fuzzedBodiesGetJsonAnswersAndNothingCrashes()
    {
        // Seeded and bounded: about 8 s or 5,000 requests here;
        // scripts/fuzz-admin sets FLOODGATE_FUZZ_SECONDS and _SEED for longer runs.
        const unsigned seed = unsigned(environmentNumber("FLOODGATE_FUZZ_SEED", 9));
        const int seconds = environmentNumber("FLOODGATE_FUZZ_SECONDS", 8);
        const int most = qEnvironmentVariableIsSet("FLOODGATE_FUZZ_SECONDS") ? INT_MAX : 5000;
        std::mt19937 rng(seed);
        Stack s(freshDb());
        const std::string token = bearer(s.store->adminToken());
        const std::vector<FuzzSeed> seeds = fuzzSeeds(s.call("GET", "/api/v1/rules").body);
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        int sent = 0, accepted = 0;
        while (sent < most && std::chrono::steady_clock::now() < end) {
            const FuzzSeed& f = seeds[rng() % seeds.size()];
            const bool named = f.target.find("/tiers/") != std::string::npos || f.target.find("/customers/") != std::string::npos
                || f.method == "DELETE";
            const std::string target = named && rng() % 4 == 0 ? fuzzPath(f.target, rng) : f.target;
            const std::string body = rng() % 10 == 0 ? f.body : mutate(f.body, rng);
            const auto r = fetch(s.admin->port(), withBody(f.method, target, body, token + f.headers), 5000);
            ++sent;
            const std::string what = "seed " + std::to_string(seed) + ", request " + std::to_string(sent) + ": " + f.method + " "
                + shown(target) + " " + shown(body);
            QVERIFY2(r.has_value(), ("no answer to " + what).c_str());
            QVERIFY2((r->status >= 200 && r->status < 300) || (r->status >= 400 && r->status < 500),
                     (std::to_string(r->status) + " " + r->body + " for " + what).c_str());
            accepted += r->status < 300;
            if (r->status == 204)
                continue;
            QVERIFY2(r->header("content-type") == "application/json", (r->header("content-type") + " for " + what).c_str());
            std::string why;
            const auto answer = Json::parse(r->body, &why);
            QVERIFY2(answer.has_value(), (why + " in the answer to " + what).c_str());
            if (r->status >= 400) {
                const Json* error = answer->find("error");
                QVERIFY2(error && error->isString() && !error->asString().empty(), (r->body + " for " + what).c_str());
            }
        }
        qInfo("%d fuzzed requests (seed %u), %d accepted", sent, seed, accepted);
        QVERIFY(sent >= 100);
        // Still serving, every read route answers valid JSON, and the engine decides.
        QCOMPARE(fetch(s.admin->port(), get("/healthz"), 1000).value_or(Response{}).status, 200);
        for (const char* read : {"/api/v1/rules", "/api/v1/tiers", "/api/v1/customers", "/api/v1/lists/blocklist",
                                 "/api/v1/lists/safelist", "/api/v1/audit", "/api/v1/clients"}) {
            const Response r = s.call("GET", read);
            QCOMPARE(r.status, 200);
            QVERIFY2(Json::parse(r.body).has_value(), read);
        }
        const int decided = s.request("127.0.0.49");
        QVERIFY2(decided == 200 || decided == 403 || decided == 429 || decided == 503, QByteArray::number(decided).constData());
    }

    void queryNumbersOutOfRangeAre400NamingTheParameter_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("error");
        const QString clients = QStringLiteral("limit must be a whole number from 0 to 1000");
        for (const char* v : {"-0", "-1", "+5", "1e400", "1e3", "99999999999999999999", "1.5", "5000", "", "0x10"})
            QTest::newRow(v) << QStringLiteral("/api/v1/clients?limit=") + QLatin1String(v) << clients;
        QTest::newRow("top too many") << QStringLiteral("/api/v1/buckets?top=101") << QStringLiteral("top must be a whole number from 0 to 100");
        QTest::newRow("since -0") << QStringLiteral("/api/v1/events?since=-0") << QStringLiteral("since must be a whole number >= 0");
        QTest::newRow("since beyond 64 bits") << QStringLiteral("/api/v1/events?since=99999999999999999999")
                                              << QStringLiteral("since must be a whole number >= 0");
        QTest::newRow("events limit") << QStringLiteral("/api/v1/audit?limit=10001") << QStringLiteral("limit must be a whole number from 0 to 10000");
    }
    void queryNumbersOutOfRangeAre400NamingTheParameter()
    {
        QFETCH(QString, target);
        QFETCH(QString, error);
        Stack s(freshDb());
        const Response r = s.call("GET", target.toStdString());
        QCOMPARE(r.status, 400);
        QCOMPARE(str(Json::parse(r.body).value_or(Json()).find("error")), error);
        QCOMPARE(s.call("GET", "/api/v1/clients?limit=1000").status, 200);  // the bound itself is fine
    }
};

QTEST_GUILESS_MAIN(TestAdminInput)
#include "test_admin_input.moc"
