// SPDX-License-Identifier: GPL-3.0-or-later
// The operator's commands through the built binary on a real SQLite file:
// a running `floodgate --headless` applies `floodgate block` within 2 s (403)
// and `unblock` the same way; the audit trail names the command line's user;
// lists show has each entry's time left; tiers, customers and rules are set,
// shown, exported, imported and removed; bad input is exit 2 with one line
// and changes nothing; read-only commands on a missing database exit 4 and
// create nothing; explain asks a running instance about a flooding client.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <sqlite3.h>

#include <cstring>
#endif

using namespace FloodgateTest;

namespace {

const QString USER_NAME = QStringLiteral("cli-test-operator");

QProcessEnvironment userEnvironment()
{
    QProcessEnvironment env = childEnvironment();
    env.insert(QStringLiteral("USER"), USER_NAME);
    return env;
}

struct Run {
    int code = -1;
    QString out;
    QString err;
};

// `floodgate ARGS` as the test's operator.
Run floodgate(const QStringList& args)
{
    Run r;
    r.code = runToEnd(args, &r.err, &r.out, 15000, userEnvironment());
    return r;
}

QStringList split(const QString& text)
{
    return text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

QStringList serveArgs(const QString& db)
{
    return {QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
            QStringLiteral("127.0.0.1:0"),  QStringLiteral("--db"),     db,                           QStringLiteral("--threads"),
            QStringLiteral("1")};
}

// One SQL answer from the database, read as a separate process would.
QString query(const QString& db, const char* sql)
{
    sqlite3* h = nullptr;
    QString result;
    if (sqlite3_open_v2(db.toLocal8Bit().constData(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                for (int c = 0; c < sqlite3_column_count(st); ++c)
                    result += QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, c))) + QLatin1Char('|');
                result += QLatin1Char('\n');
            }
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return result;
}

bool writeText(const QString& file, const char* text)
{
    QFile f(file);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == qint64(std::strlen(text));
}

// Everything a command could change: the lists, tiers, customers, rules and the audit trail.
QString everything(const QString& db)
{
    return query(db, "SELECT * FROM list_entries ORDER BY id") + query(db, "SELECT * FROM tiers") + query(db, "SELECT * FROM tier_levels")
        + query(db, "SELECT * FROM customers") + query(db, "SELECT * FROM customer_overrides") + query(db, "SELECT * FROM rules")
        + query(db, "SELECT * FROM rule_levels") + query(db, "SELECT id, actor, action, subject FROM audit ORDER BY id");
}

// Asks as `client` every 200 ms until the answer is `status`: how many ms
// that took, or -1 when it did not come within `withinMs`. Slow enough that
// the polling itself never trips the default burst level (6 per 3 s).
int msUntil(std::uint16_t port, const char* client, int status, int withinMs = 2000)
{
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() <= withinMs) {
        if (fetch(port, get("/"), 3000, client).value_or(Response{}).status == status)
            return int(clock.elapsed());
        QTest::qWait(200);
    }
    return -1;
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Issue 28.6: the man page and docs/INTERFACE.md name every option and
    // command --help names, and no other: they cannot drift apart again
    // unseen.
    void theManPageAndInterfaceNameWhatHelpNames()
    {
        QString err, help;
        QCOMPARE(runToEnd({QStringLiteral("--help")}, &err, &help), 0);
        const auto tokens = [](const QString& text, const QRegularExpression& re) {
            QSet<QString> out;
            for (auto it = re.globalMatch(text); it.hasNext();)
                out.insert(it.next().captured(1));
            return out;
        };
        // Options: a line of --help that starts with one.
        const QSet<QString> options = tokens(help, QRegularExpression(QStringLiteral("(?m)^\\s+(--[a-z][a-z0-9-]*)")));
        QVERIFY2(options.size() > 20, qPrintable(help));
        QFile man(QStringLiteral(FLOODGATE_SOURCE_DIR "/resources/man/floodgate.1.scd"));
        QVERIFY(man.open(QIODevice::ReadOnly));
        const QString page = QString::fromUtf8(man.readAll());
        QFile iface(QStringLiteral(FLOODGATE_SOURCE_DIR "/docs/INTERFACE.md"));
        QVERIFY(iface.open(QIODevice::ReadOnly));
        const QString interface = QString::fromUtf8(iface.readAll());
        // The man page's options are its *--name* headings.
        const QSet<QString> manOptions = tokens(page, QRegularExpression(QStringLiteral("(?m)^\\*(--[a-z][a-z0-9-]*)\\*")));
        QStringList missing, extra, notInInterface;
        for (const QString& o : options) {
            if (o == QStringLiteral("--help"))
                continue;
            if (!manOptions.contains(o))
                missing << o;
            if (!interface.contains(o + QLatin1Char(' ')))
                notInInterface << o;
        }
        for (const QString& o : manOptions)
            if (!options.contains(o))
                extra << o;
        QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("not in the man page: ") + missing.join(QLatin1Char(' '))));
        QVERIFY2(extra.isEmpty(), qPrintable(QStringLiteral("in the man page, not in --help: ") + extra.join(QLatin1Char(' '))));
        QVERIFY2(notInInterface.isEmpty(), qPrintable(QStringLiteral("not in INTERFACE.md's list: ") + notInInterface.join(QLatin1Char(' '))));
        // Commands: "  name " lines of --help's command list.
        const QSet<QString> commands = tokens(help.section(QStringLiteral("Subcommands:"), 1), QRegularExpression(QStringLiteral("(?m)^  ([a-z][a-z-]*) ")));
        QVERIFY2(commands.size() > 8, qPrintable(help));
        // The man page's command headings start a line with *name; INTERFACE.md
        // names them in "floodgate a|b ..." lines.
        const QSet<QString> manCommands = tokens(page, QRegularExpression(QStringLiteral("(?m)^\\*([a-z][a-z-]*)[* ]")));
        QSet<QString> interfaceCommands;
        for (const QString& group : tokens(interface, QRegularExpression(QStringLiteral("(?m)^floodgate ([a-z][a-z|-]*)"))))
            for (const QString& c : group.split(QLatin1Char('|')))
                interfaceCommands.insert(c);
        for (const QString& c : commands) {
            QVERIFY2(manCommands.contains(c), qPrintable(QStringLiteral("command not in the man page: ") + c));
            QVERIFY2(interfaceCommands.contains(c), qPrintable(QStringLiteral("command not in INTERFACE.md: ") + c));
        }
    }

    // Issue 28.4: --demo without --db runs on a database of its own beside
    // the default one, says so, and leaves the default one alone.
    void theDemoHasADatabaseOfItsOwn()
    {
        QTemporaryDir data;
        QProcessEnvironment env = childEnvironment();
        env.insert(QStringLiteral("XDG_DATA_HOME"), data.path());
        QString err, out;
        const int code = runToEnd({QStringLiteral("--headless"), QStringLiteral("--demo"), QStringLiteral("--seconds"), QStringLiteral("1"),
                                   QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"), QStringLiteral("off"),
                                   QStringLiteral("--log"), QStringLiteral("off")},
                                  &err, &out, 20000, env);
        QCOMPARE(code, 0);
        const QString demo = data.filePath(QStringLiteral("floodgate/demo.db"));
        QVERIFY2(out.contains(QStringLiteral("database %1 (new, with the default rules) (the demo's own: --db names another)\n").arg(demo)), qPrintable(out));
        QVERIFY(QFile::exists(demo));
        QVERIFY(!QFile::exists(data.filePath(QStringLiteral("floodgate/floodgate.db"))));
    }

    // Issue 28.4: the console with no display says so in one line and
    // exits 2, naming --headless (Qt aborted with exit 134 and "Reinstalling
    // the application may fix this problem").
    void theConsoleWithoutADisplaySaysSo()
    {
        QTemporaryDir dir;
        QProcessEnvironment env = childEnvironment();
        for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
            env.remove(QString::fromLatin1(name));
        QString err, out;
        const int code = runToEnd({QStringLiteral("--db"), dir.filePath(QStringLiteral("x.db"))}, &err, &out, 15000, env);
        QCOMPARE(code, 2);
        QCOMPARE(err, QStringLiteral("floodgate: no display to open the console on (DISPLAY and WAYLAND_DISPLAY are not set): run it in a desktop "
                                     "session, or `floodgate --headless` to serve without a window\n"));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.db"))));
    }

    void aRunningInstanceAppliesBlockAndUnblockWithinTwoSeconds()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        Child c;
        QVERIFY(c.start(serveArgs(db)));
        QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.0.9")->status, 200);

        const Run block = floodgate({QStringLiteral("block"), QStringLiteral("127.0.0.9"), QStringLiteral("--ttl"), QStringLiteral("24h"),
                                     QStringLiteral("--reason"), QStringLiteral("scraper"), QStringLiteral("--db"), db});
        QVERIFY2(block.code == 0, qPrintable(block.err));
        QVERIFY2(block.out.startsWith(QStringLiteral("127.0.0.9/32 put on the blocklist for 1 d (until ")), qPrintable(block.out));
        const int blockedAfter = msUntil(c.port, "127.0.0.9", 403);
        QVERIFY2(blockedAfter >= 0, "not blocked within 2 s");
        QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.0.10")->status, 200);  // only that client

        // The audit trail, read through the running instance's API, names the command line's user.
        const std::string token = adminToken(db);
        const std::string audit = fetch(c.adminPort, get("/api/v1/audit", bearer(token)))->body;
        QVERIFY2(audit.find("\"actor\":\"cli:" + USER_NAME.toStdString() + "\",\"action\":\"list.add\",\"subject\":\"blocklist 127.0.0.9/32\"")
                     != std::string::npos,
                 audit.c_str());

        const Run unblock = floodgate({QStringLiteral("unblock"), QStringLiteral("127.0.0.9"), QStringLiteral("--db=") + db});
        QVERIFY2(unblock.code == 0, qPrintable(unblock.err));
        QVERIFY2(msUntil(c.port, "127.0.0.9", 200) >= 0, "still blocked 2 s after unblock");
        // Nothing left to take off: said, exit 1.
        const Run again = floodgate({QStringLiteral("unblock"), QStringLiteral("127.0.0.9"), QStringLiteral("--db"), db});
        QCOMPARE(again.code, 1);
        QCOMPARE(again.err.count(QLatin1Char('\n')), 1);
        QCOMPARE(c.stop(), 0);
    }

    void listsShowHasTheTimeLeftOnEachEntry()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QCOMPARE(floodgate(split(QStringLiteral("block 203.0.113.0/24 --ttl 2h --reason scrapers --db ") + db)).code, 0);
        QCOMPARE(floodgate(split(QStringLiteral("safelist 2001:db8::/48 --ttl=permanent --reason office --db ") + db)).code, 0);
        QCOMPARE(floodgate(split(QStringLiteral("block 198.51.100.7 --db ") + db)).code, 0);  // the default TTL: 7 days

        const Run text = floodgate(split(QStringLiteral("lists show --db ") + db));
        QCOMPARE(text.code, 0);
        const QString who = QStringLiteral("cli:") + USER_NAME;
        QVERIFY2(text.out.contains(QStringLiteral("blocklist: 2 entries")), qPrintable(text.out));
        QVERIFY2(QRegularExpression(QStringLiteral("203\\.0\\.113\\.0/24 +2 h +operator +") + who + QStringLiteral(" +scrapers")).match(text.out).hasMatch(),
                 qPrintable(text.out));
        QVERIFY2(QRegularExpression(QStringLiteral("198\\.51\\.100\\.7/32 +7 d +operator")).match(text.out).hasMatch(), qPrintable(text.out));
        QVERIFY2(text.out.contains(QStringLiteral("safelist: 1 entry")), qPrintable(text.out));
        QVERIFY2(QRegularExpression(QStringLiteral("2001:db8::/48 +permanent +operator +") + who + QStringLiteral(" +office")).match(text.out).hasMatch(),
                 qPrintable(text.out));

        const Run json = floodgate(split(QStringLiteral("lists show safelist --json --db ") + db));
        QCOMPARE(json.code, 0);
        QVERIFY2(json.out.startsWith(QStringLiteral("{\"list\":\"safelist\",\"count\":1,\"entries\":[{\"address\":\"2001:db8::/48\"")), qPrintable(json.out));
        QVERIFY(json.out.contains(QStringLiteral("\"expires_in\":null")));
        const Run blocked = floodgate(split(QStringLiteral("lists show blocklist --json --db ") + db));
        const auto left = QRegularExpression(QStringLiteral("\"address\":\"203.0.113.0/24\".*?\"expires_in\":(\\d+)")).match(blocked.out);
        QVERIFY2(left.hasMatch(), qPrintable(blocked.out));
        QVERIFY(left.captured(1).toInt() > 7100 && left.captured(1).toInt() <= 7200);
    }

    // A reason or a customer's name is whatever the API or a command was
    // given (a line break, ESC, a right-to-left override): the tables show
    // it as visible escapes, never as a line of their own, a window title
    // or a cleared screen (docs/INTERFACE.md).
    void tablesShowStoredTextEscaped()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString hostile = QString::fromUtf8("x\x1b]0;pwned\x07\x1b[2J\r\xe2\x80\xae\nfloodgate: SIGHUP: forged line");
        const QByteArray shown = "x\\x1B]0;pwned\\x07\\x1B[2J\\r\\u{202E}\\nfloodgate: SIGHUP: forged line";
        QCOMPARE(floodgate({QStringLiteral("block"), QStringLiteral("203.0.113.9"), QStringLiteral("--reason"), hostile, QStringLiteral("--db"), db}).code, 0);
        QCOMPARE(floodgate({QStringLiteral("customers"), QStringLiteral("set"), QStringLiteral("acme"), QStringLiteral("--tier"), QStringLiteral("Pro"),
                            QStringLiteral("--name"), hostile, QStringLiteral("--db"), db})
                     .code,
                 0);
        for (const QString& command : {QStringLiteral("lists show"), QStringLiteral("customers show")}) {
            const Run r = floodgate(split(command + QStringLiteral(" --db ")) + QStringList{db});
            QCOMPARE(r.code, 0);
            const QByteArray out = r.out.toUtf8();
            QVERIFY2(out.contains(shown), out.constData());
            for (const char* raw : {"\x1b", "\x07", "\r", "\xe2\x80\xae"})
                QVERIFY2(!out.contains(raw), out.constData());
            for (const QByteArray& line : out.split('\n'))
                QVERIFY2(!line.startsWith("floodgate: SIGHUP"), out.constData());
        }
    }

    void tiersAndCustomers()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const Run set = floodgate(split(QStringLiteral("tiers set Gold 100/1m 5000/1h --db ") + db));
        QVERIFY2(set.code == 0, qPrintable(set.err));
        QVERIFY2(set.out.startsWith(QStringLiteral("tier Gold created: 100/1m  5000/1h")), qPrintable(set.out));
        const Run tiers = floodgate(split(QStringLiteral("tiers show --db ") + db));
        QVERIFY2(QRegularExpression(QStringLiteral("\nGold +100/1m  5000/1h\n")).match(tiers.out).hasMatch(), qPrintable(tiers.out));
        QVERIFY2(QRegularExpression(QStringLiteral("\nPro +100/1m  5000/1h\n")).match(tiers.out).hasMatch(), qPrintable(tiers.out));  // a default tier
        QVERIFY(floodgate(split(QStringLiteral("tiers show --json --db ") + db))
                    .out.contains(QStringLiteral("{\"name\":\"Gold\",\"levels\":[{\"limit\":100,\"period\":60},{\"limit\":5000,\"period\":3600}]}")));

        const Run created = floodgate({QStringLiteral("customers"), QStringLiteral("set"), QStringLiteral("acme"), QStringLiteral("--tier"),
                                       QStringLiteral("Gold"), QStringLiteral("--name"), QStringLiteral("Acme Inc."), QStringLiteral("--override"),
                                       QStringLiteral("200/1m"), QStringLiteral("--db"), db});
        QCOMPARE(created.code, 0);
        // A new customer's key, printed this once; only its SHA-256 is on disk.
        const QRegularExpressionMatch printed = QRegularExpression(QStringLiteral("\napi key: (fgk_[A-Za-z0-9_-]{43})\n")).match(created.out);
        QVERIFY2(printed.hasMatch(), qPrintable(created.out));
        const QString firstKey = printed.captured(1);
        QVERIFY(created.out.contains(QStringLiteral("The customer sends it as \"X-Api-Key: ") + firstKey));
        QCOMPARE(query(db, "SELECT count(*) FROM customer_keys WHERE customer = 'acme'"), QStringLiteral("1|\n"));
        for (const QString& file : {db, db + QStringLiteral("-wal")}) {
            QFile f(file);
            QVERIFY(!f.open(QIODevice::ReadOnly) || !f.readAll().contains(firstKey.toLatin1()));
        }
        QString shown = floodgate(split(QStringLiteral("customers show --db ") + db)).out;
        QVERIFY2(QRegularExpression(QStringLiteral("\nacme +Acme Inc\\. +Gold +200/1m +") + QRegularExpression::escape(firstKey.left(12)) + QStringLiteral("\n"))
                     .match(shown)
                     .hasMatch(),
                 qPrintable(shown));
        // What is not given stays (the key too, and no new one is printed); --no-overrides clears them.
        const Run changed = floodgate(split(QStringLiteral("customers set acme --tier=Pro --db ") + db));
        QCOMPARE(changed.code, 0);
        QVERIFY2(!changed.out.contains(QStringLiteral("api key")), qPrintable(changed.out));
        shown = floodgate(split(QStringLiteral("customers show --db ") + db)).out;
        QVERIFY2(QRegularExpression(QStringLiteral("\nacme +Acme Inc\\. +Pro +200/1m +") + QRegularExpression::escape(firstKey.left(12)) + QStringLiteral("\n"))
                     .match(shown)
                     .hasMatch(),
                 qPrintable(shown));
        QCOMPARE(floodgate(split(QStringLiteral("customers set acme --tier Pro --no-overrides --db ") + db)).code, 0);
        const Run json = floodgate(split(QStringLiteral("customers show --json --db ") + db));
        QVERIFY2(json.out.contains(QStringLiteral("{\"id\":\"acme\",\"name\":\"Acme Inc.\",\"tier\":\"Pro\",\"overrides\":[],\"keys\":[{\"id\":\"")
                                   + firstKey.left(12)),
                 qPrintable(json.out));

        // A rotation with an overlap: two keys, the old one expiring; then it is revoked by its id.
        const Run rotated = floodgate(split(QStringLiteral("customers key acme --keep-old 1h --db ") + db));
        QVERIFY2(rotated.code == 0, qPrintable(rotated.err));
        QVERIFY2(rotated.out.contains(QStringLiteral("its other 1 key stays valid for 1 h;")), qPrintable(rotated.out));
        const QString secondKey = QRegularExpression(QStringLiteral("\napi key: (fgk_[A-Za-z0-9_-]{43})\n")).match(rotated.out).captured(1);
        QVERIFY(!secondKey.isEmpty() && secondKey != firstKey);
        shown = floodgate(split(QStringLiteral("customers show --db ") + db)).out;
        QVERIFY2(shown.contains(firstKey.left(12) + QStringLiteral(" (expires in ")) && shown.contains(secondKey.left(12)), qPrintable(shown));
        const Run revoked = floodgate(split(QStringLiteral("customers key acme --revoke ") + firstKey.left(12) + QStringLiteral(" --db ") + db));
        QVERIFY2(revoked.code == 0, qPrintable(revoked.err));
        QCOMPARE(query(db, "SELECT count(*) FROM customer_keys WHERE customer = 'acme'"), QStringLiteral("1|\n"));
        QCOMPARE(floodgate(split(QStringLiteral("customers key acme --revoke ") + firstKey.left(12) + QStringLiteral(" --db ") + db)).code, 1);
        QCOMPARE(floodgate(split(QStringLiteral("customers key nobody --db ") + db)).code, 1);
        QCOMPARE(floodgate(split(QStringLiteral("customers key acme --keep-old soon --db ") + db)).code, 2);

        // A tier a customer uses is not removed under it; the customer is.
        QCOMPARE(floodgate(split(QStringLiteral("customers remove acme --db ") + db)).code, 0);
        QVERIFY(!floodgate(split(QStringLiteral("customers show --db ") + db)).out.contains(QStringLiteral("acme")));
        const Run gone = floodgate(split(QStringLiteral("customers remove acme --db ") + db));
        QCOMPARE(gone.code, 1);
        QVERIFY2(gone.err.contains(QStringLiteral("acme")), qPrintable(gone.err));

        const QString audit = query(db, "SELECT actor, action, subject FROM audit ORDER BY id");
        const QString who = QStringLiteral("cli:") + USER_NAME;
        for (const char* line : {"|tier.add|tier Gold|", "|customer.add|customer acme|", "|customer.replace|customer acme|", "|customer.delete|customer acme|"})
            QVERIFY2(audit.contains(who + QString::fromUtf8(line)), qPrintable(audit));
    }

    // `tiers set NAME LEVEL...` replaces the levels and says which went;
    // `--level` changes or adds the level of one period and keeps the others.
    void tiersSetSaysWhatItChangedAndLevelChangesOne()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const Run set = floodgate(split(QStringLiteral("tiers set Pro 200/60s --db ") + db));  // Pro is 100/1m 5000/1h
        QVERIFY2(set.code == 0, qPrintable(set.err));
        QVERIFY2(set.out.startsWith(QStringLiteral("tier Pro set: 200/1m (was 100/1m  5000/1h)")), qPrintable(set.out));
        QVERIFY2(set.out.contains(QStringLiteral("\n  changed 100/1m -> 200/1m\n  removed 5000/1h\n")), qPrintable(set.out));

        const Run one = floodgate(split(QStringLiteral("tiers set Pro --level 6000/1h --level 300/1m --db ") + db));
        QVERIFY2(one.code == 0, qPrintable(one.err));
        QVERIFY2(one.out.contains(QStringLiteral("\n  changed 200/1m -> 300/1m\n  added 6000/1h\n")), qPrintable(one.out));
        QVERIFY2(QRegularExpression(QStringLiteral("\nPro +300/1m  6000/1h\n")).match(floodgate(split(QStringLiteral("tiers show --db ") + db)).out).hasMatch(),
                 qPrintable(floodgate(split(QStringLiteral("tiers show --db ") + db)).out));
        const Run keep = floodgate(split(QStringLiteral("tiers set Pro --level 300/1m --db ") + db));
        QVERIFY2(keep.code == 0 && keep.out.startsWith(QStringLiteral("tier Pro unchanged: 300/1m  6000/1h")), qPrintable(keep.out + keep.err));
        const Run fresh = floodgate(split(QStringLiteral("tiers set Gold --level 50/1m --db ") + db));
        QVERIFY2(fresh.code == 0 && fresh.out.startsWith(QStringLiteral("tier Gold created: 50/1m")), qPrintable(fresh.out + fresh.err));

        const QString before = everything(db);
        for (const char* bad : {"tiers set Pro 100/1m --level 200/1m", "tiers set Pro", "tiers set Pro --level 100-1m"}) {
            const Run r = floodgate(split(QString::fromUtf8(bad) + QStringLiteral(" --db ") + db));
            QVERIFY2(r.code == 2 && r.err.startsWith(QStringLiteral("floodgate: ")) && r.err.count(QLatin1Char('\n')) == 1, qPrintable(QString::fromUtf8(bad) + QStringLiteral(": ") + r.err));
        }
        QCOMPARE(everything(db), before);
    }

    // Tier names are one namespace, case-insensitively: `pro` is Pro.
    void tierNamesAreMatchedCaseInsensitively()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const Run set = floodgate(split(QStringLiteral("tiers set pro 200/1m 5000/1h --db ") + db));
        QVERIFY2(set.code == 0, qPrintable(set.err));
        QVERIFY2(set.out.startsWith(QStringLiteral("tier Pro set (\"pro\" is Pro: tier names are matched case-insensitively): 200/1m  5000/1h")),
                 qPrintable(set.out));
        const Run shown = floodgate(split(QStringLiteral("tiers show --db ") + db));
        QVERIFY2(!shown.out.contains(QStringLiteral("\npro ")), qPrintable(shown.out));
        QVERIFY2(QRegularExpression(QStringLiteral("\nPro +200/1m  5000/1h\n")).match(shown.out).hasMatch(), qPrintable(shown.out));
        QCOMPARE(floodgate(split(QStringLiteral("customers set acme --tier PRO --db ") + db)).code, 0);
        QVERIFY2(floodgate(split(QStringLiteral("customers show --json --db ") + db)).out.contains(QStringLiteral("\"tier\":\"Pro\"")),
                 qPrintable(floodgate(split(QStringLiteral("customers show --json --db ") + db)).out));
    }

    void tiersRemove()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QCOMPARE(floodgate(split(QStringLiteral("tiers set Gold 100/1m --db ") + db)).code, 0);
        for (const char* id : {"acme", "beta", "corp", "delta"})
            QCOMPARE(floodgate(split(QStringLiteral("customers set ") + QString::fromUtf8(id) + QStringLiteral(" --tier Gold --db ") + db)).code, 0);
        const QString before = everything(db);
        const Run used = floodgate(split(QStringLiteral("tiers remove gold --db ") + db));
        QCOMPARE(used.code, 1);
        QCOMPARE(used.err, QStringLiteral("floodgate: tier \"Gold\" is used by 4 customers (acme, beta, corp, ...): move them to another tier first\n"));
        QCOMPARE(everything(db), before);

        const Run removed = floodgate(split(QStringLiteral("tiers remove enterprise --db ") + db));
        QVERIFY2(removed.code == 0, qPrintable(removed.err));
        QVERIFY2(removed.out.startsWith(QStringLiteral("tier Enterprise removed (it was 200/1m  10000/1h); a running Floodgate on ")), qPrintable(removed.out));
        QVERIFY(!floodgate(split(QStringLiteral("tiers show --db ") + db)).out.contains(QStringLiteral("Enterprise")));
        const Run none = floodgate(split(QStringLiteral("tiers remove Enterprise --db ") + db));
        QCOMPARE(none.code, 1);
        QCOMPARE(none.err, QStringLiteral("floodgate: there is no tier \"Enterprise\"\n"));
        QVERIFY(query(db, "SELECT actor, action, subject FROM audit").contains(QStringLiteral("cli:") + USER_NAME + QStringLiteral("|tier.delete|tier Enterprise|")));
        // Never made a database to remove nothing from.
        const QString missing = dir.filePath(QStringLiteral("none.db"));
        QCOMPARE(floodgate(split(QStringLiteral("tiers remove Pro --db ") + missing)).code, 4);
        QVERIFY(!QFile::exists(missing));
    }

    // A CSV's ttl column takes `permanent` as --ttl does.
    void listsImportTtlPermanent()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString file = dir.filePath(QStringLiteral("in.csv"));
        QVERIFY(writeText(file, "list,address,reason,ttl\nblocklist,198.51.100.1,forever,permanent\nblocklist,198.51.100.2,default,\n"));
        const Run r = floodgate(split(QStringLiteral("lists import ") + file + QStringLiteral(" --db ") + db));
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString shown = floodgate(split(QStringLiteral("lists show --db ") + db)).out;
        QVERIFY2(QRegularExpression(QStringLiteral("198\\.51\\.100\\.1/32 +permanent +import ")).match(shown).hasMatch(), qPrintable(shown));
        QVERIFY2(QRegularExpression(QStringLiteral("198\\.51\\.100\\.2/32 +7 d +import ")).match(shown).hasMatch(), qPrintable(shown));
    }

    // lists export then lists import into another database: the same rows
    // (source, created_at, created_by, reason, expiry), CSV and JSON alike.
    void listsExportImportRoundTrip_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("csv") << "lists.csv";
        QTest::newRow("json") << "lists.json";
    }
    void listsExportImportRoundTrip()
    {
        QFETCH(QString, name);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString plain = dir.filePath(QStringLiteral("plain.txt"));
        QCOMPARE(floodgate(split(QStringLiteral("block 203.0.113.0/24 --ttl 2h --reason scrapers --db ") + db)).code, 0);
        QCOMPARE(floodgate(split(QStringLiteral("safelist 2001:db8::/48 --ttl=permanent --reason office --db ") + db)).code, 0);
        QVERIFY(writeText(plain, "198.51.100.9\n"));
        QCOMPARE(floodgate(split(QStringLiteral("lists import ") + plain + QStringLiteral(" --db ") + db)).code, 0);
        const QString file = dir.filePath(name);
        QCOMPARE(floodgate(split(QStringLiteral("lists export ") + file + QStringLiteral(" --db ") + db)).code, 0);
        const QString other = dir.filePath(QStringLiteral("other.db"));
        const Run r = floodgate(split(QStringLiteral("lists import ") + file + QStringLiteral(" --db ") + other));
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const char* rows = "SELECT list, address, prefix, reason, source, created_at, created_by, expires_at FROM list_entries ORDER BY list, address";
        QVERIFY(query(db, rows).contains(QStringLiteral("|operator|")));
        QCOMPARE(query(other, rows), query(db, rows));
    }

    // The most common blocklist: one address or range a line, '#' comments.
    void listsImportPlainAddressFile_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("by extension") << "blocklist.txt";
        QTest::newRow("by content") << "blocklist.netset";
    }
    void listsImportPlainAddressFile()
    {
        QFETCH(QString, name);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        const QString file = dir.filePath(name);
        QVERIFY(writeText(file, "# a blocklist\n198.51.100.7\n\n203.0.113.0/24  \t\r\n2001:db8::1 # scanner\n"));
        const Run r = floodgate(split(QStringLiteral("lists import ") + file + QStringLiteral(" --db ") + db));
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("imported 3 entries from ")), qPrintable(r.out));
        const QString shown = floodgate(split(QStringLiteral("lists show blocklist --db ") + db)).out;
        for (const char* address : {"198\\.51\\.100\\.7/32", "203\\.0\\.113\\.0/24", "2001:db8::1/128"})
            QVERIFY2(QRegularExpression(QString::fromUtf8(address) + QStringLiteral(" +7 d +import +cli:") + USER_NAME + QStringLiteral(" +imported\n"))
                         .match(shown)
                         .hasMatch(),
                     qPrintable(shown));

        QVERIFY(writeText(file, "198.51.100.8\n# fine\n198.51.100.300\n"));
        const QString before = everything(db);
        const Run bad = floodgate(split(QStringLiteral("lists import ") + file + QStringLiteral(" --db ") + db));
        QCOMPARE(bad.code, 1);
        QVERIFY2(bad.err.startsWith(file + QStringLiteral(":3: address \"198.51.100.300\": ")), qPrintable(bad.err));
        QCOMPARE(everything(db), before);
    }

    void rulesShowExportImport()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QCOMPARE(floodgate(split(QStringLiteral("token --db ") + db)).code, 0);  // a new database with the default rules
        const Run shown = floodgate(split(QStringLiteral("rules show --db ") + db));
        QCOMPARE(shown.code, 0);
        const QString file = dir.filePath(QStringLiteral("rules.json"));
        QCOMPARE(floodgate(split(QStringLiteral("rules export ") + file + QStringLiteral(" --db ") + db)).code, 0);
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray exported = f.readAll();
        f.close();
        QCOMPARE(QString::fromUtf8(exported), shown.out);
        QVERIFY(exported.contains("{\"name\":\"ip\",\"key\":\"address\""));
        QVERIFY(exported.contains("\"limit\":6,\"period\":3,\"algorithm\":\"lockout\""));

        // The same document with the burst level at 8: imported, audited, shown.
        QByteArray edited = exported;
        edited.replace("\"limit\":6,\"period\":3,", "\"limit\":8,\"period\":3,");
        const QString editedFile = dir.filePath(QStringLiteral("edited.json"));
        QFile e(editedFile);
        QVERIFY(e.open(QIODevice::WriteOnly));
        e.write(edited);
        e.close();
        const Run imported = floodgate(split(QStringLiteral("rules import ") + editedFile + QStringLiteral(" --db ") + db));
        QVERIFY2(imported.code == 0, qPrintable(imported.err));
        QCOMPARE(floodgate(split(QStringLiteral("rules show --db ") + db)).out.toUtf8(), edited);
        QVERIFY(query(db, "SELECT actor, action FROM audit").contains(QStringLiteral("cli:") + USER_NAME + QStringLiteral("|rules.replace|")));

        // A document that does not decode: exit 1, named, nothing changed.
        const QString badFile = dir.filePath(QStringLiteral("bad.json"));
        QFile b(badFile);
        QVERIFY(b.open(QIODevice::WriteOnly));
        b.write("{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":0,\"period\":3}]}]}");
        b.close();
        const QString before = everything(db);
        const Run bad = floodgate(split(QStringLiteral("rules import ") + badFile + QStringLiteral(" --db ") + db));
        QCOMPARE(bad.code, 1);
        QVERIFY2(bad.err.startsWith(QStringLiteral("floodgate: ") + badFile + QStringLiteral(": rules")) && bad.err.contains(QStringLiteral("nothing was imported")),
                 qPrintable(bad.err));
        QCOMPARE(bad.err.count(QLatin1Char('\n')), 1);
        QCOMPARE(everything(db), before);
    }

    void rulesImportRefusesGlobsPastTheCaps()
    {
        // The caps of Tuning.h, by the one validator the admin API and the
        // console use too: exit 1 naming the field, nothing changed.
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QCOMPARE(floodgate(split(QStringLiteral("token --db ") + db)).code, 0);
        const QString file = dir.filePath(QStringLiteral("long.json"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"excluded_paths\":[\"*.css\",\"*" + QByteArray(511, 'a') + "*\"]}");
        f.close();
        const QString before = everything(db);
        const Run refused = floodgate(split(QStringLiteral("rules import ") + file + QStringLiteral(" --db ") + db));
        QCOMPARE(refused.code, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("excluded_paths[1] must be at most 512 characters; nothing was imported")),
                 qPrintable(refused.err));
        QCOMPARE(everything(db), before);
    }

    void badInputIsExit2AndChangesNothing_data()
    {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("named");  // what the one line must name
        QTest::newRow("unparseable address") << "block 203.0.113.300" << "203.0.113.300";
        QTest::newRow("prefix out of range") << "block 203.0.113.0/33" << "/33";
        QTest::newRow("v6 prefix out of range") << "safelist 2001:db8::/129" << "/129";
        QTest::newRow("negative ttl") << "block 203.0.113.7 --ttl -1d" << "ttl must be > 0";
        QTest::newRow("negative ttl =") << "block 203.0.113.7 --ttl=-5m" << "ttl must be > 0";
        QTest::newRow("unparseable ttl") << "safelist 203.0.113.7 --ttl soon" << "ttl must be a number";
        QTest::newRow("unknown ttl unit") << "block 203.0.113.7 --ttl 7y" << "unknown unit \"y\"";
        QTest::newRow("unblock bad address") << "unblock 203.0.113.x" << "203.0.113.x";
        QTest::newRow("malformed level") << "tiers set Gold 100-1m" << "\"100-1m\" is not LIMIT/PERIOD";
        QTest::newRow("level without limit") << "tiers set Gold /1m" << "\"/1m\" is not LIMIT/PERIOD";
        QTest::newRow("level zero period") << "tiers set Gold 100/0s" << "the period must be > 0";
        QTest::newRow("level zero limit") << "tiers set Gold 0/1m" << "limit";
        QTest::newRow("same period twice") << "tiers set Gold 100/1m 200/60s" << "levels";
        QTest::newRow("tier name with /") << "tiers set a/b 100/1m" << "tier name \"a/b\"";
        QTest::newRow("unknown tier") << "customers set acme --tier Platinum" << "Platinum";
        QTest::newRow("malformed override") << "customers set acme --tier Pro --override 100" << "\"100\" is not LIMIT/PERIOD";
        QTest::newRow("unknown option") << "block 203.0.113.7 --until tomorrow" << "--until";
        QTest::newRow("explain bad address") << "explain 203.0.113.0/24 --token x" << "203.0.113.0/24";
    }
    void badInputIsExit2AndChangesNothing()
    {
        QFETCH(QString, args);
        QFETCH(QString, named);
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QCOMPARE(floodgate(split(QStringLiteral("block 192.0.2.1 --reason existing --db ") + db)).code, 0);
        QCOMPARE(floodgate(split(QStringLiteral("customers set acme --tier Free --db ") + db)).code, 0);
        const QString before = everything(db);
        QVERIFY(before.contains(QStringLiteral("192.0.2.1")));

        const Run r = floodgate(split(args) << QStringLiteral("--db") << db);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith(QStringLiteral("floodgate: ")), qPrintable(r.err));
        QVERIFY2(r.err.contains(named), qPrintable(r.err));
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        QVERIFY(r.out.isEmpty());
        QCOMPARE(everything(db), before);

        // On no database at all, none is made.
        const QString none = dir.filePath(QStringLiteral("none.db"));
        QCOMPARE(floodgate(split(args) << QStringLiteral("--db") << none).code, 2);
        QVERIFY(!QFile::exists(none));
    }

    void readOnlyCommandsNeverCreateADatabase_data()
    {
        QTest::addColumn<QString>("args");
        QTest::newRow("lists show") << "lists show";
        QTest::newRow("lists show --json") << "lists show blocklist --json";
        QTest::newRow("lists export") << "lists export OUT/lists.csv";
        QTest::newRow("tiers show") << "tiers show";
        QTest::newRow("customers show") << "customers show --json";
        QTest::newRow("rules show") << "rules show";
        QTest::newRow("rules export") << "rules export OUT/rules.json";
        QTest::newRow("explain") << "explain 127.0.0.1";
    }
    void readOnlyCommandsNeverCreateADatabase()
    {
        QFETCH(QString, args);
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("data"));
        const QString db = folder + QStringLiteral("/floodgate.db");
        const Run r = floodgate(split(args.replace(QStringLiteral("OUT"), dir.path())) << QStringLiteral("--db") << db);
        QCOMPARE(r.code, 4);
        QCOMPARE(r.err, QStringLiteral("floodgate: there is no database at %1 (this command creates none: name one with --db)\n").arg(db));
        QVERIFY(!QFile::exists(folder));
        QCOMPARE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList());
    }

    // The version is CMake's project(VERSION), given to this test by CMake
    // itself, so a version written anywhere else cannot pass.
    void versionIsTheProjectsVersion()
    {
        const Run r = floodgate({QStringLiteral("--version")});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, QStringLiteral("floodgate " FLOODGATE_VERSION "\n"));
        QVERIFY(r.err.isEmpty());
    }

    // Under systemd (StateDirectory=floodgate) the default database is in
    // $STATE_DIRECTORY, not in a home directory the service user lacks.
    void theDefaultDatabaseIsInTheStateDirectoryUnderSystemd()
    {
        QTemporaryDir state;
        QTemporaryDir xdg;
        QProcessEnvironment env = userEnvironment();
        env.insert(QStringLiteral("STATE_DIRECTORY"), state.path() + QStringLiteral(":/nonexistent/second"));
        env.insert(QStringLiteral("XDG_DATA_HOME"), xdg.path());
        QString err;
        QCOMPARE(runToEnd({QStringLiteral("block"), QStringLiteral("192.0.2.9")}, &err, nullptr, 15000, env), 0);
        QVERIFY2(QFile::exists(state.filePath(QStringLiteral("floodgate.db"))), qPrintable(err));
        QCOMPARE(QDir(xdg.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList());
        QString out;
        QCOMPARE(runToEnd({QStringLiteral("lists"), QStringLiteral("show")}, &err, &out, 15000, env), 0);
        QVERIFY2(out.contains(QStringLiteral("192.0.2.9")), qPrintable(out + err));
    }

    void explainAsksARunningInstance()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        Child c;
        QVERIFY(c.start(serveArgs(db)));
        // 127.0.0.5 floods past the default burst level (6 per 3 s, lockout).
        int status = 0;
        for (int i = 0; i < 12 && status != 429; ++i)
            status = fetch(c.port, get("/flood"), 3000, "127.0.0.5").value_or(Response{}).status;
        QCOMPARE(status, 429);
        QCOMPARE(floodgate({QStringLiteral("block"), QStringLiteral("127.0.0.0/29"), QStringLiteral("--ttl"), QStringLiteral("1h"),
                            QStringLiteral("--reason"), QStringLiteral("the test range"), QStringLiteral("--db"), db})
                     .code,
                 0);
        QTRY_COMPARE_WITH_TIMEOUT(fetch(c.port, get("/"), 3000, "127.0.0.6").value_or(Response{}).status, 403, 2000);

        const QString admin = QStringLiteral("127.0.0.1:%1").arg(c.adminPort);
        const Run r = floodgate({QStringLiteral("explain"), QStringLiteral("127.0.0.5"), QStringLiteral("--admin"), admin, QStringLiteral("--db"), db});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("127.0.0.5: ")), qPrintable(r.out));
        QVERIFY2(QRegularExpression(QStringLiteral("\n  ip-3s +3s +\\d+ +6 +\\d+ +\\d+ s(  refusing)?\n")).match(r.out).hasMatch(), qPrintable(r.out));
        QVERIFY2(QRegularExpression(QStringLiteral("\n  ip-5m +5m +\\d+ +300 +\\d+ +\\d+ s\n")).match(r.out).hasMatch(), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("blocklist 127.0.0.0/29, 1 h left, by cli:") + USER_NAME + QStringLiteral(": the test range")),
                 qPrintable(r.out));
        // The last refusals with the why the events API gives for them.
        const std::string events = fetch(c.adminPort, get("/api/v1/events", bearer(adminToken(db))))->body;
        const auto why = QRegularExpression(QStringLiteral("\"ip\":\"127\\.0\\.0\\.5\".*?\"why\":\"([^\"]+)\"")).match(QString::fromStdString(events));
        QVERIFY2(why.hasMatch(), events.c_str());
        QVERIFY2(r.out.contains(QStringLiteral("last refusals (")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral(" GET /flood throttle: ") + why.captured(1)), qPrintable(r.out));

        // A client it never saw; a wrong token; an address where nothing answers.
        const Run unseen = floodgate({QStringLiteral("explain"), QStringLiteral("198.51.100.1"), QStringLiteral("--admin=") + admin, QStringLiteral("--db"), db});
        QCOMPARE(unseen.code, 0);
        QVERIFY2(unseen.out.startsWith(QStringLiteral("198.51.100.1: not tracked")) && unseen.out.contains(QStringLiteral("on no list")), qPrintable(unseen.out));
        const Run wrong = floodgate({QStringLiteral("explain"), QStringLiteral("127.0.0.5"), QStringLiteral("--admin"), admin, QStringLiteral("--token"), QStringLiteral("nope")});
        QCOMPARE(wrong.code, 1);
        QVERIFY2(wrong.err.contains(QStringLiteral("refused the token")), qPrintable(wrong.err));
        QCOMPARE(c.stop(), 0);
        const Run stopped = floodgate({QStringLiteral("explain"), QStringLiteral("127.0.0.5"), QStringLiteral("--admin"), admin, QStringLiteral("--db"), db});
        QCOMPARE(stopped.code, 1);
        QVERIFY2(stopped.err.startsWith(QStringLiteral("floodgate: no admin API answers on ") + admin), qPrintable(stopped.err));
        QCOMPARE(stopped.err.count(QLatin1Char('\n')), 1);
    }

    // The parser hands replay's options to the replay (tests/replay covers the rest).
    void replayReachesTheReplay()
    {
        const Run r = floodgate(split(QStringLiteral("replay access.log --format combined")));
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QStringLiteral("floodgate: cannot read access.log: No such file or directory\n"));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
