// SPDX-License-Identifier: GPL-3.0-or-later
// Live traffic: headline numbers a newcomer reads in ten seconds, requests
// per second split by action over 1 min / 10 min / 1 h, and the rates of the
// five busiest clients over the last minute. Both on one kind of time axis:
// time before now ("-50 s" ... "now"), as the Buckets view's charts and heat
// map count it. Fixed-size point lists replaced once per refresh (no
// appends, no animations), a "nice" Y scale, exact values on hover.
#pragma once

#include <QList>
#include <QPointF>
#include <QWidget>

#include <array>
#include <deque>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

class QChart;
class QChartView;
class QCategoryAxis;
class QLabel;
class QLineSeries;
class QValueAxis;
class QButtonGroup;

namespace Floodgate::Ui {

class TrafficView : public QWidget {
    Q_OBJECT

public:
    explicit TrafficView(QWidget* parent = nullptr);
    // The history takes every snapshot; the tiles and charts are drawn only
    // while the view is `visible` (applying the latest again catches up).
    void apply(const ConsoleSnapshot& snapshot, bool visible = true);

    struct Range {
        const char* label;
        int slots;           // points per series
        int secondsPerSlot;  // seconds averaged into one point
        int tickSeconds;     // time-axis labels fall on multiples of this
    };
    static constexpr std::array<Range, 3> Ranges = {{{"1 min", 60, 1, 10}, {"10 min", 120, 5, 60}, {"1 h", 120, 30, 600}}};
    void setRange(int index);
    int range() const { return m_range; }
    // Points across all series of both charts (stays bounded, whatever the uptime).
    int pointCount() const;
    // The smallest 1/2/5 x 10^k at or above `max` (at least 5): the Y axis top.
    static double niceCeiling(double max);
    // The busiest-clients chart's tooltip: the bucket (of the series'
    // points, one per whole bucket at its end, in seconds before now and
    // requests per second) nearest `x`, its requests and rate.
    static QString describeBucketNear(const QList<QPointF>& points, double x);
    // The labels of a time axis spanning `spanSeconds` before now, one every
    // `tickSeconds`, oldest first: "-60 s", "-50 s", ..., "now".
    static QStringList timeLabels(int spanSeconds, int tickSeconds);
    // The blocklist tile's caption for `automatic` of the entries being
    // escalation's bans: "on the blocklist, of which 2 automatic".
    static QString blocklistCaption(std::size_t automatic);
    // What headline tile `i` says: its number, and its caption under it.
    QString tileValue(int i) const;
    QString tileCaption(int i) const;

Q_SIGNALS:
    void clientClicked(const QString& address);

private:
    void explainStatus(int throttleStatus);  // the line under the charts names the status in force
    void redrawTraffic();
    void redrawTop(const ConsoleSnapshot& s);
    void showValuesAt(const QPointF& point);
    static void setTimeAxis(QCategoryAxis* axis, int spanSeconds, int tickSeconds);

    int m_range = 0;
    Core::Millis m_now = 0;
    std::deque<Core::SecondCounts> m_history;  // at most an hour of complete seconds

    struct Tile {
        QLabel* value = nullptr;
        QLabel* caption = nullptr;
    };
    std::array<Tile, 5> m_tiles;
    QChartView* m_trafficView = nullptr;
    QChart* m_traffic = nullptr;
    std::array<QLineSeries*, Core::ActionCount> m_series{};
    QCategoryAxis* m_x = nullptr;
    QValueAxis* m_y = nullptr;
    QChartView* m_topView = nullptr;
    QChart* m_top = nullptr;
    std::array<QLineSeries*, 5> m_topSeries{};
    QCategoryAxis* m_topX = nullptr;
    QValueAxis* m_topY = nullptr;
    QButtonGroup* m_rangeButtons = nullptr;
    QLabel* m_explain = nullptr;
    int m_status = 429;  // the throttle status the explanation names
};

} // namespace Floodgate::Ui
