// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/LogFormat.h"

#include "core/Rules.h"
#include "wire/Codec.h"
#include "wire/Csv.h"
#include "http/LimiterLog.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace Floodgate::Replay {

namespace {

LineKind bad(std::string* why, std::string_view reason)
{
    if (why)
        why->assign(reason);
    return LineKind::Bad;
}

bool digits(std::string_view s, std::size_t at, std::size_t n, int& out)
{
    if (at + n > s.size())
        return false;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    out = v;
    return true;
}

int monthOf(std::string_view m)
{
    static const char* const names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int i = 0; i < 12; ++i)
        if (m == names[i])
            return i + 1;
    return 0;
}

int daysIn(int month, int year)
{
    static constexpr int DAYS[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : DAYS[month - 1];
}

// "10/Oct/2000:13:55:36 -0700" (Apache's %t, nginx's $time_local) -> Unix ms.
// A day the month does not have (31/Feb) is said in *dateWhy (days from
// civil would take it for a day of the next month).
std::optional<Core::Millis> parseClfTime(std::string_view t, std::string* dateWhy = nullptr)
{
    int day = 0, year = 0, hour = 0, minute = 0, second = 0, oh = 0, om = 0;
    if (t.size() != 26 || t[2] != '/' || t[6] != '/' || t[11] != ':' || t[14] != ':' || t[17] != ':' || t[20] != ' '
        || (t[21] != '+' && t[21] != '-'))
        return std::nullopt;
    const int month = monthOf(t.substr(3, 3));
    if (!month || !digits(t, 0, 2, day) || !digits(t, 7, 4, year) || !digits(t, 12, 2, hour) || !digits(t, 15, 2, minute)
        || !digits(t, 18, 2, second) || !digits(t, 22, 2, oh) || !digits(t, 24, 2, om))
        return std::nullopt;
    if (day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || oh > 23 || om > 59)
        return std::nullopt;
    if (day > daysIn(month, year)) {
        static const char* const months[] = {"January", "February", "March",     "April",   "May",      "June",
                                             "July",    "August",   "September", "October", "November", "December"};
        if (dateWhy)
            *dateWhy = std::string(t.substr(0, 11)) + " is no date: " + months[month - 1] + " " + std::to_string(year) + " has "
                     + std::to_string(daysIn(month, year)) + " days";
        return std::nullopt;
    }
    const std::int64_t offset = (t[21] == '-' ? -1 : 1) * (std::int64_t(oh) * 3600 + std::int64_t(om) * 60);
    const std::int64_t s = Wire::Codec::daysFromCivil(year, unsigned(month), unsigned(day)) * 86400 + hour * 3600 + minute * 60 + second - offset;
    return s * Core::SECOND;
}

// The quoted field starting at s[pos] == '"', its escapes (\" and \\ as
// Apache writes them, \xHH as nginx does) left as they are.
std::optional<std::string_view> quoted(std::string_view s, std::size_t& pos)
{
    if (pos >= s.size() || s[pos] != '"')
        return std::nullopt;
    std::size_t from = pos + 1;
    for (;;) {
        // memchr: most fields hold no quote at all, so this is one scan.
        const void* q = from < s.size() ? std::memchr(s.data() + from, '"', s.size() - from) : nullptr;
        if (!q)
            return std::nullopt;
        const std::size_t i = std::size_t(static_cast<const char*>(q) - s.data());
        std::size_t backslashes = 0;
        while (i - backslashes > pos + 1 && s[i - backslashes - 1] == '\\')
            ++backslashes;
        if (backslashes % 2 == 0) {
            const std::string_view v = s.substr(pos + 1, i - pos - 1);
            pos = i + 1;
            return v;
        }
        from = i + 1;  // an escaped quote
    }
}

bool isTokenChar(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '!'
        || c == '#' || c == '$' || c == '%' || c == '&' || c == '\'' || c == '*' || c == '+' || c == '^' || c == '`' || c == '|'
        || c == '~';
}

// "GET /path?q HTTP/1.1" (the protocol may be missing: HTTP/0.9).
bool splitRequestLine(std::string_view r, LogRequest& out)
{
    const auto sp = r.find(' ');
    if (sp == std::string_view::npos || sp == 0)
        return false;
    const std::string_view method = r.substr(0, sp);
    if (!std::all_of(method.begin(), method.end(), isTokenChar))
        return false;
    std::string_view rest = r.substr(sp + 1);
    const auto sp2 = rest.find(' ');
    const std::string_view target = sp2 == std::string_view::npos ? rest : rest.substr(0, sp2);
    if (target.empty())
        return false;
    out.method = method;
    out.target = target;
    return true;
}

std::string_view dashIsEmpty(std::string_view v)
{
    return v == "-" ? std::string_view{} : v;
}

// Common: HOST IDENT USER [TIME] "REQUEST" STATUS BYTES
// Combined: the same, then "REFERER" "USER-AGENT", and optionally a third
// quoted field, X-Forwarded-For (nginx's usual `main` format); what follows is not read.
LineKind parseClf(std::string_view s, bool combined, LogRequest& out, ParseScratch& scratch, std::string* why)
{
    const auto sp = s.find(' ');
    if (sp == std::string_view::npos || sp == 0)
        return bad(why, "not an access-log line (expected ADDRESS - - [TIME] \"REQUEST\" STATUS SIZE)");
    const auto peer = Core::IpAddress::parse(s.substr(0, sp));
    if (!peer)
        return bad(why, "the client is not an IP address (a host name? log with HostnameLookups Off)");
    out.peer = *peer;
    const auto lb = s.find('[', sp);
    if (lb == std::string_view::npos || lb + 27 >= s.size() || s[lb + 27] != ']')
        return bad(why, "no [dd/Mon/yyyy:hh:mm:ss +zzzz] time");
    const std::string_view stamp = s.substr(lb + 1, 26);
    if (stamp == scratch.lastStamp) {
        out.time = scratch.lastStampTime;
    } else {
        std::string dateWhy;
        const auto t = parseClfTime(stamp, &dateWhy);
        if (!t && !dateWhy.empty())
            return bad(why, "the time " + dateWhy);
        if (!t)
            return bad(why, "the time is not dd/Mon/yyyy:hh:mm:ss +zzzz");
        scratch.lastStamp.assign(stamp);
        scratch.lastStampTime = *t;
        out.time = *t;
    }
    out.wholeSecond = true;
    std::size_t pos = lb + 28;
    if (pos >= s.size() || s[pos] != ' ')
        return bad(why, "no quoted request after the time");
    ++pos;
    const auto request = quoted(s, pos);
    if (!request)
        return bad(why, "no quoted request after the time");
    if (!splitRequestLine(*request, out))
        return bad(why, "the request is not METHOD TARGET PROTOCOL (a client that did not speak HTTP; the server answered it, Floodgate never decides such a request)");
    if (pos >= s.size() || s[pos] != ' ')
        return bad(why, "no status after the request");
    ++pos;
    int status = 0;
    if (!digits(s, pos, 3, status) || (pos + 3 < s.size() && s[pos + 3] != ' '))
        return bad(why, "the status is not three digits");
    out.status = status;
    pos += 3;
    if (pos >= s.size() || s[pos] != ' ')
        return bad(why, "no size after the status");
    ++pos;
    const auto sizeEnd = std::min(s.find(' ', pos), s.size());
    const std::string_view size = s.substr(pos, sizeEnd - pos);
    if (size.empty() || (size != "-" && !std::all_of(size.begin(), size.end(), [](char c) { return c >= '0' && c <= '9'; })))
        return bad(why, "the size is neither a number nor -");
    pos = sizeEnd;
    out.referer = out.userAgent = out.forwardedFor = {};
    if (!combined) {
        if (pos != s.size())
            return bad(why, "more fields after the size than the common format has (is it combined?)");
        return LineKind::Request;
    }
    ++pos;
    const auto referer = quoted(s, pos);
    if (!referer || pos >= s.size() || s[pos] != ' ')
        return bad(why, "no quoted referer and user agent after the size (is it the common format?)");
    ++pos;
    const auto agent = quoted(s, pos);
    if (!agent)
        return bad(why, "no quoted user agent after the referer");
    out.referer = dashIsEmpty(*referer);
    out.userAgent = dashIsEmpty(*agent);
    if (pos + 1 < s.size() && s[pos] == ' ' && s[pos + 1] == '"') {
        ++pos;
        if (const auto xff = quoted(s, pos))
            out.forwardedFor = dashIsEmpty(*xff);
    }
    return LineKind::Request;
}

const std::string* jsonString(const Wire::Json& o, std::string_view key)
{
    const Wire::Json* v = o.find(key);
    return v && v->isString() ? &v->asString() : nullptr;
}

// One object per line, as `log_format NAME escape=json '{...}'` writes it.
// nginx writes every variable as a string ("-" or "" when unset).
LineKind parseNginxJson(std::string_view s, LogRequest& out, ParseScratch& scratch, std::string* why)
{
    std::string error;
    scratch.json = Wire::Json::parse(s, &error);
    if (!scratch.json) {
        // Well-formed JSON past one of the reader's limits (keys in one
        // object, values, depth) is said as such: it is no broken line.
        if (!error.starts_with("malformed JSON"))
            return bad(why, "too large a JSON object: " + error);
        return bad(why, "not a JSON object (" + error + ")");
    }
    const Wire::Json& o = *scratch.json;
    if (!o.isObject())
        return bad(why, "not a JSON object");
    const std::string* addr = jsonString(o, "remote_addr");
    if (!addr)
        return bad(why, "no \"remote_addr\"");
    const auto peer = Core::IpAddress::parse(*addr);
    if (!peer)
        return bad(why, "\"remote_addr\" is not an IP address");
    out.peer = *peer;
    if (const Wire::Json* msec = o.find("msec"); msec && (msec->isString() || msec->isNumber())) {
        // "1700000000.123": seconds with milliseconds.
        double v = 0;
        if (msec->isNumber()) {
            v = msec->asNumber();
        } else {
            const std::string& t = msec->asString();
            const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
            if (ec != std::errc() || p != t.data() + t.size())
                return bad(why, "\"msec\" is not seconds.milliseconds");
        }
        if (!(v > 0))
            return bad(why, "\"msec\" is not seconds.milliseconds");
        out.time = Core::Millis(v * 1000.0 + 0.5);
        out.wholeSecond = false;
    } else if (const std::string* iso = jsonString(o, "time_iso8601")) {
        std::string reason;
        const auto t = Wire::Codec::parseTime(*iso, &reason);
        if (!t)
            return bad(why, "\"time_iso8601\" is not an ISO 8601 time");
        out.time = *t;
        out.wholeSecond = *t % Core::SECOND == 0;
    } else if (const std::string* local = jsonString(o, "time_local")) {
        std::string dateWhy;
        const auto t = parseClfTime(*local, &dateWhy);
        if (!t && !dateWhy.empty())
            return bad(why, "\"time_local\" " + dateWhy);
        if (!t)
            return bad(why, "\"time_local\" is not dd/Mon/yyyy:hh:mm:ss +zzzz");
        out.time = *t;
        out.wholeSecond = true;
    } else {
        return bad(why, "no \"time_iso8601\", \"msec\" or \"time_local\"");
    }
    if (const std::string* request = jsonString(o, "request")) {
        if (!splitRequestLine(*request, out))
            return bad(why, "\"request\" is not METHOD TARGET PROTOCOL");
    } else {
        const std::string* method = jsonString(o, "request_method");
        const std::string* uri = jsonString(o, "request_uri");
        if (!method || !uri || method->empty() || uri->empty())
            return bad(why, "no \"request\" (nor \"request_method\" and \"request_uri\")");
        out.method = *method;
        out.target = *uri;
    }
    out.status = 0;
    if (const Wire::Json* st = o.find("status")) {
        if (st->isInteger()) {
            out.status = int(st->asInteger());
        } else if (st->isString()) {
            int v = 0;
            if (st->asString().size() == 3 && digits(st->asString(), 0, 3, v))
                out.status = v;
        }
    }
    auto optional = [&](const char* key) {
        const std::string* v = jsonString(o, key);
        return v ? dashIsEmpty(*v) : std::string_view{};
    };
    out.userAgent = optional("http_user_agent");
    out.referer = optional("http_referer");
    out.forwardedFor = optional("http_x_forwarded_for");
    out.cookie = optional("http_cookie");
    return LineKind::Request;
}

// limiter.log (http/LimiterLog.h): one CSV row per refused request, or a
// summary row standing for `attempts` of them.
LineKind parseFloodgateCsv(std::string_view s, LogRequest& out, ParseScratch& scratch, std::string* why)
{
    if (s == Http::LimiterLogHeader)
        return LineKind::Header;
    std::vector<Wire::Csv::Record> records;
    std::string error;
    if (!Wire::Csv::read(s, records, error) || records.size() != 1)
        return bad(why, "not a CSV row");
    auto& f = records.front().fields;
    // time,action,rule,ip,attempts,method,path,query,user_agent,window_start,cookies,customer
    if (f.size() != 12)
        return bad(why, "not the 12 columns of limiter.log (time,action,rule,ip,...)");
    std::string reason;
    const auto t = Wire::Codec::parseTime(f[0], &reason);
    if (!t)
        return bad(why, "the time is not RFC 3339");
    out.time = *t;
    out.wholeSecond = false;
    const auto ip = Core::IpAddress::parse(f[3]);
    if (!ip)
        return bad(why, "the ip column is not an IP address");
    out.peer = *ip;
    out.clientResolved = true;
    int cookies = 0;
    const std::string& c = f[10];
    const auto [p, ec] = std::from_chars(c.data(), c.data() + c.size(), cookies);
    if (ec != std::errc() || p != c.data() + c.size() || cookies < 0)
        return bad(why, "the cookies column is not a count");
    out.cookieCount = cookies;
    if (std::string_view(f[1]).ends_with(Http::LimiterLogSummarySuffix)) {
        // On other lines `attempts` is the client's count in the window: a
        // number to read, not requests to replay.
        std::uint64_t n = 0;
        const std::string& a = f[4];
        const auto [q, e] = std::from_chars(a.data(), a.data() + a.size(), n);
        if (e != std::errc() || q != a.data() + a.size() || n == 0)
            return bad(why, "a summary line's attempts is not a count of refusals");
        if (n > MaxSummaryRefusals)
            return bad(why, "a summary line's attempts is more refusals than one client gets in a second (over 10,000,000)");
        out.repeat = n;
    }
    if (f[5].empty() || f[6].empty())
        return bad(why, "no method or path");
    // One string holding every field the views point at.
    std::string& t2 = scratch.text;
    t2.clear();
    const std::string method = Wire::Csv::restoreField(f[5]);
    const std::string path = Wire::Csv::restoreField(f[6]);
    const std::string query = Wire::Csv::restoreField(f[7]);
    const std::string agent = Wire::Csv::restoreField(f[8]);
    const std::string customer = Wire::Csv::restoreField(f[11]);
    t2.reserve(method.size() + path.size() + query.size() + agent.size() + customer.size() + 1);
    t2 += method;
    t2 += path;
    if (!query.empty())
        t2 += '?' + query;
    const std::size_t targetEnd = t2.size();
    t2 += agent;
    t2 += customer;
    const std::string_view all = t2;
    out.method = all.substr(0, method.size());
    out.target = all.substr(method.size(), targetEnd - method.size());
    out.userAgent = all.substr(targetEnd, agent.size());
    out.customer = all.substr(targetEnd + agent.size());
    out.status = 0;
    return LineKind::Request;
}

} // namespace

const char* toString(LogFormat format)
{
    switch (format) {
    case LogFormat::Auto: return "auto";
    case LogFormat::Combined: return "combined";
    case LogFormat::Common: return "common";
    case LogFormat::NginxJson: return "nginx-json";
    case LogFormat::FloodgateCsv: return "floodgate-csv";
    }
    return "?";
}

std::optional<LogFormat> formatFromName(std::string_view name)
{
    for (LogFormat f : {LogFormat::Auto, LogFormat::Combined, LogFormat::Common, LogFormat::NginxJson, LogFormat::FloodgateCsv})
        if (name == toString(f))
            return f;
    return std::nullopt;
}

LineKind parseLine(std::string_view line, LogFormat format, LogRequest& out, ParseScratch& scratch, std::string* why)
{
    out = LogRequest{};
    switch (format) {
    case LogFormat::Combined: return parseClf(line, true, out, scratch, why);
    case LogFormat::Common: return parseClf(line, false, out, scratch, why);
    case LogFormat::NginxJson: return parseNginxJson(line, out, scratch, why);
    case LogFormat::FloodgateCsv: return parseFloodgateCsv(line, out, scratch, why);
    case LogFormat::Auto: break;
    }
    return bad(why, "no format given");
}

std::optional<LogFormat> detectFormat(std::span<const std::string_view> lines)
{
    std::optional<LogFormat> best;
    std::size_t bestCount = 0;
    for (LogFormat f : {LogFormat::Combined, LogFormat::Common, LogFormat::NginxJson, LogFormat::FloodgateCsv}) {
        std::size_t n = 0;
        ParseScratch scratch;
        LogRequest r;
        for (std::string_view l : lines)
            n += parseLine(l, f, r, scratch, nullptr) != LineKind::Bad ? 1 : 0;
        if (n > bestCount) {
            best = f;
            bestCount = n;
        }
    }
    return best;
}

std::string_view knownCrawler(std::string_view agent)
{
    // The name each crawler's operator documents in its user agent.
    static constexpr std::string_view names[] = {
        "Googlebot", "AdsBot-Google", "Google-InspectionTool", "Storebot-Google", "bingbot", "BingPreview", "Slurp", "DuckDuckBot",
        "Baiduspider", "YandexBot", "Applebot", "facebookexternalhit", "Twitterbot", "LinkedInBot", "Pinterestbot", "AhrefsBot",
        "SemrushBot", "MJ12bot", "DotBot", "PetalBot", "SeznamBot", "Qwantify", "GPTBot", "ChatGPT-User", "ClaudeBot", "CCBot",
        "Bytespider", "Amazonbot", "PerplexityBot", "archive.org_bot", "ia_archiver", "UptimeRobot",
    };
    for (std::string_view n : names) {
        if (agent.size() < n.size())
            continue;
        for (std::size_t i = 0; i + n.size() <= agent.size(); ++i)
            if (Core::equalsIgnoreCase(agent.substr(i, n.size()), n))
                return n;
    }
    return {};
}

} // namespace Floodgate::Replay
