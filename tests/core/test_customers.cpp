// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide for customers (docs/INTERFACE.md): a known customer is
// decided by its tier's levels, wherever its id comes from; an unknown one
// falls back to the per-IP rules; per-customer overrides replace or add
// levels; a tier change applies to the next decision. Time is injected.
//
// Escalation stays at its default (100 refusals within a minute) unless a
// case says otherwise; no case here refuses that often.
#include <QtTest>

#include "core/Engine.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

EngineConfig withCustomer(const std::string& tier, std::vector<Level> overrides = {})
{
    EngineConfig c = defaultConfig();
    c.customers = {Customer{"acme", "Acme Inc.", tier, std::move(overrides)}};
    return c;
}

Tier& tierNamed(EngineConfig& c, const std::string& name)
{
    for (Tier& t : c.tiers)
        if (t.name == name)
            return t;
    qFatal("no tier %s in the configuration", name.c_str());
}

Request acme()
{
    return Request().withQuery("customer_id=acme");
}

QList<uint> levelLimits(const ClientDetail& detail)
{
    QList<uint> out;
    for (const LevelUsage& u : detail.levels)
        out << u.limit;
    return out;
}

} // namespace

class TestCustomers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void customerIsDecidedByItsTier_data();
    void customerIsDecidedByItsTier();
    void unknownCustomerFallsBackToIpRules();
    void customerSource_data();
    void customerSource();
    void tierLimits_data();
    void tierLimits();
    void proHourLevel();
    void overrideReplacesTheLevelOfTheSamePeriod();
    void overrideAddsANewPeriod();
    void seedOverrides();
    void tierChangeAppliesToTheNextDecision();
};

// ---- customers and tiers ---------------------------------------------------------

void TestCustomers::customerIsDecidedByItsTier_data()
{
    QTest::addColumn<QByteArray>("how");
    QTest::newRow("query parameter") << QByteArray("query");
    QTest::newRow("query among others") << QByteArray("query among others");
    QTest::newRow("extracted by the listener") << QByteArray("facts");
    QTest::newRow("header") << QByteArray("header");
    QTest::newRow("header, lower case") << QByteArray("header lower case");
}

void TestCustomers::customerIsDecidedByItsTier()
{
    QFETCH(QByteArray, how);
    Request r;
    if (how == "query")
        r.withQuery("customer_id=acme");
    else if (how == "query among others")
        r.withQuery("page=2&customer_id=acme&sort=asc");
    else if (how == "facts")
        r.customer("acme");
    else if (how == "header")
        r.header("X-Customer-Id", "acme");
    else
        r.header("x-customer-id", "acme");

    Engine engine(withCustomer("Pro"));
    // 10 req/s would lock an anonymous client out; the customer has its tier.
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, r, T0 + i * 100);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(i) + ": " + describe(d)).constData());
        QVERIFY(d.customer);
        if (i == 0) {
            QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
            QCOMPARE(d.limit, 100u);
            QCOMPARE(d.remaining, 99u);
        }
    }
    const Decision d = decide(engine, r, T0 + 10 * SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(label(d.reason), label(Reason::OverLimit));
    QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
    QCOMPARE(d.limit, 100u);
    QCOMPARE(d.remaining, 0u);
    QVERIFY(d.customer);
    // 6 s buckets: the first (60 requests) leaves the window at T0 + 60 s.
    QCOMPARE(d.retryAfterMs, Millis(50 * SECOND));
}

void TestCustomers::unknownCustomerFallsBackToIpRules()
{
    Engine engine(withCustomer("Pro"));
    const Request r = Request().withQuery("customer_id=nobody");
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, r, T0 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QVERIFY(!d.customer);
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    }
    const Decision d = decide(engine, r, T0 + 600);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
    QVERIFY(!d.customer);
}

void TestCustomers::customerSource_data()
{
    QTest::addColumn<int>("source");
    QTest::addColumn<QByteArray>("param");
    QTest::addColumn<bool>("viaQuery");
    QTest::addColumn<bool>("known");

    const int query = int(CustomerSource::QueryParameter), header = int(CustomerSource::Header);
    QTest::newRow("query source, query") << query << QByteArray("customer_id") << true << true;
    QTest::newRow("query source, header ignored") << query << QByteArray("customer_id") << false << false;
    QTest::newRow("header source, header") << header << QByteArray("customer_id") << false << true;
    QTest::newRow("header source, query ignored") << header << QByteArray("customer_id") << true << false;
    QTest::newRow("renamed parameter") << query << QByteArray("cid") << true << true;
}

void TestCustomers::customerSource()
{
    QFETCH(int, source);
    QFETCH(QByteArray, param);
    QFETCH(bool, viaQuery);
    QFETCH(bool, known);

    EngineConfig cfg = withCustomer("Pro");
    cfg.settings.customerSource = CustomerSource(source);
    cfg.settings.customerParam = param.toStdString();
    Request r;
    if (viaQuery)
        r.withQuery(param.toStdString() + "=acme");
    else
        r.header("X-Customer-Id", "acme");
    Engine engine(cfg);

    const Decision d = decide(engine, r, T0);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.customer, known);
    QCOMPARE(ruleOf(d), known ? QByteArray("pro-1m") : QByteArray("ip-3s"));
}

void TestCustomers::tierLimits_data()
{
    QTest::addColumn<QByteArray>("tier");
    QTest::addColumn<uint>("limit");
    QTest::addColumn<QByteArray>("rule");
    QTest::addColumn<qint64>("retryAfter");

    // Everything at T0, the extra request 1 s later. Sliding windows of 10
    // buckets: the first bucket leaves at T0 + period.
    QTest::newRow("Free 100/h") << QByteArray("Free") << 100u << QByteArray("free-1h") << qint64(HOUR - SECOND);
    QTest::newRow("Pro 100/min") << QByteArray("Pro") << 100u << QByteArray("pro-1m") << qint64(MINUTE - SECOND);
    QTest::newRow("Enterprise 200/min") << QByteArray("Enterprise") << 200u << QByteArray("enterprise-1m") << qint64(MINUTE - SECOND);
}

void TestCustomers::tierLimits()
{
    QFETCH(QByteArray, tier);
    QFETCH(uint, limit);
    QFETCH(QByteArray, rule);
    QFETCH(qint64, retryAfter);

    Engine engine(withCustomer(tier.toStdString()));
    for (uint i = 0; i < limit; ++i) {
        const Decision d = decide(engine, acme(), T0);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(i) + ": " + describe(d)).constData());
        if (i == 0) {
            QCOMPARE(ruleOf(d), rule);
            QCOMPARE(d.remaining, std::uint32_t(limit - 1));
        }
    }
    const Decision d = decide(engine, acme(), T0 + SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), rule);
    QCOMPARE(d.limit, std::uint32_t(limit));
    QVERIFY(d.customer);
    QCOMPARE(d.retryAfterMs, Millis(retryAfter));
    QCOMPARE(d.retryAfterSeconds(), std::int64_t(retryAfter / 1000));
}

void TestCustomers::proHourLevel()
{
    // 100 at the start of each minute for 50 minutes: the minute level never
    // refuses (last minute's bucket has left), the hour level is then full.
    Engine engine(withCustomer("Pro"));
    for (int m = 0; m < 50; ++m) {
        for (int i = 0; i < 100; ++i) {
            const Decision d = decide(engine, acme(), T0 + m * MINUTE);
            QVERIFY2(d.action == Action::Allow,
                     (QByteArray::number(m) + "/" + QByteArray::number(i) + ": " + describe(d)).constData());
        }
    }
    const Decision d = decide(engine, acme(), T0 + 50 * MINUTE);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("pro-1h"));
    QCOMPARE(d.limit, 5000u);
    // 6-minute buckets: the first (minutes 0-5, 600 requests) leaves at T0 + 60 min.
    QCOMPARE(d.retryAfterMs, Millis(10 * MINUTE));
}

void TestCustomers::overrideReplacesTheLevelOfTheSamePeriod()
{
    Engine engine(withCustomer("Pro", {level(1000, HOUR)}));
    COMPARE_ACTION(decide(engine, acme(), T0), Action::Allow);
    const auto detail = engine.client(ip("203.0.113.7"), T0);
    QVERIFY(detail.has_value());
    QCOMPARE(qs(detail->summary.customer), QStringLiteral("acme"));
    QCOMPARE(levelNames(*detail), QStringList({QStringLiteral("pro-1m"), QStringLiteral("acme-1h")}));
    QCOMPARE(levelLimits(*detail), QList<uint>({100u, 1000u}));

    // 100 per minute for 10 minutes fills 1000/h (Pro's own 5000/h would not be).
    for (int m = 0; m < 10; ++m)
        for (int i = (m == 0 ? 1 : 0); i < 100; ++i)
            QVERIFY(decide(engine, acme(), T0 + m * MINUTE).action == Action::Allow);
    const Decision d = decide(engine, acme(), T0 + 10 * MINUTE);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("acme-1h"));
    QCOMPARE(d.limit, 1000u);
    QCOMPARE(d.retryAfterMs, Millis(HOUR - 10 * MINUTE));
}

void TestCustomers::overrideAddsANewPeriod()
{
    Engine engine(withCustomer("Pro", {level(2, DAY)}));
    Decision d = decide(engine, acme(), T0);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(ruleOf(d), QByteArray("acme-1d"));  // the least remaining
    QCOMPARE(d.remaining, 1u);
    COMPARE_ACTION(decide(engine, acme(), T0 + 100), Action::Allow);
    d = decide(engine, acme(), T0 + SECOND);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("acme-1d"));
    QCOMPARE(d.limit, 2u);

    const auto detail = engine.client(ip("203.0.113.7"), T0 + SECOND);
    QVERIFY(detail.has_value());
    QCOMPARE(levelNames(*detail),
             QStringList({QStringLiteral("pro-1m"), QStringLiteral("pro-1h"), QStringLiteral("acme-1d")}));
    QCOMPARE(levelLimits(*detail), QList<uint>({100u, 5000u, 2u}));
}

void TestCustomers::seedOverrides()
{
    // docs/BACKGROUND.md, fixed windows, levels, lists and tiers: {60:100, 3600:1000, 86400:10000} on a Pro customer.
    Engine engine(withCustomer("Pro", {level(100, MINUTE), level(1000, HOUR), level(10000, DAY)}));
    const Decision d = decide(engine, acme(), T0);
    QCOMPARE(ruleOf(d), QByteArray("acme-1m"));
    QCOMPARE(d.remaining, 99u);
    const auto detail = engine.client(ip("203.0.113.7"), T0);
    QVERIFY(detail.has_value());
    QCOMPARE(levelNames(*detail),
             QStringList({QStringLiteral("acme-1m"), QStringLiteral("acme-1h"), QStringLiteral("acme-1d")}));
    QCOMPARE(levelLimits(*detail), QList<uint>({100u, 1000u, 10000u}));
}

void TestCustomers::tierChangeAppliesToTheNextDecision()
{
    Engine engine(withCustomer("Pro"));
    for (std::uint32_t i = 0; i < 3; ++i) {
        const Decision d = decide(engine, acme(), T0 + i * 10);
        COMPARE_ACTION(d, Action::Allow);
        QCOMPARE(d.remaining, 99 - i);
    }
    EngineConfig cfg = withCustomer("Pro");
    tierNamed(cfg, "Pro").levels[0].limit = 5;
    const auto error = engine.setConfig(cfg);
    QVERIFY2(!error, error ? error->c_str() : "");

    Decision d = decide(engine, acme(), T0 + 100);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.limit, 5u);
    QCOMPARE(d.remaining, 1u);
    d = decide(engine, acme(), T0 + 200);
    COMPARE_ACTION(d, Action::Allow);
    QCOMPARE(d.remaining, 0u);
    d = decide(engine, acme(), T0 + 300);
    COMPARE_ACTION(d, Action::Throttle);
    QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
    QCOMPARE(d.limit, 5u);
}

QTEST_APPLESS_MAIN(TestCustomers)
#include "test_customers.moc"
