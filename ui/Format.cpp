// SPDX-License-Identifier: MIT
#include "Format.h"

#include <QDateTime>
#include <QLocale>

namespace Floodgate::Ui {

QString rangeText(const Core::Cidr& range)
{
    return qs(range.isSingleAddress() ? range.address().toString() : range.toString());
}

QString formatDuration(Core::Millis ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 10'000)
        return QStringLiteral("%1 s").arg(double(ms) / 1000.0, 0, 'f', 1);
    const std::int64_t s = Core::ceilDiv(ms, 1000);
    if (s < 60)
        return QStringLiteral("%1 s").arg(s);
    if (s < 3600)
        return QStringLiteral("%1 m %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    if (s < 86400)
        return QStringLiteral("%1 h %2 m").arg(s / 3600).arg(s / 60 % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 d %2 h").arg(s / 86400).arg(s / 3600 % 24);
}

QString formatPeriod(Core::Millis ms)
{
    if (ms % 86'400'000 == 0)
        return ms == 86'400'000 ? QStringLiteral("1 day") : QStringLiteral("%1 days").arg(ms / 86'400'000);
    if (ms % 3'600'000 == 0)
        return QStringLiteral("%1 h").arg(ms / 3'600'000);
    if (ms % 60'000 == 0)
        return QStringLiteral("%1 min").arg(ms / 60'000);
    if (ms % 1000 == 0)
        return QStringLiteral("%1 s").arg(ms / 1000);
    return QStringLiteral("%1 ms").arg(ms);
}

QString formatRate(double perSecond)
{
    if (perSecond >= 100)
        return QLocale().toString(qint64(perSecond + 0.5)) + QStringLiteral("/s");
    return QStringLiteral("%1/s").arg(perSecond, 0, 'f', 1);
}

QString formatCount(std::uint64_t n)
{
    return QLocale().toString(qulonglong(n));
}

QString formatClock(Core::Millis ms, Core::Millis now)
{
    const QDateTime t = QDateTime::fromMSecsSinceEpoch(ms);
    const QDateTime n = QDateTime::fromMSecsSinceEpoch(now);
    return t.date() == n.date() ? t.toString(QStringLiteral("HH:mm:ss")) : t.toString(QStringLiteral("yyyy-MM-dd HH:mm"));
}

} // namespace Floodgate::Ui
