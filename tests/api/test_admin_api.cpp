// SPDX-License-Identifier: MIT
// The admin API in process over real sockets: a real SQLite file, the store's
// writer, the traffic listener and the admin listener on 127.0.0.1 port 0.
// Writes answer after COMMIT and the very next request is decided under
// them; bad input is 400 naming the field and changes nothing.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "api/AdminApi.h"
#include "http/AdminServer.h"
#include "wire/Json.h"
#include "TrafficStack.h"

#include <sqlite3.h>
#include <sys/resource.h>

#include <chrono>
#include <climits>
#include <clocale>
#include <random>
#include <memory>
#endif

using namespace Floodgate;
using namespace FloodgateTest;
using Wire::Json;

namespace {

// How a test wants its admin server.
struct Setup {
    bool beyondLoopback = false;
    Http::AdminOptions admin = [] {
        Http::AdminOptions o;
        o.port = 0;
        o.bodyLimitBytes = 64 * 1024;
        return o;
    }();
    int busyTimeoutMs = Storage::StoreOptions{}.busyTimeoutMs;
};

struct Stack : TrafficStack {
    explicit Stack(const QString& dbPath, Setup setup = {})
        : TrafficStack(dbPath.toStdString(), setup.busyTimeoutMs)
    {
        Api::ApiOptions ao;
        ao.beyondLoopback = setup.beyondLoopback;
        ao.token = store->adminToken();
        api = std::make_unique<Api::AdminApi>(*engine, *store, &log, &metrics, clock, ao);
        admin = std::make_unique<Http::AdminServer>(setup.admin, api->handlers());
        std::string why;
        if (!admin->start(&why))
            qFatal("admin: %s", why.c_str());
    }
    ~Stack() { admin->stop(); }

    // With the token, as every script sends it.
    Response call(const std::string& method, const std::string& target, const std::string& body = {}, const std::string& headers = {})
    {
        return callWithout(method, target, body, bearer(store->adminToken()) + headers);
    }
    // Exactly the headers given: no token unless they carry one.
    Response callWithout(const std::string& method, const std::string& target, const std::string& body = {}, const std::string& headers = {})
    {
        return fetch(admin->port(), withBody(method, target, body, headers)).value_or(Response{});
    }
    Json callJson(const std::string& method, const std::string& target, const std::string& body = {})
    {
        return Json::parse(call(method, target, body).body).value_or(Json());
    }
    std::unique_ptr<Api::AdminApi> api;
    std::unique_ptr<Http::AdminServer> admin;
};

// While `busy` waits for the answer to a request it sent, asks each of
// `paths` over and over on connections of their own; every one must be
// answered 200 within `withinMs`. The busy request's answer lands in *answer.
bool answeredMeanwhile(std::uint16_t port, Connection& busy, Response* answer, std::initializer_list<const char*> paths, int withinMs)
{
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < giveUp) {
        for (const char* path : paths) {
            const auto r = fetch(port, get(path), withinMs);
            if (!r || r->status != 200) {
                qWarning("%s was not answered within %d ms", path, withinMs);
                return false;
            }
        }
        if (busy.readable()) {
            *answer = busy.read().value_or(Response{});
            return true;
        }
    }
    qWarning("the busy request was not answered");
    return false;
}

// A few hundred connections at both ends in one process.
void allowOpenFiles(rlim_t wanted)
{
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < wanted) {
        r.rlim_cur = std::min(wanted, r.rlim_max);
        ::setrlimit(RLIMIT_NOFILE, &r);
    }
}

// `count` connections from `from` that begin a request and never finish it:
// half stop inside the header (slowloris), half inside the body (slow body).
std::vector<std::unique_ptr<Connection>> slowClients(std::uint16_t port, const char* from, int count)
{
    std::vector<std::unique_ptr<Connection>> out;
    for (int i = 0; i < count; ++i) {
        auto c = std::make_unique<Connection>();
        if (!c->open(port, "127.0.0.1", from))
            continue;
        c->send(i % 2 ? "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                      : "POST /api/v1/lists/safelist HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{\"addr");
        out.push_back(std::move(c));
    }
    return out;
}

// How many of them the server has not closed.
int stillOpen(std::vector<std::unique_ptr<Connection>>& clients)
{
    int open = 0;
    for (auto& c : clients)
        open += c->closedByPeer(1) ? 0 : 1;
    return open;
}

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

QString str(const Json* j)
{
    return j && j->isString() ? QString::fromStdString(j->asString()) : QStringLiteral("<missing>");
}

} // namespace

class TestAdminApi : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_n = 0;
    QString freshDb() { return m_dir.filePath(QStringLiteral("api%1.db").arg(++m_n)); }

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

    void aBodyOfManyKeysIsAnsweredAtOnceAndHealthMeanwhile()
    {
        // 80,000 keys in 0.9 MB: the parser's duplicate check was quadratic
        // (9.2 s) on the admin server's one thread, /healthz and /metrics
        // stalled meanwhile. Now it is linear and the keys of one object
        // are bounded, named in the 400.
        Setup setup;
        setup.admin.bodyLimitBytes = Http::AdminOptions{}.bodyLimitBytes;
        Stack s(freshDb(), setup);
        std::string body = "{";
        for (int i = 0; i < 80'000; ++i)
            body += (i ? ",\"key" : "\"key") + std::to_string(i) + "\":1";
        body += "}";
        QVERIFY(body.size() > 900'000);
        Connection big;
        QVERIFY(big.open(s.admin->port()));
        QVERIFY(big.send(withBody("PUT", "/api/v1/rules", body, bearer(s.store->adminToken()))));
        Response answer;
        QVERIFY(answeredMeanwhile(s.admin->port(), big, &answer, {"/healthz", "/metrics"}, 2000));
        QCOMPARE(answer.status, 400);
        QVERIFY2(str(Json::parse(answer.body).value_or(Json()).find("error"))
                     .startsWith(QStringLiteral("body: more than 1000 keys in one object (the limit) at offset ")),
                 answer.body.c_str());

        // A large body within the bounds is read and applied: 8,000 entries.
        std::string entries = "[";
        for (int i = 0; i < 8'000; ++i)
            entries += std::string(i ? "," : "") + "{\"list\":\"blocklist\",\"address\":\"10.1." + std::to_string(i / 256) + "."
                + std::to_string(i % 256) + "\",\"reason\":\"bulk\"}";
        entries += "]";
        const Response imported = s.call("POST", "/api/v1/lists/import", entries);
        QCOMPARE(imported.status, 200);
        QCOMPARE(QString::fromStdString(imported.body), QStringLiteral("{\"imported\":8000,\"replaced\":0}\n"));

        // Too deep, named too.
        const Response deep = s.call("PUT", "/api/v1/rules", std::string(100, '[') + std::string(100, ']'));
        QCOMPARE(deep.status, 400);
        QCOMPARE(str(Json::parse(deep.body).value_or(Json()).find("error")),
                 QStringLiteral("body: nested deeper than 64 levels (the limit) at offset 64"));
    }

    void healthAndMetricsAnswerWhileAWriteWaitsForTheDatabase()
    {
        // Another process holds the database's write lock: a write waits up
        // to the busy timeout. It used to wait on the admin server's one
        // thread, and /healthz and /metrics waited behind it.
        Stack s(freshDb(), Setup{.busyTimeoutMs = 1500});
        const std::string token = bearer(s.store->adminToken());
        sqlite3* holder = nullptr;
        QCOMPARE(sqlite3_open(s.store->path().c_str(), &holder), SQLITE_OK);
        QCOMPARE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);

        Connection post;
        QVERIFY(post.open(s.admin->port()));
        QVERIFY(post.send(withBody("POST", "/api/v1/lists/blocklist", "{\"address\":\"127.0.0.70\"}", token)));
        Response answer;
        QVERIFY(answeredMeanwhile(s.admin->port(), post, &answer, {"/healthz", "/metrics"}, 1000));
        // The lock outlasted the busy timeout: 503, and nothing half done.
        QCOMPARE(answer.status, 503);
        QVERIFY2(str(Json::parse(answer.body).value_or(Json()).find("error")).startsWith(QStringLiteral("not saved: ")), answer.body.c_str());
        QCOMPARE(s.request("127.0.0.70"), 200);
        // Reading does not wait for the writer's lock meanwhile.
        QCOMPARE(s.callJson("GET", "/api/v1/lists/blocklist").find("count")->asInteger(), std::int64_t(0));

        // Released within the busy timeout: the write goes through.
        QVERIFY(post.send(withBody("POST", "/api/v1/lists/blocklist", "{\"address\":\"127.0.0.70\"}", token)));
        for (int i = 0; i < 3; ++i)
            QCOMPARE(fetch(s.admin->port(), get("/healthz"), 1000).value_or(Response{}).status, 200);
        QCOMPARE(sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(holder);
        const Response created = post.read(5000).value_or(Response{});
        QCOMPARE(created.status, 201);
        QCOMPARE(s.request("127.0.0.70"), 403);
        QCOMPARE(s.callJson("GET", "/api/v1/lists/blocklist").find("count")->asInteger(), std::int64_t(1));
    }

    void slowClientsCannotLockTheAdminPortOut()
    {
        // Slowloris and slow bodies: before, 256 of them took every slot of
        // the admin port and /healthz, /metrics and the API failed until
        // they timed out (30 s), again and again while the attacker
        // reconnected.
        allowOpenFiles(4096);
        Stack s(freshDb());
        const std::uint16_t port = s.admin->port();
        // One client holding many: the per-client cap closes its oldest.
        auto one = slowClients(port, "127.0.0.5", 300);
        QCOMPARE(int(one.size()), 300);
        QCOMPARE(fetch(port, get("/healthz"), 1000).value_or(Response{}).status, 200);
        QCOMPARE(fetch(port, get("/metrics"), 1000).value_or(Response{}).status, 200);
        QCOMPARE(fetch(port, get("/api/v1/rules", bearer(s.store->adminToken())), 1000).value_or(Response{}).status, 200);
        // Its own next request is served too: it takes the place of its oldest slow one.
        QCOMPARE(fetch(port, get("/healthz"), 1000, "127.0.0.5").value_or(Response{}).status, 200);
        QVERIFY(stillOpen(one) <= int(Core::Tuning::adminMaxConnectionsPerClient));

        // Many clients, ten each, past the total cap: the client holding the
        // most gives way, everyone else is answered.
        std::vector<std::unique_ptr<Connection>> many;
        std::vector<std::string> sources;
        for (int i = 1; i <= 30; ++i)
            sources.push_back("127.0.1." + std::to_string(i));
        for (const std::string& from : sources)
            for (auto& c : slowClients(port, from.c_str(), 10))
                many.push_back(std::move(c));
        QCOMPARE(int(many.size()), 300);
        for (int i = 0; i < 5; ++i) {
            QCOMPARE(fetch(port, get("/healthz"), 1000).value_or(Response{}).status, 200);
            QCOMPARE(fetch(port, get("/metrics"), 1000, "127.0.0.9").value_or(Response{}).status, 200);
        }
        QVERIFY(stillOpen(many) + stillOpen(one) <= int(Core::Tuning::adminMaxConnections));
    }

    void slowHeadersAndBodiesAreClosedAtTheirDeadline()
    {
        Setup setup;
        setup.admin.headerTimeoutMs = 400;
        setup.admin.bodyTimeoutMs = 400;
        setup.admin.idleTimeoutMs = 400;
        Stack s(freshDb(), setup);
        const std::uint16_t port = s.admin->port();
        Connection header, body, idle, keptAlive;
        QVERIFY(header.open(port));
        QVERIFY(body.open(port));
        QVERIFY(idle.open(port));
        QVERIFY(body.send("POST /api/v1/lists/safelist HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"));
        // A header trickled a byte at a time is closed at its deadline,
        // counted from its first byte: the trickle does not extend it.
        const std::string slow = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa";
        std::size_t sent = 0;
        const auto start = std::chrono::steady_clock::now();
        while (sent < slow.size() && header.send(slow.substr(sent, 1)) && !header.closedByPeer(50))
            ++sent;
        const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        QVERIFY2(sent < slow.size(), "the slow header was never closed");
        QVERIFY2(lasted >= 350 && lasted < 3000, QByteArray::number(qint64(lasted)).constData());
        QVERIFY(body.closedByPeer(3000));  // the body stopped coming
        QVERIFY(idle.closedByPeer(3000));  // never said anything
        // A kept-alive connection is answered, then closed once idle.
        QVERIFY(keptAlive.open(port));
        QVERIFY(keptAlive.send(get("/healthz")));
        QCOMPARE(keptAlive.read().value_or(Response{}).status, 200);
        QVERIFY(keptAlive.closedByPeer(3000));
        // Everyone else is served as before.
        QCOMPARE(fetch(port, get("/healthz"), 1000).value_or(Response{}).status, 200);
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

QTEST_GUILESS_MAIN(TestAdminApi)
#include "test_admin_api.moc"
