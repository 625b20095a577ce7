// SPDX-License-Identifier: GPL-3.0-or-later
// The wire shapes: RFC 3339 times, durations, list entries from the API,
// the rules document, and list files (CSV and JSON) with their per-line
// reports. Everything here is what an operator types or a script sends.
#include <QtTest>

#include "wire/Codec.h"
#include "wire/ListFile.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Wire;
using namespace Floodgate::Core::Test;

namespace {

Json parse(const char* text)
{
    std::string why;
    auto v = Json::parse(text, &why);
    if (!v)
        qFatal("test JSON does not parse: %s", why.c_str());
    return *v;
}

} // namespace

class TestCodec : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void times_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qint64>("ms");
        QTest::addColumn<QString>("formatted");
        QTest::newRow("epoch") << "1970-01-01T00:00:00Z" << qint64(0) << "1970-01-01T00:00:00Z";
        QTest::newRow("T0") << "2026-09-21T14:00:00Z" << qint64(T0) << "2026-09-21T14:00:00Z";
        QTest::newRow("millis") << "2026-09-21T14:00:00.250Z" << qint64(T0 + 250) << "2026-09-21T14:00:00.250Z";
        QTest::newRow("one digit fraction") << "2026-09-21T14:00:00.5Z" << qint64(T0 + 500) << "2026-09-21T14:00:00.500Z";
        QTest::newRow("offset") << "2026-09-21T16:00:00+02:00" << qint64(T0) << "2026-09-21T14:00:00Z";
        QTest::newRow("negative offset") << "2026-09-21T09:30:00-04:30" << qint64(T0) << "2026-09-21T14:00:00Z";
        QTest::newRow("leap day") << "2028-02-29T00:00:00Z" << qint64(1835395200000) << "2028-02-29T00:00:00Z";
        QTest::newRow("lower-case t and z") << "2026-09-21t14:00:00z" << qint64(T0) << "2026-09-21T14:00:00Z";
    }
    void times()
    {
        QFETCH(QString, text);
        QFETCH(qint64, ms);
        QFETCH(QString, formatted);
        std::string why;
        const auto t = Codec::parseTime(text.toStdString(), &why);
        QVERIFY2(t.has_value(), why.c_str());
        QCOMPARE(qint64(*t), ms);
        QCOMPARE(QString::fromStdString(Codec::formatTime(*t)), formatted);
    }

    void badTimes_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("date only") << "2026-09-21";
        QTest::newRow("no zone") << "2026-09-21T14:00:00";
        QTest::newRow("month 13") << "2026-13-01T00:00:00Z";
        QTest::newRow("feb 29 in 2026") << "2026-02-29T00:00:00Z";
        QTest::newRow("hour 24") << "2026-09-21T24:00:00Z";
        QTest::newRow("trailing text") << "2026-09-21T14:00:00Zjunk";
        QTest::newRow("empty fraction") << "2026-09-21T14:00:00.Z";
        QTest::newRow("epoch seconds") << "1789999200";
    }
    void badTimes()
    {
        QFETCH(QString, text);
        std::string why;
        QVERIFY(!Codec::parseTime(text.toStdString(), &why).has_value());
        QCOMPARE(QString::fromStdString(why), QStringLiteral("must be an RFC 3339 time such as 2026-11-29T05:00:00Z"));
    }

    void durations_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<qint64>("ms");
        QTest::addColumn<QString>("error");
        QTest::newRow("seconds") << "604800" << qint64(7 * DAY) << "";
        QTest::newRow("fraction") << "0.5" << qint64(500) << "";
        QTest::newRow("7d") << "\"7d\"" << qint64(7 * DAY) << "";
        QTest::newRow("24h") << "\"24h\"" << qint64(DAY) << "";
        QTest::newRow("90m") << "\"90m\"" << qint64(90 * MINUTE) << "";
        QTest::newRow("30s") << "\"30s\"" << qint64(30 * SECOND) << "";
        QTest::newRow("2w") << "\"2w\"" << qint64(14 * DAY) << "";
        QTest::newRow("bare number string") << "\"60\"" << qint64(MINUTE) << "";
        QTest::newRow("zero") << "0" << qint64(0) << "must be > 0";
        QTest::newRow("negative") << "-1" << qint64(0) << "must be > 0";
        QTest::newRow("unknown unit") << "\"3y\"" << qint64(0) << "has an unknown unit \"y\" (use s, m, h, d or w)";
        QTest::newRow("not a number") << "\"soon\"" << qint64(0) << "must be a number of seconds or a duration such as \"30s\", \"90m\", \"24h\", \"7d\"";
        QTest::newRow("boolean") << "true" << qint64(0) << "must be a number of seconds or a duration such as \"7d\"";
        QTest::newRow("sub-millisecond") << "0.0001" << qint64(0) << "must be at least 1 ms";
        QTest::newRow("a thousand years") << "\"52000w\"" << qint64(0) << "must be at most 100 years";
    }
    void durations()
    {
        QFETCH(QString, json);
        QFETCH(qint64, ms);
        QFETCH(QString, error);
        std::string why;
        const auto d = Codec::parseDuration(parse(json.toUtf8().constData()), &why);
        if (error.isEmpty()) {
            QVERIFY2(d.has_value(), why.c_str());
            QCOMPARE(qint64(*d), ms);
        } else {
            QVERIFY(!d.has_value());
            QCOMPARE(QString::fromStdString(why), error);
        }
    }

    void humanDurations()
    {
        QCOMPARE(QString::fromStdString(Codec::humanDuration(1)), QStringLiteral("1 s"));
        QCOMPARE(QString::fromStdString(Codec::humanDuration(3000)), QStringLiteral("3 s"));
        QCOMPARE(QString::fromStdString(Codec::humanDuration(2001)), QStringLiteral("3 s"));  // rounded up, as Retry-After is
        QCOMPARE(QString::fromStdString(Codec::humanDuration(60'000)), QStringLiteral("1 min"));
        QCOMPARE(QString::fromStdString(Codec::humanDuration(871'000)), QStringLiteral("14 min 31 s"));
        QCOMPARE(QString::fromStdString(Codec::humanDuration(2 * HOUR + 5 * MINUTE)), QStringLiteral("2 h 5 min"));
        QCOMPARE(QString::fromStdString(Codec::humanDuration(7 * DAY - HOUR)), QStringLiteral("6 d 23 h"));
    }

    void entriesFromTheApi()
    {
        std::string why;
        const Millis now = T0;
        const Millis week = 7 * DAY;
        auto in = Codec::entryFromJson(parse("{\"address\":\"203.0.113.7\"}"), now, week, &why);
        QVERIFY(in);
        QCOMPARE(in->expiresAt, now + week);  // no ttl: the default
        QVERIFY(in->range == cidr("203.0.113.7/32"));
        in = Codec::entryFromJson(parse("{\"address\":\"::ffff:203.0.113.7\",\"ttl\":null}"), now, week, &why);
        QVERIFY(in);
        QCOMPARE(in->expiresAt, NeverExpires);
        QVERIFY(in->range == cidr("203.0.113.7/32"));  // IPv4-mapped is IPv4
        in = Codec::entryFromJson(parse("{\"address\":\"2001:db8::/48\",\"expires_at\":\"2026-09-22T14:00:00Z\",\"reason\":\"office\"}"), now, week, &why);
        QVERIFY(in);
        QCOMPARE(in->expiresAt, T0 + DAY);
        QCOMPARE(QString::fromStdString(in->reason), QStringLiteral("office"));
        QVERIFY(!Codec::entryFromJson(parse("{\"address\":\"1.2.3.4\",\"expires_at\":\"2026-09-21T13:59:59Z\"}"), now, week, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("expires_at must be in the future"));
        QVERIFY(!Codec::entryFromJson(parse("{\"address\":\"1.2.3.4\",\"ttl\":60,\"expires_at\":\"2027-01-01T00:00:00Z\"}"), now, week, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("ttl and expires_at: give one, not both"));
        QVERIFY(!Codec::entryFromJson(parse("[\"1.2.3.4\"]"), now, week, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("the body must be a JSON object"));
        QVERIFY(!Codec::entryFromJson(parse("{\"address\":7}"), now, week, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("address must be a string"));

        ListEntry e;
        e.range = cidr("203.0.113.0/24");
        e.reason = "scraper";
        e.createdAt = T0;
        e.createdBy = "console:alice";
        e.expiresAt = T0 + week;
        QCOMPARE(QString::fromStdString(Codec::toJson(e, ListKind::Blocklist, T0 + 1500).dump()),
                 QStringLiteral("{\"address\":\"203.0.113.0/24\",\"list\":\"blocklist\",\"reason\":\"scraper\",\"source\":\"operator\","
                                "\"created_by\":\"console:alice\",\"created_at\":\"2026-09-21T14:00:00Z\","
                                "\"expires_at\":\"2026-09-28T14:00:00Z\",\"expires_in\":604799}"));
    }

    void rulesDocumentRoundTripsAndPatches()
    {
        const EngineConfig defaults = defaultConfig();
        EngineConfig c = defaults;
        std::string why;
        // What GET returns, PUT accepts unchanged.
        QVERIFY2(Codec::rulesFromJson(Codec::rulesToJson(defaults), c, &why), why.c_str());
        QCOMPARE(QString::fromStdString(Codec::rulesToJson(c).dump()), QString::fromStdString(Codec::rulesToJson(defaults).dump()));
        // A section alone changes that section only.
        QVERIFY(Codec::rulesFromJson(parse("{\"escalation\":{\"refusals\":5,\"ban\":\"1h\"},\"excluded_paths\":[\"/health\"]}"), c, &why));
        QCOMPARE(c.escalation.refusals, 5u);
        QCOMPARE(c.escalation.banMs, HOUR);
        QCOMPARE(c.escalation.findMs, defaults.escalation.findMs);
        QCOMPARE(c.bot.excludedPaths, std::vector<std::string>{"/health"});
        QCOMPARE(c.rules.size(), defaults.rules.size());
        // Unknown fields are errors, named by their path; nothing changes.
        const EngineConfig before = c;
        QVERIFY(!Codec::rulesFromJson(parse("{\"settings\":{\"throttle_statsu\":503}}"), c, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("settings.throttle_statsu is not a known field"));
        QVERIFY(!Codec::rulesFromJson(parse("{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3,\"lockout\":3}]}]}"), c, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("rules[0].levels[0].lockout applies to lockout levels only"));
        QVERIFY(!Codec::rulesFromJson(parse("{\"rules\":[{\"name\":\"ip\",\"levels\":[{\"limit\":6,\"period\":3},{\"limit\":9,\"period\":\"3s\"}]}]}"), c, &why));
        QCOMPARE(QString::fromStdString(why), QStringLiteral("rules[0].levels[1].period repeats another level's period"));
        QCOMPARE(Codec::rulesToJson(c).dump(), Codec::rulesToJson(before).dump());
    }

    void rulesDocumentKeepsTheShapeOfItsSettings()
    {
        // Written from the setting table: the same keys in the same order
        // and the same types as the API has always answered.
        const Json j = Codec::rulesToJson(defaultConfig());
        QStringList keys;
        for (const auto& [key, value] : j.asObject())
            keys << QString::fromStdString(key);
        QCOMPARE(keys.join(QLatin1Char(',')), QStringLiteral("rules,ip_levels_disabled,cooldowns,excluded_paths,safe_user_agents,"
                                                             "cookieless_only,escalation,settings"));
        QCOMPARE(QString::fromStdString(j.find("cookieless_only")->dump()), QStringLiteral("false"));
        QCOMPARE(QString::fromStdString(j.find("escalation")->dump()),
                 QStringLiteral("{\"enabled\":true,\"refusals\":100,\"find\":60,\"ban\":900,\"max_ban\":604800,\"factor\":2}"));
        QCOMPARE(QString::fromStdString(j.find("settings")->dump()),
                 QStringLiteral("{\"throttle_status\":429,\"ipv6_prefix\":64,\"ipv4_prefix\":32,\"dry_run\":false,"
                                "\"rate_limit_headers\":true,\"customer_auth\":\"api_key\",\"customer_key_header\":\"X-Api-Key\","
                                "\"customer_header\":\"X-Customer-Id\",\"trusted_proxies\":[],\"max_tracked_keys\":1000000,\"when_cluster_down\":\"local\"}"));

        // Every setting changed goes out and comes back as it was, 1.5 s too.
        const EngineConfig changed = everySettingChanged();
        const std::string sent = Codec::rulesToJson(changed).dump();
        EngineConfig back = defaultConfig();
        std::string why;
        QVERIFY2(Codec::rulesFromJson(parse(sent.c_str()), back, &why), why.c_str());
        QCOMPARE(QString::fromStdString(Codec::rulesToJson(back).dump()), QString::fromStdString(sent));
        QVERIFY(sent != Codec::rulesToJson(defaultConfig()).dump());
        QCOMPARE(back.escalation.findMs, MINUTE + 1500);

        // A value outside its row's range is refused, naming the field.
        struct Bad {
            const char* body;
            const char* why;
        };
        const Bad bad[] = {
            {"{\"settings\":{\"ipv6_prefix\":0}}", "settings.ipv6_prefix must be > 0"},
            {"{\"settings\":{\"ipv4_prefix\":33}}", "settings.ipv4_prefix must be <= 32"},
            {"{\"settings\":{\"throttle_status\":600}}", "settings.throttle_status must be <= 599"},
            {"{\"settings\":{\"customer_auth\":\"cookie\"}}",
             "settings.customer_auth must be \"api_key\", \"trusted_header\" or \"api_key_or_trusted_header\""},
            {"{\"settings\":{\"customer_source\":\"either\"}}",
             "settings.customer_source is gone since 0.6: a customer proves who it is with an API key or through a trusted proxy "
             "(settings.customer_auth, docs/CHANGELOG.md); remove it"},
            {"{\"settings\":{\"customer_header\":7}}", "settings.customer_header must be a string"},
            {"{\"settings\":{\"trusted_proxies\":[\"10.0.0.0/8\",7]}}", "settings.trusted_proxies[1] must be a string"},
            {"{\"settings\":{\"dry_run\":1}}", "settings.dry_run must be true or false"},
            {"{\"escalation\":{\"factor\":101}}", "escalation.factor must be <= 100"},
            {"{\"escalation\":{\"find\":0}}", "escalation.find must be > 0"},
            {"{\"escalation\":{\"bans\":3}}", "escalation.bans is not a known field"},
            {"{\"cookieless_only\":\"yes\"}", "cookieless_only must be true or false"},
        };
        for (const Bad& b : bad) {
            EngineConfig c = changed;
            QVERIFY2(!Codec::rulesFromJson(parse(b.body), c, &why), b.body);
            QCOMPARE(QString::fromStdString(why), QString::fromUtf8(b.why));
            QCOMPARE(Codec::rulesToJson(c).dump(), sent);  // nothing of it was applied
        }
    }

    void csvListFiles()
    {
        const char* text =
            "\xEF\xBB\xBFlist,address,reason,expires_at\r\n"
            "blocklist,203.0.113.7,\"scraper, \"\"aggressive\"\"\",2026-09-28T14:00:00Z\r\n"
            "safelist,2001:db8::/48,\"office\nsecond floor\",\r\n"
            "\r\n"
            "blocklist,203.0.113.7,again,\r\n"
            "blocklist,203.0.113.8,old,2026-09-20T00:00:00Z\r\n"
            "blocklist,10.0.0.0/40,typo,\r\n"
            "whitelist,10.0.0.1,,\r\n"
            "blocklist,10.0.0.2\r\n";
        const ListFile::Parsed p = ListFile::parse(text, ListFile::Format::Csv, T0, 7 * DAY);
        QVERIFY(p.fileError.empty());
        QCOMPARE(p.rows.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(p.rows[0].entry.reason), QStringLiteral("scraper, \"aggressive\""));
        QCOMPARE(p.rows[0].entry.expiresAt, T0 + 7 * DAY);
        QCOMPARE(label(p.rows[0].entry.source), label(ListSource::Import));
        QCOMPARE(QString::fromStdString(p.rows[1].entry.reason), QStringLiteral("office\nsecond floor"));
        QCOMPARE(p.rows[1].entry.expiresAt, NeverExpires);  // an empty expires_at is permanent
        QStringList rejected;
        for (const auto& r : p.rejected)
            rejected << QStringLiteral("%1: %2").arg(r.line).arg(QString::fromStdString(r.why));
        QCOMPARE(rejected, QStringList({
                               QStringLiteral("6: 203.0.113.7/32 is on the blocklist already at line 2"),
                               QStringLiteral("7: 203.0.113.8/32 expired already (2026-09-20T00:00:00Z)"),
                               QStringLiteral("8: address \"10.0.0.0/40\": prefix length /40 is out of range (0-32 for IPv4)"),
                               QStringLiteral("9: list \"whitelist\" must be safelist or blocklist"),
                               QStringLiteral("10: has 2 fields, the header has 4"),
                           }));

        QCOMPARE(QString::fromStdString(ListFile::parse("address,list\n", ListFile::Format::Csv, T0, DAY).fileError), QString());
        QCOMPARE(QString::fromStdString(ListFile::parse("ip,reason\n1.2.3.4,x\n", ListFile::Format::Csv, T0, DAY).fileError),
                 QStringLiteral("line 1: unknown column \"ip\" (the header names: list, address, reason, expires_at or ttl, source, created_at, created_by)"));
        QCOMPARE(QString::fromStdString(ListFile::parse("list,address,reason\nblocklist,\"1.2.3.4,x\n", ListFile::Format::Csv, T0, DAY).fileError),
                 QStringLiteral("line 2: a quoted field is not closed"));
        QCOMPARE(QString::fromStdString(ListFile::parse("", ListFile::Format::Csv, T0, DAY).fileError),
                 QStringLiteral("the file is empty: it needs a header line such as \"list,address,reason,expires_at\""));
        // ttl column: a duration, empty = the default.
        const auto ttl = ListFile::parse("list,address,ttl\nblocklist,1.2.3.4,1h\nblocklist,1.2.3.5,\n", ListFile::Format::Csv, T0, DAY);
        QCOMPARE(ttl.rows[0].entry.expiresAt, T0 + HOUR);
        QCOMPARE(ttl.rows[1].entry.expiresAt, T0 + DAY);
    }

    void exportedFilesImportAsTheyWere_data()
    {
        QTest::addColumn<int>("format");
        QTest::newRow("csv") << int(ListFile::Format::Csv);
        QTest::newRow("json") << int(ListFile::Format::Json);
    }
    void exportedFilesImportAsTheyWere()
    {
        QFETCH(int, format);
        const auto f = ListFile::Format(format);
        std::vector<ListedEntry> out;
        ListEntry a = listEntry("203.0.113.0/24", "scraper, \"the\" bad one", T0 + DAY);
        a.createdAt = T0 - HOUR;
        a.createdBy = "console:alice";
        ListEntry b = listEntry("2001:db8::/32", "=HYPERLINK(\"http://x\")", NeverExpires);
        b.createdAt = T0 - DAY;
        out.push_back({ListKind::Blocklist, a});
        out.push_back({ListKind::Safelist, b});
        const std::string text = ListFile::format(out, f, T0);
        const ListFile::Parsed back = ListFile::parse(text, f, T0, 7 * DAY);
        QVERIFY2(back.ok(), (back.fileError + text).c_str());
        QCOMPARE(back.rows.size(), std::size_t(2));
        QCOMPARE(label(back.rows[0].kind), label(ListKind::Blocklist));
        QVERIFY(back.rows[0].entry.range == a.range);
        QCOMPARE(back.rows[0].entry.reason, a.reason);
        QCOMPARE(back.rows[0].entry.expiresAt, a.expiresAt);
        QCOMPARE(back.rows[0].entry.createdBy, a.createdBy);
        QCOMPARE(label(back.rows[1].kind), label(ListKind::Safelist));
        QCOMPARE(back.rows[1].entry.reason, b.reason);  // a formula-looking reason comes back as it was
        if (f == ListFile::Format::Csv)
            QVERIFY(text.find(",\"'=HYPERLINK(") != std::string::npos);  // and a spreadsheet sees text
        QCOMPARE(back.rows[1].entry.expiresAt, NeverExpires);
        QCOMPARE(ListFile::formatForPath("/tmp/Lists.JSON").value_or(ListFile::Format::Csv), ListFile::Format::Json);
        QCOMPARE(ListFile::formatForPath("lists.txt").value_or(ListFile::Format::Csv), ListFile::Format::Text);
        QVERIFY(!ListFile::formatForPath("lists.netset"));
    }
};

QTEST_APPLESS_MAIN(TestCodec)
#include "test_codec.moc"
