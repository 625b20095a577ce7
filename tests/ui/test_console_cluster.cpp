// SPDX-License-Identifier: GPL-3.0-or-later
// The console on a node of a cluster (docs/CLUSTER.md), its window
// offscreen: a redis-server of the test's own with a password, the Runtime
// started as `floodgate --redis URL --node-name console-a` starts it (the
// console's services made by the app's own consoleServices()), and a second
// node as a `floodgate --headless` process. The status bar's indicator and
// the Cluster window, a client's count here and in the cluster, Redis
// stopped (SIGSTOP) and resumed, and the password nowhere on screen. And a
// single node, which shows nothing of a cluster.
#include <QtTest>

#include "ClusterNodes.h"
#include "app/ConsoleApp.h"
#include "app/Runtime.h"
#include "http/Listener.h"
#include "storage/Store.h"
#include "core/Tuning.h"
#include "wire/Json.h"
#include "ui/BucketsView.h"
#include "ui/ClientsModel.h"
#include "ui/ClientsView.h"
#include "ui/ClusterDialog.h"
#include "ui/ClusterModel.h"
#include "ui/ClusterText.h"
#include "ui/Console.h"
#include "ui/MainWindow.h"
#include "ui/StatusBar.h"

#include <QLabel>
#include <QTableView>
#include <QToolButton>
#include <QUrl>

#include <cstdlib>
#include <functional>
#include <memory>

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

const std::string PASSWORD = "s3cret-Console-pw";

// One node with its console: the Runtime and the window, as runConsole()
// makes them, on a database in a folder of its own.
struct ConsoleNode {
    QTemporaryDir dir;
    QString db = dir.filePath(QStringLiteral("floodgate.db"));
    Core::SystemClock clock;
    App::Options options;
    std::unique_ptr<App::Runtime> runtime;
    std::unique_ptr<Ui::Console> console;
    std::unique_ptr<Ui::MainWindow> window;

    QString start(std::optional<Floodgate::Cluster::RedisUrl> redis, const std::string& name = "console-a")
    {
        options.db = db.toStdString();
        options.listen = {"127.0.0.1", 0};
        options.admin = App::HostPort{"127.0.0.1", 0};  // for what /api/v1/cluster says beside the window
        options.threads = 1;
        options.redis = std::move(redis);
        options.nodeName = name;
        options.clusterKeyFile = FloodgateTest::clusterKeyFile().toStdString();
        runtime = std::make_unique<App::Runtime>(clock);
        if (auto failure = runtime->start(options))
            return QString::fromStdString(failure->message);
        console = std::make_unique<Ui::Console>(App::consoleServices(*runtime, options));
        window = std::make_unique<Ui::MainWindow>(*console);
        window->resize(1366, 768);
        window->show();
        console->refreshNow();
        return {};
    }
    ~ConsoleNode()
    {
        // The window and the console first: they read the runtime.
        window.reset();
        console.reset();
        if (runtime)
            runtime->stop();
    }

    QToolButton* indicator() const { return window->status()->clusterIndicator(); }
    // Takes snapshots (as the 4 Hz timer would) until `done`, at most `ms`.
    bool refreshUntil(const std::function<bool()>& done, int ms)
    {
        QDeadlineTimer deadline(ms);
        do {
            console->refreshNow();
            QCoreApplication::processEvents();
            if (done())
                return true;
            QTest::qWait(50);
        } while (!deadline.hasExpired());
        return false;
    }
    std::uint16_t port() const { return runtime->listener().port(); }
    // "http://127.0.0.1:PORT" -> PORT.
    std::uint16_t adminPort() const { return std::uint16_t(QUrl(QString::fromStdString(runtime->adminUrl())).port()); }
    // GET `target` on this node's admin API, as JSON (null when it is not).
    Wire::Json api(const std::string& target)
    {
        if (token.empty())
            token = adminToken(db);
        return Wire::Json::parse(call(adminPort(), get(target, bearer(token))).body).value_or(Wire::Json());
    }
    std::string token;
};

// Every text the operator can read in the cluster's parts of the window:
// the indicator and its tooltip, every label of the Cluster window and its
// tooltip, every cell and tooltip of its nodes table.
QStringList clusterTexts(const ConsoleNode& n)
{
    QStringList out{n.indicator()->text(), n.indicator()->toolTip()};
    if (Ui::ClusterDialog* d = n.window->clusterDialog()) {
        for (const QLabel* l : d->findChildren<QLabel*>())
            out << l->text() << l->toolTip();
        const QAbstractItemModel* m = d->nodes();
        for (int r = 0; r < m->rowCount(); ++r)
            for (int c = 0; c < m->columnCount(); ++c)
                for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)})
                    out << m->index(r, c).data(role).toString();
    }
    return out;
}

int rowNamed(const QAbstractItemModel& m, const QString& name)
{
    for (int r = 0; r < m.rowCount(); ++r)
        if (m.index(r, Ui::ClusterNodesModel::Name).data(Ui::ClusterNodesModel::SortRole).toString() == name)
            return r;
    return -1;
}

} // namespace

class TestConsoleCluster : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // No window geometry or last view from a developer's own settings.
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("FloodgateTest"));
    }

    // A single node (no --redis): no indicator, no "This node" column, no
    // Cluster window, and the buckets' titles as they always were.
    void aSingleNodeShowsNothingOfACluster()
    {
        ConsoleNode n;
        const QString failed = n.start(std::nullopt);
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        QCOMPARE(fetch(n.port(), get("/"), 3000, "127.0.0.66").value_or(Response{}).status, 200);
        n.window->showView(Ui::MainWindow::Clients);
        QVERIFY(n.refreshUntil([&] { return n.window->clients()->model()->rowOf(QStringLiteral("127.0.0.66")) >= 0; }, 3000));
        QVERIFY(!n.console->latest()->cluster);
        QVERIFY(n.indicator()->isHidden());
        QVERIFY(!n.indicator()->isVisible());
        QVERIFY(n.window->clients()->table()->isColumnHidden(Ui::ClientsModel::Here));
        QCOMPARE(n.window->clients()->model()->headerData(Ui::ClientsModel::Use, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("Binding limit"));
        n.window->showCluster();  // what a click on the indicator does: nothing to show here
        QVERIFY(!n.window->clusterDialog());
        n.window->buckets()->follow(QStringLiteral("127.0.0.66"));
        n.window->showView(Ui::MainWindow::Buckets);
        n.console->refreshNow();
        QVERIFY(n.window->buckets()->levelCharts() > 0);
        QVERIFY2(n.window->buckets()->levelTitle(0).contains(QStringLiteral("in the window")), qPrintable(n.window->buckets()->levelTitle(0)));
        QVERIFY(!n.window->buckets()->levelTitle(0).contains(QStringLiteral("cluster")));
    }

    void theConsoleShowsItsClusterAndRedisGoingDownAndBack()
    {
        RedisServer redis;
        QVERIFY2(redis.start({QStringLiteral("--requirepass"), QString::fromStdString(PASSWORD)}), qPrintable(redis.error()));
        std::string why;
        auto url = Floodgate::Cluster::RedisUrl::parse(redis.nodeUrl(), &why);
        QVERIFY2(url, why.c_str());

        // The same rule on both nodes (each keeps its own rules), with a long
        // window so the counts below stay put while the test reads them:
        // 100 per 10 min per address.
        FloodgateTest::Cluster others(redis);
        Node* b = others.start(QStringLiteral("b"));
        QVERIFY(b);
        QVERIFY(putJson(*b, "/api/v1/rules", R"({"rules":[{"name":"ip","levels":[{"limit":100,"period":600}]}]})"));
        ConsoleNode a;
        const QString failed = a.start(url);
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        const Storage::Outcome o = a.runtime->store().wait([&](auto done) {
            a.runtime->store().updateRules(
                [](Core::EngineConfig& c) -> std::optional<std::string> {
                    Core::ThrottleRule ip;
                    ip.name = "ip";
                    Core::Level l;
                    l.limit = 100;
                    l.periodMs = 10 * Core::MINUTE;
                    ip.levels = {l};
                    c.rules = {ip};
                    return std::nullopt;
                },
                Storage::Actor{"test"}, done);
        });
        QVERIFY2(o.ok(), o.error.c_str());
        // From here the window takes snapshots as runConsole's does: four a second.
        a.console->startUpdates();

        // 1. Up, with both nodes' heartbeats (once a second each), before any
        // counted request: no round trip to show yet.
        QToolButton* indicator = a.indicator();
        QTRY_COMPARE_WITH_TIMEOUT(indicator->text(), QStringLiteral("Cluster: 2 nodes · Redis up"), 5000);
        QVERIFY(indicator->isVisible());
        const QString redacted = QStringLiteral("redis://:***@127.0.0.1:%1").arg(redis.port());
        QVERIFY2(indicator->toolTip().contains(redacted) && indicator->toolTip().contains(QStringLiteral("console-a")),
                 qPrintable(indicator->toolTip()));

        // 2. A click opens the Cluster window: both nodes, this one marked,
        // b's address and request rate as b's heartbeat says them.
        QTest::mouseClick(indicator, Qt::LeftButton);
        Ui::ClusterDialog* dialog = a.window->clusterDialog();
        QVERIFY(dialog);
        QVERIFY(QTest::qWaitForWindowExposed(dialog));
        const QAbstractItemModel& nodes = *dialog->nodes();
        QCOMPARE(nodes.rowCount(), 2);
        const int self = rowNamed(nodes, QStringLiteral("console-a"));
        const int other = rowNamed(nodes, QStringLiteral("b"));
        QVERIFY(self >= 0 && other >= 0);
        QCOMPARE(nodes.index(self, 0).data(Ui::ClusterNodesModel::SelfRole).toBool(), true);
        QCOMPARE(nodes.index(other, 0).data(Ui::ClusterNodesModel::SelfRole).toBool(), false);
        QCOMPARE(nodes.index(self, Ui::ClusterNodesModel::Name).data().toString(), QStringLiteral("console-a (this node)"));
        // Each node's real port (both listen on port 0), as the next
        // heartbeats say once the listeners listen: within a second.
        QTRY_COMPARE_WITH_TIMEOUT(nodes.index(rowNamed(nodes, QStringLiteral("console-a")), Ui::ClusterNodesModel::Address).data().toString(),
                                  QStringLiteral("http://127.0.0.1:%1").arg(a.port()), 3000);
        QTRY_COMPARE_WITH_TIMEOUT(nodes.index(rowNamed(nodes, QStringLiteral("b")), Ui::ClusterNodesModel::Address).data().toString(),
                                  QStringLiteral("http://127.0.0.1:%1").arg(b->port()), 3000);
        // A heartbeat once a second: never older than the 3 s a node counts for.
        for (int row : {self, other}) {
            const QString ago = nodes.index(row, Ui::ClusterNodesModel::Heartbeat).data().toString();
            QVERIFY2(ago.endsWith(QStringLiteral(" s ago")), qPrintable(ago));
            QVERIFY(nodes.index(row, 0).data(Ui::ClusterNodesModel::CountingRole).toBool());
            QVERIFY(nodes.index(row, Ui::ClusterNodesModel::Heartbeat).data(Ui::ClusterNodesModel::SortRole).toLongLong()
                    <= Core::Tuning::clusterAliveMs);
        }
        QCOMPARE(dialog->figure(Ui::ClusterDialog::State), QStringLiteral("Redis up"));
        QVERIFY(dialog->figure(Ui::ClusterDialog::Breaker).startsWith(QStringLiteral("closed")));
        QVERIFY(dialog->heading().contains(redacted));

        // 3. One client's requests on both nodes: 2 on b, then 3 here. The
        // console shows this node's 3 and the cluster's 5, which the limit
        // is judged on (once this node's report brings back b's counts).
        for (int i = 0; i < 2; ++i)
            QCOMPARE(call(b->port(), get("/"), "127.0.0.77").status, 200);
        // b reports its first request at once and spends its lease on the
        // second without reporting until the lease is about to end: far
        // below its limit, the client has its quiet lease (10 to 20 s,
        // Core::quietLeaseMs, ended a margin early, reported a margin before
        // that). Wait for that report, so Redis holds b's 2 when this node
        // reports: b's field of the entry says 2 in all
        // ("written;leaseUntil;lease;stamp,lockedUntil,total,...").
        const auto bReported = [&](unsigned total) {
            for (const auto& [key, field] : FloodgateTest::entryFields(redis, "b")) {
                const auto level = field.find(';', field.find(';', field.find(';') + 1) + 1);
                const auto comma = field.find(',', field.find(',', level) + 1);
                if (level != std::string::npos && comma != std::string::npos && std::strtoul(field.c_str() + comma + 1, nullptr, 10) == total)
                    return true;
            }
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(bReported(2),
                                 int(Core::Tuning::clusterQuietReportMs + Core::Tuning::clusterQuietSpreadMs - 2 * Core::Tuning::clusterLeaseMarginMs + 1000));
        for (int i = 0; i < 3; ++i)
            QCOMPARE(call(a.port(), get("/"), "127.0.0.77").status, 200);
        a.window->showView(Ui::MainWindow::Clients);
        Ui::ClientsModel* clients = a.window->clients()->model();
        auto cell = [&](int column, int role = Qt::DisplayRole) {
            const int row = clients->rowOf(QStringLiteral("127.0.0.77"));
            return row < 0 ? QVariant() : clients->index(row, column).data(role);
        };
        QTRY_COMPARE_WITH_TIMEOUT(cell(Ui::ClientsModel::Use, Ui::ClientsModel::UsedRole).toUInt(), 5u, 6000);
        QCOMPARE(cell(Ui::ClientsModel::Here).toUInt(), 3u);
        QCOMPARE(cell(Ui::ClientsModel::Use).toString(), QStringLiteral("5 / 100  ip-10m"));
        QVERIFY(!a.window->clients()->table()->isColumnHidden(Ui::ClientsModel::Here));
        QCOMPARE(cell(Ui::ClientsModel::Here, Qt::ToolTipRole).toString(),
                 QStringLiteral("The binding level ip-10m: 3 of the 5 requests in the window were counted on this node, 2 on the "
                                "other nodes (as Redis said with this node's last report of the client). The limit (100) is "
                                "judged on the cluster's count, every node's requests together."));
        QVERIFY(cell(Ui::ClientsModel::Use, Qt::ToolTipRole).toString().contains(QStringLiteral("3 here · 5 in the cluster")));
        a.window->buckets()->follow(QStringLiteral("127.0.0.77"));
        a.window->showView(Ui::MainWindow::Buckets);
        QTRY_COMPARE_WITH_TIMEOUT(a.window->buckets()->levelCharts(), 1, 3000);
        QTRY_VERIFY2_WITH_TIMEOUT(a.window->buckets()->levelTitle(0).contains(QStringLiteral("5 of 100 in the cluster (3 here) · 95 left")),
                                  qPrintable(a.window->buckets()->levelTitle(0)), 3000);
        QVERIFY(a.window->buckets()->levelToolTip(0).contains(QStringLiteral("judged on the cluster's count")));
        // The admin API says the same: the console reads the status and the
        // counts /api/v1/cluster and /api/v1/clients/{address} are made of.
        const Wire::Json client = a.api("/api/v1/clients/127.0.0.77");
        const Wire::Json* levels = client.find("levels");
        QVERIFY2(levels && levels->isArray() && levels->asArray().size() == 1, client.dump().c_str());
        QCOMPARE(levels->asArray()[0].find("used")->asInteger(), 5);
        QCOMPARE(levels->asArray()[0].find("used_here")->asInteger(), 3);
        const Wire::Json api = a.api("/api/v1/cluster");
        QVERIFY2(api.find("counting_nodes") && api.find("nodes"), api.dump().c_str());
        QCOMPARE(api.find("counting_nodes")->asInteger(), 2);
        QCOMPARE(int(api.find("nodes")->asArray().size()), nodes.rowCount());
        for (const Wire::Json& n : api.find("nodes")->asArray()) {
            const int row = rowNamed(nodes, QString::fromStdString(n.find("name")->asString()));
            QVERIFY2(row >= 0, n.dump().c_str());
            QCOMPARE(nodes.index(row, Ui::ClusterNodesModel::Address).data().toString(), QString::fromStdString(n.find("address")->asString()));
            QCOMPARE(nodes.index(row, 0).data(Ui::ClusterNodesModel::SelfRole).toBool(), n.find("self")->asBool());
        }
        // A batch has gone to Redis: the indicator shows its round trip, the
        // window the same one and the sync lag.
        QTRY_VERIFY2_WITH_TIMEOUT(indicator->text().endsWith(QStringLiteral(" ms")), qPrintable(indicator->text()), 3000);
        QVERIFY(dialog->figure(Ui::ClusterDialog::RoundTrip).endsWith(QStringLiteral(" ms")));
        QVERIFY(indicator->text().endsWith(dialog->figure(Ui::ClusterDialog::RoundTrip))
                || indicator->text().contains(QStringLiteral("Redis degraded")));
        QVERIFY(dialog->figure(Ui::ClusterDialog::SyncLag).endsWith(QStringLiteral(" ms")));

        // 4. Redis stopped (SIGSTOP: it still accepts connections, nothing
        // answers): the next call misses its 250 ms deadline and the breaker
        // opens; the indicator turns red and says what each node does now.
        redis.pause();
        QTRY_VERIFY2_WITH_TIMEOUT(indicator->text().startsWith(QStringLiteral("Redis down")), qPrintable(indicator->text()), 5000);
        QCOMPARE(indicator->text(), QStringLiteral("Redis down — each node enforces its share (when_cluster_down: local)"));
        QCOMPARE(indicator->palette().color(QPalette::ButtonText), Ui::ClusterText::color(Ui::ClusterText::Redis::Down));
        QVERIFY(dialog->isVisible());
        QTRY_COMPARE_WITH_TIMEOUT(dialog->figure(Ui::ClusterDialog::State), QStringLiteral("Redis down"), 2000);
        QVERIFY2(dialog->figure(Ui::ClusterDialog::Breaker).contains(QStringLiteral("open")), qPrintable(dialog->figure(Ui::ClusterDialog::Breaker)));
        QVERIFY(dialog->figure(Ui::ClusterDialog::Errors).toInt() >= 1);
        const QString lastError = dialog->figure(Ui::ClusterDialog::LastError);
        QVERIFY2(lastError.contains(QStringLiteral("127.0.0.1:%1").arg(redis.port())), qPrintable(lastError));
        QVERIFY(!lastError.contains(QLatin1Char('\n')));
        QVERIFY2(dialog->whenDown().contains(QStringLiteral("its share of every limit")), qPrintable(dialog->whenDown()));
        const Wire::Json down = a.api("/api/v1/cluster");
        QVERIFY2(down.find("redis") && down.find("redis")->find("state"), down.dump().c_str());
        QCOMPARE(down.find("redis")->find("state")->asString(), std::string("down"));
        QCOMPARE(down.find("redis")->find("breaker")->asString(), std::string("open"));
        for (const QString& text : clusterTexts(a))
            QVERIFY2(!text.contains(QString::fromStdString(PASSWORD)), qPrintable(text));

        // 5. Resumed: the breaker closes within its once-a-second retry;
        // "degraded" while the error is recent (10 s), then up again.
        redis.resume();
        QTRY_VERIFY2_WITH_TIMEOUT(indicator->text().startsWith(QStringLiteral("Cluster: 2 nodes · Redis degraded")),
                                  qPrintable(indicator->text()), 5000);
        QVERIFY(indicator->palette().color(QPalette::ButtonText) != Ui::ClusterText::color(Ui::ClusterText::Redis::Down));
        QVERIFY2(dialog->figure(Ui::ClusterDialog::Breaker).startsWith(QStringLiteral("closed · opened")),
                 qPrintable(dialog->figure(Ui::ClusterDialog::Breaker)));
        QTRY_VERIFY2_WITH_TIMEOUT(indicator->text().startsWith(QStringLiteral("Cluster: 2 nodes · Redis up")), qPrintable(indicator->text()),
                                  14000);
        QTRY_COMPARE_WITH_TIMEOUT(dialog->figure(Ui::ClusterDialog::State), QStringLiteral("Redis up"), 2000);
        for (const QString& text : clusterTexts(a))
            QVERIFY2(!text.contains(QString::fromStdString(PASSWORD)), qPrintable(text));
    }
};

QTEST_MAIN(TestConsoleCluster)
#include "test_console_cluster.moc"
