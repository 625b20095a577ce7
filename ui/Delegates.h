// SPDX-License-Identifier: GPL-3.0-or-later
// Cells that paint rather than widgets per row (Wireshark's
// SparkLineDelegate): a use bar for "5 of 6 used", a sparkline of the
// last minute.
#pragma once

#include <QStyledItemDelegate>

namespace Floodgate::Ui {

// A bar filled to used/limit (green, then amber from 80 %, red when full),
// with the cell's text over it.
class UsageBarDelegate : public QStyledItemDelegate {
public:
    UsageBarDelegate(int usedRole, int limitRole, QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;

private:
    int m_usedRole;
    int m_limitRole;
};

// A line over QList<int> values (oldest first), scaled to the row's own peak.
class SparklineDelegate : public QStyledItemDelegate {
public:
    SparklineDelegate(int valuesRole, QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

private:
    int m_role;
};

} // namespace Floodgate::Ui
