// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide on what counts and under which key (docs/INTERFACE.md): the
// IPv6 and IPv4 prefixes a client is counted by; what is not counted
// (excluded paths, requests with cookies when only cookieless ones count,
// safe user agents); dry-run, which counts and reports without refusing.
// Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestCounting : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void ipv6Rotation_data();
    void ipv6Rotation();
    void ipv4Prefix_data();
    void ipv4Prefix();
    void countingRange();

    void excludedPathsAreNotCounted_data();
    void excludedPathsAreNotCounted();
    void lookalikePathIsCounted();
    void cookielessOnly();
    void safeUserAgents_data();
    void safeUserAgents();
    void dryRunReportsWithoutRefusing();
};

// ---- counting keys ---------------------------------------------------------------

void TestCounting::ipv6Rotation_data()
{
    QTest::addColumn<int>("bits");
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<bool>("seventhThrottled");

    QTest::newRow("/64, rotating hosts") << 64 << QStringLiteral("2001:db8:1:2::%1") << true;
    QTest::newRow("/64, rotating subnets") << 64 << QStringLiteral("2001:db8:1:%1::1") << false;
    QTest::newRow("/128, rotating hosts") << 128 << QStringLiteral("2001:db8:1:2::%1") << false;
    QTest::newRow("/48, rotating subnets") << 48 << QStringLiteral("2001:db8:1:%1::1") << true;
}

void TestCounting::ipv6Rotation()
{
    QFETCH(int, bits);
    QFETCH(QString, pattern);
    QFETCH(bool, seventhThrottled);

    EngineConfig cfg = defaultConfig();
    cfg.settings.ipv6PrefixBits = bits;
    Engine engine(cfg);
    for (int n = 1; n <= 6; ++n) {
        const Decision d = decide(engine, Request().from(pattern.arg(n).toStdString()), T0 + n * 100);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.remaining, seventhThrottled ? std::uint32_t(6 - n) : 5u);
    }
    const Decision d = decide(engine, Request().from(pattern.arg(7).toStdString()), T0 + 700);
    COMPARE_ACTION(d, seventhThrottled ? Action::Throttle : Action::Allow);
    if (seventhThrottled)
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));

    // Another allocation is another client.
    const Decision other = decide(engine, Request().from("2001:db8:99::1"), T0 + 800);
    COMPARE_ACTION(other, Action::Allow);
    QCOMPARE(other.remaining, 5u);
}

void TestCounting::ipv4Prefix_data()
{
    QTest::addColumn<int>("bits");
    QTest::addColumn<bool>("seventhThrottled");
    QTest::newRow("/32 (default)") << 32 << false;
    QTest::newRow("/24") << 24 << true;
}

void TestCounting::ipv4Prefix()
{
    QFETCH(int, bits);
    QFETCH(bool, seventhThrottled);

    EngineConfig cfg = defaultConfig();
    cfg.settings.ipv4PrefixBits = bits;
    Engine engine(cfg);
    for (int n = 1; n <= 6; ++n)
        COMPARE_ACTION(decide(engine, Request().from("203.0.113." + std::to_string(n)), T0 + n * 100), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("203.0.113.7"), T0 + 700),
                   seventhThrottled ? Action::Throttle : Action::Allow);
    COMPARE_ACTION(decide(engine, Request().from("203.0.114.7"), T0 + 700), Action::Allow);
}

void TestCounting::countingRange()
{
    Engine engine;
    QCOMPARE(qs(engine.countingRange(ip("203.0.113.7")).toString()), QStringLiteral("203.0.113.7/32"));
    QCOMPARE(qs(engine.countingRange(ip("::ffff:203.0.113.7")).toString()), QStringLiteral("203.0.113.7/32"));
    QCOMPARE(qs(engine.countingRange(ip("2001:db8:1:2:aaaa::7")).toString()), QStringLiteral("2001:db8:1:2::/64"));
}

// ---- what is not counted ---------------------------------------------------------

void TestCounting::excludedPathsAreNotCounted_data()
{
    QTest::addColumn<QByteArray>("path");
    QTest::newRow("css") << QByteArray("/style.css");
    QTest::newRow("js in a folder") << QByteArray("/static/app.js");
    QTest::newRow("png") << QByteArray("/img/logo.png");
    QTest::newRow("ico") << QByteArray("/favicon.ico");
    QTest::newRow("woff2") << QByteArray("/fonts/inter.woff2");
    // Everything else a page pulls in, in any case.
    QTest::newRow("woff") << QByteArray("/fonts/inter.woff");
    QTest::newRow("ttf") << QByteArray("/fonts/Roboto-Regular.ttf");
    QTest::newRow("otf") << QByteArray("/fonts/a.otf");
    QTest::newRow("eot") << QByteArray("/fonts/a.eot");
    QTest::newRow("jpeg") << QByteArray("/photos/2024/beach.jpeg");
    QTest::newRow("webp") << QByteArray("/img/hero.webp");
    QTest::newRow("avif") << QByteArray("/img/hero.avif");
    QTest::newRow("bmp") << QByteArray("/img/old.bmp");
    QTest::newRow("module") << QByteArray("/js/app.mjs");
    QTest::newRow("source map") << QByteArray("/js/app.js.map");
    QTest::newRow("upper case") << QByteArray("/A.PNG");
    QTest::newRow("mixed case") << QByteArray("/Fonts/Inter.Woff2");
}

void TestCounting::excludedPathsAreNotCounted()
{
    QFETCH(QByteArray, path);

    Engine engine;
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, Request().at(path.toStdString()), T0 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::ExcludedPath));
        QCOMPARE(d.limit, 0u);  // no level applied
    }
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + 200 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.remaining, std::uint32_t(5 - i));
    }
    COMPARE_ACTION(decide(engine, Request(), T0 + 300), Action::Throttle);
}

void TestCounting::lookalikePathIsCounted()
{
    Engine engine;
    const Decision first = decide(engine, Request().at("/style.css.php"), T0);  // (.map is a source map: excluded)
    QCOMPARE(label(first.reason), label(Reason::Counted));
    QCOMPARE(first.remaining, 5u);
    for (int i = 1; i < 6; ++i)
        COMPARE_ACTION(decide(engine, Request().at("/css"), T0 + i), Action::Allow);
    COMPARE_ACTION(decide(engine, Request().at("/style.cssx"), T0 + 10), Action::Throttle);
}

void TestCounting::cookielessOnly()
{
    EngineConfig cfg = defaultConfig();
    cfg.bot.cookielessOnly = true;
    Engine engine(cfg);
    for (int i = 0; i < 20; ++i) {
        const Decision d = decide(engine, Request().withCookies(1), T0 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::HasCookies));
    }
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + 100 + i);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.reason), label(Reason::Counted));
    }
    COMPARE_ACTION(decide(engine, Request(), T0 + 200), Action::Throttle);

    // Without the option, cookies change nothing.
    Engine plain;
    for (int i = 0; i < 6; ++i)
        QCOMPARE(label(decide(plain, Request().withCookies(3), T0 + i).reason), label(Reason::Counted));
    COMPARE_ACTION(decide(plain, Request().withCookies(3), T0 + 10), Action::Throttle);
}

void TestCounting::safeUserAgents_data()
{
    QTest::addColumn<QByteArray>("pattern");
    QTest::addColumn<QByteArray>("agent");
    QTest::addColumn<bool>("safe");

    QTest::newRow("substring, any case")
        << QByteArray("Googlebot") << QByteArray("Mozilla/5.0 (compatible; googlebot/2.1; +http://www.google.com/bot.html)") << true;
    QTest::newRow("upper-case agent") << QByteArray("Googlebot") << QByteArray("GOOGLEBOT") << true;
    QTest::newRow("a browser") << QByteArray("Googlebot") << QByteArray("Mozilla/5.0 (X11; Linux x86_64)") << false;
    QTest::newRow("glob") << QByteArray("*bingbot/*")
                          << QByteArray("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)") << true;
    QTest::newRow("glob is anchored") << QByteArray("bingbot*") << QByteArray("Mozilla/5.0 (compatible; bingbot/2.0)") << false;
}

void TestCounting::safeUserAgents()
{
    QFETCH(QByteArray, pattern);
    QFETCH(QByteArray, agent);
    QFETCH(bool, safe);

    EngineConfig cfg = defaultConfig();
    cfg.bot.safeUserAgents = {pattern.toStdString()};
    Engine engine(cfg);
    const Request r = Request().agent(agent.toStdString());
    if (safe) {
        for (int i = 0; i < 50; ++i) {
            const Decision d = decide(engine, r, T0 + i);
            COMPARE_ACTION(d, Action::Allow);
            QCOMPARE(label(d.reason), label(Reason::SafeUserAgent));
        }
    } else {
        for (int i = 0; i < 6; ++i)
            QCOMPARE(label(decide(engine, r, T0 + i).reason), label(Reason::Counted));
        COMPARE_ACTION(decide(engine, r, T0 + 10), Action::Throttle);
    }
}

void TestCounting::dryRunReportsWithoutRefusing()
{
    EngineConfig cfg = defaultConfig();
    cfg.settings.dryRun = true;
    Engine engine(cfg);
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, Request(), T0 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(label(d.wouldBe), label(Action::Allow));
    }
    Decision d = decide(engine, Request(), T0 + 600);
    COMPARE_ACTION(d, Action::DryRun);
    QCOMPARE(label(d.wouldBe), label(Action::Throttle));
    QCOMPARE(label(d.reason), label(Reason::OverLimit));
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QCOMPARE(d.retryAfterMs, Millis(3000));
    QVERIFY(!d.refused());

    engine.setList(ListKind::Blocklist, makeList({listEntry("198.51.100.9/32", "scraper")}));
    d = decide(engine, Request().from("198.51.100.9"), T0 + 700);
    COMPARE_ACTION(d, Action::DryRun);
    QCOMPARE(label(d.wouldBe), label(Action::Block));
    QCOMPARE(label(d.reason), label(Reason::Blocklisted));
    QVERIFY(!d.refused());

    const EngineCounters c = engine.counters(T0 + 1000);
    QCOMPARE(c.decisions[std::size_t(Action::Allow)], std::uint64_t(6));
    QCOMPARE(c.decisions[std::size_t(Action::Throttle)], std::uint64_t(0));
    QCOMPARE(c.decisions[std::size_t(Action::Block)], std::uint64_t(0));
    QCOMPARE(c.decisions[std::size_t(Action::DryRun)], std::uint64_t(2));
}

QTEST_APPLESS_MAIN(TestCounting)
#include "test_counting.moc"
