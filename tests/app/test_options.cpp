// SPDX-License-Identifier: GPL-3.0-or-later
// The command line as CLI11 parses it into App::Options: every option of the
// serving modes in its old form and as --opt=value with the same result;
// the last of a repeated option counts, --trusted-proxy adds up; refused
// values give today's one-line messages; the commands' words and arguments
// (old `lists export FILE --db PATH` included); serving options given to a
// command are refused, not ignored; replay's options fill ReplayOptions;
// --help is the help of the command asked about.
#include <QtTest>

#include "app/Options.h"

#include <QFile>
#include <QTemporaryDir>

#include <string>
#include <vector>

using namespace Floodgate;

namespace {

std::optional<std::string> parse(const QStringList& args, App::Options& o)
{
    std::vector<std::string> words{"floodgate"};
    for (const QString& a : args)
        words.push_back(a.toStdString());
    std::vector<char*> argv;
    for (std::string& w : words)
        argv.push_back(w.data());
    return App::parseOptions(int(argv.size()), argv.data(), o);
}

QStringList split(const char* text)
{
    return QString::fromUtf8(text).split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

// Everything the serving options set, as one comparable line.
QString summary(const App::Options& o)
{
    QStringList proxies;
    for (const auto& c : o.trustedProxies)
        proxies << QString::fromStdString(c.toString());
    return QStringLiteral("headless=%1 listen=%2:%3 upstream=%4 admin=%5 db=%6 log=%7 proxies=%8 header=%9 dry=%10 threads=%11 demo=%12 "
                          "seconds=%13 timeout=%14 theme=%15 size=%16x%17 shots=%18 delay=%19 redis=%20 node=%21 version=%22 key=%23")
        .arg(o.headless)
        .arg(QString::fromStdString(o.listen.host))
        .arg(o.listen.port)
        .arg(QString::fromStdString(o.upstream))
        .arg(o.admin ? QString::fromStdString(o.admin->host) + QLatin1Char(':') + QString::number(o.admin->port) : QStringLiteral("off"))
        .arg(QString::fromStdString(o.db))
        .arg(QString::fromStdString(o.log))
        .arg(proxies.join(QLatin1Char(',')))
        .arg(QString::fromStdString(o.realIpHeader))
        .arg(o.dryRun)
        .arg(o.threads)
        .arg(o.demo)
        .arg(o.seconds)
        .arg(o.dbTimeoutSeconds)
        .arg(QString::fromStdString(o.theme))
        .arg(o.windowWidth)
        .arg(o.windowHeight)
        .arg(QString::fromStdString(o.screenshots))
        .arg(o.screenshotDelaySeconds)
        .arg(o.redis ? QString::fromStdString(o.redis->redacted()) : QString())
        .arg(QString::fromStdString(o.nodeName))
        .arg(o.version)
        .arg(QString::fromStdString(o.clusterKeyFile));
}

} // namespace

class TestOptions : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyOptionInBothForms()
    {
        const QStringList spaced = split(
            "--headless --listen 127.0.0.1:8181 --upstream http://127.0.0.1:9000 --admin [::1]:9191 --db /tmp/x.db --log off "
            "--trusted-proxy 10.0.0.0/8 --trusted-proxy 2001:db8::/32 --real-ip-header X-Real-IP --dry-run --threads 3 --demo "
            "--seconds 2.5 --db-timeout 7 --theme dark --window-size 800x600 --screenshots /tmp/shots --screenshot-delay 3 "
            "--redis redis://:secret@127.0.0.1:6380/2 --node-name web-1 --cluster-key /tmp/cluster.key --version");
        QStringList joined;
        for (int i = 0; i < spaced.size(); ++i) {
            const bool isFlag = i + 1 >= spaced.size() || spaced[i + 1].startsWith(QLatin1String("--"));
            joined << (isFlag ? spaced[i] : spaced[i] + QLatin1Char('=') + spaced[i + 1]);
            if (!isFlag)
                ++i;
        }
        App::Options a, b;
        QCOMPARE(parse(spaced, a), std::nullopt);
        QCOMPARE(parse(joined, b), std::nullopt);
        const QString expected = QStringLiteral(
            "headless=1 listen=127.0.0.1:8181 upstream=http://127.0.0.1:9000 admin=::1:9191 db=/tmp/x.db log=off "
            "proxies=10.0.0.0/8,2001:db8::/32 header=X-Real-IP dry=1 threads=3 demo=1 seconds=2.5 timeout=7 theme=dark size=800x600 "
            "shots=/tmp/shots delay=3 redis=%1 node=web-1 version=1 key=/tmp/cluster.key")
                                     .arg(QString::fromStdString(b.redis->redacted()));
        QCOMPARE(summary(a), expected);
        QCOMPARE(summary(b), expected);
        QVERIFY(!expected.contains(QLatin1String("secret")));
        QVERIFY(a.command.empty());
    }

    void theConfigurationFileHoldsTheSameSettings()
    {
        // Every setting the file may hold, read through --config, gives the
        // options the same values as the command line does.
        QTemporaryDir dir;
        const QString conf = dir.filePath(QStringLiteral("floodgate.conf"));
        QFile f(conf);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("# every setting\n"
                "listen = 127.0.0.1:8181\nupstream = \"http://127.0.0.1:9000\"\nadmin = [::1]:9191\ndb = /tmp/x.db\nlog = off\n"
                "trusted-proxy = 10.0.0.0/8\n; a comment between\ntrusted-proxy = [2001:db8::/32]\nreal-ip-header = X-Real-IP\n"
                "dry-run = true\nthreads = 3\ndb-timeout = 7   # seconds\ntheme = dark\n"
                "redis = redis://:secret@127.0.0.1:6380/2\nnode-name = web-1\ncluster-key = /tmp/cluster.key\n");
        f.close();
        App::Options fromFile, fromLine;
        QCOMPARE(parse({QStringLiteral("--headless"), QStringLiteral("--config"), conf}, fromFile), std::nullopt);
        QCOMPARE(parse(split("--headless --listen 127.0.0.1:8181 --upstream http://127.0.0.1:9000 --admin [::1]:9191 --db /tmp/x.db --log off "
                             "--trusted-proxy 10.0.0.0/8 --trusted-proxy 2001:db8::/32 --real-ip-header X-Real-IP --dry-run --threads 3 "
                             "--db-timeout 7 --theme dark --redis redis://:secret@127.0.0.1:6380/2 --node-name web-1 --cluster-key /tmp/cluster.key --config off"),
                       fromLine),
                 std::nullopt);
        QCOMPARE(summary(fromFile), summary(fromLine));
        QCOMPARE(fromFile.configFile, conf.toStdString());
        QCOMPARE(fromLine.configFile, std::string());

        // The command line wins, setting by setting; its --trusted-proxy
        // replaces the file's list.
        App::Options both;
        QCOMPARE(parse({QStringLiteral("--headless"), QStringLiteral("--config"), conf, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:1"),
                        QStringLiteral("--trusted-proxy"), QStringLiteral("192.168.0.0/16"), QStringLiteral("--dry-run=false")},
                       both),
                 std::nullopt);
        QCOMPARE(both.listen.port, std::uint16_t(1));
        QCOMPARE(both.trustedProxies.size(), std::size_t(1));
        QCOMPARE(both.trustedProxies[0].toString(), std::string("192.168.0.0/16"));
        QCOMPARE(both.dryRun, false);
        QCOMPARE(both.threads, 3u);  // the file's
        QCOMPARE(both.db, std::string("/tmp/x.db"));

        // A command: db and db-timeout from the file, the serving settings
        // left alone; replay --rules does not lay its rules over the file's database.
        App::Options block;
        QCOMPARE(parse({QStringLiteral("block"), QStringLiteral("203.0.113.7"), QStringLiteral("--config"), conf}, block), std::nullopt);
        QCOMPARE(block.db, std::string("/tmp/x.db"));
        QCOMPARE(block.dbTimeoutSeconds, 7.0);
        App::Options replay;
        QCOMPARE(parse({QStringLiteral("--config"), conf, QStringLiteral("replay"), QStringLiteral("access.log"), QStringLiteral("--rules"),
                        QStringLiteral("try.json")},
                       replay),
                 std::nullopt);
        QCOMPARE(replay.db, std::string());
        App::Options replayDb;
        QCOMPARE(parse({QStringLiteral("--config"), conf, QStringLiteral("replay"), QStringLiteral("access.log")}, replayDb), std::nullopt);
        QCOMPARE(replayDb.db, std::string("/tmp/x.db"));

        // The console reads a file only from --config: given, it is read.
        App::Options console;
        QCOMPARE(parse({QStringLiteral("--config"), conf}, console), std::nullopt);
        QCOMPARE(console.listen.port, std::uint16_t(8181));
    }

    void defaultsWhenNothingIsGiven()
    {
        App::Options o;
        QCOMPARE(parse({}, o), std::nullopt);
        QCOMPARE(summary(o), summary(App::Options{}));
        QVERIFY(!o.help && o.command.empty());
    }

    void theLastOfARepeatedOptionCounts()
    {
        App::Options o;
        QCOMPARE(parse(split("--threads 2 --threads=5 --listen 127.0.0.1:1 --listen 127.0.0.1:2 --admin off"), o), std::nullopt);
        QCOMPARE(o.threads, 5u);
        QCOMPARE(o.listen.port, std::uint16_t(2));
        QVERIFY(!o.admin);
    }

    void refusedValuesSayWhatWasWrong_data()
    {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown option") << "--headless --frobnicate" << "unknown option --frobnicate (see floodgate --help)";
        QTest::newRow("unknown option =") << "--frobnicate=1" << "unknown option --frobnicate (see floodgate --help)";
        QTest::newRow("unknown command") << "frob" << "unknown command \"frob\" (see floodgate --help)";
        QTest::newRow("missing value") << "--headless --threads" << "--threads needs a value";
        QTest::newRow("threads") << "--threads=0" << "--threads 0: expected a whole number from 1 to 256";
        QTest::newRow("listen") << "--listen 127.0.0.1:70000" << "--listen 127.0.0.1:70000: \"70000\" is not a port (0-65535)";
        QTest::newRow("listen v6") << "--listen=::1:80" << "--listen ::1:80: write IPv6 addresses in brackets: [::1]:8080";
        QTest::newRow("proxy") << "--trusted-proxy 10.0.0.0/33" << "--trusted-proxy 10.0.0.0/33: prefix length /33 is out of range (0-32 for IPv4)";
        QTest::newRow("seconds") << "--seconds -1" << "--seconds -1: expected a positive number of seconds";
        QTest::newRow("db-timeout") << "--db-timeout=abc" << "--db-timeout abc: expected a positive number of seconds";
        QTest::newRow("theme") << "--theme blue" << "--theme blue: expected light, dark or system";
        QTest::newRow("window") << "--window-size 100x100" << "--window-size 100x100: expected WIDTHxHEIGHT, at least 640x400";
        QTest::newRow("node") << "--node-name a|b" << "--node-name a|b: expected 1-64 characters without spaces, '|' or ';'";
        QTest::newRow("header") << "--real-ip-header X-Real-IP:" << "--real-ip-header X-Real-IP:: expected a header name such as X-Forwarded-For, Forwarded or X-Real-IP";
        QTest::newRow("empty db") << "--db=" << "--db needs a value";
        QTest::newRow("no subcommand") << "lists" << "floodgate lists needs a command: show, import or export (see floodgate lists --help)";
        QTest::newRow("missing address") << "block" << "floodgate block: ADDRESS is required (see floodgate block --help)";
        QTest::newRow("serving option to a command") << "block 10.0.0.1 --listen 127.0.0.1:1"
                                                     << "--listen does not apply to floodgate block (see floodgate block --help)";
        QTest::newRow("serving option before a command") << "--threads 2 tiers show" << "--threads does not apply to floodgate tiers show (see floodgate tiers show --help)";
        QTest::newRow("extra argument") << "unblock 10.0.0.1 10.0.0.2" << "unexpected argument \"10.0.0.2\" (see floodgate unblock --help)";
        QTest::newRow("list name") << "lists show greylist" << "LIST: \"greylist\" is not a list: blocklist or safelist";
        QTest::newRow("tier required") << "customers set acme" << "floodgate customers set: --tier is required (see floodgate customers set --help)";
        QTest::newRow("explain admin") << "explain 10.0.0.1 --admin 10.0.0.1" << "--admin 10.0.0.1: expected ADDRESS:PORT";
        QTest::newRow("replay db and rules") << "replay a.log --db x.db --rules r.json" << "floodgate replay: --db excludes --rules (see floodgate replay --help)";
        QTest::newRow("replay format") << "replay a.log --format apache" << "--format apache: expected auto, combined, common, nginx-json or floodgate-csv";
        QTest::newRow("replay proxy") << "replay a.log --trusted-proxy 300.0.0.0/8" << "--trusted-proxy 300.0.0.0/8: part 1 of the IPv4 address is over 255";
        QTest::newRow("replay log") << "replay --json" << "floodgate replay: ACCESS_LOG is required (see floodgate replay --help)";
        // A long value is quoted by its first 48 bytes and its length, once
        // past the bound on a value without being looked at further.
        const QString nines(80, QLatin1Char('9'));
        QTest::newRow("long bad value") << QStringLiteral("--listen 127.0.0.1:") + nines
                                        << QStringLiteral("--listen 127.0.0.1:%1… (90 bytes): \"%2…\" (80 bytes) is not a port (0-65535)")
                                               .arg(nines.left(38), nines.left(48));
        QTest::newRow("value over the bound") << QStringLiteral("--node-name ") + QString(5000, QLatin1Char('n'))
                                              << QStringLiteral("--node-name %1… (5000 bytes): a value is at most 4096 bytes").arg(QString(48, QLatin1Char('n')));
    }
    void refusedValuesSayWhatWasWrong()
    {
        QFETCH(QString, args);
        QFETCH(QString, message);
        App::Options o;
        const auto error = parse(split(args.toUtf8().constData()), o);
        QVERIFY2(error, "accepted");
        QCOMPARE(QString::fromStdString(*error), message);
    }

    void theOldCommandFormsStillWork()
    {
        {
            App::Options o;
            QCOMPARE(parse(split("lists export out.csv --db /tmp/a.db"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"lists", "export"}));
            QCOMPARE(o.args.file, std::string("out.csv"));
            QCOMPARE(o.db, std::string("/tmp/a.db"));
        }
        {
            App::Options o;
            QCOMPARE(parse(split("--db /tmp/b.db lists import in.json"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"lists", "import"}));
            QCOMPARE(o.args.file, std::string("in.json"));
            QCOMPARE(o.db, std::string("/tmp/b.db"));
        }
        {
            App::Options o;
            QCOMPARE(parse(split("token --db=/tmp/c.db --db-timeout=2"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"token"}));
            QCOMPARE(o.db, std::string("/tmp/c.db"));
            QCOMPARE(o.dbTimeoutSeconds, 2.0);
        }
    }

    void theCommandsArguments()
    {
        {
            App::Options o;
            QCOMPARE(parse(split("block 203.0.113.0/24 --ttl=permanent --reason scraper --db=/tmp/d.db"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"block"}));
            QCOMPARE(o.args.target, std::string("203.0.113.0/24"));
            QCOMPARE(o.args.ttl.value_or("-"), std::string("permanent"));
            QCOMPARE(o.args.reason, std::string("scraper"));
            QCOMPARE(o.db, std::string("/tmp/d.db"));
        }
        {
            App::Options o;  // a negative TTL is a value, not an option: the command refuses it with its reason
            QCOMPARE(parse(split("safelist 10.0.0.1 --ttl -1d"), o), std::nullopt);
            QCOMPARE(o.args.ttl.value_or("-"), std::string("-1d"));
        }
        {
            App::Options o;
            QCOMPARE(parse(split("tiers set Gold 100/1m 5000/1h"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"tiers", "set"}));
            QCOMPARE(o.args.target, std::string("Gold"));
            QCOMPARE(o.args.levels, (std::vector<std::string>{"100/1m", "5000/1h"}));
        }
        {
            App::Options o;
            QCOMPARE(parse(split("customers set acme --tier Gold --name Acme --override 200/1m --override=9000/1h"), o), std::nullopt);
            QCOMPARE(o.args.tier, std::string("Gold"));
            QCOMPARE(o.args.name.value_or("-"), std::string("Acme"));
            QCOMPARE(o.args.overrides, (std::vector<std::string>{"200/1m", "9000/1h"}));
            QVERIFY(!o.args.noOverrides);
            App::Options p;
            QVERIFY(parse(split("customers set acme --tier Gold --override 200/1m --no-overrides"), p));
        }
        {
            App::Options o;
            QCOMPARE(parse(split("lists show safelist --json"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"lists", "show"}));
            QCOMPARE(o.args.target, std::string("safelist"));
            QVERIFY(o.args.json);
        }
        {
            App::Options o;
            QCOMPARE(parse(split("explain 2001:db8::7 --admin=[::1]:9191 --token abc"), o), std::nullopt);
            QCOMPARE(o.command, (std::vector<std::string>{"explain"}));
            QCOMPARE(o.admin->host, std::string("::1"));
            QCOMPARE(o.admin->port, std::uint16_t(9191));
            QCOMPARE(o.args.token, std::string("abc"));
        }
        for (const char* c : {"rules show", "rules export r.json", "rules import r.json", "customers show", "customers remove acme", "unsafelist 10.0.0.1"}) {
            App::Options o;
            QVERIFY2(!parse(split(c), o), c);
            QCOMPARE(QString::fromStdString(o.command[0]), split(c)[0]);
        }
    }

    void replayFillsItsOptions()
    {
        App::Options o;
        QCOMPARE(parse(split("replay access.log.1 access.log --rules=new.json --format nginx-json --trusted-proxy 10.0.0.0/8 "
                             "--trusted-proxy=192.168.0.0/16 --from 2026-11-23T00:00:00Z --to=2026-11-24T00:00:00Z --json "
                             "--decisions out.csv"),
                       o),
                 std::nullopt);
        QCOMPARE(o.command, (std::vector<std::string>{"replay"}));
        const App::ReplayOptions& r = o.replay;
        QCOMPARE(r.logs, (std::vector<std::string>{"access.log.1", "access.log"}));
        QCOMPARE(r.rulesFile, std::string("new.json"));
        QCOMPARE(r.format, std::string("nginx-json"));
        QCOMPARE(r.trustedProxies.size(), std::size_t(2));
        QCOMPARE(r.trustedProxies[0].toString(), std::string("10.0.0.0/8"));
        QCOMPARE(r.trustedProxies[1].toString(), std::string("192.168.0.0/16"));
        QCOMPARE(r.from, std::string("2026-11-23T00:00:00Z"));
        QCOMPARE(r.to, std::string("2026-11-24T00:00:00Z"));
        QVERIFY(r.json);
        QCOMPARE(r.decisionsOut, std::string("out.csv"));
        QVERIFY(o.db.empty());

        App::Options d;  // the database's rules, and the defaults of everything else
        QCOMPARE(parse(split("replay a.log --db=/tmp/f.db"), d), std::nullopt);
        QCOMPARE(d.db, std::string("/tmp/f.db"));
        QVERIFY(d.replay.rulesFile.empty());
        QCOMPARE(d.replay.format, std::string("auto"));
        QVERIFY(d.replay.trustedProxies.empty() && !d.replay.json && d.replay.decisionsOut.empty() && d.replay.from.empty());
    }

    void helpIsTheHelpOfTheCommandAskedAbout()
    {
        App::Options top;
        QCOMPARE(parse({QStringLiteral("--help")}, top), std::nullopt);
        QVERIFY(top.help);
        for (const char* option : {"--listen", "--upstream", "--admin", "--db ", "--db-timeout", "--log", "--trusted-proxy", "--real-ip-header",
                                   "--redis", "--node-name", "--cluster-key", "--dry-run", "--threads", "--demo", "--seconds", "--theme", "--window-size",
                                   "--screenshots", "--screenshot-delay", "--version", "--headless"})
            QVERIFY2(top.helpText.find(option) != std::string::npos, option);
        for (const char* command : {"block", "safelist", "unblock", "unsafelist", "lists", "token", "cluster-key", "tiers", "customers", "rules", "explain", "replay"})
            QVERIFY2(top.helpText.find("\n  " + std::string(command) + " ") != std::string::npos, command);
        QVERIFY(top.helpText.find("exit codes") != std::string::npos);

        App::Options block;
        QCOMPARE(parse(split("block --help"), block), std::nullopt);
        QVERIFY(block.help);
        QVERIFY(block.helpText.find("ADDRESS") != std::string::npos);
        QVERIFY(block.helpText.find("--ttl") != std::string::npos);
        QVERIFY(block.helpText.find("--reason") != std::string::npos);
        QVERIFY(block.helpText.find("--db") != std::string::npos);
        QVERIFY(block.helpText.find("--listen") == std::string::npos);

        App::Options set;
        QCOMPARE(parse(split("customers set -h"), set), std::nullopt);
        QVERIFY(set.helpText.find("--override") != std::string::npos);
        QVERIFY(set.helpText.find("--tier") != std::string::npos);

        App::Options replay;
        QCOMPARE(parse(split("replay --help"), replay), std::nullopt);
        for (const char* option : {"ACCESS_LOG", "--db", "--rules", "--format", "--trusted-proxy", "--from", "--to", "--json", "--decisions"})
            QVERIFY2(replay.helpText.find(option) != std::string::npos, option);
    }
};

QTEST_GUILESS_MAIN(TestOptions)
#include "test_options.moc"
