// SPDX-License-Identifier: GPL-3.0-or-later
// Glob patterns for paths and user agents, and compiled pattern sets.
#include <QtTest>

#include "core/Glob.h"
#include "TestSupport.h"

#include <functional>
#include <random>
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

char folded(char c, bool ignoreCase)
{
    return ignoreCase && c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

// The definition, read literally: '*' takes nothing or one more character,
// '?' any one, anything else itself. Memoised so long cases stay quick.
bool referenceMatch(std::string_view p, std::string_view t, bool ignoreCase)
{
    std::vector<signed char> memo((p.size() + 1) * (t.size() + 1), -1);
    std::function<bool(std::size_t, std::size_t)> at = [&](std::size_t i, std::size_t j) -> bool {
        signed char& m = memo[i * (t.size() + 1) + j];
        if (m < 0) {
            if (i == p.size())
                m = j == t.size();
            else if (p[i] == '*')
                m = at(i + 1, j) || (j < t.size() && at(i, j + 1));
            else
                m = j < t.size() && (p[i] == '?' || folded(p[i], ignoreCase) == folded(t[j], ignoreCase)) && at(i + 1, j + 1);
        }
        return m == 1;
    };
    return at(0, 0);
}

// A text the pattern may well match: each '*' replaced by a few random
// characters, each '?' by one, then sometimes one character changed,
// inserted or removed.
std::string textFor(std::string_view pattern, std::string_view alphabet, std::mt19937& rng)
{
    std::string t;
    for (char c : pattern) {
        if (c == '*')
            for (std::size_t n = rng() % 4; n > 0; --n)
                t += alphabet[rng() % alphabet.size()];
        else if (c == '?')
            t += alphabet[rng() % alphabet.size()];
        else
            t += c;
    }
    switch (rng() % 4) {
    case 0:
        if (!t.empty())
            t[rng() % t.size()] = alphabet[rng() % alphabet.size()];
        break;
    case 1: t.insert(t.begin() + std::ptrdiff_t(rng() % (t.size() + 1)), alphabet[rng() % alphabet.size()]); break;
    case 2:
        if (!t.empty())
            t.erase(rng() % t.size(), 1);
        break;
    default: break;
    }
    return t;
}

std::string randomString(std::size_t maxLength, std::string_view alphabet, std::mt19937& rng)
{
    std::string s(rng() % (maxLength + 1), ' ');
    for (char& c : s)
        c = alphabet[rng() % alphabet.size()];
    return s;
}

} // namespace

class TestGlob : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void globMatch_data();
    void globMatch();
    void globIsNotExponential();
    void matchesTheReference_data();
    void matchesTheReference();
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
    QTest::newRow("*a*b") << QByteArray("*a*b") << QByteArray("xxaxxb") << false << true;
    QTest::newRow("*a*b, b before a") << QByteArray("*a*b") << QByteArray("xxbxxa") << false << false;
    QTest::newRow("*a*b, one character both") << QByteArray("*a*b") << QByteArray("ab") << false << true;
    QTest::newRow("*a*b, not at the end") << QByteArray("*a*b") << QByteArray("abx") << false << false;
    QTest::newRow("*a*b, the last b counts") << QByteArray("*a*b") << QByteArray("abab") << false << true;
    QTest::newRow("a*, anchored at the start") << QByteArray("a*") << QByteArray("ba") << false << false;
    QTest::newRow("a*, itself") << QByteArray("a*") << QByteArray("a") << false << true;
    QTest::newRow("*a, anchored at the end") << QByteArray("*a") << QByteArray("ab") << false << false;
    QTest::newRow("star matches anything") << QByteArray("*") << QByteArray("/any/thing?x=1") << false << true;
    QTest::newRow("consecutive stars") << QByteArray("a**b") << QByteArray("ab") << false << true;
    QTest::newRow("consecutive stars, between") << QByteArray("a**b") << QByteArray("axyzb") << false << true;
    QTest::newRow("only stars, empty text") << QByteArray("***") << QByteArray("") << false << true;
    QTest::newRow("question mark, empty text") << QByteArray("?") << QByteArray("") << false << false;
    QTest::newRow("question mark, one") << QByteArray("?") << QByteArray("x") << false << true;
    QTest::newRow("question mark, a slash") << QByteArray("?") << QByteArray("/") << false << true;
    QTest::newRow("question marks around a star") << QByteArray("?*?") << QByteArray("ab") << false << true;
    QTest::newRow("question marks around a star, too short") << QByteArray("?*?") << QByteArray("a") << false << false;
    QTest::newRow("a* on empty text") << QByteArray("a*") << QByteArray("") << false << false;
    QTest::newRow("ignoring case, pattern upper") << QByteArray("/API/*/U?ER") << QByteArray("/api/7/user") << true << true;
    QTest::newRow("ignoring case, case kept") << QByteArray("/API/*/U?ER") << QByteArray("/api/7/user") << false << false;
    QTest::newRow("ignoring case, not other letters") << QByteArray("*a[b*") << QByteArray("A{B") << true << false;
    QTest::newRow("bytes past ASCII") << QByteArray("*\xc3\xa9t\xc3\xa9*") << QByteArray("/\xc3\xa9t\xc3\xa9/") << true << true;
    QTest::newRow("bytes past ASCII, not folded") << QByteArray("*\xc3\xa9*") << QByteArray("/\xc3\x89") << true << false;
    // Patterns past 64 positions (the automaton's state is several words).
    const QByteArray a64(64, 'a');
    QTest::newRow("64 positions then a star") << a64 + "*" << a64 + "xyz" << false << true;
    QTest::newRow("65 positions, exact") << a64 + "b" << a64 + "b" << false << true;
    QTest::newRow("65 positions, the 65th differs") << a64 + "b" << a64 + "c" << false << false;
    QTest::newRow("a star at the word boundary") << a64 + "*b" << a64 + "xxb" << false << true;
    QTest::newRow("long literal after a star") << "*" + QByteArray(200, 'a') + "b*" << QByteArray(300, 'a') + "b" << false << true;
    QTest::newRow("long literal after a star, absent") << "*" + QByteArray(200, 'a') + "b*" << QByteArray(3000, 'a') << false << false;
    QTest::newRow("long, question marks across words") << "*" + QByteArray(130, '?') + "b" << QByteArray(131, 'x') + "b" << false << true;
    QTest::newRow("long, question marks, one short") << "*" + QByteArray(130, '?') + "b" << QByteArray(129, 'x') + "b" << false << false;
    QTest::newRow("past the caps (600 positions)") << "*" + QByteArray(599, 'a') + "b" << QByteArray(1000, 'a') + "b" << false << true;
    QTest::newRow("past the caps, absent") << "*" + QByteArray(599, 'a') + "b" << QByteArray(1000, 'a') << false << false;
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

void TestGlob::matchesTheReference_data()
{
    QTest::addColumn<int>("seed");
    QTest::addColumn<int>("cases");
    QTest::addColumn<QByteArray>("patternAlphabet");
    QTest::addColumn<QByteArray>("textAlphabet");
    QTest::addColumn<int>("maxPattern");
    QTest::addColumn<bool>("ignoreCase");

    QTest::newRow("small, case kept") << 1 << 20000 << QByteArray("ab*?") << QByteArray("ab") << 8 << false;
    QTest::newRow("small, ignoring case") << 2 << 20000 << QByteArray("aAb*?") << QByteArray("aAbB") << 8 << true;
    QTest::newRow("small, a path's characters") << 3 << 20000 << QByteArray("/.a*?") << QByteArray("/.ab") << 10 << false;
    QTest::newRow("long, several words") << 4 << 2000 << QByteArray("aaab*?") << QByteArray("ab") << 300 << false;
    QTest::newRow("long, ignoring case") << 5 << 2000 << QByteArray("aAAb**?") << QByteArray("aAbB") << 200 << true;
}

// The automaton against the definition, on many random patterns and texts,
// one pattern at a time and as a set (where plain patterns, prefixes,
// suffixes and extensions take their own ways, and a plain pattern may be a
// substring).
void TestGlob::matchesTheReference()
{
    QFETCH(int, seed);
    QFETCH(int, cases);
    QFETCH(QByteArray, patternAlphabet);
    QFETCH(QByteArray, textAlphabet);
    QFETCH(int, maxPattern);
    QFETCH(bool, ignoreCase);

    std::mt19937 rng{std::uint32_t(seed)};
    const std::string_view pa(patternAlphabet.constData(), std::size_t(patternAlphabet.size()));
    const std::string_view ta(textAlphabet.constData(), std::size_t(textAlphabet.size()));
    int matched = 0;
    for (int i = 0; i < cases; ++i) {
        const std::string p = randomString(std::size_t(maxPattern), pa, rng);
        const std::string t = rng() % 3 == 0 ? randomString(std::size_t(maxPattern) + 4, ta, rng) : textFor(p, ta, rng);
        const bool expected = referenceMatch(p, t, ignoreCase);
        matched += expected;
        const auto where = [&] { return qPrintable(QStringLiteral("pattern \"%1\", text \"%2\"").arg(QString::fromStdString(p), QString::fromStdString(t))); };
        QVERIFY2(Floodgate::Core::globMatch(p, t, ignoreCase) == expected, where());
        if (!p.empty())
            QVERIFY2(PatternSet({p}, ignoreCase).matches(t) == expected, where());
        const std::string other = randomString(std::size_t(maxPattern), pa, rng);
        const bool plain = p.find_first_of("*?") == std::string::npos;
        const bool substring = plain && referenceMatch("*" + p + "*", t, ignoreCase);
        const bool either = (p.empty() ? false : plain ? substring : expected) || (!other.empty() && referenceMatch(
            other.find_first_of("*?") == std::string::npos ? "*" + other + "*" : other, t, ignoreCase));
        QVERIFY2(PatternSet({p, other}, ignoreCase, true).matches(t) == either,
                 qPrintable(QStringLiteral("set {\"%1\", \"%2\"} as substrings, text \"%3\"")
                                .arg(QString::fromStdString(p), QString::fromStdString(other), QString::fromStdString(t))));
    }
    // The texts were made to match often enough for the comparison to say something.
    QVERIFY2(matched > cases / 10, qPrintable(QStringLiteral("%1 of %2 matched").arg(matched).arg(cases)));
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
