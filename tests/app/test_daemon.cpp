// SPDX-License-Identifier: GPL-3.0-or-later
// Floodgate as a daemon, through the built binary: --check-config on a good
// and on a broken configuration file (one line naming the file and the
// line, exit 2, nothing started); SIGHUP reopens limiter.log after it was
// moved (headless and console), the same through the real logrotate with
// the shipped /etc/logrotate.d/floodgate; SIGHUP with an edited
// configuration file applies a live setting, names one that needs a
// restart, and keeps the running configuration when the file is broken;
// SIGTERM still stops with 0; no colour codes on stderr when it is no terminal.
#include <QtTest>

#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <chrono>
#include <thread>

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
};

QTEST_GUILESS_MAIN(TestDaemon)
#include "test_daemon.moc"
