// SPDX-License-Identifier: GPL-3.0-or-later
// Levels, tiers, customers and the rules document as JSON (its settings row by
// row from SettingTable.h); the names of the rule enums.
#include "wire/Codec.h"

#include "core/CustomerKey.h"
#include "wire/JsonReader.h"
#include "core/SettingTable.h"
#include "core/Utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace Floodgate::Wire::Codec {

using namespace Core;

namespace {

// A glob's length, like the number of globs in a list, is validate()'s to
// refuse (Tuning::maxGlobLength), for every way rules come in: the admin
// API, the command line, the console. Read here at any length.
constexpr std::size_t ANY_LENGTH = std::string::npos;

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

// ---- the rows of SettingTable.h ----

Json settingJson(const SettingRow& row, const EngineConfig& c)
{
    const SettingAccess& a = row.access;
    switch (row.kind) {
    case SettingKind::Integer: return a.number(c);
    case SettingKind::Flag: return a.number(c) != 0;
    case SettingKind::Duration: return seconds(a.number(c));
    case SettingKind::Text: return a.text(c);
    case SettingKind::Choice: return row.choiceName(a.number(c));
    case SettingKind::Ranges: {
        Json out = Json::array();
        for (const Cidr& p : a.ranges(c))
            out.push(p.toString());
        return out;
    }
    }
    return Json();
}

void writeSettings(Json& out, const EngineConfig& c, SettingGroup group)
{
    for (const SettingRow& row : settingTable())
        if (row.group == group)
            out.set(std::string(row.key), settingJson(row, c));
}

// The keys of `group`, and `more`.
std::vector<std::string_view> settingKeys(SettingGroup group, std::initializer_list<std::string_view> more = {})
{
    std::vector<std::string_view> keys(more);
    for (const SettingRow& row : settingTable())
        if (row.group == group)
            keys.push_back(row.key);
    return keys;
}

bool readSetting(Reader& r, const SettingRow& row, EngineConfig& c, std::string* why)
{
    const SettingAccess& a = row.access;
    switch (row.kind) {
    case SettingKind::Integer: {
        std::int64_t v = a.number(c);
        if (!r.integer(row.key, v, row.min, row.max))
            return false;
        a.setNumber(c, v);
        return true;
    }
    case SettingKind::Flag: {
        bool v = a.number(c) != 0;
        if (!r.boolean(row.key, v))
            return false;
        a.setNumber(c, v);
        return true;
    }
    case SettingKind::Duration: {
        Millis v = a.number(c);
        if (!r.duration(row.key, v))
            return false;
        a.setNumber(c, v);
        return true;
    }
    case SettingKind::Text: {
        std::string v = a.text(c);
        if (!r.string(row.key, v, false, std::size_t(row.max)))
            return false;
        a.setText(c, std::move(v));
        return true;
    }
    case SettingKind::Choice: {
        std::string name;
        if (!r.string(row.key, name))
            return false;
        if (const auto v = row.choiceValue(name))
            a.setNumber(c, *v);
        else if (!name.empty())
            return fail(why, r.path(row.key) + " must be " + row.choiceList());
        return true;
    }
    case SettingKind::Ranges: {
        const Json* list = r.array(row.key);
        if (!list)
            return !r.get(row.key);
        std::vector<Cidr> ranges;
        for (std::size_t i = 0; i < list->asArray().size(); ++i) {
            const Json& v = list->asArray()[i];
            std::string cidrWhy;
            const auto range = v.isString() ? Cidr::parse(v.asString(), &cidrWhy) : std::nullopt;
            if (!range)
                return fail(why, indexed(r.path(row.key), i) + (v.isString() ? ": " + cidrWhy : " must be a string"));
            ranges.push_back(*range);
        }
        a.setRanges(c, std::move(ranges));
        return true;
    }
    }
    return false;
}

// Reads the keys of `group` present in `r`'s object onto `c`, in the table's order.
bool readSettings(Reader& r, SettingGroup group, EngineConfig& c, std::string* why)
{
    for (const SettingRow& row : settingTable())
        if (row.group == group && !readSetting(r, row, c, why))
            return false;
    return true;
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

std::optional<Json> levelFromText(std::string_view text, std::string* why)
{
    const auto slash = text.find('/');
    std::uint64_t limit = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + (slash == std::string_view::npos ? 0 : slash), limit);
    if (slash == std::string_view::npos || slash == 0 || ec != std::errc() || end != text.data() + slash) {
        fail(why, "\"" + std::string(text) + "\" is not LIMIT/PERIOD (a whole number of requests per a duration: 100/1m, 5000/1h)");
        return std::nullopt;
    }
    std::string durationWhy;
    const auto period = parseDuration(Json(std::string(text.substr(slash + 1))), &durationWhy);
    if (!period) {
        fail(why, "\"" + std::string(text) + "\": the period " + durationWhy);
        return std::nullopt;
    }
    Json j = Json::object();
    j.set("limit", limit);
    j.set("period", seconds(*period));
    return j;
}

std::string levelText(const Level& l)
{
    std::string text = std::to_string(l.limit) + "/" + formatPeriod(l.periodMs);
    if (l.algorithm == Algorithm::FixedWindow)
        text += " fixed";
    else if (l.algorithm == Algorithm::Lockout)
        text += " lockout " + formatPeriod(l.lockoutMs > 0 ? l.lockoutMs : l.periodMs);
    return text;
}

bool validName(std::string_view s, std::size_t max)
{
    if (s.empty() || s.size() > max)
        return false;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t length = utf8SequenceLength(s.substr(i));
        if (length == 0 || (length == 1 && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f || s[i] == '/')))
            return false;
        i += length;
    }
    return true;
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

Json toJson(const CustomerKey& k)
{
    Json j = Json::object();
    j.set("id", k.id);
    j.set("sha256", k.sha256);
    j.set("created_at", formatTime(k.createdAt));
    j.set("expires_at", k.expiresAt == 0 ? Json() : Json(formatTime(k.expiresAt)));
    return j;
}

Json toJson(const Customer& c)
{
    Json j = Json::object();
    j.set("id", c.id);
    j.set("name", c.name);
    j.set("tier", c.tier);
    j.set("overrides", levelsJson(c.overrides));
    Json keys = Json::array();
    for (const CustomerKey& k : c.keys)
        keys.push(toJson(k));
    j.set("keys", std::move(keys));
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
    if (!r.isObject({"id", "name", "tier", "overrides", "keys"}))
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
    if (const Json* keys = r.array("keys"); keys) {
        for (std::size_t i = 0; i < keys->asArray().size(); ++i) {
            Reader k(keys->asArray()[i], indexed("keys", i), why);
            CustomerKey key;
            std::string created, expires;
            if (!k.isObject({"id", "sha256", "created_at", "expires_at"}) || !k.string("id", key.id, true, 40)
                || !k.string("sha256", key.sha256, true, 64) || !k.string("created_at", created, true, 40) || !k.string("expires_at", expires, false, 40))
                return std::nullopt;
            if (!Core::digestFromHex(key.sha256))
                return fail(why, k.path("sha256") + " must be 64 lowercase hex digits"), std::nullopt;
            std::string timeWhy;
            const auto createdAt = parseTime(created, &timeWhy);
            if (!createdAt)
                return fail(why, k.path("created_at") + " " + timeWhy), std::nullopt;
            key.createdAt = *createdAt;
            if (!expires.empty()) {
                const auto expiresAt = parseTime(expires, &timeWhy);
                if (!expiresAt)
                    return fail(why, k.path("expires_at") + " " + timeWhy), std::nullopt;
                key.expiresAt = *expiresAt;
            }
            c.keys.push_back(std::move(key));
        }
    } else if (r.get("keys")) {
        return std::nullopt;
    }
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
    writeSettings(j, c, SettingGroup::Document);
    Json e = Json::object();
    writeSettings(e, c, SettingGroup::Escalation);
    j.set("escalation", std::move(e));
    Json so = Json::object();
    writeSettings(so, c, SettingGroup::Settings);
    j.set("settings", std::move(so));
    return j;
}

bool rulesFromJson(const Json& body, EngineConfig& out, std::string* why)
{
    Reader top(body, "", why);
    if (!top.isObject(settingKeys(SettingGroup::Document,
                                  {"rules", "ip_levels_disabled", "cooldowns", "excluded_paths", "safe_user_agents", "escalation", "settings"})))
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
                || !r.string("method", rule.method, false, 16) || !r.string("path", rule.pathGlob, false, ANY_LENGTH))
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
                || !r.string("path", cd.pathGlob, true, ANY_LENGTH) || !r.duration("duration", cd.durationMs, true)
                || !r.string("user_header", cd.userHeader, false, 100))
                return false;
            c.cooldowns.push_back(std::move(cd));
        }
    } else if (top.get("cooldowns")) {
        return false;
    }
    if (!top.strings("excluded_paths", c.bot.excludedPaths) || !top.strings("safe_user_agents", c.bot.safeUserAgents)
        || !readSettings(top, SettingGroup::Document, c, why))
        return false;
    if (const Json* e = top.get("escalation")) {
        Reader r(*e, "escalation", why);
        if (!r.isObject(settingKeys(SettingGroup::Escalation)) || !readSettings(r, SettingGroup::Escalation, c, why))
            return false;
    }
    if (const Json* s = top.get("settings")) {
        Reader r(*s, "settings", why);
        // 0.5's way of naming a customer, which anyone could claim: said
        // plainly rather than "not a known field".
        for (const char* gone : {"customer_source", "customer_param"})
            if (r.get(gone))
                return fail(why, std::string("settings.") + gone + " is gone since 0.6: a customer proves who it is with an API key or "
                                 "through a trusted proxy (settings.customer_auth, docs/CHANGELOG.md); remove it");
        if (!r.isObject(settingKeys(SettingGroup::Settings)) || !readSettings(r, SettingGroup::Settings, c, why))
            return false;
    }
    out = std::move(c);
    return true;
}

} // namespace Floodgate::Wire::Codec
