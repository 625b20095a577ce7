// SPDX-License-Identifier: MIT
#include "MainWindow.h"

#include "AddressDialog.h"
#include "BucketsView.h"
#include "ClientsView.h"
#include "Console.h"
#include "Engine.h"
#include "EventsView.h"
#include "Format.h"
#include "ListsView.h"
#include "NoticeBar.h"
#include "Operations.h"
#include "RulesView.h"
#include "SettingsDialog.h"
#include "Theme.h"
#include "TiersView.h"
#include "TrafficView.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace Floodgate::Ui {

using Core::DAY;
using Core::HOUR;

MainWindow::MainWindow(Console& console, QWidget* parent)
    : QMainWindow(parent)
    , m_console(console)
{
    Theme::initResources();
    setWindowTitle(tr("Floodgate"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/floodgate.svg")));

    auto* central = new QWidget;
    auto* outer = new QHBoxLayout(central);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->setSpacing(0);
    m_nav = new QListWidget;
    m_nav->setObjectName(QStringLiteral("navigation"));
    m_nav->setIconSize(QSize(22, 22));
    m_nav->setFixedWidth(190);
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
    brand->setSizeHint(QSize(180, 52));
    m_nav->addItem(brand);
    for (const auto& [icon, text] : views) {
        auto* item = new QListWidgetItem(Theme::icon(icon), text);
        item->setSizeHint(QSize(180, 36));
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

    buildActions();
    buildToolBar();
    buildStatusBar();
    m_clients->setContextActions({action(QStringLiteral("block7d")), action(QStringLiteral("block24h")), action(QStringLiteral("block1h")),
                                  action(QStringLiteral("blockCustom")), nullptr, action(QStringLiteral("safelist7d")),
                                  action(QStringLiteral("removeFromList")), nullptr, action(QStringLiteral("copyAddress")),
                                  action(QStringLiteral("showBuckets"))});

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

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    if (!settings.contains(QStringLiteral("window/geometry")))
        resize(1280, 800);
    m_traffic->setRange(settings.value(QStringLiteral("traffic/range"), 0).toInt());
    const int view = settings.value(QStringLiteral("window/view"), int(Traffic)).toInt();
    showView(view >= 0 && view < ViewCount ? view : int(Traffic));
}

MainWindow::~MainWindow() = default;

void MainWindow::buildActions()
{
    auto make = [this](const QString& name, const QString& icon, const QString& text, const QString& tip) {
        auto* a = new QAction(icon.isEmpty() ? QIcon() : Theme::icon(icon), text, this);
        a->setToolTip(tip);
        a->setStatusTip(tip);
        m_actions[name] = a;
        return a;
    };
    make(QStringLiteral("block7d"), QStringLiteral("block"), tr("Block for 7 days"),
         tr("Refuse every request from the selected clients with 403 for 7 days (Ctrl+B)"))
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    make(QStringLiteral("block24h"), QStringLiteral("block"), tr("Block for 24 hours"), tr("Block the selected clients for 24 hours"));
    make(QStringLiteral("block1h"), QStringLiteral("block"), tr("Block for 1 hour"), tr("Block the selected clients for 1 hour"));
    make(QStringLiteral("blockCustom"), QStringLiteral("edit"), tr("Block or safelist…"), tr("Choose the list, the reason and how long"));
    make(QStringLiteral("safelist7d"), QStringLiteral("safelist"), tr("Safelist for 7 days"),
         tr("Never throttle the selected clients, for 7 days (Ctrl+L)"))
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    make(QStringLiteral("removeFromList"), QStringLiteral("remove"), tr("Remove from list"), tr("Take the selected clients off the blocklist or safelist"));
    make(QStringLiteral("copyAddress"), QStringLiteral("copy"), tr("Copy address"), tr("Copy the selected addresses"));
    make(QStringLiteral("showBuckets"), QStringLiteral("buckets"), tr("Show buckets"), tr("See the selected client's levels bucket by bucket"));
    auto* listener = make(QStringLiteral("listener"), QStringLiteral("stop"), tr("Stop listener"), tr("Stop or start the traffic listener"));
    auto* dryRun = make(QStringLiteral("dryRun"), QStringLiteral("dryrun"), tr("Dry run"),
                        tr("Decide and log, refuse nothing (saved with the rules)"));
    dryRun->setCheckable(true);
    auto* demo = make(QStringLiteral("demo"), QStringLiteral("demo"), tr("Demo traffic"),
                      tr("Drive synthetic traffic into the listener: browsers, a good bot, a scraper flood, API customers"));
    demo->setCheckable(true);
    make(QStringLiteral("find"), QStringLiteral("find"), tr("Find address"), tr("Find a client by address (Ctrl+F)"))
        ->setShortcut(QKeySequence::Find);
    make(QStringLiteral("settings"), QStringLiteral("settings"), tr("Settings"), tr("Database, admin API and its token"));

    connect(action(QStringLiteral("block7d")), &QAction::triggered, this, [this] { blockSelected(7 * DAY); });
    connect(action(QStringLiteral("block24h")), &QAction::triggered, this, [this] { blockSelected(DAY); });
    connect(action(QStringLiteral("block1h")), &QAction::triggered, this, [this] { blockSelected(HOUR); });
    connect(action(QStringLiteral("blockCustom")), &QAction::triggered, this, &MainWindow::blockCustom);
    connect(action(QStringLiteral("safelist7d")), &QAction::triggered, this, [this] {
        m_operations->addToList(Core::ListKind::Safelist, selectedRanges(), 7 * DAY, tr("safelisted from the console"));
    });
    connect(action(QStringLiteral("removeFromList")), &QAction::triggered, this, [this] { m_operations->removeFromLists(selectedRanges()); });
    connect(action(QStringLiteral("copyAddress")), &QAction::triggered, this, [this] {
        QStringList text;
        for (const Core::Cidr& r : selectedRanges())
            text << rangeText(r);
        QApplication::clipboard()->setText(text.join(QLatin1Char('\n')));
    });
    connect(action(QStringLiteral("showBuckets")), &QAction::triggered, this, [this] {
        const auto ranges = selectedRanges();
        if (ranges.empty())
            return;
        m_buckets->follow(qs(ranges[0].toString()));
        showView(Buckets);
    });
    connect(listener, &QAction::triggered, this, [this] {
        const ConsoleServices& s = m_console.services();
        if (!s.setListening || !s.listening)
            return;
        std::string why;
        if (!s.setListening(!s.listening(), &why))
            m_problem->show(tr("The listener did not start: %1").arg(qs(why)));
        m_console.refreshNow();
    });
    connect(dryRun, &QAction::triggered, this, [this](bool on) {
        m_console.updateRules([on](Core::EngineConfig& c) -> std::optional<std::string> {
            c.settings.dryRun = on;
            return std::nullopt;
        }, [this, on](const Storage::Outcome& o) {
            if (o.ok())
                m_notice->show(on ? tr("Dry run on: requests over the limits are logged and let through.")
                                  : tr("Dry run off: requests over the limits are refused again."));
        });
    });
    connect(demo, &QAction::triggered, this, [this](bool on) {
        if (m_console.services().setDemo)
            m_console.services().setDemo(on);
        m_console.refreshNow();
    });
    connect(action(QStringLiteral("find")), &QAction::triggered, this, [this] {
        m_find->setFocus();
        m_find->selectAll();
    });
    connect(action(QStringLiteral("settings")), &QAction::triggered, this, [this] { SettingsDialog(m_console, this).exec(); });
    addAction(action(QStringLiteral("find")));
    // Ctrl+C copies addresses in the clients table only; elsewhere tables copy as tables do.
    auto* copyShortcut = new QAction(this);
    copyShortcut->setShortcut(QKeySequence::Copy);
    copyShortcut->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(copyShortcut, &QAction::triggered, action(QStringLiteral("copyAddress")), &QAction::trigger);
    m_clients->addAction(copyShortcut);
}

QAction* MainWindow::action(const QString& name) const
{
    auto it = m_actions.find(name);
    return it == m_actions.end() ? nullptr : it->second;
}

void MainWindow::buildToolBar()
{
    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("main toolbar"));
    bar->setMovable(false);
    bar->setIconSize(QSize(20, 20));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_listenerLabel = new QLabel;
    m_listenerLabel->setContentsMargins(8, 0, 8, 0);
    m_listenerLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bar->addWidget(m_listenerLabel);
    bar->addAction(action(QStringLiteral("listener")));
    bar->addSeparator();
    bar->addAction(action(QStringLiteral("dryRun")));
    bar->addAction(action(QStringLiteral("demo")));
    bar->addSeparator();
    auto* block = new QToolButton;
    block->setDefaultAction(action(QStringLiteral("block7d")));
    block->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    block->setPopupMode(QToolButton::MenuButtonPopup);
    auto* menu = new QMenu(block);
    menu->addActions({action(QStringLiteral("block1h")), action(QStringLiteral("block24h")), action(QStringLiteral("block7d")),
                      action(QStringLiteral("blockCustom"))});
    block->setMenu(menu);
    bar->addWidget(block);
    bar->addAction(action(QStringLiteral("safelist7d")));
    auto* spacer = new QWidget;
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    bar->addWidget(spacer);
    m_find = new QLineEdit;
    m_find->setPlaceholderText(tr("Find address (Ctrl+F)"));
    m_find->setClearButtonEnabled(true);
    m_find->setMaximumWidth(240);
    m_find->addAction(Theme::icon(QStringLiteral("find")), QLineEdit::LeadingPosition);
    bar->addWidget(m_find);
    bar->addAction(action(QStringLiteral("settings")));
    connect(m_find, &QLineEdit::returnPressed, this, [this] { find(m_find->text()); });
}

void MainWindow::buildStatusBar()
{
    // Fixed widths: the numbers change four times a second and must not
    // re-lay out the window each time.
    const std::array<int, 4> widths = {260, 280, 180, 0};
    for (std::size_t i = 0; i < m_status.size(); ++i) {
        QLabel*& l = m_status[i];
        l = new QLabel;
        l->setContentsMargins(6, 0, 6, 0);
        if (widths[i])
            l->setFixedWidth(widths[i]);
        statusBar()->addWidget(l);
    }
    statusBar()->addPermanentWidget(m_status[3]);
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

    const ConsoleServices& services = m_console.services();
    const bool dryRun = s.config && s.config->settings.dryRun;
    m_listenerLabel->setText(s.listening ? tr("Listening on <b>%1</b> · %2").arg(s.listenUrl, qs(services.modeText))
                                         : tr("<span style='color:%1'>Listener stopped</span> (%2)")
                                               .arg(Theme::action(Core::Action::Block).name(), s.listenUrl));
    QAction* listener = action(QStringLiteral("listener"));
    if (const int state = s.listening ? 1 : 0; state != m_listenerShown) {  // not on every tick: each set repaints the toolbar
        m_listenerShown = state;
        listener->setText(s.listening ? tr("Stop listener") : tr("Start listener"));
        listener->setIcon(Theme::icon(s.listening ? QStringLiteral("stop") : QStringLiteral("play")));
    }
    listener->setEnabled(bool(services.setListening));
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
    QAction* dry = action(QStringLiteral("dryRun"));
    dry->setChecked(dryRun);
    dry->setEnabled(!services.dryRunForced);
    if (services.dryRunForced)
        dry->setToolTip(tr("Dry run is on from the command line (--dry-run); it cannot be turned off here"));
    QAction* demo = action(QStringLiteral("demo"));
    demo->setChecked(s.demo);
    demo->setEnabled(bool(services.setDemo) && s.listening);

    const Core::SecondCounts last = s.seconds.empty() ? Core::SecondCounts{} : s.seconds.back();
    if (!s.seconds.empty() || m_status[1]->text().isEmpty()) {
        const std::uint64_t refused = last.byAction[std::size_t(Core::Action::Throttle)] + last.byAction[std::size_t(Core::Action::Block)];
        const std::uint64_t wouldBe = last.byAction[std::size_t(Core::Action::DryRun)];
        m_status[1]->setText(wouldBe ? tr("%1 requests/s · %2 refused/s · %3 would be").arg(formatCount(last.total()), formatCount(refused), formatCount(wouldBe))
                                     : tr("%1 requests/s · %2 refused/s").arg(formatCount(last.total()), formatCount(refused)));
    }
    m_status[0]->setText(dryRun ? tr("<b>DRY RUN</b> · %1").arg(qs(services.modeText)) : qs(services.modeText));
    m_status[2]->setText(tr("%1 clients tracked").arg(formatCount(s.counters.trackedKeys)));
    m_status[3]->setText(tr("Database: %1").arg(qs(services.databasePath)));
    m_lastApplyNs = timer.nsecsElapsed();
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
                            tr("%1 %2 %3.").arg(verb, rangeText(r.range), Operations::ttlText(r.ttlFrom(now))));
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

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/view"), currentView());
    settings.setValue(QStringLiteral("traffic/range"), m_traffic->range());
    QMainWindow::closeEvent(event);
}

} // namespace Floodgate::Ui
