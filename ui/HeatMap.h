// SPDX-License-Identifier: GPL-3.0-or-later
// The "dump of the buckets" (docs/BACKGROUND.md, time buckets), made visual: the busiest clients (rows)
// against the 20 live buckets of 3 s (columns), each cell the client's
// exact count in that bucket, shaded by how hot it is; the bottom row is
// every client's total per bucket.
#pragma once

#include <QWidget>

#include <array>
#include <vector>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

namespace Floodgate::Ui {

class HeatMap : public QWidget {
    Q_OBJECT

public:
    static constexpr int MaxRows = 15;
    explicit HeatMap(QWidget* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    int rows() const { return int(m_rows.size()); }
    // A column's header: "now" for the bucket still filling, else how many
    // seconds before it the column's bucket began ("-57 s").
    QString columnLabel(int column) const;

Q_SIGNALS:
    void addressClicked(const QString& address);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    struct Row {
        QString address;
        std::array<std::uint32_t, Core::Tuning::liveBucketCount> counts{};
        std::uint32_t total = 0;
    };
    QRect cellRect(int row, int column) const;
    int labelWidth() const;

    std::vector<Row> m_rows;
    std::array<std::uint64_t, Core::Tuning::liveBucketCount> m_totals{};
    std::array<Core::Millis, Core::Tuning::liveBucketCount> m_starts{};
    std::uint32_t m_peak = 1;
    int m_hoverRow = -1;
};

} // namespace Floodgate::Ui
