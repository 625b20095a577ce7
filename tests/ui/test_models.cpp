// SPDX-License-Identifier: GPL-3.0-or-later
// The console's models under QAbstractItemModelTester while snapshots come
// and go: rows merged by key (updated in place, appended, removed), the
// selection and sort of a view surviving refreshes, streams bounded; the
// durations' wording and the status bar, fed by hand-made snapshots.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ui/ClientsModel.h"
#include "ui/ClientsView.h"
#include "ui/ClusterDialog.h"
#include "ui/ClusterModel.h"
#include "ui/ClusterText.h"
#include "ui/ConsoleServices.h"
#include "core/Engine.h"
#include "ui/Format.h"
#include "ui/ListModel.h"
#include "ui/SnapshotWorker.h"
#include "ui/StatusBar.h"
#include "ui/StreamModels.h"
#include "TestSupport.h"
#include "ui/TierModels.h"

#include <QAbstractItemModelTester>
#include <QItemSelectionModel>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QToolButton>
#endif

using namespace Floodgate;
using namespace Floodgate::Ui;

namespace {

using Core::Test::T0;

Core::ClientSummary summary(const char* address, std::uint32_t last60, double rate, Core::ClientState state = Core::ClientState::Ok)
{
    Core::ClientSummary s;
    s.key = *Core::IpAddress::parse(address);
    s.keyPrefix = 128;
    s.lastAddress = s.key;
    s.last60s = last60;
    s.ratePerSecond = rate;
    s.bindingRule = "ip-3s";
    s.bindingLimit = 6;
    s.bindingUsed = std::min<std::uint32_t>(last60, 6);
    s.state = state;
    return s;
}

ClientRow client(const char* address, std::uint32_t last60, double rate, Core::ClientState state = Core::ClientState::Ok)
{
    ClientRow r(summary(address, last60, rate, state));
    r.lastRequest = QStringLiteral("GET /");
    return r;
}

Core::ListEntry entry(const char* range, Core::Millis expires, Core::ListSource source = Core::ListSource::Operator)
{
    Core::ListEntry e = Core::Test::listEntry(range, {}, expires, source);
    e.createdAt = T0;
    return e;
}

Cluster::NodeStatus node(const char* name, const char* address, Core::Millis lastSeen, double rate, bool self = false)
{
    Cluster::NodeStatus n;
    n.name = name;
    n.address = address;
    n.lastSeenMs = lastSeen;
    n.requestsPerSecond = rate;
    n.self = self;
    return n;
}

// What a node of three hears from Redis when all is well.
Cluster::ClusterStatus clusterUp(Core::Millis now)
{
    Cluster::ClusterStatus c;
    c.redis = Cluster::ClusterStatus::Redis::Up;
    c.url = "redis://:***@10.0.0.5:6379/0";
    c.node = "web-1";
    c.roundTripMicros = 310;
    c.syncLagMs = 2;
    c.clockOffsetMs = 3;
    c.nodes = {node("web-1", "http://10.0.0.11:8080", now - 400, 35.2, true), node("web-2", "http://10.0.0.12:8080", now - 900, 12.0),
               node("web-3", "http://10.0.0.13:8080", now - 1200, 0.5)};
    c.nodesCounting = 3;
    c.batches = 40;
    c.reports = 900;
    c.lastBatchSize = 12;
    c.breakerOpen = false;
    return c;
}

std::shared_ptr<ConsoleSnapshot> snapshot(Core::Millis now)
{
    auto s = std::make_shared<ConsoleSnapshot>();
    s->now = now;
    s->config = std::make_shared<const Core::EngineConfig>(Core::defaultConfig());
    return s;
}

QStringList keys(const QAbstractItemModel& m, int role)
{
    QStringList out;
    for (int r = 0; r < m.rowCount(); ++r)
        out << m.index(r, 0).data(role).toString();
    return out;
}

} // namespace

class TestModels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void clientsMergeByKeyAndKeepTheSelection()
    {
        ClientsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(ClientsModel::SortRole);
        proxy.setDynamicSortFilter(true);
        proxy.sort(ClientsModel::Rate, Qt::DescendingOrder);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QItemSelectionModel selection(&proxy);

        auto s1 = snapshot(T0);
        s1->clients = {client("203.0.113.1", 10, 3.0), client("203.0.113.2", 50, 9.0), client("203.0.113.3", 5, 1.0)};
        model.apply(*s1);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(keys(proxy, ClientsModel::KeyRole),
                 QStringList({QStringLiteral("203.0.113.2"), QStringLiteral("203.0.113.1"), QStringLiteral("203.0.113.3")}));
        // The operator selects .1 (second by rate).
        selection.select(proxy.index(1, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);

        // Next refresh: .3 is gone, .4 is new, .1 is now the busiest.
        auto s2 = snapshot(T0 + 250);
        s2->clients = {client("203.0.113.1", 60, 20.0, Core::ClientState::Throttled), client("203.0.113.2", 52, 8.0), client("203.0.113.4", 1, 0.3)};
        model.apply(*s2);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(keys(proxy, ClientsModel::KeyRole),
                 QStringList({QStringLiteral("203.0.113.1"), QStringLiteral("203.0.113.2"), QStringLiteral("203.0.113.4")}));
        const QModelIndexList selected = selection.selectedRows();
        QCOMPARE(selected.size(), 1);
        QCOMPARE(selected[0].data(ClientsModel::KeyRole).toString(), QStringLiteral("203.0.113.1"));  // it moved, it stayed selected
        QCOMPARE(selected[0].sibling(selected[0].row(), ClientsModel::State).data().toString(), QStringLiteral("throttled"));
        QCOMPARE(selected[0].sibling(selected[0].row(), ClientsModel::Use).data().toString(), QStringLiteral("6 / 6  ip-3s"));

        // A blocked client shows no counting bar: it spends no counters.
        auto s3 = snapshot(T0 + 500);
        s3->clients = {client("203.0.113.1", 60, 20.0, Core::ClientState::Blocked)};
        model.apply(*s3);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, ClientsModel::Use).data().toString(), QStringLiteral("not counted: blocklist"));
        QCOMPARE(model.index(0, ClientsModel::Use).data(ClientsModel::LimitRole).toUInt(), 0u);
        model.apply(*snapshot(T0 + 750));
        QCOMPARE(model.rowCount(), 0);
    }

    void ipv6ClientsShowTheirRange()
    {
        ClientsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto s = snapshot(T0);
        Core::ClientSummary range = summary("2001:db8:bad:1::", 30, 10.0);
        range.keyPrefix = 64;
        range.lastAddress = *Core::IpAddress::parse("2001:db8:bad:1:dead:beef:1:2");
        s->clients = {ClientRow(range)};
        model.apply(*s);
        QCOMPARE(model.index(0, 0).data(ClientsModel::KeyRole).toString(), QStringLiteral("2001:db8:bad:1::/64"));
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("2001:db8:bad:1::/64  (2001:db8:bad:1:dead:beef:1:2)"));
        // Its live record went to another client: no full address to show, and the tooltip says why.
        range.lastAddress.reset();
        s->clients = {ClientRow(range)};
        model.apply(*s);
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("2001:db8:bad:1::/64"));
        QVERIFY(model.index(0, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("no longer kept")));
    }

    void liveCountsWithoutARecordReadAsAtLeast()
    {
        // Some of the client's requests of the minute are in no live record
        // (the pool was full of clients seen within the minute): its live
        // counts are lower bounds, and say so; its sort keys stay numbers.
        ClientsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto s = snapshot(T0);
        ClientRow r = client("203.0.113.9", 4, 1.0);
        r.summary.lastBucket = 2;
        s->clients = {r};
        model.apply(*s);
        QCOMPARE(model.index(0, ClientsModel::Last60s).data().toString(), QStringLiteral("4"));
        QVERIFY(!model.index(0, ClientsModel::Last60s).data(Qt::ToolTipRole).toString().contains(QStringLiteral("At least")));
        r.summary.liveComplete = false;
        s->clients = {r};
        model.apply(*s);
        QCOMPARE(model.index(0, ClientsModel::Last3s).data().toString(), QStringLiteral("\u2265 2"));
        QCOMPARE(model.index(0, ClientsModel::Last60s).data().toString(), QStringLiteral("\u2265 4"));
        QVERIFY(model.index(0, ClientsModel::Rate).data().toString().startsWith(QStringLiteral("\u2265 ")));
        for (int column : {int(ClientsModel::Last3s), int(ClientsModel::Last60s), int(ClientsModel::Rate)})
            QVERIFY(model.index(0, column).data(Qt::ToolTipRole).toString().contains(QStringLiteral("At least")));
        QCOMPARE(model.index(0, ClientsModel::Last60s).data(ClientsModel::SortRole).toUInt(), 4u);
    }

    void theSparklineHasTheWholeBucketsOnly()
    {
        // The Last minute column draws the 19 whole 3 s buckets, oldest
        // first; the one still filling (it would make a busy client's line
        // fall at its end) is only in the counts and the tooltip's total.
        ClientsModel model;
        auto s = snapshot(T0);
        ClientRow r = client("203.0.113.9", 210, 3.5);
        for (std::size_t b = 0; b < r.summary.live.size(); ++b)
            r.summary.live[b] = std::uint32_t(b + 1);
        s->clients = {r};
        model.apply(*s);
        const QList<int> drawn = model.index(0, ClientsModel::Activity).data(ClientsModel::LiveRole).value<QList<int>>();
        QCOMPARE(drawn.size(), 19);
        QCOMPARE(drawn.front(), 1);
        QCOMPARE(drawn.back(), 19);
        QVERIFY(model.index(0, ClientsModel::Activity).data(Qt::ToolTipRole).toString().contains(QStringLiteral("210 in the last 60 s")));
    }

    void listsFollowTheDeltasTheSnapshotThreadWorksOut()
    {
        // The worker diffs the engine's lists; the model applies the deltas.
        Core::ManualClock clock(T0);
        Core::Engine engine;
        ConsoleServices services;
        services.engine = &engine;
        services.clock = &clock;
        SnapshotWorker worker(services);
        ListModel model(Core::ListKind::Blocklist);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(ListModel::SortRole);
        proxy.setDynamicSortFilter(true);
        proxy.sort(ListModel::Address, Qt::AscendingOrder);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);

        engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::vector<Core::ListEntry>{
            entry("203.0.113.0/24", T0 + 7 * 86'400'000), entry("198.51.100.9", Core::NeverExpires), entry("198.51.100.10", T0 + 90'000)}));
        engine.restoreAutomaticBans({entry("192.0.2.66", T0 + 60'000, Core::ListSource::Automatic)});
        auto s = worker.take();
        QVERIFY(s->lists[std::size_t(Core::ListKind::Blocklist)].reset);
        model.apply(*s);
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.index(model.rowOf(*Core::Cidr::parse("203.0.113.0/24")), ListModel::ExpiresIn).data().toString(), QStringLiteral("7 d 0 h"));
        QCOMPARE(model.index(model.rowOf(*Core::Cidr::parse("198.51.100.9")), ListModel::ExpiresIn).data().toString(), QStringLiteral("permanent"));
        QCOMPARE(model.index(model.rowOf(*Core::Cidr::parse("192.0.2.66")), ListModel::Source).data().toString(), QStringLiteral("automatic"));
        // Addresses sort as numbers: .9 before .10.
        QCOMPARE(proxy.index(0, ListModel::Address).data().toString(), QStringLiteral("192.0.2.66/32"));
        QCOMPARE(proxy.index(1, ListModel::Address).data().toString(), QStringLiteral("198.51.100.9/32"));
        QCOMPARE(proxy.index(2, ListModel::Address).data().toString(), QStringLiteral("198.51.100.10/32"));

        // Nothing changed but time: an empty delta, the countdown moves.
        clock.set(T0 + 30'500);
        s = worker.take();
        QVERIFY(s->lists[std::size_t(Core::ListKind::Blocklist)].empty());
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.apply(*s);
        model.refreshCountdown();
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed[0][0].toModelIndex().column(), int(ListModel::ExpiresIn));
        QCOMPARE(model.index(model.rowOf(*Core::Cidr::parse("192.0.2.66")), ListModel::ExpiresIn).data().toString(), QStringLiteral("30 s"));

        // The automatic ban ends, exactly at its expiry: a removal.
        clock.set(T0 + 60'000);
        s = worker.take();
        QCOMPARE(s->lists[std::size_t(Core::ListKind::Blocklist)].removals.size(), std::size_t(1));
        model.apply(*s);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.rowOf(*Core::Cidr::parse("192.0.2.66")), -1);

        // An entry added and one changed: two upserts, one new row.
        auto next = engine.list(Core::ListKind::Blocklist)->with(entry("10.0.0.1", Core::NeverExpires));
        Core::ListEntry longer = entry("198.51.100.10", T0 + 900'000);
        next = next.with(longer);
        engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::move(next)));
        s = worker.take();
        QCOMPARE(s->lists[std::size_t(Core::ListKind::Blocklist)].upserts.size(), std::size_t(2));
        model.apply(*s);
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.index(model.rowOf(*Core::Cidr::parse("198.51.100.10")), ListModel::ExpiresIn).data().toString(), QStringLiteral("14 m 00 s"));
        // Removed from the engine: a removal, whatever its position.
        engine.setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(engine.list(Core::ListKind::Blocklist)->without(*Core::Cidr::parse("203.0.113.0/24"))));
        s = worker.take();
        model.apply(*s);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.rowOf(*Core::Cidr::parse("203.0.113.0/24")), -1);
        for (int r = 0; r < model.rowCount(); ++r)
            QCOMPARE(model.rowOf(model.rowAt(r)->entry.range), r);  // the index stays true
    }

    void tiersAndCustomersWithTheirUse()
    {
        TiersModel tiers;
        CustomersModel customers;
        QAbstractItemModelTester t1(&tiers, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&customers, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto s = snapshot(T0);
        Core::EngineConfig c = Core::defaultConfig();
        c.customers = {Core::Customer{"acme", "Acme Inc.", "Pro", {}, {}}};
        s->config = std::make_shared<const Core::EngineConfig>(c);
        Core::LevelUsage minute;
        minute.name = "pro-1m";
        minute.limit = 100;
        minute.used = 97;
        minute.remaining = 3;
        minute.periodMs = 60'000;
        Core::LevelUsage hour = minute;
        hour.name = "pro-1h";
        hour.limit = 5000;
        hour.used = 97;
        hour.remaining = 4903;
        hour.periodMs = 3'600'000;
        s->customerUsage["acme"] = {minute, hour};
        tiers.apply(*s);
        customers.apply(*s);
        QCOMPARE(tiers.rowCount(), 3);
        QCOMPARE(tiers.index(1, TiersModel::Levels).data().toString(), QStringLiteral("100 / min + 5,000 / h"));
        QCOMPARE(tiers.index(1, TiersModel::Customers).data().toInt(), 1);
        QCOMPARE(customers.rowCount(), 1);
        QCOMPARE(customers.index(0, CustomersModel::Use).data().toString(), QStringLiteral("97 / 100 per min  ·  97 / 5,000 per h"));
        QCOMPARE(customers.index(0, CustomersModel::Use).data(CustomersModel::LimitRole).toUInt(), 100u);  // the bar: the least left
        QVERIFY(customers.index(0, CustomersModel::Use).data(Qt::ToolTipRole).toString().contains(QStringLiteral("pro-1h: 97 of 5000 used")));

        c.tiers.erase(c.tiers.begin());  // Free goes
        s->config = std::make_shared<const Core::EngineConfig>(c);
        tiers.apply(*s);
        QCOMPARE(tiers.rowCount(), 2);
        QCOMPARE(tiers.index(0, TiersModel::Name).data().toString(), QStringLiteral("Pro"));
    }

    void streamsAppendInBatchesAndStayBounded()
    {
        EventsModel events;
        AuditModel audit;
        QAbstractItemModelTester t1(&events, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&audit, QAbstractItemModelTester::FailureReportingMode::QtTest);
        std::uint64_t id = 0;
        for (int tick = 0; tick < 12; ++tick) {
            auto s = snapshot(T0 + tick * 250);
            for (int i = 0; i < 1000; ++i) {
                Http::Event e;
                e.id = ++id;
                e.record.time = s->now;
                e.record.action = Core::Action::Throttle;
                e.record.rule.assign("ip-3s");
                e.record.ip = *Core::IpAddress::parse("203.0.113.66");
                e.record.peer = e.record.ip;
                e.record.attempts = 6;
                e.record.limit = 6;
                e.record.windowMs = 3000;
                e.record.retryAfterMs = 3000;
                std::strcpy(e.record.method, "GET");
                std::strcpy(e.record.path, "/products");
                s->events.push_back(e);
            }
            s->audit.push_back(Storage::AuditRow{tick + 1, s->now, "console:alice", "list.add", "blocklist 203.0.113.66/32", {}, "{}"});
            events.apply(*s);
            audit.apply(*s);
        }
        QCOMPARE(events.rowCount(), int(Core::Tuning::maxEventsKept));  // 12,000 seen, the newest 10,000 kept
        QCOMPARE(events.rowAt(0)->id, std::uint64_t(12000));  // newest first
        QCOMPARE(events.rowAt(events.rowCount() - 1)->id, std::uint64_t(2001));
        QCOMPARE(events.index(0, EventsModel::Count).data().toString(), QStringLiteral("6 / 6"));
        QCOMPARE(events.index(0, EventsModel::Request).data().toString(), QStringLiteral("GET /products"));
        QCOMPARE(events.index(0, 0).data(EventsModel::WhyRole).toString(),
                 QStringLiteral("6 requests in the 3 s window of ip-3s (limit 6); passes again in 3 s. Client 203.0.113.66 is the TCP peer."));
        QCOMPARE(audit.rowCount(), 12);
        QVERIFY(audit.index(0, 0).data(AuditModel::DetailRole).toString().startsWith(QStringLiteral("list.add by console:alice")));
        QCOMPARE(audit.rowAt(0)->id, std::int64_t(12));
    }

    // Every duration the console shows comes from formatDuration; each span
    // keeps the wording its cells, titles and notices had.
    void durationsByWhatTheOperatorReads_data()
    {
        QTest::addColumn<qint64>("ms");
        QTest::addColumn<int>("span");
        QTest::addColumn<QString>("text");
        using Core::DAY;
        using Core::HOUR;
        using Core::MINUTE;
        const int left = int(Span::Left), length = int(Span::Length), per = int(Span::Per), for_ = int(Span::For), ago = int(Span::Ago),
                  since = int(Span::Since);
        QTest::newRow("left 0.4 s") << qint64(400) << left << QStringLiteral("0.4 s");
        QTest::newRow("left negative") << qint64(-5) << left << QStringLiteral("0.0 s");
        QTest::newRow("left 42 s") << qint64(41'001) << left << QStringLiteral("42 s");  // rounded up
        QTest::newRow("left 3 m 12 s") << qint64(192'000) << left << QStringLiteral("3 m 12 s");
        QTest::newRow("left 14 m 00 s") << qint64(14 * MINUTE) << left << QStringLiteral("14 m 00 s");
        QTest::newRow("left 5 h 03 m") << qint64(5 * HOUR + 3 * MINUTE) << left << QStringLiteral("5 h 03 m");
        QTest::newRow("left 6 d 23 h") << qint64(7 * DAY - HOUR) << left << QStringLiteral("6 d 23 h");
        QTest::newRow("left 7 d 0 h") << qint64(7 * DAY) << left << QStringLiteral("7 d 0 h");
        QTest::newRow("length 3 s") << qint64(3000) << length << QStringLiteral("3 s");
        QTest::newRow("length 1500 ms") << qint64(1500) << length << QStringLiteral("1500 ms");
        QTest::newRow("length 90 min") << qint64(90 * MINUTE) << length << QStringLiteral("90 min");
        QTest::newRow("length 36 h") << qint64(36 * HOUR) << length << QStringLiteral("36 h");
        QTest::newRow("length 1 day") << qint64(DAY) << length << QStringLiteral("1 day");
        QTest::newRow("length 2 days") << qint64(2 * DAY) << length << QStringLiteral("2 days");
        QTest::newRow("per s") << qint64(1000) << per << QStringLiteral("s");
        QTest::newRow("per min") << qint64(MINUTE) << per << QStringLiteral("min");
        QTest::newRow("per h") << qint64(HOUR) << per << QStringLiteral("h");
        QTest::newRow("per day") << qint64(DAY) << per << QStringLiteral("day");
        QTest::newRow("per 5 min") << qint64(5 * MINUTE) << per << QStringLiteral("5 min");
        QTest::newRow("for ever") << qint64(0) << for_ << QStringLiteral("permanently");
        QTest::newRow("for 1 hour") << qint64(HOUR) << for_ << QStringLiteral("for 1 hour");
        QTest::newRow("for 24 hours") << qint64(DAY) << for_ << QStringLiteral("for 24 hours");
        QTest::newRow("for 36 hours") << qint64(36 * HOUR) << for_ << QStringLiteral("for 36 hours");
        QTest::newRow("for 7 days") << qint64(7 * DAY) << for_ << QStringLiteral("for 7 days");
        QTest::newRow("for 1 h 30 m") << qint64(90 * MINUTE) << for_ << QStringLiteral("for 1 h 30 m");
        QTest::newRow("ago now") << qint64(0) << ago << QStringLiteral("now");
        QTest::newRow("ago 3 s") << qint64(3000) << ago << QStringLiteral("-3 s");
        QTest::newRow("ago 5 min") << qint64(5 * MINUTE) << ago << QStringLiteral("-5m");
        QTest::newRow("ago 4:30") << qint64(270'000) << ago << QStringLiteral("-4:30");
        QTest::newRow("since 0.4 s") << qint64(400) << since << QStringLiteral("0.4 s ago");
        QTest::newRow("since 42 s") << qint64(41'001) << since << QStringLiteral("42 s ago");
        QTest::newRow("since 3 m 12 s") << qint64(192'000) << since << QStringLiteral("3 m 12 s ago");
    }

    void durationsByWhatTheOperatorReads()
    {
        QFETCH(qint64, ms);
        QFETCH(int, span);
        QFETCH(QString, text);
        QCOMPARE(formatDuration(ms, Span(span)), text);
    }

    // The Clients view's count (issue 28.5): every kind of tracked key
    // named, and why the table shows fewer clients than are tracked.
    void theClientsCountSaysWhatIsTracked_data()
    {
        QTest::addColumn<quint64>("clients");
        QTest::addColumn<quint64>("customers");
        QTest::addColumn<quint64>("ruleKeys");
        QTest::addColumn<quint64>("rangeReads");
        QTest::addColumn<int>("listed");
        QTest::addColumn<int>("shown");
        QTest::addColumn<bool>("filtered");
        QTest::addColumn<QString>("text");
        QTest::newRow("all") << quint64(13) << quint64(0) << quint64(0) << quint64(0) << 13 << 13 << false << QStringLiteral("13 clients tracked: all shown");
        QTest::newRow("customers") << quint64(15) << quint64(3) << quint64(0) << quint64(0) << 15 << 15 << false
                                   << QStringLiteral("18 tracked: 15 clients (all shown), 3 API customers");
        QTest::newRow("every kind") << quint64(13) << quint64(1) << quint64(4) << quint64(2) << 13 << 13 << false
                                    << QStringLiteral("20 tracked: 13 clients (all shown), 1 API customer, 4 keys of More rules, 2 Range reads");
        QTest::newRow("filter") << quint64(13) << quint64(0) << quint64(0) << quint64(0) << 13 << 2 << true
                                << QStringLiteral("13 clients tracked: 2 match the filter");
        QTest::newRow("busiest") << quint64(20000) << quint64(3) << quint64(0) << quint64(0) << 500 << 500 << false
                                 << QStringLiteral("20,003 tracked: 20,000 clients (the 500 busiest shown), 3 API customers");
        QTest::newRow("one") << quint64(1) << quint64(0) << quint64(0) << quint64(1) << 1 << 1 << true
                             << QStringLiteral("2 tracked: 1 client (1 matches the filter), 1 Range read");
        QTest::newRow("busiest, filter") << quint64(20000) << quint64(0) << quint64(0) << quint64(0) << 500 << 7 << true
                                         << QStringLiteral("20,000 clients tracked: of the 500 busiest, 7 match the filter");
    }

    void theClientsCountSaysWhatIsTracked()
    {
        QFETCH(quint64, clients);
        QFETCH(quint64, customers);
        QFETCH(quint64, ruleKeys);
        QFETCH(quint64, rangeReads);
        QFETCH(int, listed);
        QFETCH(int, shown);
        QFETCH(bool, filtered);
        QFETCH(QString, text);
        Core::TrackedKeys t;
        t.clients = clients;
        t.customers = customers;
        t.ruleKeys = ruleKeys;
        t.rangeReads = rangeReads;
        QCOMPARE(ClientsView::countText(t, listed, shown, filtered), text);
    }

    // The status bar on its own: the mode (DRY RUN first when on), the last
    // complete second, the clients seen in the last minute, the database; the rates stay put
    // while no new second has completed.
    void theStatusBarSaysWhatTheSnapshotSays()
    {
        ConsoleServices services;
        services.modeText = "decision mode";
        services.databasePath = "/var/lib/floodgate/floodgate.db";
        StatusBar bar(services);
        auto s = snapshot(T0);
        s->buckets.keys = 42;
        Core::SecondCounts second;
        second.byAction[std::size_t(Core::Action::Allow)] = 5;
        second.byAction[std::size_t(Core::Action::Throttle)] = 2;
        second.byAction[std::size_t(Core::Action::Block)] = 1;
        s->seconds = {second};
        bar.apply(*s);
        QCOMPARE(bar.text(StatusBar::Mode), QStringLiteral("decision mode"));
        QCOMPARE(bar.text(StatusBar::Rate), QStringLiteral("8 requests/s · 3 refused/s"));
        // The clients seen in the last minute, as Live traffic's tile counts them (issue 28.5).
        QCOMPARE(bar.text(StatusBar::Clients), QStringLiteral("42 clients seen in the last minute"));
        QCOMPARE(bar.text(StatusBar::Database), QStringLiteral("Database: /var/lib/floodgate/floodgate.db"));

        auto next = snapshot(T0 + 250);  // no second completed since
        Core::EngineConfig dry = Core::defaultConfig();
        dry.settings.dryRun = true;
        next->config = std::make_shared<const Core::EngineConfig>(dry);
        next->buckets.keys = 43;
        bar.apply(*next);
        QCOMPARE(bar.text(StatusBar::Rate), QStringLiteral("8 requests/s · 3 refused/s"));
        QCOMPARE(bar.text(StatusBar::Mode), QStringLiteral("<b>DRY RUN</b> · decision mode"));
        QCOMPARE(bar.text(StatusBar::Clients), QStringLiteral("43 clients seen in the last minute"));

        auto dryRunSecond = snapshot(T0 + 1000);
        Core::SecondCounts wouldBe;
        wouldBe.byAction[std::size_t(Core::Action::Allow)] = 4;
        wouldBe.byAction[std::size_t(Core::Action::DryRun)] = 6;
        dryRunSecond->seconds = {wouldBe};
        bar.apply(*dryRunSecond);
        QCOMPARE(bar.text(StatusBar::Rate), QStringLiteral("10 requests/s · 0 refused/s · 6 would be"));
    }

    // The cluster's part of the status bar on its own: hidden on a single
    // node; the nodes and the round trip when up; what each node does when
    // Redis is down, for each when_cluster_down.
    void theClusterIndicatorSaysTheStateAndWhatDownMeans()
    {
        ConsoleServices services;
        services.modeText = "decision mode";
        StatusBar bar(services);
        bar.show();
        QToolButton* indicator = bar.clusterIndicator();
        auto single = snapshot(T0);
        bar.apply(*single);
        QVERIFY(indicator->isHidden());

        auto up = snapshot(T0 + 250);
        up->cluster = clusterUp(up->now);
        bar.apply(*up);
        QVERIFY(!indicator->isHidden());
        QCOMPARE(indicator->text(), QStringLiteral("Cluster: 3 nodes · Redis up · 0.3 ms"));
        QVERIFY(indicator->toolTip().contains(QStringLiteral("<b>web-1</b>")));
        QVERIFY(indicator->toolTip().contains(QStringLiteral("redis://:***@10.0.0.5:6379/0")));
        QVERIFY(indicator->toolTip().contains(QStringLiteral("Click for")));
        const int upWidth = indicator->minimumWidth();

        // No batch yet: no round trip to show. One node: "1 node".
        auto first = snapshot(T0 + 500);
        first->cluster = clusterUp(first->now);
        first->cluster->batches = 0;
        first->cluster->nodesCounting = 1;
        bar.apply(*first);
        QCOMPARE(indicator->text(), QStringLiteral("Cluster: 1 node · Redis up"));
        QCOMPARE(indicator->minimumWidth(), upWidth);  // it does not shrink while the state stays

        auto slow = snapshot(T0 + 750);
        slow->cluster = clusterUp(slow->now);
        slow->cluster->redis = Cluster::ClusterStatus::Redis::Degraded;
        slow->cluster->roundTripMicros = 12'345;
        bar.apply(*slow);
        QCOMPARE(indicator->text(), QStringLiteral("Cluster: 3 nodes · Redis degraded · 12.3 ms"));
        QVERIFY(indicator->palette().color(QPalette::ButtonText) != ClusterText::color(ClusterText::Redis::Down));

        const std::array<std::pair<Core::WhenClusterDown, const char*>, 3> modes = {{
            {Core::WhenClusterDown::Local, "Redis down — each node enforces its share (when_cluster_down: local)"},
            {Core::WhenClusterDown::Open, "Redis down — each node enforces the whole limit alone (when_cluster_down: open)"},
            {Core::WhenClusterDown::Closed, "Redis down — counted requests are refused (when_cluster_down: closed)"},
        }};
        for (const auto& [mode, text] : modes) {
            auto down = snapshot(T0 + 1000);
            Core::EngineConfig c = Core::defaultConfig();
            c.settings.whenClusterDown = mode;
            down->config = std::make_shared<const Core::EngineConfig>(c);
            down->cluster = clusterUp(down->now);
            down->cluster->redis = Cluster::ClusterStatus::Redis::Down;
            down->cluster->breakerOpen = true;
            bar.apply(*down);
            QCOMPARE(indicator->text(), QString::fromUtf8(text));
            QCOMPARE(indicator->palette().color(QPalette::ButtonText), ClusterText::color(ClusterText::Redis::Down));
            QVERIFY(indicator->toolTip().contains(QStringLiteral("While Redis is out of reach")));
        }
        QCOMPARE(ClusterText::whenDown(Core::WhenClusterDown::Local, false, 3),
                 QStringLiteral("While Redis is out of reach, each node enforces its share of every limit: the limit ÷ 3 "
                                "(rounded up) for the 3 nodes last counted (when_cluster_down: local)."));
        bar.apply(*single);
        QVERIFY(indicator->isHidden());
    }

    // The nodes as heard from Redis: merged by name, this node marked, a
    // heartbeat older than Tuning::clusterAliveMs shown as not counting.
    void clusterNodesMergeByNameAndMarkThisOne()
    {
        ClusterNodesModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto s1 = snapshot(T0);
        s1->cluster = clusterUp(s1->now);
        model.apply(*s1);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(0, ClusterNodesModel::Name).data().toString(), QStringLiteral("web-1 (this node)"));
        QVERIFY(model.index(0, 0).data(ClusterNodesModel::SelfRole).toBool());
        QVERIFY(model.index(0, ClusterNodesModel::Name).data(Qt::FontRole).value<QFont>().bold());
        QCOMPARE(model.index(0, ClusterNodesModel::Heartbeat).data().toString(), QStringLiteral("0.4 s ago"));
        QCOMPARE(model.index(1, ClusterNodesModel::Rate).data().toString(), QStringLiteral("12.0/s"));
        QCOMPARE(model.index(1, ClusterNodesModel::Address).data().toString(), QStringLiteral("http://10.0.0.12:8080"));
        QVERIFY(model.index(2, 0).data(ClusterNodesModel::CountingRole).toBool());

        // web-3 falls silent, web-2 leaves, web-4 joins.
        auto s2 = snapshot(T0 + 5000);
        s2->cluster = clusterUp(s2->now);
        s2->cluster->nodes = {node("web-1", "http://10.0.0.11:8080", s2->now - 100, 30.0, true), node("web-3", "http://10.0.0.13:8080", T0 - 1200, 0.5),
                              node("web-4", "http://10.0.0.14:8080", s2->now - 300, 8.0)};
        model.apply(*s2);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.rowOf(QStringLiteral("web-2")), -1);
        const int silent = model.rowOf(QStringLiteral("web-3"));
        QVERIFY(silent >= 0);
        QVERIFY(!model.index(silent, 0).data(ClusterNodesModel::CountingRole).toBool());
        QCOMPARE(model.index(silent, ClusterNodesModel::Heartbeat).data().toString(), QStringLiteral("6.2 s ago"));
        QVERIFY(model.index(silent, ClusterNodesModel::Heartbeat).data(Qt::ToolTipRole).toString().startsWith(QStringLiteral("Silent for")));
        QVERIFY(model.rowOf(QStringLiteral("web-4")) >= 0);

        // A single node's snapshot: no rows.
        model.apply(*snapshot(T0 + 6000));
        QCOMPARE(model.rowCount(), 0);
    }

    // Changes that never reached the cluster (ClusterStatus::droppedChanges):
    // the Cluster window says nothing while there are none, and says how
    // many and what to do once there are.
    void theClusterWindowShowsDroppedChangesOnlyWhenThereAreSome()
    {
        ClusterDialog dialog;
        dialog.show();
        auto none = snapshot(T0);
        none->cluster = clusterUp(none->now);
        dialog.apply(*none);
        QVERIFY(dialog.droppedChanges().isEmpty());

        auto some = snapshot(T0 + 250);
        some->cluster = clusterUp(some->now);
        some->cluster->droppedChanges = 1234;
        dialog.apply(*some);
        const QString text = dialog.droppedChanges();
        QVERIFY2(text.startsWith(formatCount(1234) + QStringLiteral(" changes made on this node never reached the other nodes")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("more than %1 waited").arg(formatCount(100'000))), qPrintable(text));
        QCOMPARE(ClusterText::droppedChanges(1).left(9), QStringLiteral("1 change "));

        dialog.apply(*none);  // a node restarted: none again
        QVERIFY(dialog.droppedChanges().isEmpty());
    }

    // What came from Redis and was refused here, and a refused levelling
    // (docs/CLUSTER.md, "Who may change the shared state"): shown only when
    // it happened, each with its last line.
    void theClusterWindowShowsRefusedChangesAndLevellings()
    {
        ClusterDialog dialog;
        dialog.show();
        auto none = snapshot(T0);
        none->cluster = clusterUp(none->now);
        dialog.apply(*none);
        QVERIFY(dialog.sharedProblems().isEmpty());

        auto some = snapshot(T0 + 250);
        some->cluster = clusterUp(some->now);
        some->cluster->refusedChanges = 3;
        some->cluster->lastRefused = "a change from the cluster (safelist 0.0.0.0/0) was not applied here: its tag does not verify";
        some->cluster->levellingRefused = "levelling with the cluster would have removed 12 blocklist that this node holds";
        dialog.apply(*some);
        const QString text = dialog.sharedProblems();
        QVERIFY2(text.contains(QStringLiteral("Not levelled with the cluster: levelling with the cluster would have removed 12 blocklist")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("3 changes read from Redis were refused")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("safelist 0.0.0.0/0")), qPrintable(text));
        QVERIFY(dialog.droppedChanges().isEmpty());
    }

    // A client's count here and in the cluster, in the clients table.
    void theClientsTableSaysHereAndInTheCluster()
    {
        ClientsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto s = snapshot(T0);
        ClientRow r = client("203.0.113.9", 4, 1.0);
        r.summary.bindingUsed = 5;
        r.summary.bindingUsedHere = 2;
        s->clients = {r};
        model.apply(*s);
        QVERIFY(!model.clustered());
        QCOMPARE(model.headerData(ClientsModel::Use, Qt::Horizontal, Qt::DisplayRole).toString(), QStringLiteral("Binding limit"));
        QVERIFY(!model.index(0, ClientsModel::Use).data(Qt::ToolTipRole).toString().contains(QStringLiteral("cluster")));

        s->cluster = clusterUp(s->now);
        model.apply(*s);
        QVERIFY(model.clustered());
        QCOMPARE(model.headerData(ClientsModel::Use, Qt::Horizontal, Qt::DisplayRole).toString(), QStringLiteral("Binding limit (cluster)"));
        QCOMPARE(model.index(0, ClientsModel::Use).data().toString(), QStringLiteral("5 / 6  ip-3s"));
        QCOMPARE(model.index(0, ClientsModel::Here).data().toUInt(), 2u);
        QVERIFY(model.index(0, ClientsModel::Use).data(Qt::ToolTipRole).toString().contains(QStringLiteral("2 here · 5 in the cluster")));
        // This node's own columns say so.
        for (int column : {int(ClientsModel::Last3s), int(ClientsModel::Last60s), int(ClientsModel::Rate)}) {
            QVERIFY(model.index(0, column).data(Qt::ToolTipRole).toString().contains(QStringLiteral("to this node")));
            QVERIFY(model.headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString().contains(QStringLiteral("to this node")));
        }
        QCOMPARE(model.index(0, ClientsModel::Here).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("The binding level ip-3s: 2 of the 5 requests in the window were counted on this node, 3 on the other "
                                "nodes (as Redis said with this node's last report of the client). The limit (6) is judged on "
                                "the cluster's count, every node's requests together."));
    }
};

QTEST_MAIN(TestModels)
#include "test_models.moc"
