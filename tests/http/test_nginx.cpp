// SPDX-License-Identifier: MIT
// A real nginx (Debian's package, installed by scripts/setup) in front, with
// auth_request pointing at Floodgate in decision mode: a flood through nginx
// gets 429 with Retry-After, a calm client gets the page. The configuration
// is the one docs/INTEGRATIONS.md shows.
#include <QProcess>
#include <QtTest>

#ifndef Q_MOC_RUN
#include "core/Engine.h"
#include "HttpTestClient.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "http/Metrics.h"

#include <filesystem>
#include <fstream>
#include <memory>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

std::string nginxBinary()
{
    for (const char* p : {"/usr/sbin/nginx", "/usr/bin/nginx"})
        if (std::filesystem::exists(p))
            return p;
    return {};
}

} // namespace

class TestNginx : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void floodThroughNginxGets429CalmClientGetsThePage()
    {
        const std::string nginx = nginxBinary();
        QVERIFY2(!nginx.empty(), "nginx is not installed: scripts/setup installs it");

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

        const auto dir = std::filesystem::temp_directory_path() / ("fg-nginx-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir / "tmp");
        const std::uint16_t port = freeLoopbackPort();
        std::ifstream templ(FLOODGATE_SOURCE_DIR "/docs/nginx-auth-request.conf");
        QVERIFY2(templ.good(), "docs/nginx-auth-request.conf is missing");
        std::string site((std::istreambuf_iterator<char>(templ)), std::istreambuf_iterator<char>());
        auto replace = [&](const std::string& from, const std::string& to) {
            for (std::size_t p = site.find(from); p != std::string::npos; p = site.find(from, p + to.size()))
                site.replace(p, from.size(), to);
        };
        replace("127.0.0.1:8080", "127.0.0.1:" + std::to_string(floodgate.port()));  // Floodgate
        replace("listen 80;", "listen 127.0.0.1:" + std::to_string(port) + ";");
        const std::string tmp = (dir / "tmp").string();
        std::ofstream conf(dir / "nginx.conf");
        conf << "daemon off;\nmaster_process off;\nerror_log " << (dir / "error.log").string() << " info;\npid "
             << (dir / "nginx.pid").string() << ";\nevents { worker_connections 256; }\nhttp {\n  access_log off;\n"
             << "  client_body_temp_path " << tmp << "/body;\n  proxy_temp_path " << tmp << "/proxy;\n  fastcgi_temp_path " << tmp
             << "/fcgi;\n  uwsgi_temp_path " << tmp << "/uwsgi;\n  scgi_temp_path " << tmp << "/scgi;\n"
             << site << "\n}\n";
        conf.close();

        QProcess proc;
        proc.setProcessChannelMode(QProcess::MergedChannels);
        proc.start(QString::fromStdString(nginx),
                   {QStringLiteral("-p"), QString::fromStdString(dir.string()), QStringLiteral("-c"), QString::fromStdString((dir / "nginx.conf").string())});
        QVERIFY(proc.waitForStarted(5000));
        // Wait until nginx answers.
        std::optional<Response> r;
        for (int i = 0; i < 50 && !r; ++i) {
            QTest::qWait(100);
            r = fetch(port, get("/", "X-Probe: 1\r\n"), 1000, "127.0.0.9");
        }
        QVERIFY2(r.has_value(), proc.readAll().constData());
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

        proc.terminate();
        if (!proc.waitForFinished(3000))
            proc.kill();
        proc.waitForFinished(3000);
        floodgate.stop();
        std::filesystem::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestNginx)
#include "test_nginx.moc"
