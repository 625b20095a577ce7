// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/HeatMap.h"

#include "ui/Format.h"
#include "ui/Theme.h"

#include <QApplication>
#include <QDateTime>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace Floodgate::Ui {

namespace {
constexpr int HEADER = 22;
constexpr int ROW = 22;
} // namespace

HeatMap::HeatMap(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

QSize HeatMap::sizeHint() const
{
    return {900, HEADER + ROW * (MaxRows + 1) + 8};
}

QSize HeatMap::minimumSizeHint() const
{
    return {400, HEADER + ROW * 4};
}

int HeatMap::labelWidth() const
{
    return std::max(170, fontMetrics().horizontalAdvance(QStringLiteral("2001:db8:ffff:ffff::/64  ")));
}

QRect HeatMap::cellRect(int row, int column) const
{
    const int left = labelWidth();
    const int n = int(Core::Tuning::liveBucketCount);
    const int width = std::max(8, (this->width() - left - 60) / n);
    return QRect(left + column * width, HEADER + row * ROW, width - 2, ROW - 2);
}

void HeatMap::apply(const ConsoleSnapshot& s)
{
    // The busiest clients of the last minute, with their exact per-bucket counts.
    std::vector<const ClientRow*> busiest;
    for (const ClientRow& c : s.clients)
        if (c.summary.last60s > 0)
            busiest.push_back(&c);
    std::partial_sort(busiest.begin(), busiest.begin() + std::min<std::ptrdiff_t>(MaxRows, std::ptrdiff_t(busiest.size())), busiest.end(),
                      [](const ClientRow* a, const ClientRow* b) { return a->summary.last60s > b->summary.last60s; });
    busiest.resize(std::min<std::size_t>(MaxRows, busiest.size()));
    m_rows.clear();
    m_peak = 1;
    for (const ClientRow* c : busiest) {
        Row r;
        r.address = c->key;
        r.counts = c->summary.live;
        r.total = c->summary.last60s;
        for (auto v : r.counts)
            m_peak = std::max(m_peak, v);
        m_rows.push_back(std::move(r));
    }
    for (std::size_t i = 0; i < s.buckets.buckets.size() && i < m_totals.size(); ++i) {
        m_totals[i] = s.buckets.buckets[i].total;
        m_starts[i] = s.buckets.buckets[i].startMs;
    }
    update();
}

QString HeatMap::columnLabel(int column) const
{
    // Seconds before the bucket still filling began, as the level charts
    // above count them (a clock time such as "13:45" reads as a time of
    // day); the tooltip gives each bucket's clock times.
    const int newest = int(Core::Tuning::liveBucketCount) - 1;
    if (column == newest)
        return tr("now");
    if (m_starts[std::size_t(newest)] == 0)
        return {};  // no snapshot yet
    const Core::Millis before = m_starts[std::size_t(newest)] - m_starts[std::size_t(column)];
    return tr("-%1 s").arg(before / 1000);
}

void HeatMap::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QPalette& pal = QApplication::palette();
    const QColor text = pal.color(QPalette::WindowText);
    const QColor hot = Theme::action(Core::Action::Block);
    const QColor warm = Theme::action(Core::Action::Throttle);
    const int n = int(Core::Tuning::liveBucketCount);
    const QFontMetrics fm = fontMetrics();

    // Column headers: each bucket's start, every fourth labelled.
    p.setPen(Theme::muted());
    for (int c = 0; c < n; ++c) {
        if (c % 4 != 0 && c != n - 1)
            continue;
        const QRect cell = cellRect(0, c);
        p.drawText(QRect(cell.left(), 0, cell.width() * 3, HEADER - 4), Qt::AlignLeft | Qt::AlignBottom, columnLabel(c));
    }
    if (m_rows.empty()) {
        p.setPen(Theme::muted());
        p.drawText(rect().adjusted(0, HEADER, 0, 0), Qt::AlignCenter, tr("No requests in the last minute"));
        return;
    }
    for (int r = 0; r < int(m_rows.size()); ++r) {
        const Row& row = m_rows[std::size_t(r)];
        const QRect label(4, HEADER + r * ROW, labelWidth() - 8, ROW - 2);
        if (r == m_hoverRow)
            p.fillRect(QRect(0, label.top(), width(), ROW - 2), Theme::gridLine());
        p.setPen(text);
        p.drawText(label, Qt::AlignVCenter | Qt::AlignLeft, fm.elidedText(row.address, Qt::ElideMiddle, label.width()));
        for (int c = 0; c < n; ++c) {
            const QRect cell = cellRect(r, c);
            const std::uint32_t v = row.counts[std::size_t(c)];
            if (v == 0) {
                p.fillRect(cell, Theme::gridLine());
                continue;
            }
            // Square-root scale: one request still shows, a flood saturates.
            const double heat = std::sqrt(double(v) / double(m_peak));
            QColor fill = heat > 0.6 ? hot : warm;
            fill.setAlphaF(float(0.2 + 0.8 * heat));
            p.fillRect(cell, fill);
            if (cell.width() >= fm.horizontalAdvance(QString::number(v)) + 4) {
                p.setPen(heat > 0.5 ? QColor(Qt::white) : text);
                p.drawText(cell, Qt::AlignCenter, QString::number(v));
            }
        }
        p.setPen(Theme::muted());
        const QRect last = cellRect(r, n - 1);
        p.drawText(QRect(last.right() + 6, last.top(), 54, last.height()), Qt::AlignVCenter | Qt::AlignLeft, QString::number(row.total));
    }
    // Totals of every client per bucket.
    const int totalsRow = int(m_rows.size());
    p.setPen(Theme::muted());
    p.drawText(QRect(4, HEADER + totalsRow * ROW, labelWidth() - 8, ROW - 2), Qt::AlignVCenter | Qt::AlignLeft, tr("all clients"));
    for (int c = 0; c < n; ++c) {
        const QRect cell = cellRect(totalsRow, c);
        p.drawText(cell, Qt::AlignCenter, QString::number(m_totals[std::size_t(c)]));
    }
}

void HeatMap::mouseMoveEvent(QMouseEvent* e)
{
    const int y = int(e->position().y());
    const int row = y < HEADER ? -1 : (y - HEADER) / ROW;
    const int hover = row >= 0 && row < int(m_rows.size()) ? row : -1;
    if (hover != m_hoverRow) {
        m_hoverRow = hover;
        update();
    }
    if (hover < 0)
        return;
    const int n = int(Core::Tuning::liveBucketCount);
    for (int c = 0; c < n; ++c) {
        if (cellRect(hover, c).contains(e->position().toPoint())) {
            const auto start = m_starts[std::size_t(c)];
            QToolTip::showText(e->globalPosition().toPoint(),
                               QObject::tr("%1\n%2 requests from %3 to %4\n%5 from every client in that bucket")
                                   .arg(m_rows[std::size_t(hover)].address)
                                   .arg(m_rows[std::size_t(hover)].counts[std::size_t(c)])
                                   .arg(QDateTime::fromMSecsSinceEpoch(start).toString(QStringLiteral("HH:mm:ss")),
                                        QDateTime::fromMSecsSinceEpoch(start + Core::Tuning::liveBucketMs).toString(QStringLiteral("HH:mm:ss")))
                                   .arg(m_totals[std::size_t(c)]),
                               this);
            return;
        }
    }
}

void HeatMap::mousePressEvent(QMouseEvent* e)
{
    const int y = int(e->position().y());
    const int row = y < HEADER ? -1 : (y - HEADER) / ROW;
    if (row >= 0 && row < int(m_rows.size()))
        Q_EMIT addressClicked(m_rows[std::size_t(row)].address);
}

} // namespace Floodgate::Ui
