// SPDX-License-Identifier: GPL-3.0-or-later
// How the console writes numbers, durations, times and addresses: one
// place, so every view says "4 m 12 s" and "19.8/s" the same way.
#pragma once

#include "core/Address.h"
#include "core/Time.h"

#include <QString>

#include <string>
#include <string_view>

namespace Floodgate::Ui {

inline QString qs(std::string_view s)
{
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

// A range as an operator writes it: "203.0.113.7" for one address, else "203.0.113.0/24".
QString rangeText(const Core::Cidr& range);
// Sorts addresses as numbers (10.0.0.20 before 10.0.0.100, IPv4 before IPv6).
QString addressSortKey(const Core::Cidr& range);
// Every duration the console shows goes through formatDuration; the span
// says what the operator is reading. (Machines get durations from the engine:
// whole or fractional seconds in JSON, Wire::Codec::seconds, and level names
// such as "ip-3s", Core::formatPeriod.)
enum class Span {
    Left,    // time left on something counting down (a Retry-After, an entry's end, a
             // reset), rounded up, two units, the second padded so a ticking cell keeps
             // its width: "0.4 s", "42 s", "3 m 12 s", "5 h 03 m", "6 d 23 h"
    Length,  // a length someone chose (a window, a period), exact: "3 s", "5 min",
             // "1 h", "1 day", "2 days", "1500 ms"
    Per,     // after "per": "s", "min", "h", "day" for one unit, otherwise as Length
    For,     // how long an entry lasts, in a sentence: "for 7 days", "for 24 hours",
             // "for 1 hour", "for 1 h 30 m"; 0 or less: "permanently"
    Ago,     // a chart's time axis, before now: "now", "-3 s", "-5m", "-4:30"
    Since,   // how long ago something happened, in a sentence: "0.4 s ago", "42 s ago",
             // "3 m 12 s ago" (as Left, which keeps a ticking cell's width)
};
QString formatDuration(Core::Millis ms, Span span);
// "19.8/s", "0.3/s", "1,240/s".
QString formatRate(double perSecond);
// "12,345".
QString formatCount(std::uint64_t n);
// Local time: "14:03:12", with the date when not today.
QString formatClock(Core::Millis ms, Core::Millis now);

} // namespace Floodgate::Ui
