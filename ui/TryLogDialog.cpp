// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/TryLogDialog.h"

#include "ui/DialogParts.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QCloseEvent>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace Floodgate::Ui {

namespace {

// "1 request", "1,234 requests".
QString counted(std::uint64_t n, const QString& one, const QString& many)
{
    return QStringLiteral("%1 %2").arg(formatCount(n), n == 1 ? one : many);
}

QString requestsText(std::uint64_t n)
{
    return counted(n, QObject::tr("request"), QObject::tr("requests"));
}

QString clientsText(std::uint64_t n)
{
    return counted(n, QObject::tr("client"), QObject::tr("clients"));
}

// A time of the log, in UTC as logs are usually kept: "2026-11-22 05:00:10",
// or "05:00:10" where the date is said once for all (`withDate` false).
QString logTime(Core::Millis ms, bool withDate = true)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(withDate ? QStringLiteral("yyyy-MM-dd HH:mm:ss") : QStringLiteral("HH:mm:ss"));
}

bool sameDay(Core::Millis a, Core::Millis b)
{
    return Core::floorDiv(a, Core::DAY) == Core::floorDiv(b, Core::DAY);
}

// The heart of a refusal's why: the count against the limit in its rule's
// window (Http::explain's first clause); when it passes again and who the
// client is go to the tooltip.
QString shortWhy(const std::string& why)
{
    const QString all = qs(why);
    qsizetype end = all.indexOf(QStringLiteral(". "));
    const qsizetype clause = all.indexOf(QStringLiteral("; "));
    if (clause >= 0 && (end < 0 || clause < end))
        end = clause;
    return end < 0 ? all : all.left(end);
}

QTableWidget* makeTable(const QStringList& headers)
{
    auto* t = new QTableWidget(0, int(headers.size()));
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->setVisible(false);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setAlternatingRowColors(true);
    t->setWordWrap(false);
    t->horizontalHeader()->setHighlightSections(false);
    return t;
}

QTableWidgetItem* cell(const QString& text, Qt::Alignment align = Qt::AlignLeft | Qt::AlignVCenter)
{
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(align);
    return item;
}

QTableWidgetItem* number(std::uint64_t n)
{
    return cell(formatCount(n), Qt::AlignRight | Qt::AlignVCenter);
}

} // namespace

TryLogDialog::TryLogDialog(Replay::Configuration inForce, Replay::Configuration edited, QWidget* parent)
    : QDialog(parent)
    , m_inForce(std::move(inForce))
    , m_edited(std::move(edited))
{
    m_inForce.name = tr("the rules in force").toStdString();
    m_edited.name = tr("the edited rules").toStdString();
    setWindowTitle(tr("Try the edited rules on a log"));
    setModal(false);
    resize(1100, 640);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 14, 16, 12);
    layout->setSpacing(10);

    auto* intro = new QLabel(tr("Replays access logs (combined, common, nginx JSON or Floodgate's limiter.log; .gz and rotated "
                                "sets too) through the rules in force and through the rules as edited, not yet applied. "
                                "Nothing is sent anywhere and nothing is saved."));
    intro->setWordWrap(true);
    Theme::setTextColor(intro, Theme::muted());
    layout->addWidget(intro);

    // The logs, and the button that picks them.
    auto* filesRow = new QHBoxLayout;
    m_filesLabel = new QLabel(tr("No log chosen yet."));
    m_filesLabel->setWordWrap(true);
    m_filesLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_choose = new QPushButton(Theme::icon(QStringLiteral("import")), tr("Choose logs…"));
    filesRow->addWidget(m_filesLabel, 1);
    filesRow->addWidget(m_choose);
    layout->addLayout(filesRow);

    // Progress while it runs.
    auto* progressRow = new QHBoxLayout;
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1000);
    m_progress->setTextVisible(false);
    m_progressText = new QLabel;
    Theme::setTextColor(m_progressText, Theme::muted());
    m_cancel = new QPushButton(Theme::icon(QStringLiteral("stop")), tr("Cancel"));
    m_cancel->setEnabled(false);
    progressRow->addWidget(m_progress, 1);
    progressRow->addWidget(m_progressText);
    progressRow->addWidget(m_cancel);
    layout->addLayout(progressRow);

    // The answer: one sentence, big, then what it covered.
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    QFont big = m_summary->font();
    big.setPointSizeF(big.pointSizeF() * 1.25);
    big.setBold(true);
    m_summary->setFont(big);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    m_detail = new QLabel;
    m_detail->setWordWrap(true);
    m_detail->setTextInteractionFlags(Qt::TextSelectableByMouse);
    Theme::setTextColor(m_detail, Theme::muted());
    layout->addWidget(m_detail);
    m_problem = addProblemLabel(layout);
    m_problem->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_problem->hide();

    m_rulesCaption = new QLabel(tr("<b>Refused requests by rule</b>"));
    layout->addWidget(m_rulesCaption);
    m_rules = makeTable({tr("Rule"), tr("Rules in force"), tr("Edited rules"), tr("Change")});
    m_rules->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_rules->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_rules->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    m_rules->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Maximum);
    layout->addWidget(m_rules, 0, Qt::AlignLeft);

    m_clientsCaption = new QLabel(tr("<b>Clients whose outcome differs</b>"));
    layout->addWidget(m_clientsCaption);
    m_clients = makeTable({tr("Client"), tr("Outcome"), tr("Requests"), tr("Refused now"), tr("Refused if applied"),
                           tr("Why (first refusal)"), tr("First refusal (UTC)"), tr("Known crawler"), tr("User agent")});
    m_clients->horizontalHeaderItem(Crawler)->setToolTip(tr("Named by the user agent, which any client can forge."));
    m_clients->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_clients->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_clients, 1);

    m_footnote = new QLabel(tr("Times are the log's, in UTC. Known crawler: by the user agent, which any client can forge. "
                               "Safelist and blocklist entries apply to both sides alike; each side makes its own automatic bans as it replays (\"automatic ban\"), none of today's are carried in; dry run is off."));
    m_footnote->setWordWrap(true);
    Theme::setTextColor(m_footnote, Theme::muted());
    layout->addWidget(m_footnote);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &TryLogDialog::reject);
    connect(m_choose, &QPushButton::clicked, this, &TryLogDialog::chooseFiles);
    connect(m_cancel, &QPushButton::clicked, this, &TryLogDialog::cancel);
    clearResult();
    m_progress->setValue(0);
}

TryLogDialog::~TryLogDialog()
{
    stop();
}

void TryLogDialog::chooseFiles()
{
    QSettings settings;
    const QString key = QStringLiteral("tryOnLog/folder");
    const QStringList chosen = QFileDialog::getOpenFileNames(
        this, tr("Access logs to replay"), settings.value(key).toString(),
        tr("Access logs (*.log *.log.* *.gz *.json *.csv *access*);;All files (*)"));
    if (chosen.isEmpty())
        return;
    settings.setValue(key, QFileInfo(chosen.front()).absolutePath());
    setFiles(chosen);
}

void TryLogDialog::setFiles(const QStringList& files)
{
    stop();
    m_files = files;
    QStringList names;
    for (const QString& f : files)
        names << QFileInfo(f).fileName();
    m_filesLabel->setText(files.isEmpty() ? tr("No log chosen yet.") : tr("Logs, read in this order: %1").arg(names.join(QStringLiteral(", "))));
    m_filesLabel->setToolTip(files.join(QLatin1Char('\n')));
    if (!files.isEmpty())
        start();
}

void TryLogDialog::start()
{
    clearResult();
    m_result.reset();
    m_cancelRequested = false;
    const std::uint64_t generation = ++m_generation;
    auto running = std::make_shared<Replay::Result>();
    Replay::Input input;
    for (const QString& f : m_files)
        input.files.push_back(f.toStdString());
    // On the replay's thread: handed to the GUI thread, dropped if this
    // replay was stopped meanwhile (or the dialog is gone: it joins first).
    input.progress = [this, generation](const Replay::Progress& p) {
        QMetaObject::invokeMethod(this, [this, generation, p] {
            if (generation == m_generation)
                showProgress(p);
        }, Qt::QueuedConnection);
    };
    input.cancelled = [this] { return m_cancelRequested.load(std::memory_order_relaxed); };
    std::vector<Replay::Configuration> configurations{m_inForce, m_edited};
    m_thread = QThread::create([input = std::move(input), configurations = std::move(configurations), running] {
        try {
            *running = Replay::replay(input, configurations);
        } catch (const std::exception& e) {
            *running = Replay::Result{};
            running->fatal = e.what();
        }
    });
    m_thread->setObjectName(QStringLiteral("replay"));
    connect(m_thread, &QThread::finished, this, [this, generation, running] {
        if (generation != m_generation)
            return;  // stopped: stop() cleaned up
        m_thread->deleteLater();
        m_thread = nullptr;
        m_result = std::make_unique<Replay::Result>(std::move(*running));
        showResult();
        Q_EMIT replayEnded();
    });
    m_progress->setRange(0, 0);  // busy until the first figure
    m_progressText->setText(tr("Starting…"));
    m_cancel->setEnabled(true);
    m_thread->start();
}

void TryLogDialog::cancel()
{
    if (!m_thread)
        return;
    m_cancelRequested = true;
    m_cancel->setEnabled(false);
    m_progressText->setText(tr("Cancelling…"));
}

void TryLogDialog::stop()
{
    if (!m_thread)
        return;
    m_cancelRequested = true;
    ++m_generation;  // what the thread still posts is dropped
    m_thread->wait();
    delete m_thread;
    m_thread = nullptr;
    m_cancel->setEnabled(false);
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progressText->setText(tr("Cancelled."));
}

void TryLogDialog::closeEvent(QCloseEvent* event)
{
    stop();
    QDialog::closeEvent(event);
}

void TryLogDialog::reject()
{
    stop();
    QDialog::reject();
}

void TryLogDialog::showProgress(const Replay::Progress& p)
{
    if (p.bytesTotal > 0) {
        m_progress->setRange(0, 1000);
        m_progress->setValue(int(std::min<std::uint64_t>(1000, p.bytesDone * 1000 / p.bytesTotal)));
    }
    const QString file = p.file < std::size_t(m_files.size()) ? QFileInfo(m_files[qsizetype(p.file)]).fileName() : QString();
    m_progressText->setText(tr("%1 lines read, in %2").arg(formatCount(p.lines), file));
}

void TryLogDialog::clearResult()
{
    m_summary->setText(m_files.isEmpty() ? tr("Choose one or more access logs to see what the edited rules would refuse.")
                                         : tr("Replaying…"));
    m_detail->clear();
    m_detail->hide();
    m_problem->clear();
    m_problem->hide();
    m_rules->setRowCount(0);
    m_clients->setRowCount(0);
    m_rulesCaption->hide();
    m_rules->hide();
    m_clientsCaption->setText(tr("<b>Clients whose outcome differs</b>"));
}

void TryLogDialog::showResult()
{
    const Replay::Result& r = *m_result;
    m_cancel->setEnabled(false);
    m_progress->setRange(0, 1000);
    QStringList problems;
    if (!r.fatal.empty()) {
        m_progress->setValue(0);
        m_progressText->setText(tr("Not replayed."));
        m_summary->setText(tr("Nothing was replayed."));
        m_problem->setText(tr("Cannot replay: %1").arg(qs(r.fatal)));
        m_problem->show();
        return;
    }
    if (r.cancelled) {
        m_progressText->setText(tr("Cancelled."));
        m_summary->setText(tr("Cancelled after %1 lines: nothing to compare. Choose the logs again to replay them.").arg(formatCount(r.lines)));
        return;
    }
    m_progress->setValue(1000);
    m_progressText->setText(tr("%1 lines read.").arg(formatCount(r.lines)));
    for (const Replay::FileSummary& f : r.files)
        if (!f.error.empty())
            problems << tr("%1: %2").arg(QFileInfo(qs(f.path)).fileName(), qs(f.error));
    if (r.badLines > 0) {
        const Replay::BadLine& b = r.firstBad.front();
        problems << tr("%1 did not parse and %2 left out; the first: line %3 of %4: %5")
                        .arg(counted(r.badLines, tr("line"), tr("lines")), r.badLines == 1 ? tr("was") : tr("were"))
                        .arg(b.where.line)
                        .arg(QFileInfo(qs(r.files[b.where.file].path)).fileName(), qs(b.why));
    }
    if (!problems.isEmpty()) {
        m_problem->setText(problems.join(QLatin1Char('\n')));
        m_problem->show();
    }
    if (r.runs.size() != 2 || r.requests == 0) {
        m_summary->setText(tr("Nothing to compare: the logs held no request this reads."));
        return;
    }
    const Replay::RunResult& before = r.runs[0];
    const Replay::RunResult& after = r.runs[1];
    m_summary->setText(tr("The edited rules would refuse %1 from %2; the rules in force refuse %3 from %4.")
                           .arg(requestsText(after.refusals()), clientsText(after.refused.size()), formatCount(before.refusals()),
                                formatCount(before.refused.size())));
    QStringList detail;
    detail << tr("%1 from %2 in %3, %4 to %5 UTC.")
                  .arg(requestsText(r.requests), clientsText(before.clientsSeen), counted(r.files.size(), tr("log"), tr("logs")),
                       logTime(*r.firstTime), logTime(*r.lastTime));
    if (r.late > 0)
        detail << tr("%1 came more than %2 s out of order and were decided at the time already reached.")
                      .arg(counted(r.late, tr("line"), tr("lines")))
                      .arg(Replay::ReorderSeconds);
    if (before.untrackedRequests > 0 || after.untrackedRequests > 0)
        detail << tr("More clients than the engine tracks: %1 of clients first seen after that are counted in the totals, not listed.")
                      .arg(requestsText(std::max(before.untrackedRequests, after.untrackedRequests)));
    m_detail->setText(detail.join(QLatin1Char(' ')));
    m_detail->show();

    // By rule: every rule that refused something on either side.
    std::set<std::string> ruleNames;
    for (const auto* run : {&before, &after})
        for (const auto& [rule, n] : run->refusalsByRule)
            ruleNames.insert(rule);
    m_rules->setRowCount(0);
    for (const std::string& rule : ruleNames) {
        const auto get = [&](const Replay::RunResult& run) {
            const auto it = run.refusalsByRule.find(rule);
            return it == run.refusalsByRule.end() ? std::uint64_t(0) : it->second;
        };
        const std::uint64_t a = get(before), b = get(after);
        const int row = m_rules->rowCount();
        m_rules->insertRow(row);
        m_rules->setItem(row, 0, cell(qs(rule)));
        m_rules->setItem(row, 1, number(a));
        m_rules->setItem(row, 2, number(b));
        const QString change = a == b ? tr("same") : (b > a ? QStringLiteral("+%1") : QStringLiteral("−%1")).arg(formatCount(b > a ? b - a : a - b));
        m_rules->setItem(row, 3, cell(change, Qt::AlignRight | Qt::AlignVCenter));
    }
    m_rulesCaption->setVisible(!ruleNames.empty());
    m_rules->setVisible(!ruleNames.empty());

    // The clients: refused only by the edited rules first (whom Apply would
    // start refusing), then only by the rules in force, then by both as often or not.
    std::vector<Replay::Difference> differences = Replay::compare(before, after);
    const auto group = [](const Replay::Difference& d) { return !d.before ? 0 : !d.after ? 1 : 2; };
    const auto most = [](const Replay::Difference& d) {
        return std::max(d.before ? d.before->refusals : 0, d.after ? d.after->refusals : 0);
    };
    std::stable_sort(differences.begin(), differences.end(), [&](const Replay::Difference& x, const Replay::Difference& y) {
        return group(x) != group(y) ? group(x) < group(y) : most(x) > most(y);
    });
    // A log of one day: its date is said once, in the line above; the cells say the time.
    const bool oneDay = sameDay(*r.firstTime, *r.lastTime);
    m_clients->setRowCount(0);
    for (const Replay::Difference& d : differences) {
        // What the row explains: the side that refuses it, the edited one when both do.
        const Replay::RefusedClient& c = d.after ? *d.after : *d.before;
        const int row = m_clients->rowCount();
        m_clients->insertRow(row);
        m_clients->setItem(row, Client, cell(qs(c.address)));
        QString outcome;
        QColor colour;
        if (!d.before) {
            outcome = tr("Refused only by the edited rules");
            colour = Theme::action(Core::Action::Block);
        } else if (!d.after) {
            outcome = tr("Refused only by the rules in force");
            colour = Theme::action(Core::Action::Allow);
        } else {
            outcome = d.after->refusals > d.before->refusals ? tr("Refused more often if applied") : tr("Refused less often if applied");
            colour = Theme::action(Core::Action::Throttle);
        }
        auto* o = cell(outcome);
        o->setForeground(colour);
        m_clients->setItem(row, Outcome, o);
        m_clients->setItem(row, Requests, number(c.requests));
        m_clients->setItem(row, RefusedInForce, number(d.before ? d.before->refusals : 0));
        m_clients->setItem(row, RefusedEdited, number(d.after ? d.after->refusals : 0));
        auto* why = cell(shortWhy(c.first.why));
        QString tip = tr("%1 %2\n%3").arg(qs(c.first.method), qs(c.first.path), qs(c.first.why));
        if (d.before && d.after)
            tip += tr("\n\nUnder the rules in force: %1").arg(qs(d.before->first.why));
        why->setToolTip(tip);
        m_clients->setItem(row, Why, why);
        m_clients->setItem(row, FirstRefusal, cell(logTime(c.first.time, !oneDay)));
        auto* agent = cell(qs(c.userAgent));
        agent->setToolTip(qs(c.userAgent));
        m_clients->setItem(row, UserAgent, agent);
        m_clients->setItem(row, Crawler, cell(c.crawler.empty() ? QStringLiteral("–") : qs(c.crawler)));
    }
    m_clientsCaption->setText(differences.empty() ? tr("<b>No client's outcome differs</b>: the edited rules refuse the same clients as often.")
                                                  : tr("<b>Clients whose outcome differs</b> (%1)").arg(formatCount(differences.size())));
    m_clients->resizeColumnsToContents();
    // A long user agent must not push the table wider than the window.
    if (m_clients->columnWidth(Why) > 360)
        m_clients->setColumnWidth(Why, 360);
    if (m_clients->columnWidth(UserAgent) > 320)
        m_clients->setColumnWidth(UserAgent, 320);
}

} // namespace Floodgate::Ui
