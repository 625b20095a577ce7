// SPDX-License-Identifier: GPL-3.0-or-later
// A real nginx (Debian's package, installed by scripts/setup) in front, with
// auth_request pointing at Floodgate in decision mode: a flood through nginx
// gets 429 with Retry-After, a calm client gets the page. The configuration
// is the one docs/INTEGRATIONS.md shows.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "core/Engine.h"
#include "FrontProxy.h"
#include "HttpTestClient.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "http/Metrics.h"

#include <fstream>
#include <memory>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

class TestNginx : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void floodThroughNginxGets429CalmClientGetsThePage()
    {
        Core::EngineConfig config = Core::defaultConfig();
        config.escalation.enabled = false;
        Core::Engine engine(config);
        Http::ListenerOptions o;
        o.port = 0;
        o.threads = 1;
        o.shutdownDeadlineMs = 500;
        o.trustedProxies = Http::TrustedProxies({*Core::Cidr::parse("127.0.0.1/32")});  // nginx
        Http::Listener floodgate(engine, o, nullptr, nullptr);
        std::string why;
        QVERIFY2(floodgate.start(&why), why.c_str());

        std::ifstream templ(FLOODGATE_SOURCE_DIR "/docs/nginx-auth-request.conf");
        QVERIFY2(templ.good(), "docs/nginx-auth-request.conf is missing");
        std::string site((std::istreambuf_iterator<char>(templ)), std::istreambuf_iterator<char>());
        QVERIFY2(replaceAll(site, "127.0.0.1:8080", "127.0.0.1:" + std::to_string(floodgate.port())) > 0,  // Floodgate
                 "docs/nginx-auth-request.conf no longer names Floodgate as 127.0.0.1:8080");
        FrontProxy nginx(FrontProxy::Kind::Nginx);
        QVERIFY2(nginx.start(site, "listen 80;"), nginx.error().c_str());
        const std::uint16_t port = nginx.port();

        // Wait until nginx answers.
        std::optional<Response> r;
        for (int i = 0; i < 50 && !r; ++i) {
            QTest::qWait(100);
            r = fetch(port, get("/", "X-Probe: 1\r\n"), 1000, "127.0.0.9");
        }
        QVERIFY2(r.has_value(), nginx.output().c_str());
        QCOMPARE(r->status, 200);

        // A flood from 127.0.0.2: six pass, then 429 with the engine's Retry-After.
        int ok = 0, throttled = 0;
        std::string retryAfter, rateLimit;
        for (int i = 0; i < 20; ++i) {
            auto f = fetch(port, get("/products/" + std::to_string(i)), 3000, "127.0.0.2");
            QVERIFY(f);
            if (f->status == 200)
                ++ok;
            else if (f->status == 429) {
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

        // A calm client (127.0.0.3) still gets the page.
        auto calm = fetch(port, get("/about"), 3000, "127.0.0.3");
        QVERIFY(calm);
        QCOMPARE(calm->status, 200);
        QCOMPARE(QString::fromStdString(calm->body), QStringLiteral("the page\n"));
        // Floodgate counted the real clients, not nginx.
        const auto now = Core::SystemClock().now();
        QVERIFY(engine.client(*Core::IpAddress::parse("127.0.0.2"), now));
        QVERIFY(!engine.client(*Core::IpAddress::parse("127.0.0.1"), now));

        // A blocklisted client gets nginx's 403.
        engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::vector<Core::ListEntry>{
                                                      Core::ListEntry{0, *Core::Cidr::parse("127.0.0.4"), "t", Core::ListSource::Operator, 0, "t", Core::NeverExpires}}));
        auto blocked = fetch(port, get("/"), 3000, "127.0.0.4");
        QVERIFY(blocked);
        QCOMPARE(blocked->status, 403);

        nginx.stop();
        floodgate.stop();
    }
};

QTEST_GUILESS_MAIN(TestNginx)
#include "test_nginx.moc"
