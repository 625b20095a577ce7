// SPDX-License-Identifier: MIT
#include "Codec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace Floodgate::Core::Codec {

namespace {

constexpr Millis SECOND = 1000;

// Howard Hinnant's days_from_civil / civil_from_days: exact for the
// proleptic Gregorian calendar, no time zone database, no locale.
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + std::int64_t(doe) - 719468;
}

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

bool fail(std::string* why, std::string message)
{
    if (why)
        *why = std::move(message);
    return false;
}

std::string join(const std::string& path, std::string_view key)
{
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string indexed(const std::string& path, std::size_t i)
{
    return path + "[" + std::to_string(i) + "]";
}

// Strict reading of one JSON object: every key must be known, every value
// of the right type and range; the first problem names its field.
class Reader {
public:
    Reader(const Json& value, std::string path, std::string* why) : m_value(value), m_path(std::move(path)), m_why(why) {}

    bool isObject(std::initializer_list<std::string_view> known)
    {
        if (!m_value.isObject())
            return fail(m_why, (m_path.empty() ? std::string("the body") : m_path) + " must be a JSON object");
        for (const auto& [key, v] : m_value.asObject()) {
            bool ok = false;
            for (auto k : known)
                ok = ok || k == key;
            if (!ok)
                return fail(m_why, join(m_path, key) + " is not a known field");
        }
        return true;
    }
    const Json* get(std::string_view key) const { return m_value.find(key); }
    std::string path(std::string_view key) const { return join(m_path, key); }

    bool string(std::string_view key, std::string& out, bool required = false, std::size_t maxLength = 200)
    {
        const Json* v = get(key);
        if (!v || v->isNull())
            return !required || fail(m_why, path(key) + " is required");
        if (!v->isString())
            return fail(m_why, path(key) + " must be a string");
        if (v->asString().size() > maxLength)
            return fail(m_why, path(key) + " must be at most " + std::to_string(maxLength) + " characters");
        out = v->asString();
        return true;
    }
    bool boolean(std::string_view key, bool& out)
    {
        const Json* v = get(key);
        if (!v)
            return true;
        if (!v->isBool())
            return fail(m_why, path(key) + " must be true or false");
        out = v->asBool();
        return true;
    }
    template <class Int>
    bool integer(std::string_view key, Int& out, std::int64_t min, std::int64_t max, bool required = false)
    {
        const Json* v = get(key);
        if (!v)
            return !required || fail(m_why, path(key) + " is required");
        // A whole number beyond 64 bits (99999999999999999999, 1e400) is a
        // double here: out of range like any other, not "not a number".
        if (!v->isNumber() || (!v->isInteger() && v->asNumber() != std::trunc(v->asNumber())))
            return fail(m_why, path(key) + " must be a whole number");
        const std::int64_t n = v->asInteger();  // saturates
        if (n < min || v->asNumber() < double(min))
            return fail(m_why, path(key) + (min == 1 ? std::string(" must be > 0") : " must be >= " + std::to_string(min)));
        if (n > max || v->asNumber() > double(max))
            return fail(m_why, path(key) + " must be <= " + std::to_string(max));
        out = Int(n);
        return true;
    }
    // A duration > 0. An absent one keeps its default; 0 is refused rather
    // than read as "the default" (a lockout of 0 stored as the period).
    bool duration(std::string_view key, Millis& out, bool required = false, const char* whenAbsent = nullptr)
    {
        const Json* v = get(key);
        if (!v)
            return !required || fail(m_why, path(key) + " is required");
        if (whenAbsent && v->isNumber() && v->asNumber() == 0)
            return fail(m_why, path(key) + " must be > 0 (leave it out for " + whenAbsent + ")");
        std::string why;
        const auto d = parseDuration(*v, &why);
        if (!d)
            return fail(m_why, path(key) + " " + why);
        out = *d;
        return true;
    }
    bool strings(std::string_view key, std::vector<std::string>& out)
    {
        const Json* v = get(key);
        if (!v)
            return true;
        if (!v->isArray())
            return fail(m_why, path(key) + " must be an array of strings");
        std::vector<std::string> list;
        for (std::size_t i = 0; i < v->asArray().size(); ++i) {
            const Json& s = v->asArray()[i];
            if (!s.isString() || s.asString().empty())
                return fail(m_why, indexed(path(key), i) + " must be a non-empty string");
            list.push_back(s.asString());
        }
        out = std::move(list);
        return true;
    }
    const Json* array(std::string_view key, bool required = false)
    {
        const Json* v = get(key);
        if (!v) {
            if (required)
                fail(m_why, path(key) + " is required");
            return nullptr;
        }
        if (!v->isArray()) {
            fail(m_why, path(key) + " must be an array");
            return nullptr;
        }
        return v;
    }

private:
    const Json& m_value;
    std::string m_path;
    std::string* m_why;
};

bool levelFromJson(const Json& v, const std::string& path, Level& out, bool overrideOnly, std::string* why)
{
    Reader r(v, path, why);
    if (overrideOnly) {
        if (!r.isObject({"limit", "period", "name"}))
            return false;
    } else if (!r.isObject({"name", "limit", "period", "algorithm", "bucket", "lockout", "count_refused"})) {
        return false;
    }
    Level l;
    if (!r.string("name", l.name, false, 40) || !r.integer("limit", l.limit, 1, 1'000'000'000, true)
        || !r.duration("period", l.periodMs, true))
        return false;
    if (const Json* a = r.get("algorithm")) {
        const auto alg = a->isString() ? algorithmFromString(a->asString()) : std::nullopt;
        if (!alg)
            return fail(why, r.path("algorithm") + " must be \"sliding\", \"fixed\" or \"lockout\"");
        l.algorithm = *alg;
    }
    if (!r.duration("bucket", l.bucketMs, false, "a tenth of the period") || !r.duration("lockout", l.lockoutMs, false, "the period")
        || !r.boolean("count_refused", l.countRefused))
        return false;
    if (l.bucketMs > 0 && l.algorithm != Algorithm::SlidingWindow)
        return fail(why, r.path("bucket") + " applies to sliding levels only");
    if (l.lockoutMs > 0 && l.algorithm != Algorithm::Lockout)
        return fail(why, r.path("lockout") + " applies to lockout levels only");
    out = std::move(l);
    return true;
}

bool levelsFromJson(const Json* array, const std::string& path, std::vector<Level>& out, bool overrideOnly, std::string* why)
{
    std::vector<Level> levels;
    for (std::size_t i = 0; i < array->asArray().size(); ++i) {
        Level l;
        if (!levelFromJson(array->asArray()[i], indexed(path, i), l, overrideOnly, why))
            return false;
        levels.push_back(std::move(l));
    }
    // Overrides may be none; a tier's or a rule's levels may not.
    if (auto problem = checkLevels(levels, path, overrideOnly))
        return fail(why, *problem);
    out = std::move(levels);
    return true;
}

Json stringArray(const std::vector<std::string>& v)
{
    Json a = Json::array();
    for (const auto& s : v)
        a.push(s);
    return a;
}

} // namespace

const char* toString(Algorithm algorithm)
{
    switch (algorithm) {
    case Algorithm::SlidingWindow: return "sliding";
    case Algorithm::FixedWindow: return "fixed";
    case Algorithm::Lockout: return "lockout";
    }
    return "sliding";
}

std::optional<Algorithm> algorithmFromString(std::string_view text)
{
    if (text == "sliding")
        return Algorithm::SlidingWindow;
    if (text == "fixed")
        return Algorithm::FixedWindow;
    if (text == "lockout")
        return Algorithm::Lockout;
    return std::nullopt;
}

const char* toString(Discriminator d)
{
    switch (d) {
    case Discriminator::ClientAddress: return "address";
    case Discriminator::AddressAndUserAgent: return "address_user_agent";
    case Discriminator::Header: return "header";
    }
    return "address";
}

std::optional<Discriminator> discriminatorFromString(std::string_view t)
{
    for (Discriminator d : {Discriminator::ClientAddress, Discriminator::AddressAndUserAgent, Discriminator::Header})
        if (t == toString(d))
            return d;
    return std::nullopt;
}

const char* toString(CustomerSource s)
{
    switch (s) {
    case CustomerSource::QueryParameter: return "query";
    case CustomerSource::Header: return "header";
    case CustomerSource::Either: return "either";
    }
    return "either";
}

std::optional<CustomerSource> customerSourceFromString(std::string_view t)
{
    for (CustomerSource s : {CustomerSource::QueryParameter, CustomerSource::Header, CustomerSource::Either})
        if (t == toString(s))
            return s;
    return std::nullopt;
}

std::string formatTime(Millis ms, bool alwaysMillis)
{
    const std::int64_t days = floorDiv(ms, 86'400'000);
    const Millis inDay = ms - days * 86'400'000;
    std::int64_t y;
    unsigned m, d;
    civilFromDays(days, y, m, d);
    const int h = int(inDay / 3'600'000), mi = int(inDay / 60'000 % 60), s = int(inDay / 1000 % 60), milli = int(inDay % 1000);
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
        offset = (t[pos] == '+' ? 1 : -1) * (Millis(oh) * 3'600'000 + Millis(om) * 60'000);
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
    constexpr Millis MAX = 100LL * 366 * 86'400'000;  // a century: anything longer is a typo
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
    const std::int64_t s = std::max<std::int64_t>(1, ceilDiv(ms, SECOND));
    if (s < 60)
        return std::to_string(s) + " s";
    if (s < 3600)
        return std::to_string(s / 60) + " min" + (s % 60 ? " " + std::to_string(s % 60) + " s" : std::string());
    if (s < 86'400)
        return std::to_string(s / 3600) + " h" + (s / 60 % 60 ? " " + std::to_string(s / 60 % 60) + " min" : std::string());
    return std::to_string(s / 86'400) + " d" + (s / 3600 % 24 ? " " + std::to_string(s / 3600 % 24) + " h" : std::string());
}

Json seconds(Millis ms)
{
    if (ms % SECOND == 0)
        return Json(ms / SECOND);
    return Json(double(ms) / 1000.0);
}

// ---- list entries ------------------------------------------------------------

Json toJson(const ListEntry& e, ListKind kind, Millis now)
{
    Json j = Json::object();
    j.set("address", e.range.toString());
    j.set("list", toString(kind));
    j.set("reason", e.reason);
    j.set("source", toString(e.source));
    j.set("created_by", e.createdBy);
    j.set("created_at", formatTime(e.createdAt));
    j.set("expires_at", e.expiresAt == NeverExpires ? Json() : Json(formatTime(e.expiresAt)));
    // Whole seconds left, rounded up (0 once expired): the console's countdown.
    j.set("expires_in", e.expiresAt == NeverExpires ? Json() : Json(ceilDiv(std::max<Millis>(0, e.expiresAt - now), SECOND)));
    return j;
}

std::optional<EntryInput> entryFromJson(const Json& body, Millis now, Millis defaultTtlMs, std::string* why)
{
    Reader r(body, "", why);
    if (!r.isObject({"address", "ttl", "reason", "expires_at"}))
        return std::nullopt;
    EntryInput in;
    std::string address;
    if (!r.string("address", address, true, 64) || !r.string("reason", in.reason, false, 500))
        return std::nullopt;
    std::string addressWhy;
    const auto range = Cidr::parse(address, &addressWhy);
    if (!range) {
        fail(why, "address: " + addressWhy);
        return std::nullopt;
    }
    in.range = *range;
    const Json* ttl = r.get("ttl");
    const Json* expires = r.get("expires_at");
    if (ttl && expires && !expires->isNull()) {
        fail(why, "ttl and expires_at: give one, not both");
        return std::nullopt;
    }
    if (expires && !expires->isNull()) {
        if (!expires->isString()) {
            fail(why, "expires_at must be an RFC 3339 time string or null");
            return std::nullopt;
        }
        std::string timeWhy;
        const auto at = parseTime(expires->asString(), &timeWhy);
        if (!at) {
            fail(why, "expires_at " + timeWhy);
            return std::nullopt;
        }
        if (*at <= now) {
            fail(why, "expires_at must be in the future");
            return std::nullopt;
        }
        in.expiresAt = *at;
    } else if (expires) {
        in.expiresAt = NeverExpires;  // "expires_at": null
    } else if (!ttl) {
        in.expiresAt = now + defaultTtlMs;
    } else if (ttl->isNull()) {
        in.expiresAt = NeverExpires;
    } else {
        std::string ttlWhy;
        const auto d = parseDuration(*ttl, &ttlWhy);
        if (!d) {
            fail(why, "ttl " + ttlWhy);
            return std::nullopt;
        }
        in.expiresAt = now + *d;
    }
    return in;
}

// ---- tiers, customers, rules ---------------------------------------------------

Json toJson(const Level& l)
{
    Json j = Json::object();
    if (!l.name.empty())
        j.set("name", l.name);
    j.set("limit", l.limit);
    j.set("period", seconds(l.periodMs));
    if (l.algorithm != Algorithm::SlidingWindow)
        j.set("algorithm", toString(l.algorithm));
    if (l.bucketMs > 0)
        j.set("bucket", seconds(l.bucketMs));
    if (l.algorithm == Algorithm::Lockout)
        j.set("lockout", seconds(l.lockoutMs > 0 ? l.lockoutMs : l.periodMs));
    if (l.countRefused)
        j.set("count_refused", true);
    return j;
}

namespace {
Json levelsJson(const std::vector<Level>& levels)
{
    Json a = Json::array();
    for (const Level& l : levels)
        a.push(toJson(l));
    return a;
}
} // namespace

Json toJson(const Tier& t)
{
    Json j = Json::object();
    j.set("name", t.name);
    j.set("levels", levelsJson(t.levels));
    return j;
}

Json toJson(const Customer& c)
{
    Json j = Json::object();
    j.set("id", c.id);
    j.set("name", c.name);
    j.set("tier", c.tier);
    j.set("overrides", levelsJson(c.overrides));
    return j;
}

std::optional<Tier> tierFromJson(const Json& body, std::string_view name, std::string* why)
{
    Reader r(body, "", why);
    if (!r.isObject({"name", "levels"}))
        return std::nullopt;
    Tier t;
    t.name = std::string(name);
    std::string bodyName;
    if (!r.string("name", bodyName, false, 40))
        return std::nullopt;
    if (!bodyName.empty() && bodyName != name) {
        fail(why, "name \"" + bodyName + "\" differs from the tier named in the path");
        return std::nullopt;
    }
    const Json* levels = r.array("levels", true);
    if (!levels || !levelsFromJson(levels, "levels", t.levels, false, why))
        return std::nullopt;
    return t;
}

std::optional<Customer> customerFromJson(const Json& body, std::string_view id, std::string* why)
{
    Reader r(body, "", why);
    if (!r.isObject({"id", "name", "tier", "overrides"}))
        return std::nullopt;
    Customer c;
    c.id = std::string(id);
    std::string bodyId;
    if (!r.string("id", bodyId, false, 100) || !r.string("name", c.name, false, 200) || !r.string("tier", c.tier, true, 40))
        return std::nullopt;
    if (!bodyId.empty() && bodyId != id) {
        fail(why, "id \"" + bodyId + "\" differs from the customer named in the path");
        return std::nullopt;
    }
    if (const Json* o = r.array("overrides"); o && !levelsFromJson(o, "overrides", c.overrides, true, why))
        return std::nullopt;
    else if (r.get("overrides") && !o)
        return std::nullopt;
    return c;
}

Json rulesToJson(const EngineConfig& c)
{
    Json j = Json::object();
    Json rules = Json::array();
    for (const ThrottleRule& r : c.rules) {
        Json o = Json::object();
        o.set("name", r.name);
        o.set("key", toString(r.discriminator));
        if (r.discriminator == Discriminator::Header)
            o.set("header", r.header);
        o.set("method", r.method);
        o.set("path", r.pathGlob);
        o.set("levels", levelsJson(r.levels));
        rules.push(std::move(o));
    }
    j.set("rules", std::move(rules));
    // Derived, so that a document read here and written back says what it
    // means: no rule counts every request by address.
    j.set("ip_levels_disabled", !perIpLimiting(c.rules));
    Json cooldowns = Json::array();
    for (const Cooldown& cd : c.cooldowns) {
        Json o = Json::object();
        o.set("name", cd.name);
        o.set("method", cd.method);
        o.set("path", cd.pathGlob);
        o.set("duration", seconds(cd.durationMs));
        o.set("user_header", cd.userHeader);
        cooldowns.push(std::move(o));
    }
    j.set("cooldowns", std::move(cooldowns));
    j.set("excluded_paths", stringArray(c.bot.excludedPaths));
    j.set("safe_user_agents", stringArray(c.bot.safeUserAgents));
    j.set("cookieless_only", c.bot.cookielessOnly);
    Json e = Json::object();
    e.set("enabled", c.escalation.enabled);
    e.set("refusals", c.escalation.refusals);
    e.set("find", seconds(c.escalation.findMs));
    e.set("ban", seconds(c.escalation.banMs));
    e.set("max_ban", seconds(c.escalation.maxBanMs));
    e.set("factor", c.escalation.factor);
    j.set("escalation", std::move(e));
    const Settings& s = c.settings;
    Json so = Json::object();
    so.set("throttle_status", s.throttleStatus);
    so.set("ipv6_prefix", s.ipv6PrefixBits);
    so.set("ipv4_prefix", s.ipv4PrefixBits);
    so.set("dry_run", s.dryRun);
    so.set("rate_limit_headers", s.rateLimitHeadersOnAllowed);
    so.set("customer_source", toString(s.customerSource));
    so.set("customer_param", s.customerParam);
    so.set("customer_header", s.customerHeader);
    Json proxies = Json::array();
    for (const Cidr& p : s.trustedProxies)
        proxies.push(p.toString());
    so.set("trusted_proxies", std::move(proxies));
    so.set("max_tracked_keys", s.maxTrackedKeys);
    j.set("settings", std::move(so));
    return j;
}

bool rulesFromJson(const Json& body, EngineConfig& out, std::string* why)
{
    Reader top(body, "", why);
    if (!top.isObject({"rules", "ip_levels_disabled", "cooldowns", "excluded_paths", "safe_user_agents", "cookieless_only",
                       "escalation", "settings"}))
        return false;
    EngineConfig c = out;
    if (const Json* rules = top.array("rules")) {
        c.rules.clear();
        for (std::size_t i = 0; i < rules->asArray().size(); ++i) {
            const std::string path = indexed("rules", i);
            Reader r(rules->asArray()[i], path, why);
            if (!r.isObject({"name", "key", "header", "method", "path", "levels"}))
                return false;
            ThrottleRule rule;
            std::string key = "address";
            if (!r.string("name", rule.name, true, 40) || !r.string("key", key) || !r.string("header", rule.header, false, 100)
                || !r.string("method", rule.method, false, 16) || !r.string("path", rule.pathGlob, false, 500))
                return false;
            if (const auto d = discriminatorFromString(key))
                rule.discriminator = *d;
            else
                return fail(why, path + ".key must be \"address\", \"address_user_agent\" or \"header\"");
            const Json* levels = r.array("levels", true);
            if (!levels || !levelsFromJson(levels, path + ".levels", rule.levels, false, why))
                return false;
            c.rules.push_back(std::move(rule));
        }
    } else if (top.get("rules")) {
        return false;
    }
    // Without a per-IP rule no anonymous client is limited at all: allowed
    // only when the document says so, never by an empty or narrowed list.
    bool ipOff = false;
    if (!top.boolean("ip_levels_disabled", ipOff))
        return false;
    if (top.get("rules") || top.get("ip_levels_disabled")) {
        const bool off = !perIpLimiting(c.rules);
        if (off && !ipOff)
            return fail(why, "rules: no rule counts every request by address (key \"address\", no method, no path), which turns "
                             "per-IP limiting off for every anonymous client; keep one, or say \"ip_levels_disabled\": true");
        if (!off && ipOff) {
            const auto at = std::find_if(c.rules.begin(), c.rules.end(), isPerIpRule) - c.rules.begin();
            return fail(why, "ip_levels_disabled is true but " + indexed("rules", std::size_t(at))
                                 + " counts every request by address; remove it or leave ip_levels_disabled out");
        }
    }
    if (const Json* cds = top.array("cooldowns")) {
        c.cooldowns.clear();
        for (std::size_t i = 0; i < cds->asArray().size(); ++i) {
            const std::string path = indexed("cooldowns", i);
            Reader r(cds->asArray()[i], path, why);
            if (!r.isObject({"name", "method", "path", "duration", "user_header"}))
                return false;
            Cooldown cd;
            if (!r.string("name", cd.name, true, 40) || !r.string("method", cd.method, false, 16)
                || !r.string("path", cd.pathGlob, true, 500) || !r.duration("duration", cd.durationMs, true)
                || !r.string("user_header", cd.userHeader, false, 100))
                return false;
            c.cooldowns.push_back(std::move(cd));
        }
    } else if (top.get("cooldowns")) {
        return false;
    }
    if (!top.strings("excluded_paths", c.bot.excludedPaths) || !top.strings("safe_user_agents", c.bot.safeUserAgents)
        || !top.boolean("cookieless_only", c.bot.cookielessOnly))
        return false;
    if (const Json* e = top.get("escalation")) {
        Reader r(*e, "escalation", why);
        if (!r.isObject({"enabled", "refusals", "find", "ban", "max_ban", "factor"}) || !r.boolean("enabled", c.escalation.enabled)
            || !r.integer("refusals", c.escalation.refusals, 1, 1'000'000'000) || !r.duration("find", c.escalation.findMs)
            || !r.duration("ban", c.escalation.banMs) || !r.duration("max_ban", c.escalation.maxBanMs)
            || !r.integer("factor", c.escalation.factor, 1, 100))
            return false;
    }
    if (const Json* s = top.get("settings")) {
        Reader r(*s, "settings", why);
        Settings& st = c.settings;
        if (!r.isObject({"throttle_status", "ipv6_prefix", "ipv4_prefix", "dry_run", "rate_limit_headers", "customer_source",
                         "customer_param", "customer_header", "trusted_proxies", "max_tracked_keys"})
            || !r.integer("throttle_status", st.throttleStatus, 100, 599) || !r.integer("ipv6_prefix", st.ipv6PrefixBits, 1, 128)
            || !r.integer("ipv4_prefix", st.ipv4PrefixBits, 1, 32) || !r.boolean("dry_run", st.dryRun)
            || !r.boolean("rate_limit_headers", st.rateLimitHeadersOnAllowed)
            || !r.string("customer_param", st.customerParam, false, 100) || !r.string("customer_header", st.customerHeader, false, 100)
            || !r.integer("max_tracked_keys", st.maxTrackedKeys, 1, 100'000'000))
            return false;
        std::string source;
        if (!r.string("customer_source", source))
            return false;
        if (const auto cs = customerSourceFromString(source))
            st.customerSource = *cs;
        else if (!source.empty())
            return fail(why, "settings.customer_source must be \"query\", \"header\" or \"either\"");
        if (const Json* p = r.array("trusted_proxies")) {
            st.trustedProxies.clear();
            for (std::size_t i = 0; i < p->asArray().size(); ++i) {
                const Json& v = p->asArray()[i];
                std::string cidrWhy;
                const auto range = v.isString() ? Cidr::parse(v.asString(), &cidrWhy) : std::nullopt;
                if (!range)
                    return fail(why, indexed("settings.trusted_proxies", i) + (v.isString() ? ": " + cidrWhy : " must be a string"));
                st.trustedProxies.push_back(*range);
            }
        } else if (r.get("trusted_proxies")) {
            return false;
        }
    }
    out = std::move(c);
    return true;
}

// ---- snapshots -------------------------------------------------------------------

Json toJson(const ClientSummary& s, Millis now)
{
    Json j = Json::object();
    j.set("address", s.keyText());
    j.set("last_address", s.lastAddress.toString());
    j.set("state", toString(s.state));
    j.set("customer", s.customer.empty() ? Json() : Json(s.customer));
    j.set("rate", std::round(s.ratePerSecond * 100.0) / 100.0);
    j.set("last_3s", s.lastBucket);
    j.set("last_60s", s.last60s);
    if (s.bindingLimit) {
        Json b = Json::object();
        b.set("rule", s.bindingRule);
        b.set("used", s.bindingUsed);
        b.set("limit", s.bindingLimit);
        b.set("remaining", s.bindingUsed >= s.bindingLimit ? 0u : s.bindingLimit - s.bindingUsed);
        j.set("binding", std::move(b));
    } else {
        j.set("binding", Json());
    }
    j.set("retry_after", s.retryAfterMs > 0 ? Json(std::max<std::int64_t>(1, ceilDiv(s.retryAfterMs, SECOND))) : Json());
    j.set("retry_after_ms", s.retryAfterMs > 0 ? Json(s.retryAfterMs) : Json());
    j.set("last_seen", s.lastSeen ? Json(formatTime(s.lastSeen)) : Json());
    j.set("idle_ms", s.lastSeen ? Json(std::max<Millis>(0, now - s.lastSeen)) : Json());
    Json live = Json::array();
    for (auto v : s.live)
        live.push(v);
    j.set("live", std::move(live));
    return j;
}

Json toJson(const ClientDetail& d, Millis now)
{
    Json j = toJson(d.summary, now);
    Json levels = Json::array();
    for (const LevelUsage& u : d.levels) {
        Json l = Json::object();
        l.set("name", u.name);
        l.set("algorithm", toString(u.algorithm));
        l.set("limit", u.limit);
        l.set("period", seconds(u.periodMs));
        l.set("used", u.used);
        l.set("remaining", u.remaining);
        l.set("reset", ceilDiv(u.resetMs, SECOND));
        l.set("reset_ms", u.resetMs);
        l.set("refusing", u.refusing);
        l.set("retry_after_ms", u.retryAfterMs);
        Json buckets = Json::array();
        for (const BucketView& b : u.buckets) {
            Json bj = Json::object();
            bj.set("start", formatTime(b.startMs));
            bj.set("count", b.count);
            buckets.push(std::move(bj));
        }
        l.set("buckets", std::move(buckets));
        levels.push(std::move(l));
    }
    j.set("levels", std::move(levels));
    j.set("list_entry", d.listEntry && d.listKind ? toJson(*d.listEntry, *d.listKind, now) : Json());
    return j;
}

Json toJson(const LiveBuckets& lb)
{
    Json j = Json::object();
    j.set("bucket_seconds", seconds(lb.bucketMs));
    j.set("keys", lb.keys);
    Json buckets = Json::array();
    for (const LiveBucket& b : lb.buckets) {
        Json o = Json::object();
        o.set("start", formatTime(b.startMs));
        o.set("total", b.total);
        Json top = Json::array();
        for (const auto& [range, count] : b.top) {
            Json t = Json::object();
            t.set("address", keyText(range));
            t.set("count", count);
            top.push(std::move(t));
        }
        o.set("top", std::move(top));
        buckets.push(std::move(o));
    }
    j.set("buckets", std::move(buckets));
    return j;
}

} // namespace Floodgate::Core::Codec
