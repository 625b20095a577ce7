// SPDX-License-Identifier: GPL-3.0-or-later
// engine/replay in process: a log replayed through the engine gives the
// decisions the live listener gave for the same requests at the same
// times (both run here, on one manual clock), every format is read, and bad
// input is counted and explained rather than crashing or vanishing.
#include <QTemporaryDir>
#include <QtTest>

#include "core/CustomerKey.h"

#include "HttpTestClient.h"
#include "ListenerStack.h"
#include "ReplayTestSupport.h"
#include "core/Engine.h"
#include "core/Tuning.h"
#include "http/LimiterLog.h"
#include "replay/LogFormat.h"
#include "replay/Replay.h"
#include "replay/Report.h"
#include "wire/Codec.h"

#include <algorithm>
#include <fstream>
#include <map>

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

struct Planned {
    std::string client;
    std::string target;
    std::string agent;
    std::string forwardedFor;
    Core::Millis time = 0;
    std::string headers;  // more of the request's header lines, sent live (a log keeps none of them)
};

struct Seen {
    int status = 0;
    std::string rateLimit;  // the RateLimit header ("" when none)
};

// What the listener's answer to a decision looks like: its status and RateLimit header.
Seen expectedAnswer(const Core::Decision& d)
{
    Seen s;
    s.status = d.action == Core::Action::Throttle ? d.throttleStatus : d.action == Core::Action::Block ? 403 : 200;
    if (d.limit > 0 && d.windowMs > 0)
        s.rateLimit = "\"" + std::string(d.rule.view()) + "\";r=" + std::to_string(d.remaining) + ";t="
                    + std::to_string(d.refused() ? d.retryAfterSeconds() : d.resetSeconds());
    return s;
}

// The customer's API key: what it proves itself with, live.
Core::NewCustomerKey acmeKey()
{
    return Core::customerKeyFrom(Core::keyDigest("replay test key"), 0);
}

Core::EngineConfig configWithCustomer()
{
    Core::EngineConfig c = Core::defaultConfig();
    c.escalation.enabled = false;  // as ListenerStack runs it
    c.customers.push_back(Core::Customer{"acme", "Acme", "Pro", {}, {acmeKey().key}});
    return c;
}

// The requests through the live listener at their times; its answers.
std::vector<Seen> serveLive(const std::vector<Planned>& plan, const Core::EngineConfig& config, Http::ListenerOptions options = {})
{
    Core::ManualClock clock(plan.empty() ? 0 : plan.front().time);
    ListenerStack s(config, options, clock);
    if (!s.started)
        qFatal("listener: %s", s.error.c_str());
    std::vector<Seen> seen;
    for (const Planned& p : plan) {
        clock.set(p.time);
        std::string headers = "User-Agent: " + p.agent + "\r\n";
        if (!p.forwardedFor.empty())
            headers += "X-Forwarded-For: " + p.forwardedFor + "\r\n";
        headers += p.headers;
        const auto r = fetch(s.port(), get(p.target, headers), 3000, p.client.c_str());
        seen.push_back(r ? Seen{r->status, r->header("ratelimit")} : Seen{});
    }
    return seen;
}

struct Replayed {
    Replay::Result result;
    std::vector<Seen> answers;
    std::vector<Core::Millis> times;
    std::vector<std::string> clients;
};

Replayed replayFiles(const std::vector<std::string>& files, const std::vector<Replay::Configuration>& configs,
                     Replay::LogFormat format = Replay::LogFormat::Auto, std::vector<Core::Cidr> proxies = {}, std::string customerParam = {})
{
    Replayed out;
    Replay::Input in;
    in.customerParam = std::move(customerParam);
    in.files = files;
    in.format = format;
    in.trustedProxies = std::move(proxies);
    in.onDecision = [&](const Replay::DecisionEvent& e) {
        if (e.run != 0)
            return;
        out.answers.push_back(expectedAnswer(*e.decision));
        out.times.push_back(e.time);
        out.clients.push_back(e.facts->client.toString());
    };
    out.result = Replay::replay(in, configs);
    return out;
}

Replay::Configuration configuration(Core::EngineConfig c, std::string name = "test")
{
    Replay::Configuration conf;
    conf.name = std::move(name);
    conf.config = std::move(c);
    return conf;
}

const Replay::RefusedClient* refusedClient(const Replay::RunResult& run, const std::string& address)
{
    for (const auto& c : run.refused)
        if (c.address == address)
            return &c;
    return nullptr;
}

} // namespace

class TestReplay : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A 20 req/s flood, a 1 req/s bot, two browser page loads and a tier
    // customer at 25 req/s, for 5 s, interleaved as one server's log
    // writes them: the listener's answers and the replay's decisions match
    // one by one (status and the RateLimit header: rule, remaining, reset).
    void listenerAndReplayAgree()
    {
        const Core::Millis start = logStart();
        const std::string browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
        std::vector<Planned> plan;
        for (int s = 0; s < 5; ++s) {
            std::vector<Planned> second;
            for (int j = 0; j < 25; ++j) {
                if (j < 20)
                    second.push_back({"127.0.0.2", "/search?q=" + std::to_string(s * 20 + j), "python-requests/2.31", {}, 0, {}});
                second.push_back({"127.0.0.5", "/api/items?customer_id=acme&page=" + std::to_string(j), "acme-sync/1.0", {}, 0,
                                  "X-Api-Key: " + acmeKey().secret + "\r\n"});
                if (j == 0)
                    second.push_back({"127.0.0.3", "/feed.xml", "ExampleBot/1.0 (+https://example.org/bot)", {}, 0, {}});
                if ((s == 0 || s == 2) && j < 12)
                    second.push_back({"127.0.0.4", j == 0 ? (s == 0 ? "/" : "/about") : "/static/part" + std::to_string(j) + (j % 2 ? ".js" : ".png"),
                                      browser, {}, 0, {}});
            }
            // One-second timestamps: spread over the second in file order (Replay.h).
            for (std::size_t i = 0; i < second.size(); ++i) {
                second[i].time = start + s * Core::SECOND + Core::Millis(i) * Core::SECOND / Core::Millis(second.size());
                plan.push_back(second[i]);
            }
        }
        const Core::EngineConfig config = configWithCustomer();
        const std::vector<Seen> live = serveLive(plan, config);

        QTemporaryDir dir;
        std::string log;
        for (std::size_t i = 0; i < plan.size(); ++i)
            log += combinedLine(plan[i].client, plan[i].time, plan[i].target, live[i].status, plan[i].agent);
        const std::string path = dir.filePath(QStringLiteral("access.log")).toStdString();
        writeFile(path, log);
        // The log keeps no key: the customer the request proved is in its query (replay --customer-param).
        const Replayed r = replayFiles({path}, {configuration(config)}, Replay::LogFormat::Auto, {}, "customer_id");
        QVERIFY2(r.result.fatal.empty(), r.result.fatal.c_str());
        QCOMPARE(r.answers.size(), plan.size());
        for (std::size_t i = 0; i < plan.size(); ++i) {
            const QByteArray ctx = QByteArray::number(qulonglong(i)) + " " + QByteArray::fromStdString(plan[i].client + " " + plan[i].target);
            QVERIFY2(r.times[i] == plan[i].time, ctx.constData());
            QVERIFY2(r.answers[i].status == live[i].status,
                     (ctx + ": replay " + QByteArray::number(r.answers[i].status) + ", live " + QByteArray::number(live[i].status)).constData());
            QVERIFY2(r.answers[i].rateLimit == live[i].rateLimit,
                     (ctx + ": replay " + QByteArray::fromStdString(r.answers[i].rateLimit) + ", live "
                      + QByteArray::fromStdString(live[i].rateLimit)).constData());
        }
        // The known answers: the flood and the customer over its tier are
        // refused, the bot and the browser never.
        const Replay::RunResult& run = r.result.runs.at(0);
        QVERIFY(refusedClient(run, "127.0.0.2") && refusedClient(run, "127.0.0.2")->refusals > 50);
        QCOMPARE(refusedClient(run, "127.0.0.2")->requests, std::uint64_t(100));
        QCOMPARE(refusedClient(run, "127.0.0.2")->first.rule, std::string("ip-3s"));
        QVERIFY(refusedClient(run, "127.0.0.5"));
        QCOMPARE(refusedClient(run, "127.0.0.5")->refusals, std::uint64_t(25));  // Pro: 100 a minute, 125 sent
        QVERIFY(!refusedClient(run, "127.0.0.3"));
        QVERIFY(!refusedClient(run, "127.0.0.4"));
        QCOMPARE(r.result.requests, std::uint64_t(plan.size()));
        QCOMPARE(r.result.badLines, std::uint64_t(0));
    }

    // Behind a trusted proxy: the client comes from X-Forwarded-For the same
    // way (http/RequestHead.h is shared), in an nginx JSON log with
    // millisecond times; an untrusted peer's X-Forwarded-For is ignored.
    void proxiedClientsAgree()
    {
        const Core::Millis start = logStart();
        std::vector<Planned> plan;
        for (int i = 0; i < 90; ++i) {
            const Core::Millis t = start + i * 37;
            plan.push_back({"127.0.0.9", "/page/" + std::to_string(i), "curl/8.5", "203.0.113.1", t, {}});
            if (i % 30 == 0)
                plan.push_back({"127.0.0.9", "/slow", "curl/8.5", "198.51.100.2, 203.0.113.2", t + 5, {}});
            if (i % 3 == 0)
                plan.push_back({"127.0.0.6", "/direct", "curl/8.5", "192.0.2.99", t + 7, {}});  // not a trusted proxy
        }
        Http::ListenerOptions o;
        const Core::Cidr proxy = *Core::Cidr::parse("127.0.0.9/32");
        o.trustedProxies = Http::TrustedProxies({proxy});
        const Core::EngineConfig config = configWithCustomer();
        const std::vector<Seen> live = serveLive(plan, config, o);

        QTemporaryDir dir;
        std::string log;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            char msec[32];
            std::snprintf(msec, sizeof msec, "%lld.%03lld", (long long)(plan[i].time / 1000), (long long)(plan[i].time % 1000));
            log += "{\"time_local\":\"" + clfTime(plan[i].time) + "\",\"msec\":\"" + msec + "\",\"remote_addr\":\"" + plan[i].client
                 + "\",\"request\":\"GET " + plan[i].target + " HTTP/1.1\",\"status\":\"" + std::to_string(live[i].status)
                 + "\",\"http_user_agent\":\"" + plan[i].agent + "\",\"http_x_forwarded_for\":\"" + plan[i].forwardedFor + "\"}\n";
        }
        const std::string path = dir.filePath(QStringLiteral("access.json")).toStdString();
        writeFile(path, log);
        const Replayed r = replayFiles({path}, {configuration(config)}, Replay::LogFormat::Auto, {proxy});
        QCOMPARE(r.result.files.at(0).format, Replay::LogFormat::NginxJson);
        QCOMPARE(r.answers.size(), plan.size());
        for (std::size_t i = 0; i < plan.size(); ++i) {
            QCOMPARE(r.times[i], plan[i].time);
            QCOMPARE(r.answers[i].status, live[i].status);
            QCOMPARE(r.answers[i].rateLimit, live[i].rateLimit);
        }
        const Replay::RunResult& run = r.result.runs.at(0);
        QVERIFY(refusedClient(run, "203.0.113.1"));
        QVERIFY(!refusedClient(run, "203.0.113.2"));
        QVERIFY(!refusedClient(run, "192.0.2.99"));
        QCOMPARE(std::count(r.clients.begin(), r.clients.end(), "203.0.113.2"), 3);
        QCOMPARE(std::count(r.clients.begin(), r.clients.end(), "127.0.0.6"), 30);
    }

    void everyFormatParses()
    {
        using namespace Replay;
        LogRequest r;
        ParseScratch scratch;
        std::string why;
        const std::string combined = "2001:db8::7 - frank [10/Oct/2026:13:55:36 -0700] \"GET /a%20b?x=1 HTTP/1.1\" 206 2326 "
                                     "\"https://example.org/\" \"Mozilla/5.0 \\\"quoted\\\"\" \"203.0.113.9\"";
        QCOMPARE(parseLine(combined, LogFormat::Combined, r, scratch, &why), LineKind::Request);
        QCOMPARE(r.peer.toString(), std::string("2001:db8::7"));
        QCOMPARE(r.time, *Wire::Codec::parseTime("2026-10-10T20:55:36Z", nullptr));
        QVERIFY(r.wholeSecond);
        QCOMPARE(std::string(r.method), std::string("GET"));
        QCOMPARE(std::string(r.target), std::string("/a%20b?x=1"));
        QCOMPARE(r.status, 206);
        QCOMPARE(std::string(r.referer), std::string("https://example.org/"));
        QCOMPARE(std::string(r.userAgent), std::string("Mozilla/5.0 \\\"quoted\\\""));
        QCOMPARE(std::string(r.forwardedFor), std::string("203.0.113.9"));

        const std::string common = "192.0.2.1 - - [22/Nov/2026:05:00:00 +0000] \"POST /comments HTTP/1.0\" 201 -";
        QCOMPARE(parseLine(common, LogFormat::Common, r, scratch, &why), LineKind::Request);
        QCOMPARE(std::string(r.method), std::string("POST"));
        QCOMPARE(r.userAgent.empty(), true);
        QCOMPARE(parseLine(common, LogFormat::Combined, r, scratch, &why), LineKind::Bad);

        const std::string iso = "{\"remote_addr\":\"192.0.2.2\",\"time_iso8601\":\"2026-11-22T06:00:00+01:00\",\"request\":\"GET /x HTTP/2.0\","
                                "\"status\":\"404\",\"http_user_agent\":\"a\\\"b\",\"http_cookie\":\"a=1; b=2\",\"http_x_forwarded_for\":\"-\"}";
        QCOMPARE(parseLine(iso, LogFormat::NginxJson, r, scratch, &why), LineKind::Request);
        QCOMPARE(r.time, logStart());
        QVERIFY(r.wholeSecond);
        QCOMPARE(r.status, 404);
        QCOMPARE(std::string(r.userAgent), std::string("a\"b"));
        QCOMPARE(std::string(r.cookie), std::string("a=1; b=2"));
        QVERIFY(r.forwardedFor.empty());

        const std::string msec = "{\"remote_addr\":\"192.0.2.3\",\"msec\":\"1795323600.250\",\"request_method\":\"HEAD\",\"request_uri\":\"/y\"}";
        QCOMPARE(parseLine(msec, LogFormat::NginxJson, r, scratch, &why), LineKind::Request);
        QCOMPARE(r.time, Core::Millis(1795323600250));
        QVERIFY(!r.wholeSecond);
        QCOMPARE(std::string(r.method), std::string("HEAD"));

        // limiter.log as the listener writes it (the real writer).
        Core::Decision d;
        d.action = Core::Action::Throttle;
        d.rule.assign("ip-3s");
        Core::RequestFacts f;
        f.client = *Core::IpAddress::parse("203.0.113.50");
        f.peer = f.client;
        f.method = "GET";
        f.path = "/search";
        f.query = "q=1";
        f.userAgent = "=cmd|evil";  // a field the CSV writer defuses
        f.cookieCount = 2;
        Http::LogRecord record;
        Http::fillLogRecord(record, d, f, "acme", "", logStart() + 123);
        std::string csv = Http::formatLogLine(record);
        while (!csv.empty() && (csv.back() == '\n' || csv.back() == '\r'))
            csv.pop_back();
        QCOMPARE(parseLine(Http::LimiterLogHeader, LogFormat::FloodgateCsv, r, scratch, &why), LineKind::Header);
        QVERIFY2(parseLine(csv, LogFormat::FloodgateCsv, r, scratch, &why) == LineKind::Request, why.c_str());
        QCOMPARE(r.time, logStart() + 123);
        QCOMPARE(r.peer.toString(), std::string("203.0.113.50"));
        QCOMPARE(std::string(r.target), std::string("/search?q=1"));
        QCOMPARE(std::string(r.userAgent), std::string("=cmd|evil"));
        QCOMPARE(std::string(r.customer), std::string("acme"));
        QCOMPARE(r.cookieCount, 2);
        QVERIFY(r.clientResolved);

        // Auto-detection picks each.
        for (const auto& [line, format] : std::vector<std::pair<std::string, LogFormat>>{
                 {combined, LogFormat::Combined}, {common, LogFormat::Common}, {iso, LogFormat::NginxJson}, {csv, LogFormat::FloodgateCsv}}) {
            const std::string_view lines[] = {line};
            QCOMPARE(detectFormat(lines), std::optional<LogFormat>(format));
        }
        const std::string_view nothing[] = {"hello", "\x01\x02"};
        QVERIFY(!detectFormat(nothing));
    }

    // A day the month does not have is refused with that reason (it used to
    // be decided days later: 31 February as 3 March); leap years are known.
    void impossibleDatesAreRefusedWithTheReason_data()
    {
        QTest::addColumn<QString>("date");
        QTest::addColumn<QString>("outcome");  // the reason refused, or the day read
        QTest::newRow("31 February") << QStringLiteral("31/Feb/2026") << QStringLiteral("31/Feb/2026 is no date: February 2026 has 28 days");
        QTest::newRow("29 February, no leap year") << QStringLiteral("29/Feb/2026") << QStringLiteral("29/Feb/2026 is no date: February 2026 has 28 days");
        QTest::newRow("29 February 2100") << QStringLiteral("29/Feb/2100") << QStringLiteral("29/Feb/2100 is no date: February 2100 has 28 days");
        QTest::newRow("31 April") << QStringLiteral("31/Apr/2026") << QStringLiteral("31/Apr/2026 is no date: April 2026 has 30 days");
        QTest::newRow("29 February 2028") << QStringLiteral("29/Feb/2028") << QStringLiteral("2028-02-29");
        QTest::newRow("29 February 2000") << QStringLiteral("29/Feb/2000") << QStringLiteral("2000-02-29");
        QTest::newRow("31 December") << QStringLiteral("31/Dec/2026") << QStringLiteral("2026-12-31");
    }
    void impossibleDatesAreRefusedWithTheReason()
    {
        QFETCH(QString, date);
        QFETCH(QString, outcome);
        using namespace Replay;
        const std::string stamp = date.toStdString() + ":05:00:00 +0000";
        const std::string clf = "192.0.2.1 - - [" + stamp + "] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"";
        const std::string json = "{\"time_local\":\"" + stamp + "\",\"remote_addr\":\"192.0.2.1\",\"request\":\"GET / HTTP/1.1\",\"status\":\"200\"}";
        for (const auto& [line, format] : {std::pair{clf, LogFormat::Combined}, std::pair{json, LogFormat::NginxJson}}) {
            LogRequest r;
            ParseScratch scratch;
            std::string why;
            const LineKind kind = parseLine(line, format, r, scratch, &why);
            if (outcome.contains(QLatin1Char('/'))) {
                QCOMPARE(kind, LineKind::Bad);
                QVERIFY2(why.find(outcome.toStdString()) != std::string::npos, why.c_str());
            } else {
                QVERIFY2(kind == LineKind::Request, why.c_str());
                QCOMPARE(Wire::Codec::formatTime(r.time).substr(0, 10), outcome.toStdString());
            }
        }
    }

    // An nginx JSON line past the JSON reader's limits says which limit,
    // not that it is no JSON object.
    void jsonLinesOverALimitNameIt()
    {
        using namespace Replay;
        std::string line = "{\"time_iso8601\":\"2026-11-22T05:00:00+00:00\",\"remote_addr\":\"192.0.2.1\",\"request\":\"GET / HTTP/1.1\"";
        for (int i = 0; i < 2000; ++i)
            line += ",\"k" + std::to_string(i) + "\":\"-\"";
        line += "}";
        LogRequest r;
        ParseScratch scratch;
        std::string why;
        QCOMPARE(parseLine(line, LogFormat::NginxJson, r, scratch, &why), LineKind::Bad);
        QVERIFY2(why.find("more than " + std::to_string(Core::Tuning::jsonMaxKeysPerObject) + " keys") != std::string::npos, why.c_str());
        QCOMPARE(parseLine("{\"remote_addr\": 1,}", LogFormat::NginxJson, r, scratch, &why), LineKind::Bad);
        QVERIFY2(why.starts_with("not a JSON object"), why.c_str());
    }

    void badLinesAreCountedWithLineNumbersAndWhy()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string log = combinedLine("192.0.2.1", t, "/") + "garbage here\n" + combinedLine("192.0.2.1", t, "/")
                        + "192.0.2.1 - - [22/Nov/2026:05:00:00 +0000] \"\\x16\\x03\\x01\" 400 150 \"-\" \"-\"\n"
                        + "host.example - - [22/Nov/2026:05:00:00 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"\n"
                        + "192.0.2.1 - - [22/Nov/2026:05:00:00 +0000] \"GET /%zz HTTP/1.1\" 400 1 \"-\" \"-\"\n"
                        + "\n" + combinedLine("192.0.2.1", t, "/");
        const std::string path = dir.filePath(QStringLiteral("a.log")).toStdString();
        writeFile(path, log);
        const Replayed r = replayFiles({path}, {configuration(Core::defaultConfig())});
        QCOMPARE(r.result.files.at(0).format, Replay::LogFormat::Combined);
        QCOMPARE(r.result.requests, std::uint64_t(3));
        QCOMPARE(r.result.badLines, std::uint64_t(4));
        QCOMPARE(r.result.firstBad.size(), std::size_t(4));
        QCOMPARE(r.result.firstBad[0].where.line, std::uint64_t(2));
        QCOMPARE(r.result.firstBad[1].where.line, std::uint64_t(4));
        QVERIFY(r.result.firstBad[1].why.find("METHOD TARGET") != std::string::npos);
        QCOMPARE(r.result.firstBad[2].where.line, std::uint64_t(5));
        QVERIFY(r.result.firstBad[2].why.find("not an IP address") != std::string::npos);
        QCOMPARE(r.result.firstBad[3].where.line, std::uint64_t(6));
        QVERIFY(r.result.firstBad[3].why.find("malformed") != std::string::npos);
        QCOMPARE(r.result.lines, std::uint64_t(8));
        const std::string text = Replay::textReport(r.result);
        QVERIFY2(text.find(path + ":2: ") != std::string::npos, text.c_str());
    }

    // n lines of one second at s + i*1000/n, in file order; exact times kept.
    // limiter.log as its writer sums up a flood: ten lines of their own and
    // one summary line standing for the other 40 refusals of the client's
    // second. The replay decides 50 requests for it (the summary's first
    // request 40 times), 3 for a calm client; a summary line whose attempts
    // is no count, or more than one second can hold, is a bad line.
    void limiterLogSummaryLinesAreReplayedAsTheirRefusals()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        {
            Http::LimiterLog log(path, 1);
            std::string why;
            QVERIFY2(log.start(&why), why.c_str());
            Core::Decision d;
            d.action = Core::Action::Throttle;
            d.rule.assign("ip-3s");
            d.count = 7;
            Core::RequestFacts f;
            f.method = "GET";
            f.path = "/flood";
            for (int i = 0; i < 53; ++i) {
                f.client = *Core::IpAddress::parse(i < 50 ? "203.0.113.50" : "203.0.113.51");
                f.peer = f.client;
                log.push(0, d, f, {}, {}, logStart() + i);
            }
            log.stop();
            QCOMPARE(log.summarised(), std::uint64_t(40));
        }
        const Replayed r = replayFiles({path}, {configuration(Core::defaultConfig())});
        QCOMPARE(r.result.files.at(0).format, Replay::LogFormat::FloodgateCsv);
        QCOMPARE(r.result.lines, std::uint64_t(1 + 10 + 1 + 3));
        QCOMPARE(r.result.badLines, std::uint64_t(0));
        QCOMPARE(r.result.files.at(0).requests, std::uint64_t(53));
        QCOMPARE(r.result.requests, std::uint64_t(53));
        QCOMPARE(r.result.runs.at(0).requests(), std::uint64_t(53));
        const Replay::RefusedClient* flood = refusedClient(r.result.runs.at(0), "203.0.113.50");
        QVERIFY(flood);
        QCOMPARE(flood->requests, std::uint64_t(50));
        QCOMPARE(flood->refusals, std::uint64_t(50 - 6));  // ip-3s lets 6 through

        using namespace Replay;
        LogRequest one;
        ParseScratch scratch;
        std::string why;
        const std::string line = "2026-11-22T05:00:00.999Z,throttle_summary,ip-3s,203.0.113.50,";
        const std::string rest = ",GET,/flood,,,2026-11-22T05:00:00.000Z,0,";
        QCOMPARE(parseLine(line + "40" + rest, LogFormat::FloodgateCsv, one, scratch, &why), LineKind::Request);
        QCOMPARE(one.repeat, std::uint64_t(40));
        QCOMPARE(parseLine("2026-11-22T05:00:00.999Z,throttle,ip-3s,203.0.113.50,40" + rest, LogFormat::FloodgateCsv, one, scratch, &why),
                 LineKind::Request);
        QCOMPARE(one.repeat, std::uint64_t(1));  // on a line of its own, attempts is the window's count
        for (const char* bad : {"0", "-3", "x", "10000001"}) {
            QCOMPARE(parseLine(line + bad + rest, LogFormat::FloodgateCsv, one, scratch, &why), LineKind::Bad);
            QVERIFY2(why.find("summary line's attempts") != std::string::npos, why.c_str());
        }
    }

    void secondsAreSpreadInFileOrder()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string log;
        for (int i = 0; i < 4; ++i)
            log += combinedLine("192.0.2." + std::to_string(i + 1), t + 999, "/" + std::to_string(i));
        log += combinedLine("192.0.2.9", t + 1000, "/next");
        const std::string path = dir.filePath(QStringLiteral("a.log")).toStdString();
        writeFile(path, log);
        const Replayed r = replayFiles({path}, {configuration(Core::defaultConfig())});
        QCOMPARE(r.times, (std::vector<Core::Millis>{t, t + 250, t + 500, t + 750, t + 1000}));
        QCOMPARE(r.clients, (std::vector<std::string>{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.9"}));
    }

    // More lines in one second than the reorder window holds (ReorderMaxLines):
    // all in order, so none is out of order; the second is decided in parts
    // (the first part over its first half, the rest over the other half),
    // in file order, and nothing moves into the next second.
    void aBusySecondIsNotOutOfOrder()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        const std::size_t n = Replay::ReorderMaxLines + 50'000;
        const std::string path = dir.filePath(QStringLiteral("busy.log")).toStdString();
        {
            std::ofstream out(path, std::ios::binary);
            const std::string head = " - - [" + clfTime(t) + "] \"GET /";
            for (std::size_t i = 0; i < n; ++i)
                out << "198.51.100." << (i % 200 + 1) << head << i << " HTTP/1.1\" 200 512 \"-\" \"-\"\n";
            out << combinedLine("192.0.2.9", t + 1000, "/next");
        }
        QElapsedTimer clock;
        clock.start();
        const Replayed r = replayFiles({path}, {configuration(Core::defaultConfig())});
        QVERIFY2(clock.elapsed() < 60'000, qPrintable(QString::number(clock.elapsed())));
        QCOMPARE(r.result.badLines, std::uint64_t(0));
        QCOMPARE(r.result.requests, std::uint64_t(n + 1));
        QCOMPARE(r.result.late, std::uint64_t(0));
        QVERIFY(Replay::textReport(r.result).find("out of order") == std::string::npos);
        QCOMPARE(r.times.size(), n + 1);
        QVERIFY(std::is_sorted(r.times.begin(), r.times.end()));
        QCOMPARE(r.times.front(), t);
        QCOMPARE(r.times[Replay::ReorderMaxLines + 1], t + 500);  // the second part starts halfway
        QVERIFY2(r.times[n - 1] >= t + 990 && r.times[n - 1] < t + 1000, qPrintable(QString::number(r.times[n - 1] - t)));
        QCOMPARE(r.times.back(), t + 1000);
        QCOMPARE(r.clients.back(), std::string("192.0.2.9"));
    }

    // nginx writes a request when it ends: a line a few seconds late is put
    // in its place; one far behind (rotated files given newest first) is
    // decided at the time reached and counted.
    void linesOutOfOrder()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string log = combinedLine("192.0.2.1", t + 5000, "/a") + combinedLine("192.0.2.2", t + 2000, "/slow-download")
                        + combinedLine("192.0.2.1", t + 30000, "/b") + combinedLine("192.0.2.3", t - 3600 * 1000, "/an-hour-ago")
                        + combinedLine("192.0.2.1", t + 31000, "/c");
        const std::string path = dir.filePath(QStringLiteral("a.log")).toStdString();
        writeFile(path, log);
        const Replayed r = replayFiles({path}, {configuration(Core::defaultConfig())});
        QCOMPARE(r.result.requests, std::uint64_t(5));
        // The hour-old line comes when the window has decided up to 5 s.
        QCOMPARE(r.clients, (std::vector<std::string>{"192.0.2.2", "192.0.2.1", "192.0.2.3", "192.0.2.1", "192.0.2.1"}));
        QCOMPARE(r.times, (std::vector<Core::Millis>{t + 2000, t + 5000, t + 5000, t + 30000, t + 31000}));
        QCOMPARE(r.result.late, std::uint64_t(1));
        QCOMPARE(r.result.firstLate.at(0).line, std::uint64_t(4));
        QCOMPARE(r.result.lateBy, Core::Millis(3600 * 1000 + 5000));
        QVERIFY(Replay::textReport(r.result).find("Lines out of order: 1") != std::string::npos);
    }

    // Rotated logs in a row: a gzip file (recognised by its bytes, whatever
    // its name), then the plain current one; a truncated gzip stops with
    // its reason after the lines that were whole.
    void gzipAndRotatedFiles()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string older, newer;
        for (int i = 0; i < 1000; ++i)
            older += combinedLine("192.0.2.1", t + i * 1000, "/old/" + std::to_string(i));
        for (int i = 0; i < 10; ++i)
            newer += combinedLine("192.0.2.1", t + (1000 + i) * 1000, "/new");
        const std::string gz = dir.filePath(QStringLiteral("access.log.1.gz")).toStdString();
        const std::string noSuffix = dir.filePath(QStringLiteral("access.log.2")).toStdString();
        const std::string plain = dir.filePath(QStringLiteral("access.log")).toStdString();
        QVERIFY(writeGzip(gz, older));
        QVERIFY(writeGzip(noSuffix, newer));
        writeFile(plain, combinedLine("192.0.2.1", t + 2000 * 1000, "/now"));
        Replayed r = replayFiles({gz, noSuffix, plain}, {configuration(Core::defaultConfig())});
        QCOMPARE(r.result.requests, std::uint64_t(1011));
        QVERIFY(r.result.files.at(0).gzip);
        QVERIFY(r.result.files.at(1).gzip);
        QVERIFY(!r.result.files.at(2).gzip);
        QCOMPARE(r.result.files.at(0).requests, std::uint64_t(1000));
        QVERIFY(r.result.files.at(0).error.empty());

        // Cut the gzip in the middle.
        QFile f(QString::fromStdString(gz));
        QVERIFY(f.open(QIODevice::ReadWrite));
        const qint64 size = f.size();
        QVERIFY(f.resize(size / 2));
        f.close();
        r = replayFiles({gz}, {configuration(Core::defaultConfig())});
        const Replay::FileSummary& file = r.result.files.at(0);
        QVERIFY2(file.error.find("ends early") != std::string::npos, file.error.c_str());
        QVERIFY(file.requests > 0 && file.requests < 1000);
        QCOMPARE(r.result.badLines, std::uint64_t(0));  // never half a line
    }

    // Two configurations in one pass: the edited rules next to the rules
    // in force, and the clients whose outcome differs.
    void twoConfigurationsCompared()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string log;
        for (int i = 0; i < 30; ++i) {
            if (i % 2 == 0)
                log += combinedLine("192.0.2.1", t + i * 1000, "/every-2s");
            log += combinedLine("192.0.2.2", t + i * 1000, "/every-second");
        }
        const std::string path = dir.filePath(QStringLiteral("a.log")).toStdString();
        writeFile(path, log);
        Core::EngineConfig strict = Core::defaultConfig();
        strict.rules.at(0).levels.at(0).limit = 2;  // 2 per 3 s instead of 6
        const Replayed r = replayFiles({path}, {configuration(Core::defaultConfig(), "in force"), configuration(strict, "edited")});
        QCOMPARE(r.result.runs.size(), std::size_t(2));
        QCOMPARE(r.result.runs[0].refusals(), std::uint64_t(0));
        QVERIFY(r.result.runs[1].refusals() > 0);
        const auto diff = Replay::compare(r.result.runs[0], r.result.runs[1]);
        QCOMPARE(diff.size(), std::size_t(1));
        QVERIFY(!diff[0].before);
        QCOMPARE(diff[0].after->address, std::string("192.0.2.2"));
        QCOMPARE(diff[0].after->first.rule, std::string("ip-3s"));
        QCOMPARE(diff[0].after->first.limit, std::uint32_t(2));
    }

    // A ban the replay's escalation makes is counted apart from the
    // operator's blocklist entries: "automatic ban" and "blocklist".
    void automaticBansAreCountedApartFromTheBlocklist()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string log;
        for (int i = 0; i < 300; ++i) {  // 100 a second for 3 s: 100 refusals within a minute, then a ban
            log += combinedLine("192.0.2.7", t + i * 10, "/flood");
            if (i % 100 == 0)
                log += combinedLine("198.51.100.9", t + i * 10, "/listed");
        }
        const std::string path = dir.filePath(QStringLiteral("a.log")).toStdString();
        writeFile(path, log);
        Replay::Configuration conf = configuration(Core::defaultConfig());
        Core::ListEntry listed;
        listed.range = *Core::Cidr::parse("198.51.100.9");
        listed.reason = "operator";
        conf.blocklist.push_back(listed);
        const Replayed r = replayFiles({path}, {conf});
        const auto& byRule = r.result.runs.at(0).refusalsByRule;
        QCOMPARE(byRule.at("blocklist"), std::uint64_t(3));
        QVERIFY(byRule.count("automatic ban") == 1 && byRule.at("automatic ban") > 0);
        QCOMPARE(byRule.at("automatic ban") + byRule.at("ip-3s"), std::uint64_t(300 - 6));
    }

    // The console's worker: progress as the lines go, and a cancel that stops.
    void progressAndCancel()
    {
        QTemporaryDir dir;
        const Core::Millis t = logStart();
        std::string log;
        for (int i = 0; i < 300'000; ++i)
            log += combinedLine("192.0.2." + std::to_string(i % 200 + 1), t + i * 10, "/");
        const std::string path = dir.filePath(QStringLiteral("a.log")).toStdString();
        writeFile(path, log);
        Replay::Input in;
        in.files = {path};
        std::vector<Replay::Progress> seen;
        in.progress = [&](const Replay::Progress& p) { seen.push_back(p); };
        in.cancelled = [&] { return seen.size() >= 2; };
        const Replay::Result r = Replay::replay(in, {configuration(Core::defaultConfig())});
        QVERIFY(r.cancelled);
        QVERIFY(r.lines < 300'000);
        QVERIFY(seen.size() >= 2);
        QVERIFY(seen[1].bytesDone > seen[0].bytesDone || seen[1].lines > seen[0].lines);
        QCOMPARE(seen[0].bytesTotal, std::uint64_t(log.size()));
        QVERIFY(Replay::textReport(r).find("Cancelled") != std::string::npos);
    }

    void knownCrawlers()
    {
        QCOMPARE(Replay::knownCrawler("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"), std::string_view("Googlebot"));
        QCOMPARE(Replay::knownCrawler("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"), std::string_view("bingbot"));
        QCOMPARE(Replay::knownCrawler("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"), std::string_view());
    }
};

QTEST_GUILESS_MAIN(TestReplay)
#include "test_replay.moc"
