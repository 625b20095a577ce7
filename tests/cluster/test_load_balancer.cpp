// SPDX-License-Identifier: GPL-3.0-or-later
// Cluster nodes behind a load balancer, run from the page that documents it:
// docs/CLUSTER.md "Behind a load balancer" shows three nodes behind nginx and
// behind HAProxy; this suite takes the node's command line and both
// configurations from that page as they are, puts its own addresses in
// (below), and runs them with two nodes: a redis-server, a TestUpstream as
// the application, two `floodgate --headless` nodes in proxy mode, and a real
// nginx, then a real HAProxy, in front, all on 127.0.0.1. A flood from one
// client through the load balancer gets its limit once; the refusals reach
// it as 429 with Retry-After; every request is decided once (no retry on the
// other node); the nodes see the real client, never the load balancer nor
// an address the client forged; another client is not affected.
//
// The address scheme: the page's addresses, each replaced by the test's.
//   10.0.0.11:8080, 10.0.0.12:8080   the nodes' traffic ports
//   port 9090 (on those server lines) each node's admin port
//   10.0.0.13:8080                   its line is left out (two nodes)
//   listen 80; / bind :80            a free port (FrontProxy)
//   10.0.0.21:3000                   the TestUpstream
//   10.0.0.2/32                      127.0.0.1/32, where nginx and HAProxy connect from
//   /etc/haproxy/floodgate-tokens.map  a map of the two nodes' tokens
// Each must be found where the page has it, and no address of the page may
// be left over: a page that changes fails here instead of going untested.
#include <QtTest>

#include "ClusterNodes.h"
#include "FrontProxy.h"
#include "TestUpstream.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace FloodgateTest;

namespace {

const std::string SECTION = "## Behind a load balancer";

// docs/CLUSTER.md's section on load balancers, up to the next "## ".
std::string docSection(std::string* why)
{
    std::ifstream in(FLOODGATE_SOURCE_DIR "/docs/CLUSTER.md");
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto start = doc.find("\n" + SECTION + "\n");
    if (start == std::string::npos) {
        *why = "docs/CLUSTER.md has no \"" + SECTION + "\" section";
        return {};
    }
    const auto end = doc.find("\n## ", start + 1);
    return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The first block fenced as ```lang in `section`, without its fences.
std::string fencedBlock(const std::string& section, const std::string& lang, std::string* why)
{
    const std::string open = "\n```" + lang + "\n";
    const auto start = section.find(open);
    const auto end = start == std::string::npos ? start : section.find("\n```", start + open.size() - 1);
    if (end == std::string::npos) {
        *why = "\"" + SECTION + "\" in docs/CLUSTER.md has no ```" + lang + " block";
        return {};
    }
    return section.substr(start + open.size(), end + 1 - start - open.size());
}

// The lines of `text` that contain `marker`.
std::vector<std::size_t> linesWith(const std::string& text, const std::string& marker)
{
    std::vector<std::size_t> starts;
    for (std::size_t p = text.find(marker); p != std::string::npos; p = text.find(marker, p + 1)) {
        const std::size_t line = text.rfind('\n', p) == std::string::npos ? 0 : text.rfind('\n', p) + 1;
        if (starts.empty() || starts.back() != line)
            starts.push_back(line);
    }
    return starts;
}

// In the one line that contains `marker`, `from` becomes `to`.
bool replaceInLine(std::string& text, const std::string& marker, const std::string& from, const std::string& to, std::string* why)
{
    const auto lines = linesWith(text, marker);
    if (lines.size() != 1) {
        *why = std::to_string(lines.size()) + " lines name " + marker + ", expected one";
        return false;
    }
    const std::size_t end = text.find('\n', lines[0]);
    std::string line = text.substr(lines[0], end - lines[0]);
    if (replaceAll(line, from, to) != 1) {
        *why = "the line of " + marker + " has no \"" + from + "\": " + line;
        return false;
    }
    text.replace(lines[0], end - lines[0], line);
    return true;
}

// The one line that contains `marker` is left out.
bool dropLine(std::string& text, const std::string& marker, std::string* why)
{
    const auto lines = linesWith(text, marker);
    if (lines.size() != 1) {
        *why = std::to_string(lines.size()) + " lines name " + marker + ", expected one";
        return false;
    }
    text.erase(lines[0], text.find('\n', lines[0]) + 1 - lines[0]);
    return true;
}

// Exactly `count` of `from` become `to`.
bool replaceCounted(std::string& text, const std::string& from, const std::string& to, int count, std::string* why)
{
    const int found = replaceAll(text, from, to);
    if (found != count)
        *why = "\"" + from + "\" appears " + std::to_string(found) + " times, expected " + std::to_string(count);
    return found == count;
}

// The node's command line from the page (```sh), with the test's upstream
// and proxy address: what Cluster::start adds besides --listen, --redis,
// --node-name and --cluster-key, which it supplies itself. An option the test does not know
// fails, so the page cannot grow one that goes untested.
std::optional<QStringList> nodeOptions(const std::string& section, std::uint16_t upstreamPort, std::string* why)
{
    std::string command = fencedBlock(section, "sh", why);
    if (command.empty())
        return std::nullopt;
    replaceAll(command, "\\\n", " ");
    std::istringstream words(command);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (w.size() < 2 || w[0] != "floodgate" || w[1] != "--headless") {
        *why = "the node's command line does not start with \"floodgate --headless\": " + command;
        return std::nullopt;
    }
    QStringList options;
    std::vector<std::string> seen;
    for (std::size_t i = 2; i < w.size(); i += 2) {
        if (i + 1 >= w.size()) {
            *why = w[i] + " has no value in the node's command line";
            return std::nullopt;
        }
        const std::string& name = w[i];
        const std::string& value = w[i + 1];
        seen.push_back(name);
        if (name == "--listen" || name == "--redis" || name == "--node-name" || name == "--cluster-key")
            continue;  // the test's: a free port, its redis-server, web-1 and web-2, its key
        if (name == "--upstream" && value == "http://10.0.0.21:3000")
            options << QString::fromStdString(name) << QStringLiteral("http://127.0.0.1:%1").arg(upstreamPort);
        else if (name == "--trusted-proxy" && value == "10.0.0.2/32")
            options << QString::fromStdString(name) << QStringLiteral("127.0.0.1/32");
        else {
            *why = "the node's command line has " + name + " " + value + ", which this test does not put its own value in for";
            return std::nullopt;
        }
    }
    for (const char* needed : {"--listen", "--upstream", "--redis", "--node-name", "--cluster-key", "--trusted-proxy"})
        if (std::find(seen.begin(), seen.end(), needed) == seen.end()) {
            *why = std::string("the node's command line has no ") + needed;
            return std::nullopt;
        }
    return options;
}

// Requests this node decided (every action), from its /metrics.
long long decided(const Node& n)
{
    const std::string body = call(n.admin(), get("/metrics")).body;
    long long total = 0;
    const std::string name = "\nfloodgate_requests_total{";
    for (std::size_t p = body.find(name); p != std::string::npos; p = body.find(name, p + 1))
        total += std::atoll(body.c_str() + body.find("} ", p) + 2);
    return total;
}

// `"used_here":N` of a client's level on this node (-1 when it is not tracked).
int usedHere(const Node& n, const std::string& client, const std::string& level)
{
    const Response r = call(n.admin(), get("/api/v1/clients/" + client, bearer(n.token)));
    const auto at = r.body.find("\"name\":\"" + level + "\"");
    if (r.status != 200 || at == std::string::npos)
        return -1;
    const auto used = r.body.find("\"used_here\":", at);
    return used == std::string::npos ? -1 : std::atoi(r.body.c_str() + used + 12);
}

int status(const Node& n, const std::string& target)
{
    return call(n.admin(), get(target, bearer(n.token))).status;
}

// HAProxy's `show stat`: the rows of `backend`'s servers, each as column name -> value.
std::vector<std::map<std::string, std::string>> serverRows(const std::string& csv, const std::string& backend)
{
    auto split = [](const std::string& line) {
        std::vector<std::string> f;
        std::string field;
        std::istringstream in(line);
        while (std::getline(in, field, ','))
            f.push_back(field);
        return f;
    };
    std::istringstream in(csv);
    std::string line;
    std::vector<std::string> names;
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
        if (line.rfind("# ", 0) == 0) {
            names = split(line.substr(2));
            continue;
        }
        const auto f = split(line);
        if (f.size() < 2 || f[0] != backend || f[1] == "BACKEND" || f[1] == "FRONTEND")
            continue;
        std::map<std::string, std::string> row;
        for (std::size_t i = 0; i < f.size() && i < names.size(); ++i)
            row[names[i]] = f[i];
        rows.push_back(row);
    }
    return rows;
}

} // namespace

class TestLoadBalancer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        std::string why;
        m_section = docSection(&why);
        QVERIFY2(!m_section.empty(), why.c_str());
        const auto options = nodeOptions(m_section, m_upstream.port(), &why);
        QVERIFY2(options, why.c_str());
        m_redis = std::make_unique<RedisServer>();
        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        m_cluster = std::make_unique<Cluster>(*m_redis);
        m_a = m_cluster->start(QStringLiteral("web-1"), {}, *options);
        m_b = m_cluster->start(QStringLiteral("web-2"), {}, *options);
        QVERIFY(m_a && m_b);
        QVERIFY2(m_a->child.startup.contains(QStringLiteral("proxy mode")), qPrintable(m_a->child.startup));
        // Both count together (each has seen the other's heartbeat): N = 2.
        bool both = false;
        for (int i = 0; i < 50 && !both; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            both = true;
            for (Node* n : {m_a, m_b})
                both = both && call(n->admin(), get("/api/v1/cluster", bearer(n->token))).body.find("\"counting_nodes\":2") != std::string::npos;
        }
        QVERIFY2(both, "the two nodes do not count together within 5 s");
    }

    void cleanupTestCase()
    {
        m_cluster.reset();
        m_redis.reset();
    }

    void nginxAsDocumented()
    {
        std::string why;
        std::string site = fencedBlock(m_section, "nginx", &why);
        QVERIFY2(!site.empty(), why.c_str());
        QVERIFY2(replaceCounted(site, "10.0.0.11:8080", "127.0.0.1:" + std::to_string(m_a->port()), 1, &why), why.c_str());
        QVERIFY2(replaceCounted(site, "10.0.0.12:8080", "127.0.0.1:" + std::to_string(m_b->port()), 1, &why), why.c_str());
        QVERIFY2(dropLine(site, "10.0.0.13:8080", &why), why.c_str());
        QVERIFY2(site.find("10.0.0.") == std::string::npos, site.c_str());

        FrontProxy nginx(FrontProxy::Kind::Nginx);
        QVERIFY2(nginx.start(site, "listen 80;"), nginx.error().c_str());
        QVERIFY2(answers(nginx.port(), "127.0.0.9"), nginx.output().c_str());
        floodThrough(nginx.port(), "127.0.0.2", "127.0.0.3", "203.0.113.");
    }

    void haproxyAsDocumented()
    {
        std::string why;
        std::string site = fencedBlock(m_section, "haproxy", &why);
        QVERIFY2(!site.empty(), why.c_str());
        FrontProxy haproxy(FrontProxy::Kind::Haproxy);
        const std::string map = haproxy.path("floodgate-tokens.map");
        {
            std::ofstream tokens(map);
            tokens << "web-1 " << m_a->token << "\nweb-2 " << m_b->token << "\n";
        }
        QVERIFY2(replaceInLine(site, "10.0.0.11:8080", "port 9090", "port " + std::to_string(m_a->admin()), &why), why.c_str());
        QVERIFY2(replaceInLine(site, "10.0.0.12:8080", "port 9090", "port " + std::to_string(m_b->admin()), &why), why.c_str());
        QVERIFY2(replaceCounted(site, "10.0.0.11:8080", "127.0.0.1:" + std::to_string(m_a->port()), 1, &why), why.c_str());
        QVERIFY2(replaceCounted(site, "10.0.0.12:8080", "127.0.0.1:" + std::to_string(m_b->port()), 1, &why), why.c_str());
        QVERIFY2(dropLine(site, "10.0.0.13:8080", &why), why.c_str());
        QVERIFY2(replaceCounted(site, "/etc/haproxy/floodgate-tokens.map", map, 1, &why), why.c_str());
        QVERIFY2(site.find("10.0.0.") == std::string::npos && site.find("9090") == std::string::npos, site.c_str());

        QVERIFY2(haproxy.start(site, "bind :80"), haproxy.error().c_str());
        // Both servers up on their health check: /healthz on the admin port, 200.
        std::vector<std::map<std::string, std::string>> rows;
        auto healthy = [&] {
            rows = serverRows(haproxy.haproxyStats(), "floodgate");
            return rows.size() == 2 && std::all_of(rows.begin(), rows.end(), [](auto& r) {
                       return r["status"] == "UP" && r["check_status"] == "L7OK" && r["check_code"] == "200";
                   });
        };
        bool up = false;
        for (int i = 0; i < 60 && !(up = healthy()); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::string seen;
        for (auto& r : rows)
            seen += r["svname"] + " " + r["status"] + " " + r["check_status"] + " " + r["check_code"] + "; ";
        QVERIFY2(up, (seen + haproxy.output()).c_str());
        qInfo("HAProxy's servers: %s", seen.c_str());
        QVERIFY2(answers(haproxy.port(), "127.0.0.10"), haproxy.output().c_str());
        floodThrough(haproxy.port(), "127.0.0.4", "127.0.0.5", "198.51.100.");
    }

private:
    // A request through the load balancer is answered 200 (within 5 s).
    static bool answers(std::uint16_t port, const char* source)
    {
        for (int i = 0; i < 50; ++i) {
            if (call(port, get("/"), source).status == 200)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }

    // 30 requests from `client` through the load balancer on `port`, each
    // on a connection of its own and each with another address `forged` in
    // X-Forwarded-For (were it believed, every request would be a new client).
    void floodThrough(std::uint16_t port, const std::string& client, const char* calm, const std::string& forged)
    {
        const std::vector<Node*> nodes{m_a, m_b};
        const long long beforeA = decided(*m_a), beforeB = decided(*m_b);
        const int overBefore = overdrafts(nodes);
        const std::size_t upstreamBefore = m_upstream.requests().size();

        const int sent = 30;
        int allowed = 0;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < sent; ++i) {
            const std::string spoof = "X-Forwarded-For: " + forged + std::to_string(1 + i) + "\r\n";
            const Response r = call(port, get("/products/" + std::to_string(i), spoof), client.c_str());
            if (r.status == 200) {
                ++allowed;
                QCOMPARE(QString::fromStdString(r.body), QStringLiteral("hello from upstream"));
                continue;
            }
            // A refusal reaches the client as the node made it.
            QVERIFY2(r.status == 429, qPrintable(QStringLiteral("request %1: %2 %3").arg(i).arg(r.status).arg(QString::fromStdString(r.body))));
            const int retryAfter = std::atoi(r.header("retry-after").c_str());
            QVERIFY2(retryAfter >= 1 && retryAfter <= 3, r.header("retry-after").c_str());
            QVERIFY2(r.header("ratelimit").rfind("\"ip-3s\";r=0;t=", 0) == 0, r.header("ratelimit").c_str());
            QVERIFY2(r.body.find("please slow down") != std::string::npos, r.body.c_str());
        }
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        const int over = overdrafts(nodes) - overBefore;
        const long long onA = decided(*m_a) - beforeA, onB = decided(*m_b) - beforeB;
        qInfo("%s: admitted %d of %d in %lld ms (limit 6, bound 8, %d overdrafts); decided %lld on web-1, %lld on web-2", client.c_str(),
              allowed, sent, static_cast<long long>(took), over, onA, onB);
        // The default burst level, 6 per 3 s, once for the cluster: at most L + N * E = 6 + 2.
        QVERIFY2(allowed >= 6 && allowed <= 8 + over, qPrintable(QString::number(allowed)));
        // Every request decided once: none was retried on the other node
        // (a 429 sent on would be decided, and counted, twice).
        QCOMPARE(onA + onB, static_cast<long long>(sent));
        // Round robin: both nodes had their share.
        QVERIFY2(onA >= sent / 3 && onB >= sent / 3, qPrintable(QStringLiteral("%1 / %2").arg(onA).arg(onB)));

        // Both nodes counted the client under its own address; neither the
        // load balancer nor a forged address is a client anywhere.
        for (const Node* n : nodes) {
            const int here = usedHere(*n, client, "ip-3s");
            QVERIFY2(here >= 1, qPrintable(QStringLiteral("%1 counted %2 of %3's requests").arg(n->port()).arg(here).arg(QString::fromStdString(client))));
            QCOMPARE(status(*n, "/api/v1/clients/127.0.0.1"), 404);
            QCOMPARE(status(*n, "/api/v1/clients/" + forged + "1"), 404);
            QCOMPARE(status(*n, "/api/v1/clients/" + forged + std::to_string(sent)), 404);
        }
        // The application saw exactly the admitted requests, each with the
        // client's address as X-Real-IP (docs/CLUSTER.md says what it gets).
        const auto requests = m_upstream.requests();
        int fromClient = 0;
        for (std::size_t i = upstreamBefore; i < requests.size(); ++i) {
            std::string head = requests[i];
            std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return char(std::tolower(c)); });
            fromClient += head.find("\r\nx-real-ip: " + client + "\r\n") != std::string::npos;
            // The chain as the load balancer passed it on (the forged value
            // first, then the client), then the load balancer.
            QVERIFY2(head.find("\r\nx-forwarded-for: " + forged) != std::string::npos
                         && head.find(", " + client + ", 127.0.0.1\r\n") != std::string::npos,
                     head.c_str());
            QVERIFY2(head.find("\r\nx-real-ip: " + forged) == std::string::npos, head.c_str());
            QVERIFY2(head.find("\r\nx-real-ip: 127.0.0.1\r\n") == std::string::npos, head.c_str());
        }
        QCOMPARE(fromClient, allowed);
        QCOMPARE(int(requests.size() - upstreamBefore), allowed);

        // Another client, through the same load balancer and connections, is not affected.
        for (int i = 0; i < 4; ++i)
            QCOMPARE(call(port, get("/about"), calm).status, 200);
    }

    std::string m_section;
    TestUpstream m_upstream;
    std::unique_ptr<RedisServer> m_redis;
    std::unique_ptr<Cluster> m_cluster;
    Node* m_a = nullptr;
    Node* m_b = nullptr;
};

QTEST_GUILESS_MAIN(TestLoadBalancer)
#include "test_load_balancer.moc"
