// SPDX-License-Identifier: GPL-3.0-or-later
// The SQLite store on real files: first run with the defaults, writes that
// are on disk before they are reported and in the engine before the next
// request, TTL and purge, automatic bans that survive a restart with their
// remaining time, changes from another connection, and files that must be
// refused untouched (corrupt, newer, foreign, locked).
#include <QtTest>

#include "wire/Codec.h"
#include "core/Engine.h"
#include "storage/Schema.h"
#include "storage/Store.h"
#include "TestSupport.h"

#include <sqlite3.h>

#include <QFile>
#include <QTemporaryDir>

#include <mutex>
#include <vector>

using namespace Floodgate;
using namespace Floodgate::Core;
using namespace Floodgate::Wire;
using namespace Floodgate::Core::Test;
using Storage::OpenError;
using Storage::Outcome;
using Storage::Result;
using Storage::Store;

namespace {

QByteArray label(Result r)
{
    return Storage::toString(r);
}

Storage::StoreOptions options(const QString& path, int busyMs = 2000)
{
    Storage::StoreOptions o;
    o.path = path.toStdString();
    o.busyTimeoutMs = busyMs;
    o.pollIntervalMs = 20;
    o.purgeIntervalMs = 50;
    return o;
}

QByteArray fileBytes(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll();
}

// Runs SQL on the file with a connection of its own (another process would).
void rawExec(const QString& path, const char* sql)
{
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(path.toUtf8().constData(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 2000);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
    const QByteArray message = error ? QByteArray(error) : QByteArray();
    sqlite3_free(error);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, message.constData());
}

// PRAGMA user_version of the file, read with a connection of its own.
int userVersion(const QString& path)
{
    sqlite3* db = nullptr;
    sqlite3_open(path.toUtf8().constData(), &db);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
    sqlite3_step(st);
    const int version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return version;
}

const Storage::Actor ALICE{"console:alice"};

} // namespace

class TestStore : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    ManualClock m_clock{T0};
    int m_n = 0;
    QString freshPath() { return m_dir.filePath(QStringLiteral("db%1/floodgate.db").arg(++m_n)); }

    std::unique_ptr<Store> openOk(const QString& path)
    {
        Storage::OpenFailure failure;
        auto s = Store::open(options(path), m_clock, &failure);
        if (!s)
            qWarning("open failed: %s", failure.message.c_str());
        return s;
    }

private Q_SLOTS:
    void init() { m_clock.set(T0); }

    void firstRunCreatesTheDefaults()
    {
        const QString path = freshPath();  // its folder does not exist yet either
        std::string token;
        {
            auto store = openOk(path);
            QVERIFY(store);
            QVERIFY(store->created());
            token = store->adminToken();
            QCOMPARE(token.size(), std::size_t(64));
            const auto loaded = store->load();
            QCOMPARE(QString::fromStdString(Codec::rulesToJson(loaded.config).dump()),
                     QString::fromStdString(Codec::rulesToJson(defaultConfig()).dump()));
            QCOMPARE(loaded.config.tiers.size(), std::size_t(3));
            QCOMPARE(QString::fromStdString(Codec::toJson(loaded.config.tiers[1]).dump()),
                     QStringLiteral("{\"name\":\"Pro\",\"levels\":[{\"limit\":100,\"period\":60},{\"limit\":5000,\"period\":3600}]}"));
            QVERIFY(loaded.blocklist.empty() && loaded.safelist.empty() && loaded.automatic.empty());
        }
        // Opening it again finds it: nothing is recreated, the token stays.
        auto again = openOk(path);
        QVERIFY(again);
        QVERIFY(!again->created());
        QCOMPARE(again->adminToken(), token);
        sqlite3* db = nullptr;
        sqlite3_open(path.toUtf8().constData(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
        sqlite3_step(st);
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))), QByteArray("wal"));
        sqlite3_finalize(st);
        sqlite3_close(db);
    }

    void addedEntryIsOnDiskAndInTheEngineBeforeTheAnswer()
    {
        const QString path = freshPath();
        auto store = openOk(path);
        QVERIFY(store);
        Engine engine(store->load().config);
        store->start(&engine);
        QCOMPARE(label(decide(engine, Request().from("203.0.113.7"), T0).action), label(Action::Allow));

        const Outcome o = store->wait([&](auto done) {
            store->addEntry(ListKind::Blocklist, listEntry("203.0.113.7", "scraper", T0 + 7 * DAY), ALICE, done);
        });
        QCOMPARE(label(o.result), label(Result::Created));
        QCOMPARE(QString::fromStdString(o.value.find("address")->asString()), QStringLiteral("203.0.113.7/32"));
        QCOMPARE(QString::fromStdString(o.value.find("expires_at")->asString()), QString::fromStdString(Codec::formatTime(T0 + 7 * DAY)));
        // The very next request is refused.
        QCOMPARE(label(decide(engine, Request().from("203.0.113.7"), T0 + 1).action), label(Action::Block));
        // And it is in the file, read by a connection of its own.
        sqlite3* db = nullptr;
        sqlite3_open(path.toUtf8().constData(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "SELECT reason, source, created_by, expires_at, prefix, length(address) FROM list_entries", -1, &st, nullptr);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))), QByteArray("scraper"));
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(st, 1))), QByteArray("operator"));
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(st, 2))), QByteArray("console:alice"));
        QCOMPARE(sqlite3_column_int64(st, 3), qint64(T0 + 7 * DAY));
        QCOMPARE(sqlite3_column_int(st, 4), 128);
        QCOMPARE(sqlite3_column_int(st, 5), 16);
        sqlite3_finalize(st);
        sqlite3_close(db);
        store->stop();

        // A new process on the same file refuses the address too.
        auto reopened = openOk(path);
        const auto loaded = reopened->load();
        QCOMPARE(loaded.blocklist.size(), std::size_t(1));
        QVERIFY(loaded.blocklist[0].range == cidr("203.0.113.7/32"));
        QCOMPARE(loaded.blocklist[0].createdAt, T0);
        QCOMPARE(loaded.blocklist[0].expiresAt, T0 + 7 * DAY);
    }

    void replaceRemoveAndTheAuditTrail()
    {
        auto store = openOk(freshPath());
        Engine engine(store->load().config);
        store->start(&engine);
        auto add = [&](Millis expires, std::string reason) {
            return store->wait([&](auto done) { store->addEntry(ListKind::Safelist, listEntry("2001:db8::/48", reason, expires), ALICE, done); });
        };
        QCOMPARE(label(add(T0 + HOUR, "office").result), label(Result::Created));
        QCOMPARE(label(add(NeverExpires, "office, for good").result), label(Result::Updated));  // the same range again: replaced
        QCOMPARE(engine.list(ListKind::Safelist)->size(), std::size_t(1));
        QCOMPARE(engine.list(ListKind::Safelist)->entries()[0].expiresAt, NeverExpires);
        QCOMPARE(label(decide(engine, Request().from("2001:db8:0:1::5"), T0).action), label(Action::Allow));
        QCOMPARE(label(decide(engine, Request().from("2001:db8:0:1::5"), T0).reason), label(Reason::Safelisted));

        QCOMPARE(label(store->wait([&](auto done) { store->removeEntry(ListKind::Safelist, cidr("2001:db8::/48"), ALICE, done); }).result), label(Result::Removed));
        QCOMPARE(engine.list(ListKind::Safelist)->size(), std::size_t(0));
        const Outcome missing = store->wait([&](auto done) { store->removeEntry(ListKind::Safelist, cidr("2001:db8::/48"), ALICE, done); });
        QCOMPARE(label(missing.result), label(Result::NotFound));
        QCOMPARE(QString::fromStdString(missing.error), QStringLiteral("2001:db8::/48 is not on the safelist"));

        const auto rows = store->audit(-1, 100);
        QStringList actions;
        for (const auto& r : rows)
            actions << QString::fromStdString(r.action + " " + r.subject + " by " + r.actor);
        QCOMPARE(actions, QStringList({QStringLiteral("list.add safelist 2001:db8::/48 by console:alice"),
                                       QStringLiteral("list.replace safelist 2001:db8::/48 by console:alice"),
                                       QStringLiteral("list.remove safelist 2001:db8::/48 by console:alice")}));
        QVERIFY(rows[1].before.find("\"office\"") != std::string::npos);
        QVERIFY(rows[1].after.find("\"office, for good\"") != std::string::npos);
        QVERIFY(rows[2].after.empty());
    }

    void expiredEntriesStopApplyingAndArePurged()
    {
        auto store = openOk(freshPath());
        Engine engine(store->load().config);
        store->start(&engine);
        QCOMPARE(label(store->wait([&](auto done) { store->addEntry(ListKind::Blocklist, listEntry("198.51.100.0/24", "test", T0 + HOUR), ALICE, done); }).result), label(Result::Created));
        QCOMPARE(label(decide(engine, Request().from("198.51.100.9"), T0 + HOUR - 1).action), label(Action::Block));
        QCOMPARE(label(decide(engine, Request().from("198.51.100.9"), T0 + HOUR).action), label(Action::Allow));

        m_clock.set(T0 + HOUR);
        QTRY_VERIFY_WITH_TIMEOUT(store->entries().empty(), 3000);
        QTRY_COMPARE_WITH_TIMEOUT(engine.list(ListKind::Blocklist)->size(), std::size_t(0), 3000);
        const auto rows = store->audit(-1, 10);
        QCOMPARE(rows.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(rows[0].action), QStringLiteral("list.add"));  // the creation stays
        QCOMPARE(QString::fromStdString(rows[1].action), QStringLiteral("list.expire"));
        QCOMPARE(QString::fromStdString(rows[1].actor), QStringLiteral("floodgate"));
        QVERIFY(rows[1].before.find("198.51.100.0/24") != std::string::npos);
    }

    void automaticBansKeepTheirRemainingTimeAcrossARestart()
    {
        const QString path = freshPath();
        {
            auto store = openOk(path);
            EngineConfig cfg = store->load().config;
            cfg.escalation.refusals = 3;
            Engine engine(cfg);
            engine.onAutomaticBan([&](const ListEntry& e) { store->journalAutomaticBan(e); });
            store->start(&engine);
            // 6 allowed, then 3 refusals: the third bans for 15 minutes.
            for (int i = 0; i < 9; ++i)
                decide(engine, Request().from("203.0.113.66"), T0 + i);
            QCOMPARE(label(decide(engine, Request().from("203.0.113.66"), T0 + 10).reason), label(Reason::AutoBanned));
            QTRY_COMPARE_WITH_TIMEOUT(store->entries().size(), std::size_t(1), 3000);
            const auto stored = store->entries()[0];
            QCOMPARE(label(stored.entry.source), label(ListSource::Automatic));
            QCOMPARE(stored.entry.expiresAt, T0 + 8 + 15 * MINUTE);
            QCOMPARE(QString::fromStdString(stored.entry.createdBy), QStringLiteral("floodgate"));
        }
        {
            // And the history: one ban so far, for the next ban's length.
            auto reopened = openOk(path);
            const auto offenders = reopened->load().offenders;
            QCOMPARE(offenders.size(), std::size_t(1));
            QVERIFY(offenders[0].key == cidr("203.0.113.66/32"));
            QCOMPARE(offenders[0].bans, 1u);
            QCOMPARE(offenders[0].lastBanAt, T0 + 8);
        }
        // Ten minutes later a new process starts: five minutes of the ban are left.
        m_clock.set(T0 + 10 * MINUTE);
        auto store = openOk(path);
        const auto loaded = store->load();
        QCOMPARE(loaded.automatic.size(), std::size_t(1));
        QVERIFY(loaded.blocklist.empty());
        Engine engine(loaded.config);
        engine.restoreAutomaticBans(loaded.automatic);
        const Decision d = decide(engine, Request().from("203.0.113.66"), T0 + 10 * MINUTE);
        QCOMPARE(label(d.action), label(Action::Block));
        QCOMPARE(d.retryAfterMs, 5 * MINUTE + 8);
    }

    void aBanIsStoredOnceItsRowIsWritten()
    {
        // The engine owns the ban; the store journals it and says when its row is on disk.
        auto store = openOk(freshPath());
        EngineConfig cfg = store->load().config;
        cfg.escalation.refusals = 3;
        Engine engine(cfg);
        engine.onAutomaticBan([&](const ListEntry& e) { store->journalAutomaticBan(e); });
        for (int i = 0; i < 10; ++i)
            decide(engine, Request().from("203.0.113.67"), T0 + i);
        const ListEntry* made = engine.automaticBans()->find(cidr("203.0.113.67/32"));
        QVERIFY(made);
        QVERIFY(!made->stored());  // the writer has not started: only the engine knows it
        store->start(&engine);
        QTRY_VERIFY_WITH_TIMEOUT(engine.automaticBans()->find(cidr("203.0.113.67/32"))->stored(), 3000);
        QCOMPARE(engine.automaticBans()->find(cidr("203.0.113.67/32"))->id, store->entries()[0].entry.id);
        QCOMPARE(engine.automaticBans()->size(), std::size_t(1));  // one entry, not a stored copy beside it
    }

    void aBanNotWrittenYetSurvivesAReloadAndCanBeLifted()
    {
        const QString path = freshPath();
        Storage::StoreOptions o = options(path);
        o.autoBanQueue = 0;  // every ban's row is dropped: only the engine knows them
        Storage::OpenFailure failure;
        auto store = Store::open(o, m_clock, &failure);
        QVERIFY(store);
        Engine engine(store->load().config);
        store->start(&engine);
        ListEntry ban = listEntry("203.0.113.77", "escalation", T0 + 15 * MINUTE);
        ban.source = ListSource::Automatic;
        engine.restoreAutomaticBans({ban});  // what the engine does when it bans
        store->journalAutomaticBan(ban);
        QCOMPARE(store->droppedAutoBans(), std::uint64_t(1));
        // Another process changes the file: the reload must not lift the ban.
        rawExec(path, "UPDATE tier_levels SET limit_count = 99 WHERE owner = 'Free'");
        QTRY_COMPARE_WITH_TIMEOUT(engine.config()->tiers[0].levels[0].limit, 99u, 2000);
        QCOMPARE(label(decide(engine, Request().from("203.0.113.77"), T0).action), label(Action::Block));
        // The operator lifts it: 204, and it stays lifted.
        const Outcome lifted = store->wait([&](auto done) { store->removeEntry(ListKind::Blocklist, cidr("203.0.113.77"), ALICE, done); });
        QCOMPARE(label(lifted.result), label(Result::Removed));
        QCOMPARE(label(decide(engine, Request().from("203.0.113.77"), T0 + 1).action), label(Action::Allow));
        QCOMPARE(store->audit(-1, 1)[0].action, std::string("list.remove"));
    }

    void anOperatorsEntryIsNotReplacedByAnAutomaticBan()
    {
        auto store = openOk(freshPath());
        Engine engine(store->load().config);
        store->start(&engine);
        QCOMPARE(label(store->wait([&](auto done) { store->addEntry(ListKind::Blocklist, listEntry("203.0.113.9", "known bad", NeverExpires), ALICE, done); }).result), label(Result::Created));
        ListEntry ban = listEntry("203.0.113.9", "escalation", T0 + MINUTE);
        ban.source = ListSource::Automatic;
        store->journalAutomaticBan(ban);
        // A later write is a barrier: the ban was handled in an earlier batch.
        store->wait([&](auto done) { store->removeEntry(ListKind::Safelist, cidr("10.9.9.9"), ALICE, done); });
        const auto all = store->entries();
        QCOMPARE(all.size(), std::size_t(1));
        QCOMPARE(label(all[0].entry.source), label(ListSource::Operator));
        QCOMPARE(all[0].entry.expiresAt, NeverExpires);
    }

    void tiersAndCustomersApplyToTheNextDecision()
    {
        auto store = openOk(freshPath());
        Engine engine(store->load().config);
        store->start(&engine);
        Customer acme;
        acme.id = "acme";
        acme.name = "Acme Inc.";
        acme.tier = "Free";
        QCOMPARE(label(store->wait([&](auto done) { store->putCustomer(acme, ALICE, done); }).result), label(Result::Created));
        for (int i = 0; i < 100; ++i)
            QCOMPARE(label(decide(engine, Request().customer("acme"), T0 + i).action), label(Action::Allow));
        QCOMPARE(label(decide(engine, Request().customer("acme"), T0 + 100).action), label(Action::Throttle));

        // Free goes from 100/h to 150/h: the next request passes.
        Tier free{"Free", {level(150, HOUR)}};
        QCOMPARE(label(store->wait([&](auto done) { store->putTier(free, ALICE, done); }).result), label(Result::Updated));
        const Decision d = decide(engine, Request().customer("acme"), T0 + 101);
        QCOMPARE(label(d.action), label(Action::Allow));
        QCOMPARE(d.limit, 150u);

        const Outcome inUse = store->wait([&](auto done) { store->deleteTier("Free", ALICE, done); });
        QCOMPARE(label(inUse.result), label(Result::Conflict));
        QCOMPARE(QString::fromStdString(inUse.error),
                 QStringLiteral("tier \"Free\" is used by 1 customer (acme): move them to another tier first"));
        Customer ghost = acme;
        ghost.id = "ghost";
        ghost.tier = "Platinum";
        const Outcome unknown = store->wait([&](auto done) { store->putCustomer(ghost, ALICE, done); });
        QCOMPARE(label(unknown.result), label(Result::Invalid));
        QCOMPARE(QString::fromStdString(unknown.error), QStringLiteral("tier \"Platinum\" is not a known tier"));
        QCOMPARE(label(store->wait([&](auto done) { store->deleteCustomer("acme", ALICE, done); }).result), label(Result::Removed));
        QCOMPARE(label(store->wait([&](auto done) { store->deleteTier("Free", ALICE, done); }).result), label(Result::Removed));
        QCOMPARE(engine.config()->tiers.size(), std::size_t(2));
        QCOMPARE(label(store->wait([&](auto done) { store->deleteTier("Free", ALICE, done); }).result), label(Result::NotFound));
    }

    void rulesAreValidatedAndApplied()
    {
        auto store = openOk(freshPath());
        Engine engine(store->load().config);
        std::vector<std::string> published;
        store->start(&engine, [](EngineConfig& c) { c.settings.dryRun = false; },
                     [&](const EngineConfig& c) { published.push_back(std::to_string(c.settings.throttleStatus)); });
        EngineConfig rules = store->config();
        rules.settings.throttleStatus = 503;
        rules.rules[0].levels[0].limit = 2;
        QCOMPARE(label(store->wait([&](auto done) { store->putRules(rules, ALICE, done); }).result), label(Result::Updated));
        QCOMPARE(published, std::vector<std::string>({"503"}));
        decide(engine, Request(), T0);
        decide(engine, Request(), T0 + 1);
        const Decision d = decide(engine, Request(), T0 + 2);
        QCOMPARE(label(d.action), label(Action::Throttle));
        QCOMPARE(int(d.throttleStatus), 503);

        rules.rules.push_back(rules.rules[0]);  // two rules named "ip"
        const Outcome bad = store->wait([&](auto done) { store->putRules(rules, ALICE, done); });
        QCOMPARE(label(bad.result), label(Result::Invalid));
        QCOMPARE(QString::fromStdString(bad.error), QStringLiteral("rules[1].name \"ip\" is used twice"));
        QCOMPARE(store->config().rules.size(), std::size_t(1));  // nothing of it was written
    }

    void everySettingSurvivesAReopen()
    {
        // Each row of the setting table has its row in the settings table
        // (the trusted proxies their own table), read back exactly.
        const QString path = freshPath();
        const EngineConfig changed = everySettingChanged();
        {
            auto store = openOk(path);
            Engine engine(store->load().config);
            store->start(&engine);
            const Outcome put = store->wait([&](auto done) { store->putRules(changed, ALICE, done); });
            QVERIFY2(put.ok(), put.error.c_str());
        }
        auto again = openOk(path);
        QVERIFY(again);
        QCOMPARE(QString::fromStdString(Codec::rulesToJson(again->load().config).dump()),
                 QString::fromStdString(Codec::rulesToJson(changed).dump()));
        // Words as words, numbers as integers: what the sqlite3 shell shows.
        sqlite3* db = nullptr;
        sqlite3_open(path.toUtf8().constData(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "SELECT key, typeof(value), value FROM settings ORDER BY key", -1, &st, nullptr);
        std::vector<std::string> rows;
        auto column = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i))); };
        while (sqlite3_step(st) == SQLITE_ROW)
            rows.push_back(column(0) + " " + column(1) + " " + column(2));
        sqlite3_finalize(st);
        sqlite3_close(db);
        QCOMPARE(rows, std::vector<std::string>({"cookieless_only integer 1", "customer_auth text trusted_header", "customer_header text X-Customer-Id-2",
                                    "customer_key_header text X-Api-Key-2", "dry_run integer 1", "escalation_ban_ms integer 901500",
                                    "escalation_enabled integer 0", "escalation_factor integer 3", "escalation_find_ms integer 61500",
                                    "escalation_max_ban_ms integer 604801500", "escalation_refusals integer 101",
                                    "ipv4_prefix integer 31", "ipv6_prefix integer 65", "max_tracked_keys integer 1000001",
                                    "rate_limit_headers integer 0", "throttle_status integer 503", "when_cluster_down text open"}));
    }

    void importIsAllOrNothing()
    {
        auto store = openOk(freshPath());
        Engine engine(store->load().config);
        store->start(&engine);
        std::vector<Core::ListedEntry> rows;
        rows.push_back({ListKind::Blocklist, listEntry("192.0.2.1", "test", T0 + DAY)});
        rows.push_back({ListKind::Safelist, listEntry("192.0.2.2", "test", NeverExpires)});
        rows.push_back({ListKind::Blocklist, listEntry("192.0.2.3", "test", T0 - 1)});  // already over
        const Outcome bad = store->wait([&](auto done) { store->importEntries(rows, ALICE, done); });
        QCOMPARE(label(bad.result), label(Result::Invalid));
        QVERIFY(store->entries().empty());
        QCOMPARE(engine.list(ListKind::Blocklist)->size(), std::size_t(0));

        rows.pop_back();
        const Outcome good = store->wait([&](auto done) { store->importEntries(rows, Storage::Actor{"cli:bob"}, done); });
        QCOMPARE(label(good.result), label(Result::Updated));
        QCOMPARE(QString::fromStdString(good.value.dump()), QStringLiteral("{\"imported\":2,\"replaced\":0}"));
        QCOMPARE(store->entries().size(), std::size_t(2));
        QCOMPARE(label(decide(engine, Request().from("192.0.2.1"), T0).action), label(Action::Block));
        QCOMPARE(label(decide(engine, Request().from("192.0.2.2"), T0).reason), label(Reason::Safelisted));
    }

    void changesFromAnotherConnectionArePickedUp()
    {
        const QString path = freshPath();
        auto store = openOk(path);
        Engine engine(store->load().config);
        store->start(&engine);
        // What an operator would type in the sqlite3 shell.
        rawExec(path, "INSERT INTO list_entries (list, address, prefix, reason, source, created_at, created_by, expires_at)"
                      " VALUES ('blocklist', x'00000000000000000000ffffcb007109', 128, 'by hand', 'operator', 0, 'sqlite3', NULL);"
                      "UPDATE tier_levels SET limit_count = 7 WHERE owner = 'Free';");
        QTRY_COMPARE_WITH_TIMEOUT(engine.list(ListKind::Blocklist)->size(), std::size_t(1), 2000);
        QCOMPARE(label(decide(engine, Request().from("203.0.113.9"), T0).action), label(Action::Block));
        QTRY_COMPARE_WITH_TIMEOUT(engine.config()->tiers[0].levels[0].limit, 7u, 2000);
        QVERIFY(store->reloads() >= 1);
    }

    // What a cluster sends on (app/ClusterLink.h): the operator's changes to
    // the configuration, not those a cluster brought; and what another
    // process wrote, found by comparing, a tier before the customers on it
    // and a customer removed before its tier.
    void configurationChangesAreToldExceptTheClustersOwn()
    {
        const QString path = freshPath();
        auto store = openOk(path);
        Engine engine(store->load().config);
        std::mutex mutex;
        std::vector<std::string> told;
        store->onConfigChange([&](const Storage::ConfigChange& c) {
            static const char* parts[] = {"tier", "customer", "rules"};
            std::lock_guard lock(mutex);
            told.push_back(std::string(parts[int(c.part)]) + " " + c.key + (c.removed ? " removed" : " put") + " by " + c.actor);
        });
        store->start(&engine);
        Tier gold{"Gold", {level(5, MINUTE)}};
        QVERIFY(store->wait([&](auto done) { store->putTier(gold, ALICE, done); }).ok());
        Customer zed;
        zed.id = "zed";
        zed.tier = "Gold";
        QVERIFY(store->wait([&](auto done) { store->putCustomer(zed, Storage::Actor{"cluster:b/api:127.0.0.1"}, done); }).ok());
        QVERIFY(store->wait([&](auto done) {
                         store->updateRules([](EngineConfig& c) { c.settings.maxTrackedKeys = 5000; return std::optional<std::string>(); }, ALICE, done);
                     }).ok());
        {
            std::lock_guard lock(mutex);
            QCOMPARE(told, (std::vector<std::string>{"tier Gold put by console:alice", "rules rules put by console:alice"}));
            told.clear();
        }
        // What an operator would type in the sqlite3 shell: zed moves to a
        // new tier, Gold goes.
        rawExec(path, "INSERT INTO tiers (name, position) VALUES ('Silver', 9);"
                      "INSERT INTO tier_levels (owner, position, limit_count, period_ms, algorithm) VALUES ('Silver', 0, 9, 60000, 'sliding');"
                      "UPDATE customers SET tier = 'Silver' WHERE id = 'zed';"
                      "DELETE FROM tiers WHERE name = 'Gold';");
        auto toldNow = [&] {
            std::lock_guard lock(mutex);
            return told;
        };
        QTRY_COMPARE_WITH_TIMEOUT(toldNow().size(), std::size_t(3), 3000);
        QCOMPARE(toldNow(), (std::vector<std::string>{"tier Silver put by another process", "customer zed put by another process",
                                                 "tier Gold removed by another process"}));
    }

    void aBrokenExternalChangeIsReportedAndTheRunningRulesStay()
    {
        const QString path = freshPath();
        auto store = openOk(path);
        Engine engine(store->load().config);
        store->start(&engine);
        QVERIFY(!store->lastProblem());
        // Someone empties the per-IP levels by hand: not a configuration that can run.
        rawExec(path, "DELETE FROM rule_levels");
        QTRY_VERIFY_WITH_TIMEOUT(store->lastProblem().has_value(), 2000);
        const auto problem = *store->lastProblem();
        QCOMPARE(problem.serial, std::uint64_t(1));
        QCOMPARE(QString::fromStdString(problem.message),
                 QStringLiteral("the stored configuration is not valid (rules[0].levels must have at least one level); the running one stays"));
        QCOMPARE(engine.config()->rules[0].levels.size(), std::size_t(3));
        for (int i = 0; i < 6; ++i)
            decide(engine, Request(), T0 + i);
        QCOMPARE(label(decide(engine, Request(), T0 + 6).action), label(Action::Throttle));
    }

    void aVersion1DatabaseIsMigratedKeepingItsData()
    {
        const QString path = freshPath();
        {
            auto store = openOk(path);
            store->start(nullptr);
            QCOMPARE(label(store->wait([&](auto done) { store->addEntry(ListKind::Blocklist, listEntry("192.0.2.99", "kept", NeverExpires), ALICE, done); }).result), label(Result::Created));
        }
        // What a database of the first release looks like.
        rawExec(path, "DROP TABLE offenders; DROP TABLE customer_keys; PRAGMA user_version = 1;");
        auto store = openOk(path);
        QVERIFY(store);
        QVERIFY(!store->created());
        const auto loaded = store->load();
        QCOMPARE(loaded.blocklist.size(), std::size_t(1));
        QCOMPARE(loaded.blocklist[0].reason, std::string("kept"));
        QVERIFY(loaded.offenders.empty());  // the new table is there, empty
        QCOMPARE(userVersion(path), Storage::Schema::CurrentVersion);
    }

    void aVersion2DatabaseGetsTheNewDefaultExclusionsUnlessEdited_data()
    {
        // What 0.3 wrote on a new database, and what an operator may have made of it.
        const QString old03 = QStringLiteral("*.css|*.js|*.png|*.jpg|*.gif|*.svg|*.ico|*.woff2");
        QTest::addColumn<int>("fromVersion");
        QTest::addColumn<QString>("stored");  // '|'-separated, in order; "" = none
        QTest::addColumn<bool>("replaced");
        QTest::newRow("0.3's default") << 2 << old03 << true;
        QTest::newRow("0.3's default, from schema 1") << 1 << old03 << true;
        QTest::newRow("one pattern added") << 2 << old03 + QStringLiteral("|*.pdf") << false;
        QTest::newRow("one pattern removed") << 2 << QStringLiteral("*.css|*.js|*.png|*.jpg|*.gif|*.svg|*.ico") << false;
        QTest::newRow("reordered") << 2 << QStringLiteral("*.js|*.css|*.png|*.jpg|*.gif|*.svg|*.ico|*.woff2") << false;
        QTest::newRow("emptied") << 2 << QString() << false;
    }
    void aVersion2DatabaseGetsTheNewDefaultExclusionsUnlessEdited()
    {
        QFETCH(int, fromVersion);
        QFETCH(QString, stored);
        QFETCH(bool, replaced);
        const QString path = freshPath();
        {
            auto store = openOk(path);
            QVERIFY(store);
        }
        // Turn the file into one written by 0.3: its schema version, its list.
        std::string sql = "DELETE FROM patterns WHERE kind = 'excluded_path';";
        const QStringList patterns = stored.isEmpty() ? QStringList() : stored.split(QLatin1Char('|'));
        for (int i = 0; i < patterns.size(); ++i)
            sql += "INSERT INTO patterns (kind, position, pattern) VALUES ('excluded_path', " + std::to_string(i) + ", '"
                + patterns[i].toStdString() + "');";
        if (fromVersion == 1)
            sql += "DROP TABLE offenders;";
        sql += "DROP TABLE customer_keys;";
        sql += "PRAGMA user_version = " + std::to_string(fromVersion) + ";";
        rawExec(path, sql.c_str());

        auto store = openOk(path);
        QVERIFY(store);
        const auto loaded = store->load();
        std::vector<std::string> expected;
        for (const QString& p : patterns)
            expected.push_back(p.toStdString());
        if (replaced)
            expected = defaultConfig().bot.excludedPaths;
        QCOMPARE(loaded.config.bot.excludedPaths, expected);
        const auto audit = store->audit(-1, 10);
        QCOMPARE(audit.size(), std::size_t(replaced ? 1 : 0));
        if (replaced) {
            QCOMPARE(QString::fromStdString(audit[0].action + " by " + audit[0].actor), QStringLiteral("rules.migrate by floodgate"));
            QVERIFY(audit[0].before.find("\"*.woff2\"]") != std::string::npos);
            QVERIFY(audit[0].after.find("\"*.woff\"") != std::string::npos);
            // The page's fonts are not counted any more.
            Engine engine(loaded.config);
            QCOMPARE(label(decide(engine, Request().at("/fonts/Inter.WOFF"), T0).reason), label(Reason::ExcludedPath));
        }
        QCOMPARE(userVersion(path), Storage::Schema::CurrentVersion);
        // Opening it again changes nothing more.
        store.reset();
        auto again = openOk(path);
        QCOMPARE(again->load().config.bot.excludedPaths, expected);
        QCOMPARE(again->audit(-1, 10).size(), std::size_t(replaced ? 1 : 0));
    }

    // Until 0.6 a customer was whoever named it. A database of 0.5 keeps
    // its customers, without a key: they count as anonymous clients until
    // the operator gives them keys (or chooses a trusted proxy's header);
    // the old settings go, and the audit trail says what they were.
    void aVersion3DatabaseKeepsItsCustomersWithoutProof()
    {
        const QString path = freshPath();
        {
            auto store = openOk(path);
            store->start(nullptr);
            QVERIFY(store->wait([&](auto done) { store->putCustomer(Customer{"acme", "Acme", "Pro", {}, {}}, ALICE, done); }).ok());
        }
        rawExec(path, "DROP TABLE customer_keys; INSERT INTO settings (key, value) VALUES ('customer_source', 'header'), "
                      "('customer_param', 'cid'); PRAGMA user_version = 3;");
        {
            auto store = openOk(path);
            QVERIFY(store);
            QCOMPARE(userVersion(path), Storage::Schema::CurrentVersion);
            const auto loaded = store->load();
            QCOMPARE(loaded.config.customers.size(), std::size_t(1));
            QVERIFY(loaded.config.customers[0].keys.empty());
            QVERIFY(loaded.config.settings.customerAuth == CustomerAuth::ApiKey);
            QCOMPARE(keylessCustomers(loaded.config, T0), std::vector<std::string>{"acme"});
            const auto audit = store->audit(-1, 10);
            QCOMPARE(audit.size(), std::size_t(2));  // the customer's making, the migration
            const auto migration = std::find_if(audit.begin(), audit.end(), [](const auto& row) { return row.action == "rules.migrate"; });
            QVERIFY(migration != audit.end());
            QCOMPARE(QString::fromStdString(migration->actor), QStringLiteral("floodgate"));
            QCOMPARE(QString::fromStdString(migration->before), QStringLiteral("{\"customer_source\":\"header\",\"customer_param\":\"cid\"}"));
            QVERIFY(migration->subject.find("1 customer without an API key") != std::string::npos);
            // The header the customer used to send is a claim now.
            Engine engine(loaded.config);
            const Decision d = decide(engine, Request().header("X-Customer-Id", "acme"), T0);
            QVERIFY(!d.customer);
            QVERIFY(d.claim == Claim::HeaderNotAProof);
            // The operator gives it a key: on disk, and it proves the customer.
            store->start(nullptr);
            const NewCustomerKey key = testKey("acme");
            QCOMPARE(label(store->wait([&](auto done) { store->addCustomerKey("acme", key.key, 0, ALICE, done); }).result), label(Result::Created));
        }
        auto again = openOk(path);
        const auto loaded = again->load();
        QCOMPARE(loaded.config.customers[0].keys.size(), std::size_t(1));
        QCOMPARE(loaded.config.customers[0].keys[0].sha256, testKey("acme").key.sha256);
        QVERIFY(keylessCustomers(loaded.config, T0).empty());
        Engine engine(loaded.config);
        QVERIFY(decide(engine, Request().header("X-Api-Key", testKey("acme").secret), T0).customer);
        QCOMPARE(again->audit(-1, 10).size(), std::size_t(3));  // the customer, the migration (once), the key
        // No setting row of 0.5 is left.
        sqlite3* db = nullptr;
        sqlite3_open(path.toUtf8().constData(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "SELECT count(*) FROM settings WHERE key IN ('customer_source', 'customer_param')", -1, &st, nullptr);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        QCOMPARE(sqlite3_column_int(st, 0), 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }

    void refusedFilesAreLeftUntouched_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("expected");
        QTest::newRow("not a database") << 0 << int(OpenError::Corrupt);
        QTest::newRow("damaged page") << 1 << int(OpenError::Corrupt);
        QTest::newRow("newer schema") << 2 << int(OpenError::NewerSchema);
        QTest::newRow("another application's database") << 3 << int(OpenError::Foreign);
    }
    void refusedFilesAreLeftUntouched()
    {
        QFETCH(int, kind);
        QFETCH(int, expected);
        const QString path = freshPath();
        QDir().mkpath(QFileInfo(path).path());
        if (kind == 0) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray("this is not a database, it is a shopping list\n").repeated(200));
        } else if (kind == 1 || kind == 2) {
            {
                auto store = openOk(path);
                QVERIFY(store);
                store->start(nullptr);
                std::vector<Core::ListedEntry> rows;
                for (int i = 0; i < 2000; ++i)
                    rows.push_back({ListKind::Blocklist, listEntry("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256), std::string(40, 'x'), NeverExpires)});
                QCOMPARE(label(store->wait([&](auto done) { store->importEntries(rows, ALICE, done); }).result), label(Result::Updated));
            }
            // Fold the WAL into the file so the damage below hits real pages.
            rawExec(path, kind == 2 ? "PRAGMA user_version = 99; PRAGMA wal_checkpoint(TRUNCATE);" : "PRAGMA wal_checkpoint(TRUNCATE);");
            if (kind == 1) {
                QFile f(path);
                QVERIFY(f.open(QIODevice::ReadWrite));
                QVERIFY(f.size() > 40 * 4096);
                f.seek(20 * 4096);  // two whole b-tree pages in the middle of the file
                f.write(QByteArray(2 * 4096, '\xA5'));
            }
            QFile::remove(path + QStringLiteral("-wal"));
            QFile::remove(path + QStringLiteral("-shm"));
        } else {
            rawExec(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)");
        }
        const QByteArray before = fileBytes(path);
        QVERIFY(!before.isEmpty());
        Storage::OpenFailure failure;
        auto store = Store::open(options(path), m_clock, &failure);
        QVERIFY(!store);
        QCOMPARE(int(failure.kind), expected);
        QVERIFY2(failure.message.find(path.toStdString()) != std::string::npos, failure.message.c_str());
        QVERIFY2(failure.message.find("left untouched") != std::string::npos, failure.message.c_str());
        QVERIFY(failure.message.find('\n') == std::string::npos);
        QCOMPARE(fileBytes(path), before);  // byte for byte
    }

    void aLockedFileIsReportedAfterTheTimeout()
    {
        const QString path = freshPath();
        {
            auto store = openOk(path);
            QVERIFY(store);
        }
        sqlite3* holder = nullptr;
        QCOMPARE(sqlite3_open(path.toUtf8().constData(), &holder), SQLITE_OK);
        QCOMPARE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
        QElapsedTimer t;
        t.start();
        Storage::OpenFailure failure;
        auto store = Store::open(options(path, 300), m_clock, &failure);
        const qint64 waited = t.elapsed();
        sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(holder);
        QVERIFY(!store);
        QCOMPARE(int(failure.kind), int(OpenError::Locked));
        QVERIFY2(waited >= 250 && waited < 5000, QByteArray::number(waited).constData());
        QVERIFY2(failure.message.find("locked by another process (waited 0.3 s)") != std::string::npos, failure.message.c_str());
        // Once the other writer is gone, it opens.
        QVERIFY(openOk(path));
    }

    void aFolderThatCannotBeCreatedIsAnIoError()
    {
        Storage::OpenFailure failure;
        auto store = Store::open(options(QStringLiteral("/proc/floodgate/x.db")), m_clock, &failure);
        QVERIFY(!store);
        QCOMPARE(int(failure.kind), int(OpenError::Io));
        QVERIFY2(failure.message.find("cannot create the folder /proc/floodgate") == 0, failure.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestStore)
#include "test_store.moc"
