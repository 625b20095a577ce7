// SPDX-License-Identifier: GPL-3.0-or-later
// Floodgate as a daemon, through the built binary: --check-config on a good
// and on a broken configuration file (one line naming the file and the
// line, exit 2, nothing started); SIGHUP reopens limiter.log after it was
// moved (headless and console), the same through the real logrotate with
// the shipped /etc/logrotate.d/floodgate; SIGHUP with an edited
// configuration file applies a live setting, names one that needs a
// restart, and keeps the running configuration when the file is broken;
// SIGTERM still stops with 0; no colour codes on stderr when it is no terminal.
// A configuration path that is no regular file (a FIFO, a folder) is
// refused at once, by --check-config and by SIGHUP (which keeps serving and
// still stops on SIGTERM); a file over the size bound is refused in bounded
// memory; a long or NUL-holding value is quoted short and escaped.
#include <QtTest>

#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <chrono>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace FloodgateTest;

namespace {

// The one client every test refuses: on the blocklist of the test's database.
constexpr const char* BLOCKED = "127.0.0.9";

bool writeFile(const QString& path, const QByteArray& text)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    f.write(text);
    return f.flush();
}

QByteArray readFile(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Waits (at most `ms`) until the file holds `needle`: limiter.log's writer
// writes a refusal within a few milliseconds.
bool fileGets(const QString& path, const QByteArray& needle, int ms = 3000)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
        if (readFile(path).contains(needle))
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// Reads the child's stderr (accumulated in *seen) until it holds `needle`.
bool stderrGets(Child& c, QString* seen, const QString& needle, int ms = 5000)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
        c.proc.waitForReadyRead(20);
        *seen += QString::fromUtf8(c.proc.readAllStandardError());
        if (seen->contains(needle))
            return true;
    }
    return false;
}

// A database with BLOCKED on its blocklist, made by the real command.
bool blockedDatabase(const QString& db)
{
    QString err;
    const int code = runToEnd({QStringLiteral("block"), QString::fromLatin1(BLOCKED), QStringLiteral("--config"), QStringLiteral("off"),
                               QStringLiteral("--db"), db},
                              &err);
    if (code != 0)
        qWarning("block: %s", qPrintable(err));
    return code == 0;
}

QStringList serveArgs(const QString& db, const QString& log, bool headless = true)
{
    QStringList args{QStringLiteral("--db"), db, QStringLiteral("--log"), log, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                     QStringLiteral("--admin"), QStringLiteral("off"), QStringLiteral("--threads"), QStringLiteral("2")};
    if (headless)
        args.prepend(QStringLiteral("--headless"));
    return args;
}

int refusedStatus(std::uint16_t port)
{
    const auto r = fetch(port, get("/after-sighup"), 3000, BLOCKED);
    return r ? r->status : 0;
}

// `floodgate ARGS` as a child of its own, so its peak memory can be read
// (wait4's ru_maxrss, KiB): its exit code (-1 when it had to be killed at
// `timeoutMs`), its stderr, how long it ran.
struct Measured {
    int code = -1;
    QString err;
    qint64 ms = 0;
    long maxRssKiB = 0;
};

Measured runMeasured(const QStringList& args, int timeoutMs = 5000)
{
    Measured m;
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC) != 0)
        return m;
    std::vector<QByteArray> words{QByteArray(FLOODGATE_BINARY)};
    for (const QString& a : args)
        words.push_back(a.toLocal8Bit());
    std::vector<char*> argv;
    for (QByteArray& w : words)
        argv.push_back(w.data());
    argv.push_back(nullptr);
    std::vector<QByteArray> env;
    for (const QString& e : childEnvironment().toStringList())
        env.push_back(e.toLocal8Bit());
    std::vector<char*> envp;
    for (QByteArray& e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);
    QElapsedTimer clock;
    clock.start();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, FLOODGATE_BINARY, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipeFds[1]);
    if (spawned != 0) {
        ::close(pipeFds[0]);
        return m;
    }
    QByteArray err;
    bool killed = false;
    for (;;) {
        const qint64 left = timeoutMs - clock.elapsed();
        if (left <= 0) {
            ::kill(pid, SIGKILL);
            killed = true;
            break;
        }
        pollfd p{pipeFds[0], POLLIN, 0};
        if (::poll(&p, 1, int(left)) <= 0)
            continue;
        char buf[65536];
        const ssize_t n = ::read(pipeFds[0], buf, sizeof buf);
        if (n <= 0)
            break;  // the child closed stderr: it has ended
        if (err.size() < (1 << 20))
            err.append(buf, int(n));
    }
    ::close(pipeFds[0]);
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    m.ms = clock.elapsed();
    m.err = QString::fromUtf8(err);
    m.maxRssKiB = usage.ru_maxrss;
    m.code = !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return m;
}

QString findLogrotate()
{
    QString path = QStandardPaths::findExecutable(QStringLiteral("logrotate"));
    if (path.isEmpty())
        path = QStandardPaths::findExecutable(QStringLiteral("logrotate"), {QStringLiteral("/usr/sbin"), QStringLiteral("/sbin")});
    return path;
}

} // namespace

class TestDaemon : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void checkConfigAcceptsAGoodFileAndStartsNothing()
    {
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        const QString db = dir.filePath(QStringLiteral("data/floodgate.db"));
        QVERIFY(writeFile(conf, "# the service\nlisten = \"127.0.0.1:0\"\nadmin = off\ndb = " + db.toUtf8()
                                    + "\ntrusted-proxy = 10.0.0.0/8, \"192.168.0.0/16\"\ntrusted-proxy = 2001:db8::/32\ndry-run = true\n"));
        QString err, out;
        QCOMPARE(runToEnd({QStringLiteral("--check-config"), QStringLiteral("--config"), conf}, &err, &out), 0);
        QCOMPARE(out, QStringLiteral("configuration ok: %1 and the command line\n").arg(conf));
        QCOMPARE(err, QString());
        QVERIFY(!QFile::exists(db));  // nothing opened, nothing created
    }

    void checkConfigRefusesABrokenFileInOneLine_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("message");  // after "floodgate: FILE:"
        QTest::newRow("unknown key") << QByteArray("listen = 127.0.0.1:0\n\nlisen = 127.0.0.1:1\n")
                                     << QStringLiteral("3: unknown setting \"lisen\" (the settings are the long options without --; see floodgate --help)");
        QTest::newRow("bad value") << QByteArray("# comment\nlisten = 127.0.0.1:99999\n")
                                   << QStringLiteral("2: listen 127.0.0.1:99999: \"99999\" is not a port (0-65535)");
        QTest::newRow("bad CIDR, second of a list")
            << QByteArray("trusted-proxy = 10.0.0.0/8\ntrusted-proxy = 10.0.0.0/33\n") << QStringLiteral("2: trusted-proxy 10.0.0.0/33: ");
        QTest::newRow("syntax") << QByteArray("listen 127.0.0.1:0\n") << QStringLiteral("1: expected KEY = VALUE, such as listen = \"0.0.0.0:8080\"");
        QTest::newRow("section") << QByteArray("[server]\n") << QStringLiteral("1: sections are not used: every line is KEY = VALUE");
        QTest::newRow("twice") << QByteArray("threads = 2\nthreads = 3\n") << QStringLiteral("2: threads is set twice (first on line 1)");
        QTest::newRow("two values") << QByteArray("listen = 127.0.0.1:1 127.0.0.1:2\n")
                                    << QStringLiteral("1: listen takes one value, not 2 (quote a value that holds a comma or a space)");
        QTest::newRow("flag") << QByteArray("dry-run = sometimes\n") << QStringLiteral("1: dry-run is true or false");
        QTest::newRow("not a setting") << QByteArray("headless = true\n")
                                       << QStringLiteral("1: \"headless\" cannot be set in a configuration file (give --headless on the command line)");
        // A NUL is told escaped, with what follows it (printf would stop there).
        QTest::newRow("NUL in a value") << QByteArray("listen = 127.0.0.1:99999\0junk\n", 30)
                                        << QStringLiteral("1: listen 127.0.0.1:99999\\x00junk: a value may not hold a NUL byte");
        // A long value or key is quoted by its first 48 bytes and its length.
        QTest::newRow("long value") << "node-name = " + QByteArray(100'000, 'x') + "\n"
                                    << QStringLiteral("1: node-name %1… (100000 bytes): a value is at most 4096 bytes").arg(QString(48, QLatin1Char('x')));
        QTest::newRow("long key") << QByteArray(100'000, 'k') + " = 1\n"
                                  << QStringLiteral("1: unknown setting \"%1…\" (100000 bytes) (the settings are").arg(QString(48, QLatin1Char('k')));
        QTest::newRow("https upstream") << QByteArray("upstream = https://127.0.0.1:9000\n") << QStringLiteral("1: upstream https://127.0.0.1:9000: ");
    }
    void checkConfigRefusesABrokenFileInOneLine()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        QVERIFY(writeFile(conf, text));
        for (const QStringList& args : {QStringList{QStringLiteral("--check-config"), QStringLiteral("--config"), conf},
                                        QStringList{QStringLiteral("--headless"), QStringLiteral("--config"), conf}}) {
            QString err, out;
            QCOMPARE(runToEnd(args, &err, &out), 2);
            QVERIFY2(err.startsWith(QStringLiteral("floodgate: ") + conf + QLatin1Char(':') + message), qPrintable(err));
            QCOMPARE(err.count(QLatin1Char('\n')), 1);
            QVERIFY2(err.size() < 300, qPrintable(err.left(300)));  // a bad value is quoted short
            QVERIFY(!err.contains(QLatin1Char('\x1b')));  // no colour codes: stderr is a pipe here
            QCOMPARE(out, QString());                    // nothing started, no start-up lines
        }
    }

    void checkConfigSeesTheCommandLineWin()
    {
        // The file's bad listen is not used when the command line gives one;
        // a bad value on the command line is told as the command line's.
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:99999\n"));
        QString err, out;
        QCOMPARE(runToEnd({QStringLiteral("--check-config"), QStringLiteral("--config"), conf, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")},
                          &err, &out),
                 0);
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:8080\nadmin = 127.0.0.1:9090\n"));
        QCOMPARE(runToEnd({QStringLiteral("--check-config"), QStringLiteral("--config"), conf, QStringLiteral("--admin"), QStringLiteral("127.0.0.1:8080")},
                          &err, &out),
                 2);
        QCOMPARE(err, QStringLiteral("floodgate: --listen 127.0.0.1:8080 and --admin 127.0.0.1:8080 cannot share a port: give the admin API another "
                                     "(or --admin off)\n"));
        QCOMPARE(runToEnd({QStringLiteral("--check-config"), QStringLiteral("--config"), dir.filePath(QStringLiteral("missing.conf"))}, &err, &out), 2);
        QCOMPARE(err, QStringLiteral("floodgate: --config %1: no such file\n").arg(dir.filePath(QStringLiteral("missing.conf"))));
    }

    // Only a regular file is a configuration file: a FIFO (open() would wait
    // for a writer) or a folder is refused at once, in one line naming it,
    // by --check-config and by start-up alike.
    void whatIsNoRegularFileIsRefusedAtOnce_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::newRow("FIFO") << QStringLiteral("a FIFO");
        QTest::newRow("folder") << QStringLiteral("a directory");
    }
    void whatIsNoRegularFileIsRefusedAtOnce()
    {
        QFETCH(QString, kind);
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        if (kind == QStringLiteral("a FIFO"))
            QCOMPARE(::mkfifo(QFile::encodeName(conf).constData(), 0600), 0);
        else
            QVERIFY(QDir().mkdir(conf));
        for (const QStringList& args : {QStringList{QStringLiteral("--check-config"), QStringLiteral("--config"), conf},
                                        QStringList{QStringLiteral("--headless"), QStringLiteral("--config"), conf, QStringLiteral("--listen"),
                                                    QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"), QStringLiteral("off")}}) {
            const Measured m = runMeasured(args);
            QVERIFY2(m.ms < 2000, qPrintable(QStringLiteral("%1 ms (killed: %2)").arg(m.ms).arg(m.code == -1)));
            QCOMPARE(m.code, 2);
            QCOMPARE(m.err, QStringLiteral("floodgate: --config %1: not a regular file (%2)\n").arg(conf, kind));
        }
        // --help is still the help, at once.
        const Measured help = runMeasured({QStringLiteral("--config"), conf, QStringLiteral("--help")});
        QVERIFY2(help.ms < 2000, qPrintable(QString::number(help.ms)));
        QCOMPARE(help.code, 0);
        QCOMPARE(help.err, QString());
    }

    // A configuration file is a few lines: one over the bound (4 MiB) is
    // refused by its size, before it is read, so a 32 MiB line costs no
    // memory (each byte of it used to cost ten).
    void aFileOverTheBoundIsRefusedInBoundedMemory()
    {
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        QVERIFY(writeFile(conf, "node-name = web-1\n"));
        const Measured small = runMeasured({QStringLiteral("--check-config"), QStringLiteral("--config"), conf});
        QVERIFY2(small.code == 0, qPrintable(small.err));

        const qint64 bytes = 32 * 1024 * 1024;
        {
            QFile f(conf);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write("node-name = ");
            const QByteArray chunk(1024 * 1024, 'x');
            while (f.size() + chunk.size() < bytes)
                f.write(chunk);
            f.write(QByteArray(int(bytes - f.size() - 1), 'x') + "\n");
            QVERIFY(f.flush());
            QCOMPARE(f.size(), bytes);
        }
        const Measured big = runMeasured({QStringLiteral("--check-config"), QStringLiteral("--config"), conf});
        QCOMPARE(big.code, 2);
        QCOMPARE(big.err, QStringLiteral("floodgate: --config %1: 33554432 bytes, over the 4 MiB a configuration file may hold\n").arg(conf));
        QVERIFY2(big.ms < 2000, qPrintable(QString::number(big.ms)));
        QVERIFY2(big.maxRssKiB < small.maxRssKiB + 16 * 1024,
                 qPrintable(QStringLiteral("%1 KiB, %2 KiB with a small file").arg(big.maxRssKiB).arg(small.maxRssKiB)));
    }

    void commandsTakeTheDatabaseFromTheFile()
    {
        // An operator's `floodgate block ADDRESS` on the service's database:
        // db from the file, the file's serving settings left to the service.
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        const QString db = dir.filePath(QStringLiteral("service.db"));
        QVERIFY(writeFile(conf, "listen = 0.0.0.0:8080\nthreads = 4\ndb = " + db.toUtf8() + "\n"));
        QString err, out;
        QCOMPARE(runToEnd({QStringLiteral("block"), QStringLiteral("203.0.113.7"), QStringLiteral("--config"), conf}, &err, &out), 0);
        QVERIFY2(out.contains(QStringLiteral("on ") + db), qPrintable(out));
        QCOMPARE(runToEnd({QStringLiteral("--config"), conf, QStringLiteral("lists"), QStringLiteral("show"), QStringLiteral("blocklist")}, &err, &out), 0);
        QVERIFY2(out.contains(QStringLiteral("203.0.113.7/32")), qPrintable(out));
        // --db on the command line wins.
        const QString other = dir.filePath(QStringLiteral("other.db"));
        QCOMPARE(runToEnd({QStringLiteral("block"), QStringLiteral("203.0.113.8"), QStringLiteral("--config"), conf, QStringLiteral("--db"), other}, &err, &out),
                 0);
        QVERIFY2(out.contains(QStringLiteral("on ") + other), qPrintable(out));
        // A serving option typed on the command line is still refused for a command.
        QCOMPARE(runToEnd({QStringLiteral("--config"), conf, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:1"), QStringLiteral("block"),
                           QStringLiteral("203.0.113.9")},
                          &err, &out),
                 2);
        QCOMPARE(err, QStringLiteral("floodgate: --listen does not apply to floodgate block (see floodgate block --help)\n"));
    }

    void sighupReopensTheLimiterLog_data()
    {
        QTest::addColumn<bool>("headless");
        QTest::newRow("headless") << true;
        QTest::newRow("console") << false;
    }
    void sighupReopensTheLimiterLog()
    {
        QFETCH(bool, headless);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString log = dir.filePath(QStringLiteral("limiter.log"));
        const QString moved = log + QStringLiteral(".1");
        QVERIFY(blockedDatabase(db));
        QProcessEnvironment env = childEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        Child c;
        QVERIFY(c.start(serveArgs(db, log, headless) << QStringLiteral("--config") << QStringLiteral("off"), env));
        QCOMPARE(refusedStatus(c.port), 403);
        QVERIFY(fileGets(log, "/after-sighup"));

        // As logrotate without copytruncate does: move it, then SIGHUP.
        QVERIFY(QFile::rename(log, moved));
        QString err;
        ::kill(pid_t(c.proc.processId()), SIGHUP);
        QVERIFY2(stderrGets(c, &err, QStringLiteral("floodgate: SIGHUP: limiter log %1 reopened\n").arg(log)), qPrintable(err));
        QVERIFY(QFile::exists(log));
        const QByteArray before = readFile(moved);

        // The next refusal lands in the new file, under its header; the
        // moved one keeps what it had; the server still serves.
        QCOMPARE(refusedStatus(c.port), 403);
        QVERIFY(fileGets(log, "/after-sighup"));
        const QByteArray fresh = readFile(log);
        QVERIFY2(fresh.startsWith("time,action,rule,ip,"), fresh.constData());
        QCOMPARE(fresh.count("/after-sighup"), 1);
        QCOMPARE(readFile(moved), before);
        QCOMPARE(QFile(log).permissions() & (QFile::ReadGroup | QFile::ReadOther), QFile::Permissions());  // still private
        QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.0.10")->status, 200);
        QCOMPARE(c.proc.state(), QProcess::Running);
        QCOMPARE(c.stop(SIGTERM), 0);
        err += QString::fromUtf8(c.proc.readAllStandardError());
        QVERIFY(!err.contains(QLatin1Char('\x1b')));
    }

    void logrotateRotatesWithTheShippedRule()
    {
        const QString logrotate = findLogrotate();
        QVERIFY2(!logrotate.isEmpty(), "logrotate is not installed (scripts/setup installs it)");
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString log = dir.filePath(QStringLiteral("limiter.log"));
        QVERIFY(blockedDatabase(db));
        Child c;
        QVERIFY(c.start(serveArgs(db, log) << QStringLiteral("--config") << QStringLiteral("off")));
        QCOMPARE(refusedStatus(c.port), 403);
        QVERIFY(fileGets(log, "/after-sighup"));

        // The shipped rule, pointed at this log and this process: every
        // directive (daily, rotate 14, compress, delaycompress, create...) as shipped.
        QByteArray rule = readFile(QStringLiteral(FLOODGATE_SOURCE_DIR "/resources/logrotate/floodgate"));
        QVERIFY(rule.contains("/var/lib/floodgate/limiter.log {"));
        QVERIFY(rule.contains("systemctl kill -s HUP floodgate.service"));
        rule.replace("/var/lib/floodgate/limiter.log {", log.toUtf8() + " {");
        rule.replace("if systemctl is-active --quiet floodgate.service; then systemctl kill -s HUP floodgate.service; fi",
                     "kill -HUP " + QByteArray::number(c.proc.processId()));
        QVERIFY(rule.contains("kill -HUP"));
        const QString conf = dir.filePath(QStringLiteral("logrotate.conf"));
        QVERIFY(writeFile(conf, rule));
        QFile::setPermissions(conf, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther);
        QProcess rotate;
        rotate.start(logrotate, {QStringLiteral("--force"), QStringLiteral("--state"), dir.filePath(QStringLiteral("logrotate.state")), conf});
        QVERIFY(rotate.waitForFinished(15000));
        QVERIFY2(rotate.exitCode() == 0, rotate.readAllStandardError().constData());

        // delaycompress: the first rotation is limiter.log.1, as it was;
        // create: logrotate made the new limiter.log, which the server now writes.
        QVERIFY(readFile(log + QStringLiteral(".1")).contains("/after-sighup"));
        QString err;
        QVERIFY2(stderrGets(c, &err, QStringLiteral("floodgate: SIGHUP: limiter log %1 reopened\n").arg(log)), qPrintable(err));
        QCOMPARE(refusedStatus(c.port), 403);
        QVERIFY(fileGets(log, "/after-sighup"));
        QVERIFY(readFile(log).startsWith("time,action,rule,ip,"));
        QCOMPARE(readFile(log + QStringLiteral(".1")).count("/after-sighup"), 1);
        QCOMPARE(c.stop(SIGTERM), 0);
    }

    void sighupReloadsTheConfigurationFile()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString log = dir.filePath(QStringLiteral("limiter.log"));
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        QVERIFY(blockedDatabase(db));
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:0\nadmin = off\ndb = " + db.toUtf8() + "\nlog = " + log.toUtf8() + "\ndry-run = false\n"));
        Child c;
        QVERIFY(c.start({QStringLiteral("--headless"), QStringLiteral("--config"), conf}));
        QCOMPARE(refusedStatus(c.port), 403);

        // dry-run applies while running: the blocked client gets through (and is still logged).
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:0\nadmin = off\ndb = " + db.toUtf8() + "\nlog = " + log.toUtf8() + "\ndry-run = true\n"));
        QString err;
        ::kill(pid_t(c.proc.processId()), SIGHUP);
        QVERIFY2(stderrGets(c, &err, QStringLiteral("floodgate: SIGHUP: configuration read again from %1: dry-run applied\n").arg(conf)), qPrintable(err));
        QVERIFY(stderrGets(c, &err, QStringLiteral("reopened\n")));
        QCOMPARE(refusedStatus(c.port), 200);

        // A broken file: said in one line with its place, the running configuration kept.
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:0\nadmin = off\ndb = " + db.toUtf8() + "\ndry-run = false\ntrusted-proxy = 10.0.0.0/99\n"));
        err.clear();
        ::kill(pid_t(c.proc.processId()), SIGHUP);
        QVERIFY2(stderrGets(c, &err, QStringLiteral("floodgate: SIGHUP: %1:5: trusted-proxy 10.0.0.0/99: ").arg(conf)), qPrintable(err));
        QVERIFY2(stderrGets(c, &err, QStringLiteral("; keeping the running configuration\n")), qPrintable(err));
        QVERIFY(stderrGets(c, &err, QStringLiteral("reopened\n")));  // limiter.log still reopened for logrotate
        QCOMPARE(refusedStatus(c.port), 200);                        // still dry run

        // A setting that needs a restart is named, and keeps its running value.
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:0\nadmin = off\ndb = " + db.toUtf8() + "\nlog = " + log.toUtf8() + "\ndry-run = false\nthreads = 1\n"));
        err.clear();
        ::kill(pid_t(c.proc.processId()), SIGHUP);
        QVERIFY2(stderrGets(c, &err, QStringLiteral("floodgate: SIGHUP: configuration read again from %1: dry-run applied\n").arg(conf)), qPrintable(err));
        QVERIFY2(stderrGets(c, &err, QStringLiteral("floodgate: SIGHUP: threads changed and needs a restart; running on with the old value\n")),
                 qPrintable(err));
        QCOMPARE(refusedStatus(c.port), 403);
        QCOMPARE(c.stop(SIGINT), 0);
    }

    // A reload that cannot read the file (now a FIFO, or over the size
    // bound) is refused at once: the server keeps its settings, keeps
    // serving, reopens limiter.log, and SIGTERM still stops it promptly.
    // Issue 28.3: a second Floodgate on a port another one listens on
    // stops at once (exit 3) with a line naming the first's address,
    // database and admin API; the first serves on, alone. Once the first
    // has stopped, the port is free again.
    void aSecondFloodgateOnTheSamePortIsRefused()
    {
        QTemporaryDir dir;
        const QString first = dir.filePath(QStringLiteral("first.db"));
        const QString port = QString::number(freeLoopbackPort());
        const QString listen = QStringLiteral("127.0.0.1:") + port;
        Child a;
        QVERIFY(a.start({QStringLiteral("--headless"), QStringLiteral("--listen"), listen, QStringLiteral("--admin"), QStringLiteral("127.0.0.1:0"),
                         QStringLiteral("--db"), first, QStringLiteral("--log"), QStringLiteral("off")}));
        QString err;
        QElapsedTimer took;
        took.start();
        const int code = runToEnd({QStringLiteral("--headless"), QStringLiteral("--listen"), listen, QStringLiteral("--admin"), QStringLiteral("off"),
                                   QStringLiteral("--db"), dir.filePath(QStringLiteral("second.db")), QStringLiteral("--log"), QStringLiteral("off")},
                                  &err);
        QCOMPARE(code, 3);
        QVERIFY2(took.elapsed() < 3000, qPrintable(QString::number(took.elapsed())));
        QVERIFY2(err.contains(QStringLiteral("port %1 is taken by another Floodgate (pid %2) listening on %3 with the database %4")
                                  .arg(port)
                                  .arg(a.proc.processId())
                                  .arg(listen, first)),
                 qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("admin API on http://127.0.0.1:%1").arg(a.adminPort)), qPrintable(err));
        QCOMPARE(err.trimmed().count(QLatin1Char('\n')), 0);
        QVERIFY2(!QFile::exists(dir.filePath(QStringLiteral("second.db"))), "the second opened its database");
        QCOMPARE(fetch(a.port, get("/"), 2000).value_or(Response{}).status, 200);
        QCOMPARE(a.stop(), 0);

        // Free again.
        Child b;
        QVERIFY(b.start({QStringLiteral("--headless"), QStringLiteral("--listen"), listen, QStringLiteral("--admin"), QStringLiteral("off"),
                         QStringLiteral("--db"), dir.filePath(QStringLiteral("second.db")), QStringLiteral("--log"), QStringLiteral("off")}));
        QCOMPARE(b.stop(), 0);
    }

    void sighupOnAFileThatCannotBeReadKeepsServing()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString log = dir.filePath(QStringLiteral("limiter.log"));
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        QVERIFY(blockedDatabase(db));
        QVERIFY(writeFile(conf, "listen = 127.0.0.1:0\nadmin = off\ndb = " + db.toUtf8() + "\nlog = " + log.toUtf8() + "\n"));
        Child c;
        QVERIFY(c.start({QStringLiteral("--headless"), QStringLiteral("--config"), conf}));
        QCOMPARE(refusedStatus(c.port), 403);

        QVERIFY(QFile::remove(conf));
        QCOMPARE(::mkfifo(QFile::encodeName(conf).constData(), 0600), 0);
        QString err;
        ::kill(pid_t(c.proc.processId()), SIGHUP);
        QVERIFY2(stderrGets(c, &err,
                            QStringLiteral("floodgate: SIGHUP: --config %1: not a regular file (a FIFO); keeping the running configuration\n").arg(conf),
                            2000),
                 qPrintable(err));
        QVERIFY(stderrGets(c, &err, QStringLiteral("reopened\n")));
        QCOMPARE(refusedStatus(c.port), 403);

        QVERIFY(QFile::remove(conf));
        QVERIFY(writeFile(conf, "node-name = " + QByteArray(5 * 1024 * 1024, 'x') + "\n"));
        err.clear();
        ::kill(pid_t(c.proc.processId()), SIGHUP);
        QVERIFY2(stderrGets(c, &err,
                            QStringLiteral("floodgate: SIGHUP: --config %1: 5242893 bytes, over the 4 MiB a configuration file may hold; keeping the "
                                           "running configuration\n")
                                .arg(conf),
                            2000),
                 qPrintable(err.left(300)));
        QCOMPARE(refusedStatus(c.port), 403);

        QElapsedTimer stopping;
        stopping.start();
        QCOMPARE(c.stop(SIGTERM), 0);
        QVERIFY2(stopping.elapsed() < 3000, qPrintable(QString::number(stopping.elapsed())));
    }
};

QTEST_GUILESS_MAIN(TestDaemon)
#include "test_daemon.moc"
