// SPDX-License-Identifier: GPL-3.0-or-later
// Floodgate cluster nodes as an operator runs them (docs/CLUSTER.md), for
// the cluster suites: `floodgate --headless` processes on one RedisServer,
// each with its own database, traffic and admin ports on 127.0.0.1 and its
// admin token, stopped with the test. Plus the requests the suites make of
// them: one request, and the overdrafts the nodes report.
#pragma once

#include "ChildProcess.h"
#include "HttpTestClient.h"
#include "RedisServer.h"
#include "core/CustomerKey.h"

#include <QTemporaryDir>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace FloodgateTest {

struct Node {
    Child child;
    QString db;
    std::string token;
    std::uint16_t port() const { return child.port; }
    std::uint16_t admin() const { return child.adminPort; }
};

class Cluster {
public:
    explicit Cluster(RedisServer& redis) : m_redis(redis) {}
    ~Cluster()
    {
        for (auto& n : m_nodes)
            n->child.stop();
    }
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    // A node on this Redis; `extra` adds to the environment (libfaketime),
    // `more` to the command line (--upstream, --trusted-proxy).
    Node* start(const QString& name, const QProcessEnvironment& extra = {}, const QStringList& more = {})
    {
        auto n = std::make_unique<Node>();
        n->db = m_dir.filePath(name + QStringLiteral(".db"));
        QProcessEnvironment env = childEnvironment();
        for (const QString& k : extra.keys())
            env.insert(k, extra.value(k));
        QStringList args{QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                         QStringLiteral("127.0.0.1:0"), QStringLiteral("--db"), n->db, QStringLiteral("--log"), QStringLiteral("off"),
                         QStringLiteral("--redis"), QString::fromStdString(m_redis.nodeUrl()), QStringLiteral("--node-name"), name,
                         QStringLiteral("--cluster-key"), clusterKeyFile()};
        args += more;
        if (!n->child.start(args, env))
            return nullptr;
        n->token = adminToken(n->db);
        m_nodes.push_back(std::move(n));
        return m_nodes.back().get();
    }

private:
    RedisServer& m_redis;
    QTemporaryDir m_dir;
    std::vector<std::unique_ptr<Node>> m_nodes;
};

// A redis-server of the test's own and nodes "a" and "b" on it (b with
// `bEnvironment` added, e.g. libfaketime).
struct TwoNodes {
    RedisServer redis;
    std::unique_ptr<Cluster> cluster;
    Node* a = nullptr;
    Node* b = nullptr;

    QString start(const QProcessEnvironment& bEnvironment = {})
    {
        if (!redis.start())
            return redis.error();
        cluster = std::make_unique<Cluster>(redis);
        a = cluster->start(QStringLiteral("a"));
        b = cluster->start(QStringLiteral("b"), bEnvironment);
        return a && b ? QString() : QStringLiteral("a floodgate node did not start");
    }
};

inline Response call(std::uint16_t port, const std::string& request, const char* source = "127.0.0.1")
{
    return fetch(port, request, 3000, source).value_or(Response{});
}

// PUT of a JSON body on a node's admin API (its rules, a customer); false,
// saying why, unless it answers 2xx.
// A customer's JSON with one key the test made (so the key travels through
// the cluster like any other part of the customer), and the header that
// proves the customer with it.
struct KeyedCustomer {
    std::string body;
    std::string header;  // "X-Api-Key: fgk_...\r\n"
};
inline KeyedCustomer keyedCustomer(const std::string& id, const std::string& name, const std::string& tier)
{
    const Floodgate::Core::NewCustomerKey k = Floodgate::Core::customerKeyFrom(Floodgate::Core::keyDigest("cluster test key of " + id), 0);
    return {R"({"name":")" + name + R"(","tier":")" + tier + R"(","keys":[{"id":")" + k.key.id + R"(","sha256":")" + k.key.sha256
                + R"(","created_at":"2026-01-01T00:00:00Z"}]})",
            "X-Api-Key: " + k.secret + "\r\n"};
}

inline bool putJson(const Node& n, const std::string& target, const std::string& body)
{
    const Response r = call(n.admin(), withBody("PUT", target, body, bearer(n.token)));
    if (r.status / 100 != 2)
        qWarning("PUT %s: %d %s", target.c_str(), r.status, r.body.c_str());
    return r.status / 100 == 2;
}

// Requests the nodes admitted after waiting in vain for Redis (longer than
// Tuning::clusterWaitMicros: a machine too busy to run the sync in time).
// docs/CLUSTER.md's bound is L + N * E plus these; the nodes count them.
inline int overdrafts(const std::vector<Node*>& nodes)
{
    int total = 0;
    for (const Node* n : nodes) {
        const std::string body = call(n->admin(), get("/api/v1/cluster", bearer(n->token))).body;
        const auto at = body.find("\"overdrafts\":");
        if (at != std::string::npos)
            total += std::atoi(body.c_str() + at + 13);
    }
    return total;
}

// The field of node `node` in each entry's hash in Redis, by the entry's
// key ("fg:e:<entry>"): "written;leaseUntil;lease;L1;L2;..." with each
// level "stamp,lockedUntil,total,n[,k,c]..." (engine/cluster/Scripts.cpp).
inline std::map<std::string, std::string> entryFields(RedisServer& redis, const std::string& node)
{
    using Floodgate::Cluster::Reply;
    std::map<std::string, std::string> out;
    for (const Reply& key : redis.command({"KEYS", "fg:e:*"}).elements) {
        const Reply field = redis.command({"HGET", key.text, node});
        if (field.kind == Reply::Kind::String)
            out[key.text] = field.text;
    }
    return out;
}

} // namespace FloodgateTest
