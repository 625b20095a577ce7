// SPDX-License-Identifier: GPL-3.0-or-later
// Cells that paint rather than widgets per row (Wireshark's
// SparkLineDelegate): a use bar for "5 of 6 used", a sparkline of the
// last minute, a client's range over the address it was last seen as.
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

// "2001:db8:1::/64  (2001:db8:1:0:a:b:c:d)" in two lines: the range, and
// under it, smaller, the full address in brackets (a single address, one
// line). The column then needs the width of the longer line, not of both.
class ClientAddressDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    // The width `text` needs in a cell of `font` (padding included).
    static int widthFor(const QString& text, const QFont& font);

private:
    static QFont smallFont(const QFont& font);
};

} // namespace Floodgate::Ui
