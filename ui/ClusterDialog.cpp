// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ClusterDialog.h"

#include "ui/ClusterModel.h"
#include "ui/ClusterText.h"
#include "ui/Format.h"
#include "ui/Theme.h"
#include "core/Tuning.h"

#include <QDialogButtonBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {

// "opened 3 times", "never opened".
QString timesText(std::uint64_t n)
{
    if (n == 0)
        return QObject::tr("never opened");
    return n == 1 ? QObject::tr("opened once") : QObject::tr("opened %1 times").arg(formatCount(n));
}

} // namespace

ClusterDialog::ClusterDialog(QWidget* parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Cluster"));
    setModal(false);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 14, 16, 12);
    layout->setSpacing(10);

    // Heading: the state, big, with its dot; where Redis is and who we are.
    auto* heading = new QHBoxLayout;
    heading->setSpacing(10);
    m_dot = new QLabel;
    m_dot->setFixedSize(22, 22);
    heading->addWidget(m_dot, 0, Qt::AlignTop);
    auto* headingText = new QVBoxLayout;
    headingText->setSpacing(2);
    m_state = new QLabel;
    QFont big = m_state->font();
    big.setPointSizeF(big.pointSizeF() * 1.3);
    big.setBold(true);
    m_state->setFont(big);
    m_where = new QLabel;
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    Theme::setTextColor(m_where, Theme::muted());
    headingText->addWidget(m_state);
    headingText->addWidget(m_where);
    heading->addLayout(headingText, 1);
    layout->addLayout(heading);

    // The figures, two columns of caption and value; each explained.
    const QString waitText = QStringLiteral("%1 ms").arg(double(Core::Tuning::clusterWaitMicros) / 1000.0);
    const std::array<std::pair<QString, QString>, FigureCount> figures = {{
        {tr("Redis"), tr("Up: %1\nDegraded: %2\nDown: %3")
                          .arg(ClusterText::stateMeaning(ClusterText::Redis::Up), ClusterText::stateMeaning(ClusterText::Redis::Degraded),
                               ClusterText::stateMeaning(ClusterText::Redis::Down))},
        {tr("Round trip"), tr("The last batch of reports: from sending it to Redis to its answer (one EVALSHA carrying many "
                              "clients' counts). \"–\" until the first batch, which waits for the first counted request.")},
        {tr("Sync lag"), tr("From the oldest report in the last batch being taken to Redis acknowledging it: how old the "
                            "other nodes' view of this node's counts can be.")},
        {tr("Clock offset"), tr("Redis's clock minus this node's system clock. Decisions are timed on Redis's clock, so "
                                "window boundaries fall at the same moment on every node whatever their clocks say.")},
        {tr("Breaker"), tr("The circuit breaker opens on the first failure (a missed deadline, a lost connection, an error "
                           "reply); while it is open nothing is sent and this node decides on its own. Once a second it "
                           "tries Redis again and closes when Redis answers.")},
        {tr("Errors"), tr("Calls to Redis that failed since this node started: a missed deadline, a lost connection or an "
                          "error reply. Each one opened the breaker.")},
        {tr("Last error"), tr("The latest failed call to Redis, as one line (a password is never shown).")},
        {tr("Reports"), tr("Clients' counts acknowledged by Redis since start, in how many batches, and how many clients the "
                           "last batch carried. A client is reported when it first appears, then once per lease.")},
        {tr("Waits"), tr("Requests that waited (at most %1, without holding a thread) for Redis to acknowledge their "
                         "client's earlier requests, because the node had admitted all it may before Redis knew.")
                          .arg(waitText)},
        {tr("Overdrafts"), tr("Requests still waiting after %1, decided on what this node knew: beyond the error bound. "
                              "They happen only when Redis is slower than that, and then the breaker is about to open.")
                               .arg(waitText)},
    }};
    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(14);
    grid->setVerticalSpacing(6);
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(3, 1);
    auto place = [&](Figure f, int r, int c, int span) {
        auto* caption = new QLabel(figures[std::size_t(f)].first);
        Theme::setTextColor(caption, Theme::muted());
        caption->setToolTip(figures[std::size_t(f)].second);
        auto* value = new QLabel;
        value->setToolTip(figures[std::size_t(f)].second);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        m_values[std::size_t(f)] = value;
        grid->addWidget(caption, r, c);
        grid->addWidget(value, r, c + 1, 1, span);
    };
    // The sync's figures on the left, the failures on the right (the state
    // itself is the heading).
    place(RoundTrip, 0, 0, 1);
    place(Breaker, 0, 2, 1);
    place(SyncLag, 1, 0, 1);
    place(Errors, 1, 2, 1);
    place(ClockOffset, 2, 0, 1);
    place(Waits, 2, 2, 1);
    place(Reports, 3, 0, 1);
    place(Overdrafts, 3, 2, 1);
    place(LastError, 4, 0, 3);
    m_state->setToolTip(figures[State].second);
    m_values[LastError]->setTextFormat(Qt::PlainText);
    m_values[LastError]->setMinimumWidth(100);
    m_values[LastError]->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // elided to its width
    layout->addLayout(grid);

    m_whenDown = new QLabel;
    m_whenDown->setWordWrap(true);
    m_whenDown->setToolTip(tr("The rule setting when_cluster_down (Rules view, or settings.when_cluster_down in the admin "
                              "API) says what a node enforces while Redis is out of reach."));
    layout->addWidget(m_whenDown);

    // Shown only when it happened: changes this node made that the others
    // will never hear of.
    m_dropped = new QLabel;
    m_dropped->setWordWrap(true);
    m_dropped->setTextFormat(Qt::PlainText);
    Theme::setTextColor(m_dropped, ClusterText::color(ClusterText::Redis::Down));
    m_dropped->setToolTip(tr("Changes to the lists, tiers, customers and rules (and automatic bans and cooldowns) wait on this "
                             "node while Redis is out of reach and are sent when it answers; at most %1 wait.")
                              .arg(formatCount(Cluster::ClusterSync::maxPendingChanges)));
    m_dropped->hide();
    layout->addWidget(m_dropped);

    // Shown only when it happened: what came from Redis and was not applied
    // here, and a levelling that would have removed too much.
    m_shared = new QLabel;
    m_shared->setWordWrap(true);
    m_shared->setTextFormat(Qt::PlainText);
    Theme::setTextColor(m_shared, ClusterText::color(ClusterText::Redis::Down));
    m_shared->setToolTip(tr("Every shared change carries a tag made with the cluster key (--cluster-key), which Redis does not hold: "
                            "a change without a valid tag was not written by a node of this cluster and is not applied."));
    m_shared->hide();
    layout->addWidget(m_shared);

    auto* nodesTitle = new QLabel(tr("<b>Nodes</b> — as heard through Redis; a node counts while its heartbeat is at most %1 old")
                                      .arg(formatDuration(Core::Tuning::clusterAliveMs, Span::Length)));
    layout->addWidget(nodesTitle);
    m_stale = new QLabel(tr("Redis is out of reach: the list below is the last one heard."));
    Theme::setTextColor(m_stale, ClusterText::color(ClusterText::Redis::Down));
    m_stale->hide();
    layout->addWidget(m_stale);

    m_nodes = new ClusterNodesModel(this);
    m_sorted = new QSortFilterProxyModel(this);
    m_sorted->setSourceModel(m_nodes);
    m_sorted->setSortRole(ClusterNodesModel::SortRole);
    m_sorted->setDynamicSortFilter(true);
    m_table = new QTableView;
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(ClusterNodesModel::Name, Qt::AscendingOrder);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setFocusPolicy(Qt::NoFocus);  // nothing to act on: no focus frame on a cell
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(26);
    m_table->horizontalHeader()->setStretchLastSection(false);
    m_table->horizontalHeader()->setSectionResizeMode(ClusterNodesModel::Address, QHeaderView::Stretch);
    m_table->setColumnWidth(ClusterNodesModel::Name, 170);
    m_table->setColumnWidth(ClusterNodesModel::Heartbeat, 112);
    m_table->setColumnWidth(ClusterNodesModel::Rate, 92);
    // As tall as its nodes (between two and ten rows), then it scrolls.
    const int header = m_table->horizontalHeader()->sizeHint().height() + 2 * m_table->frameWidth();
    m_table->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    m_table->setMinimumHeight(header + 2 * 26);
    m_table->setMaximumHeight(header + 10 * 26);
    layout->addWidget(m_table, 1);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(660, sizeHint().height());
}

void ClusterDialog::fitToContents()
{
    adjustSize();
    resize(std::max(width(), 660), sizeHint().height());
}

void ClusterDialog::apply(const ConsoleSnapshot& s)
{
    if (!s.cluster)
        return;
    const Cluster::ClusterStatus& c = *s.cluster;
    const Core::WhenClusterDown mode = s.config ? s.config->settings.whenClusterDown : Core::WhenClusterDown::Local;
    const bool down = c.redis == ClusterText::Redis::Down;
    m_dot->setPixmap(ClusterText::dot(c.redis).pixmap(QSize(22, 22)));
    m_state->setText(tr("Redis %1").arg(ClusterText::state(c.redis)));
    Theme::setTextColor(m_state, down ? ClusterText::color(c.redis) : palette().color(QPalette::WindowText));
    m_dot->setToolTip(ClusterText::stateMeaning(c.redis));
    m_where->setText(tr("%1 · this node: %2 · %3 counting together")
                         .arg(qs(c.url), qs(c.node), c.nodesCounting == 1 ? tr("1 node") : tr("%1 nodes").arg(c.nodesCounting)));
    m_where->setToolTip(tr("Where this node's Redis is (--redis, the password never shown), this node's name (--node-name) "
                           "and how many nodes share each limit now: the N of the error bound"));

    auto set = [this](Figure f, const QString& text) { m_values[std::size_t(f)]->setText(text); };
    set(RoundTrip, ClusterText::roundTrip(c));
    set(SyncLag, ClusterText::syncLag(c));
    set(ClockOffset, ClusterText::clockOffset(c.clockOffsetMs));
    set(Breaker, (c.breakerOpen ? tr("<span style='color:%1'><b>open</b></span>").arg(ClusterText::color(ClusterText::Redis::Down).name())
                                : tr("closed"))
                     + QStringLiteral(" · ") + timesText(c.breakerOpened));
    set(Errors, formatCount(c.errors));
    set(Reports, tr("%1 in %2 batches · last %3").arg(formatCount(c.reports), formatCount(c.batches), formatCount(c.lastBatchSize)));
    set(Waits, formatCount(s.clusterCounters.waits));
    set(Overdrafts, formatCount(s.clusterCounters.overdrafts));
    // One line, elided to the room there is; the whole of it in the tooltip.
    QString last = qs(c.lastError).simplified();
    m_lastErrorFull = last.isEmpty() ? tr("none") : last;
    QLabel* lastLabel = m_values[LastError];
    lastLabel->setText(lastLabel->fontMetrics().elidedText(m_lastErrorFull, Qt::ElideRight, std::max(100, lastLabel->width())));
    lastLabel->setToolTip(tr("The latest failed call to Redis (a password is never shown):\n%1").arg(m_lastErrorFull));
    Theme::setTextColor(lastLabel, last.isEmpty() ? Theme::muted() : palette().color(QPalette::WindowText));

    m_whenDown->setText(down ? QStringLiteral("<span style='color:%1'>%2</span>")
                                   .arg(ClusterText::color(c.redis).name(), ClusterText::whenDown(mode, false, c.nodesCounting).toHtmlEscaped())
                             : ClusterText::whenDown(mode, false, c.nodesCounting).toHtmlEscaped());
    m_stale->setVisible(down && !c.nodes.empty());
    const QString dropped = ClusterText::droppedChanges(c.droppedChanges);
    m_dropped->setText(dropped);
    m_dropped->setVisible(!dropped.isEmpty());
    const QString shared = ClusterText::sharedProblems(c);
    m_shared->setText(shared);
    m_shared->setVisible(!shared.isEmpty());
    m_nodes->apply(s);
}

QString ClusterDialog::figure(Figure f) const
{
    if (f == State)
        return m_state->text();
    if (f == LastError)
        return m_lastErrorFull;
    return m_values[std::size_t(f)]->text();
}

QString ClusterDialog::heading() const
{
    return m_state->text() + QLatin1Char('\n') + m_where->text();
}

QString ClusterDialog::whenDown() const
{
    return m_whenDown->text();
}

QString ClusterDialog::droppedChanges() const
{
    return m_dropped->isHidden() ? QString() : m_dropped->text();
}

QString ClusterDialog::sharedProblems() const
{
    return m_shared->isHidden() ? QString() : m_shared->text();
}

} // namespace Floodgate::Ui
