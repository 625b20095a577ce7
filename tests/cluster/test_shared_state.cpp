// SPDX-License-Identifier: GPL-3.0-or-later
// What the nodes share (docs/CLUSTER.md, "Lists, tiers, customers and
// rules"), attacked through Redis: a redis-server of the test's own and
// `floodgate --headless` nodes on it, driven over real sockets. A Redis
// that lost its data (FLUSHALL, a restart without its data) is filled
// again from the nodes and takes nothing from them; a field in an entry's
// hash that no node wrote costs that entry alone; a change that no node of
// this cluster wrote (no valid tag of the cluster key), or whose key and
// value disagree, is refused, counted and named.
#include <QtTest>

#include "ClusterNodes.h"
#include "cluster/ClusterKey.h"
#include "cluster/SharedRecord.h"
#include "cluster/SyncProtocol.h"

#include <chrono>
#include <regex>
#include <set>
#include <thread>

using namespace FloodgateTest;

namespace {

template <class Fn>
bool within(int ms, Fn done)
{
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(ms)) {
        if (done())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

std::string body(const Node& n, const std::string& target)
{
    return call(n.admin(), get(target, bearer(n.token))).body;
}

// The ranges on a node's list, from its admin API.
std::set<std::string> ranges(const Node& n, const char* list)
{
    std::set<std::string> out;
    const std::string b = body(n, std::string("/api/v1/lists/") + list);
    static const std::regex address(R"re("address":"([^"]+)")re");
    for (auto it = std::sregex_iterator(b.begin(), b.end(), address); it != std::sregex_iterator(); ++it)
        out.insert((*it)[1].str());
    return out;
}

std::set<std::string> names(const Node& n, const char* what, const char* field)
{
    std::set<std::string> out;
    const std::string b = body(n, std::string("/api/v1/") + what);
    // An item's first field; not a customer's key's (its next field is its sha256).
    const std::regex name(std::string("\\{\"") + field + R"re(":"([^"]+)",(?!"sha256"))re");
    for (auto it = std::sregex_iterator(b.begin(), b.end(), name); it != std::sregex_iterator(); ++it)
        out.insert((*it)[1].str());
    return out;
}

std::int64_t hlen(RedisServer& redis, const std::string& key)
{
    return redis.command({"HLEN", key}).integer;
}

// A number in /api/v1/cluster's "sync" object.
std::int64_t syncFigure(const Node& n, const std::string& name)
{
    const std::string b = body(n, "/api/v1/cluster");
    const auto at = b.find("\"" + name + "\":");
    return at == std::string::npos ? -1 : std::atoll(b.c_str() + at + name.size() + 3);
}

bool post(const Node& n, const char* list, const std::string& address)
{
    const Response r = call(n.admin(), withBody("POST", std::string("/api/v1/lists/") + list, R"({"address":")" + address + R"(","reason":"test"})",
                                                bearer(n.token)));
    return r.status / 100 == 2;
}

// Everything an operator keeps, on two nodes: tiers (the three defaults and
// Gold), customers, rules, 1,000 blocklist entries and 20 safelist entries.
QString populate(TwoNodes& t)
{
    if (!putJson(*t.a, "/api/v1/tiers/Gold", R"({"levels":[{"limit":50,"period":60}]})"))
        return QStringLiteral("a refused the tier");
    if (!within(2000, [&] { return names(*t.b, "tiers", "name").count("Gold") == 1; }))
        return QStringLiteral("the tier did not reach b");
    if (!putJson(*t.b, "/api/v1/customers/zed", R"({"name":"Zed","tier":"Gold"})") || !putJson(*t.a, "/api/v1/customers/acme", R"({"name":"Acme","tier":"Pro"})")
        || !putJson(*t.a, "/api/v1/rules", R"({"settings":{"when_cluster_down":"open"}})"))
        return QStringLiteral("a write was refused");
    std::string csv = "list,address,reason,ttl\n";
    for (int i = 0; i < 1000; ++i)
        csv += "blocklist,198.18." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ",scraper,30d\n";
    const Response imported = call(t.a->admin(), withBody("POST", "/api/v1/lists/import?format=csv", csv, bearer(t.a->token) + "Content-Type: text/csv\r\n"));
    if (imported.status / 100 != 2)
        return QStringLiteral("the import was refused: %1 %2").arg(imported.status).arg(QString::fromStdString(imported.body));
    for (int i = 0; i < 20; ++i)
        if (!post(*t.b, "safelist", "198.19.0." + std::to_string(i)))
            return QStringLiteral("a safelist entry was refused");
    if (!within(10000, [&] { return ranges(*t.b, "blocklist").size() == 1000 && ranges(*t.a, "safelist").size() == 20; }))
        return QStringLiteral("the lists did not reach the other node: b has %1 blocklist entries, a %2 safelist entries")
            .arg(ranges(*t.b, "blocklist").size())
            .arg(ranges(*t.a, "safelist").size());
    if (!within(3000, [&] { return names(*t.a, "customers", "id").count("zed") && names(*t.b, "tiers", "name").count("Gold"); }))
        return QStringLiteral("the tiers and customers did not reach the other node");
    return {};
}

// Both nodes hold all of it, the same, and so does Redis: nothing lost.
void expectEverything(TwoNodes& t, std::size_t blocked, std::size_t safe)
{
    for (Node* n : {t.a, t.b}) {
        const QString who = n == t.a ? QStringLiteral("a") : QStringLiteral("b");
        QVERIFY2(within(8000, [&] { return ranges(*n, "blocklist").size() == blocked; }),
                 qPrintable(QStringLiteral("%1 holds %2 blocklist entries, expected %3").arg(who).arg(ranges(*n, "blocklist").size()).arg(blocked)));
        QCOMPARE(ranges(*n, "safelist").size(), safe);
        QCOMPARE(names(*n, "tiers", "name"), (std::set<std::string>{"Enterprise", "Free", "Gold", "Pro"}));
        QCOMPARE(names(*n, "customers", "id"), (std::set<std::string>{"acme", "zed"}));
        QVERIFY2(body(*n, "/api/v1/rules").find("\"when_cluster_down\":\"open\"") != std::string::npos, qPrintable(who));
        const std::string audit = body(*n, "/api/v1/audit?limit=5000");
        QVERIFY2(audit.find("tier.delete") == std::string::npos, qPrintable(who + QStringLiteral(": a tier was deleted")));
        QVERIFY2(audit.find("customer.delete") == std::string::npos, qPrintable(who + QStringLiteral(": a customer was deleted")));
        QVERIFY2(audit.find("list.remove") == std::string::npos, qPrintable(who + QStringLiteral(": a list entry was removed")));
    }
    QCOMPARE(ranges(*t.a, "blocklist"), ranges(*t.b, "blocklist"));
    QCOMPARE(ranges(*t.a, "safelist"), ranges(*t.b, "safelist"));
    QVERIFY2(within(5000, [&] { return hlen(t.redis, "fg:s:blocklist") == std::int64_t(blocked); }),
             qPrintable(QStringLiteral("Redis holds %1 blocklist entries").arg(hlen(t.redis, "fg:s:blocklist"))));
    QCOMPARE(hlen(t.redis, "fg:s:safelist"), std::int64_t(safe));
    QCOMPARE(hlen(t.redis, "fg:s:tiers"), std::int64_t(4));
    QCOMPARE(hlen(t.redis, "fg:s:customers"), std::int64_t(2));
}

} // namespace

class TestSharedState : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Issue 27.1: FLUSHALL, then one shared change and a reconnect, then
    // Redis stopped, a block made meanwhile and Redis back empty: every
    // node keeps everything, Redis is filled again from both, and they end
    // equal.
    void aRedisThatLostItsDataTakesNothingFromTheNodes()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        const QString populated = populate(t);
        QVERIFY2(populated.isEmpty(), qPrintable(populated));
        expectEverything(t, 1000, 20);

        // FLUSHALL, one block on a, then every client connection cut.
        QCOMPARE(t.redis.command({"FLUSHALL"}).text, std::string("OK"));
        QVERIFY(post(*t.a, "blocklist", "127.0.200.1"));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        t.redis.command({"CLIENT", "KILL", "TYPE", "normal"});
        expectEverything(t, 1001, 20);

        // Redis stopped, a block made on b meanwhile, Redis back empty.
        t.redis.kill();
        QVERIFY(post(*t.b, "blocklist", "127.0.200.2"));
        QVERIFY(t.redis.restart());
        expectEverything(t, 1002, 20);
        QCOMPARE(call(t.a->port(), get("/"), "127.0.200.2").status, 403);
        QCOMPARE(call(t.b->port(), get("/"), "127.0.200.1").status, 403);
        // Each outage is in the journal (the connections killed, then Redis
        // stopped): one line when the breaker opened, with the mode in
        // force, and one when Redis answered again; not one per probe.
        t.b->child.proc.waitForReadyRead(100);
        const QString err = QString::fromUtf8(t.b->child.proc.readAllStandardError());
        // (The killed connections may be noticed as one outage or two,
        // whatever the probes in between.)
        const int opened = err.count(QStringLiteral("deciding on this node alone until Redis answers (when_cluster_down = open"));
        const int closed = err.count(QStringLiteral("answers again: counting with the cluster"));
        QVERIFY2(opened >= 1 && opened <= 2 && closed == opened, qPrintable(err));
    }

    // A removal travels as a tombstone: a node cut off while it was made
    // removes the entry when it comes back, even from a Redis that was
    // emptied and filled again meanwhile by the other node.
    void aRemovalIsATombstoneNotAnAbsence()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        QVERIFY(post(*t.a, "blocklist", "198.18.5.5"));
        QVERIFY(within(2000, [&] { return ranges(*t.b, "blocklist").count("198.18.5.5/32") == 1; }));
        QCOMPARE(call(t.a->admin(), withBody("DELETE", "/api/v1/lists/blocklist/198.18.5.5", {}, bearer(t.a->token))).status, 204);
        QVERIFY(within(2000, [&] { return ranges(*t.b, "blocklist").empty(); }));
        // Redis keeps the removal, with who made it and when.
        const auto tomb = t.redis.command({"HGET", "fg:s:blocklist", "198.18.5.5/32"});
        QVERIFY2(tomb.text.find(";1:a;del;") != std::string::npos, tomb.text.c_str());
    }

    // Issue 27.2: a field no node wrote, in one client's entry, costs that
    // entry one report: the breaker stays closed, the field goes, and the
    // node names it.
    void aMalformedFieldIsThatEntrysProblemOnly()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        // One client counted on both nodes, so its entry has a hash.
        for (int i = 0; i < 3; ++i) {
            call(t.a->port(), get("/"), "127.0.0.40");
            call(t.b->port(), get("/"), "127.0.0.40");
        }
        std::vector<std::string> entries;
        QVERIFY(within(3000, [&] {
            entries.clear();
            for (const auto& k : t.redis.command({"KEYS", "fg:e:*"}).elements)
                entries.push_back(k.text);
            return !entries.empty();
        }));
        for (const std::string& e : entries)
            t.redis.command({"HSET", e, "junk", "garbage;x;1,2"});
        const std::int64_t openedBefore = syncFigure(*t.a, "breaker_opened");
        const std::int64_t errorsBefore = syncFigure(*t.a, "errors");

        // Requests from that client and an untouched one keep both reporting.
        int untouched = 0;
        for (int i = 0; i < 6; ++i) {
            call(t.a->port(), get("/"), "127.0.0.40");
            untouched += call(t.a->port(), get("/"), "127.0.0.41").status == 200;
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
        }
        // The default burst level is 6 per 3 s: a client untouched by the
        // field gets all of it (cut off, when_cluster_down would give half).
        QCOMPARE(untouched, 6);
        QVERIFY2(within(3000, [&] { return syncFigure(*t.a, "malformed_fields") >= 1 || syncFigure(*t.b, "malformed_fields") >= 1; }),
                 body(*t.a, "/api/v1/cluster").c_str());
        QCOMPARE(syncFigure(*t.a, "breaker_opened"), openedBefore);
        QCOMPARE(syncFigure(*t.a, "errors"), errorsBefore);
        for (const std::string& e : entries)
            QCOMPARE(t.redis.command({"HEXISTS", e, "junk"}).integer, 0LL);
        const std::string cluster = body(*t.a, "/api/v1/cluster") + body(*t.b, "/api/v1/cluster");
        QVERIFY2(cluster.find("removed the field \\\"junk\\\" from fg:e:") != std::string::npos, cluster.c_str());
        const std::string metrics = body(*t.a, "/metrics") + body(*t.b, "/metrics");
        QVERIFY2(metrics.find("floodgate_cluster_malformed_fields_total 1") != std::string::npos, metrics.c_str());
        t.a->child.proc.waitForReadyRead(100);
        t.b->child.proc.waitForReadyRead(100);
        const QString err = QString::fromUtf8(t.a->child.proc.readAllStandardError() + t.b->child.proc.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("removed the field \"junk\" from fg:e:")), qPrintable(err));
    }

    // Issue 27.3: whoever can write to Redis cannot change the shared
    // state: a change added to the stream by hand (no tag, a forged tag, a
    // tag moved to another key), a record put in a collection's hash by
    // hand, and a record tagged with the cluster key whose value names
    // another range than its key: none is applied, each is counted and named.
    void whoeverWritesToRedisCannotChangeTheLists()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        QVERIFY(post(*t.a, "blocklist", "127.0.113.60"));
        QVERIFY(within(2000, [&] { return ranges(*t.b, "blocklist").count("127.0.113.60/32") == 1; }));

        Floodgate::Core::ListEntry world;
        world.range = *Floodgate::Core::Cidr::parse("0.0.0.0/0");
        world.reason = "evil";
        world.createdAt = 1;
        const std::string entry = Floodgate::Cluster::encodeEntry(world);
        const std::string now = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
        // 1. The old form, no tag at all.
        t.redis.command({"XADD", "fg:changes", "*", "node", "mallory", "op", "put", "coll", "safelist", "key", "0.0.0.0/0", "value", entry, "actor", "evil"});
        // 2. A forged tag.
        t.redis.command({"XADD", "fg:changes", "*", "coll", "safelist", "key", "0.0.0.0/0", "rec",
                         now + ";7:mallory;put;4:evil;00112233445566778899aabbccddeeff;" + entry});
        // 3. a's real record of 127.0.113.60, moved to another key.
        const std::string real = t.redis.command({"HGET", "fg:s:blocklist", "127.0.113.60/32"}).text;
        QVERIFY(!real.empty());
        t.redis.command({"XADD", "fg:changes", "*", "coll", "safelist", "key", "127.0.113.60/32", "rec", real});
        // 4. A record tagged with the cluster key whose value is another range.
        std::string why;
        const auto key = Floodgate::Cluster::ClusterKey::load(clusterKeyFile().toStdString(), &why);
        QVERIFY2(key, why.c_str());
        Floodgate::Cluster::SharedChange mismatch = Floodgate::Cluster::SharedChange::put("safelist", "203.0.113.50/32", entry, "evil");
        mismatch.stamp = {std::stoll(now), "mallory"};
        t.redis.command({"XADD", "fg:changes", "*", "coll", "safelist", "key", "203.0.113.50/32", "rec", Floodgate::Cluster::encodeRecord(mismatch, *key)});
        QVERIFY2(within(3000, [&] { return syncFigure(*t.a, "refused_changes") >= 4 && syncFigure(*t.b, "refused_changes") >= 4; }),
                 (body(*t.a, "/api/v1/cluster") + body(*t.b, "/api/v1/cluster")).c_str());
        // 5. A forged record in the hash a joining node reads.
        t.redis.command({"HSET", "fg:s:safelist", "0.0.0.0/0", now + ";7:mallory;put;4:evil;00112233445566778899aabbccddeeff;" + entry});
        t.redis.command({"CLIENT", "KILL", "TYPE", "normal"});  // both nodes level with the hash again

        QVERIFY2(within(3000, [&] { return syncFigure(*t.a, "refused_changes") >= 5 && syncFigure(*t.b, "refused_changes") >= 5; }),
                 (body(*t.a, "/api/v1/cluster") + body(*t.b, "/api/v1/cluster")).c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (Node* n : {t.a, t.b}) {
            QVERIFY2(ranges(*n, "safelist").empty(), body(*n, "/api/v1/lists/safelist").c_str());
            QCOMPARE(call(n->port(), get("/"), "127.0.113.60").status, 403);
            QVERIFY(body(*n, "/api/v1/audit").find("mallory") == std::string::npos);
        }
        // The forged record in the hash is replaced by nobody's (no node
        // holds 0.0.0.0/0), and stays refused; a's real record is intact.
        QCOMPARE(t.redis.command({"HGET", "fg:s:blocklist", "127.0.113.60/32"}).text, real);
        t.a->child.proc.waitForReadyRead(100);
        const QString err = QString::fromUtf8(t.a->child.proc.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("a change from the cluster (safelist 0.0.0.0/0")) && err.contains(QStringLiteral("tag does not verify")),
                 qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("its entry is for 0.0.0.0/0, not for its key")), qPrintable(err));
        QVERIFY2(body(*t.a, "/metrics").find("floodgate_cluster_refused_changes_total") != std::string::npos, "");
    }

    // A node with another cluster key is refused at the start (exit 5), with
    // both keys named by their fingerprints: it would take every record for
    // a forgery, and the others would refuse its changes.
    void aNodeWithAnotherKeyIsRefused()
    {
        TwoNodes t;
        const QString failed = t.start();
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        QVERIFY2(t.a->child.startup.contains(QStringLiteral("cluster key ")), qPrintable(t.a->child.startup));
        QTemporaryDir dir;
        const QString other = dir.filePath(QStringLiteral("other.key"));
        QString err, out;
        QCOMPARE(runToEnd({QStringLiteral("cluster-key"), other}, &err, &out), 0);
        QVERIFY2(out.contains(QStringLiteral("wrote a new cluster key to ")), qPrintable(out));
        QCOMPARE(QFile::permissions(other) & (QFile::ReadGroup | QFile::ReadOther | QFile::WriteGroup | QFile::WriteOther), QFile::Permissions());
        // Never over an existing key.
        QCOMPARE(runToEnd({QStringLiteral("cluster-key"), other}, &err), 1);
        QVERIFY2(err.contains(QStringLiteral("exists already")), qPrintable(err));
        const int code = runToEnd({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                                   QStringLiteral("off"), QStringLiteral("--db"), dir.filePath(QStringLiteral("c.db")), QStringLiteral("--log"),
                                   QStringLiteral("off"), QStringLiteral("--redis"), QString::fromStdString(t.redis.nodeUrl()),
                                   QStringLiteral("--node-name"), QStringLiteral("c"), QStringLiteral("--cluster-key"), other},
                                  &err);
        QCOMPARE(code, 5);
        QVERIFY2(err.contains(QStringLiteral("is not the one the cluster's nodes hold")), qPrintable(err));
        QCOMPARE(err.trimmed().count(QLatin1Char('\n')), 0);
        // --redis without a key is refused before anything starts.
        QCOMPARE(runToEnd({QStringLiteral("--headless"), QStringLiteral("--db"), dir.filePath(QStringLiteral("d.db")), QStringLiteral("--redis"),
                           QString::fromStdString(t.redis.nodeUrl())},
                          &err),
                 2);
        QVERIFY2(err.contains(QStringLiteral("--redis needs --cluster-key FILE")), qPrintable(err));
        // A Redis without a password beyond this machine is worth a warning
        // (anyone who reaches it can disturb the counts), at the start and
        // in --check-config; with a password, or on this machine, it is not.
        const QString key = clusterKeyFile();
        auto checked = [&](const QString& url) {
            QString warned;
            const int rc = runToEnd({QStringLiteral("--check-config"), QStringLiteral("--config"), QStringLiteral("off"), QStringLiteral("--redis"), url,
                                     QStringLiteral("--cluster-key"), key},
                                    &warned);
            return rc == 0 ? warned : QStringLiteral("exit %1").arg(rc);
        };
        QVERIFY2(checked(QStringLiteral("redis://203.0.113.5:6379")).contains(QStringLiteral("has no password and is not on this machine")),
                 qPrintable(checked(QStringLiteral("redis://203.0.113.5:6379"))));
        QCOMPARE(checked(QStringLiteral("redis://:pw@203.0.113.5:6379")), QString());
        QCOMPARE(checked(QStringLiteral("redis://127.0.0.1:6379")), QString());
        QCOMPARE(checked(QStringLiteral("unix:///run/redis.sock")), QString());
        // The nodes' state is untouched.
        QCOMPARE(t.redis.command({"GET", "fg:key"}).text.substr(0, 8), t.a->child.startup.section(QStringLiteral("cluster key "), 1).left(8).toStdString());
    }
};

QTEST_GUILESS_MAIN(TestSharedState)
#include "test_shared_state.moc"
