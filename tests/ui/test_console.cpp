// SPDX-License-Identifier: GPL-3.0-or-later
// The console, offscreen, on the real stack (SQLite file, store writer,
// engine, listener on 127.0.0.1): one click on "Block for 7 days" is a
// blocklist row on disk and a 403 for the next request, undoable; editing a
// tier changes the next decision; the address dialog keeps OK disabled for
// bad input; charts stay bounded; the real binary opens and closes cleanly
// with the demo running.
#include <QtTest>

#include "core/CustomerKey.h"
#include <QMessageBox>
#include <QInputDialog>

#ifndef Q_MOC_RUN
#include "ui/AddressDialog.h"
#include "ui/BucketsView.h"
#include "ui/Delegates.h"
#include "ui/ClientsModel.h"
#include "ui/ClientsView.h"
#include "ConsoleStack.h"
#include "ui/EventsView.h"
#include "ui/TierModels.h"
#include "ui/HeatMap.h"
#include "ui/LevelsEditor.h"
#include "ui/ListModel.h"
#include "ui/ListsView.h"
#include "ui/RuleDialog.h"
#include "ui/RulesView.h"
#include "ui/NoticeBar.h"
#include "ui/StatusBar.h"
#include "ui/StreamModels.h"
#include "TestSupport.h"
#include "ui/TierDialogs.h"
#include "ui/Theme.h"
#include "ui/TiersView.h"
#include "ui/ToolBar.h"
#include "ui/TrafficView.h"
#include "ui/WindowActions.h"

#include <QAction>
#include <QCategoryAxis>
#include <QScrollBar>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QLineSeries>
#include <QDateTimeEdit>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTableView>
#include <QTableWidget>
#include <QToolButton>

#include <sqlite3.h>
#include <sys/resource.h>

#include <csignal>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

struct Row {
    QString list, source, createdBy;
    int prefix = 0;
    qint64 ttl = 0;
};

// The list rows as another process would read them from the file.
std::vector<Row> rowsOnDisk(const QString& path)
{
    std::vector<Row> out;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
        return out;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT list, source, created_by, prefix, expires_at - created_at FROM list_entries", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) {
        Row r;
        r.list = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
        r.source = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
        r.createdBy = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 2)));
        r.prefix = sqlite3_column_int(st, 3);
        r.ttl = sqlite3_column_int64(st, 4);
        out.push_back(r);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

// Runs `fn` on the next modal dialog of type T once it is open.
template <class T, class Fn>
void whenDialogOpens(Fn fn)
{
    QTimer::singleShot(0, [fn] {
        for (int i = 0; i < 200; ++i) {
            if (auto* d = qobject_cast<T*>(QApplication::activeModalWidget())) {
                fn(d);
                return;
            }
            QTest::qWait(10);
        }
        QFAIL("the dialog did not open");
    });
}

} // namespace

class TestConsole : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // No window geometry or last view from a developer's own settings.
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("FloodgateTest"));
    }

    void blockForSevenDaysIsOnDiskAndRefusesTheNextRequest()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        for (int i = 0; i < 3; ++i)
            QCOMPARE(s.request("127.0.0.9", "/products/42"), 200);
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Clients);
        // The operator clicks the client's row...
        QTableView* table = w.clients()->table();
        QModelIndex target;
        for (int r = 0; r < table->model()->rowCount(); ++r)
            if (table->model()->index(r, 0).data(Ui::ClientsModel::KeyRole).toString() == QStringLiteral("127.0.0.9"))
                target = table->model()->index(r, Ui::ClientsModel::Customer);
        QVERIFY(target.isValid());
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(target).center());
        QCOMPARE(w.clients()->selectedRanges().size(), std::size_t(1));
        // What the row says before anyone clicks.
        const QModelIndex row = table->selectionModel()->selectedRows().value(0);
        QCOMPARE(row.sibling(row.row(), Ui::ClientsModel::Last60s).data().toInt(), 3);
        QCOMPARE(row.sibling(row.row(), Ui::ClientsModel::Request).data().toString(), QStringLiteral("GET /products/42"));

        const qint64 before = QDateTime::currentMSecsSinceEpoch();
        // ...and "Block for 7 days" in the toolbar.
        QToolButton* block = nullptr;
        for (QToolButton* b : w.findChildren<QToolButton*>())
            if (b->defaultAction() == w.actions().block7d)
                block = b;
        QVERIFY(block && block->isVisible());
        QTest::mouseClick(block, Qt::LeftButton, {}, QPoint(12, block->height() / 2));
        // "Saved" only after COMMIT: by the time the notice shows, the row is in the file.
        QTRY_VERIFY_WITH_TIMEOUT(w.notice()->isVisible(), 5000);
        QCOMPARE(w.notice()->text(), QStringLiteral("Blocked 127.0.0.9 for 7 days."));
        QVERIFY(w.notice()->canUndo());
        const auto rows = rowsOnDisk(s.dbPath);
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].list, QStringLiteral("blocklist"));
        QCOMPARE(rows[0].prefix, 128);
        QCOMPARE(rows[0].source, QStringLiteral("operator"));
        QVERIFY(rows[0].createdBy.startsWith(QStringLiteral("console:")));
        QCOMPARE(rows[0].ttl, qint64(7) * 86'400'000);
        QVERIFY(QDateTime::currentMSecsSinceEpoch() - before < 5000);
        // The very next request from that address is refused; its neighbour passes.
        QCOMPARE(s.request("127.0.0.9"), 403);
        QCOMPARE(s.request("127.0.0.10"), 200);
        s.console->refreshNow();
        QCOMPARE(w.clients()->model()->index(w.clients()->model()->rowOf(QStringLiteral("127.0.0.9")), Ui::ClientsModel::State).data().toString(),
                 QStringLiteral("blocked"));

        // Undo takes it back, on disk and for the next request.
        w.notice()->undo();
        // The notice changes when the removal is committed and applied.
        QTRY_COMPARE_WITH_TIMEOUT(w.notice()->text(), QStringLiteral("Removed 127.0.0.9 again."), 5000);
        QVERIFY(rowsOnDisk(s.dbPath).empty());
        QCOMPARE(s.request("127.0.0.9"), 200);
        // And the audit trail says who did what.
        const auto audit = s.store->audit(-1, 10);
        QCOMPARE(audit.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(audit[0].action), QStringLiteral("list.add"));
        QCOMPARE(QString::fromStdString(audit[1].action), QStringLiteral("list.remove"));
    }

    // limiter.log on a full disk: the problem banner says so once, with the
    // file and the reason; serving goes on. RLIMIT_FSIZE plays the full disk.
    void aLimiterLogThatCannotBeWrittenShowsInTheBanner()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("limiter.log")).toStdString();
        ConsoleStack s(true, path);
        Ui::MainWindow& w = *s.mainWindow;
        QVERIFY(!w.problem()->isVisible());
        ::signal(SIGXFSZ, SIG_IGN);
        rlimit old{};
        ::getrlimit(RLIMIT_FSIZE, &old);
        rlimit full = old;
        full.rlim_cur = rlim_t(QFileInfo(QString::fromStdString(path)).size());  // not one byte more
        QCOMPARE(::setrlimit(RLIMIT_FSIZE, &full), 0);
        for (int i = 0; i < 6; ++i)
            QCOMPARE(s.request("127.0.0.21"), 200);
        QCOMPARE(s.request("127.0.0.21"), 429);  // refused: a line for limiter.log
        s.log.flush();
        QCOMPARE(::setrlimit(RLIMIT_FSIZE, &old), 0);
        QVERIFY(s.log.failed() > 0);
        s.console->refreshNow();
        QTRY_VERIFY_WITH_TIMEOUT(w.problem()->isVisible(), 3000);
        const QString text = w.problem()->text();
        QVERIFY2(text.startsWith(QStringLiteral("limiter.log (")), qPrintable(text));
        QVERIFY2(text.contains(QString::fromStdString(path)) && text.contains(QStringLiteral("File too large")), qPrintable(text));
        QCOMPARE(s.request("127.0.0.22"), 200);  // serving goes on
    }

    void safelistFromTheToolbarAndTheListsView()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        s.request("127.0.0.11");
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Clients);
        QVERIFY(w.clients()->selectAddress(QStringLiteral("127.0.0.11")));
        w.actions().safelist7d->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(w.notice()->text(), QStringLiteral("Safelisted 127.0.0.11 for 7 days."), 5000);
        for (int i = 0; i < 10; ++i)
            QCOMPARE(s.request("127.0.0.11"), 200);  // never throttled
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Lists);
        w.lists()->showList(Core::ListKind::Safelist);
        Ui::ListModel* model = w.lists()->model(Core::ListKind::Safelist);
        QCOMPARE(model->rowCount(), 1);
        QCOMPARE(model->index(0, Ui::ListModel::Address).data().toString(), QStringLiteral("127.0.0.11/32"));
        QCOMPARE(model->index(0, Ui::ListModel::ExpiresIn).data().toString(), QStringLiteral("7 d 0 h"));
    }

    void editingATierChangesTheNextDecision()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        // A customer on Free (100 per hour).
        bool saved = false;
        const Core::NewCustomerKey key = Core::customerKeyFrom(Core::keyDigest("console test key"), 0);
        const std::string asAcme = "X-Api-Key: " + key.secret + "\r\n";
        s.console->putCustomer(Core::Customer{"acme", "Acme Inc.", "Free", {}, {key.key}}, [&](const Storage::Outcome& o) { saved = o.ok(); });
        QTRY_VERIFY_WITH_TIMEOUT(saved, 5000);
        Response r = s.requestFull("127.0.0.20", "/api", asAcme);
        QCOMPARE(r.status, 200);
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")), QStringLiteral("\"free-1h\";q=100;w=3600"));

        s.console->refreshNow();
        w.showView(Ui::MainWindow::Tiers);
        QTableView* tiers = w.tiers()->tiersTable();
        tiers->setCurrentIndex(tiers->model()->index(0, 0));  // Free
        whenDialogOpens<Ui::TierDialog>([](Ui::TierDialog* d) {
            auto* limit = d->levels()->findChildren<QSpinBox*>().value(0);
            QVERIFY(limit);
            limit->setValue(150);
            d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        });
        w.tiers()->editTier();
        QTRY_VERIFY_WITH_TIMEOUT(w.notice()->isVisible(), 5000);
        QCOMPARE(w.notice()->text(), QStringLiteral("Tier Free is now 150 / h; it applies to the next request."));
        r = s.requestFull("127.0.0.20", "/api", asAcme);
        QCOMPARE(r.status, 200);
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")), QStringLiteral("\"free-1h\";q=150;w=3600"));
        QVERIFY2(r.header("ratelimit").rfind("\"free-1h\";r=148;", 0) == 0, r.header("ratelimit").c_str());  // the counts survived
    }

    // Tier names are one namespace, case-insensitively (the store matches
    // "pro" to "Pro"): a new tier named pro is refused with the reason.
    // A customer made in the console gets a key, shown once in a dialog; the
    // key proves the customer to the listener; New key... with its old keys
    // revoked makes the old one anyone's claim. A customer with no key is
    // shown as counted as anonymous.
    void aCustomersKeyIsShownOnceAndProvesIt()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Tiers);
        whenDialogOpens<Ui::CustomerDialog>([](Ui::CustomerDialog* d) {
            d->findChildren<QLineEdit*>().value(0)->setText(QStringLiteral("zed"));
            auto* tier = d->findChild<QComboBox*>();
            tier->setCurrentIndex(tier->findData(QStringLiteral("Pro")));
            d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        });
        w.tiers()->addCustomer();
        auto shownKey = [&]() -> QString {
            auto* dialog = w.tiers()->findChild<QDialog*>(QStringLiteral("newKeyDialog"));
            auto* key = dialog ? dialog->findChild<QLineEdit*>(QStringLiteral("apiKey")) : nullptr;
            return key ? key->text() : QString();
        };
        QTRY_VERIFY_WITH_TIMEOUT(!shownKey().isEmpty(), 5000);
        const QString first = shownKey();
        QVERIFY2(first.startsWith(QStringLiteral("fgk_")) && first.size() == 47, qPrintable(first));
        w.tiers()->findChild<QDialog*>(QStringLiteral("newKeyDialog"))->close();
        QTRY_VERIFY(!w.tiers()->findChild<QDialog*>(QStringLiteral("newKeyDialog")));
        Response r = s.requestFull("127.0.0.21", "/api", "X-Api-Key: " + first.toStdString() + "\r\n");
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")).left(8), QStringLiteral("\"pro-1m\""));

        // The keys column: the key's id; a customer with none is anonymous.
        bool saved = false;
        s.console->putCustomer(Core::Customer{"keyless", "", "Free", {}, {}}, [&](const Storage::Outcome& o) { saved = o.ok(); });
        QTRY_VERIFY_WITH_TIMEOUT(saved, 5000);
        s.console->refreshNow();
        Ui::CustomersModel* model = w.tiers()->customers();
        auto keysOf = [&](const QString& id) {
            for (int row = 0; row < model->rowCount(); ++row)
                if (model->index(row, Ui::CustomersModel::Id).data().toString() == id)
                    return model->index(row, Ui::CustomersModel::Keys).data().toString();
            return QStringLiteral("(no row)");
        };
        QCOMPARE(keysOf(QStringLiteral("zed")), first.left(12) + QStringLiteral("…"));
        QCOMPARE(keysOf(QStringLiteral("keyless")), QStringLiteral("none: counted as anonymous"));

        // New key... for zed, its old key revoked at once.
        QTableView* table = nullptr;
        for (QTableView* t : w.tiers()->findChildren<QTableView*>())
            if (t->model() == model)
                table = t;
        QVERIFY(table);
        for (int row = 0; row < model->rowCount(); ++row)
            if (model->index(row, Ui::CustomersModel::Id).data().toString() == QStringLiteral("zed"))
                table->setCurrentIndex(model->index(row, 0));
        whenDialogOpens<QInputDialog>([](QInputDialog* d) {
            d->setTextValue(d->comboBoxItems().value(0));  // "Revoke its other keys at once"
            d->accept();
        });
        w.tiers()->newKey();
        QTRY_VERIFY_WITH_TIMEOUT(!shownKey().isEmpty() && shownKey() != first, 5000);
        const QString second = shownKey();
        r = s.requestFull("127.0.0.22", "/api", "X-Api-Key: " + second.toStdString() + "\r\n");
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")).left(8), QStringLiteral("\"pro-1m\""));
        r = s.requestFull("127.0.0.23", "/api", "X-Api-Key: " + first.toStdString() + "\r\n");
        QCOMPARE(QString::fromStdString(r.header("ratelimit-policy")).left(7), QStringLiteral("\"ip-3s\""));
    }

    void aNewTierMayNotDifferOnlyInCase()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Tiers);
        QString shown;
        bool okEnabled = true;
        whenDialogOpens<Ui::TierDialog>([&](Ui::TierDialog* d) {
            d->findChild<QLineEdit*>()->setText(QStringLiteral("pro"));
            okEnabled = d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->isEnabled();
            for (const QLabel* l : d->findChildren<QLabel*>())
                if (l->text().contains(QStringLiteral("already")))
                    shown = l->text();
            d->reject();
        });
        w.tiers()->addTier();
        QVERIFY(!okEnabled);
        QCOMPARE(shown, QStringLiteral("There is a tier named Pro already (tier names are matched case-insensitively)."));
    }

    void theAddressDialogKeepsOkDisabledWhileTheInputIsBad_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<int>("choice");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<QString>("shown");
        QTest::newRow("empty") << QString() << 2 << false << QStringLiteral("Type an address or a range.");
        QTest::newRow("octet over 255") << QStringLiteral("999.1.1.1") << 2 << false
                                        << QStringLiteral("Not an address: part 1 of the IPv4 address is over 255");
        QTest::newRow("prefix too long") << QStringLiteral("10.0.0.0/33") << 2 << false
                                         << QStringLiteral("Not an address: prefix length /33 is out of range (0-32 for IPv4)");
        QTest::newRow("two double colons") << QStringLiteral("2001::db8::1") << 2 << false << QString();
        QTest::newRow("trailing junk") << QStringLiteral("203.0.113.7x") << 2 << false << QString();
        QTest::newRow("ipv4") << QStringLiteral("203.0.113.7") << 2 << true << QStringLiteral("Stored as 203.0.113.7/32");
        QTest::newRow("ipv6 normalised") << QStringLiteral("2001:DB8:0:0::1:0/112") << 4 << true
                                         << QStringLiteral("Stored as 2001:db8::1:0/112 — every address in the range");
        QTest::newRow("mapped ipv4") << QStringLiteral("::ffff:198.51.100.1") << 0 << true << QStringLiteral("Stored as 198.51.100.1/32");
    }
    void theAddressDialogKeepsOkDisabledWhileTheInputIsBad()
    {
        QFETCH(QString, address);
        QFETCH(int, choice);
        QFETCH(bool, ok);
        QFETCH(QString, shown);
        constexpr Core::Millis NOW = Core::Test::T0;
        Ui::AddressDialog d(Core::ListKind::Blocklist, NOW);
        d.setAddress(address);
        d.setChoice(choice);
        QPushButton* okButton = d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        QCOMPARE(okButton->isEnabled(), ok);
        QCOMPARE(d.acceptable(), ok);
        if (!ok) {
            QVERIFY(!d.problem().isEmpty());
            if (!shown.isEmpty())
                QCOMPARE(d.problem(), shown);
        } else {
            bool found = false;
            for (QLabel* l : d.findChildren<QLabel*>())
                found = found || l->text() == shown;
            QVERIFY2(found, qPrintable(shown));
            const auto r = d.result();
            QCOMPARE(r.expiresAt, choice == 4 ? Core::NeverExpires : NOW + (choice == 0 ? 3'600'000 : 7 * 86'400'000LL));
        }
    }

    void aDateInThePastKeepsOkDisabled()
    {
        constexpr Core::Millis NOW = Core::Test::T0;
        Ui::AddressDialog d(Core::ListKind::Safelist, NOW);
        d.setAddress(QStringLiteral("192.0.2.1"));
        QVERIFY(d.acceptable());
        auto* until = d.findChild<QDateTimeEdit*>();
        until->setDateTime(QDateTime::fromMSecsSinceEpoch(NOW - 60'000));
        QVERIFY(!d.acceptable());
        QCOMPARE(d.problem(), QStringLiteral("The end must be in the future."));
    }

    // The busiest clients' lines: one point per whole 3 s bucket, drawn
    // where it ended; the bucket still filling is left out (its count over
    // 3 s would read as every line falling at the right edge). The tooltip
    // gives the nearest bucket's exact count and rate.
    void busiestClientsDrawWholeBucketsWhereTheyEnded()
    {
        Ui::TrafficView view;
        view.resize(1200, 700);
        const Core::Millis width = Core::Tuning::liveBucketMs;
        Ui::ConsoleSnapshot s;
        s.now = Core::floorDiv(Core::Test::T0, width) * width + 10 * width + 1'200;  // 1.2 s into a bucket
        Core::ClientSummary c;
        c.key = Core::IpAddress::fromV4(0xcb007101u);
        for (std::size_t b = 0; b < c.live.size(); ++b)
            c.live[b] = std::uint32_t(b + 1);  // oldest 1 ... 20 in the bucket still filling
        s.clients.push_back(Ui::ClientRow(c));
        view.apply(s);
        QLineSeries* line = nullptr;
        for (QChartView* v : view.findChildren<QChartView*>())
            for (QAbstractSeries* a : v->chart()->series())
                if (a->name() == QStringLiteral("203.0.113.1"))
                    line = qobject_cast<QLineSeries*>(a);
        QVERIFY(line);
        const QList<QPointF> points = line->points();
        QCOMPARE(points.size(), 19);
        QCOMPARE(points.back().x(), -1.2);  // the newest whole bucket ended 1.2 s ago
        QCOMPARE(points.back().y(), 19.0 / 3.0);
        QCOMPARE(points.front().x(), -(1.2 + 18 * 3.0));
        QCOMPARE(points.front().y(), 1.0 / 3.0);
        for (const QPointF& p : points)
            QVERIFY(p.y() < 20.0 / 3.0);  // the filling bucket is not drawn
        QCOMPARE(Ui::TrafficView::describeBucketNear(points, -0.5),
                 QStringLiteral("the 3 s ending 1.2 s ago: 19 requests, 6.33 req/s"));
        QCOMPARE(Ui::TrafficView::describeBucketNear(points, -5.0),
                 QStringLiteral("the 3 s ending 4.2 s ago: 18 requests, 6.00 req/s"));
    }

    // The live heat map's columns count seconds back from the bucket still
    // filling, as the level charts above it do ("13:45", minutes and
    // seconds of the clock, read as a time of day).
    void heatMapColumnsCountSecondsBack()
    {
        Ui::HeatMap map;
        Ui::ConsoleSnapshot s;
        const Core::Millis width = Core::Tuning::liveBucketMs;
        const Core::Millis first = Core::floorDiv(Core::Test::T0, width) * width;
        for (std::size_t i = 0; i < Core::Tuning::liveBucketCount; ++i) {
            Core::LiveBucket b;
            b.startMs = first + Core::Millis(i) * width;
            s.buckets.buckets.push_back(b);
        }
        s.now = first + 19 * width + 500;
        map.apply(s);
        QCOMPARE(map.columnLabel(19), QStringLiteral("now"));
        QCOMPARE(map.columnLabel(16), QStringLiteral("-9 s"));
        QCOMPARE(map.columnLabel(0), QStringLiteral("-57 s"));
    }

    void chartSeriesStayBoundedAfterAnHourOfTicks()
    {
        Ui::TrafficView view;
        view.resize(1200, 700);
        using Core::Test::T0;
        int maxPoints = 0;
        for (int second = 0; second < 3600 + 600; ++second) {
            Ui::ConsoleSnapshot s;
            s.now = T0 + Core::Millis(second + 1) * 1000 + 250;
            Core::SecondCounts c;
            c.second = T0 + Core::Millis(second) * 1000;
            c.byAction[0] = 10;
            c.byAction[1] = std::uint64_t(second % 7);
            s.seconds.push_back(c);
            for (int k = 0; k < 8; ++k) {
                Core::ClientSummary c;
                c.key = Core::IpAddress::fromV4(0xcb007100u + std::uint32_t(k));
                c.live.fill(std::uint32_t(k + 1));
                s.clients.push_back(Ui::ClientRow(c));
            }
            view.apply(s);
            maxPoints = std::max(maxPoints, view.pointCount());
        }
        // 4 actions x 60 one-second points, and 5 clients x 19 whole buckets.
        QCOMPARE(maxPoints, 4 * 60 + 5 * 19);
        view.setRange(2);  // 1 h: 120 points of 30 s
        QCOMPARE(view.pointCount(), 4 * 120 + 5 * 19);
        view.setRange(1);
        QCOMPARE(view.pointCount(), 4 * 120 + 5 * 19);
        QCOMPARE(Ui::TrafficView::niceCeiling(0), 5.0);
        QCOMPARE(Ui::TrafficView::niceCeiling(37), 50.0);
        QCOMPARE(Ui::TrafficView::niceCeiling(120), 200.0);
        QCOMPARE(Ui::TrafficView::niceCeiling(201), 500.0);
    }

    // Issue 28.5: Live traffic's two charts on one kind of time axis, time
    // before now as the Buckets view counts it ("-50 s" ... "now"), in every
    // range (no clock-time axis); a point drawn where its second ended.
    void bothTrafficChartsCountTimeBeforeNow()
    {
        Ui::TrafficView view;
        view.resize(1200, 700);
        Ui::ConsoleSnapshot s;
        s.now = Core::Test::T0 + 1'250;
        Core::SecondCounts c;
        c.second = Core::Test::T0;
        c.byAction[0] = 7;
        s.seconds.push_back(c);
        view.apply(s);
        for (int range = 0; range < 3; ++range) {
            view.setRange(range);
            const QList<QChartView*> charts = view.findChildren<QChartView*>();
            QCOMPARE(charts.size(), 2);
            for (QChartView* chart : charts) {
                const QList<QAbstractAxis*> xs = chart->chart()->axes(Qt::Horizontal);
                QCOMPARE(xs.size(), 1);
                auto* axis = qobject_cast<QCategoryAxis*>(xs.front());
                QVERIFY2(axis, "a time axis in time before now");
                QCOMPARE(axis->categoriesLabels().last(), QStringLiteral("now"));
                QCOMPARE(axis->max(), 0.0);
            }
        }
        QCOMPARE(Ui::TrafficView::timeLabels(60, 10),
                 QStringList({QStringLiteral("-60 s"), QStringLiteral("-50 s"), QStringLiteral("-40 s"), QStringLiteral("-30 s"),
                              QStringLiteral("-20 s"), QStringLiteral("-10 s"), QStringLiteral("now")}));
        QCOMPARE(Ui::TrafficView::timeLabels(600, 60).first(), QStringLiteral("-10m"));
        QCOMPARE(Ui::TrafficView::timeLabels(3600, 600).first(), QStringLiteral("-60m"));
        view.setRange(0);
        QLineSeries* allowed = nullptr;
        for (QChartView* chart : view.findChildren<QChartView*>())
            for (QAbstractSeries* a : chart->chart()->series())
                if (a->name() == Ui::Theme::actionLabel(Core::Action::Allow))
                    allowed = qobject_cast<QLineSeries*>(a);
        QVERIFY(allowed);
        QCOMPARE(allowed->points().back(), QPointF(-0.25, 7.0));  // the second T0 ended 0.25 s before now
    }

    // Issue 28.5: the tile and the status bar say one number with one
    // meaning; the blocklist tile in words.
    void theTileAndTheStatusBarCountTheSameClients()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        for (const char* from : {"127.0.0.61", "127.0.0.62", "127.0.0.63"})
            QCOMPARE(s.request(from), 200);
        w.showView(Ui::MainWindow::Traffic);
        s.console->refreshNow();
        QCOMPARE(w.traffic()->tileValue(3), QStringLiteral("3"));
        QCOMPARE(w.traffic()->tileCaption(3), QStringLiteral("clients seen in the last minute"));
        auto* bar = qobject_cast<Ui::StatusBar*>(w.statusBar());
        QVERIFY(bar);
        QCOMPARE(bar->text(Ui::StatusBar::Clients), QStringLiteral("3 clients seen in the last minute"));
        // The Clients view counts the same three, and says it shows them all.
        w.showView(Ui::MainWindow::Clients);
        s.console->refreshNow();
        QCOMPARE(w.clients()->countText(), QStringLiteral("3 clients tracked: all shown"));

        Ui::ConsoleSnapshot listed;
        listed.now = Core::Test::T0;
        listed.counters.automaticEntries = 1;
        w.traffic()->apply(listed);
        QCOMPARE(w.traffic()->tileValue(4), QStringLiteral("1"));
        QCOMPARE(w.traffic()->tileCaption(4), QStringLiteral("on the blocklist, of which 1 automatic"));
        listed.counters.blocklistEntries = 2;
        listed.counters.automaticEntries = 0;
        w.traffic()->apply(listed);
        QCOMPARE(w.traffic()->tileValue(4), QStringLiteral("2"));
        QCOMPARE(w.traffic()->tileCaption(4), QStringLiteral("on the blocklist, none automatic"));
    }

    // Issue 28.5: "N tracked, M shown" says what the others are, and the
    // Client column holds an IPv6 range with the address it was last seen
    // as, in a 1280 x 720 window, with every column in sight.
    void theClientsCountSaysWhatIsTrackedAndNothingIsCut()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.resize(1280, 720);
        w.showView(Ui::MainWindow::Clients);
        QApplication::processEvents();
        Ui::ConsoleSnapshot snap;
        snap.now = Core::Test::T0;
        for (int i = 0; i < 14; ++i) {
            Core::ClientSummary c;
            c.key = Core::IpAddress::fromV4(0xc0000200u + std::uint32_t(i));
            c.lastAddress = c.key;
            snap.clients.push_back(Ui::ClientRow(c));
        }
        Core::ClientSummary v6;
        v6.key = *Core::IpAddress::parse("2001:db8:bad:1::");
        v6.keyPrefix = 64;
        v6.lastAddress = *Core::IpAddress::parse("2001:db8:bad:1:dafc:70a3:98ab:fc53");
        snap.clients.push_back(Ui::ClientRow(v6));
        snap.tracked.clients = 15;
        snap.tracked.customers = 3;
        w.clients()->apply(snap);
        QCOMPARE(w.clients()->countText(), QStringLiteral("18 tracked: 15 clients (all shown), 3 API customers"));
        w.clients()->setFilter(QStringLiteral("2001:db8"));
        QCOMPARE(w.clients()->countText(), QStringLiteral("18 tracked: 15 clients (1 matches the filter), 3 API customers"));
        w.clients()->setFilter({});
        QApplication::processEvents();
        QTableView* table = w.clients()->table();
        QCOMPARE(table->horizontalScrollBar()->maximum(), 0);
        QString wide;
        for (int r = 0; r < table->model()->rowCount(); ++r)
            if (table->model()->index(r, Ui::ClientsModel::Address).data().toString().startsWith(QStringLiteral("2001:")))
                wide = table->model()->index(r, Ui::ClientsModel::Address).data().toString();
        QVERIFY2(wide.contains(QStringLiteral("2001:db8:bad:1:dafc:70a3:98ab:fc53")), qPrintable(wide));
        QVERIFY(table->columnWidth(Ui::ClientsModel::Address) >= Ui::ClientAddressDelegate::widthFor(wide, table->font()));
        QLabel* count = w.clients()->findChild<QLabel*>(QStringLiteral("clientCount"));
        QVERIFY(count);
        QVERIFY2(count->width() >= count->fontMetrics().horizontalAdvance(count->text()), qPrintable(count->text()));
    }

    // Issue 28.5: at 1280 x 720 the toolbar keeps every button and the
    // find box whole, and no view scrolls sideways.
    void everyViewFitsA1280x720Window()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.resize(1280, 720);
        for (int i = 0; i < 8; ++i)
            s.request("127.0.0.70", "/login");
        s.log.flush();
        s.console->refreshNow();
        QApplication::processEvents();
        auto* bar = w.findChild<Ui::ToolBar*>();
        QVERIFY(bar);
        QLineEdit* find = bar->findBox();
        QVERIFY(find->isVisible());
        const int placeholder = find->fontMetrics().horizontalAdvance(find->placeholderText());
        // The search icon and the clear button take at least 16 pixels each.
        QVERIFY2(find->width() >= placeholder + 2 * 16, qPrintable(QStringLiteral("%1 < %2").arg(find->width()).arg(placeholder + 32)));
        for (QAction* a : bar->actions()) {
            QWidget* widget = bar->widgetForAction(a);
            if (a->isSeparator() || !widget)
                continue;
            QVERIFY2(widget->isVisible() && bar->rect().contains(widget->geometry()), qPrintable(a->text()));
        }
        for (int v = 0; v < Ui::MainWindow::ViewCount; ++v) {
            w.showView(v);
            s.console->refreshNow();
            QApplication::processEvents();
            QWidget* view = w.findChild<QStackedWidget*>()->currentWidget();
            for (QAbstractScrollArea* area : view->findChildren<QAbstractScrollArea*>()) {
                if (!area->isVisibleTo(view))
                    continue;
                QVERIFY2(area->horizontalScrollBar()->maximum() == 0,
                         qPrintable(QStringLiteral("view %1: %2 scrolls sideways by %3 px").arg(v).arg(QString::fromLatin1(area->metaObject()->className())).arg(area->horizontalScrollBar()->maximum())));
            }
        }
    }

    // A first start opens at 90 % of the screen, at least 1280 x 720 where
    // the screen has it, at most 1600 x 1000, never larger than the screen
    // (with room for a title bar).
    void theWindowOpensAtASizeThatFitsTheScreen_data()
    {
        QTest::addColumn<QSize>("available");
        QTest::addColumn<QSize>("window");
        QTest::newRow("1600x1000") << QSize(1600, 1000) << QSize(1440, 871);
        QTest::newRow("1366x768") << QSize(1366, 768) << QSize(1280, 720);
        QTest::newRow("1280x720") << QSize(1280, 720) << QSize(1280, 688);
        QTest::newRow("1024x600") << QSize(1024, 600) << QSize(1024, 568);
        QTest::newRow("3840x2160") << QSize(3840, 2160) << QSize(1600, 1000);
    }

    void theWindowOpensAtASizeThatFitsTheScreen()
    {
        QFETCH(QSize, available);
        QFETCH(QSize, window);
        QCOMPARE(Ui::MainWindow::initialSize(available), window);
    }

    // Issue 28.5: a level of many buckets keeps readable time labels (every
    // n-th bucket's, the newest always), none cut or overlapping.
    void longLevelChartsKeepTheirTimeLabels()
    {
        Ui::BucketsView view;
        view.resize(1060, 600);  // the views' share of a 1280 x 720 window
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        Ui::ConsoleSnapshot s;
        s.now = Core::Test::T0;
        Core::ClientDetail d;
        d.summary.key = Core::IpAddress::fromV4(0xcb007101u);
        d.summary.lastAddress = d.summary.key;
        for (int n : {10, 60, 120}) {
            Core::LevelUsage l;
            l.name = "level-" + std::to_string(n);
            l.limit = 100;
            l.periodMs = Core::Millis(n) * 30'000;  // labels such as "-59:30"
            l.buckets.resize(std::size_t(n));
            d.levels.push_back(l);
        }
        s.followed = d;
        view.apply(s);
        QApplication::processEvents();
        QCOMPARE(view.levelCharts(), 3);
        QCOMPARE(view.levelAxisLabels(0).size(), 10);  // room for every bucket's
        int charts = 0;
        for (QChartView* chart : view.findChildren<QChartView*>()) {
            auto* axis = qobject_cast<QCategoryAxis*>(chart->chart()->axes(Qt::Horizontal).value(0));
            QVERIFY(axis);
            const QStringList labels = axis->categoriesLabels();
            QVERIFY(!labels.isEmpty());
            QCOMPARE(labels.last(), QStringLiteral("now"));
            const QFontMetrics fm(axis->labelsFont());
            int widest = 0;
            for (const QString& label : labels)
                widest = std::max(widest, fm.horizontalAdvance(label));
            const double width = chart->chart()->plotArea().width();
            QVERIFY2(double(labels.size() * widest) <= width,
                     qPrintable(QStringLiteral("%1: %2 labels of %3 px in %4 px").arg(chart->chart()->title()).arg(labels.size()).arg(widest).arg(width)));
            ++charts;
        }
        QCOMPARE(charts, 3);
    }

    void levelsKeepWhatTheOperatorDidNotTouch()
    {
        Ui::LevelsEditor editor({true, false});
        Core::Level burst;
        burst.name = "burst";
        burst.limit = 6;
        burst.periodMs = 3000;
        burst.algorithm = Core::Algorithm::SlidingWindow;
        burst.bucketMs = 500;
        Core::Level lock;
        lock.limit = 10;
        lock.periodMs = 60'000;
        lock.algorithm = Core::Algorithm::Lockout;
        lock.lockoutMs = 2 * 86'400'000LL;  // two days: beyond a day
        editor.setLevels({burst, lock});
        auto out = editor.levels();
        QCOMPARE(QString::fromStdString(out[0].name), QStringLiteral("burst"));
        QCOMPARE(out[0].bucketMs, Core::Millis(500));
        QCOMPARE(out[1].lockoutMs, 2 * 86'400'000LL);
        // The limit changes; nothing else does.
        auto spins = editor.findChildren<QSpinBox*>();
        spins[0]->setValue(7);
        out = editor.levels();
        QCOMPARE(out[0].limit, 7u);
        QCOMPARE(QString::fromStdString(out[0].name), QStringLiteral("burst"));
        QCOMPARE(out[0].bucketMs, Core::Millis(500));
        // The period changes: the name and the bucket width (which belonged to the old period) go.
        spins[1]->setValue(5);
        out = editor.levels();
        QCOMPARE(out[0].periodMs, Core::Millis(5000));
        QVERIFY(out[0].name.empty());
        QCOMPARE(out[0].bucketMs, Core::Millis(0));
        QVERIFY(editor.problem().isEmpty());
    }

    void applyingTheRulesKeepsAToggleMadeMeanwhile()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.showView(Ui::MainWindow::Rules);
        s.console->refreshNow();
        // The operator starts editing the per-IP limit...
        auto* levels = w.rules()->findChild<Ui::LevelsEditor*>();
        QVERIFY(levels);
        levels->findChildren<QSpinBox*>()[0]->setValue(8);
        QVERIFY(w.rules()->dirty());
        // ...someone turns dry run on meanwhile...
        bool toggled = false;
        s.console->updateRules([](Core::EngineConfig& c) -> std::optional<std::string> {
            c.settings.dryRun = true;
            return std::nullopt;
        }, [&](const Storage::Outcome& o) { toggled = o.ok(); });
        QTRY_VERIFY_WITH_TIMEOUT(toggled, 5000);
        // ...and Apply saves the limit without turning dry run off again.
        w.rules()->save();
        QTRY_VERIFY_WITH_TIMEOUT(!w.rules()->dirty(), 5000);
        const Core::EngineConfig stored = s.store->config();
        QCOMPARE(stored.rules[0].levels[0].limit, 8u);
        QVERIFY(stored.settings.dryRun);
    }

    void theRulesViewWarnsWhenPerIpLimitingIsOff()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.showView(Ui::MainWindow::Rules);
        s.console->refreshNow();
        auto* warning = w.rules()->findChild<QLabel*>(QStringLiteral("perIpOff"));
        QVERIFY(warning);
        QVERIFY(!warning->isVisible());  // the default rules limit every address
        // Turned off elsewhere (the API, with "ip_levels_disabled": true).
        bool off = false;
        s.console->updateRules([](Core::EngineConfig& c) -> std::optional<std::string> {
            c.rules.clear();
            return std::nullopt;
        }, [&](const Storage::Outcome& o) { off = o.ok(); });
        QTRY_VERIFY_WITH_TIMEOUT(off, 5000);
        s.console->refreshNow();
        QTRY_VERIFY_WITH_TIMEOUT(warning->isVisible(), 3000);
        QVERIFY(warning->text().startsWith(QStringLiteral("Per-IP limiting is off")));
        // Other edits are still saved, and do not turn it on or off by themselves.
        QVERIFY(w.rules()->problem().isEmpty());
        w.rules()->findChild<QCheckBox*>()->toggle();  // counting only cookie-less requests
        QVERIFY(w.rules()->dirty());
        QVERIFY(w.rules()->problem().isEmpty());
        w.rules()->save();
        QTRY_VERIFY_WITH_TIMEOUT(!w.rules()->dirty(), 5000);
        QVERIFY(s.store->config().rules.empty());
        QVERIFY(s.store->config().bot.cookielessOnly);
        QVERIFY(warning->isVisible());
    }

    void theRulesFormRefusesGlobsPastTheCaps()
    {
        // validate()'s caps (Tuning.h), said in the form before Apply.
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.showView(Ui::MainWindow::Rules);
        s.console->refreshNow();
        QPlainTextEdit* excluded = nullptr;
        for (QPlainTextEdit* e : w.rules()->findChildren<QPlainTextEdit*>())
            if (e->placeholderText().startsWith(QStringLiteral("one glob per line")))
                excluded = e;
        QVERIFY(excluded);
        QTRY_VERIFY_WITH_TIMEOUT(excluded->toPlainText().contains(QStringLiteral("*.css")), 3000);
        QPushButton* apply = nullptr;
        for (QPushButton* b : w.rules()->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Apply"))
                apply = b;
        QVERIFY(apply);
        const QString shown = excluded->toPlainText();
        excluded->setPlainText(shown + QStringLiteral("\n*") + QString(511, QLatin1Char('a')) + QStringLiteral("*"));
        QCOMPARE(w.rules()->problem(), QStringLiteral("excluded_paths[18] must be at most 512 characters"));
        QVERIFY(!apply->isEnabled());
        excluded->setPlainText(shown + QStringLiteral("\n*") + QString(510, QLatin1Char('a')) + QStringLiteral("*"));
        QVERIFY2(w.rules()->problem().isEmpty(), qPrintable(w.rules()->problem()));
        QVERIFY(apply->isEnabled());
    }

    void theRulesFormKeepsStoredSettingsItCannotShow()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.showView(Ui::MainWindow::Rules);
        s.console->refreshNow();
        // Stored through the API: a find time of 1.5 s (the form shows whole
        // seconds) and more refusals than the form once offered.
        bool stored = false;
        s.console->updateRules([](Core::EngineConfig& c) -> std::optional<std::string> {
            c.escalation.findMs = 1500;
            c.escalation.refusals = 5'000'000;
            c.settings.dryRun = true;
            return std::nullopt;
        }, [&](const Storage::Outcome& o) { stored = o.ok(); });
        QTRY_VERIFY_WITH_TIMEOUT(stored, 5000);
        s.console->refreshNow();
        QCheckBox* dryRun = nullptr;
        for (QCheckBox* b : w.rules()->findChildren<QCheckBox*>())
            if (b->text().startsWith(QStringLiteral("Dry run")))
                dryRun = b;
        QVERIFY(dryRun);
        QTRY_VERIFY_WITH_TIMEOUT(dryRun->isChecked(), 3000);
        // The form's numbers take their range and tooltip from the setting table.
        QSpinBox* ipv6 = nullptr;
        for (QSpinBox* spin : w.rules()->findChildren<QSpinBox*>())
            if (spin->prefix() == QStringLiteral("/"))
                ipv6 = spin;
        QVERIFY(ipv6);
        QCOMPARE(ipv6->minimum(), 1);
        QCOMPARE(ipv6->maximum(), 128);
        QCOMPARE(ipv6->value(), 64);
        QVERIFY2(ipv6->toolTip().startsWith(QStringLiteral("IPv6 clients are counted per this prefix")), qPrintable(ipv6->toolTip()));
        // Another edit is applied; the values the form could not show stay as stored.
        dryRun->setChecked(false);
        QVERIFY(w.rules()->problem().isEmpty());
        w.rules()->save();
        QTRY_VERIFY_WITH_TIMEOUT(!w.rules()->dirty(), 5000);
        const Core::EngineConfig after = s.store->config();
        QVERIFY(!after.settings.dryRun);
        QCOMPARE(after.escalation.findMs, Core::Millis(1500));
        QCOMPARE(after.escalation.refusals, 5'000'000u);
        // One the operator does change is written as the form shows it.
        QSpinBox* refusals = nullptr;
        for (QSpinBox* spin : w.rules()->findChildren<QSpinBox*>())
            if (spin->suffix() == QStringLiteral(" refusals"))
                refusals = spin;
        QVERIFY(refusals);
        QCOMPARE(refusals->value(), 5'000'000);
        refusals->setValue(7);
        w.rules()->save();
        QTRY_VERIFY_WITH_TIMEOUT(!w.rules()->dirty(), 5000);
        QCOMPARE(s.store->config().escalation.refusals, 7u);
        QCOMPARE(s.store->config().escalation.findMs, Core::Millis(1500));
    }

    void aRuleAddedInTheConsoleCountsByItsHeader()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.showView(Ui::MainWindow::Rules);
        s.console->refreshNow();
        QPushButton* add = buttonWithText(w.rules(), QStringLiteral("Add rule…"));
        QVERIFY(add);
        QStringList problems;
        whenDialogOpens<Ui::RuleDialog>([&problems](Ui::RuleDialog* d) {
            QPushButton* ok = d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
            QVERIFY(!ok->isEnabled());  // no name yet
            d->nameEdit()->setText(QStringLiteral("ip"));
            problems << d->problem();  // taken by the per-IP rule
            d->nameEdit()->setText(QStringLiteral("api-key"));
            QCOMPARE(d->countedBy()->currentData().toInt(), int(Core::Discriminator::Header));
            d->headerEdit()->setText(QStringLiteral("X Api Key"));
            problems << d->problem();
            QVERIFY(!ok->isEnabled());
            d->headerEdit()->setText(QStringLiteral("X-Api-Key"));
            d->pathEdit()->setText(QStringLiteral("/api/*"));
            d->levels()->findChildren<QSpinBox*>().value(0)->setValue(3);  // 3 per hour
            QVERIFY2(ok->isEnabled(), qPrintable(d->problem()));
            ok->click();
        });
        add->click();
        QCOMPARE(problems.size(), 2);
        QCOMPARE(problems[0], QStringLiteral("There is a rule named ip already."));
        QCOMPARE(problems[1], QStringLiteral("\"X Api Key\" is not a header name (letters, digits and - only)."));
        QTableWidget* table = w.rules()->moreRulesTable();
        QCOMPARE(table->rowCount(), 1);
        QCOMPARE(table->item(0, 1)->text(), QStringLiteral("X-Api-Key header"));
        QCOMPARE(table->item(0, 2)->text(), QStringLiteral("any method, /api/*"));
        QVERIFY(w.rules()->dirty());
        w.rules()->save();
        QTRY_VERIFY_WITH_TIMEOUT(!w.rules()->dirty(), 5000);

        // On disk and in force: one key, three requests an hour, from any address.
        const Core::EngineConfig stored = s.store->config();
        QCOMPARE(stored.rules.size(), std::size_t(2));
        QCOMPARE(stored.rules[1].header, std::string("X-Api-Key"));
        const char* from[] = {"127.0.0.31", "127.0.0.32", "127.0.0.33", "127.0.0.34"};
        for (int i = 0; i < 4; ++i) {
            QCOMPARE(s.request(from[i], "/api/orders", "X-Api-Key: k-1\r\n"), i < 3 ? 200 : 429);
        }
        // Another key, and a request without one, are not affected.
        QCOMPARE(s.request("127.0.0.35", "/api/orders", "X-Api-Key: k-2\r\n"), 200);
        QCOMPARE(s.request("127.0.0.36", "/api/orders"), 200);

        // Removing it in the console and applying lets the key through again.
        table->selectRow(0);
        for (QPushButton* b : w.rules()->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Remove") && b->parentWidget() == table->parentWidget())
                b->click();
        QCOMPARE(table->rowCount(), 0);
        w.rules()->save();
        QTRY_VERIFY_WITH_TIMEOUT(!w.rules()->dirty(), 5000);
        QCOMPARE(s.store->config().rules.size(), std::size_t(1));
        QCOMPARE(s.request("127.0.0.37", "/api/orders", "X-Api-Key: k-1\r\n"), 200);
    }

    void actionsAskForASelectionOnViewsWithoutOne()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        s.request("127.0.0.60");
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Clients);
        QVERIFY(w.clients()->selectAddress(QStringLiteral("127.0.0.60")));
        // On another page the hidden clients selection is not used.
        w.showView(Ui::MainWindow::Traffic);
        w.actions().block7d->trigger();
        QVERIFY(w.problem()->isVisible());
        QCOMPARE(w.problem()->text(), QStringLiteral("Select a client first."));
        QTest::qWait(200);
        QVERIFY(rowsOnDisk(s.dbPath).empty());
    }

    // The About box and the title carry CMake's project(VERSION) (given to
    // this test by CMake) and the license.
    void theAboutBoxAndTitleNameTheVersionAndLicense()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        QCOMPARE(w.windowTitle(), QStringLiteral("Floodgate " FLOODGATE_VERSION));
        QString text;
        whenDialogOpens<QMessageBox>([&text](QMessageBox* box) {
            text = box->text();
            box->accept();
        });
        w.actions().about->trigger();
        QVERIFY2(text.contains(QStringLiteral("Floodgate " FLOODGATE_VERSION "<")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("GPL-3.0-or-later")), qPrintable(text));
    }

    void findAClientAndItsBuckets()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        for (int i = 0; i < 8; ++i)
            s.request("127.0.0.30");  // 6 pass, then the lockout
        s.console->refreshNow();
        w.find(QStringLiteral("127.0.0.30"));
        QCOMPARE(w.currentView(), int(Ui::MainWindow::Clients));
        QCOMPARE(w.clients()->selectedRanges().size(), std::size_t(1));
        w.actions().showBuckets->trigger();
        QCOMPARE(w.currentView(), int(Ui::MainWindow::Buckets));
        QCOMPARE(w.buckets()->levelCharts(), 3);  // ip-3s, ip-5m, ip-30m
        // Someone never seen: the buckets view says so.
        w.find(QStringLiteral("10.1.2.3"));
        QCOMPARE(w.currentView(), int(Ui::MainWindow::Buckets));
        QCOMPARE(w.buckets()->levelCharts(), 0);
        w.find(QStringLiteral("not-an-address"));
        QVERIFY(w.problem()->isVisible());
        QCOMPARE(w.problem()->text(), QStringLiteral("\"not-an-address\" is not an address."));
    }

    void refusalsShowWhyAndLeadToTheClient()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        for (int i = 0; i < 7; ++i)
            s.request("127.0.0.40", "/login");
        s.log.flush();
        s.console->refreshNow();
        w.showView(Ui::MainWindow::Events);
        QCOMPARE(w.events()->events()->rowCount(), 1);
        QCOMPARE(w.events()->events()->index(0, 0).data(Ui::EventsModel::WhyRole).toString(),
                 QStringLiteral("6 requests in the 3 s window of ip-3s (limit 6); passes again in 3 s. Client 127.0.0.40 is the TCP peer."));
        QTableView* table = w.events()->eventsTable();
        table->setCurrentIndex(table->model()->index(0, 0));
        QCOMPARE(w.events()->selectedClient(), QStringLiteral("127.0.0.40"));
        w.find(w.events()->selectedClient());
        QCOMPARE(w.currentView(), int(Ui::MainWindow::Clients));
    }

    void dryRunFromTheToolbarIsSavedAndLetsEverythingThrough()
    {
        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        QAction* dry = w.actions().dryRun;
        dry->trigger();  // checks it and saves the setting
        QTRY_VERIFY_WITH_TIMEOUT(s.engine->config()->settings.dryRun, 5000);
        QVERIFY(s.store->config().settings.dryRun);  // saved, not only applied
        for (int i = 0; i < 10; ++i)
            QCOMPARE(s.request("127.0.0.50"), 200);
        s.console->refreshNow();
        QVERIFY(dry->isChecked());
    }

    void theWindowOpensAndClosesCleanlyWithTheDemoRunning()
    {
        QTemporaryDir dir;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("XDG_DATA_HOME"), dir.filePath(QStringLiteral("data")));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(FLOODGATE_BINARY), {QStringLiteral("--demo"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                                                    QStringLiteral("--admin"), QStringLiteral("off"), QStringLiteral("--seconds"), QStringLiteral("4")});
        QVERIFY(p.waitForFinished(30'000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QVERIFY2(p.exitCode() == 0, qPrintable(err));
        QVERIFY2(!err.contains(QStringLiteral("QObject::")) && !err.contains(QStringLiteral("QThread: Destroyed")), qPrintable(err));
        // The demo's own database beside the default one (issue 28.4) was
        // created, with the demo's customers; the default one was not.
        const QString db = dir.filePath(QStringLiteral("data/floodgate/demo.db"));
        QVERIFY(QFile::exists(db));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("data/floodgate/floodgate.db"))));
        sqlite3* h = nullptr;
        QCOMPARE(sqlite3_open_v2(db.toUtf8().constData(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(h, "SELECT count(*) FROM customers", -1, &st, nullptr);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        QVERIFY(sqlite3_column_int(st, 0) >= 3);
        sqlite3_finalize(st);
        sqlite3_close(h);
        // The window remembered where it was.
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("config/Floodgate/Floodgate.conf"))));
    }

    void anUnusableDatabaseStopsTheConsoleWithExitCode4()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("floodgate.db"));
        QFile f(db);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a database at all");
        f.close();
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(FLOODGATE_BINARY), {QStringLiteral("--db"), db, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                                                    QStringLiteral("--admin"), QStringLiteral("off")});
        QVERIFY(p.waitForFinished(20'000));
        QCOMPARE(p.exitCode(), 4);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(QStringLiteral("left untouched")));
        QFile again(db);
        QVERIFY(again.open(QIODevice::ReadOnly));
        QCOMPARE(again.readAll(), QByteArray("not a database at all"));
    }
};

QTEST_MAIN(TestConsole)
#include "test_console.moc"
