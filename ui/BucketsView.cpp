// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/BucketsView.h"

#include "wire/Codec.h"
#include "ui/ClusterText.h"
#include "ui/Format.h"
#include "ui/HeatMap.h"
#include "ui/TrafficView.h"
#include "ui/Theme.h"

#include <QApplication>
#include <QCategoryAxis>
#include <QStackedBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QScrollArea>
#include <QValueAxis>
#include <QVBoxLayout>

#include <cmath>

namespace Floodgate::Ui {

namespace {

QString algorithmText(const Core::LevelUsage& l)
{
    switch (l.algorithm) {
    case Core::Algorithm::SlidingWindow:
        return QObject::tr("sliding window, %1 buckets of %2").arg(l.buckets.size()).arg(formatDuration(l.periodMs / Core::Millis(std::max<std::size_t>(1, l.buckets.size())), Span::Length));
    case Core::Algorithm::FixedWindow: return QObject::tr("fixed window of %1").arg(formatDuration(l.periodMs, Span::Length));
    case Core::Algorithm::Lockout: return QObject::tr("lockout: %1 per %2, then refused for the lockout").arg(l.limit).arg(formatDuration(l.periodMs, Span::Length));
    }
    return {};
}

// The other nodes' share of a bar: this node's colour, faded into the window
// (opaque, so the legend's text can say it in the same colour).
QColor othersColor()
{
    const QColor here = Theme::action(Core::Action::DryRun);
    const QColor window = QApplication::palette().color(QPalette::Window);
    auto mix = [](int a, int b) { return int(a * 0.4 + b * 0.6); };
    return QColor(mix(here.red(), window.red()), mix(here.green(), window.green()), mix(here.blue(), window.blue()));
}

// Bucket labels relative to now ("-4:30", ..., "now"): fixed per level, so
// the axis never changes while the bars move.
QStringList relativeLabels(const Core::LevelUsage& l)
{
    QStringList out;
    const std::size_t n = l.buckets.size();
    const Core::Millis width = n ? l.periodMs / Core::Millis(n) : l.periodMs;
    for (std::size_t i = 0; i < n; ++i)
        out << formatDuration(Core::Millis(n - 1 - i) * width, Span::Ago);
    return out;
}

} // namespace

BucketsView::BucketsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 12, 12, 12);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("<b>Client</b>")));
    m_address = new QLineEdit;
    m_address->setPlaceholderText(tr("an address, e.g. 203.0.113.66 — or pick one in the heat map below"));
    m_address->setClearButtonEnabled(true);
    auto* show = new QPushButton(Theme::icon(QStringLiteral("buckets")), tr("Show"));
    bar->addWidget(m_address, 1);
    bar->addWidget(show);
    layout->addLayout(bar);
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_legend = new QLabel;
    m_legend->setWordWrap(true);
    Theme::setTextColor(m_legend, Theme::muted());
    layout->addWidget(m_legend);

    m_levelsArea = new QWidget;
    m_grid = new QGridLayout(m_levelsArea);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setColumnStretch(0, 1);
    m_grid->setColumnStretch(1, 1);
    layout->addWidget(m_levelsArea, 3);

    layout->addWidget(new QLabel(tr("<b>Live buckets</b>: the busiest clients in each 3-second bucket of the last minute "
                                    "(the engine forgets a bucket as it leaves the window). Click a row to show that client.")));
    m_heat = new HeatMap;
    auto* scroll = new QScrollArea;
    scroll->setWidget(m_heat);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    layout->addWidget(scroll, 2);

    auto request = [this] { Q_EMIT followRequested(m_address->text().trimmed()); };
    connect(show, &QPushButton::clicked, this, request);
    connect(m_address, &QLineEdit::returnPressed, this, request);
    connect(m_heat, &HeatMap::addressClicked, this, &BucketsView::follow);
}

void BucketsView::follow(const QString& address)
{
    m_address->setText(address);
    Q_EMIT followRequested(address);
}

void BucketsView::rebuildCharts(const std::vector<Core::LevelUsage>& levels)
{
    for (LevelChart& c : m_levels)
        delete c.view;  // the view owns its chart, series and axes
    m_levels.clear();
    for (std::size_t i = 0; i < levels.size(); ++i) {
        const Core::LevelUsage& l = levels[i];
        LevelChart c;
        c.name = l.name;
        c.buckets = l.buckets.size();
        c.chart = new QChart;
        c.chart->setAnimationOptions(QChart::NoAnimation);
        c.chart->setBackgroundVisible(false);
        c.chart->legend()->hide();
        c.chart->setMargins(QMargins(2, 2, 2, 2));
        QFont title = c.chart->titleFont();
        title.setBold(false);
        c.chart->setTitleFont(title);
        c.chart->setTitleBrush(QApplication::palette().color(QPalette::WindowText));
        // Stacked: this node's requests below, the other nodes' above (none
        // on a single node, where the bars are what they always were).
        auto* series = new QStackedBarSeries;
        c.set = new QBarSet(tr("requests here"));
        c.set->setColor(Theme::action(Core::Action::DryRun));
        c.set->setBorderColor(Qt::transparent);
        c.others = new QBarSet(tr("requests to the other nodes"));
        c.others->setColor(othersColor());
        c.others->setBorderColor(Qt::transparent);
        for (std::size_t b = 0; b < c.buckets; ++b) {
            c.set->append(0);
            c.others->append(0);
        }
        series->append(c.set);
        series->append(c.others);
        series->setBarWidth(0.85);
        c.chart->addSeries(series);
        c.running = new QLineSeries;
        c.running->setName(tr("running total"));
        c.running->setPen(QPen(Theme::action(Core::Action::Throttle), 2));
        c.chart->addSeries(c.running);
        c.limit = new QLineSeries;
        c.limit->setName(tr("limit"));
        QPen dashed(Theme::action(Core::Action::Block), 1.5, Qt::DashLine);
        c.limit->setPen(dashed);
        c.chart->addSeries(c.limit);
        // Buckets at 0, 1, ... n-1; a label under a bucket, on every bucket
        // or every n-th one, as many as fit (relabel()).
        c.x = new QCategoryAxis;
        c.x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
        c.x->setRange(-0.5, double(c.buckets) - 0.5);
        c.x->setLabelsColor(QApplication::palette().color(QPalette::WindowText));
        c.x->setGridLineVisible(false);
        c.labels = relativeLabels(l);
        c.y = new QValueAxis;
        c.y->setLabelFormat(QStringLiteral("%d"));
        c.y->setLabelsColor(QApplication::palette().color(QPalette::WindowText));
        c.y->setGridLineColor(Theme::gridLine());
        c.chart->addAxis(c.x, Qt::AlignBottom);
        c.chart->addAxis(c.y, Qt::AlignLeft);
        for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(series), static_cast<QAbstractSeries*>(c.running),
                                   static_cast<QAbstractSeries*>(c.limit)}) {
            s->attachAxis(c.x);
            s->attachAxis(c.y);
        }
        c.x->setRange(-0.5, double(c.buckets) - 0.5);  // attaching may have moved it
        c.view = new QChartView(c.chart);
        c.view->setRenderHint(QPainter::Antialiasing);
        c.view->setMinimumHeight(170);
        m_grid->addWidget(c.view, int(i / 2), int(i % 2));
        m_levels.push_back(c);
        relabel(m_levels.back());
        connect(c.chart, &QChart::plotAreaChanged, this, [this, chart = c.chart] {
            for (LevelChart& level : m_levels)
                if (level.chart == chart)
                    relabel(level);
        });
    }
}

void BucketsView::relabel(LevelChart& c)
{
    const int n = int(c.labels.size());
    if (n == 0)
        return;
    // The widest label and a gap must fit in the buckets between two labels.
    const QFontMetrics fm(c.x->labelsFont());
    int widest = 0;
    for (const QString& label : c.labels)
        widest = std::max(widest, fm.horizontalAdvance(label));
    const double perBucket = c.chart->plotArea().width() / n;
    // Not laid out yet (no plot area): every label, until plotAreaChanged
    // says how much room there is (a first picture must not show "now" alone).
    int stride = perBucket > 0 ? int(std::ceil((widest + fm.horizontalAdvance(QLatin1Char(' ')) * 2) / perBucket)) : 1;
    stride = std::clamp(stride, 1, n);
    if (stride == c.stride)
        return;
    c.stride = stride;
    for (const QString& label : c.x->categoriesLabels())
        c.x->remove(label);
    c.x->setStartValue(-1.0);
    // Counted back from "now", so the newest bucket always has its label.
    for (int i = (n - 1) % stride; i < n; i += stride)
        c.x->append(c.labels[i], double(i));
}

QStringList BucketsView::levelAxisLabels(int i) const
{
    return i >= 0 && i < int(m_levels.size()) ? m_levels[std::size_t(i)].x->categoriesLabels() : QStringList();
}

double BucketsView::levelPlotWidth(int i) const
{
    return i >= 0 && i < int(m_levels.size()) ? m_levels[std::size_t(i)].chart->plotArea().width() : 0.0;
}

void BucketsView::updateChart(LevelChart& c, const Core::LevelUsage& l, bool clustered)
{
    // Bars: the buckets (this node's below, the other nodes' above). Line:
    // the running total through the window, the number the limit applies
    // to. Dashed: the limit.
    QList<QPointF> running;
    std::uint64_t sum = 0;
    std::uint32_t peak = 0;
    const bool split = l.bucketsHere.size() == l.buckets.size();
    for (std::size_t b = 0; b < l.buckets.size() && b < c.buckets; ++b) {
        const std::uint32_t v = l.buckets[b].count;
        const std::uint32_t here = split ? std::min(v, l.bucketsHere[b].count) : v;
        c.set->replace(qsizetype(b), here);
        c.others->replace(qsizetype(b), v - here);
        sum += v;
        peak = std::max(peak, v);
        running.append(QPointF(double(b), double(sum)));
    }
    c.running->replace(running);
    c.limit->replace({QPointF(-0.5, l.limit), QPointF(double(c.buckets) - 0.5, l.limit)});
    c.y->setRange(0, TrafficView::niceCeiling(double(std::max<std::uint64_t>({sum, peak, l.limit})) * 1.05));
    c.y->setTickCount(6);
    QString title = clustered ? tr("<b>%1</b> · %2<br>%3 of %4 in the cluster (%5 here) · %6 left")
                                    .arg(qs(l.name), algorithmText(l))
                                    .arg(l.used)
                                    .arg(l.limit)
                                    .arg(l.usedHere)
                                    .arg(l.remaining)
                              : tr("<b>%1</b> · %2<br>%3 of %4 in the window · %5 left")
                                    .arg(qs(l.name), algorithmText(l))
                                    .arg(l.used)
                                    .arg(l.limit)
                                    .arg(l.remaining);
    c.view->setToolTip(clustered ? tr("%1: %2.\n%3")
                                       .arg(qs(l.name), ClusterText::hereAndCluster(l.usedHere, l.used),
                                            ClusterText::judgedOnTheCluster(l.usedHere, l.used, l.limit))
                                 : tr("%1: %2 of %3 requests in the window, %4 left.").arg(qs(l.name)).arg(l.used).arg(l.limit).arg(l.remaining));
    if (l.refusing)
        title += tr(" · <span style='color:%1'>refusing, passes again in %2</span>")
                     .arg(Theme::action(Core::Action::Block).name(), formatDuration(l.retryAfterMs, Span::Left));
    else if (l.used > 0)
        title += tr(" · whole again in %1").arg(formatDuration(l.resetMs, Span::Left));
    c.chart->setTitle(title);
}

void BucketsView::apply(const ConsoleSnapshot& s)
{
    m_heat->apply(s);
    const bool clustered = s.cluster.has_value();
    if (m_legendClustered != clustered) {
        m_legendClustered = clustered;
        const QString bars = clustered ? tr("Bars: requests in each bucket, oldest left: <span style='color:%1'>this node's</span> below, "
                                            "<span style='color:%2'>the other nodes'</span> above.")
                                             .arg(Theme::action(Core::Action::DryRun).name(), othersColor().name())
                                       : tr("Bars: requests in each bucket, oldest left.");
        m_legend->setText(bars + tr(" <span style='color:%1'>Line</span>: the running total through the window — what the limit is "
                                    "compared with. <span style='color:%2'>Dashed</span>: the limit.")
                                     .arg(Theme::action(Core::Action::Throttle).name(), Theme::action(Core::Action::Block).name()));
    }
    m_shown = s.followed ? std::optional<Core::Cidr>(Core::Cidr(s.followed->summary.key, s.followed->summary.keyPrefix)) : std::nullopt;
    if (!s.followed) {
        if (!m_levels.empty())
            rebuildCharts({});
        m_summary->setText(s.followedText.empty()
                               ? tr("Pick a client to see each of its rule levels bucket by bucket.")
                               : tr("%1 is not tracked right now: no request from it in the last %2, and it is on no list.")
                                     .arg(qs(s.followedText), formatDuration(Core::Tuning::liveWindowMs, Span::Left)));
        return;
    }
    const Core::ClientDetail& d = *s.followed;
    bool same = d.levels.size() == m_levels.size();
    for (std::size_t i = 0; same && i < d.levels.size(); ++i)
        same = d.levels[i].name == m_levels[i].name && d.levels[i].buckets.size() == m_levels[i].buckets;
    if (!same)
        rebuildCharts(d.levels);
    for (std::size_t i = 0; i < d.levels.size(); ++i)
        updateChart(m_levels[i], d.levels[i], clustered);
    QString summary = (clustered ? tr("<b>%1</b> (last seen as %2) — %3, %4 requests to this node in the last minute")
                                 : tr("<b>%1</b> (last seen as %2) — %3, %4 requests in the last minute"))
                          .arg(qs(d.summary.keyText()),
                               d.summary.lastAddress ? qs(d.summary.lastAddress->toString()) : tr("an address no longer kept"),
                               Theme::stateLabel(d.summary.state))
                          .arg(d.summary.last60s);
    if (!d.summary.customer.empty())
        summary += tr(", speaks for customer <b>%1</b> (its tier's levels apply)").arg(qs(d.summary.customer));
    if (d.listEntry && d.listKind)
        summary += tr("; on the %1 (%2)%3")
                       .arg(QString::fromLatin1(Core::toString(*d.listKind)), qs(d.listEntry->reason))
                       .arg(d.listEntry->expiresAt == Core::NeverExpires ? tr(", permanent")
                                                                         : tr(", for another %1").arg(formatDuration(d.listEntry->expiresAt - s.now, Span::Left)));
    m_summary->setText(summary + QLatin1Char('.'));
}

QString BucketsView::levelTitle(int i) const
{
    return i >= 0 && i < int(m_levels.size()) ? m_levels[std::size_t(i)].chart->title() : QString();
}

QString BucketsView::levelToolTip(int i) const
{
    return i >= 0 && i < int(m_levels.size()) ? m_levels[std::size_t(i)].view->toolTip() : QString();
}

} // namespace Floodgate::Ui
