// SPDX-License-Identifier: GPL-3.0-or-later
// RFC 3339 times and durations, as the API writes and reads them.
#include "wire/Codec.h"
#include "wire/Decimal.h"
#include "wire/JsonReader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace Floodgate::Wire::Codec {

using namespace Core;

namespace {

// Howard Hinnant's days_from_civil / civil_from_days: exact for the
// proleptic Gregorian calendar, no time zone database, no locale.
void civilFromDays(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d)
{
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = unsigned(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = std::int64_t(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out)
{
    if (pos + n > s.size())
        return false;
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

} // namespace

std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + std::int64_t(doe) - 719468;
}


std::string formatTime(Millis ms, bool alwaysMillis)
{
    const std::int64_t days = floorDiv(ms, DAY);
    const Millis inDay = ms - days * DAY;
    std::int64_t y;
    unsigned m, d;
    civilFromDays(days, y, m, d);
    const int h = int(inDay / HOUR), mi = int(inDay / MINUTE % 60), s = int(inDay / SECOND % 60), milli = int(inDay % SECOND);
    char buf[48];
    if (milli != 0 || alwaysMillis)
        std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)y, m, d, h, mi, s, milli);
    else
        std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d, h, mi, s);
    return buf;
}

std::optional<Millis> parseTime(std::string_view t, std::string* why)
{
    auto bad = [&]() -> std::optional<Millis> {
        fail(why, "must be an RFC 3339 time such as 2026-11-29T05:00:00Z");
        return std::nullopt;
    };
    int y, mo, d, h, mi, s;
    if (!digits(t, 0, 4, y) || t.size() < 20 || t[4] != '-' || !digits(t, 5, 2, mo) || t[7] != '-' || !digits(t, 8, 2, d)
        || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !digits(t, 11, 2, h) || t[13] != ':' || !digits(t, 14, 2, mi)
        || t[16] != ':' || !digits(t, 17, 2, s))
        return bad();
    static constexpr int DAYS[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > DAYS[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || s > 60)
        return bad();
    std::size_t pos = 19;
    Millis frac = 0;
    if (pos < t.size() && t[pos] == '.') {
        ++pos;
        int n = 0;
        Millis scale = 100;
        while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
            frac += (t[pos] - '0') * scale;
            scale /= 10;
            ++pos;
            ++n;
        }
        if (n == 0)
            return bad();
    }
    Millis offset = 0;
    if (pos < t.size() && (t[pos] == 'Z' || t[pos] == 'z')) {
        ++pos;
    } else if (pos < t.size() && (t[pos] == '+' || t[pos] == '-')) {
        int oh, om;
        if (!digits(t, pos + 1, 2, oh) || pos + 3 >= t.size() || t[pos + 3] != ':' || !digits(t, pos + 4, 2, om) || oh > 23 || om > 59)
            return bad();
        offset = (t[pos] == '+' ? 1 : -1) * (Millis(oh) * HOUR + Millis(om) * MINUTE);
        pos += 6;
    } else {
        return bad();
    }
    if (pos != t.size())
        return bad();
    const Millis secs = daysFromCivil(y, unsigned(mo), unsigned(d)) * 86'400 + h * 3600 + mi * 60 + std::min(s, 59);
    return secs * 1000 + frac - offset;
}

std::optional<Millis> parseDuration(const Json& v, std::string* why)
{
    constexpr Millis MAX = 100LL * 366 * DAY;  // a century: anything longer is a typo
    double seconds = 0;
    if (v.isNumber()) {
        seconds = v.asNumber();
    } else if (v.isString()) {
        const std::string& s = v.asString();
        double n = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), n);
        if (r.ec != std::errc() || r.ptr == s.data()) {
            fail(why, "must be a number of seconds or a duration such as \"30s\", \"90m\", \"24h\", \"7d\"");
            return std::nullopt;
        }
        const std::string_view unit(r.ptr, std::size_t(s.data() + s.size() - r.ptr));
        double scale = 0;
        if (unit.empty() || unit == "s")
            scale = 1;
        else if (unit == "m")
            scale = 60;
        else if (unit == "h")
            scale = 3600;
        else if (unit == "d")
            scale = 86'400;
        else if (unit == "w")
            scale = 7 * 86'400;
        else {
            fail(why, "has an unknown unit \"" + std::string(unit) + "\" (use s, m, h, d or w)");
            return std::nullopt;
        }
        seconds = n * scale;
    } else {
        fail(why, "must be a number of seconds or a duration such as \"7d\"");
        return std::nullopt;
    }
    if (!(seconds > 0)) {
        fail(why, "must be > 0");
        return std::nullopt;
    }
    const double ms = std::round(seconds * 1000.0);
    if (ms < 1 || ms > double(MAX)) {
        fail(why, ms < 1 ? "must be at least 1 ms" : "must be at most 100 years");
        return std::nullopt;
    }
    return Millis(ms);
}

std::string humanDuration(Millis ms)
{
    const std::int64_t s = retryAfterSeconds(ms);  // the same rounding as the numbers beside it
    if (s < 60)
        return std::to_string(s) + " s";
    if (s < 3600)
        return std::to_string(s / 60) + " min" + (s % 60 ? " " + std::to_string(s % 60) + " s" : std::string());
    if (s < 86'400)
        return std::to_string(s / 3600) + " h" + (s / 60 % 60 ? " " + std::to_string(s / 60 % 60) + " min" : std::string());
    return std::to_string(s / 86'400) + " d" + (s / 3600 % 24 ? " " + std::to_string(s / 3600 % 24) + " h" : std::string());
}

std::string exactSeconds(Millis ms)
{
    if (ms % SECOND == 0)
        return std::to_string(ms / SECOND) + " s";
    return decimal(double(ms) / double(SECOND), 6) + " s";  // whatever the locale
}

Json seconds(Millis ms)
{
    if (ms % SECOND == 0)
        return Json(ms / SECOND);
    return Json(double(ms) / 1000.0);
}

} // namespace Floodgate::Wire::Codec
