// SPDX-License-Identifier: GPL-3.0-or-later
// Glob patterns for paths and user agents, and compiled pattern sets.
#include <QtTest>

#include "core/Glob.h"
#include "TestSupport.h"

#include <string>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

std::vector<std::string> split(const QByteArray& patterns)
{
    std::vector<std::string> out;
    for (const QByteArray& p : patterns.split('|'))
        out.push_back(p.toStdString());
    return out;
}

} // namespace

class TestGlob : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void globMatch_data();
    void globMatch();
    void globIsNotExponential();
    void patternSet_data();
    void patternSet();
    void emptySet();
};

void TestGlob::globMatch_data()
{
    QTest::addColumn<QByteArray>("pattern");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<bool>("ignoreCase");
    QTest::addColumn<bool>("matches");

    QTest::newRow("extension") << QByteArray("*.css") << QByteArray("/a/b.css") << false << true;
    QTest::newRow("extension, longer") << QByteArray("*.css") << QByteArray("/a/b.cssx") << false << false;
    QTest::newRow("extension, other case") << QByteArray("*.css") << QByteArray("/a/b.CSS") << false << false;
    QTest::newRow("extension, ignoring case") << QByteArray("*.css") << QByteArray("/a/b.CSS") << true << true;
    QTest::newRow("folder") << QByteArray("/static/*") << QByteArray("/static/js/app.js") << false << true;
    QTest::newRow("folder itself") << QByteArray("/static/*") << QByteArray("/static/") << false << true;
    QTest::newRow("folder without slash") << QByteArray("/static/*") << QByteArray("/static") << false << false;
    QTest::newRow("star crosses slashes") << QByteArray("/a*") << QByteArray("/a/b/c") << false << true;
    QTest::newRow("exact") << QByteArray("/login") << QByteArray("/login") << false << true;
    QTest::newRow("exact, longer") << QByteArray("/login") << QByteArray("/login/") << false << false;
    QTest::newRow("exact, other case") << QByteArray("/login") << QByteArray("/Login") << false << false;
    QTest::newRow("question mark") << QByteArray("/user/?") << QByteArray("/user/1") << false << true;
    QTest::newRow("question mark, two") << QByteArray("/user/?") << QByteArray("/user/12") << false << false;
    QTest::newRow("question mark, none") << QByteArray("/user/?") << QByteArray("/user/") << false << false;
    QTest::newRow("middle star") << QByteArray("*/admin/*") << QByteArray("/x/admin/y") << false << true;
    QTest::newRow("several stars") << QByteArray("a*b*c") << QByteArray("axxbyyc") << false << true;
    QTest::newRow("several stars, missing end") << QByteArray("a*b*c") << QByteArray("axxbyy") << false << false;
    QTest::newRow("backtracking") << QByteArray("*ab") << QByteArray("aaab") << false << true;
    QTest::newRow("star matches empty") << QByteArray("*") << QByteArray("") << false << true;
    QTest::newRow("empty matches empty") << QByteArray("") << QByteArray("") << false << true;
    QTest::newRow("empty pattern") << QByteArray("") << QByteArray("a") << false << false;
    QTest::newRow("user agent, ignoring case") << QByteArray("*googlebot*") << QByteArray("Mozilla/5.0 (compatible; Googlebot/2.1)") << true << true;
}

void TestGlob::globMatch()
{
    QFETCH(QByteArray, pattern);
    QFETCH(QByteArray, text);
    QFETCH(bool, ignoreCase);
    QFETCH(bool, matches);

    QCOMPARE(Floodgate::Core::globMatch(pattern.toStdString(), text.toStdString(), ignoreCase), matches);
}

void TestGlob::globIsNotExponential()
{
    // A naive backtracking matcher takes exponential time here; an attacker
    // chooses the path.
    const std::string text(10'000, 'a');
    QElapsedTimer timer;
    timer.start();
    QVERIFY(!Floodgate::Core::globMatch("*a*a*a*a*a*a*a*a*a*a*b", text));
    QVERIFY(Floodgate::Core::globMatch("*a*a*a*a*a*a*a*a*a*a*", text));
    QVERIFY2(timer.elapsed() < 2000, qPrintable(QStringLiteral("%1 ms").arg(timer.elapsed())));
}

void TestGlob::patternSet_data()
{
    QTest::addColumn<QByteArray>("patterns");  // separated by '|'
    QTest::addColumn<bool>("ignoreCase");
    QTest::addColumn<bool>("substring");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<bool>("matches");

    const QByteArray assets("*.css|*.js|*.png");
    QTest::newRow("assets: css") << assets << false << false << QByteArray("/a/b.css") << true;
    QTest::newRow("assets: js") << assets << false << false << QByteArray("/app.js") << true;
    QTest::newRow("assets: cssx") << assets << false << false << QByteArray("/a/b.cssx") << false;
    QTest::newRow("assets: no extension") << assets << false << false << QByteArray("/css") << false;
    QTest::newRow("assets: root") << assets << false << false << QByteArray("/") << false;
    QTest::newRow("assets: dot in a folder") << assets << false << false << QByteArray("/v1.css/page") << false;
    QTest::newRow("assets: dot in a folder and the file") << assets << false << false << QByteArray("/v1.2/style.css") << true;
    QTest::newRow("assets: hidden file") << assets << false << false << QByteArray("/.css") << true;
    QTest::newRow("assets: upper case") << assets << false << false << QByteArray("/A.CSS") << false;
    QTest::newRow("assets ignoring case") << assets << true << false << QByteArray("/A.CSS") << true;

    const QByteArray fonts("*.woff|*.woff2|*.ttf|*.min.js|*.verylongextension1");
    QTest::newRow("extensions: one of many") << fonts << true << false << QByteArray("/f/a.ttf") << true;
    QTest::newRow("extensions: the longer of two") << fonts << true << false << QByteArray("/f/a.woff2") << true;
    QTest::newRow("extensions: the shorter of two") << fonts << true << false << QByteArray("/f/a.WOFF") << true;
    QTest::newRow("extensions: a prefix of one") << fonts << true << false << QByteArray("/f/a.wof") << false;
    QTest::newRow("extensions: dotted suffix") << fonts << true << false << QByteArray("/app.MIN.js") << true;
    QTest::newRow("extensions: dotted suffix, not it") << fonts << true << false << QByteArray("/app.js") << false;
    QTest::newRow("extensions: longer than an extension") << fonts << true << false << QByteArray("/x.verylongextension1") << true;
    QTest::newRow("extensions: folder with a dot") << fonts << true << false << QByteArray("/a.ttf/x") << false;
    QTest::newRow("extensions: case kept") << QByteArray("*.TTF") << false << false << QByteArray("/a.TTF") << true;
    QTest::newRow("extensions: case kept, other case") << QByteArray("*.TTF") << false << false << QByteArray("/a.ttf") << false;
    QTest::newRow("extensions: upper-case pattern ignoring case") << QByteArray("*.TTF") << true << false << QByteArray("/a.ttf") << true;
    QTest::newRow("suffix that is not an extension") << QByteArray("*bar|*.css") << false << false << QByteArray("/foobar") << true;
    QTest::newRow("folder prefix") << QByteArray("/static/*") << false << false << QByteArray("/static/x") << true;
    QTest::newRow("folder prefix, sibling") << QByteArray("/static/*") << false << false << QByteArray("/staticx") << false;
    QTest::newRow("exact") << QByteArray("/login") << false << false << QByteArray("/login") << true;
    QTest::newRow("exact, longer") << QByteArray("/login") << false << false << QByteArray("/login2") << false;
    QTest::newRow("general glob") << QByteArray("/user/?/edit") << false << false << QByteArray("/user/7/edit") << true;
    QTest::newRow("general glob, no") << QByteArray("/user/?/edit") << false << false << QByteArray("/user/77/edit") << false;
    QTest::newRow("mixed set, last kind") << QByteArray("*.css|/static/*|/login|/user/?") << false << false << QByteArray("/user/1") << true;

    const QByteArray bots("Googlebot|bingbot*");
    QTest::newRow("agent substring, any case") << bots << true << true << QByteArray("Mozilla/5.0 (compatible; googlebot/2.1)") << true;
    QTest::newRow("agent glob is anchored") << bots << true << true << QByteArray("Mozilla/5.0 (compatible; bingbot/2.0)") << false;
    QTest::newRow("agent glob prefix") << bots << true << true << QByteArray("BingBot/2.0") << true;
    QTest::newRow("agent: a browser") << bots << true << true << QByteArray("Mozilla/5.0 (X11; Linux x86_64)") << false;
    QTest::newRow("agent shorter than the pattern") << bots << true << true << QByteArray("Google") << false;
    QTest::newRow("plain is exact without substring") << QByteArray("Googlebot") << true << false << QByteArray("googlebot") << true;
    QTest::newRow("plain exact, inside a longer text") << QByteArray("Googlebot") << true << false << QByteArray("x googlebot") << false;
}

void TestGlob::patternSet()
{
    QFETCH(QByteArray, patterns);
    QFETCH(bool, ignoreCase);
    QFETCH(bool, substring);
    QFETCH(QByteArray, text);
    QFETCH(bool, matches);

    const PatternSet set(split(patterns), ignoreCase, substring);
    QVERIFY(!set.empty());
    QCOMPARE(set.matches(text.toStdString()), matches);
}

void TestGlob::emptySet()
{
    const PatternSet none;
    QVERIFY(none.empty());
    QVERIFY(!none.matches("/anything"));
    QVERIFY(!none.matches(""));

    const PatternSet blanks(std::vector<std::string>{""});
    QVERIFY(blanks.empty());
    QVERIFY(!blanks.matches(""));
}

QTEST_APPLESS_MAIN(TestGlob)
#include "test_glob.moc"
