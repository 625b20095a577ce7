// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/MainWindow.h"

#include "ui/AddressDialog.h"
#include "ui/BucketsView.h"
#include "ui/ClientsView.h"
#include "ui/ClusterDialog.h"
#include "ui/Console.h"
#include "core/Engine.h"
#include "ui/EventsView.h"
#include "ui/Format.h"
#include "ui/ListsView.h"
#include "ui/NoticeBar.h"
#include "ui/Operations.h"
#include "ui/RulesView.h"
#include "ui/SettingsDialog.h"
#include "ui/StatusBar.h"
#include "ui/Theme.h"
#include "ui/TiersView.h"
#include "ui/ToolBar.h"
#include "ui/TrafficView.h"
#include "ui/WindowActions.h"
#include "floodgate/Version.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace Floodgate::Ui {

using Core::DAY;
using Core::HOUR;

namespace {

constexpr int TITLE_BAR = 32;  // pixels a window manager's frame may add above the window's inside

} // namespace

MainWindow::MainWindow(Console& console, QWidget* parent)
    : QMainWindow(parent)
    , m_console(console)
{
    Theme::initResources();
    setWindowTitle(tr("Floodgate %1").arg(QLatin1String(Version)));
    setWindowIcon(QIcon(QStringLiteral(":/icons/floodgate.svg")));

    auto* central = new QWidget;
    auto* outer = new QHBoxLayout(central);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->setSpacing(0);
    m_nav = new QListWidget;
    m_nav->setObjectName(QStringLiteral("navigation"));
    m_nav->setIconSize(QSize(22, 22));
    m_nav->setFrameShape(QFrame::NoFrame);
    m_nav->setSpacing(2);
    const std::array<std::pair<QString, QString>, ViewCount> views = {{
        {QStringLiteral("traffic"), tr("Live traffic")},
        {QStringLiteral("clients"), tr("Clients")},
        {QStringLiteral("buckets"), tr("Buckets")},
        {QStringLiteral("lists"), tr("Access lists")},
        {QStringLiteral("tiers"), tr("Customers & tiers")},
        {QStringLiteral("rules"), tr("Rules")},
        {QStringLiteral("events"), tr("Events")},
    }};
    QFont navFont = m_nav->font();
    navFont.setPointSizeF(navFont.pointSizeF() * 1.08);
    m_nav->setFont(navFont);
    auto* brand = new QListWidgetItem(QIcon(QStringLiteral(":/icons/floodgate.svg")), tr("Floodgate"));
    brand->setFlags(Qt::ItemIsEnabled);  // a title, not a view
    QFont brandFont = navFont;
    brandFont.setBold(true);
    brandFont.setPointSizeF(navFont.pointSizeF() * 1.25);
    brand->setFont(brandFont);
    // As wide as its longest name needs (icon, gap, text, padding), so the
    // views get the rest of a 1280-pixel screen.
    const int iconAndPadding = m_nav->iconSize().width() + 34;
    int navWidth = QFontMetrics(brandFont).horizontalAdvance(brand->text()) + iconAndPadding;
    for (const auto& view : views)
        navWidth = std::max(navWidth, QFontMetrics(navFont).horizontalAdvance(view.second) + iconAndPadding);
    m_nav->setFixedWidth(navWidth + 10);
    brand->setSizeHint(QSize(navWidth, 52));
    m_nav->addItem(brand);
    for (const auto& [icon, text] : views) {
        auto* item = new QListWidgetItem(Theme::icon(icon), text);
        item->setSizeHint(QSize(navWidth, 36));
        m_nav->addItem(item);
    }
    QPalette navPalette = m_nav->palette();
    navPalette.setColor(QPalette::Base, QApplication::palette().color(QPalette::Window).darker(Theme::isDark() ? 80 : 104));
    m_nav->setPalette(navPalette);
    outer->addWidget(m_nav);

    auto* right = new QWidget;
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(8, 6, 8, 0);
    rightLayout->setSpacing(4);
    m_problem = new NoticeBar(NoticeBar::Kind::Problem);
    m_notice = new NoticeBar(NoticeBar::Kind::Notice);
    rightLayout->addWidget(m_problem);
    rightLayout->addWidget(m_notice);
    m_stack = new QStackedWidget;
    rightLayout->addWidget(m_stack, 1);
    outer->addWidget(right, 1);
    setCentralWidget(central);

    m_operations = new Operations(m_console, *m_notice, *m_problem, this);
    m_traffic = new TrafficView;
    m_clients = new ClientsView;
    m_buckets = new BucketsView;
    m_lists = new ListsView(*m_operations, *m_console.services().clock);
    m_tiers = new TiersView(m_console, *m_notice);
    m_rules = new RulesView(m_console, *m_notice);
    m_events = new EventsView;
    for (QWidget* w : {static_cast<QWidget*>(m_traffic), static_cast<QWidget*>(m_clients), static_cast<QWidget*>(m_buckets),
                       static_cast<QWidget*>(m_lists), static_cast<QWidget*>(m_tiers), static_cast<QWidget*>(m_rules),
                       static_cast<QWidget*>(m_events)})
        m_stack->addWidget(w);

    m_actions = std::make_unique<WindowActions>(this);
    m_toolBar = new ToolBar(*m_actions, m_console.services());
    addToolBar(m_toolBar);
    m_status = new StatusBar(m_console.services());
    setStatusBar(m_status);
    connect(m_status, &StatusBar::clusterClicked, this, &MainWindow::showCluster);
    connectActions();
    const WindowActions& a = *m_actions;
    m_clients->setContextActions({a.block7d, a.block24h, a.block1h, a.blockCustom, nullptr, a.safelist7d, a.removeFromList, nullptr,
                                  a.copyAddress, a.showBuckets});

    connect(m_nav, &QListWidget::currentRowChanged, this, [this](int row) { showView(row - 1); });
    connect(&m_console, &Console::snapshot, this, &MainWindow::applySnapshot);
    connect(&m_console, &Console::problem, this, [this](const QString& text) { m_problem->show(text); });
    connect(m_clients, &ClientsView::activated, this, [this](const QString& a) {
        m_buckets->follow(a);
        showView(Buckets);
    });
    connect(m_traffic, &TrafficView::clientClicked, this, [this](const QString& a) {
        m_buckets->follow(a);
        showView(Buckets);
    });
    connect(m_buckets, &BucketsView::followRequested, this, [this](const QString& a) {
        m_console.follow(a);
        m_console.refreshNow();
    });
    connect(m_events, &EventsView::showClient, this, &MainWindow::find);
    connect(m_toolBar, &ToolBar::findRequested, this, &MainWindow::find);

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    // The first time, a size that fits the screen; a size saved on a larger
    // screen is cut down to this one's.
    if (QScreen* where = screen()) {
        const QRect available = where->availableGeometry();
        if (!settings.contains(QStringLiteral("window/geometry"))) {
            resize(initialSize(available.size()));
            move(available.center() - rect().center());
        } else if (width() > available.width() || height() > available.height()) {
            resize(width() > available.width() ? available.width() : width(), height() > available.height() ? available.height() : height());
        }
    }
    m_traffic->setRange(settings.value(QStringLiteral("traffic/range"), 0).toInt());
    const int view = settings.value(QStringLiteral("window/view"), int(Traffic)).toInt();
    showView(view >= 0 && view < ViewCount ? view : int(Traffic));
}

MainWindow::~MainWindow() = default;

QSize MainWindow::initialSize(const QSize& available)
{
    // 90 % of the screen, at least 1280 x 720 (what every view is laid out
    // for) where the screen has that much, at most 1600 x 1000 (a larger
    // window only spreads the same things out), never more than the screen.
    // The height keeps room for a title bar (the size is the window's inside).
    auto fit = [](int screen, int floor, int ceiling) { return std::min(screen, std::clamp(screen * 9 / 10, std::min(floor, screen), ceiling)); };
    return QSize(fit(available.width(), 1280, 1600), fit(available.height() - TITLE_BAR, 720, 1000));
}

void MainWindow::connectActions()
{
    const WindowActions& a = *m_actions;
    connect(a.block7d, &QAction::triggered, this, [this] { blockSelected(7 * DAY); });
    connect(a.block24h, &QAction::triggered, this, [this] { blockSelected(DAY); });
    connect(a.block1h, &QAction::triggered, this, [this] { blockSelected(HOUR); });
    connect(a.blockCustom, &QAction::triggered, this, &MainWindow::blockCustom);
    connect(a.safelist7d, &QAction::triggered, this, [this] {
        m_operations->addToList(Core::ListKind::Safelist, selectedRanges(), 7 * DAY, tr("safelisted from the console"));
    });
    connect(a.removeFromList, &QAction::triggered, this, [this] { m_operations->removeFromLists(selectedRanges()); });
    connect(a.copyAddress, &QAction::triggered, this, [this] {
        QStringList text;
        for (const Core::Cidr& r : selectedRanges())
            text << rangeText(r);
        QApplication::clipboard()->setText(text.join(QLatin1Char('\n')));
    });
    connect(a.showBuckets, &QAction::triggered, this, [this] {
        const auto ranges = selectedRanges();
        if (ranges.empty())
            return;
        m_buckets->follow(qs(ranges[0].toString()));
        showView(Buckets);
    });
    connect(a.listener, &QAction::triggered, this, [this] {
        const ConsoleServices& s = m_console.services();
        if (!s.setListening || !s.listening)
            return;
        std::string why;
        if (!s.setListening(!s.listening(), &why))
            m_problem->show(tr("The listener did not start: %1").arg(qs(why)));
        m_console.refreshNow();
    });
    connect(a.dryRun, &QAction::triggered, this, [this](bool on) {
        m_console.updateRules([on](Core::EngineConfig& c) -> std::optional<std::string> {
            c.settings.dryRun = on;
            return std::nullopt;
        }, [this, on](const Storage::Outcome& o) {
            if (o.ok())
                m_notice->show(on ? tr("Dry run on: requests over the limits are logged and let through.")
                                  : tr("Dry run off: requests over the limits are refused again."));
        });
    });
    connect(a.demo, &QAction::triggered, this, [this](bool on) {
        if (m_console.services().setDemo)
            m_console.services().setDemo(on);
        m_console.refreshNow();
    });
    connect(a.find, &QAction::triggered, this, [this] { m_toolBar->focusFind(); });
    connect(a.settings, &QAction::triggered, this, [this] { SettingsDialog(m_console, this).exec(); });
    connect(a.about, &QAction::triggered, this, &MainWindow::showAbout);
    addAction(a.find);
    // Ctrl+C copies addresses in the clients table only; elsewhere tables copy as tables do.
    auto* copyShortcut = new QAction(this);
    copyShortcut->setShortcut(QKeySequence::Copy);
    copyShortcut->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(copyShortcut, &QAction::triggered, a.copyAddress, &QAction::trigger);
    m_clients->addAction(copyShortcut);
}

int MainWindow::currentView() const
{
    return m_stack->currentIndex();
}

void MainWindow::showView(int view)
{
    if (view < 0 || view >= ViewCount)
        return;
    if (m_nav->currentRow() != view + 1)
        m_nav->setCurrentRow(view + 1);  // row 0 is the name
    m_stack->setCurrentIndex(view);
    // A view that was hidden catches up with the latest snapshot at once.
    if (const SnapshotPtr s = m_console.latest(); s && m_appliedTo[std::size_t(view)] != s)
        applyTo(view, s);
}

void MainWindow::applyTo(int view, const SnapshotPtr& snapshot)
{
    m_appliedTo[std::size_t(view)] = snapshot;
    const ConsoleSnapshot& s = *snapshot;
    switch (view) {
    case Traffic: m_traffic->apply(s); break;  // the history skips the seconds it has
    case Clients: m_clients->apply(s); break;
    case Buckets: m_buckets->apply(s); break;
    case Tiers: m_tiers->apply(s); break;
    case Rules: m_rules->apply(s); break;
    default: break;
    }
}

void MainWindow::applySnapshot(SnapshotPtr snapshot)
{
    QElapsedTimer timer;
    timer.start();
    const ConsoleSnapshot& s = *snapshot;
    // Streams, the lists (by deltas) and the charts' history take every
    // snapshot; the other views only the visible one (they catch up when shown).
    const bool trafficShown = currentView() == Traffic;
    m_traffic->apply(s, trafficShown);
    if (trafficShown)
        m_appliedTo[Traffic] = snapshot;  // hidden, it draws when shown again
    m_events->apply(s);
    m_appliedTo[Events] = snapshot;
    m_lists->apply(s, currentView() == Lists);  // deltas: every snapshot, in order
    m_appliedTo[Lists] = snapshot;
    if (currentView() != Traffic && currentView() != Events && currentView() != Lists)
        applyTo(currentView(), snapshot);

    m_toolBar->apply(s);
    m_actions->apply(s, m_console.services());
    showProblems(s);
    m_status->apply(s);
    if (m_clusterDialog && m_clusterDialog->isVisible())
        m_clusterDialog->apply(s);
    m_lastApplyNs = timer.nsecsElapsed();
}

void MainWindow::showProblems(const ConsoleSnapshot& s)
{
    if (s.storeProblem && s.storeProblem->serial != m_shownProblem) {
        m_shownProblem = s.storeProblem->serial;
        m_problem->show(tr("Database (%1): %2").arg(formatClock(s.storeProblem->at, s.now), qs(s.storeProblem->message)));
    }
    if (s.logProblem && s.logProblem->serial != m_shownLogProblem) {
        m_shownLogProblem = s.logProblem->serial;
        m_problem->show(tr("limiter.log (%1): %2").arg(formatClock(s.logProblem->at, s.now), qs(s.logProblem->message)));
    }
    if (m_wasListening && !s.listening)
        m_problem->show(tr("The traffic listener is stopped: nothing is being decided. Start it again from the toolbar."));
    m_wasListening = s.listening;
}

std::vector<Core::Cidr> MainWindow::selectedRanges() const
{
    switch (currentView()) {
    case Clients: return m_clients->selectedRanges();
    case Events:
        if (auto ip = Core::IpAddress::parse(m_events->selectedClient().toStdString()))
            return {m_console.services().engine->countingRange(*ip)};
        return {};
    case Buckets:
        // The client the view shows, counted as the engine counts it (an
        // IPv6 address stands for its /64), not the text typed in the box.
        if (auto shown = m_buckets->shownRange())
            return {*shown};
        return {};
    case Lists: return m_lists->selectedRanges();
    default: return {};  // nothing selectable here: the actions say "select a client first"
    }
}

void MainWindow::blockSelected(Core::Millis ttlMs)
{
    m_operations->addToList(Core::ListKind::Blocklist, selectedRanges(), ttlMs, tr("blocked from the console"));
}

void MainWindow::blockCustom()
{
    const auto ranges = selectedRanges();  // before the dialog: live rows may vanish meanwhile
    AddressDialog dialog(Core::ListKind::Blocklist, m_console.services().clock->now(), this);
    if (!ranges.empty())
        dialog.setAddress(qs(ranges[0].toString()));
    if (dialog.exec() != QDialog::Accepted)
        return;
    const AddressDialog::Result r = dialog.result();
    const Core::Millis now = m_console.services().clock->now();
    const QString verb = r.kind == Core::ListKind::Blocklist ? tr("Blocked") : tr("Safelisted");
    m_operations->saveEntry(r.kind, r.newEntry(now, QStringLiteral("from the console")),
                            tr("%1 %2 %3.").arg(verb, rangeText(r.range), formatDuration(r.ttlFrom(now), Span::For)));
}

void MainWindow::find(const QString& text)
{
    const QString address = text.trimmed();
    if (address.isEmpty())
        return;
    if (!Core::IpAddress::parse(address.toStdString()) && !Core::Cidr::parse(address.toStdString())) {
        m_problem->show(tr("\"%1\" is not an address.").arg(address));
        return;
    }
    if (m_problem->text().endsWith(tr("is not an address.")))
        m_problem->hide();  // the last find's complaint, not another problem
    showView(Clients);
    if (m_clients->selectAddress(address))
        return;
    // Not among the busiest: its buckets say whether it is tracked or listed.
    m_buckets->follow(address);
    showView(Buckets);
}

void MainWindow::showCluster()
{
    const SnapshotPtr s = m_console.latest();
    if (!s || !s->cluster)
        return;  // a single node: there is no cluster to show
    const bool first = !m_clusterDialog;
    if (first)
        m_clusterDialog = new ClusterDialog(this);
    m_clusterDialog->apply(*s);
    if (first)
        m_clusterDialog->fitToContents();
    m_clusterDialog->show();
    m_clusterDialog->raise();
    m_clusterDialog->activateWindow();
}

void MainWindow::showAbout()
{
    QMessageBox::about(this, tr("About Floodgate"),
                       tr("<h3>Floodgate %1</h3>"
                          "<p>An HTTP request throttle: rate limits per client, customer tiers, "
                          "a blocklist and a safelist, and this console to watch and steer it.</p>"
                          "<p>Licensed under the GNU General Public License, version 3 or (at your option) any later version "
                          "(GPL-3.0-or-later). It comes with ABSOLUTELY NO WARRANTY.</p>"
                          "<p>Built with Qt %2.</p>")
                           .arg(QLatin1String(Version), QLatin1String(QT_VERSION_STR)));
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/view"), currentView());
    settings.setValue(QStringLiteral("traffic/range"), m_traffic->range());
    QMainWindow::closeEvent(event);
}

} // namespace Floodgate::Ui
