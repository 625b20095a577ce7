// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/TrafficView.h"

#include "core/Tuning.h"

#include "ui/Format.h"
#include "ui/Theme.h"

#include <QApplication>
#include <QButtonGroup>
#include <QCursor>
#include <QFrame>
#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QCategoryAxis>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPushButton>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>

#include <cmath>

namespace Floodgate::Ui {

namespace {

void styleChart(QChart* chart)
{
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->setBackgroundVisible(false);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignTop);
    chart->legend()->setLabelColor(QApplication::palette().color(QPalette::WindowText));
}

void styleAxis(QAbstractAxis* axis)
{
    axis->setLabelsColor(QApplication::palette().color(QPalette::WindowText));
    axis->setGridLineColor(Theme::gridLine());
    axis->setLinePenColor(Theme::gridLine());
    axis->setTitleBrush(Theme::muted());
}

const std::array<QColor, 5> TOP_COLORS = {QColor(0x8e, 0x24, 0xaa), QColor(0x00, 0x89, 0x7b), QColor(0xf4, 0x51, 0x1e),
                                          QColor(0x39, 0x49, 0xab), QColor(0x7c, 0xb3, 0x42)};

} // namespace

TrafficView::TrafficView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 12, 12, 12);
    layout->setSpacing(10);

    // Headline: what is happening right now.
    auto* tiles = new QHBoxLayout;
    tiles->setSpacing(12);
    const std::array<std::pair<QString, QColor>, 5> captions = {{
        {tr("requests / s"), Theme::action(Core::Action::Allow)},
        {tr("throttled / s"), Theme::action(Core::Action::Throttle)},
        {tr("blocked / s"), Theme::action(Core::Action::Block)},
        {tr("clients seen in the last minute"), QApplication::palette().color(QPalette::WindowText)},
        {blocklistCaption(0), QApplication::palette().color(QPalette::WindowText)},
    }};
    for (std::size_t i = 0; i < m_tiles.size(); ++i) {
        auto* box = new QFrame;
        box->setFrameShape(QFrame::StyledPanel);
        box->setObjectName(QStringLiteral("tile"));
        auto* v = new QVBoxLayout(box);
        v->setContentsMargins(12, 8, 12, 8);
        m_tiles[i].value = new QLabel(QStringLiteral("0"));
        QFont f = m_tiles[i].value->font();
        f.setPointSizeF(f.pointSizeF() * 2.0);
        f.setBold(true);
        m_tiles[i].value->setFont(f);
        Theme::setTextColor(m_tiles[i].value, captions[i].second);
        m_tiles[i].caption = new QLabel(captions[i].first);
        m_tiles[i].caption->setWordWrap(true);  // a second line rather than a cut one
        Theme::setTextColor(m_tiles[i].caption, Theme::muted());
        v->addWidget(m_tiles[i].value);
        v->addWidget(m_tiles[i].caption);
        tiles->addWidget(box, 1);
    }
    m_tiles[3].caption->setToolTip(tr("Addresses (IPv6 clients per prefix) that sent a request in the last minute; the status bar "
                                      "says the same number"));
    m_tiles[4].caption->setToolTip(tr("Entries on the blocklist now, the automatic bans of escalation included (Access lists)"));
    layout->addLayout(tiles);

    // Requests per second by action.
    auto* header = new QHBoxLayout;
    auto* title = new QLabel(tr("<b>Requests per second</b>, by what Floodgate answered"));
    header->addWidget(title);
    header->addStretch();
    m_rangeButtons = new QButtonGroup(this);
    for (std::size_t i = 0; i < Ranges.size(); ++i) {
        auto* b = new QPushButton(QString::fromLatin1(Ranges[i].label));
        b->setCheckable(true);
        b->setFlat(true);
        b->setChecked(i == 0);
        b->setToolTip(tr("Show the last %1").arg(QString::fromLatin1(Ranges[i].label)));
        m_rangeButtons->addButton(b, int(i));
        header->addWidget(b);
    }
    connect(m_rangeButtons, &QButtonGroup::idClicked, this, &TrafficView::setRange);
    layout->addLayout(header);

    m_traffic = new QChart;
    styleChart(m_traffic);
    m_x = new QCategoryAxis;
    m_y = new QValueAxis;
    m_y->setLabelFormat(QStringLiteral("%d"));
    m_y->setTitleText(tr("req/s"));
    styleAxis(m_x);
    styleAxis(m_y);
    m_traffic->addAxis(m_x, Qt::AlignBottom);
    m_traffic->addAxis(m_y, Qt::AlignLeft);
    for (std::size_t a = 0; a < Core::ActionCount; ++a) {
        auto* s = new QLineSeries;
        s->setName(Theme::actionLabel(Core::Action(a)));
        s->setPen(QPen(Theme::action(Core::Action(a)), 2));
        m_traffic->addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_y);
        connect(s, &QLineSeries::hovered, this, [this](const QPointF& p, bool on) {
            if (on)
                showValuesAt(p);
            else
                QToolTip::hideText();
        });
        m_series[a] = s;
    }
    m_trafficView = new QChartView(m_traffic);
    m_trafficView->setRenderHint(QPainter::Antialiasing);
    m_trafficView->setMinimumHeight(220);
    layout->addWidget(m_trafficView, 3);

    // The five busiest clients.
    layout->addWidget(new QLabel(tr("<b>Busiest clients</b>, requests per second over the last minute, in whole 3-second buckets")));
    m_top = new QChart;
    styleChart(m_top);
    m_topX = new QCategoryAxis;
    setTimeAxis(m_topX, int(Core::Tuning::liveWindowMs / 1000), 10);
    m_topY = new QValueAxis;
    m_topY->setLabelFormat(QStringLiteral("%g"));
    styleAxis(m_topX);
    styleAxis(m_topY);
    m_top->addAxis(m_topX, Qt::AlignBottom);
    m_top->addAxis(m_topY, Qt::AlignLeft);
    for (std::size_t i = 0; i < m_topSeries.size(); ++i) {
        auto* s = new QLineSeries;
        s->setPen(QPen(TOP_COLORS[i], 2));
        m_top->addSeries(s);
        s->attachAxis(m_topX);
        s->attachAxis(m_topY);
        connect(s, &QLineSeries::clicked, this, [this, s] { Q_EMIT clientClicked(s->name().section(QLatin1Char(' '), 0, 0)); });
        connect(s, &QLineSeries::hovered, this, [s](const QPointF& p, bool on) {
            if (on)
                QToolTip::showText(QCursor::pos(), s->name() + QLatin1Char('\n') + describeBucketNear(s->points(), p.x()));
        });
        m_topSeries[i] = s;
    }
    m_topView = new QChartView(m_top);
    m_topView->setRenderHint(QPainter::Antialiasing);
    m_topView->setMinimumHeight(180);
    layout->addWidget(m_topView, 2);

    m_explain = new QLabel;
    m_explain->setWordWrap(true);
    Theme::setTextColor(m_explain, Theme::muted());
    explainStatus(m_status);
    layout->addWidget(m_explain);
    setRange(0);
}

QStringList TrafficView::timeLabels(int spanSeconds, int tickSeconds)
{
    QStringList out;
    // A minute's axis in seconds throughout ("-60 s", not "-1m" beside "-50 s").
    for (int before = spanSeconds; before >= 0; before -= tickSeconds)
        out << (before > 0 && spanSeconds <= 60 ? tr("-%1 s").arg(before) : formatDuration(Core::Millis(before) * 1000, Span::Ago));
    return out;
}

void TrafficView::setTimeAxis(QCategoryAxis* axis, int spanSeconds, int tickSeconds)
{
    // A label and a grid line on each tick, in seconds before now; points
    // are drawn where their slot or bucket ended.
    for (const QString& label : axis->categoriesLabels())
        axis->remove(label);
    axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    axis->setStartValue(-spanSeconds - 1);
    const QStringList labels = timeLabels(spanSeconds, tickSeconds);
    for (int i = 0; i < labels.size(); ++i)
        axis->append(labels[i], -spanSeconds + i * tickSeconds);
    axis->setRange(-spanSeconds, 0);
}

QString TrafficView::tileValue(int i) const
{
    return i >= 0 && i < int(m_tiles.size()) ? m_tiles[std::size_t(i)].value->text() : QString();
}

QString TrafficView::tileCaption(int i) const
{
    return i >= 0 && i < int(m_tiles.size()) ? m_tiles[std::size_t(i)].caption->text() : QString();
}

QString TrafficView::blocklistCaption(std::size_t automatic)
{
    return automatic ? tr("on the blocklist, of which %1 automatic").arg(formatCount(automatic)) : tr("on the blocklist, none automatic");
}

double TrafficView::niceCeiling(double max)
{
    if (!(max > 5))
        return 5;
    const double magnitude = std::pow(10.0, std::floor(std::log10(max)));
    for (double step : {1.0, 2.0, 5.0, 10.0})
        if (step * magnitude >= max)
            return step * magnitude;
    return 10 * magnitude;
}

void TrafficView::setRange(int index)
{
    if (index < 0 || index >= int(Ranges.size()))
        return;
    m_range = index;
    if (auto* b = m_rangeButtons->button(index))
        b->setChecked(true);
    const Range& r = Ranges[std::size_t(index)];
    setTimeAxis(m_x, r.slots * r.secondsPerSlot, r.tickSeconds);
    redrawTraffic();
}

void TrafficView::explainStatus(int throttleStatus)
{
    m_status = throttleStatus;
    m_explain->setText(tr("Allowed requests reached your site. Throttled ones were answered %1 with an exact Retry-After. "
                          "Blocked ones came from an address on the blocklist (403). Hover a line for exact values; "
                          "click a busy client to see its buckets.")
                           .arg(throttleStatus));
}

int TrafficView::pointCount() const
{
    int n = 0;
    for (auto* s : m_series)
        n += int(s->count());
    for (auto* s : m_topSeries)
        n += int(s->count());
    return n;
}

void TrafficView::apply(const ConsoleSnapshot& s, bool visible)
{
    m_now = s.now;
    for (const Core::SecondCounts& c : s.seconds) {
        if (!m_history.empty() && c.second <= m_history.back().second)
            continue;
        m_history.push_back(c);
    }
    while (m_history.size() > 3600)
        m_history.pop_front();
    if (!visible)
        return;

    // Headline: the last complete second, and the state of things.
    const Core::SecondCounts last = m_history.empty() ? Core::SecondCounts{} : m_history.back();
    m_tiles[0].value->setText(formatCount(last.total()));
    m_tiles[1].value->setText(formatCount(last.byAction[std::size_t(Core::Action::Throttle)] + last.byAction[std::size_t(Core::Action::DryRun)]));
    m_tiles[2].value->setText(formatCount(last.byAction[std::size_t(Core::Action::Block)]));
    m_tiles[3].value->setText(formatCount(s.buckets.keys));
    m_tiles[4].value->setText(formatCount(s.counters.blocklistEntries + s.counters.automaticEntries));
    m_tiles[4].caption->setText(blocklistCaption(s.counters.automaticEntries));
    m_tiles[1].caption->setText(s.config && s.config->settings.dryRun ? tr("would be throttled / s (dry run)") : tr("throttled / s"));
    if (s.config && s.config->settings.throttleStatus != m_status)
        explainStatus(s.config->settings.throttleStatus);
    redrawTraffic();
    redrawTop(s);
}

void TrafficView::redrawTraffic()
{
    const Range& r = Ranges[std::size_t(m_range)];
    const Core::Millis slotMs = Core::Millis(r.secondsPerSlot) * 1000;
    // Slots end at the newest complete second, aligned so a slot keeps its
    // seconds from one refresh to the next.
    const Core::Millis newest = m_history.empty() ? Core::floorDiv(m_now, 1000) * 1000 - 1000 : m_history.back().second;
    const Core::Millis lastSlotStart = Core::floorDiv(newest, slotMs) * slotMs;
    const Core::Millis firstSlotStart = lastSlotStart - Core::Millis(r.slots - 1) * slotMs;
    std::vector<std::array<double, Core::ActionCount>> sums(std::size_t(r.slots), std::array<double, Core::ActionCount>{});
    std::vector<int> seconds(std::size_t(r.slots), 0);
    // Each slot drawn where its known seconds end, in seconds before now
    // (the newest slot of 5 or 30 s may still be filling), as the busiest
    // clients below are drawn where their buckets ended.
    auto slotEndBeforeNow = [&](int i) {
        const Core::Millis end = std::min(firstSlotStart + Core::Millis(i + 1) * slotMs, newest + 1000);
        return double(end - m_now) / 1000.0;
    };
    for (auto it = m_history.rbegin(); it != m_history.rend() && it->second >= firstSlotStart; ++it) {
        const auto slot = std::size_t((it->second - firstSlotStart) / slotMs);
        for (std::size_t a = 0; a < Core::ActionCount; ++a)
            sums[slot][a] += double(it->byAction[a]);
        ++seconds[slot];
    }
    double peak = 0;
    for (std::size_t a = 0; a < Core::ActionCount; ++a) {
        QList<QPointF> points;
        points.reserve(r.slots);
        for (int i = 0; i < r.slots; ++i) {
            // A mean per second over the seconds of the slot that are known.
            const double v = seconds[std::size_t(i)] ? sums[std::size_t(i)][a] / seconds[std::size_t(i)] : 0.0;
            peak = std::max(peak, v);
            points.append(QPointF(slotEndBeforeNow(i), v));
        }
        m_series[a]->replace(points);
    }
    const double top = niceCeiling(peak * 1.05);
    m_y->setRange(0, top);
    m_y->setTickCount(6);
}

QString TrafficView::describeBucketNear(const QList<QPointF>& points, double x)
{
    if (points.isEmpty())
        return {};
    // The bucket whose end is nearest the pointer: its exact values, not
    // the line's height between two of them.
    const QPointF* best = &points.front();
    for (const QPointF& q : points)
        if (std::abs(q.x() - x) < std::abs(best->x() - x))
            best = &q;
    const double seconds = double(Core::Tuning::liveBucketMs) / 1000.0;
    return tr("the %1 s ending %2 s ago: %3 requests, %4 req/s")
        .arg(seconds, 0, 'g')
        .arg(-best->x(), 0, 'f', 1)
        .arg(std::llround(best->y() * seconds))
        .arg(best->y(), 0, 'f', 2);
}

void TrafficView::redrawTop(const ConsoleSnapshot& s)
{
    // Whole buckets only (ClientRow::wholeLiveBuckets, as the traffic chart
    // leaves out the second still filling), each drawn where it ended: the
    // newest whole one ended as the bucket holding s.now began.
    const Core::Millis width = Core::Tuning::liveBucketMs;
    const Core::Millis into = s.now - Core::floorDiv(s.now, width) * width;
    double peak = 0;
    for (std::size_t i = 0; i < m_topSeries.size(); ++i) {
        QLineSeries* series = m_topSeries[i];
        if (i >= s.clients.size()) {
            series->clear();
            series->setVisible(false);
            continue;
        }
        const ClientRow& row = s.clients[i];
        const Core::ClientSummary& c = row.summary;
        QList<QPointF> points;
        const auto whole = row.wholeLiveBuckets();
        for (std::size_t b = 0; b < whole.size(); ++b) {
            const double rate = double(whole[b]) * 1000.0 / double(width);
            peak = std::max(peak, rate);
            const Core::Millis endedAgo = into + Core::Millis(whole.size() - 1 - b) * width;
            points.append(QPointF(-double(endedAgo) / 1000.0, rate));
        }
        series->replace(points);
        QString name = row.key;
        if (!c.customer.empty())
            name += QStringLiteral(" (%1)").arg(qs(c.customer));
        series->setName(name);
        series->setVisible(true);
    }
    m_topY->setRange(0, niceCeiling(peak * 1.05));
    m_topY->setTickCount(6);
    // Hidden series keep their legend markers otherwise.
    for (QLegendMarker* marker : m_top->legend()->markers())
        marker->setVisible(marker->series()->isVisible());
}

void TrafficView::showValuesAt(const QPointF& point)
{
    const Range& r = Ranges[std::size_t(m_range)];
    const QList<QPointF> first = m_series[0]->points();
    if (first.isEmpty())
        return;
    // The slot nearest the pointer, and every action's value in it.
    int best = 0;
    for (int i = 1; i < first.size(); ++i)
        if (std::abs(first[i].x() - point.x()) < std::abs(first[best].x() - point.x()))
            best = i;
    // The slot's clock times too, to find it in a log.
    const Core::Millis end = m_now + Core::Millis(std::llround(first[best].x() * 1000));
    const Core::Millis start = Core::floorDiv(end - 1, Core::Millis(r.secondsPerSlot) * 1000) * Core::Millis(r.secondsPerSlot) * 1000;
    const QString ago = formatDuration(std::max<Core::Millis>(0, m_now - end), Span::Since);
    QString text = r.secondsPerSlot == 1
        ? tr("The second ending %1 (%2)").arg(ago, QDateTime::fromMSecsSinceEpoch(start).toString(QStringLiteral("HH:mm:ss")))
        : tr("%1 – %2, ending %3 (mean per second)")
              .arg(QDateTime::fromMSecsSinceEpoch(start).toString(QStringLiteral("HH:mm:ss")),
                   QDateTime::fromMSecsSinceEpoch(end).toString(QStringLiteral("HH:mm:ss")), ago);
    for (std::size_t a = 0; a < Core::ActionCount; ++a)
        text += QStringLiteral("\n%1: %2/s").arg(Theme::actionLabel(Core::Action(a))).arg(m_series[a]->at(best).y(), 0, 'f', r.secondsPerSlot == 1 ? 0 : 1);
    QToolTip::showText(QCursor::pos(), text, m_trafficView);
}

} // namespace Floodgate::Ui
