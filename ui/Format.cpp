// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/Format.h"

#include "core/Snapshot.h"

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

QString formatDuration(Core::Millis ms, Span span)
{
    using Core::DAY;
    using Core::HOUR;
    using Core::MINUTE;
    using Core::SECOND;
    switch (span) {
    case Span::For:
        // Round hours in hours ("for 24 hours", as the toolbar's "Block for 24 hours"
        // says it), whole days beyond one in days.
        if (ms <= 0)
            return QStringLiteral("permanently");
        if (ms % DAY == 0 && ms != DAY)
            return QStringLiteral("for %1 days").arg(ms / DAY);
        if (ms % HOUR == 0)
            return ms == HOUR ? QStringLiteral("for 1 hour") : QStringLiteral("for %1 hours").arg(ms / HOUR);
        return QStringLiteral("for %1").arg(formatDuration(ms, Span::Left));
    case Span::Per:
        switch (ms) {
        case SECOND: return QStringLiteral("s");
        case MINUTE: return QStringLiteral("min");
        case HOUR: return QStringLiteral("h");
        case DAY: return QStringLiteral("day");
        default: return formatDuration(ms, Span::Length);
        }
    case Span::Length:
        if (ms % DAY == 0)
            return ms == DAY ? QStringLiteral("1 day") : QStringLiteral("%1 days").arg(ms / DAY);
        if (ms % HOUR == 0)
            return QStringLiteral("%1 h").arg(ms / HOUR);
        if (ms % MINUTE == 0)
            return QStringLiteral("%1 min").arg(ms / MINUTE);
        if (ms % SECOND == 0)
            return QStringLiteral("%1 s").arg(ms / SECOND);
        return QStringLiteral("%1 ms").arg(ms);
    case Span::Ago:
        if (ms == 0)
            return QStringLiteral("now");
        if (ms < MINUTE)
            return QStringLiteral("-%1 s").arg(ms / SECOND);
        if (ms % MINUTE == 0)
            return QStringLiteral("-%1m").arg(ms / MINUTE);
        return QStringLiteral("-%1:%2").arg(ms / MINUTE).arg(ms / SECOND % 60, 2, 10, QLatin1Char('0'));
    case Span::Since:
        return QStringLiteral("%1 ago").arg(formatDuration(ms, Span::Left));
    case Span::Left:
        break;
    }
    if (ms < 0)
        ms = 0;
    if (ms < 10 * SECOND)
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
