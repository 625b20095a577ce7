// SPDX-License-Identifier: GPL-3.0-or-later
// What the operator configures: validation that names the bad field, the
// defaults of a new database (docs/INTERFACE.md), customer overrides and the
// compact period names used in level names.
#include <QtTest>

#include "core/Rules.h"
#include "core/SettingTable.h"
#include "TestSupport.h"
#include "core/Tuning.h"
#include "core/Window.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

namespace {

// A rule counted by the X-Api-Key header with `levels` levels (periods 1 s, 2 s, ...).
ThrottleRule keyedRule(std::string name, int levels)
{
    std::vector<Level> periods;
    for (int i = 1; i <= levels; ++i)
        periods.push_back(level(1000, i * SECOND));
    return apiKeyRule(std::move(name), std::move(periods));
}

struct BadCase {
    const char* tag;
    void (*mutate)(EngineConfig&);
    const char* message;
};

const BadCase BAD_CASES[] = {
    {"level limit 0", [](EngineConfig& c) { c.rules[0].levels[0].limit = 0; }, "rules[0].levels[0].limit must be > 0"},
    {"level period 0", [](EngineConfig& c) { c.rules[0].levels[1].periodMs = 0; }, "rules[0].levels[1].period must be > 0"},
    {"level period negative", [](EngineConfig& c) { c.rules[0].levels[2].periodMs = -5; }, "rules[0].levels[2].period must be > 0"},
    {"repeated period", [](EngineConfig& c) { c.rules[0].levels[2].periodMs = 5 * MINUTE; },
     "rules[0].levels[2].period repeats another level's period"},
    {"rule without levels", [](EngineConfig& c) { c.rules[0].levels.clear(); }, "rules[0].levels must have at least one level"},
    {"rule without a name", [](EngineConfig& c) { c.rules[0].name.clear(); }, "rules[0].name must not be empty"},
    {"duplicate rule names", [](EngineConfig& c) { c.rules.push_back(c.rules[0]); }, "rules[1].name \"ip\" is used twice"},
    {"header discriminator without a header",
     [](EngineConfig& c) { c.rules[0].discriminator = Discriminator::Header; },
     "rules[0].header must name a header for a header discriminator"},
    {"bucket longer than the period", [](EngineConfig& c) { c.rules[0].levels[1].bucketMs = 6 * MINUTE; },
     "rules[0].levels[1].bucket must not be longer than the period"},
    {"too many buckets", [](EngineConfig& c) { c.rules[0].levels[1].bucketMs = SECOND; },
     "rules[0].levels[1].bucket is too narrow: at most 120 buckets per period"},
    {"tier level limit 0", [](EngineConfig& c) { c.tiers[1].levels[0].limit = 0; }, "tiers[1].levels[0].limit must be > 0"},
    {"duplicate tier", [](EngineConfig& c) { c.tiers.push_back(c.tiers[0]); }, "tiers[3].name \"Free\" is used twice"},
    {"unknown tier", [](EngineConfig& c) { c.customers = {Customer{"acme", "Acme", "Gold", {}, {}}}; },
     "customers[0].tier \"Gold\" is not a known tier"},
    {"duplicate customer",
     [](EngineConfig& c) { c.customers = {Customer{"acme", "Acme", "Pro", {}, {}}, Customer{"acme", "Acme 2", "Free", {}, {}}}; },
     "customers[1].id \"acme\" is used twice"},
    {"override repeats a period",
     [](EngineConfig& c) { c.customers = {Customer{"acme", "Acme", "Pro", {level(1000, HOUR), level(2000, HOUR)}, {}}}; },
     "customers[0].overrides[1].period repeats another level's period"},
    {"override limit 0", [](EngineConfig& c) { c.customers = {Customer{"acme", "Acme", "Pro", {level(0, DAY)}, {}}}; },
     "customers[0].overrides[0].limit must be > 0"},
    {"key digest not hex",
     [](EngineConfig& c) { c.customers = {Customer{"acme", "Acme", "Pro", {}, {CustomerKey{"fgk_x", std::string(64, 'Z'), 1, 0}}}}; },
     "customers[0].keys[0].sha256 must be 64 lowercase hex digits"},
    {"one key, two customers",
     [](EngineConfig& c) {
         const CustomerKey k{"fgk_x", std::string(64, 'a'), 1, 0};
         c.customers = {Customer{"acme", "Acme", "Pro", {}, {k}}, Customer{"zed", "Zed", "Pro", {}, {k}}};
     },
     "customers[1].keys[0] is another customer's key too (or this one's twice)"},
    {"too many keys",
     [](EngineConfig& c) {
         Customer cu{"acme", "Acme", "Pro", {}, {}};
         for (int i = 0; i < 11; ++i)
             cu.keys.push_back(CustomerKey{"fgk_" + std::to_string(i), std::string(63, 'a') + char('a' + i % 6), 1, 0});
         c.customers = {cu};
     },
     "customers[0].keys: at most 10 keys (revoke the old ones)"},
    {"key header not a header name", [](EngineConfig& c) { c.settings.customerKeyHeader = "X Api Key"; },
     "settings.customer_key_header must be a header name (letters, digits and !#$%&'*+-.^_`|~)"},
    {"customer header empty", [](EngineConfig& c) { c.settings.customerHeader.clear(); },
     "settings.customer_header must be a header name (letters, digits and !#$%&'*+-.^_`|~)"},
    {"cooldown duration 0", [](EngineConfig& c) { c.cooldowns[0].durationMs = 0; }, "cooldowns[0].duration must be > 0"},
    {"escalation refusals 0", [](EngineConfig& c) { c.escalation.refusals = 0; }, "escalation.refusals must be > 0"},
    {"escalation cap below the ban", [](EngineConfig& c) { c.escalation.maxBanMs = c.escalation.banMs - 1; },
     "escalation.max_ban must be >= escalation.ban"},
    {"throttle status 418", [](EngineConfig& c) { c.settings.throttleStatus = 418; },
     "settings.throttle_status must be 429, 503 or 403"},
    {"ipv6 prefix 0", [](EngineConfig& c) { c.settings.ipv6PrefixBits = 0; }, "settings.ipv6_prefix must be 1-128"},
    {"ipv6 prefix 129", [](EngineConfig& c) { c.settings.ipv6PrefixBits = 129; }, "settings.ipv6_prefix must be 1-128"},
    {"ipv4 prefix 33", [](EngineConfig& c) { c.settings.ipv4PrefixBits = 33; }, "settings.ipv4_prefix must be 1-32"},
    {"no tracked keys", [](EngineConfig& c) { c.settings.maxTrackedKeys = 0; }, "settings.max_tracked_keys must be > 0"},
    // The caps of one decision (Tuning.h) are refused, never silently cut.
    {"17 rules counted by a header",
     [](EngineConfig& c) {
         for (int i = 0; i < 17; ++i)
             c.rules.push_back(keyedRule("key" + std::to_string(i), 1));
     },
     "rules[17].key: at most 16 rules may count by a header or by address and user agent"},
    {"17 rules by header or user agent",
     [](EngineConfig& c) {
         for (int i = 0; i < 17; ++i) {
             c.rules.push_back(keyedRule("key" + std::to_string(i), 1));
             if (i % 2)
                 c.rules.back().discriminator = Discriminator::AddressAndUserAgent;
         }
     },
     "rules[17].key: at most 16 rules may count by a header or by address and user agent"},
    {"a rule with 65 levels", [](EngineConfig& c) { c.rules.push_back(keyedRule("key", 65)); },
     "rules[1].levels has 65 levels: at most 64"},
    {"65 levels counted by address",
     [](EngineConfig& c) {
         c.rules.push_back(keyedRule("more", 62));  // the "ip" rule has 3
         c.rules.back().discriminator = Discriminator::ClientAddress;
     },
     "rules[1].levels: the rules counted by address have 65 levels together: at most 64"},
    {"a tier with 65 levels", [](EngineConfig& c) { c.tiers[0].levels = keyedRule("t", 65).levels; },
     "tiers[0].levels has 65 levels: at most 64"},
    {"a customer with 65 effective levels",
     [](EngineConfig& c) {
         c.tiers[0].levels = keyedRule("t", 60).levels;  // periods 1..60 s
         std::vector<Level> more;
         for (int i = 0; i < 5; ++i)
             more.push_back(level(10, HOUR + i * SECOND));
         c.customers = {Customer{"acme", "Acme", "Free", more, {}}};
     },
     "customers[0].overrides: with tier \"Free\" they make 65 levels: at most 64"},
    // Globs: each costs a pass over the path per decision (Tuning.h).
    {"a rule path of 513 characters", [](EngineConfig& c) { c.rules[0].pathGlob = "/" + std::string(511, 'a') + "*"; },
     "rules[0].path must be at most 512 characters"},
    {"a cooldown path of 513 characters", [](EngineConfig& c) { c.cooldowns[0].pathGlob = "*" + std::string(512, 'a'); },
     "cooldowns[0].path must be at most 512 characters"},
    {"257 cooldowns",
     [](EngineConfig& c) {
         for (int i = 1; i < 257; ++i) {
             c.cooldowns.push_back(c.cooldowns[0]);
             c.cooldowns.back().name += std::to_string(i);
         }
     },
     "cooldowns has 257 cooldowns: at most 256"},
    {"an excluded path of 513 characters", [](EngineConfig& c) { c.bot.excludedPaths.push_back("*" + std::string(511, 'a') + "*"); },
     "excluded_paths[18] must be at most 512 characters"},
    {"257 excluded paths", [](EngineConfig& c) { c.bot.excludedPaths.resize(257, "*.css"); },
     "excluded_paths has 257 patterns: at most 256"},
    {"a safe user agent of 513 characters", [](EngineConfig& c) { c.bot.safeUserAgents = {"Googlebot", std::string(513, 'b')}; },
     "safe_user_agents[1] must be at most 512 characters"},
    {"257 safe user agents", [](EngineConfig& c) { c.bot.safeUserAgents.assign(257, "Googlebot"); },
     "safe_user_agents has 257 patterns: at most 256"},
};

QString levelsText(const std::vector<Level>& levels)
{
    QStringList parts;
    for (const Level& l : levels)
        parts << QStringLiteral("%1/%2").arg(l.limit).arg(qs(formatPeriod(l.periodMs)));
    return parts.join(QLatin1Char(','));
}

} // namespace

class TestRules : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void defaultsAreValid();
    void validate_data();
    void validate();
    void validOddities();
    void defaultConfigMatchesInterface();
    void settingTableNamesEachSettingOnce();
    void settingRowsCheckTheirOwnRange();
    void formatPeriod_data();
    void formatPeriod();
    void effectiveLevels_data();
    void effectiveLevels();
    void equalsIgnoreCase_data();
    void equalsIgnoreCase();
};

void TestRules::defaultsAreValid()
{
    const auto error = Floodgate::Core::validate(defaultConfig());
    QVERIFY2(!error, error ? error->c_str() : "");
    QVERIFY(!Floodgate::Core::validate(EngineConfig{}));  // nothing configured is valid too
}

void TestRules::validate_data()
{
    QTest::addColumn<int>("index");
    for (int i = 0; i < int(std::size(BAD_CASES)); ++i)
        QTest::newRow(BAD_CASES[i].tag) << i;
}

void TestRules::validate()
{
    QFETCH(int, index);
    const BadCase& bad = BAD_CASES[index];

    EngineConfig c = defaultConfig();
    bad.mutate(c);
    const auto error = Floodgate::Core::validate(c);
    QVERIFY2(error.has_value(), bad.tag);
    QCOMPARE(qs(*error), QString::fromUtf8(bad.message));
}

void TestRules::validOddities()
{
    // Escalation settings are not checked while escalation is off.
    EngineConfig c = defaultConfig();
    c.escalation.enabled = false;
    c.escalation.refusals = 0;
    QVERIFY(!Floodgate::Core::validate(c));

    // A customer with no overrides, each tier once, every accepted status.
    c = defaultConfig();
    c.customers = {Customer{"a", "A", "Free", {}, {}}, Customer{"b", "B", "Pro", {}, {}}, Customer{"c", "C", "Enterprise", {}, {}}};
    for (int status : {429, 503, 403}) {
        c.settings.throttleStatus = status;
        QVERIFY2(!Floodgate::Core::validate(c), qPrintable(QString::number(status)));
    }
    // 120 buckets is the most a level may have.
    c = defaultConfig();
    c.rules[0].levels[1].bucketMs = 5 * MINUTE / 120;
    QVERIFY(!Floodgate::Core::validate(c));

    // The caps themselves are allowed: 16 keyed rules of 64 levels, 64 levels
    // counted by address, a customer with 64 effective levels.
    c = defaultConfig();
    for (int i = 0; i < 16; ++i)
        c.rules.push_back(keyedRule("key" + std::to_string(i), 64));
    c.rules.push_back(keyedRule("more", 61));
    c.rules.back().discriminator = Discriminator::ClientAddress;
    c.tiers[0].levels = keyedRule("t", 60).levels;
    c.customers = {Customer{"acme", "Acme", "Free", {level(1, HOUR), level(2, 2 * HOUR), level(3, 3 * HOUR), level(4, 4 * HOUR)}, {}}};
    auto error = Floodgate::Core::validate(c);
    QVERIFY2(!error, error ? error->c_str() : "");

    // Globs of 512 characters, 256 in each list, 256 cooldowns.
    c = defaultConfig();
    const std::string longest = "*" + std::string(510, 'a') + "*";
    c.rules[0].pathGlob = longest;
    c.bot.excludedPaths.assign(256, longest);
    c.bot.safeUserAgents.assign(256, std::string(512, 'b'));
    c.cooldowns[0].pathGlob = longest;
    for (int i = 1; i < 256; ++i) {
        c.cooldowns.push_back(c.cooldowns[0]);
        c.cooldowns.back().name += std::to_string(i);
    }
    error = Floodgate::Core::validate(c);
    QVERIFY2(!error, error ? error->c_str() : "");
    QCOMPARE(Tuning::maxKeyedRules, std::size_t(16));
    QCOMPARE(Tuning::maxLevelsPerEntry, std::size_t(64));
}

void TestRules::defaultConfigMatchesInterface()
{
    const EngineConfig c = defaultConfig();

    // Per-IP levels: 6 / 3 s (lockout for 3 s once over), 300 / 5 min, 600 / 30 min.
    QCOMPARE(c.rules.size(), std::size_t(1));
    const ThrottleRule& ip = c.rules[0];
    QCOMPARE(qs(ip.name), QStringLiteral("ip"));
    QVERIFY(ip.discriminator == Discriminator::ClientAddress);
    QVERIFY(ip.method.empty());
    QVERIFY(ip.pathGlob.empty() || ip.pathGlob == "*");
    QCOMPARE(ip.levels.size(), std::size_t(3));
    QCOMPARE(label(ip.levels[0].algorithm), label(Algorithm::Lockout));
    QCOMPARE(ip.levels[0].limit, 6u);
    QCOMPARE(ip.levels[0].periodMs, 3 * SECOND);
    QCOMPARE(LevelSpec::compile(ip.levels[0], "ip-3s").lockoutMs, 3 * SECOND);
    QCOMPARE(label(ip.levels[1].algorithm), label(Algorithm::SlidingWindow));
    QCOMPARE(ip.levels[1].limit, 300u);
    QCOMPARE(ip.levels[1].periodMs, 5 * MINUTE);
    QCOMPARE(label(ip.levels[2].algorithm), label(Algorithm::SlidingWindow));
    QCOMPARE(ip.levels[2].limit, 600u);
    QCOMPARE(ip.levels[2].periodMs, 30 * MINUTE);
    for (const Level& l : ip.levels) {
        QVERIFY(l.name.empty());  // named "ip-3s", "ip-5m", "ip-30m"
        QVERIFY(!l.countRefused);
    }

    // Cooldown: POST /comments, 30 s per user (X-User-Id, else the address).
    QCOMPARE(c.cooldowns.size(), std::size_t(1));
    QCOMPARE(qs(c.cooldowns[0].name), QStringLiteral("comments"));
    QCOMPARE(qs(c.cooldowns[0].method), QStringLiteral("POST"));
    QCOMPARE(qs(c.cooldowns[0].pathGlob), QStringLiteral("/comments"));
    QCOMPARE(c.cooldowns[0].durationMs, 30 * SECOND);
    QCOMPARE(qs(c.cooldowns[0].userHeader), QStringLiteral("X-User-Id"));

    // Tiers: Free 100/h; Pro 100/min + 5,000/h; Enterprise 200/min + 10,000/h.
    QCOMPARE(c.tiers.size(), std::size_t(3));
    QCOMPARE(qs(c.tiers[0].name), QStringLiteral("Free"));
    QCOMPARE(levelsText(c.tiers[0].levels), QStringLiteral("100/1h"));
    QCOMPARE(qs(c.tiers[1].name), QStringLiteral("Pro"));
    QCOMPARE(levelsText(c.tiers[1].levels), QStringLiteral("100/1m,5000/1h"));
    QCOMPARE(qs(c.tiers[2].name), QStringLiteral("Enterprise"));
    QCOMPARE(levelsText(c.tiers[2].levels), QStringLiteral("200/1m,10000/1h"));
    QVERIFY(c.customers.empty());

    // Excluded from counting: every static type a browser fetches for a page.
    const std::vector<std::string> assets{"*.css",  "*.js",   "*.mjs",   "*.map", "*.png", "*.jpg",
                                          "*.jpeg", "*.gif",  "*.svg",   "*.ico", "*.webp", "*.avif",
                                          "*.bmp",  "*.woff", "*.woff2", "*.ttf", "*.otf", "*.eot"};
    QVERIFY(c.bot.excludedPaths == assets);
    QVERIFY(!c.bot.cookielessOnly);
    QVERIFY(c.bot.safeUserAgents.empty());

    // Settings.
    QCOMPARE(c.settings.throttleStatus, 429);
    QCOMPARE(c.settings.ipv6PrefixBits, 64);
    QCOMPARE(c.settings.ipv6PrefixBits, Tuning::defaultIpv6CountingPrefix);
    QCOMPARE(c.settings.ipv4PrefixBits, 32);
    QVERIFY(!c.settings.dryRun);
    QVERIFY(c.settings.customerAuth == CustomerAuth::ApiKey);
    QCOMPARE(qs(c.settings.customerKeyHeader), QStringLiteral("X-Api-Key"));
    QCOMPARE(qs(c.settings.customerHeader), QStringLiteral("X-Customer-Id"));
    QCOMPARE(c.settings.maxTrackedKeys, std::size_t(1'000'000));
    QCOMPARE(c.settings.maxTrackedKeys, Tuning::defaultMaxTrackedKeys);
    QVERIFY(c.settings.trustedProxies.empty());

    // The rest of docs/INTERFACE.md's table lives in Tuning.h.
    QCOMPARE(Tuning::defaultListTtlMs, Millis(604'800'000));
    QCOMPARE(Tuning::liveBucketMs, Millis(3000));
    QCOMPARE(Tuning::liveBucketCount, std::size_t(20));
    QCOMPARE(Tuning::liveWindowMs, Millis(60'000));
}

void TestRules::formatPeriod_data()
{
    QTest::addColumn<qint64>("ms");
    QTest::addColumn<QString>("text");

    QTest::newRow("3 s") << qint64(3000) << QStringLiteral("3s");
    QTest::newRow("1 s") << qint64(1000) << QStringLiteral("1s");
    QTest::newRow("90 s") << qint64(90'000) << QStringLiteral("90s");
    QTest::newRow("1 min") << qint64(60'000) << QStringLiteral("1m");
    QTest::newRow("5 min") << qint64(300'000) << QStringLiteral("5m");
    QTest::newRow("30 min") << qint64(1'800'000) << QStringLiteral("30m");
    QTest::newRow("90 min") << qint64(5'400'000) << QStringLiteral("90m");
    QTest::newRow("1 h") << qint64(3'600'000) << QStringLiteral("1h");
    QTest::newRow("2 h") << qint64(7'200'000) << QStringLiteral("2h");
    QTest::newRow("1 d") << qint64(86'400'000) << QStringLiteral("1d");
    QTest::newRow("2 d") << qint64(172'800'000) << QStringLiteral("2d");
    QTest::newRow("36 h") << qint64(129'600'000) << QStringLiteral("36h");
    QTest::newRow("1.5 s") << qint64(1500) << QStringLiteral("1500ms");
    QTest::newRow("250 ms") << qint64(250) << QStringLiteral("250ms");
}

void TestRules::formatPeriod()
{
    QFETCH(qint64, ms);
    QFETCH(QString, text);
    QCOMPARE(qs(Floodgate::Core::formatPeriod(ms)), text);
}

void TestRules::effectiveLevels_data()
{
    QTest::addColumn<int>("overrideCase");
    QTest::addColumn<QString>("expected");

    QTest::newRow("no overrides") << 0 << QStringLiteral("100/1m,5000/1h");
    QTest::newRow("replace the hour") << 1 << QStringLiteral("100/1m,1000/1h");
    QTest::newRow("add a day") << 2 << QStringLiteral("100/1m,5000/1h,10000/1d");
    QTest::newRow("add a shorter period, sorted") << 3 << QStringLiteral("50/30s,100/1m,5000/1h");
    QTest::newRow("override {60:100, 3600:1000, 86400:10000}") << 4 << QStringLiteral("100/1m,1000/1h,10000/1d");
}

void TestRules::effectiveLevels()
{
    QFETCH(int, overrideCase);
    QFETCH(QString, expected);

    // The tier's levels given out of order: the result is sorted by period.
    const Tier pro{"Pro", {level(5000, HOUR), level(100, MINUTE)}};
    Customer acme{"acme", "Acme Inc.", "Pro", {}, {}};
    switch (overrideCase) {
    case 1: acme.overrides = {level(1000, HOUR)}; break;
    case 2: acme.overrides = {level(10000, DAY)}; break;
    case 3: acme.overrides = {level(50, 30 * SECOND)}; break;
    case 4: acme.overrides = {level(100, MINUTE), level(1000, HOUR), level(10000, DAY)}; break;
    default: break;
    }
    QCOMPARE(levelsText(Floodgate::Core::effectiveLevels(pro, acme)), expected);
}

void TestRules::equalsIgnoreCase_data()
{
    QTest::addColumn<QByteArray>("a");
    QTest::addColumn<QByteArray>("b");
    QTest::addColumn<bool>("equal");

    QTest::newRow("header name") << QByteArray("X-User-Id") << QByteArray("x-user-id") << true;
    QTest::newRow("method") << QByteArray("POST") << QByteArray("post") << true;
    QTest::newRow("same") << QByteArray("GET") << QByteArray("GET") << true;
    QTest::newRow("empty") << QByteArray("") << QByteArray("") << true;
    QTest::newRow("different letter") << QByteArray("abc") << QByteArray("abd") << false;
    QTest::newRow("prefix") << QByteArray("abc") << QByteArray("abcd") << false;
    QTest::newRow("not letters") << QByteArray("[") << QByteArray("{") << false;
}

void TestRules::equalsIgnoreCase()
{
    QFETCH(QByteArray, a);
    QFETCH(QByteArray, b);
    QFETCH(bool, equal);
    QCOMPARE(Floodgate::Core::equalsIgnoreCase(a.toStdString(), b.toStdString()), equal);
    QCOMPARE(Floodgate::Core::equalsIgnoreCase(b.toStdString(), a.toStdString()), equal);
}

void TestRules::settingTableNamesEachSettingOnce()
{
    // Every row is found by the name messages use and by its database key,
    // and no two rows share either (nor a key in the same part of the document).
    QSet<QString> paths, columns;
    for (const SettingRow& row : settingTable()) {
        const QString path = qs(row.path());
        QVERIFY2(!paths.contains(path), qPrintable(path));
        paths << path;
        QCOMPARE(findSetting(row.path()), &row);
        QCOMPARE(row.column.empty(), row.kind == SettingKind::Ranges);  // ranges have a table of their own
        if (!row.column.empty()) {
            QVERIFY2(!columns.contains(qs(row.column)), qPrintable(path));
            columns << qs(row.column);
            QCOMPARE(findSettingColumn(row.column), &row);
        }
        QVERIFY2(!row.help.empty(), qPrintable(path));
    }
    QVERIFY(!findSetting("settings.ipv6_prefixx"));
    QVERIFY(!findSettingColumn(""));
    QCOMPARE(paths.size(), 18);

    // The defaults are Rules.h's initialisers, read back through each row.
    QCOMPARE(findSetting("settings.ipv6_prefix")->defaultNumber(), std::int64_t(Tuning::defaultIpv6CountingPrefix));
    QCOMPARE(findSetting("escalation.find")->defaultNumber(), std::int64_t(MINUTE));
    QCOMPARE(findSetting("settings.customer_auth")->defaultNumber(), std::int64_t(CustomerAuth::ApiKey));

    // A configuration with every setting changed is still a valid one.
    const EngineConfig changed = everySettingChanged();
    const auto error = Floodgate::Core::validate(changed);
    QVERIFY2(!error, error ? error->c_str() : "");
}

void TestRules::settingRowsCheckTheirOwnRange()
{
    // validate() holds each number to its row: both ends named when the
    // range is what the value means, the floor alone when the top only caps
    // a request; a listed value or name, or a duration > 0.
    for (const SettingRow& row : settingTable()) {
        const QString path = qs(row.path());
        EngineConfig c = defaultConfig();
        auto problem = [&](std::int64_t v) {
            row.access.setNumber(c, v);
            const auto p = row.check(c);
            return p ? qs(*p) : QString();
        };
        if (!row.choices.empty()) {
            for (const SettingChoice& choice : row.choices)
                QCOMPARE(problem(choice.value), QString());
            QCOMPARE(problem(7), path + QStringLiteral(" must be ") + qs(row.choiceList()));
        } else if (row.kind == SettingKind::Integer) {
            QCOMPARE(problem(row.min), QString());
            QCOMPARE(problem(row.max), QString());
            const QString below = row.bounds == SettingBounds::Both ? QStringLiteral(" must be %1-%2").arg(row.min).arg(row.max)
                                                                    : QStringLiteral(" must be > 0");
            QCOMPARE(problem(row.min - 1), path + below);
            QCOMPARE(problem(row.max + 1), row.bounds == SettingBounds::Both ? path + below : QString());
        } else if (row.kind == SettingKind::Duration) {
            QCOMPARE(problem(1), QString());
            QCOMPARE(problem(0), path + QStringLiteral(" must be > 0"));
        }
    }
    QCOMPARE(qs(findSetting("settings.throttle_status")->choiceList()), QStringLiteral("429, 503 or 403"));
    QCOMPARE(qs(findSetting("settings.customer_auth")->choiceList()),
             QStringLiteral("\"api_key\", \"trusted_header\" or \"api_key_or_trusted_header\""));
}

QTEST_APPLESS_MAIN(TestRules)
#include "test_rules.moc"
