// SPDX-License-Identifier: GPL-3.0-or-later
// What sits in each bucket. For one client: every rule level's buckets as
// bars, the running total through the window as a line and the limit it
// must stay under, with the sum, what is left and when the window is whole
// again. On a node of a cluster the bars stack this node's requests under
// the other nodes', and the sum is the cluster's with this node's share. For everyone: the heat map of the live 3 s x 20 buckets.
#pragma once

#include <QWidget>

#include <optional>
#include <vector>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

class QCategoryAxis;
class QBarSet;
class QChart;
class QChartView;
class QGridLayout;
class QLabel;
class QLineEdit;
class QLineSeries;
class QValueAxis;

namespace Floodgate::Ui {

class HeatMap;

class BucketsView : public QWidget {
    Q_OBJECT

public:
    explicit BucketsView(QWidget* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    // Shows `address` (asks the console to follow it).
    void follow(const QString& address);
    // The range the shown client is counted under (an IPv6 address: its
    // /64); nothing when no client is shown.
    std::optional<Core::Cidr> shownRange() const { return m_shown; }
    int levelCharts() const { return int(m_levels.size()); }
    // What level chart `i` says above its bars, and in its tooltip.
    QString levelTitle(int i) const;
    QString levelToolTip(int i) const;
    // The time labels level chart `i` shows under its bars (every bucket's,
    // or every n-th one's where they would not fit side by side), and the
    // width of its plot area in pixels.
    QStringList levelAxisLabels(int i) const;
    double levelPlotWidth(int i) const;

Q_SIGNALS:
    void followRequested(const QString& address);

private:
    struct LevelChart {
        std::string name;
        std::size_t buckets = 0;
        QChartView* view = nullptr;
        QChart* chart = nullptr;
        QBarSet* set = nullptr;     // this node's requests (every request on a single node)
        QBarSet* others = nullptr;  // the other nodes' requests, stacked on top (with --redis)
        QLineSeries* running = nullptr;
        QLineSeries* limit = nullptr;
        QCategoryAxis* x = nullptr;
        QValueAxis* y = nullptr;
        QStringList labels;  // every bucket's, oldest first
        int stride = 0;      // a label every `stride` buckets, counted back from "now"
    };
    // Labels as many buckets apart as their width needs at the chart's size.
    static void relabel(LevelChart& chart);
    void rebuildCharts(const std::vector<Core::LevelUsage>& levels);
    void updateChart(LevelChart& chart, const Core::LevelUsage& level, bool clustered);

    QLineEdit* m_address = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_legend = nullptr;
    std::optional<bool> m_legendClustered;  // what the legend was last written for
    QWidget* m_levelsArea = nullptr;
    QGridLayout* m_grid = nullptr;
    std::vector<LevelChart> m_levels;
    HeatMap* m_heat = nullptr;
    std::optional<Core::Cidr> m_shown;
};

} // namespace Floodgate::Ui
