// SPDX-License-Identifier: GPL-3.0-or-later
// Engine::decide for customers (docs/INTERFACE.md): a customer proves who it
// is (one of its API keys, or a trusted proxy's customer header, as
// settings.customer_auth says) and is then decided by its tier's levels; a
// claim without proof (an unknown or expired key, the customer header from
// anyone else) counts as the anonymous client it is, never spends the
// customer's quota, and the decision says what was claimed; per-customer
// overrides replace or add levels; a tier change applies to the next
// decision. Time is injected.
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
    c.customers = {Customer{"acme", "Acme Inc.", tier, std::move(overrides), {testKey("acme").key}}};
    return c;
}

Tier& tierNamed(EngineConfig& c, const std::string& name)
{
    for (Tier& t : c.tiers)
        if (t.name == name)
            return t;
    qFatal("no tier %s in the configuration", name.c_str());
}

// The customer, proving it with its key.
Request acme()
{
    return Request().header("X-Api-Key", testKey("acme").secret);
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
    void claimsAreNotProof_data();
    void claimsAreNotProof();
    void aClaimNeverSpendsTheCustomersQuota();
    void rotatedKeyExpires();
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
    QTest::newRow("api key") << QByteArray("key");
    QTest::newRow("api key, header name in lower case") << QByteArray("key lower case");
    QTest::newRow("api key, customer_auth either") << QByteArray("key either");
    QTest::newRow("proven already (replay of a limiter.log)") << QByteArray("facts");
    QTest::newRow("trusted proxy's header") << QByteArray("trusted header");
    QTest::newRow("trusted proxy's header, customer_auth either") << QByteArray("trusted header either");
    QTest::newRow("renamed key header") << QByteArray("renamed key header");
}

void TestCustomers::customerIsDecidedByItsTier()
{
    QFETCH(QByteArray, how);
    EngineConfig cfg = withCustomer("Pro");
    const std::string key = testKey("acme").secret;
    Request r;
    if (how == "key") {
        r.header("X-Api-Key", key);
    } else if (how == "key lower case") {
        r.header("x-api-key", key);
    } else if (how == "key either") {
        cfg.settings.customerAuth = CustomerAuth::ApiKeyOrTrustedHeader;
        r.header("X-Api-Key", key);
    } else if (how == "facts") {
        r.customer("acme");
    } else if (how == "trusted header") {
        cfg.settings.customerAuth = CustomerAuth::TrustedHeader;
        r.header("X-Customer-Id", "acme").trusted();
    } else if (how == "trusted header either") {
        cfg.settings.customerAuth = CustomerAuth::ApiKeyOrTrustedHeader;
        r.header("X-Customer-Id", "acme").trusted();
    } else {
        cfg.settings.customerKeyHeader = "Authorization-Key";
        r.header("Authorization-Key", key);
    }

    Engine engine(cfg);
    // 10 req/s would lock an anonymous client out; the customer has its tier.
    for (int i = 0; i < 100; ++i) {
        const Decision d = decide(engine, r, T0 + i * 100);
        QVERIFY2(d.action == Action::Allow, (QByteArray::number(i) + ": " + describe(d)).constData());
        QVERIFY(d.customer);
        QVERIFY(d.claim == Claim::None);
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
    const Request r = Request().header("X-Api-Key", testKey("nobody").secret);
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
    QVERIFY(d.claim == Claim::UnknownKey);
    QCOMPARE(QByteArray::fromStdString(std::string(d.claimed.view())), QByteArray::fromStdString(testKey("nobody").key.id));
}

// What a request may claim without proving it: each is counted by address
// (the per-IP level), and the decision names the claim.
void TestCustomers::claimsAreNotProof_data()
{
    QTest::addColumn<int>("auth");
    QTest::addColumn<QByteArray>("header");
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<bool>("trusted");
    QTest::addColumn<int>("claim");
    QTest::addColumn<QByteArray>("claimed");

    const int key = int(CustomerAuth::ApiKey), proxy = int(CustomerAuth::TrustedHeader), either = int(CustomerAuth::ApiKeyOrTrustedHeader);
    const QByteArray acmeKey = QByteArray::fromStdString(testKey("acme").secret);
    QTest::newRow("customer header, api_key") << key << QByteArray("X-Customer-Id") << QByteArray("acme") << false
                                              << int(Claim::HeaderNotAProof) << QByteArray("acme");
    QTest::newRow("customer header from a trusted proxy, api_key")
        << key << QByteArray("X-Customer-Id") << QByteArray("acme") << true << int(Claim::HeaderNotAProof) << QByteArray("acme");
    QTest::newRow("customer header from anyone, trusted_header")
        << proxy << QByteArray("X-Customer-Id") << QByteArray("acme") << false << int(Claim::UntrustedHeader) << QByteArray("acme");
    QTest::newRow("customer header from anyone, either")
        << either << QByteArray("X-Customer-Id") << QByteArray("acme") << false << int(Claim::UntrustedHeader) << QByteArray("acme");
    QTest::newRow("a trusted proxy names nobody")
        << proxy << QByteArray("X-Customer-Id") << QByteArray("nobody") << true << int(Claim::UnknownCustomer) << QByteArray("nobody");
    QTest::newRow("a key is no proof under trusted_header") << proxy << QByteArray("X-Api-Key") << acmeKey << false << int(Claim::None)
                                                          << QByteArray();
    QTest::newRow("customer_id in the query (0.5) proves nothing")
        << key << QByteArray() << QByteArray("customer_id=acme") << false << int(Claim::None) << QByteArray();
    QTest::newRow("a key too long to be one") << key << QByteArray("X-Api-Key") << QByteArray(300, 'k') << false << int(Claim::UnknownKey)
                                              << QByteArray("kkkkkkkkkkkk");
    QTest::newRow("the key with one character changed")
        << key << QByteArray("X-Api-Key") << QByteArray(acmeKey).replace(20, 1, acmeKey[20] == 'A' ? "B" : "A") << false
        << int(Claim::UnknownKey) << acmeKey.left(12);
}

void TestCustomers::claimsAreNotProof()
{
    QFETCH(int, auth);
    QFETCH(QByteArray, header);
    QFETCH(QByteArray, value);
    QFETCH(bool, trusted);
    QFETCH(int, claim);
    QFETCH(QByteArray, claimed);

    EngineConfig cfg = withCustomer("Pro");
    cfg.settings.customerAuth = CustomerAuth(auth);
    Engine engine(cfg);
    Request r;
    if (header.isEmpty())
        r.withQuery(value.toStdString());
    else
        r.header(header.toStdString(), value.toStdString());
    if (trusted)
        r.trusted();
    for (int i = 0; i < 6; ++i) {
        const Decision d = decide(engine, r, T0 + i * 100);
        COMPARE_ACTION(d, Action::Allow);
        QVERIFY(!d.customer);
        QCOMPARE(ruleOf(d), QByteArray("ip-3s"));
        QCOMPARE(int(d.claim), claim);
        QCOMPARE(QByteArray::fromStdString(std::string(d.claimed.view())), claimed);
    }
    COMPARE_ACTION(decide(engine, r, T0 + 600), Action::Throttle);
}

// The attack: an anonymous client names a paying customer. It gets
// the per-IP level (6 in 3 s), and the customer, from elsewhere, finds its
// whole quota.
void TestCustomers::aClaimNeverSpendsTheCustomersQuota()
{
    Engine engine(withCustomer("Pro"));
    const Request impostor = Request().from("198.51.100.66").header("X-Customer-Id", "acme");
    int allowed = 0;
    for (int i = 0; i < 40; ++i)
        allowed += decide(engine, impostor, T0 + i * 10).action == Action::Allow;
    QCOMPARE(allowed, 6);
    const Decision d = decide(engine, acme().from("192.0.2.20"), T0 + SECOND);
    COMPARE_ACTION(d, Action::Allow);
    QVERIFY(d.customer);
    QCOMPARE(ruleOf(d), QByteArray("pro-1m"));
    QCOMPARE(d.remaining, 99u);
}

// A key rotated out with an overlap is valid until its expiry, then a
// claim like any other; the customer's other key goes on.
void TestCustomers::rotatedKeyExpires()
{
    EngineConfig cfg = withCustomer("Pro");
    cfg.customers[0].keys[0].expiresAt = T0 + MINUTE;
    cfg.customers[0].keys.push_back(testKey("acme, second").key);
    Engine engine(cfg);
    QVERIFY(decide(engine, acme(), T0 + MINUTE - 1).customer);
    const Decision d = decide(engine, acme(), T0 + MINUTE);
    QVERIFY(!d.customer);
    QVERIFY(d.claim == Claim::ExpiredKey);
    QCOMPARE(QByteArray::fromStdString(std::string(d.claimed.view())), QByteArray("acme"));
    QVERIFY(decide(engine, Request().header("X-Api-Key", testKey("acme, second").secret), T0 + MINUTE).customer);
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
