// SPDX-License-Identifier: GPL-3.0-or-later
// Nodes counting together (docs/CLUSTER.md), as an operator runs them: a
// redis-server of the test's own and two or three `floodgate --headless`
// processes pointed at it, driven over real sockets. The bound of the
// error budget, a customer's quota spread over nodes, one window for
// clocks 2 s apart (libfaketime), Redis stopped and restarted under load,
// and the start-up errors with their exit codes.
#include <QtTest>

#include "ClusterNodes.h"
#include "cluster/Scripts.h"
#include "cluster/SyncProtocol.h"
#include "core/Cluster.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <memory>
#include <thread>
#include <vector>

using namespace FloodgateTest;

namespace {

const QString FAKETIME_LIB = QStringLiteral("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

// Sends `count` requests from `source` round-robin over `nodes`; returns how many were let through.
int roundRobin(const std::vector<Node*>& nodes, int count, const std::string& request, const char* source,
               std::vector<Response>* last = nullptr)
{
    int allowed = 0;
    for (int i = 0; i < count; ++i) {
        const Response r = call(nodes[std::size_t(i) % nodes.size()]->port(), request, source);
        allowed += r.status == 200;
        if (last && i >= count - int(nodes.size()))
            last->push_back(r);
    }
    return allowed;
}

// Polls `done` every 10 ms for up to `ms`; how long it took, or -1.
template <class Fn>
double waitFor(int ms, Fn done)
{
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(ms)) {
        if (done())
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1.0;
}

template <class Fn>
bool within(int ms, Fn done)
{
    return waitFor(ms, done) >= 0;
}

// The admin API's answer to GET `target` on `n` is 200 and contains `text`.
bool has(const Node& n, const std::string& target, const std::string& text)
{
    const Response r = call(n.admin(), get(target, bearer(n.token)));
    return r.status == 200 && r.body.find(text) != std::string::npos;
}

// Nodes a and b, with `rules` put on a and arrived on b (b's rules then
// contain `seen`); empty, or what went wrong.
QString startWithRules(TwoNodes& t, const std::string& rules, const std::string& seen)
{
    const QString failed = t.start();
    if (!failed.isEmpty())
        return failed;
    if (!putJson(*t.a, "/api/v1/rules", rules))
        return QStringLiteral("a refused the rules");
    if (!within(1000, [&] { return has(*t.b, "/api/v1/rules", seen); }))
        return QStringLiteral("the rules did not reach b within 1 s");
    return {};
}

} // namespace

class TestCluster : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aFloodSpreadOverTwoNodesGetsTheLimitOnce()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        RedisServer& redis = t.redis;
        Node* a = t.a;
        Node* b = t.b;
        QVERIFY2(a->child.startup.contains(QStringLiteral("cluster: joined")), qPrintable(a->child.startup));
        QVERIFY(b->child.startup.contains(QStringLiteral("2 nodes")) || b->child.startup.contains(QStringLiteral("1 node")));
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // both heartbeats: N = 2

        // The default per-address burst level: 6 per 3 s. Two nodes, E = 1:
        // the cluster admits at most 6 + 2.
        std::vector<Response> last;
        const int allowed = roundRobin({a, b}, 30, get("/"), "127.0.0.2", &last);
        int over = overdrafts({a, b});
        qInfo("admitted %d of 30 (limit 6, bound 8, %d overdrafts)", allowed, over);
        QVERIFY2(allowed >= 6 && allowed <= 8 + over, qPrintable(QString::number(allowed)));
        // Both nodes refuse, with a Retry-After from the shared window.
        QCOMPARE(last.size(), std::size_t(2));
        QCOMPARE(last[0].status, 429);
        QCOMPARE(last[1].status, 429);
        const int ra = std::stoi(last[0].header("retry-after"));
        const int rb = std::stoi(last[1].header("retry-after"));
        QVERIFY2(std::abs(ra - rb) <= 1 && ra >= 1 && ra <= 3, qPrintable(QStringLiteral("%1 %2").arg(ra).arg(rb)));
        // The same from 4 connections at once: requests beyond a node's
        // budget wait for Redis (Decision::waitForCluster) instead of passing.
        std::atomic<int> together{0};
        std::vector<std::thread> senders;
        for (int t = 0; t < 4; ++t)
            senders.emplace_back([&, t] { together += roundRobin({t % 2 ? a : b, t % 2 ? b : a}, 15, get("/"), "127.0.0.6"); });
        for (std::thread& s : senders)
            s.join();
        const int moreOver = overdrafts({a, b}) - over;
        qInfo("concurrently: admitted %d of 60 (limit 6, bound 8, %d overdrafts)", together.load(), moreOver);
        QVERIFY2(together >= 6 && together <= 8 + moreOver, qPrintable(QString::number(together.load())));

        // Another client is not affected.
        QCOMPARE(call(a->port(), get("/"), "127.0.0.3").status, 200);
        QCOMPARE(call(b->port(), get("/"), "127.0.0.3").status, 200);

        // What the operator sees: the cluster, and for the client both its
        // count on this node and the cluster's.
        const Response cl = call(a->admin(), get("/api/v1/cluster", bearer(a->token)));
        QCOMPARE(cl.status, 200);
        for (const char* part : {"\"enabled\":true", "\"node\":\"a\"", "\"counting_nodes\":2", "\"name\":\"b\"", "\"state\":\"up\"",
                                 "\"breaker\":\"closed\""})
            QVERIFY2(cl.body.find(part) != std::string::npos, cl.body.c_str());
        QVERIFY2(cl.body.find(std::to_string(redis.port())) != std::string::npos, cl.body.c_str());
        // Each node says where it really serves: --listen 127.0.0.1:0, and the
        // port its listener got in its heartbeat (not ":0").
        for (const Node* n : {a, b})
            QVERIFY2(cl.body.find("\"address\":\"http://127.0.0.1:" + std::to_string(n->port()) + "\"") != std::string::npos, cl.body.c_str());
        const Response client = call(a->admin(), get("/api/v1/clients/127.0.0.2", bearer(a->token)));
        QCOMPARE(client.status, 200);
        const auto burst = client.body.find("\"name\":\"ip-3s\"");
        QVERIFY2(burst != std::string::npos, client.body.c_str());
        const std::string level = client.body.substr(burst, client.body.find('}', burst) - burst);
        QVERIFY2(level.find("\"used_here\":") != std::string::npos, level.c_str());
        const Response metrics = call(a->admin(), get("/metrics"));
        for (const char* line : {"floodgate_cluster_nodes 2", "floodgate_cluster_breaker_open 0", "floodgate_cluster_redis_state{state=\"up\"} 1"})
            QVERIFY2(metrics.body.find(line) != std::string::npos, line);
    }

    // A client far below its limits gets its entry's own quiet lease from
    // the report script (Core::quietLeaseMs, fixed by a hash of the entry's
    // key, the same on every node), so clients first seen together do not
    // renew together; Redis keeps every entry longer than any such lease.
    void eachQuietClientGetsItsEntrysQuietLease()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // both heartbeats: N = 2
        // Under the default rules (6 per 3 s the lowest limit, E = 1) a new
        // client's first request is reported at once.
        constexpr int clients = 20;
        for (int c = 1; c <= clients; ++c)
            QCOMPARE(call(t.a->port(), get("/"), ("127.0.3." + std::to_string(c)).c_str()).status, 200);
        std::map<std::string, std::string> fields;
        QVERIFY(within(3000, [&] { return int((fields = entryFields(t.redis, "a")).size()) == clients; }));
        using namespace ::Floodgate::Core;
        std::set<Millis> lengths;
        for (const auto& [key, field] : fields) {
            // "fg:e:c:<a><b><extra>:<space>:<shape>", each word 16 hex digits
            TableKey k;
            char kind = 0;
            unsigned long long a = 0, b = 0, extra = 0;
            unsigned space = 0;
            QVERIFY2(std::sscanf(key.c_str(), "fg:e:%c:%16llx%16llx%16llx:%x:", &kind, &a, &b, &extra, &space) == 5, key.c_str());
            k.a = a;
            k.b = b;
            k.extra = extra;
            k.space = space;
            const long long written = std::atoll(field.c_str());
            const long long until = std::atoll(field.c_str() + field.find(';') + 1);
            const Millis quiet = quietLeaseMs(k);
            QVERIFY(quiet >= Tuning::clusterQuietReportMs && quiet < Tuning::clusterQuietReportMs + Tuning::clusterQuietSpreadMs);
            QVERIFY2(until - written == quiet, qPrintable(QStringLiteral("%1: %2, %3").arg(QString::fromStdString(key)).arg(until - written).arg(quiet)));
            lengths.insert(quiet);
            // Kept for the longest window (30 min) and its bucket, plus the
            // longest quiet lease: past every node's lease.
            const long long ttl = t.redis.command({"PTTL", key}).integer;
            QVERIFY2(ttl > until - written, qPrintable(QString::number(ttl)));
        }
        QVERIFY2(lengths.size() >= clients / 2, qPrintable(QString::number(lengths.size())));
    }

    // The report script, driven as two nodes drive it for a client far
    // below its limit that keeps renewing on both: each renewal tops the
    // node's lease up to its share of the room (limit / 2N here), it does
    // not add a share to what the node holds. Added up, the two leases
    // filled the room within four renewals and the client lost its quiet
    // lease (2 s instead of its own 10 to 20 s).
    void renewalsTopTheLeaseUpAndAQuietClientStaysQuiet()
    {
        RedisServer redis;
        QVERIFY2(redis.start(), qPrintable(redis.error()));
        using namespace ::Floodgate;
        std::string why;
        auto url = Cluster::RedisUrl::parse(redis.nodeUrl(), &why);
        QVERIFY2(url, why.c_str());
        Cluster::RedisConnection conn(*url, std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
        QVERIFY(conn.connect().ok());
        Cluster::Script script{std::string(Cluster::Scripts::report)};
        // One sliding level of 1,000 per minute; each node counted 1 request.
        Core::SyncReport r;
        r.entry = "c:test";
        r.quietLeaseMs = 15'000;
        r.levels = {Core::SharedLevel{Core::Algorithm::SlidingWindow, 1000, Core::MINUTE, 10 * Core::SECOND, 100, {0, 0, 0, 0, 0, 1}, 0}};
        std::map<std::string, std::uint32_t> lease;
        for (int round = 0; round < 8; ++round) {
            const std::string node = round % 2 ? "b" : "a";
            r.held = lease[node];  // nothing spent: it restates all of it
            std::vector<Cluster::Reply> replies;
            const auto o = conn.pipeline({Cluster::Command::eval(script, {"fg:e:" + r.entry},
                                                                 {node, "2", std::to_string(Core::Tuning::clusterLeaseMs),
                                                                  std::to_string(Core::Tuning::clusterQuietReportMs + Core::Tuning::clusterQuietSpreadMs),
                                                                  Cluster::encodeReport(r)})},
                                         replies);
            QVERIFY2(o.ok() && replies.size() == 1 && replies[0].elements.size() == 1, o.message.c_str());
            const auto ack = Cluster::decodeAck(replies[0].elements[0].text, r);
            QVERIFY(ack);
            lease[node] = r.held + ack->granted;
            qInfo("round %d, node %s: lease %u for %lld ms", round, node.c_str(), lease[node], static_cast<long long>(ack->leaseMs));
            QCOMPARE(ack->leaseMs, r.quietLeaseMs);
            QVERIFY2(lease[node] <= 1000 / 4, qPrintable(QString::number(lease[node])));
        }
    }

    void aProCustomerSpreadOverTwoNodesGetsOneQuota()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        Node* a = t.a;
        Node* b = t.b;
        // Told to a; b learns it from the cluster.
        const KeyedCustomer acme = keyedCustomer("acme", "Acme", "Pro");
        QVERIFY(putJson(*a, "/api/v1/customers/acme", acme.body));
        QVERIFY2(within(1000, [&] { return has(*b, "/api/v1/customers/acme", "\"Pro\""); }), "b does not know customer acme 1 s after a was told");
        // Pro: 100 per minute. Two nodes, E = max(1, 100 * 1% / 2) = 1: at most 102.
        const int allowed = roundRobin({a, b}, 240, get("/api/orders", acme.header), "127.0.0.4");
        const int over = overdrafts({a, b});
        qInfo("admitted %d of 240 (limit 100, bound 102, %d overdrafts)", allowed, over);
        QVERIFY2(allowed >= 100 && allowed <= 102 + over, qPrintable(QString::number(allowed)));
    }

    void clocksTwoSecondsApartShareOneWindow()
    {
        if (!QFile::exists(FAKETIME_LIB))
            QFAIL("libfaketime is not installed (scripts/setup installs faketime)");
        QProcessEnvironment ahead;
        ahead.insert(QStringLiteral("LD_PRELOAD"), FAKETIME_LIB);
        ahead.insert(QStringLiteral("FAKETIME"), QStringLiteral("+2s"));
        ahead.insert(QStringLiteral("FAKETIME_DONT_FAKE_MONOTONIC"), QStringLiteral("1"));
        TwoNodes t;
        const QString failed = t.start(ahead);
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        RedisServer& redis = t.redis;
        Node* a = t.a;
        Node* b = t.b;
        // A fixed window of 4 s: nodes 2 s apart on their own clocks would
        // count in different windows half of the time and admit up to twice the limit.
        const std::string rules = R"({"rules":[{"name":"ip","levels":[{"limit":20,"period":4,"algorithm":"fixed"}]}]})";
        QVERIFY(putJson(*a, "/api/v1/rules", rules));
        QVERIFY(putJson(*b, "/api/v1/rules", rules));
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        // Rounds that start 2.3 s into a window (Redis's clock): on its own
        // clock node b would already be 0.3 s into the next one, and the two
        // would each admit the limit. None may admit more than the limit plus
        // N * E (E = 1).
        int overBefore = overdrafts({a, b});
        for (int round = 0; round < 2; ++round) {
            const auto t = redis.command({"TIME"});
            QCOMPARE(t.elements.size(), std::size_t(2));
            const long long ms = std::stoll(t.elements[0].text) * 1000 + std::stoll(t.elements[1].text) / 1000;
            const long long toBoundary = 4000 - ms % 4000;
            std::this_thread::sleep_for(std::chrono::milliseconds(toBoundary + 2300));
            const std::string source = "127.0.1." + std::to_string(10 + round);
            const int allowed = roundRobin({a, b}, 60, get("/"), source.c_str());
            const int over = overdrafts({a, b}) - overBefore;
            overBefore += over;
            qInfo("round %d: admitted %d of 60 (limit 20, bound 22, %d overdrafts)", round, allowed, over);
            QVERIFY2(allowed >= 20 && allowed <= 22 + over, qPrintable(QStringLiteral("round %1: %2").arg(round).arg(allowed)));
        }
    }

    void aBlockOnOneNodeRefusesOnTheOtherWithinASecond()
    {
        RedisServer redis;
        QVERIFY2(redis.start(), qPrintable(redis.error()));
        Cluster c(redis);
        Node* a = c.start(QStringLiteral("a"));
        QVERIFY(a);
        QVERIFY2(a->child.startup.contains(QStringLiteral("seeded the cluster with")), qPrintable(a->child.startup));
        Node* b = c.start(QStringLiteral("b"));
        QVERIFY(b);
        QVERIFY2(b->child.startup.contains(QStringLiteral("took the cluster's state")), qPrintable(b->child.startup));
        QCOMPARE(call(b->port(), get("/"), "127.0.0.50").status, 200);

        // Blocked on a: b refuses it within a second.
        const Response blocked = call(a->admin(), withBody("POST", "/api/v1/lists/blocklist", R"({"address":"127.0.0.50","reason":"scraper"})", bearer(a->token)));
        QVERIFY2(blocked.status / 100 == 2, blocked.body.c_str());
        auto until = [&](Node* n, const char* source, int status) {
            return waitFor(1000, [&] { return call(n->port(), get("/"), source).status == status; });
        };
        const double toBlock = until(b, "127.0.0.50", 403);
        qInfo("blocked on b %.0f ms after the block on a", toBlock);
        QVERIFY2(toBlock >= 0, "node b did not refuse within 1 s");
        // It is in b's database too, audited as coming from the cluster.
        const Response onB = call(b->admin(), get("/api/v1/lists/blocklist", bearer(b->token)));
        QVERIFY2(onB.body.find("127.0.0.50") != std::string::npos && onB.body.find("scraper") != std::string::npos, onB.body.c_str());
        const Response audit = call(b->admin(), get("/api/v1/audit", bearer(b->token)));
        QVERIFY2(audit.body.find("cluster:a") != std::string::npos, audit.body.c_str());

        // A node started later gets it.
        Node* late = c.start(QStringLiteral("late"));
        QVERIFY(late);
        QCOMPARE(call(late->port(), get("/"), "127.0.0.50").status, 403);

        // Removed on b: a lets it through within a second.
        const Response removed = call(b->admin(), withBody("DELETE", "/api/v1/lists/blocklist/127.0.0.50", {}, bearer(b->token)));
        QVERIFY2(removed.status / 100 == 2, removed.body.c_str());
        const double toAllow = until(a, "127.0.0.50", 200);
        qInfo("let through on a %.0f ms after the removal on b", toAllow);
        QVERIFY2(toAllow >= 0, "node a still refused 1 s after the removal");

        // Redis restarted empty: the nodes seed it again from their own lists.
        QVERIFY(call(a->admin(), withBody("POST", "/api/v1/lists/safelist", R"({"address":"127.0.0.60"})", bearer(a->token))).status / 100 == 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        redis.kill();
        QVERIFY(redis.restart());
        bool seeded = false;
        for (int i = 0; i < 50 && !seeded; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const auto r = redis.command({"HEXISTS", "fg:s:safelist", "127.0.0.60/32"});
            seeded = r.kind == Floodgate::Cluster::Reply::Kind::Integer && r.integer == 1;
        }
        QVERIFY2(seeded, "the lists were not seeded again into the restarted Redis");
    }

    // Tiers, customers and rules changed on one node reach the others
    // within a second, are written into their databases (audited as from
    // the cluster) and apply there; a node started later takes them; and a
    // change another process writes into a node's file (the command line's
    // import) goes out too.
    void theConfigurationReachesEveryNode()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        Node* a = t.a;
        Node* b = t.b;

        QVERIFY(putJson(*a, "/api/v1/tiers/Gold", R"({"levels":[{"limit":5,"period":60}]})"));
        const KeyedCustomer zed = keyedCustomer("zed", "Zed", "Gold");
        QVERIFY(putJson(*a, "/api/v1/customers/zed", zed.body));
        QVERIFY(putJson(*a, "/api/v1/rules", R"({"settings":{"when_cluster_down":"open"}})"));
        const double toCustomer = waitFor(1000, [&] { return has(*b, "/api/v1/customers/zed", "\"Gold\""); });
        qInfo("customer on b %.0f ms after it was put on a", toCustomer);
        QVERIFY2(toCustomer >= 0, "b does not know customer zed 1 s after a was told");
        QVERIFY2(within(1000, [&] { return has(*b, "/api/v1/rules", "\"when_cluster_down\":\"open\""); }), "the rules did not reach b");
        QVERIFY2(has(*b, "/api/v1/audit", "cluster:a/api:"), "b's audit trail does not say the change came from a");

        // Live on b: Gold is 5 a minute, counted across the cluster.
        int allowed = 0;
        for (int i = 0; i < 8; ++i)
            allowed += call(b->port(), get("/api/orders", zed.header), "127.0.0.70").status == 200;
        QVERIFY2(allowed >= 5 && allowed <= 5 + 1 + overdrafts({a, b}), qPrintable(QString::number(allowed)));

        // Changed on b, removed on b: back on a.
        QVERIFY(putJson(*b, "/api/v1/tiers/Gold", R"({"levels":[{"limit":7,"period":60}]})"));
        QVERIFY2(within(1000, [&] { return has(*a, "/api/v1/tiers/Gold", "\"limit\":7"); }), "a did not take b's change to Gold");
        QCOMPARE(call(b->admin(), withBody("DELETE", "/api/v1/customers/zed", {}, bearer(b->token))).status, 204);
        QVERIFY2(within(1000, [&] { return call(a->admin(), get("/api/v1/customers/zed", bearer(a->token))).status == 404; }),
                 "the customer removed on b is still on a");

        // A node started later takes all of it, and says so.
        Node* late = t.cluster->start(QStringLiteral("late"));
        QVERIFY(late);
        QVERIFY2(late->child.startup.contains(QStringLiteral("took the cluster's state")), qPrintable(late->child.startup));
        QVERIFY2(late->child.startup.contains(QStringLiteral("tiers")), qPrintable(late->child.startup));
        QVERIFY(has(*late, "/api/v1/tiers/Gold", "\"limit\":7"));
        QVERIFY(has(*late, "/api/v1/rules", "\"when_cluster_down\":\"open\""));

        // Another process on a's file: a picks it up (within 2 s) and sends it on.
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("block.csv"));
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("list,address,reason,ttl\nblocklist,127.0.0.71,imported,1h\n");
        }
        QString err, out;
        QCOMPARE(runToEnd({QStringLiteral("lists"), QStringLiteral("import"), file, QStringLiteral("--db"), a->db}, &err, &out), 0);
        const double toImported = waitFor(4000, [&] { return call(b->port(), get("/"), "127.0.0.71").status == 403; });
        qInfo("refused on b %.0f ms after the import into a's database", toImported);
        QVERIFY2(toImported >= 0, "an import into a's database did not reach b");
        QVERIFY2(has(*b, "/api/v1/audit", "cluster:a/another process"), "b's audit trail does not name where the import came from");
    }

    // Escalation across the cluster (docs/CLUSTER.md, "automatic bans"):
    // a ban made on a holds on b within a second, with the same end, reason
    // and number; the client's next ban, made on b, is its second and twice
    // as long, and reaches a; an operator's removal on b lifts it on a; an
    // ended ban leaves Redis; a node started later continues the history.
    void anAutomaticBanHoldsOnEveryNodeAndEscalatesAcrossThem()
    {
        // 3 a second; 3 refusals within 10 s ban for 3 s, then 6 s.
        TwoNodes t;
        const QString failed = startWithRules(t,
                                              R"({"rules":[{"name":"ip","levels":[{"limit":3,"period":1,"algorithm":"fixed"}]}],)"
                                              R"("escalation":{"enabled":true,"refusals":3,"find":10,"ban":3,"max_ban":60,"factor":2}})",
                                              "\"max_ban\":60");
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        RedisServer& redis = t.redis;
        Node* a = t.a;
        Node* b = t.b;
        const char* client = "127.0.0.80";
        const std::string entry = "/api/v1/lists/blocklist";
        auto banOf = [&](Node* n) {
            const std::string body = call(n->admin(), get(entry, bearer(n->token))).body;
            const auto at = body.find("\"address\":\"127.0.0.80/32\"");
            return at == std::string::npos ? std::string() : body.substr(at, body.find('}', at) - at);
        };
        auto floodUntilBanned = [&](Node* n) {
            for (int i = 0; i < 40; ++i)
                if (call(n->port(), get("/"), client).status == 403)
                    return true;
            return false;
        };

        // Ban #1, made on a.
        QVERIFY2(floodUntilBanned(a), "a did not ban the client");
        const std::string onA = banOf(a);
        QVERIFY2(onA.find("ban #1") != std::string::npos && onA.find("\"source\":\"automatic\"") != std::string::npos, onA.c_str());
        const double toB = waitFor(1000, [&] { return !banOf(b).empty(); });
        qInfo("ban #1 on b %.0f ms after a made it", toB);
        QVERIFY2(toB >= 0, "b does not hold a's ban 1 s later");
        QCOMPARE(call(b->port(), get("/"), client).status, 403);
        const std::string onB = banOf(b);
        auto field = [](const std::string& e, const std::string& name) {
            const auto at = e.find("\"" + name + "\":");
            return at == std::string::npos ? std::string() : e.substr(at, e.find(',', at) - at);
        };
        for (const char* f : {"reason", "expires_at", "created_at", "source"})
            QVERIFY2(!field(onB, f).empty() && field(onB, f) == field(onA, f), qPrintable(QString::fromStdString(onA + "\n" + onB)));
        // (The engine holds the ban first; storage writes its audit row behind.)
        QVERIFY2(within(1000, [&] { return has(*b, "/api/v1/audit", "cluster:a/floodgate"); }),
                 "b's audit trail does not say the ban came from a");

        // Ended: gone from Redis within a heartbeat, and the client passes on
        // both (its limit's window long over).
        QVERIFY2(within(5000, [&] { return banOf(a).empty() && banOf(b).empty(); }), "the ban did not end");
        QVERIFY2(within(2000, [&] { return redis.command({"HLEN", "fg:s:bans"}).integer == 0; }), "the ended ban stayed in Redis");
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        QCOMPARE(call(b->port(), get("/"), client).status, 200);

        // Ban #2, made on b: twice as long, and on a within a second.
        QVERIFY2(floodUntilBanned(b), "b did not ban the client again");
        const std::string second = banOf(b);
        QVERIFY2(second.find("ban #2") != std::string::npos && second.find("6s") != std::string::npos, second.c_str());
        const double toA = waitFor(1000, [&] { return banOf(a).find("ban #2") != std::string::npos; });
        qInfo("ban #2 on a %.0f ms after b made it", toA);
        QVERIFY2(toA >= 0, "a does not hold b's ban 1 s later");
        QCOMPARE(call(a->port(), get("/"), client).status, 403);

        // Lifted by the operator on b: a lets the client through within a second.
        const Response removed = call(b->admin(), withBody("DELETE", entry + "/127.0.0.80", {}, bearer(b->token)));
        QVERIFY2(removed.status / 100 == 2, removed.body.c_str());
        const double lifted = waitFor(1000, [&] { return banOf(a).empty(); });
        qInfo("lifted on a %.0f ms after the removal on b", lifted);
        QVERIFY2(lifted >= 0, "a still holds the ban 1 s after b's operator removed it");
        QVERIFY(call(a->port(), get("/"), client).status != 403);
        // The cluster keeps the removal (a tombstone), so a node that joins
        // later does not take the ban.
        QVERIFY(redis.command({"HGET", "fg:s:bans", "127.0.0.80/32"}).text.find(";del;") != std::string::npos);
        QVERIFY2(within(1000, [&] { return has(*a, "/api/v1/audit", "cluster:b/api:"); }),
                 "a's audit trail does not say b's operator lifted it");

        // A node that joins now, with no ban running, takes the client's
        // history all the same: its ban is the third, 12 s.
        QCOMPARE(redis.command({"HEXISTS", "fg:s:history", "127.0.0.80/32"}).integer, 1LL);
        Node* late = t.cluster->start(QStringLiteral("late"));
        QVERIFY(late);
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the client's limit window long over
        QVERIFY2(floodUntilBanned(late), "the late node did not ban the client");
        const std::string third = banOf(late);
        QVERIFY2(third.find("ban #3") != std::string::npos && third.find("12s") != std::string::npos, third.c_str());
    }

    // A cooldown started on one node holds on the other (docs/CLUSTER.md,
    // "cooldowns"): told once it has reached Redis and the other node's
    // next read (a sync tick); a client racing both nodes within that time
    // gets at most one action per node; an ended cooldown leaves Redis.
    void aCooldownStartedOnOneNodeHoldsOnTheOther()
    {
        TwoNodes t;
        const QString failed = startWithRules(
            t, R"({"cooldowns":[{"name":"comments","method":"POST","path":"/comments","duration":3,"user_header":"X-User-Id"}]})",
            "\"duration\":3");
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        RedisServer& redis = t.redis;
        Node* a = t.a;
        Node* b = t.b;
        auto post = [](Node* n, const char* user, const char* source) {
            return call(n->port(), withBody("POST", "/comments", "hello", std::string("X-User-Id: ") + user + "\r\n"), source);
        };

        // One after the other: posted on a, refused on b (from another address).
        QCOMPARE(post(a, "u1", "127.0.0.90").status, 200);
        const double inRedis = waitFor(1000, [&] { return redis.command({"HLEN", "fg:s:cooldowns"}).integer == 1; });
        qInfo("the cooldown in Redis %.0f ms after the post on a", inRedis);
        QVERIFY2(inRedis >= 0, "the cooldown did not reach Redis");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // b's next read
        const Response onB = post(b, "u1", "127.0.0.91");
        QCOMPARE(onB.status, 429);
        QVERIFY2(onB.header("retry-after") == "3" || onB.header("retry-after") == "2", onB.header("retry-after").c_str());
        QCOMPARE(post(b, "u2", "127.0.0.91").status, 200);  // another user is not cooling down

        // Racing: the same action sent to both nodes at once. At most one
        // passes on each (the bound N = 2), then both refuse.
        std::atomic<int> admitted{0};
        std::thread ta([&] { admitted += post(a, "u3", "127.0.0.92").status == 200; });
        std::thread tb([&] { admitted += post(b, "u3", "127.0.0.93").status == 200; });
        ta.join();
        tb.join();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        int later = 0;
        for (int i = 0; i < 6; ++i)
            later += post(i % 2 ? a : b, "u3", "127.0.0.94").status == 200;
        qInfo("racing two nodes: %d admitted at once, %d of 6 later", admitted.load(), later);
        QVERIFY2(admitted >= 1 && admitted <= 2, qPrintable(QString::number(admitted.load())));
        QCOMPARE(later, 0);

        // Ended: Redis forgets them (once a heartbeat), and the user may post again.
        QVERIFY2(within(6000, [&] { return redis.command({"HLEN", "fg:s:cooldowns"}).integer == 0; }), "ended cooldowns stayed in Redis");
        QCOMPARE(redis.command({"ZCARD", "fg:x:cooldowns"}).integer, 0LL);
        QCOMPARE(post(b, "u1", "127.0.0.91").status, 200);
    }

    void wrongPasswordOrNotRedisStopsWithExitCode5()
    {
        RedisServer redis;
        QVERIFY2(redis.start({QStringLiteral("--requirepass"), QStringLiteral("s3cret-pw")}), qPrintable(redis.error()));
        QTemporaryDir dir;
        QString err;
        const QString url = QStringLiteral("redis://:wrong-pw@127.0.0.1:%1").arg(redis.port());
        const int code = runToEnd({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                                   QStringLiteral("--admin"), QStringLiteral("off"), QStringLiteral("--db"), dir.filePath(QStringLiteral("x.db")),
                                   QStringLiteral("--redis"), url, QStringLiteral("--cluster-key"), clusterKeyFile()},
                                  &err);
        QCOMPARE(code, 5);
        QVERIFY2(err.contains(QStringLiteral("authentication")), qPrintable(err));
        QVERIFY2(!err.contains(QStringLiteral("wrong-pw")), qPrintable(err));
        QCOMPARE(err.trimmed().count(QLatin1Char('\n')), 0);  // one line

        // An HTTP server where Redis should be (a floodgate listener).
        Child web;
        QVERIFY(web.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                           QStringLiteral("off"), QStringLiteral("--db"), dir.filePath(QStringLiteral("web.db")), QStringLiteral("--log"),
                           QStringLiteral("off")}));
        const int notRedis = runToEnd({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                                       QStringLiteral("--admin"), QStringLiteral("off"), QStringLiteral("--db"), dir.filePath(QStringLiteral("y.db")),
                                       QStringLiteral("--redis"), QStringLiteral("redis://127.0.0.1:%1").arg(web.port),
                                       QStringLiteral("--cluster-key"), clusterKeyFile()},
                                      &err);
        QCOMPARE(notRedis, 5);
        QVERIFY2(err.contains(QStringLiteral("not")) && err.contains(QStringLiteral("Redis"), Qt::CaseInsensitive), qPrintable(err));
        web.stop();
    }

    void unreachableAtStartThenJoinsWhenRedisAppears()
    {
        const std::uint16_t port = freeLoopbackPort();
        QTemporaryDir dir;
        Child n;
        QVERIFY(n.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                         QStringLiteral("off"), QStringLiteral("--db"), dir.filePath(QStringLiteral("n.db")), QStringLiteral("--log"),
                         QStringLiteral("off"), QStringLiteral("--redis"), QStringLiteral("redis://127.0.0.1:%1").arg(port),
                         QStringLiteral("--node-name"), QStringLiteral("late"), QStringLiteral("--cluster-key"), clusterKeyFile()}));
        QVERIFY2(n.startup.contains(QStringLiteral("cut off")), qPrintable(n.startup));
        // It serves meanwhile.
        QCOMPARE(call(n.port, get("/")).status, 200);
        // Redis appears on that port: the node joins (its heartbeat shows up).
        RedisServer redis;
        QVERIFY(redis.startOn(port));
        bool joined = false;
        for (int i = 0; i < 60 && !joined; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const auto r = redis.command({"HEXISTS", "fg:nodes", "late"});
            joined = r.kind == Floodgate::Cluster::Reply::Kind::Integer && r.integer == 1;
        }
        QVERIFY(joined);
        QCOMPARE(call(n.port, get("/")).status, 200);
        QCOMPARE(n.stop(), 0);
    }

    void redisStoppedAndRestartedUnderLoad()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        RedisServer& redis = t.redis;
        Node* a = t.a;
        Node* b = t.b;
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));

        // A steady load from many clients (each far below its limits) while
        // Redis is stopped for 5 s: every request is answered, and no
        // answer takes much longer than the ones before the stop.
        auto load = [&](int seconds, std::vector<double>& latencies, int& failures, int base) {
            const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
            for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
                const std::string source = "127.0.2." + std::to_string(1 + (base + i) % 200);
                const auto t0 = std::chrono::steady_clock::now();
                const Response r = call((i % 2 ? a : b)->port(), get("/"), source.c_str());
                latencies.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                failures += r.status != 200 && r.status != 429;
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        };
        auto p99 = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v.empty() ? 0.0 : v[std::min(v.size() - 1, v.size() * 99 / 100)];
        };
        std::vector<double> before, during;
        int failures = 0;
        load(2, before, failures, 0);
        redis.pause();
        load(5, during, failures, 1000);
        // Counted on node a while cut off: reported when Redis is back.
        for (int i = 0; i < 3; ++i)
            QCOMPARE(call(a->port(), get("/"), "127.0.0.77").status, 200);
        const Response stopped = call(a->admin(), get("/metrics"));
        redis.resume();
        QCOMPARE(failures, 0);
        QVERIFY2(stopped.body.find("floodgate_cluster_breaker_open 1") != std::string::npos, "the breaker did not open");
        bool closed = false;
        for (int i = 0; i < 40 && !closed; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const Response m = call(a->admin(), get("/metrics"));
            closed = m.body.find("floodgate_cluster_breaker_open 0") != std::string::npos
                && m.body.find("floodgate_cluster_breaker_opened_total 0") == std::string::npos;
        }
        QVERIFY2(closed, "the breaker did not close after SIGCONT");
        // Node b learns node a's counts for that client with its own next
        // report of it: one request from it on b, and b's view says 4.
        QCOMPARE(call(b->port(), get("/"), "127.0.0.77").status, 200);
        bool reconciled = false;
        for (int i = 0; i < 20 && !reconciled; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const Response c77 = call(b->admin(), get("/api/v1/clients/127.0.0.77", bearer(b->token)));
            reconciled = c77.body.find("\"used\":4") != std::string::npos;
        }
        QVERIFY2(reconciled, "node b does not see what node a counted while Redis was stopped");
        const double added = p99(during) - p99(before);
        qInfo("p99 before %.2f ms, while Redis is stopped %.2f ms (%zu and %zu requests)", p99(before), p99(during), before.size(),
              during.size());
        QVERIFY2(added <= 1.0, qPrintable(QString::number(added)));

        // The breaker opened and closes again; /metrics says so.
        // Killed and restarted empty: the nodes seed it again from memory.
        roundRobin({a, b}, 4, get("/"), "127.0.0.9");
        redis.kill();
        QCOMPARE(call(a->port(), get("/"), "127.0.0.10").status, 200);
        QVERIFY(redis.restart());
        bool seeded = false;
        for (int i = 0; i < 60 && !seeded; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const auto keys = redis.command({"KEYS", "fg:e:*"});
            seeded = keys.elements.size() >= 2;
        }
        QVERIFY2(seeded, "the nodes did not report their clients to the restarted Redis");
    }
};

QTEST_GUILESS_MAIN(TestCluster)
#include "test_cluster.moc"
