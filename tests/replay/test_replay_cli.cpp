// SPDX-License-Identifier: GPL-3.0-or-later
// `floodgate replay` through the built binary: the report, --json and
// --decisions; a corrupt line, a truncated gzip, timestamps going
// backwards, an empty file and a 2 GB sparse file each handled with a clear
// message (the sparse one in bounded memory); exit codes 2 and 4.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "ChildProcess.h"
#include "ReplayTestSupport.h"
#include "wire/Json.h"

#include <sys/resource.h>

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

struct Run {
    int code = -1;
    QString out;
    QString err;
};

Run replay(const QStringList& args, int timeoutMs = 60'000)
{
    QProcess p;
    p.setProcessEnvironment(childEnvironment());
    p.start(QStringLiteral(FLOODGATE_BINARY), QStringList{QStringLiteral("replay")} + args);
    Run r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = QStringLiteral("timed out");
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

QString describe(const Run& r)
{
    return QStringLiteral("exit %1\nstdout:\n%2\nstderr:\n%3").arg(r.code).arg(r.out, r.err);
}

// A flood (20 req/s for 10 s) and a steady reader, with one line of each kind of trouble.
std::string sampleLog()
{
    const Core::Millis t = logStart();
    std::string log;
    for (int s = 0; s < 10; ++s) {
        for (int i = 0; i < 20; ++i)
            log += combinedLine("203.0.113.7", t + s * 1000, "/search?q=" + std::to_string(i), 200,
                                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
        log += combinedLine("198.51.100.4", t + s * 1000, "/article/" + std::to_string(s));
        if (s == 3)
            log += "this line is not a request\n";
    }
    return log;
}

} // namespace

class TestReplayCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void reportJsonAndDecisions()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath(QStringLiteral("access.log"));
        writeFile(log.toStdString(), sampleLog());
        const QString rules = dir.filePath(QStringLiteral("rules.json"));
        writeFile(rules.toStdString(), "{}");

        Run r = replay({log, QStringLiteral("--rules"), rules});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("Lines read: 211; requests replayed: 210")), qPrintable(r.out));
        QVERIFY2(r.out.contains(log + QStringLiteral(":85: ")), qPrintable(r.out));  // the bad line, by number
        QVERIFY2(r.out.contains(QStringLiteral("203.0.113.7")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("says it is Googlebot")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("can be forged")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("window of ip-3s (limit 6)")), qPrintable(r.out));
        QVERIFY2(!r.out.contains(QStringLiteral("198.51.100.4")), qPrintable(r.out));

        const QString csv = dir.filePath(QStringLiteral("decisions.csv"));
        r = replay({log, QStringLiteral("--rules=") + rules, QStringLiteral("--json"), QStringLiteral("--decisions"), csv});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        std::string why;
        const auto json = Wire::Json::parse(r.out.toStdString(), &why);
        QVERIFY2(json, why.c_str());
        QCOMPARE(json->find("requests")->asInteger(), std::int64_t(210));
        QCOMPARE(json->find("not_parsed")->asInteger(), std::int64_t(1));
        const Wire::Json& run = json->find("runs")->asArray().at(0);
        const auto& clients = run.find("refused_clients")->asArray();
        QCOMPARE(clients.size(), std::size_t(1));
        QCOMPARE(clients[0].find("address")->asString(), std::string("203.0.113.7"));
        QCOMPARE(clients[0].find("requests")->asInteger(), std::int64_t(200));
        QCOMPARE(clients[0].find("known_crawler")->asString(), std::string("Googlebot"));
        QCOMPARE(clients[0].find("first_refusal")->find("rule")->asString(), std::string("ip-3s"));
        QCOMPARE(clients[0].find("first_refusal")->find("line")->asInteger(), std::int64_t(7));  // the 7th in 3 s
        const std::int64_t refusals = clients[0].find("refusals")->asInteger();
        // Escalation (on in the default rules) bans the flood after its throttles: blocks.
        QCOMPARE(run.find("decisions")->find("throttle")->asInteger() + run.find("decisions")->find("block")->asInteger(), refusals);

        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> rows = f.readAll().split('\n');
        QCOMPARE(rows.at(0).trimmed(), QByteArray("file,line,time,client,method,path,action,rule,remaining"));
        QCOMPARE(rows.size(), 1 + 210 + 1);  // header, one per request, the empty tail after the last CRLF
        // 21 lines in that second: the 7th at 6 * 1000 / 21 ms.
        QVERIFY2(rows.at(7).contains(",7,2026-11-22T05:00:00.285Z,203.0.113.7,GET,/search?q=6,throttle,ip-3s,0"), rows.at(7).constData());
        QCOMPARE(std::count_if(rows.begin(), rows.end(), [](const QByteArray& row) { return row.contains(",throttle,") || row.contains(",block,"); }),
                 refusals);
    }

    // Bytes from the log reach the text report (stdout) and the messages
    // (stderr) as visible escapes (docs/INTERFACE.md: no terminal
    // escapes): a window title (ESC ]0;...BEL), a clear (ESC [2J), a
    // carriage return, a C1 CSI, a right-to-left override, and a line
    // break that would forge a line of Floodgate's own. nginx's JSON log
    // brings any of them (\u001b, \n); a hand-made combined log, raw.
    void reportEscapesTerminalControls()
    {
        QTemporaryDir dir;
        const QString rules = dir.filePath(QStringLiteral("rules.json"));
        writeFile(rules.toStdString(), "{}");
        const Core::Millis t = logStart();
        std::string json, combined;
        for (int i = 0; i < 60; ++i) {
            const std::string at = Wire::Codec::formatTime(t + i * 50, true);
            json += "{\"remote_addr\":\"203.0.113.66\",\"time_iso8601\":\"" + at
                  + "\",\"request\":\"GET /see\\u001b[2J HTTP/1.1\",\"status\":\"200\",\"http_user_agent\":"
                    "\"evil\\u001b]0;pwned\\u0007\\u001b[2J\\r\\u009b\\u202e\\nfloodgate: SIGHUP: forged line\"}\n";
            combined += combinedLine("198.51.100.66", t + i * 50, "/see\x1b[2J\x07", 200,
                                     "evil\x1b]0;pwned\x07\x1b[2J\r\xc2\x9b\xe2\x80\xae\xff");
        }
        json += "{\"remote_addr\":\"\\u001b]0;pwned\\u0007\\nfloodgate: SIGHUP: forged line\"}\n";
        combined += "garbage\x1b]0;pwned\x07\x1b[2J\rfloodgate: SIGHUP: forged line\n";
        for (const auto& [name, text] : {std::pair{"access.json", json}, std::pair{"access.log", combined}}) {
            const QString log = dir.filePath(QString::fromUtf8(name));
            writeFile(log.toStdString(), text);
            QProcess p;
            p.setProcessEnvironment(childEnvironment());
            p.start(QStringLiteral(FLOODGATE_BINARY), {QStringLiteral("replay"), log, QStringLiteral("--rules"), rules});
            QVERIFY(p.waitForFinished(60'000));
            const QByteArray out = p.readAllStandardOutput(), err = p.readAllStandardError();
            const QString all = QString::fromUtf8(out + err);
            QVERIFY2(p.exitCode() == 0, qPrintable(all));
            QVERIFY2(out.contains("Clients that would have been refused: 1 of 1"), out.constData());
            // The user agent and the path are there, escaped.
            QVERIFY2(out.contains("evil\\x1B]0;pwned\\x07\\x1B[2J\\r\\u{9B}\\u{202E}"), out.constData());
            QVERIFY2(out.contains("/see\\x1B[2J"), out.constData());
            for (const QByteArray& bytes : {out, err}) {
                for (const char c : {'\x1b', '\x07', '\r'})
                    QVERIFY2(!bytes.contains(c), qPrintable(QStringLiteral("a raw 0x%1 in:\n").arg(int(c), 2, 16, QLatin1Char('0')) + all));
                QVERIFY2(!bytes.contains("\xc2\x9b") && !bytes.contains("\xe2\x80\xae") && !bytes.contains('\xff'), bytes.constData());
                // No line of its own that the log made.
                for (const QByteArray& line : bytes.split('\n'))
                    QVERIFY2(!line.startsWith("floodgate: SIGHUP"), qPrintable(all));
            }
        }
    }

    void badCommandLinesExit2()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath(QStringLiteral("access.log"));
        writeFile(log.toStdString(), sampleLog());
        const QString rules = dir.filePath(QStringLiteral("rules.json"));
        writeFile(rules.toStdString(), "{}");
        struct Case {
            QStringList args;
            QString says;
        };
        const QList<Case> cases = {
            {{}, QStringLiteral("floodgate replay: ACCESS_LOG is required")},
            {{log, QStringLiteral("--bogus")}, QStringLiteral("unknown option --bogus")},
            {{log, QStringLiteral("--format"), QStringLiteral("apache")}, QStringLiteral("--format apache")},
            {{log, QStringLiteral("--trusted-proxy"), QStringLiteral("10.0.0.0/33")}, QStringLiteral("--trusted-proxy 10.0.0.0/33")},
            {{log, QStringLiteral("--rules"), rules, QStringLiteral("--from"), QStringLiteral("yesterday")}, QStringLiteral("--from yesterday")},
            {{dir.filePath(QStringLiteral("missing.log")), QStringLiteral("--rules"), rules}, QStringLiteral("cannot read")},
            {{dir.path(), QStringLiteral("--rules"), rules}, QStringLiteral("it is a folder")},
            {{log, QStringLiteral("--rules"), dir.filePath(QStringLiteral("none.json"))}, QStringLiteral("cannot read")},
        };
        for (const Case& c : cases) {
            const Run r = replay(c.args);
            QVERIFY2(r.code == 2 && r.err.contains(c.says), qPrintable(c.args.join(QLatin1Char(' ')) + QLatin1Char('\n') + describe(r)));
        }
        writeFile(rules.toStdString(), "{\"rules\": [{\"name\": \"ip\", \"levels\": []}]}");
        const Run r = replay({log, QStringLiteral("--rules"), rules});
        QVERIFY2(r.code == 2 && r.err.contains(rules), qPrintable(describe(r)));
    }

    // A read-only command: a missing database is not created (exit 4), a
    // file that is not a Floodgate database is refused (exit 4).
    void unusableDatabaseExits4()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath(QStringLiteral("access.log"));
        writeFile(log.toStdString(), sampleLog());
        const QString db = dir.filePath(QStringLiteral("none.db"));
        Run r = replay({log, QStringLiteral("--db"), db});
        QVERIFY2(r.code == 4 && r.err.contains(QStringLiteral("no database at")), qPrintable(describe(r)));
        QVERIFY(!QFile::exists(db));
        const QString junk = dir.filePath(QStringLiteral("junk.db"));
        writeFile(junk.toStdString(), std::string(8192, 'x'));
        r = replay({log, QStringLiteral("--db"), junk});
        QVERIFY2(r.code == 4, qPrintable(describe(r)));

        // A real database (made by `floodgate token`): its rules are used.
        const QString real = dir.filePath(QStringLiteral("real.db"));
        QProcess token;
        token.setProcessEnvironment(childEnvironment());
        token.start(QStringLiteral(FLOODGATE_BINARY), {QStringLiteral("token"), QStringLiteral("--db"), real});
        QVERIFY(token.waitForFinished(30'000) && token.exitCode() == 0);
        r = replay({log, QStringLiteral("--db"), real});
        QVERIFY2(r.code == 0 && r.out.contains(QStringLiteral("Rules: the rules in ") + real), qPrintable(describe(r)));
    }

    void emptyTruncatedAndBackwardsFiles()
    {
        QTemporaryDir dir;
        const QString rules = dir.filePath(QStringLiteral("rules.json"));
        writeFile(rules.toStdString(), "{}");
        const QString empty = dir.filePath(QStringLiteral("empty.log"));
        writeFile(empty.toStdString(), "");
        Run r = replay({empty, QStringLiteral("--rules"), rules});
        QVERIFY2(r.code == 0 && r.out.contains(empty + QStringLiteral(": empty")) && r.out.contains(QStringLiteral("requests replayed: 0")),
                 qPrintable(describe(r)));

        std::string big;
        for (int i = 0; i < 20000; ++i)
            big += combinedLine("192.0.2." + std::to_string(i % 250 + 1), logStart() + i * 100, "/page/" + std::to_string(i));
        const QString gz = dir.filePath(QStringLiteral("access.log.1.gz"));
        QVERIFY(writeGzip(gz.toStdString(), big));
        QFile f(gz);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(f.size() * 2 / 3));
        f.close();
        r = replay({gz, QStringLiteral("--rules"), rules});
        QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("the gzip data ends early")) && r.err.contains(QStringLiteral("the report covers"))
                     && r.out.contains(QStringLiteral("Lines read:")),
                 qPrintable(describe(r)));

        const QString backwards = dir.filePath(QStringLiteral("backwards.log"));
        writeFile(backwards.toStdString(), combinedLine("192.0.2.1", logStart() + 3600'000, "/later") + combinedLine("192.0.2.1", logStart() + 3630'000, "/later-still")
                                               + combinedLine("192.0.2.1", logStart(), "/an-hour-earlier"));
        r = replay({backwards, QStringLiteral("--rules"), rules});
        QVERIFY2(r.code == 0 && r.out.contains(QStringLiteral("Lines out of order: 1")) && r.out.contains(QStringLiteral("oldest first")),
                 qPrintable(describe(r)));

        const QString notALog = dir.filePath(QStringLiteral("notes.txt"));
        writeFile(notALog.toStdString(), "hello\nworld\n");
        r = replay({notALog, QStringLiteral("--rules"), rules});
        QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("not a log this reads")), qPrintable(describe(r)));
    }

    // 2 GB of nothing (a sparse file, no line breaks): streamed through in
    // bounded memory, reported as one line that is too long, never held.
    void sparseTwoGigabytes()
    {
        QTemporaryDir dir;
        const QString rules = dir.filePath(QStringLiteral("rules.json"));
        writeFile(rules.toStdString(), "{}");
        const QString sparse = dir.filePath(QStringLiteral("sparse.log"));
        QFile f(sparse);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QVERIFY(f.resize(qint64(2) << 30));
        f.close();
        Run r = replay({sparse, QStringLiteral("--rules"), rules, QStringLiteral("--format"), QStringLiteral("combined")}, 120'000);
        QVERIFY2(r.code == 0 && r.out.contains(QStringLiteral("Lines that did not parse: 1")) && r.out.contains(QStringLiteral("longer than 64 KiB")),
                 qPrintable(describe(r)));
        r = replay({sparse, QStringLiteral("--rules"), rules}, 120'000);
        QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("not a log this reads")), qPrintable(describe(r)));
        // The largest child this test waited for: its peak resident memory.
        struct rusage usage{};
        QCOMPARE(getrusage(RUSAGE_CHILDREN, &usage), 0);
        QVERIFY2(usage.ru_maxrss < 100 * 1024, qPrintable(QStringLiteral("peak %1 KiB").arg(usage.ru_maxrss)));
    }
};

QTEST_GUILESS_MAIN(TestReplayCli)
#include "test_replay_cli.moc"
