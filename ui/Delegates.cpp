// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/Delegates.h"

#include "ui/Theme.h"

#include <QApplication>
#include <QPainter>
#include <QPainterPath>

namespace Floodgate::Ui {

UsageBarDelegate::UsageBarDelegate(int usedRole, int limitRole, QObject* parent)
    : QStyledItemDelegate(parent)
    , m_usedRole(usedRole)
    , m_limitRole(limitRole)
{
}

void UsageBarDelegate::paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QString text = opt.text;
    opt.text.clear();
    QApplication::style()->drawControl(QStyle::CE_ItemViewItem, &opt, p, opt.widget);
    const double used = index.data(m_usedRole).toDouble();
    const double limit = index.data(m_limitRole).toDouble();
    if (limit <= 0) {
        p->save();
        p->setPen(Theme::muted());
        p->drawText(opt.rect.adjusted(6, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, text.isEmpty() ? QStringLiteral("–") : text);
        p->restore();
        return;
    }
    const double fraction = std::clamp(used / limit, 0.0, 1.0);
    const QRect bar = opt.rect.adjusted(4, 4, -4, -4);
    p->save();
    p->setRenderHint(QPainter::Antialiasing);
    p->setPen(Qt::NoPen);
    p->setBrush(Theme::gridLine());
    p->drawRoundedRect(bar, 3, 3);
    QColor fill = fraction >= 1.0 ? Theme::action(Core::Action::Block)
        : fraction >= 0.8         ? Theme::action(Core::Action::Throttle)
                                  : Theme::action(Core::Action::Allow);
    fill.setAlphaF(0.55f);
    p->setBrush(fill);
    QRect done = bar;
    done.setWidth(int(bar.width() * fraction));
    if (done.width() > 0)
        p->drawRoundedRect(done, 3, 3);
    p->setPen((opt.state & QStyle::State_Selected) ? opt.palette.color(QPalette::HighlightedText) : opt.palette.color(QPalette::Text));
    p->drawText(bar.adjusted(6, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
    p->restore();
}

SparklineDelegate::SparklineDelegate(int valuesRole, QObject* parent)
    : QStyledItemDelegate(parent)
    , m_role(valuesRole)
{
}

void SparklineDelegate::paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    QApplication::style()->drawControl(QStyle::CE_ItemViewItem, &opt, p, opt.widget);
    const QList<int> values = index.data(m_role).value<QList<int>>();
    if (values.size() < 2)
        return;
    int peak = 1;
    for (int v : values)
        peak = std::max(peak, v);
    const QRectF r = QRectF(opt.rect).adjusted(4, 4, -4, -4);
    QPainterPath line;
    for (int i = 0; i < values.size(); ++i) {
        const QPointF pt(r.left() + r.width() * i / (values.size() - 1), r.bottom() - r.height() * values[i] / peak);
        if (i == 0)
            line.moveTo(pt);
        else
            line.lineTo(pt);
    }
    QPainterPath area = line;
    area.lineTo(r.bottomRight());
    area.lineTo(r.bottomLeft());
    area.closeSubpath();
    p->save();
    p->setRenderHint(QPainter::Antialiasing);
    QColor c = Theme::action(Core::Action::DryRun);
    QColor fill = c;
    fill.setAlphaF(0.18f);
    p->fillPath(area, fill);
    p->setPen(QPen(c, 1.4));
    p->drawPath(line);
    p->restore();
}

QSize SparklineDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    return QStyledItemDelegate::sizeHint(option, index).expandedTo(QSize(110, 22));
}

namespace {

constexpr int CELL_PADDING = 12;  // left and right of the text, as the style draws a plain cell

// The range and the bracketed address after it ("range  (address)"), or
// the text alone and an empty second line.
std::pair<QString, QString> splitAddress(const QString& text)
{
    const qsizetype at = text.indexOf(QStringLiteral("  ("));
    if (at < 0)
        return {text, QString()};
    return {text.left(at), text.mid(at + 2)};
}

} // namespace

QFont ClientAddressDelegate::smallFont(const QFont& font)
{
    QFont f = font;
    f.setPointSizeF(font.pointSizeF() * 0.82);
    return f;
}

int ClientAddressDelegate::widthFor(const QString& text, const QFont& font)
{
    const auto [range, address] = splitAddress(text);
    int w = QFontMetrics(font).horizontalAdvance(range);
    if (!address.isEmpty())
        w = std::max(w, QFontMetrics(smallFont(font)).horizontalAdvance(address));
    return w + CELL_PADDING;
}

QSize ClientAddressDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    const QSize base = QStyledItemDelegate::sizeHint(option, index);
    return QSize(widthFor(index.data().toString(), option.font), base.height());
}

void ClientAddressDelegate::paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const auto [range, address] = splitAddress(opt.text);
    if (address.isEmpty()) {
        QStyledItemDelegate::paint(p, option, index);
        return;
    }
    opt.text.clear();
    QApplication::style()->drawControl(QStyle::CE_ItemViewItem, &opt, p, opt.widget);
    const bool selected = opt.state & QStyle::State_Selected;
    // Where the style puts a plain cell's text.
    const int margin = QApplication::style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, opt.widget) + 1;
    const QRect r = opt.rect.adjusted(margin, 0, -margin, 0);
    const QFont small = smallFont(opt.font);
    const int top = QFontMetrics(opt.font).height();
    const int below = QFontMetrics(small).height();
    const int y = r.top() + std::max(0, (r.height() - top - below) / 2);
    p->save();
    p->setFont(opt.font);
    p->setPen(opt.palette.color(selected ? QPalette::HighlightedText : QPalette::Text));
    p->drawText(QRect(r.left(), y, r.width(), top), Qt::AlignLeft | Qt::AlignVCenter, range);
    p->setFont(small);
    p->setPen(selected ? opt.palette.color(QPalette::HighlightedText) : Theme::muted());
    p->drawText(QRect(r.left(), y + top, r.width(), below), Qt::AlignLeft | Qt::AlignVCenter, address);
    p->restore();
}

} // namespace Floodgate::Ui
