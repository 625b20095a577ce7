// SPDX-License-Identifier: MIT
// Levels, tiers, customers and the rules document as JSON; the names of the rule enums.
#include "Codec.h"
#include "JsonReader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace Floodgate::Wire::Codec {

using namespace Core;

namespace {

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

} // namespace Floodgate::Wire::Codec
