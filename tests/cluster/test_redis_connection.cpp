// SPDX-License-Identifier: GPL-3.0-or-later
// The Redis URL and the blocking Redis connection of cluster mode, against
// a real redis-server (RedisServer.h) and against peers that are not Redis
// (a tiny TCP server in this file): every failure kind, pipelines, binary
// arguments, scripts surviving an emptied script cache, a stopped, killed
// and restarted server.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "cluster/RedisConnection.h"
#include "cluster/RedisUrl.h"
#include "RedisServer.h"
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace Floodgate::Cluster;
using namespace FloodgateTest;
using std::chrono::milliseconds;

namespace {

using SteadyClock = std::chrono::steady_clock;

long long msSince(SteadyClock::time_point start)
{
    return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - start).count();
}

RedisUrl urlOf(const std::string& text)
{
    std::string why;
    const auto u = RedisUrl::parse(text, &why);
    if (!u)
        qFatal("bad URL in a test: %s", why.c_str());
    return *u;
}

// A listening socket on 127.0.0.1 that is not Redis: one thread accepts
// connections one at a time and plays a part with each. Bounded: every wait
// has a deadline, and the destructor ends the thread.
class FakePeer {
public:
    enum class Part {
        Http,    // reads the request, answers "400 Bad Request", closes
        Ssh,     // sends its banner at once, reads, closes
        HangUp,  // closes as soon as it accepts
        Echo,    // sends back whatever it reads, until the client closes
        ProtectedMode,  // what a Redis in protected mode says to a client from another machine, then closes
    };

    explicit FakePeer(Part part) : m_part(part)
    {
        m_listener = listenOnLoopback(8, m_port);
        m_thread = std::thread([this] { serve(); });
    }
    ~FakePeer()
    {
        m_stop = true;
        m_thread.join();
        ::close(m_listener);
    }
    std::uint16_t port() const { return m_port; }
    std::string url(const std::string& credentials = {}) const { return "redis://" + credentials + "127.0.0.1:" + std::to_string(m_port); }

private:
    // Waits up to `ms` for something to read; false on a timeout or a stop.
    bool readable(int fd, int ms)
    {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, ms) == 1;
    }
    void sendAll(int fd, std::string_view data)
    {
        while (!data.empty()) {
            const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
            if (n <= 0)
                return;
            data.remove_prefix(std::size_t(n));
        }
    }
    // Reads what the client sent within `ms`; returns it ("" at EOF).
    std::string readSome(int fd, int ms)
    {
        char buf[4096];
        if (!readable(fd, ms))
            return {};
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        return n > 0 ? std::string(buf, std::size_t(n)) : std::string();
    }
    // A polite close: no more sending, then what the client still sends is
    // read and dropped (a close with unread data would be a reset, and the
    // client might never see the answer).
    void closeGracefully(int fd)
    {
        ::shutdown(fd, SHUT_WR);
        const auto start = SteadyClock::now();
        while (msSince(start) < 2000 && !readSome(fd, 100).empty()) {
        }
        ::close(fd);
    }
    void serve()
    {
        while (!m_stop) {
            if (!readable(m_listener, 50))
                continue;
            const int fd = ::accept(m_listener, nullptr, nullptr);
            if (fd < 0)
                continue;
            switch (m_part) {
            case Part::Http:
                readSome(fd, 2000);
                sendAll(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                closeGracefully(fd);
                break;
            case Part::Ssh:
                sendAll(fd, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
                readSome(fd, 2000);
                closeGracefully(fd);
                break;
            case Part::HangUp:
                ::close(fd);
                break;
            case Part::ProtectedMode:
                // Redis 7.0's words (networking.c), sent as it accepts.
                sendAll(fd, "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the "
                            "default user. In this mode connections are only accepted from the loopback interface. If you want to connect "
                            "from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected "
                            "mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis "
                            "from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet "
                            "if you do so. Use CONFIG REWRITE to make this change permanent.\r\n");
                closeGracefully(fd);
                break;
            case Part::Echo: {
                const auto start = SteadyClock::now();
                while (!m_stop && msSince(start) < 5000) {
                    const std::string got = readSome(fd, 100);
                    if (got.empty() && readable(fd, 0))
                        break;  // EOF
                    sendAll(fd, got);
                }
                ::close(fd);
                break;
            }
            }
        }
    }

    Part m_part;
    int m_listener = -1;
    std::uint16_t m_port = 0;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

} // namespace

class TestRedisConnection : public QObject {
    Q_OBJECT

    RedisServer m_server;  // shared by the tests that leave it running and unchanged

    RedisConnection connection(const std::string& url, int connectMs = 2000, int ioMs = 2000)
    {
        return RedisConnection(urlOf(url), milliseconds(connectMs), milliseconds(ioMs));
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY2(m_server.start(), qPrintable(m_server.error())); }
    void init() { QCOMPARE(QString::fromStdString(m_server.command({"FLUSHALL"}).text), QStringLiteral("OK")); }

    // ---- URLs -------------------------------------------------------------

    void urlAcceptedForms_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("unixPath");
        QTest::addColumn<QString>("user");
        QTest::addColumn<QString>("password");
        QTest::addColumn<int>("db");
        QTest::addColumn<QString>("redacted");
        auto row = [](const char* name, const char* text, const char* host, int port, const char* unixPath, const char* user, const char* password,
                      int db, const char* redacted) {
            QTest::newRow(name) << QString::fromUtf8(text) << QString::fromUtf8(host) << port << QString::fromUtf8(unixPath) << QString::fromUtf8(user)
                                << QString::fromUtf8(password) << db << QString::fromUtf8(redacted);
        };
        row("host only", "redis://127.0.0.1", "127.0.0.1", 6379, "", "", "", 0, "redis://127.0.0.1:6379");
        row("name, port, db", "redis://localhost:6380/2", "localhost", 6380, "", "", "", 2, "redis://localhost:6380/2");
        row("trailing slash", "redis://cache.internal:7000/", "cache.internal", 7000, "", "", "", 0, "redis://cache.internal:7000");
        row("password", "redis://:s3cret@10.0.0.5:6390/1", "10.0.0.5", 6390, "", "", "s3cret", 1, "redis://:***@10.0.0.5:6390/1");
        row("ACL user", "redis://alice:pw@redis-1:6379", "redis-1", 6379, "", "alice", "pw", 0, "redis://alice:***@redis-1:6379");
        row("IPv6", "redis://[::1]:6380", "::1", 6380, "", "", "", 0, "redis://[::1]:6380");
        row("IPv6, no port", "redis://:x@[2001:db8::7]/3", "2001:db8::7", 6379, "", "", "x", 3, "redis://:***@[2001:db8::7]:6379/3");
        row("percent-encoded", "redis://a%20b:p%40ss%25w%3Ard@h", "h", 6379, "", "a b", "p@ss%w:rd", 0, "redis://a%20b:***@h:6379");
        row("raw @ / : in the password", "redis://:p@ss/w:rd@h:7", "h", 7, "", "", "p@ss/w:rd", 0, "redis://:***@h:7");
        row("unix", "unix:///run/redis/redis.sock", "", 6379, "/run/redis/redis.sock", "", "", 0, "unix:///run/redis/redis.sock");
        row("unix, db", "unix:///tmp/r.sock?db=4", "", 6379, "/tmp/r.sock", "", "", 4, "unix:///tmp/r.sock?db=4");
        row("unix, password", "unix://:pw@/tmp/r.sock?db=2", "", 6379, "/tmp/r.sock", "", "pw", 2, "unix://:***@/tmp/r.sock?db=2");
        row("unix, ACL user", "unix://bob:p%2Fw@/tmp/r.sock", "", 6379, "/tmp/r.sock", "bob", "p/w", 0, "unix://bob:***@/tmp/r.sock");
    }
    void urlAcceptedForms()
    {
        QFETCH(QString, text);
        std::string why;
        const auto u = RedisUrl::parse(text.toStdString(), &why);
        QVERIFY2(u, why.c_str());
        QTEST(QString::fromStdString(u->host), "host");
        QTEST(int(u->port), "port");
        QTEST(QString::fromStdString(u->unixPath), "unixPath");
        QTEST(QString::fromStdString(u->user), "user");
        QTEST(QString::fromStdString(u->password), "password");
        QTEST(u->db, "db");
        QTEST(QString::fromStdString(u->redacted()), "redacted");
        QCOMPARE(u->isUnix(), !u->unixPath.empty());
        // The redacted form is a URL again, for the same server and user.
        const auto back = RedisUrl::parse(u->redacted(), &why);
        QVERIFY2(back, why.c_str());
        QCOMPARE(back->address(), u->address());
        QCOMPARE(back->user, u->user);
        QCOMPARE(back->db, u->db);
        QCOMPARE(back->password, u->password.empty() ? std::string() : std::string("***"));
    }

    void urlErrors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("error");
        const QString scheme = QStringLiteral("redis URL: scheme must be redis:// or unix://");
        const QString port = QStringLiteral("redis URL: port must be 1-65535");
        const QString db = QStringLiteral("redis URL: the database must be a whole number from 0 (redis://HOST:PORT/DB, unix:///PATH?db=N)");
        const QString host = QStringLiteral("redis URL: the host is not a host name or an IP address (an IPv6 address goes in [ ])");
        const QString colon = QStringLiteral(
            "redis URL: write the password with a ':' before it (redis://:PASSWORD@HOST, or redis://USER:PASSWORD@HOST for an ACL user)");
        const QString absolute = QStringLiteral("redis URL: the socket path must be absolute (unix:///path/to/redis.sock)");
        const QString afterHost = QStringLiteral("redis URL: unexpected text after the host (redis://HOST[:PORT][/DB]: the database goes in the path)");
        // The password in every row is "hunter2": no message may contain it.
        QTest::newRow("empty") << QString() << scheme;
        QTest::newRow("http") << QStringLiteral("http://:hunter2@h") << scheme;
        QTest::newRow("bare password") << QStringLiteral("hunter2") << scheme;
        QTest::newRow("upper-case scheme") << QStringLiteral("REDIS://:hunter2@h") << scheme;
        QTest::newRow("tls") << QStringLiteral("rediss://:hunter2@h")
                             << QStringLiteral("redis URL: TLS (rediss://) is not supported; use redis:// on a private network or through a tunnel, or unix://");
        QTest::newRow("no host") << QStringLiteral("redis://") << QStringLiteral("redis URL: no host (redis://HOST[:PORT][/DB])");
        QTest::newRow("no host after credentials") << QStringLiteral("redis://:hunter2@") << QStringLiteral("redis URL: no host (redis://HOST[:PORT][/DB])");
        QTest::newRow("port 0") << QStringLiteral("redis://:hunter2@h:0") << port;
        QTest::newRow("port 65536") << QStringLiteral("redis://:hunter2@h:65536") << port;
        QTest::newRow("port text") << QStringLiteral("redis://:hunter2@h:hunter2") << port;
        QTest::newRow("port empty") << QStringLiteral("redis://:hunter2@h:") << port;
        QTest::newRow("port signed") << QStringLiteral("redis://:hunter2@h:+1") << port;
        QTest::newRow("password without colon") << QStringLiteral("redis://hunter2@h") << colon;
        QTest::newRow("user, empty password") << QStringLiteral("redis://hunter2:@h")
                                              << QStringLiteral("redis URL: the password after ':' is empty (leave out \"USER:@\" entirely when the server needs no password)");
        QTest::newRow("bad escape") << QStringLiteral("redis://:hun%zzter2@h")
                                    << QStringLiteral("redis URL: a '%' in the user or password must be followed by two hex digits (write a literal % as %25)");
        QTest::newRow("escape cut short") << QStringLiteral("redis://:hunter2%4@h")
                                          << QStringLiteral("redis URL: a '%' in the user or password must be followed by two hex digits (write a literal % as %25)");
        QTest::newRow("db text") << QStringLiteral("redis://:hunter2@h/hunter2") << db;
        QTest::newRow("db negative") << QStringLiteral("redis://:hunter2@h/-1") << db;
        QTest::newRow("db too large") << QStringLiteral("redis://:hunter2@h/99999999999") << db;
        QTest::newRow("path after db") << QStringLiteral("redis://:hunter2@h/1/2")
                                       << QStringLiteral("redis URL: unexpected text after the database number (redis://HOST[:PORT][/DB])");
        QTest::newRow("query") << QStringLiteral("redis://:hunter2@h?db=1") << afterHost;
        QTest::newRow("fragment") << QStringLiteral("redis://:hunter2@h#x") << afterHost;
        QTest::newRow("unclosed IPv6") << QStringLiteral("redis://:hunter2@[::1") << QStringLiteral("redis URL: missing ']' after the IPv6 address");
        QTest::newRow("not IPv6") << QStringLiteral("redis://:hunter2@[hunter2]:1") << QStringLiteral("redis URL: the address in [ ] is not an IPv6 address");
        QTest::newRow("IPv4 in brackets") << QStringLiteral("redis://[127.0.0.1]") << QStringLiteral("redis URL: the address in [ ] is not an IPv6 address");
        QTest::newRow("after IPv6") << QStringLiteral("redis://[::1]x") << QStringLiteral("redis URL: unexpected text after the host (expected [:PORT][/DB])");
        QTest::newRow("IPv6 without brackets") << QStringLiteral("redis://:hunter2@::1:6379")
                                               << QStringLiteral("redis URL: an IPv6 address goes in [ ] (redis://[::1]:6379)");
        QTest::newRow("space in host") << QStringLiteral("redis://:hunter2@ho st") << host;
        QTest::newRow("password as host") << QStringLiteral("redis://hunter2 h") << host;
        QTest::newRow("unix relative") << QStringLiteral("unix://relative.sock") << absolute;
        QTest::newRow("unix relative with password") << QStringLiteral("unix://:hunter2@relative.sock") << absolute;
        QTest::newRow("unix no path") << QStringLiteral("unix:///") << QStringLiteral("redis URL: no socket path (unix:///path/to/redis.sock)");
        QTest::newRow("unix db text") << QStringLiteral("unix://:hunter2@/tmp/r.sock?db=x") << db;
        QTest::newRow("unix other parameter") << QStringLiteral("unix://:hunter2@/tmp/r.sock?password=hunter2")
                                              << QStringLiteral("redis URL: a unix:// URL takes one parameter, ?db=N");
        QTest::newRow("unix path too long") << QStringLiteral("unix:///") + QString(120, QLatin1Char('a'))
                                            << QStringLiteral("redis URL: the socket path is longer than a unix socket address holds (107 bytes)");
        QTest::newRow("unix password without colon") << QStringLiteral("unix://hunter2@/tmp/r.sock") << colon;
    }
    void urlErrors()
    {
        QFETCH(QString, text);
        QFETCH(QString, error);
        std::string why;
        QVERIFY(!RedisUrl::parse(text.toStdString(), &why));
        QCOMPARE(QString::fromStdString(why), error);
        QVERIFY(why.find("hunter2") == std::string::npos);
        QVERIFY(why.find('\n') == std::string::npos);
        QVERIFY(!RedisUrl::parse(text.toStdString()));  // no reason wanted: still refused
    }

    // ---- a real server ----------------------------------------------------

    void connectsAndPings()
    {
        RedisConnection c = connection(m_server.url());
        QVERIFY(!c.isConnected());
        const Outcome o = c.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        QVERIFY(c.isConnected());
        QVERIFY(c.roundTripMicros() > 0);
        Reply r;
        QVERIFY(c.run({"PING"}, r).ok());
        QCOMPARE(r.kind, Reply::Kind::Status);
        QCOMPARE(r.text, std::string("PONG"));
        QVERIFY(c.run({"ECHO", "hello"}, r).ok());
        QCOMPARE(r.kind, Reply::Kind::String);
        QCOMPARE(r.text, std::string("hello"));
        QVERIFY(c.run({"GET", "missing"}, r).ok());
        QCOMPARE(r.kind, Reply::Kind::Nil);
        QVERIFY(c.run({"RPUSH", "l", "a", "b"}, r).ok());
        QVERIFY(c.run({"LRANGE", "l", "0", "-1"}, r).ok());
        QCOMPARE(r.kind, Reply::Kind::Array);
        QCOMPARE(r.elements.size(), std::size_t(2));
        QCOMPARE(r.elements[1].text, std::string("b"));
        c.close();
        QVERIFY(!c.isConnected());
    }

    void pipelineOfTenThousandIncrsInOrder()
    {
        RedisConnection c = connection(m_server.url());
        QVERIFY(c.connect().ok());
        std::vector<Command> commands(10000, Command{"INCR", "counter"});
        std::vector<Reply> replies;
        const Outcome o = c.pipeline(commands, replies);
        QVERIFY2(o.ok(), o.message.c_str());
        QCOMPARE(replies.size(), commands.size());
        for (std::size_t i = 0; i < replies.size(); ++i) {
            QCOMPARE(replies[i].kind, Reply::Kind::Integer);
            QCOMPARE(replies[i].integer, (long long)(i + 1));
        }
        QCOMPARE(m_server.command({"GET", "counter"}).text, std::string("10000"));
        QVERIFY(c.roundTripMicros() > 0);
    }

    void argumentsAreBinarySafe()
    {
        RedisConnection c = connection(m_server.url());
        QVERIFY(c.connect().ok());
        const std::string key("k\0ey\r\n", 6);
        const std::string value("a\0b\r\nc\r\n*1\r\n$4\r\nPING\r\n", 22);
        std::string big(300 * 1024, '\0');
        for (std::size_t i = 0; i < big.size(); ++i)
            big[i] = char(i * 7 % 256);
        std::vector<Reply> replies;
        QVERIFY(c.pipeline({{"SET", key, value}, {"GET", key}, {"STRLEN", key}, {"SET", "big", big}, {"GET", "big"}}, replies).ok());
        QCOMPARE(replies[0].text, std::string("OK"));
        QCOMPARE(replies[1].kind, Reply::Kind::String);
        QCOMPARE(replies[1].text, value);
        QCOMPARE(replies[2].integer, 22LL);
        QVERIFY(replies[4].text == big);
        QCOMPARE(m_server.command({"EXISTS", key}).integer, 1LL);  // the key with its NUL, not "k"
        QCOMPARE(m_server.command({"EXISTS", "k"}).integer, 0LL);
    }

    void anErrorReplyLeavesTheRestOfThePipelineAlone()
    {
        RedisConnection c = connection(m_server.url());
        QVERIFY(c.connect().ok());
        std::vector<Reply> replies;
        const Outcome o = c.pipeline({{"SET", "a", "1"}, {"INCR", "a"}, {"NOSUCHCOMMAND", "x"}, {}, {"LPUSH", "a", "x"}, {"INCR", "a"}, {"GET", "a"}},
                                     replies);
        QVERIFY2(o.ok(), o.message.c_str());
        QCOMPARE(replies.size(), std::size_t(7));
        QCOMPARE(replies[1].integer, 2LL);
        QVERIFY(replies[2].isError("ERR"));
        QVERIFY2(replies[2].text.find("unknown command") != std::string::npos, replies[2].text.c_str());
        QVERIFY(replies[3].isError("ERR"));  // an empty command is refused here, never sent
        QCOMPARE(replies[3].text, std::string("ERR empty command (not sent)"));
        QVERIFY(replies[4].isError("WRONGTYPE"));
        QCOMPARE(replies[5].integer, 3LL);
        QCOMPARE(replies[6].text, std::string("3"));
        QVERIFY(c.isConnected());
        Reply r;
        QVERIFY(c.run({"PING"}, r).ok());
        QCOMPARE(r.text, std::string("PONG"));
    }

    void selectsTheDatabaseOfTheUrl()
    {
        RedisConnection three = connection(m_server.url() + "/3");
        QVERIFY(three.connect().ok());
        Reply r;
        QVERIFY(three.run({"SET", "k", "in 3"}, r).ok());
        RedisConnection zero = connection(m_server.url());
        QVERIFY(zero.connect().ok());
        QVERIFY(zero.run({"GET", "k"}, r).ok());
        QCOMPARE(r.kind, Reply::Kind::Nil);
        QVERIFY(three.run({"GET", "k"}, r).ok());
        QCOMPARE(r.text, std::string("in 3"));

        RedisConnection beyond = connection(m_server.url() + "/99");  // the default is 16 databases
        const Outcome o = beyond.connect();
        QCOMPARE(o.kind, Failure::Server);
        QVERIFY2(o.message.starts_with("redis at 127.0.0.1:" + std::to_string(m_server.port()) + ": SELECT 99 failed: ERR DB index is out of range"),
                 o.message.c_str());
        QVERIFY(!beyond.isConnected());
    }

    void passwords()
    {
        RedisServer server;
        QVERIFY2(server.start({QStringLiteral("--requirepass"), QStringLiteral("s3cr3t")}), qPrintable(server.error()));
        const std::string where = "redis at 127.0.0.1:" + std::to_string(server.port()) + ": ";

        RedisConnection none = connection(server.url());
        Outcome o = none.connect();
        QCOMPARE(o.kind, Failure::Auth);
        QCOMPARE(o.message, where + "the server requires a password (add it to --redis: redis://:PASSWORD@HOST:PORT)");

        RedisConnection wrong = connection("redis://:wr0ng-pw@127.0.0.1:" + std::to_string(server.port()));
        o = wrong.connect();
        QCOMPARE(o.kind, Failure::Auth);
        QCOMPARE(o.message, where + "authentication failed (check the password in --redis)");
        QVERIFY(!wrong.isConnected());

        RedisConnection right = connection("redis://:s3cr3t@127.0.0.1:" + std::to_string(server.port()));
        o = right.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        Reply r;
        QVERIFY(right.run({"SET", "k", "v"}, r).ok());
        QCOMPARE(r.text, std::string("OK"));

        // A password for a server that has none.
        RedisConnection extra = connection("redis://:s3cr3t@127.0.0.1:" + std::to_string(m_server.port()));
        o = extra.connect();
        QCOMPARE(o.kind, Failure::Auth);
        QCOMPARE(o.message, "redis at 127.0.0.1:" + std::to_string(m_server.port()) +
                                ": a password was given but the server has none configured (remove it from --redis, or set requirepass on the server)");

        // An ACL user (Redis 6+).
        QCOMPARE(server.command({"ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all"}).text, std::string("OK"));
        RedisConnection alice = connection("redis://alice:pw@127.0.0.1:" + std::to_string(server.port()) + "/1");
        o = alice.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        QVERIFY(alice.run({"ACL", "WHOAMI"}, r).ok());
        QCOMPARE(r.text, std::string("alice"));
        RedisConnection notAlice = connection("redis://alice:nope@127.0.0.1:" + std::to_string(server.port()));
        o = notAlice.connect();
        QCOMPARE(o.kind, Failure::Auth);
        QCOMPARE(o.message, where + "authentication failed (check the user and password in --redis)");

        // A user without a permission: the error reply, then its advice.
        QCOMPARE(server.command({"ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@all", "-flushall"}).text, std::string("OK"));
        RedisConnection bob = connection("redis://bob:pw@127.0.0.1:" + std::to_string(server.port()));
        QVERIFY(bob.connect().ok());
        QVERIFY(bob.run({"FLUSHALL"}, r).ok());
        QVERIFY(r.isError("NOPERM"));
        o = bob.errorOutcome(r);
        QCOMPARE(o.kind, Failure::Server);
        QVERIFY2(o.message.ends_with("(the user in --redis lacks a permission: grant it with ACL SETUSER)"), o.message.c_str());
    }

    void peersThatAreNotRedis_data()
    {
        QTest::addColumn<int>("part");
        QTest::addColumn<QString>("message");  // after "redis at 127.0.0.1:PORT: "
        QTest::newRow("HTTP server") << int(FakePeer::Part::Http)
                                     << QStringLiteral("this is not a Redis server (Protocol error, got \"H\" as reply type byte); check the host and port in --redis");
        QTest::newRow("SSH server") << int(FakePeer::Part::Ssh)
                                    << QStringLiteral("this is not a Redis server (Protocol error, got \"S\" as reply type byte); check the host and port in --redis");
        QTest::newRow("hangs up") << int(FakePeer::Part::HangUp)
                                  << QStringLiteral("the peer hung up without answering; is it a Redis server? (check the host and port in --redis)");
        // An echo returns AUTH with the password as a well-formed array: not an answer Redis gives.
        QTest::newRow("echo") << int(FakePeer::Part::Echo)
                              << QStringLiteral("the peer answered AUTH with something a Redis server does not send; check the host and port in --redis");
    }
    void peersThatAreNotRedis()
    {
        QFETCH(int, part);
        QFETCH(QString, message);
        FakePeer peer{FakePeer::Part(part)};
        RedisConnection c = connection(peer.url(":hunter2@"), 2000, 2000);
        const auto start = SteadyClock::now();
        const Outcome o = c.connect();
        QCOMPARE(o.kind, Failure::NotRedis);
        QCOMPARE(QString::fromStdString(o.message), QStringLiteral("redis at 127.0.0.1:%1: ").arg(peer.port()) + message);
        QVERIFY(o.message.find("hunter2") == std::string::npos);
        QVERIFY(!c.isConnected());
        QVERIFY2(msSince(start) < 1500, "a peer that answered must not wait for the I/O timeout");
    }

    // A Redis in protected mode refuses a node on another machine whatever
    // it sends: the node says that, not that it gave a password too many.
    void aServerInProtectedModeIsNamedAsSuch()
    {
        for (const std::string credentials : {"", ":hunter2@"}) {
            FakePeer peer{FakePeer::Part::ProtectedMode};
            RedisConnection c = connection(peer.url(credentials), 2000, 2000);
            const Outcome o = c.connect();
            QCOMPARE(o.kind, Failure::Auth);
            QCOMPARE(o.message, "redis at 127.0.0.1:" + std::to_string(peer.port())
                                    + ": the server is in protected mode and refuses connections from other machines because it has no password: "
                                      "set one on it (requirepass, or an ACL user) and give it in --redis");
        }
    }

    void nothingListeningIsUnreachableAtOnce()
    {
        const std::uint16_t port = freeLoopbackPort();
        RedisConnection c = connection("redis://:hunter2@127.0.0.1:" + std::to_string(port), 3000, 3000);
        auto start = SteadyClock::now();
        Outcome o = c.connect();
        QCOMPARE(o.kind, Failure::Unreachable);
        QVERIFY2(msSince(start) < 1000, "a refused connect is known at once");
        QVERIFY2(o.message.starts_with("redis at 127.0.0.1:" + std::to_string(port) + ": cannot connect ("), o.message.c_str());
        QVERIFY(o.message.ends_with("); is redis-server running there? (check --redis)"));
        QVERIFY(o.message.find("hunter2") == std::string::npos);

        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("none.sock")).toStdString();
        RedisConnection u = connection("unix://" + path, 3000, 3000);
        start = SteadyClock::now();
        o = u.connect();
        QCOMPARE(o.kind, Failure::Unreachable);
        QVERIFY(msSince(start) < 1000);
        QVERIFY2(o.message.starts_with("redis at " + path + ": cannot connect ("), o.message.c_str());

        // Not connected: every call says so at once, without touching a socket.
        std::vector<Reply> replies;
        o = c.pipeline({{"PING"}}, replies);
        QCOMPARE(o.kind, Failure::Unreachable);
        QCOMPARE(o.message, "redis at 127.0.0.1:" + std::to_string(port) + ": not connected");
        QVERIFY(replies.empty());
        ServerTime t;
        QCOMPARE(c.time(t).kind, Failure::Unreachable);
    }

    // A listener whose accept queue is full and that never accepts: the
    // kernel drops further SYNs, so the connect hangs until its timeout.
    void aConnectThatHangsTimesOut()
    {
        std::uint16_t port = 0;
        const int listener = listenOnLoopback(0, port);
        QVERIFY(listener >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        std::vector<int> fillers;
        for (int i = 0; i < 4; ++i) {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
            fillers.push_back(fd);
        }
        QTest::qWait(50);
        RedisConnection c = connection("redis://127.0.0.1:" + std::to_string(port), 300, 2000);
        const auto start = SteadyClock::now();
        const Outcome o = c.connect();
        const long long took = msSince(start);
        for (int fd : fillers)
            ::close(fd);
        ::close(listener);
        QCOMPARE(o.kind, Failure::Timeout);
        QVERIFY2(took >= 290 && took < 1500, qPrintable(QString::number(took)));
        QCOMPARE(o.message, "redis at 127.0.0.1:" + std::to_string(port) +
                                ": no connection within 300 ms (is the host up, and the port not filtered by a firewall?)");
    }

    void aStoppedServerTimesOutAndAResumedOneTakesAReconnect()
    {
        RedisServer server;
        QVERIFY2(server.start(), qPrintable(server.error()));
        RedisConnection c = connection(server.url(), 1000, 300);
        QVERIFY(c.connect().ok());
        server.pause();
        std::vector<Reply> replies;
        auto start = SteadyClock::now();
        Outcome o = c.pipeline({{"INCR", "k"}, {"PING"}}, replies);
        long long took = msSince(start);
        QCOMPARE(o.kind, Failure::Timeout);
        QVERIFY2(took >= 290 && took < 1500, qPrintable(QString::number(took)));
        QCOMPARE(o.message, "redis at 127.0.0.1:" + std::to_string(server.port()) + ": no reply within 300 ms (is the server stopped or overloaded?)");
        QVERIFY(replies.empty());
        QVERIFY(!c.isConnected());
        QCOMPARE(c.pipeline({{"PING"}}, replies).kind, Failure::Unreachable);  // closed: no reuse of a half-read stream

        // Its kernel still completes the TCP handshake: only the PING tells.
        start = SteadyClock::now();
        o = c.connect();
        took = msSince(start);
        QCOMPARE(o.kind, Failure::Timeout);
        QVERIFY2(took >= 290 && took < 1500, qPrintable(QString::number(took)));

        server.resume();
        o = c.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        Reply r;
        QVERIFY(c.run({"PING"}, r).ok());
        QCOMPARE(r.text, std::string("PONG"));
    }

    void aKilledServerFailsTheNextCallAndARestartedOneConnects()
    {
        RedisServer server;
        QVERIFY2(server.start(), qPrintable(server.error()));
        RedisConnection c = connection(server.url(), 1000, 1000);
        QVERIFY(c.connect().ok());
        Reply r;
        QVERIFY(c.run({"SET", "k", "v"}, r).ok());
        server.kill();
        Outcome o = c.run({"GET", "k"}, r);
        QCOMPARE(o.kind, Failure::Unreachable);
        QVERIFY2(o.message.starts_with("redis at 127.0.0.1:" + std::to_string(server.port()) + ": "), o.message.c_str());
        QVERIFY(!c.isConnected());
        QCOMPARE(c.connect().kind, Failure::Unreachable);  // nothing listens now

        QVERIFY2(server.restart(), qPrintable(server.error()));
        o = c.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        QVERIFY(c.run({"GET", "k"}, r).ok());
        QCOMPARE(r.kind, Reply::Kind::Nil);  // a restarted server is empty
    }

    // Writing megabytes to a server that is gone: the kernel answers with
    // EPIPE and SIGPIPE, whose default action would end this process.
    void writingToAGoneServerDoesNotRaiseSigpipe()
    {
        RedisServer server;
        QVERIFY2(server.start(), qPrintable(server.error()));
        RedisConnection c = connection(server.url(), 1000, 2000);
        QVERIFY(c.connect().ok());
        server.kill();
        const std::string value(64 * 1024, 'x');
        std::vector<Command> commands(256, Command{"SET", "k", value});  // 16 MB, more than the socket buffers hold
        std::vector<Reply> replies;
        const Outcome o = c.pipeline(commands, replies);
        QCOMPARE(o.kind, Failure::Unreachable);
        QVERIFY(!c.isConnected());
        sigset_t pending;
        sigpending(&pending);
        QVERIFY(!sigismember(&pending, SIGPIPE));
    }

    void scriptsSurviveAnEmptiedScriptCache()
    {
        RedisConnection c = connection(m_server.url());
        QVERIFY(c.connect().ok());
        Script incrBy("return redis.call('INCRBY', KEYS[1], ARGV[1])");
        QVERIFY(incrBy.sha().empty());
        std::vector<Reply> replies;
        QVERIFY(c.pipeline({Command::eval(incrBy, {"k"}, {"2"}), {"GET", "k"}}, replies).ok());
        QCOMPARE(replies[0].integer, 2LL);
        QCOMPARE(replies[1].text, std::string("2"));
        QCOMPARE(incrBy.sha(), m_server.command({"SCRIPT", "LOAD", incrBy.source()}).text);
        QCOMPARE(m_server.command({"SCRIPT", "EXISTS", incrBy.sha()}).elements.at(0).integer, 1LL);

        QCOMPARE(m_server.command({"SCRIPT", "FLUSH"}).text, std::string("OK"));
        QCOMPARE(m_server.command({"SCRIPT", "EXISTS", incrBy.sha()}).elements.at(0).integer, 0LL);
        const Outcome o = c.pipeline({Command::eval(incrBy, {"k"}, {"3"}), {"GET", "k"}, Command::eval(incrBy, {"k"}, {"4"})}, replies);
        QVERIFY2(o.ok(), o.message.c_str());
        QCOMPARE(replies[0].kind, Reply::Kind::Integer);
        QCOMPARE(replies[0].integer, 5LL);
        // The GET ran while the script runs waited for their reload: it
        // saw neither (the documented order of a retry).
        QCOMPARE(replies[1].text, std::string("2"));
        QCOMPARE(replies[2].integer, 9LL);
        QCOMPARE(m_server.command({"SCRIPT", "EXISTS", incrBy.sha()}).elements.at(0).integer, 1LL);
        QCOMPARE(m_server.command({"GET", "k"}).text, std::string("9"));

        // A script that does not compile: its error is its reply.
        Script broken("return +");
        QVERIFY(c.pipeline({Command::eval(broken, {}, {}), {"PING"}}, replies).ok());
        QVERIFY(replies[0].isError("ERR"));
        QVERIFY2(replies[0].text.find("Error compiling script") != std::string::npos, replies[0].text.c_str());
        QCOMPARE(replies[1].text, std::string("PONG"));
        QVERIFY(broken.sha().empty());
        QVERIFY(c.isConnected());
    }

    void errorRepliesBecomeOutcomesThatSayWhatToDo()
    {
        RedisServer server;
        QVERIFY2(server.start({QStringLiteral("--maxmemory"), QStringLiteral("1mb"), QStringLiteral("--maxmemory-policy"), QStringLiteral("noeviction")}),
                 qPrintable(server.error()));
        const std::string where = "redis at 127.0.0.1:" + std::to_string(server.port()) + ": ";
        RedisConnection c = connection(server.url());
        QVERIFY(c.connect().ok());
        // Fill it: at most 100 x 100 kB.
        const std::string value(100 * 1024, 'v');
        Reply r;
        for (int i = 0; i < 100 && !r.isError(); ++i)
            QVERIFY(c.run({"SET", "k" + std::to_string(i), value}, r).ok());
        QVERIFY2(r.isError("OOM"), r.text.c_str());
        Outcome o = c.errorOutcome(r);
        QCOMPARE(o.kind, Failure::Server);
        QCOMPARE(o.message, where + "the server answered " + r.text + " (the server reached its maxmemory: raise maxmemory or give it more memory)");
        QVERIFY(c.isConnected());

        // A replica (of a primary that is not there) refuses writes.
        QCOMPARE(server.command({"FLUSHALL"}).text, std::string("OK"));
        QCOMPARE(server.command({"REPLICAOF", "127.0.0.1", std::to_string(freeLoopbackPort())}).text, std::string("OK"));
        QVERIFY(c.run({"SET", "k", "v"}, r).ok());
        QVERIFY2(r.isError("READONLY"), r.text.c_str());
        o = c.errorOutcome(r);
        QCOMPARE(o.kind, Failure::Server);
        QVERIFY2(o.message.ends_with(" (this server is a read-only replica: point --redis at the primary)"), o.message.c_str());
        QCOMPARE(server.command({"REPLICAOF", "NO", "ONE"}).text, std::string("OK"));

        // A sha the server never saw, sent by hand.
        QVERIFY(c.run({"EVALSHA", std::string(40, 'a'), "0"}, r).ok());
        QVERIFY(r.isError("NOSCRIPT"));
        QCOMPARE(c.errorOutcome(r).kind, Failure::Server);

        // What the server says (a script's error here; an impostor's, anything)
        // is shown with the bytes a terminal obeys as visible escapes
        // (Core::printable): ESC, BEL, a right-to-left override, a C1 CSI.
        QVERIFY(c.run({"EVAL", "return redis.error_reply('ERR \\27]0;pwned\\7 \\226\\128\\174 \\194\\155 caf\\195\\169')", "0"}, r).ok());
        QVERIFY2(r.isError("ERR"), r.text.c_str());
        o = c.errorOutcome(r);
        QCOMPARE(QString::fromStdString(o.message),
                 QString::fromStdString(where + "the server answered ERR \\x1B]0;pwned\\x07 \\u{202E} \\u{9B} caf\xc3\xa9"));

        // An error text that carries the password never shows it.
        RedisConnection withPassword = connection("redis://:hunter2@127.0.0.1:1");
        Reply echoed;
        echoed.kind = Reply::Kind::Error;
        echoed.text = "ERR something about hunter2\r\nand a second line";
        o = withPassword.errorOutcome(echoed);
        QCOMPARE(o.message, "redis at 127.0.0.1:1: the server answered ERR something about ***\\r\\nand a second line");
    }

    void unixSocket()
    {
        RedisServer server;
        QVERIFY2(server.start({QStringLiteral("--unixsocket"), server.unixSocketPath(), QStringLiteral("--unixsocketperm"), QStringLiteral("700")}),
                 qPrintable(server.error()));
        RedisConnection c = connection("unix://" + server.unixSocketPath().toStdString() + "?db=2");
        const Outcome o = c.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        Reply r;
        QVERIFY(c.run({"SET", "k", "over unix"}, r).ok());
        QVERIFY(c.run({"CLIENT", "INFO"}, r).ok());
        QVERIFY2(r.text.find(" db=2 ") != std::string::npos, r.text.c_str());
        QVERIFY2(r.text.find("laddr=" + server.unixSocketPath().toStdString()) != std::string::npos, r.text.c_str());
        QCOMPARE(server.command({"GET", "k"}).kind, Reply::Kind::Nil);  // the fixture is on db 0
    }

    void ipv6Loopback()
    {
        RedisServer server;
        QVERIFY2(server.start({QStringLiteral("--bind"), QStringLiteral("127.0.0.1"), QStringLiteral("::1")}), qPrintable(server.error()));
        RedisConnection c = connection("redis://[::1]:" + std::to_string(server.port()));
        const Outcome o = c.connect();
        QVERIFY2(o.ok(), o.message.c_str());
        Reply r;
        QVERIFY(c.run({"CLIENT", "INFO"}, r).ok());
        QVERIFY2(r.text.find("laddr=[::1]:" + std::to_string(server.port())) != std::string::npos, r.text.c_str());
    }

    void serverTime()
    {
        RedisConnection c = connection(m_server.url());
        QVERIFY(c.connect().ok());
        ServerTime t;
        const auto before = std::chrono::system_clock::now();
        const Outcome o = c.time(t);
        const auto after = std::chrono::system_clock::now();
        QVERIFY2(o.ok(), o.message.c_str());
        const auto micros = [](std::chrono::system_clock::time_point p) {
            return std::chrono::duration_cast<std::chrono::microseconds>(p.time_since_epoch()).count();
        };
        // The same machine's wall clock, in microseconds.
        QVERIFY2(t.serverMicros >= micros(before) - 1000 && t.serverMicros <= micros(after) + 1000, qPrintable(QString::number(t.serverMicros)));
        QVERIFY(t.sentAt <= t.repliedAt);
        QVERIFY(c.roundTripMicros() > 0);
        QVERIFY(c.roundTripMicros() <= std::chrono::duration_cast<std::chrono::microseconds>(t.repliedAt - t.sentAt).count());
    }
};

QTEST_GUILESS_MAIN(TestRedisConnection)
#include "test_redis_connection.moc"
