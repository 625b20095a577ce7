// SPDX-License-Identifier: GPL-3.0-or-later
// The admin port on 127.0.0.1 stays available: /healthz and /metrics are
// answered while a huge body is parsed or a write waits for the database's
// lock, slow clients cannot take every slot, slow headers and bodies are
// closed at their deadline.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ApiTestSupport.h"

#include <sqlite3.h>
#include <sys/resource.h>

#include <chrono>
#include <memory>
#endif

using namespace Floodgate;
using namespace FloodgateTest;
using Wire::Json;

namespace {

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

} // namespace

class TestAdminAvailability : public ApiSuite {
    Q_OBJECT

private Q_SLOTS:
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
};

QTEST_GUILESS_MAIN(TestAdminAvailability)
#include "test_admin_availability.moc"
