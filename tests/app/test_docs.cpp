// SPDX-License-Identifier: GPL-3.0-or-later
// What is written once and shown in several places (issue 28.6, 29.3): the
// man page's OPTIONS, settings and EXIT STATUS, docs/CLI.md's exit codes,
// option table and SIGHUP lists, docs/INTERFACE.md's start-up lines, exit
// codes and SIGHUP sentence are exactly what app/DocText.cpp makes of the
// tables (`cmake --build build --target docs` rewrites them); every option
// of the table has what its kind needs (a reload class that matches the
// configuration file, a reader, a way to compare and take it on SIGHUP);
// --help lists every row and no other option; the start-up lines are the
// table's.
#include <QtTest>

#include "app/DocText.h"
#include "app/ExitCode.h"
#include "app/OptionTable.h"
#include "app/StartLines.h"

#include <QFile>

#include <set>
#include <string>
#include <vector>

using namespace Floodgate;

namespace {

std::string sourceFile(const std::string& file)
{
    QFile f(QString::fromStdString(FLOODGATE_SOURCE_DIR "/" + file));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll().toStdString();
}

// "line N: checked-in ... / generated ...": the first line that differs.
QString firstDifference(const std::string& have, const std::string& want)
{
    const QStringList a = QString::fromStdString(have).split(QLatin1Char('\n'));
    const QStringList b = QString::fromStdString(want).split(QLatin1Char('\n'));
    for (int i = 0; i < std::max(a.size(), b.size()); ++i) {
        const QString x = i < a.size() ? a[i] : QStringLiteral("(nothing)");
        const QString y = i < b.size() ? b[i] : QStringLiteral("(nothing)");
        if (x != y)
            return QStringLiteral("line %1 of the region:\n  checked in: %2\n  generated:  %3").arg(i + 1).arg(x, y);
    }
    return {};
}

std::optional<std::string> parse(const std::vector<std::string>& args, App::Options& o)
{
    std::vector<std::string> words{"floodgate"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words)
        argv.push_back(w.data());
    return App::parseOptions(int(argv.size()), argv.data(), o);
}

} // namespace

class TestDocs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theCheckedInRegionsAreGenerated_data()
    {
        QTest::addColumn<int>("index");
        const auto regions = App::docRegions();
        for (std::size_t i = 0; i < regions.size(); ++i)
            QTest::newRow((regions[i].file + " " + regions[i].name).c_str()) << int(i);
    }

    void theCheckedInRegionsAreGenerated()
    {
        QFETCH(int, index);
        const App::DocRegion region = App::docRegions()[std::size_t(index)];
        const std::string document = sourceFile(region.file);
        QVERIFY2(!document.empty(), region.file.c_str());
        const auto have = App::regionIn(document, region);
        QVERIFY2(have, qPrintable(QStringLiteral("%1 has no generated region \"%2\"").arg(QString::fromStdString(region.file), QString::fromStdString(region.name))));
        QVERIFY2(*have == region.text, qPrintable(QStringLiteral("%1, region \"%2\" is not what the tables make (run `cmake --build build --target docs`); %3")
                                                      .arg(QString::fromStdString(region.file), QString::fromStdString(region.name),
                                                           firstDifference(*have, region.text))));
    }

    void everyOptionHasWhatItsKindNeeds()
    {
        std::set<std::string_view> names;
        for (const App::OptionRow& row : App::optionTable()) {
            const QByteArray name = QByteArray(row.name.data(), qsizetype(row.name.size()));
            QVERIFY2(names.insert(row.name).second, name.constData());
            QVERIFY2(!row.help.empty() && !row.man.empty(), name.constData());
            // The file may set exactly what SIGHUP can see change.
            QVERIFY2(row.inFile == (row.reload != App::Reload::Fixed), name.constData());
            if (row.reload != App::Reload::Fixed)
                QVERIFY2(row.access.same && row.access.take, name.constData());
            const bool cli11s = row.name == "help" || row.name == "config";
            if (row.arity == App::OptionArity::Flag)
                QVERIFY2(cli11s || row.access.flag, name.constData());
            else
                QVERIFY2(cli11s || (row.apply && !row.value.empty()), name.constData());
            if (row.def.kind == App::OptionDefault::Kind::Value)
                QVERIFY2(!App::defaultText(row).empty(), name.constData());
        }
    }

    void helpListsEveryRowAndNoOtherOption()
    {
        App::Options o;
        QCOMPARE(parse({"--help"}, o), std::nullopt);
        std::set<std::string> listed;
        for (std::size_t at = 0; (at = o.helpText.find("\n  ", at)) != std::string::npos;) {
            at += 3;
            const std::size_t start = o.helpText.compare(at, 3, "-h,") == 0 ? at + 3 : at;
            if (o.helpText.compare(start, 2, "--") != 0)
                continue;
            const std::size_t end = o.helpText.find_first_of(" \n", start);
            listed.insert(o.helpText.substr(start + 2, end - start - 2));
        }
        std::set<std::string> rows;
        for (const App::OptionRow& row : App::optionTable())
            rows.insert(std::string(row.name));
        QCOMPARE(listed, rows);
        // Each with its help and its default.
        for (const App::OptionRow& row : App::optionTable()) {
            const std::string help = App::helpText(row);
            QVERIFY2(o.helpText.find(help.substr(0, help.find('\n'))) != std::string::npos, help.c_str());
        }
        QVERIFY(o.helpText.find("default 127.0.0.1:8080") != std::string::npos);
        QVERIFY(o.helpText.find("default 5") != std::string::npos);
    }

    void theDefaultsAreTheMembersInitialisers()
    {
        QCOMPARE(App::defaultText(App::option("listen")), std::string("127.0.0.1:8080"));
        QCOMPARE(App::defaultText(App::option("admin")), std::string("127.0.0.1:9090"));
        QCOMPARE(App::defaultText(App::option("db-timeout")), std::string("5"));
        QCOMPARE(App::defaultText(App::option("theme")), std::string("system"));
        QCOMPARE(App::defaultText(App::option("real-ip-header")), std::string("X-Forwarded-For"));
        QCOMPARE(App::defaultText(App::option("screenshot-delay")), std::string("8"));
    }

    void theExitCodesAreOneTable()
    {
        int expected = 0;
        for (const App::ExitCodeRow& row : App::exitCodeTable()) {
            QCOMPARE(App::exitStatus(row.code), expected++);
            QVERIFY(!row.brief.empty() && !row.meaning.empty());
        }
        QCOMPARE(expected, App::exitStatus(App::ExitCode::ClusterRefused) + 1);
        App::Options o;
        QCOMPARE(parse({"--help"}, o), std::nullopt);
        for (const App::ExitCodeRow& row : App::exitCodeTable())
            QVERIFY2(o.helpText.find(std::to_string(App::exitStatus(row.code)) + " " + std::string(row.brief).substr(0, 10)) != std::string::npos,
                     row.brief.data());
    }

    void theStartLinesAreTheTables()
    {
        App::StartFacts f;
        f.listenUrl = "http://127.0.0.1:1";
        f.mode = "proxy mode -> http://127.0.0.1:2";
        f.database = "/d/floodgate.db";
        f.databaseCreated = true;
        f.dryRun = true;
        const std::vector<std::string> expected{"listening on http://127.0.0.1:1 (proxy mode -> http://127.0.0.1:2)",
                                                "database /d/floodgate.db (new, with the default rules)",
                                                "limiter log off (dry run: nothing is refused)"};
        QCOMPARE(App::startLines(f), expected);
        f.adminUrl = "http://[::]:3";
        f.adminBeyondLoopback = true;
        f.cluster = "joined\nnext";
        const auto lines = App::startLines(f);
        QCOMPARE(lines.size(), std::size_t(6));
        QCOMPARE(lines[2], std::string("admin API wants \"Authorization: Bearer TOKEN\" (beyond loopback /healthz and /metrics too); "
                                       "`floodgate token --db /d/floodgate.db` prints it"));
        QCOMPARE(lines[4], std::string("cluster: joined\\nnext"));
    }
};

QTEST_GUILESS_MAIN(TestDocs)
#include "test_docs.moc"
