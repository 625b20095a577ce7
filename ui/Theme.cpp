// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/Theme.h"

#include <QApplication>
#include <QFile>
#include <QHash>
#include <QIconEngine>
#include <QPainter>
#include <QPalette>
#include <QSvgRenderer>
#include <QWidget>

// The resources live in the static library fg_ui: they must be registered
// by hand (at global scope, where Q_INIT_RESOURCE declares its function).
static void registerFloodgateResources()
{
    Q_INIT_RESOURCE(resources);
}

namespace Floodgate::Ui::Theme {

void initResources()
{
    static const bool once = [] {
        registerFloodgateResources();
        return true;
    }();
    (void)once;
}

bool isDark()
{
    const QColor window = QApplication::palette().color(QPalette::Window);
    return window.lightness() < 128;
}

QColor action(Core::Action a)
{
    const bool dark = isDark();
    switch (a) {
    case Core::Action::Allow: return dark ? QColor(0x66, 0xbb, 0x6a) : QColor(0x2e, 0x7d, 0x32);
    case Core::Action::Throttle: return dark ? QColor(0xff, 0xa7, 0x26) : QColor(0xe6, 0x51, 0x00);
    case Core::Action::Block: return dark ? QColor(0xef, 0x53, 0x50) : QColor(0xc6, 0x28, 0x28);
    case Core::Action::DryRun: return dark ? QColor(0x64, 0xb5, 0xf6) : QColor(0x15, 0x65, 0xc0);
    }
    return muted();
}

QColor state(Core::ClientState s)
{
    switch (s) {
    case Core::ClientState::Ok: return action(Core::Action::Allow);
    case Core::ClientState::Throttled: return action(Core::Action::Throttle);
    case Core::ClientState::Blocked: return action(Core::Action::Block);
    case Core::ClientState::Safelisted: return isDark() ? QColor(0x4d, 0xd0, 0xe1) : QColor(0x00, 0x83, 0x8f);
    }
    return muted();
}

QColor muted()
{
    QColor c = QApplication::palette().color(QPalette::WindowText);
    c.setAlphaF(0.6f);
    return c;
}

QColor gridLine()
{
    QColor c = QApplication::palette().color(QPalette::WindowText);
    c.setAlphaF(0.12f);
    return c;
}

void setTextColor(QWidget* widget, const QColor& color)
{
    QPalette p = widget->palette();
    p.setColor(QPalette::WindowText, color);
    widget->setPalette(p);
}

QIcon icon(const QString& name)
{
    initResources();
    // The SVGs are drawn in one dark ink; on a dark palette they are
    // recoloured to the palette's text colour so they stay visible.
    const QByteArray ink = isDark() ? QApplication::palette().color(QPalette::WindowText).name().toLatin1() : QByteArray("#37474f");
    // Rendered once per name and ink (views ask again on every refresh).
    static QHash<QString, QIcon> cache;
    const QString key = name + QLatin1Char('|') + QLatin1String(ink);
    if (auto it = cache.constFind(key); it != cache.constEnd())
        return *it;
    QFile f(QStringLiteral(":/icons/%1.svg").arg(name));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QByteArray svg = f.readAll();
    svg.replace("#37474f", ink);
    QSvgRenderer renderer(svg);
    QIcon icon;
    for (int size : {16, 24, 32, 48}) {
        QPixmap pm(size, size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        renderer.render(&p);
        p.end();
        icon.addPixmap(pm);
    }
    cache.insert(key, icon);
    return icon;
}

QString actionLabel(Core::Action a)
{
    switch (a) {
    case Core::Action::Allow: return QObject::tr("Allowed");
    case Core::Action::Throttle: return QObject::tr("Throttled");
    case Core::Action::Block: return QObject::tr("Blocked");
    case Core::Action::DryRun: return QObject::tr("Dry run (would refuse)");
    }
    return {};
}

QString stateLabel(Core::ClientState s)
{
    switch (s) {
    case Core::ClientState::Ok: return QObject::tr("ok");
    case Core::ClientState::Throttled: return QObject::tr("throttled");
    case Core::ClientState::Blocked: return QObject::tr("blocked");
    case Core::ClientState::Safelisted: return QObject::tr("safelisted");
    }
    return {};
}

} // namespace Floodgate::Ui::Theme
