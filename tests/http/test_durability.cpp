// SPDX-License-Identifier: GPL-3.0-or-later
// The built `floodgate` and its database, as an operator meets them: a block
// added through the admin API survives SIGKILL right after its 201; a
// corrupt, newer or locked database stops the start with exit code 4 and
// stays byte for byte what it was; escalation bans survive a restart; the
// command-line import is all or nothing and a running instance applies it.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <sqlite3.h>
#include <sys/stat.h>
#endif

using namespace FloodgateTest;

namespace {

// The whole seconds left of the first list entry in an API answer; -1 when there is none.
int expiresInOf(const std::string& body)
{
    const auto at = body.find("\"expires_in\":");
    return at == std::string::npos ? -1 : std::atoi(body.c_str() + at + 13);
}

// The audit trail holds an escalation ban (its row is written by the store's writer thread).
bool autobanAudited(std::uint16_t adminPort, const std::string& token)
{
    return fetch(adminPort, get("/api/v1/audit", bearer(token))).value_or(Response{}).body.find("list.autoban") != std::string::npos;
}

QStringList serveArgs(const QString& db, const QStringList& more = {})
{
    return QStringList{QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                       QStringLiteral("127.0.0.1:0"), QStringLiteral("--db"), db, QStringLiteral("--threads"), QStringLiteral("1")}
        + more;
}

QByteArray fileBytes(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The permission bits (0644, 0700...) of a file or folder; -1 when it is missing.
int modeOf(const QString& path)
{
    struct stat st {};
    return ::stat(path.toLocal8Bit().constData(), &st) == 0 ? int(st.st_mode & 07777) : -1;
}

QString octal(int mode)
{
    return QStringLiteral("0%1").arg(mode, 0, 8);
}

// A database and limiter.log made by one run that stopped cleanly.
bool makeDatabase(const QString& db)
{
    Child c;
    if (!c.start(serveArgs(db)))
        return false;
    for (int i = 0; i < 8; ++i)
        fetch(c.port, get("/"), 3000, "127.0.0.40");  // refusals: limiter.log gets lines
    return c.stop() == 0;
}

} // namespace

class TestDurability : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aBlockSurvivesSigkillRightAfterItsAnswer()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        {
            Child c;
            QVERIFY2(c.start(serveArgs(db)), qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
            QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.0.7")->status, 200);
            const auto r = fetch(c.adminPort, withBody("POST", "/api/v1/lists/blocklist",
                                                       "{\"address\":\"127.0.0.7\",\"ttl\":\"7d\",\"reason\":\"scraper\"}",
                                                       "Content-Type: application/json\r\n" + bearer(adminToken(db))));
            QVERIFY(r);
            QCOMPARE(r->status, 201);
            c.kill();  // no shutdown code runs: only what was committed is there
        }
        Child again;
        QVERIFY(again.start(serveArgs(db)));
        const auto refused = fetch(again.port, get("/"), 3000, "127.0.0.7");
        QVERIFY(refused);
        QCOMPARE(refused->status, 403);
        QCOMPARE(fetch(again.port, get("/"), 3000, "127.0.0.8")->status, 200);  // only that address
        const auto list = fetch(again.adminPort, get("/api/v1/lists/blocklist", bearer(adminToken(db))));
        QVERIFY(list);
        QVERIFY2(list->body.find("\"address\":\"127.0.0.7/32\"") != std::string::npos, list->body.c_str());
        QVERIFY(list->body.find("\"reason\":\"scraper\"") != std::string::npos);
        QCOMPARE(again.stop(), 0);
    }

    void unusableDatabasesAreExit4AndLeftUntouched_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("says");
        QTest::newRow("not a database") << 0 << QStringLiteral("is not a Floodgate database or is damaged");
        QTest::newRow("newer schema") << 1 << QStringLiteral("was written by a newer Floodgate (schema 7");
    }
    void unusableDatabasesAreExit4AndLeftUntouched()
    {
        QFETCH(int, kind);
        QFETCH(QString, says);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        if (kind == 0) {
            QFile f(db);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray("\x00\x01garbage", 9).repeated(1000));
        } else {
            Child c;
            QVERIFY(c.start(serveArgs(db)));
            QCOMPARE(c.stop(), 0);
            sqlite3* h = nullptr;
            QCOMPARE(sqlite3_open(db.toUtf8().constData(), &h), SQLITE_OK);
            QCOMPARE(sqlite3_exec(h, "PRAGMA user_version = 7; PRAGMA wal_checkpoint(TRUNCATE);", nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(h);
        }
        const QByteArray before = fileBytes(db);
        QString err;
        QCOMPARE(runToEnd(serveArgs(db), &err), 4);
        QVERIFY2(err.startsWith(QStringLiteral("floodgate: ")) && err.contains(says), qPrintable(err));
        QCOMPARE(err.count(QLatin1Char('\n')), 1);
        QCOMPARE(fileBytes(db), before);
    }

    void aLockedDatabaseIsExit4AfterTheTimeout()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        {
            Child c;
            QVERIFY(c.start(serveArgs(db)));
            QCOMPARE(c.stop(), 0);
        }
        sqlite3* holder = nullptr;
        QCOMPARE(sqlite3_open(db.toUtf8().constData(), &holder), SQLITE_OK);
        QCOMPARE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
        QElapsedTimer t;
        t.start();
        QString err;
        const int code = runToEnd(serveArgs(db, {QStringLiteral("--db-timeout"), QStringLiteral("1")}), &err);
        const qint64 waited = t.elapsed();
        sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(holder);
        QCOMPARE(code, 4);
        QVERIFY2(waited >= 900, QByteArray::number(waited).constData());
        QVERIFY2(err.contains(QStringLiteral("is locked by another process (waited 1 s)")), qPrintable(err));
    }

    void anEscalationBanKeepsItsRemainingTimeAfterARestart()
    {
        auto expiresAtOf = [](const std::string& body) {
            const auto at = body.find("\"expires_at\":\"");
            return at == std::string::npos ? std::string() : body.substr(at + 14, 24);
        };
        std::string expiresAt, token;
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        {
            Child c;
            QVERIFY(c.start(serveArgs(db)));
            // 6 allowed, then 100 refusals inside a minute: a 15-minute ban.
            Connection conn;
            QVERIFY(conn.open(c.port, "127.0.0.1", "127.0.0.66"));
            int lastStatus = 0;
            for (int i = 0; i < 110 && lastStatus != 403; ++i) {
                QVERIFY(conn.send(get("/")));
                const auto r = conn.read();
                QVERIFY(r);
                lastStatus = r->status;
            }
            QCOMPARE(lastStatus, 403);
            token = adminToken(db);
            // The ban is written by the store's writer thread; wait until the API shows it stored.
            QTRY_VERIFY_WITH_TIMEOUT(autobanAudited(c.adminPort, token), 3000);
            expiresAt = expiresAtOf(fetch(c.adminPort, get("/api/v1/lists/blocklist", bearer(token))).value_or(Response{}).body);
            QVERIFY(!expiresAt.empty());
            QCOMPARE(c.stop(), 0);
        }
        QTest::qWait(1100);  // a restart a second later must not start the ban over
        Child again;
        QVERIFY(again.start(serveArgs(db)));
        const auto r = fetch(again.port, get("/"), 3000, "127.0.0.66");
        QVERIFY(r);
        QCOMPARE(r->status, 403);
        const auto list = fetch(again.adminPort, get("/api/v1/lists/blocklist", bearer(token)));
        QVERIFY(list);
        QVERIFY2(list->body.find("\"address\":\"127.0.0.66/32\"") != std::string::npos, list->body.c_str());
        QVERIFY(list->body.find("\"source\":\"automatic\"") != std::string::npos);
        // The same end as before the restart: what is left of the 15 minutes.
        QCOMPARE(expiresAtOf(list->body), expiresAt);
        const int left = expiresInOf(list->body);
        QVERIFY2(left > 800 && left < 900, list->body.c_str());
        QCOMPARE(again.stop(), 0);
    }

    void theNextBanDoublesAcrossARestart()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        auto floodUntilBanned = [](std::uint16_t port) {
            Connection conn;
            if (!conn.open(port, "127.0.0.1", "127.0.0.67"))
                return 0;
            int status = 0;
            for (int i = 0; i < 120 && status != 403; ++i) {
                conn.send(get("/"));
                status = conn.read().value_or(Response{}).status;
            }
            return status;
        };
        std::string token;
        auto banSeconds = [&token](std::uint16_t adminPort) {
            return expiresInOf(fetch(adminPort, get("/api/v1/lists/blocklist", bearer(token))).value_or(Response{}).body);
        };
        {
            Child c;
            QVERIFY(c.start(serveArgs(db)));
            token = adminToken(db);
            QCOMPARE(floodUntilBanned(c.port), 403);
            QVERIFY(banSeconds(c.adminPort) > 890);  // ban #1: 15 minutes
            QTRY_VERIFY_WITH_TIMEOUT(autobanAudited(c.adminPort, token), 3000);
            // The operator lifts it early; the client is let in again.
            QCOMPARE(fetch(c.adminPort, withBody("DELETE", "/api/v1/lists/blocklist/127.0.0.67", {}, bearer(token)))->status, 204);
            QCOMPARE(c.stop(), 0);
        }
        Child again;
        QVERIFY(again.start(serveArgs(db)));
        QCOMPARE(floodUntilBanned(again.port), 403);
        const int seconds = banSeconds(again.adminPort);
        QVERIFY2(seconds > 1790 && seconds <= 1800, QByteArray::number(seconds).constData());  // ban #2: 30 minutes, not 15 again
        QCOMPARE(again.stop(), 0);
    }

    void commandLineImportIsAllOrNothingAndARunningInstanceAppliesIt()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        Child c;
        QVERIFY(c.start(serveArgs(db)));

        const QString bad = dir.filePath(QStringLiteral("bad.csv"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("list,address,reason,ttl\n"
                    "blocklist,127.0.0.9,scraper,7d\n"
                    "blocklist,127.0.0.300,typo,7d\n"
                    "greylist,127.0.0.10,?,1h\n"
                    "safelist,2001:db8::/48,office,\n");
        }
        QString err, out;
        QCOMPARE(runToEnd({QStringLiteral("lists"), QStringLiteral("import"), bad, QStringLiteral("--db"), db}, &err, &out), 1);
        QVERIFY2(err.contains(bad + QStringLiteral(":3: address \"127.0.0.300\"")), qPrintable(err));
        QVERIFY2(err.contains(bad + QStringLiteral(":4: list \"greylist\" must be safelist or blocklist")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("2 of 4 lines rejected; nothing was imported")), qPrintable(err));
        QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.0.9")->status, 200);

        const QString good = dir.filePath(QStringLiteral("good.csv"));
        {
            QFile f(good);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("list,address,reason,ttl\n"
                    "blocklist,127.0.0.9,\"scraper, the bad kind\",7d\n"
                    "safelist,2001:db8::/48,office,\n");
        }
        QCOMPARE(runToEnd({QStringLiteral("lists"), QStringLiteral("import"), good, QStringLiteral("--db"), db}, &err, &out), 0);
        QVERIFY2(out.startsWith(QStringLiteral("imported 2 entries")), qPrintable(out + err));
        // The running instance sees another process's commit within 2 s.
        QTRY_COMPARE_WITH_TIMEOUT(fetch(c.port, get("/"), 3000, "127.0.0.9").value_or(Response{}).status, 403, 2000);
        QCOMPARE(c.stop(), 0);

        const QString exported = dir.filePath(QStringLiteral("out.json"));
        QCOMPARE(runToEnd({QStringLiteral("lists"), QStringLiteral("export"), exported, QStringLiteral("--db"), db}, &err, &out), 0);
        QCOMPARE(out, QStringLiteral("exported 2 entries (1 safelist, 1 blocklist) to %1\n").arg(exported));
        const QByteArray json = fileBytes(exported);
        QVERIFY2(json.contains("\"address\":\"127.0.0.9/32\",\"list\":\"blocklist\",\"reason\":\"scraper, the bad kind\",\"source\":\"import\""),
                 json.constData());
        QVERIFY(json.contains("\"address\":\"2001:db8::/48\",\"list\":\"safelist\""));
    }

    // The database holds the admin token, limiter.log visitors' addresses:
    // both are their owner's alone whatever the umask (SQLite itself makes
    // a database 0644 and its -wal/-shm side files with the database's
    // mode), and so is a data folder Floodgate creates.
    void newFilesAreTheOwnersAlone()
    {
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("data/floodgate"));
        const QString db = folder + QStringLiteral("/floodgate.db");
        const mode_t umaskBefore = ::umask(0);  // inherited by the child: nothing may rely on a careful umask
        Child c;
        const bool started = c.start(serveArgs(db));
        ::umask(umaskBefore);
        QVERIFY2(started, qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
        for (int i = 0; i < 8; ++i)
            QVERIFY(fetch(c.port, get("/"), 3000, "127.0.0.41"));
        // While it runs, so the WAL side files exist.
        QTRY_VERIFY(QFileInfo(folder + QStringLiteral("/limiter.log")).size() > 200);
        for (const QString& file : {db, db + QStringLiteral("-wal"), db + QStringLiteral("-shm"), folder + QStringLiteral("/limiter.log")})
            QVERIFY2(modeOf(file) == 0600, qPrintable(file + QStringLiteral(": ") + octal(modeOf(file))));
        for (const QString& made : {folder, dir.filePath(QStringLiteral("data"))})
            QVERIFY2(modeOf(made) == 0700, qPrintable(made + QStringLiteral(": ") + octal(modeOf(made))));
        QCOMPARE(c.stop(), 0);
        QCOMPARE(modeOf(db), 0600);
    }

    void aDatabaseOthersMayWriteIsRefused_data()
    {
        QTest::addColumn<int>("mode");
        QTest::newRow("everyone") << 0666;
        QTest::newRow("group") << 0620;
        QTest::newRow("others") << 0602;
    }
    void aDatabaseOthersMayWriteIsRefused()
    {
        QFETCH(int, mode);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QVERIFY(makeDatabase(db));
        QVERIFY(::chmod(db.toLocal8Bit().constData(), mode_t(mode)) == 0);
        const QByteArray before = fileBytes(db);
        QString err;
        QCOMPARE(runToEnd(serveArgs(db), &err), 4);
        QVERIFY2(err.startsWith(QStringLiteral("floodgate: ")) && err.contains(QStringLiteral("is writable by group or others (mode %1)").arg(octal(mode)))
                     && err.contains(QStringLiteral("chmod 600")),
                 qPrintable(err));
        QCOMPARE(err.count(QLatin1Char('\n')), 1);
        QCOMPARE(modeOf(db), mode);  // not "fixed" behind the operator's back: it may have been tampered with
        QCOMPARE(fileBytes(db), before);
        // The commands refuse it too.
        QCOMPARE(runToEnd({QStringLiteral("token"), QStringLiteral("--db"), db}, &err), 4);
    }

    // Floodgate 0.3 made them 0644: an existing file others may only read is
    // tightened to the owner's alone, with one line saying so.
    void filesOthersMayReadAreTightened()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString log = dir.filePath(QStringLiteral("limiter.log"));
        QVERIFY(makeDatabase(db));
        QVERIFY(::chmod(db.toLocal8Bit().constData(), 0644) == 0);
        QVERIFY(::chmod(log.toLocal8Bit().constData(), 0640) == 0);
        Child c;
        QVERIFY(c.start(serveArgs(db)));
        QCOMPARE(modeOf(db), 0600);
        QCOMPARE(modeOf(log), 0600);
        QCOMPARE(c.stop(), 0);
        const QString err = QString::fromUtf8(c.proc.readAllStandardError());
        QVERIFY2(err.contains(db + QStringLiteral(" was readable by group or others (mode 0644); it is now 0600")), qPrintable(err));
        QVERIFY2(err.contains(log + QStringLiteral(" was readable by group or others (mode 0640); it is now 0600")), qPrintable(err));
        Child again;  // said once: nothing to say the next time
        QVERIFY(again.start(serveArgs(db)));
        QCOMPARE(again.stop(), 0);
        QVERIFY(!QString::fromUtf8(again.proc.readAllStandardError()).contains(QStringLiteral("readable by group")));
    }

    void theAdminApiWantsATokenBeyondLoopback()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        Child c;
        QVERIFY(c.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                         QStringLiteral("0.0.0.0:0"), QStringLiteral("--db"), db}));
        QVERIFY2(c.startup.contains(QStringLiteral("Authorization: Bearer TOKEN\" (beyond loopback /healthz and /metrics too)")),
                 qPrintable(c.startup));
        // Beyond loopback everything wants the token, health checks and metrics too.
        QCOMPARE(fetch(c.adminPort, get("/healthz"))->status, 401);
        const auto refused = fetch(c.adminPort, get("/api/v1/lists/blocklist"));
        QCOMPARE(refused->status, 401);
        QCOMPARE(QString::fromStdString(refused->header("www-authenticate")), QStringLiteral("Bearer realm=\"floodgate\""));
        QCOMPARE(fetch(c.adminPort, get("/metrics"))->status, 401);
        QCOMPARE(fetch(c.adminPort, get("/api/v1/rules", "Authorization: Bearer wrong\r\n"))->status, 401);

        const std::string token = adminToken(db);
        QCOMPARE(token.size(), std::size_t(64));
        QCOMPARE(fetch(c.adminPort, get("/api/v1/lists/blocklist", bearer(token)))->status, 200);
        QCOMPARE(fetch(c.adminPort, get("/healthz", bearer(token)))->status, 200);
        QCOMPARE(fetch(c.adminPort, get("/metrics", bearer(token)))->status, 200);
        QCOMPARE(c.stop(), 0);
    }
};

QTEST_GUILESS_MAIN(TestDurability)
#include "test_durability.moc"
