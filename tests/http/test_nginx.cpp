// SPDX-License-Identifier: GPL-3.0-or-later
// A real nginx (Debian's package, installed by scripts/setup) in Debian's
// layout: its own nginx.conf, its stock "default" site (listen 80
// default_server) and docs/nginx-auth-request.conf as shipped, side by side
// in sites-enabled. auth_request points at Floodgate in decision mode: a
// flood for the site's names gets 429 with Retry-After, allowed answers carry
// RateLimit headers, other names go to the default site, and a stopped or
// hung Floodgate is answered as the recipe says (503, or the page when it is
// switched to fail open) within its timeouts.
#include <QtTest>
#include <QThread>
#include <QFile>
#include <QDir>

#include "core/CustomerKey.h"

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "DebianNginx.h"
#include "HttpTestClient.h"
#include "core/Engine.h"
#include "http/Listener.h"

#include <chrono>
#include <memory>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

const char* const RECIPE = FLOODGATE_SOURCE_DIR "/docs/nginx-auth-request.conf";
const char* const DEBIAN_DEFAULT_SITE = "/etc/nginx/sites-available/default";

// The recipe as shipped, pointed at Floodgate's port; empty with *why on drift.
std::string recipeFor(std::uint16_t floodgatePort, std::string* why)
{
    std::string site = readTextFile(RECIPE);
    if (site.empty()) {
        *why = "docs/nginx-auth-request.conf is missing";
        return {};
    }
    if (replaceAll(site, "server 127.0.0.1:8080;", "server 127.0.0.1:" + std::to_string(floodgatePort) + ";") != 1) {
        *why = "docs/nginx-auth-request.conf no longer names Floodgate as `server 127.0.0.1:8080;`";
        return {};
    }
    return site;
}

std::string getFor(const std::string& host, const std::string& target)
{
    return "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
}

// Every thread of `pid` in state T (stopped), within 2 s.
bool everyThreadStopped(pid_t pid)
{
    for (int attempt = 0; attempt < 200; ++attempt) {
        const QDir tasks(QStringLiteral("/proc/%1/task").arg(pid));
        bool all = true;
        for (const QString& task : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            QFile stat(tasks.filePath(task) + QStringLiteral("/stat"));
            if (!stat.open(QIODevice::ReadOnly))
                continue;  // gone
            const QByteArray line = stat.readAll();
            const int close = line.lastIndexOf(')');  // the name may hold spaces
            all = all && close > 0 && line.size() > close + 2 && line[close + 2] == 'T';
        }
        if (all)
            return true;
        QThread::msleep(10);
    }
    return false;
}

double secondsSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

class TestNginx : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void floodGets429AllowedCarryRateLimitOtherHostsGoToTheDefaultSite()
    {
        Core::EngineConfig config = Core::defaultConfig();
        config.escalation.enabled = false;
        const Core::NewCustomerKey acmeKey = Core::customerKeyFrom(Core::keyDigest("nginx test key"), 0);
        config.customers = {Core::Customer{"acme", "Acme", "Pro", {}, {acmeKey.key}}};
        Core::Engine engine(config);
        Http::ListenerOptions o;
        o.port = 0;
        o.threads = 1;
        o.shutdownDeadlineMs = 500;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1/32")});  // nginx
        Http::Listener floodgate(engine, o, nullptr, nullptr);
        std::string why;
        QVERIFY2(floodgate.start(&why), why.c_str());

        const std::string recipe = recipeFor(floodgate.port(), &why);
        QVERIFY2(!recipe.empty(), why.c_str());
        DebianNginx nginx;
        QVERIFY2(nginx.start({{"default", readTextFile(DEBIAN_DEFAULT_SITE)}, {"floodgate", recipe}}), nginx.error().c_str());
        const std::uint16_t port = nginx.port();

        // A flood for example.com from 127.0.0.2: six pass with RateLimit
        // headers, then 429 with the engine's Retry-After.
        int ok = 0, throttled = 0;
        std::string retryAfter, rateLimit;
        for (int i = 0; i < 20; ++i) {
            auto f = fetch(port, getFor("example.com", "/products/" + std::to_string(i)), 3000, "127.0.0.2");
            QVERIFY2(f, nginx.output().c_str());
            if (f->status == 200) {
                ++ok;
                QCOMPARE(QString::fromStdString(f->body), QStringLiteral("the page\n"));
                QCOMPARE(QString::fromStdString(f->header("ratelimit-policy")), QStringLiteral("\"ip-3s\";q=6;w=3"));
                QCOMPARE(QString::fromStdString(f->header("ratelimit")), QStringLiteral("\"ip-3s\";r=%1;t=3").arg(5 - i));
            } else if (f->status == 429) {
                ++throttled;
                retryAfter = f->header("retry-after");
                rateLimit = f->header("ratelimit");
                QVERIFY2(f->body.find("please slow down and wait 3 seconds") != std::string::npos, f->body.c_str());
            } else
                QFAIL(("unexpected status " + std::to_string(f->status) + ": " + f->body).c_str());
        }
        QCOMPARE(ok, 6);
        QCOMPARE(throttled, 14);
        QCOMPARE(QString::fromStdString(retryAfter), QStringLiteral("3"));
        QCOMPARE(QString::fromStdString(rateLimit), QStringLiteral("\"ip-3s\";r=0;t=3"));

        // The site's other name is protected too: the same client is refused there.
        auto www = fetch(port, getFor("www.example.com", "/"), 3000, "127.0.0.2");
        QVERIFY(www);
        QCOMPARE(www->status, 429);

        // Another name goes to Debian's default site, unprotected: the
        // throttled client gets its welcome page, and Floodgate is not asked.
        for (int i = 0; i < 10; ++i) {
            auto other = fetch(port, getFor("other.example.org", "/"), 3000, "127.0.0.2");
            QVERIFY(other);
            QCOMPARE(other->status, 200);
            QVERIFY2(other->body.find("Welcome to nginx!") != std::string::npos, other->body.c_str());
            QVERIFY(other->header("ratelimit").empty());
        }
        const auto now = Core::SystemClock().now();
        QVERIFY(!engine.client(*Core::IpAddress::parse("127.0.0.5"), now));
        auto unseen = fetch(port, getFor("other.example.org", "/"), 3000, "127.0.0.5");
        QVERIFY(unseen);
        QCOMPARE(unseen->status, 200);
        QVERIFY(!engine.client(*Core::IpAddress::parse("127.0.0.5"), Core::SystemClock().now()));

        // A calm client (127.0.0.3) still gets the page.
        auto calm = fetch(port, getFor("example.com", "/about"), 3000, "127.0.0.3");
        QVERIFY(calm);
        QCOMPARE(calm->status, 200);
        QCOMPARE(QString::fromStdString(calm->body), QStringLiteral("the page\n"));
        // Floodgate counted the real clients, not nginx.
        QVERIFY(engine.client(*Core::IpAddress::parse("127.0.0.2"), Core::SystemClock().now()));
        QVERIFY(!engine.client(*Core::IpAddress::parse("127.0.0.1"), Core::SystemClock().now()));

        // A blocklisted client gets nginx's 403.
        engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::vector<Core::ListEntry>{
                                                      Core::ListEntry{0, *Core::Cidr::parse("127.0.0.4"), "t", Core::ListSource::Operator, 0, "t", Core::NeverExpires}}));
        auto blocked = fetch(port, getFor("example.com", "/"), 3000, "127.0.0.4");
        QVERIFY(blocked);
        QCOMPARE(blocked->status, 403);

        // Through nginx (a trusted proxy that passes the client's headers
        // on), naming a customer proves nothing: 6 pass, as for anyone; the
        // customer's key does, and its quota is whole.
        int claimed = 0;
        for (int i = 0; i < 40; ++i) {
            auto f = fetch(port, "GET /api/orders HTTP/1.1\r\nHost: example.com\r\nX-Customer-Id: acme\r\n\r\n", 3000, "127.0.0.6");
            QVERIFY(f);
            claimed += f->status == 200;
        }
        QCOMPARE(claimed, 6);
        auto proven = fetch(port, "GET /api/orders HTTP/1.1\r\nHost: example.com\r\nX-Api-Key: " + acmeKey.secret + "\r\n\r\n", 3000, "127.0.0.7");
        QVERIFY(proven);
        QCOMPARE(proven->status, 200);
        QVERIFY2(proven->header("ratelimit").starts_with("\"pro-1m\";r=99;t="), proven->header("ratelimit").c_str());  // t: to the bucket's end

        nginx.stop();
        floodgate.stop();
    }

    // The recipe as shipped fails closed; with its two error_page lines
    // swapped as its comment says, it fails open.
    void floodgateHungOrStopped_data()
    {
        QTest::addColumn<bool>("failOpen");
        QTest::newRow("fail closed (as shipped)") << false;
        QTest::newRow("fail open") << true;
    }
    void floodgateHungOrStopped()
    {
        QFETCH(bool, failOpen);
        QTemporaryDir data;
        Child floodgate;
        QVERIFY2(floodgate.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--trusted-proxy"),
                                  QStringLiteral("127.0.0.1"), QStringLiteral("--db"), data.filePath(QStringLiteral("floodgate.db"))}),
                 qPrintable(floodgate.startup + QString::fromUtf8(floodgate.proc.readAllStandardError())));
        // Whatever happens below, the process is not left stopped, nor running.
        const pid_t pid = pid_t(floodgate.proc.processId());
        const auto end = qScopeGuard([&floodgate, pid] {
            if (floodgate.proc.state() != QProcess::NotRunning) {
                ::kill(pid, SIGCONT);
                floodgate.stop();
            }
        });

        std::string why;
        std::string recipe = recipeFor(floodgate.port, &why);
        QVERIFY2(!recipe.empty(), why.c_str());
        if (failOpen) {
            QCOMPARE(replaceAll(recipe, "        error_page 500 = @floodgate_down;", "        #error_page 500 = @floodgate_down;"), 1);
            QCOMPARE(replaceAll(recipe, "        #error_page 500 = @site;", "        error_page 500 = @site;"), 1);
        }
        DebianNginx nginx;
        QVERIFY2(nginx.start({{"default", readTextFile(DEBIAN_DEFAULT_SITE)}, {"floodgate", recipe}}), nginx.error().c_str());
        const std::uint16_t port = nginx.port();

        // Floodgate up: the page, with its RateLimit headers.
        auto up = fetch(port, getFor("example.com", "/"), 3000, "127.0.0.2");
        QVERIFY2(up, nginx.output().c_str());
        QCOMPARE(up->status, 200);
        QVERIFY(!up->header("ratelimit").empty());

        // What a client gets while Floodgate cannot be asked.
        auto checkDown = [&](const std::optional<Response>& r) {
            QVERIFY2(r, nginx.output().c_str());
            if (failOpen) {
                QCOMPARE(r->status, 200);
                QCOMPARE(QString::fromStdString(r->body), QStringLiteral("the page\n"));
                QVERIFY(r->header("ratelimit").empty());
            } else {
                QCOMPARE(r->status, 503);
                QCOMPARE(QString::fromStdString(r->header("retry-after")), QStringLiteral("5"));
                QVERIFY2(r->body.find("please try again in 5 seconds") != std::string::npos, r->body.c_str());
            }
        };

        // Hung (stopped by SIGSTOP: the kernel still accepts its connections,
        // nothing answers): answered after proxy_read_timeout (2 s), not 60 s.
        QCOMPARE(::kill(pid, SIGSTOP), 0);
        // The stop takes each thread when it next leaves the kernel: wait
        // until every one is stopped, or a busy listener thread answers once more.
        QVERIFY2(everyThreadStopped(pid), "floodgate's threads did not all stop within 2 s of SIGSTOP");
        auto start = std::chrono::steady_clock::now();
        auto hung = fetch(port, getFor("example.com", "/hung"), 8000, "127.0.0.3");
        const double hungSeconds = secondsSince(start);
        checkDown(hung);
        if (QTest::currentTestFailed())
            return;
        QVERIFY2(hungSeconds >= 1.5 && hungSeconds < 4.0, std::to_string(hungSeconds).c_str());
        QCOMPARE(::kill(pid, SIGCONT), 0);

        // Back: protected again at once.
        auto back = fetch(port, getFor("example.com", "/"), 3000, "127.0.0.2");
        QVERIFY2(back, nginx.output().c_str());
        QCOMPARE(back->status, 200);
        QVERIFY(!back->header("ratelimit").empty());

        // Stopped: connections refused, answered at once.
        QCOMPARE(floodgate.stop(), 0);
        start = std::chrono::steady_clock::now();
        auto stopped = fetch(port, getFor("example.com", "/stopped"), 8000, "127.0.0.3");
        const double stoppedSeconds = secondsSince(start);
        checkDown(stopped);
        if (QTest::currentTestFailed())
            return;
        QVERIFY2(stoppedSeconds < 1.5, std::to_string(stoppedSeconds).c_str());

        nginx.stop();
    }
};

QTEST_GUILESS_MAIN(TestNginx)
#include "test_nginx.moc"
