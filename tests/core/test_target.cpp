// SPDX-License-Identifier: GPL-3.0-or-later
// Request-target normalisation: every spelling of one resource comes out as
// one text (what is forwarded) and one matching path (what rules compare).
#include <QtTest>

#include "core/Target.h"
#include "TestSupport.h"

#include <string>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestTarget : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void normalises_data();
    void normalises();
    void refuses_data();
    void refuses();
    void isIdempotent_data() { normalises_data(); }
    void isIdempotent();
    void reusesItsStorage();
    void authorities();
};

void TestTarget::authorities()
{
    for (const char* good : {"", "h", "shop.example:8080", "[2001:db8::1]:443", "127.0.0.1", "xn--bcher-kva.example", "a_b.example"})
        QVERIFY2(isValidAuthority(good), good);
    for (const char* bad : {"a b", "a/b", "u@h", "h\\x", "h\"", "h<", "h\t", "h?q", "h#f"})
        QVERIFY2(!isValidAuthority(bad), bad);
}

void TestTarget::normalises_data()
{
    QTest::addColumn<QByteArray>("raw");
    QTest::addColumn<QByteArray>("target");    // forwarded
    QTest::addColumn<QByteArray>("matchPath"); // matched
    QTest::addColumn<QByteArray>("authority");

    // The bypasses of issue 9, each one the same resource as "/comments".
    QTest::newRow("plain") << QByteArray("/comments") << QByteArray("/comments") << QByteArray("/comments") << QByteArray();
    QTest::newRow("absolute-form") << QByteArray("http://127.0.0.1/comments") << QByteArray("/comments") << QByteArray("/comments")
                                   << QByteArray("127.0.0.1");
    QTest::newRow("absolute-form, https, port, upper-case scheme")
        << QByteArray("HTTPS://shop.example:8443/comments?x=1") << QByteArray("/comments?x=1") << QByteArray("/comments")
        << QByteArray("shop.example:8443");
    QTest::newRow("absolute-form without a path") << QByteArray("http://h") << QByteArray("/") << QByteArray("/") << QByteArray("h");
    QTest::newRow("absolute-form, query only") << QByteArray("http://h?a=b") << QByteArray("/?a=b") << QByteArray("/") << QByteArray("h");
    QTest::newRow("absolute-form, IPv6 literal") << QByteArray("http://[::1]:8080/a") << QByteArray("/a") << QByteArray("/a")
                                                 << QByteArray("[::1]:8080");
    QTest::newRow("double slash") << QByteArray("//comments") << QByteArray("/comments") << QByteArray("/comments") << QByteArray();
    QTest::newRow("slashes inside") << QByteArray("/a///b//c") << QByteArray("/a/b/c") << QByteArray("/a/b/c") << QByteArray();
    QTest::newRow("trailing slash") << QByteArray("/comments/") << QByteArray("/comments/") << QByteArray("/comments") << QByteArray();
    QTest::newRow("trailing slashes") << QByteArray("/comments//") << QByteArray("/comments/") << QByteArray("/comments") << QByteArray();
    QTest::newRow("encoded unreserved") << QByteArray("/%63omments") << QByteArray("/comments") << QByteArray("/comments") << QByteArray();
    QTest::newRow("every unreserved kind") << QByteArray("/%41%7a%30%2D%2e%5F%7E") << QByteArray("/Az0-._~") << QByteArray("/Az0-._~")
                                           << QByteArray();
    QTest::newRow("dot segment") << QByteArray("/./comments") << QByteArray("/comments") << QByteArray("/comments") << QByteArray();
    QTest::newRow("dot-dot segment") << QByteArray("/static/../comments") << QByteArray("/comments") << QByteArray("/comments")
                                     << QByteArray();
    QTest::newRow("encoded dot-dot") << QByteArray("/static/%2e%2E/comments") << QByteArray("/comments") << QByteArray("/comments")
                                     << QByteArray();
    QTest::newRow("dot-dot above the root") << QByteArray("/../../comments") << QByteArray("/comments") << QByteArray("/comments")
                                            << QByteArray();
    QTest::newRow("ends in dot-dot") << QByteArray("/a/b/..") << QByteArray("/a/") << QByteArray("/a") << QByteArray();
    QTest::newRow("ends in dot") << QByteArray("/a/.") << QByteArray("/a/") << QByteArray("/a") << QByteArray();
    QTest::newRow("dots that are names") << QByteArray("/a/.../..b/.c") << QByteArray("/a/.../..b/.c") << QByteArray("/a/.../..b/.c")
                                         << QByteArray();
    QTest::newRow("params") << QByteArray("/comments;jsessionid=1") << QByteArray("/comments;jsessionid=1") << QByteArray("/comments")
                            << QByteArray();
    QTest::newRow("params in every segment") << QByteArray("/a;x/b;y=1;z/c") << QByteArray("/a;x/b;y=1;z/c") << QByteArray("/a/b/c")
                                             << QByteArray();
    QTest::newRow("params then slash") << QByteArray("/comments;x/") << QByteArray("/comments;x/") << QByteArray("/comments")
                                       << QByteArray();
    QTest::newRow("dot-dot with params (Tomcat)") << QByteArray("/public/..;/comments") << QByteArray("/public/..;/comments")
                                                  << QByteArray("/comments") << QByteArray();
    QTest::newRow("segment of params only") << QByteArray("/a/;x/b") << QByteArray("/a/;x/b") << QByteArray("/a/b") << QByteArray();
    QTest::newRow("encoded semicolon is not a parameter") << QByteArray("/a%3bx") << QByteArray("/a%3Bx") << QByteArray("/a%3Bx")
                                                          << QByteArray();
    QTest::newRow("reserved escapes kept, hex upper-cased") << QByteArray("/a%2fb%3f%c3%a9") << QByteArray("/a%2Fb%3F%C3%A9")
                                                            << QByteArray("/a%2Fb%3F%C3%A9") << QByteArray();
    QTest::newRow("root") << QByteArray("/") << QByteArray("/") << QByteArray("/") << QByteArray();
    QTest::newRow("root, doubled") << QByteArray("//") << QByteArray("/") << QByteArray("/") << QByteArray();
    QTest::newRow("root with params") << QByteArray("/;x") << QByteArray("/;x") << QByteArray("/") << QByteArray();
    QTest::newRow("query kept, decoded like the path")
        << QByteArray("/search?q=%61+b&c=%2f/./..&d") << QByteArray("/search?q=a+b&c=%2F/./..&d") << QByteArray("/search")
        << QByteArray();
    QTest::newRow("empty query") << QByteArray("/a?") << QByteArray("/a?") << QByteArray("/a") << QByteArray();
    QTest::newRow("question mark in the query") << QByteArray("/a?b?c") << QByteArray("/a?b?c") << QByteArray("/a") << QByteArray();
    QTest::newRow("case kept") << QByteArray("/Comments") << QByteArray("/Comments") << QByteArray("/Comments") << QByteArray();
}

void TestTarget::normalises()
{
    QFETCH(QByteArray, raw);
    QFETCH(QByteArray, target);
    QFETCH(QByteArray, matchPath);
    QFETCH(QByteArray, authority);
    NormalisedTarget t;
    QVERIFY2(normaliseTarget(raw.toStdString(), t), t.reason);
    QCOMPARE(qs(t.target), QString::fromLatin1(target));
    QCOMPARE(qs(t.matchPath), QString::fromLatin1(matchPath));
    QCOMPARE(qs(t.authority), QString::fromLatin1(authority));
    QCOMPARE(t.absoluteForm, !authority.isEmpty());
    const auto q = target.indexOf('?');
    QCOMPARE(qs(t.path()), QString::fromLatin1(q < 0 ? target : target.left(q)));
    QCOMPARE(t.hasQuery, q >= 0);
    QCOMPARE(qs(t.query()), q < 0 ? QString() : QString::fromLatin1(target.mid(q + 1)));
}

void TestTarget::refuses_data()
{
    QTest::addColumn<QByteArray>("raw");
    QTest::addColumn<int>("problem");
    const int malformed = int(TargetProblem::Malformed);
    QTest::newRow("percent at the end") << QByteArray("/a%") << malformed;
    QTest::newRow("one hex digit") << QByteArray("/a%4") << malformed;
    QTest::newRow("not hex") << QByteArray("/a%zz") << malformed;
    QTest::newRow("half hex") << QByteArray("/a%4g/b") << malformed;
    QTest::newRow("encoded NUL") << QByteArray("/a%00b") << malformed;
    QTest::newRow("encoded NUL in the query") << QByteArray("/a?b=%00") << malformed;
    QTest::newRow("malformed escape in the query") << QByteArray("/a?b=100%") << malformed;
    QTest::newRow("fragment") << QByteArray("/a#top") << malformed;
    QTest::newRow("no slash") << QByteArray("abc") << malformed;
    QTest::newRow("empty") << QByteArray("") << malformed;
    QTest::newRow("other scheme") << QByteArray("ftp://h/a") << malformed;
    QTest::newRow("no host") << QByteArray("http:///a") << malformed;
    QTest::newRow("userinfo") << QByteArray("http://user:pw@h/a") << malformed;
    QTest::newRow("bad host character") << QByteArray("http://h\\x/a") << malformed;
    QTest::newRow("authority-form") << QByteArray("example.com:443") << int(TargetProblem::AuthorityForm);
    QTest::newRow("authority-form, IPv6") << QByteArray("[::1]:443") << int(TargetProblem::AuthorityForm);
    QTest::newRow("asterisk-form") << QByteArray("*") << int(TargetProblem::AsteriskForm);
}

void TestTarget::refuses()
{
    QFETCH(QByteArray, raw);
    QFETCH(int, problem);
    NormalisedTarget t;
    QVERIFY(!normaliseTarget(raw.toStdString(), t));
    QCOMPARE(int(t.problem), problem);
    QVERIFY(std::string_view(t.reason).size() > 10);
    QVERIFY(!t.ok());
}

void TestTarget::isIdempotent()
{
    QFETCH(QByteArray, raw);
    NormalisedTarget once, twice, matched;
    QVERIFY(normaliseTarget(raw.toStdString(), once));
    QVERIFY(normaliseTarget(once.target, twice));
    QCOMPARE(qs(twice.target), qs(once.target));
    QCOMPARE(qs(twice.matchPath), qs(once.matchPath));
    // A matching path is its own matching path: a log of matched paths replays the same.
    QVERIFY(normaliseTarget(once.matchPath, matched));
    QCOMPARE(qs(matched.matchPath), qs(once.matchPath));
}

void TestTarget::reusesItsStorage()
{
    NormalisedTarget t;
    QVERIFY(normaliseTarget("http://h/a/b/c/%64?x=" + std::string(200, 'y'), t));
    QVERIFY(!normaliseTarget("/bad%zz", t));
    QVERIFY(normaliseTarget("/x", t));  // a failure leaves nothing behind for the next request
    QCOMPARE(qs(t.target), QStringLiteral("/x"));
    QVERIFY(t.authority.empty());
    QVERIFY(!t.absoluteForm);
    QVERIFY(t.ok());
    const auto capacity = t.target.capacity();
    const auto* data = t.target.data();
    QVERIFY(normaliseTarget("/y/z?q", t));
    QCOMPARE(t.target.data(), data);  // the same buffer: no allocation once warm
    QCOMPARE(t.target.capacity(), capacity);
}

QTEST_APPLESS_MAIN(TestTarget)
#include "test_target.moc"
