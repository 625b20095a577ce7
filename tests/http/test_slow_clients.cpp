// SPDX-License-Identifier: GPL-3.0-or-later
// Slow clients against the traffic listener, in process over real sockets: a
// few hundred connections that send a header a byte at a time (slowloris),
// send a body a byte at a time, or ask for answers and never read them, held
// for a couple of seconds under the listener's default deadlines. Meanwhile a
// normal client must be answered within 1 s, every time. (The admin port has
// its own suite; scripts/hostile-slow runs the same attacks with
// slowhttptest and thousands of connections against the built binary.)
#include <QElapsedTimer>
#include <QtTest>

#ifndef Q_MOC_RUN
#include "HttpTestClient.h"
#include "ListenerStack.h"
#include "Sanitizers.h"

#include <sys/resource.h>

#include <memory>
#include <vector>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

constexpr int SlowConnections = 300;
constexpr qint64 AnsweredWithinMs = latencyBound(1000);

// Decision mode with nothing throttled, two I/O threads: the slow clients
// are held by the listener's deadlines, not turned away by the engine.
struct Server : ListenerStack {
    Server()
        : ListenerStack(
            [] {
                Core::EngineConfig c = Core::defaultConfig();
                c.rules.clear();
                return c;
            }(),
            [] {
                Http::ListenerOptions o;
                o.threads = 2;
                return o;
            }())
    {
    }
};

// Two sockets per slow connection (ours and the listener's), plus room.
bool enoughDescriptors()
{
    rlimit r{};
    ::getrlimit(RLIMIT_NOFILE, &r);
    const rlim_t want = 4 * SlowConnections + 256;
    if (r.rlim_cur >= want)
        return true;
    r.rlim_cur = std::min<rlim_t>(r.rlim_max, want);
    return ::setrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur >= want;
}

} // namespace

class TestSlowClients : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (!enoughDescriptors())
            QSKIP("the file descriptor limit cannot be raised to hold the slow connections (ulimit -n)");
    }

    void aNormalClientIsAnsweredWithinASecond_data()
    {
        QTest::addColumn<QString>("attack");
        QTest::newRow("slowloris") << QStringLiteral("header");
        QTest::newRow("slow body") << QStringLiteral("body");
        QTest::newRow("slow read") << QStringLiteral("read");
    }
    void aNormalClientIsAnsweredWithinASecond()
    {
        QFETCH(QString, attack);
        Server s;
        QVERIFY(s.started);
        // Each slow connection starts its attack, then trickles one byte per round.
        std::string opening;
        std::string trickle = "x";
        if (attack == QLatin1String("header")) {
            opening = "GET / HTTP/1.1\r\nHost: h\r\nX-Slow: ";
        } else if (attack == QLatin1String("body")) {
            opening = "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n";
        } else {
            // Pipelined requests whose answers are never read, on a 4 KiB
            // receive window: the listener's writes back up at once.
            for (int i = 0; i < 200; ++i)
                opening += get("/slow-read-" + std::to_string(i));
            trickle.clear();
        }
        std::vector<std::unique_ptr<Connection>> slow;
        for (int i = 0; i < SlowConnections; ++i) {
            auto c = std::make_unique<Connection>();
            QVERIFY2(c->open(s.listener->port(), "127.0.0.1", nullptr, attack == QLatin1String("read") ? 4096 : 0),
                     "a slow connection is accepted");
            if (attack == QLatin1String("read"))
                c->sendUntilAnswered(opening, 1 << 20);  // one large write; the answers pile up unread
            else
                QVERIFY(c->send(opening));
            slow.push_back(std::move(c));
        }

        qint64 worst = 0;
        for (int round = 0; round < 10; ++round) {
            for (auto& c : slow)
                if (!trickle.empty())
                    c->send(trickle);
            QElapsedTimer t;
            t.start();
            const auto r = fetch(s.listener->port(), get("/normal"), 3000);
            const qint64 took = t.elapsed();
            QVERIFY2(r, qPrintable(QStringLiteral("round %1: the normal client got no answer").arg(round)));
            QCOMPARE(r->status, 200);
            worst = std::max(worst, took);
            QTest::qWait(200);
        }
        qInfo("%s: %d slow connections, worst normal-client latency %lld ms", qPrintable(attack), SlowConnections,
              static_cast<long long>(worst));
        QVERIFY2(worst < AnsweredWithinMs, qPrintable(QStringLiteral("worst %1 ms").arg(worst)));
        // Every slow connection was still held (the attack was real, not refused at once).
        QVERIFY(s.metrics.openConnections.load() >= SlowConnections / 2);
    }
};

QTEST_GUILESS_MAIN(TestSlowClients)
#include "test_slow_clients.moc"
