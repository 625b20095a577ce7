// SPDX-License-Identifier: MIT
#include "Format.h"

#include "Snapshot.h"

#include <QDateTime>
#include <QLocale>

#include <cstdio>

namespace Floodgate::Ui {

QString rangeText(const Core::Cidr& range)
{
    return qs(Core::keyText(range));
}

QString addressSortKey(const Core::Cidr& range)
{
    // 32 hex digits, '/', the prefix in three digits: compared as text, in
    // address order. Built in place (models ask for it while sorting).
    static constexpr char HEX[] = "0123456789abcdef";
    char key[36];
    char* p = key;
    for (auto b : range.address().bytes()) {
        *p++ = HEX[b >> 4];
        *p++ = HEX[b & 0xF];
    }
    const int prefix = range.prefix128();
    *p++ = '/';
    *p++ = char('0' + prefix / 100);
    *p++ = char('0' + prefix / 10 % 10);
    *p++ = char('0' + prefix % 10);
    return QString::fromLatin1(key, qsizetype(p - key));
}

QString formatDuration(Core::Millis ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 10'000)
        return QStringLiteral("%1 s").arg(double(ms) / 1000.0, 0, 'f', 1);
    const std::int64_t s = Core::secondsRoundedUp(ms);
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
    // Tables call this for every visible row on every paint; converting
    // through the time zone each time costs more than the whole row. The
    // local offset is looked up once a minute (on the GUI thread only).
    static Core::Millis offsetValidUntil = 0;
    static Core::Millis offsetMs = 0;
    if (now >= offsetValidUntil) {
        offsetMs = Core::Millis(QDateTime::fromMSecsSinceEpoch(now).offsetFromUtc()) * 1000;
        offsetValidUntil = now + Core::MINUTE;
    }
    using Core::DAY;
    const Core::Millis local = ms + offsetMs;
    if (Core::floorDiv(local, DAY) != Core::floorDiv(now + offsetMs, DAY))
        return QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    const Core::Millis inDay = local - Core::floorDiv(local, DAY) * DAY;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", int(inDay / Core::HOUR), int(inDay / Core::MINUTE % 60), int(inDay / Core::SECOND % 60));
    return QString::fromLatin1(buf);
}

} // namespace Floodgate::Ui
