// SPDX-License-Identifier: GPL-3.0-or-later
// The built console (`floodgate` without --headless) as a child process,
// offscreen: what a desktop session does to it. SIGTERM (a logout,
// `systemctl stop`, `kill`) and SIGINT close it as its window's close
// button does: exit 0, writes finished, limiter.log whole. Its /metrics stay
// machine-readable under a comma-decimal locale (QApplication applies the
// user's locale to the C library).
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <sqlite3.h>

#include <clocale>
#include <csignal>
#include <cstdio>
#endif

using namespace FloodgateTest;

namespace {

// The console's environment: offscreen, its settings in `dir`, and `locale` for everything.
QProcessEnvironment consoleEnvironment(const QTemporaryDir& dir, const QString& locale = {})
{
    QProcessEnvironment env = childEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
    if (!locale.isEmpty()) {
        env.insert(QStringLiteral("LC_ALL"), locale);
        env.insert(QStringLiteral("LANG"), locale);
    }
    return env;
}

QStringList consoleArgs(const QTemporaryDir& dir, const QStringList& more = {})
{
    return QStringList{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"), QStringLiteral("127.0.0.1:0"),
                       QStringLiteral("--db"), dir.filePath(QStringLiteral("floodgate.db")), QStringLiteral("--threads"), QStringLiteral("1")}
        + more;
}

// Reasons of the blocklist entries in the database, read with SQLite itself.
QStringList blocklistReasons(const QString& db)
{
    QStringList out;
    sqlite3* h = nullptr;
    if (sqlite3_open_v2(db.toUtf8().constData(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(h, "SELECT reason FROM list_entries WHERE list = 'blocklist' ORDER BY id", -1, &st, nullptr);
        while (st && sqlite3_step(st) == SQLITE_ROW)
            out << QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return out;
}

} // namespace

class TestConsoleProcess : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aSignalClosesTheConsoleAsItsWindowDoes_data()
    {
        QTest::addColumn<int>("signal");
        QTest::newRow("SIGTERM") << int(SIGTERM);
        QTest::newRow("SIGINT") << int(SIGINT);
    }
    void aSignalClosesTheConsoleAsItsWindowDoes()
    {
        QFETCH(int, signal);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString log = dir.filePath(QStringLiteral("limiter.log"));
        Child c;
        QVERIFY2(c.start(consoleArgs(dir, {QStringLiteral("--demo")}), consoleEnvironment(dir)),
                 qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
        // The demo's scraper is being refused and logged.
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(log).size() > 2000, 10'000);
        const auto r = fetch(c.adminPort, withBody("POST", "/api/v1/lists/blocklist",
                                                   "{\"address\":\"203.0.113.99\",\"reason\":\"just before the signal\"}",
                                                   "Content-Type: application/json\r\n" + bearer(adminToken(db))));
        QVERIFY(r);
        QCOMPARE(r->status, 201);
        QCOMPARE(c.stop(signal), 0);  // not 143 (killed by SIGTERM) nor 130
        const QString err = QString::fromUtf8(c.proc.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("received, closing")), qPrintable(err));
        QVERIFY2(!err.contains(QStringLiteral("QThread: Destroyed")) && !err.contains(QStringLiteral("QObject::")), qPrintable(err));
        QVERIFY2(blocklistReasons(db).contains(QStringLiteral("just before the signal")), qPrintable(blocklistReasons(db).join(u',')));
        QFile f(log);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.count('\n') > 10);
        QVERIFY2(text.endsWith("\r\n"), text.right(200).constData());  // ends on a whole line
        // The window saved its place, as a close does.
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("config/Floodgate/Floodgate.conf"))));
    }

    void metricsParseUnderACommaDecimalLocale()
    {
        // The locale must exist and really write "2,5", or this test proves nothing.
        const char* had = std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
        char sample[16] = "";
        if (had)
            std::snprintf(sample, sizeof sample, "%g", 2.5);
        std::setlocale(LC_NUMERIC, "C");
        QVERIFY2(had && QByteArray(sample) == "2,5", "the de_DE.UTF-8 locale is missing: run scripts/setup (it generates it)");

        QTemporaryDir dir;
        Child c;
        QVERIFY2(c.start(consoleArgs(dir), consoleEnvironment(dir, QStringLiteral("de_DE.UTF-8"))),
                 qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
        // Enough decisions for the latency histogram (one in 16 is timed) to have a sum.
        Connection conn;
        QVERIFY(conn.open(c.port, "127.0.0.1", "127.0.0.30"));
        for (int i = 0; i < 64; ++i) {
            QVERIFY(conn.send(get("/")));
            QVERIFY(conn.read());
        }
        const auto metrics = fetch(c.adminPort, get("/metrics"));
        QVERIFY(metrics);
        QCOMPARE(metrics->status, 200);
        const QString text = QString::fromStdString(metrics->body);
        // The Prometheus text format: name{labels} value, the value a Go float.
        static const QRegularExpression sampleLine(QStringLiteral("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*\\})? (\\S+)$"));
        static const QRegularExpression number(QStringLiteral("^[+-]?((\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?|Inf)$|^NaN$"));
        static const QRegularExpression le(QStringLiteral("[{,]le=\"([^\"]*)\""));
        int samples = 0, bounds = 0;
        bool sumSeen = false;
        for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            if (line.startsWith(QLatin1Char('#')))
                continue;
            const auto m = sampleLine.match(line);
            QVERIFY2(m.hasMatch(), qPrintable(line));
            QVERIFY2(number.match(m.captured(3)).hasMatch(), qPrintable(line));
            ++samples;
            if (const auto b = le.match(m.captured(2)); b.hasMatch()) {
                QVERIFY2(number.match(b.captured(1)).hasMatch(), qPrintable(line));
                ++bounds;
            }
            if (m.captured(1) == QStringLiteral("floodgate_decision_seconds_sum")) {
                sumSeen = true;
                QVERIFY2(m.captured(3).toDouble() > 0, qPrintable(line));  // a fraction of a second, read with '.'
            }
        }
        QVERIFY(samples > 20);
        QCOMPARE(bounds, 10);  // nine bounds and +Inf
        QVERIFY(sumSeen);
        c.stop();
    }
};

QTEST_GUILESS_MAIN(TestConsoleProcess)
#include "test_console_process.moc"
