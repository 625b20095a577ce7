// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Rules.h"

#include "core/CustomerKey.h"

#include "core/SettingTable.h"
#include "core/Tuning.h"
#include "core/Window.h"

#include <algorithm>
#include <map>
#include <set>

namespace Floodgate::Core {

namespace {

Level level(std::uint32_t limit, Millis periodMs, Algorithm algorithm = Algorithm::SlidingWindow)
{
    Level l;
    l.limit = limit;
    l.periodMs = periodMs;
    l.algorithm = algorithm;
    return l;
}

} // namespace

std::optional<std::string> checkLevels(const std::vector<Level>& levels, const std::string& field, bool allowEmpty)
{
    if (levels.empty() && !allowEmpty)
        return field + " must have at least one level";
    if (levels.size() > Tuning::maxLevelsPerEntry)
        return field + " has " + std::to_string(levels.size()) + " levels: at most " + std::to_string(Tuning::maxLevelsPerEntry);
    std::set<Millis> periods;
    for (std::size_t i = 0; i < levels.size(); ++i) {
        const Level& l = levels[i];
        const std::string f = field + "[" + std::to_string(i) + "]";
        if (l.limit == 0)
            return f + ".limit must be > 0";
        if (l.periodMs <= 0)
            return f + ".period must be > 0";
        if (l.periodMs > 366 * 24 * HOUR)
            return f + ".period must be at most a year";
        if (l.name.size() > 40)
            return f + ".name must be at most 40 characters";
        if (l.algorithm == Algorithm::SlidingWindow) {
            if (l.bucketMs < 0)
                return f + ".bucket must be >= 0";
            if (l.bucketMs > l.periodMs)
                return f + ".bucket must not be longer than the period";
            const Millis width = l.bucketMs > 0 ? l.bucketMs : ceilDiv(l.periodMs, Tuning::defaultSlidingBuckets);
            if (ceilDiv(l.periodMs, std::max<Millis>(1, width)) > Millis(Tuning::maxSlidingBuckets))
                return f + ".bucket is too narrow: at most " + std::to_string(Tuning::maxSlidingBuckets) + " buckets per period";
        }
        if (l.lockoutMs < 0)
            return f + ".lockout must be >= 0";
        if (!periods.insert(l.periodMs).second)
            return f + ".period repeats another level's period";
    }
    return std::nullopt;
}

bool isPerIpRule(const ThrottleRule& r)
{
    return r.discriminator == Discriminator::ClientAddress && r.method.empty() && r.pathGlob.empty();
}

bool perIpLimiting(const std::vector<ThrottleRule>& rules)
{
    return std::any_of(rules.begin(), rules.end(), isPerIpRule);
}

std::vector<std::string> keylessCustomers(const EngineConfig& config, Millis now)
{
    std::vector<std::string> out;
    if (config.settings.customerAuth != CustomerAuth::ApiKey)
        return out;
    for (const Customer& c : config.customers)
        if (std::none_of(c.keys.begin(), c.keys.end(), [&](const CustomerKey& k) { return k.expiresAt == 0 || now < k.expiresAt; }))
            out.push_back(c.id);
    return out;
}

bool isTchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool isHeaderName(std::string_view name)
{
    return !name.empty() && std::all_of(name.begin(), name.end(), isTchar);
}

std::optional<std::string_view> queryParameter(std::string_view query, std::string_view name)
{
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) == name)
            return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        if (amp == std::string_view::npos)
            break;
        query.remove_prefix(amp + 1);
    }
    return std::nullopt;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = char(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = char(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

std::string formatPeriod(Millis ms)
{
    if (ms % SECOND != 0)
        return std::to_string(ms) + "ms";
    const Millis s = ms / SECOND;
    if (s % 86400 == 0)
        return std::to_string(s / 86400) + "d";
    if (s % 3600 == 0)
        return std::to_string(s / 3600) + "h";
    if (s % 60 == 0)
        return std::to_string(s / 60) + "m";
    return std::to_string(s) + "s";
}

EngineConfig defaultConfig()
{
    EngineConfig c;
    ThrottleRule ip;
    ip.name = "ip";
    // The lockout window (docs/BACKGROUND.md): 6 per 3 s, locked out for 3 s once
    // over (a steady 1 req/s bot is never refused, a 20 req/s flood is), then
    // the longer backoff levels.
    Level burst = level(6, 3 * SECOND, Algorithm::Lockout);
    burst.lockoutMs = 3 * SECOND;
    ip.levels = {burst, level(300, 5 * MINUTE), level(600, 30 * MINUTE)};
    c.rules.push_back(ip);

    Cooldown comments;
    comments.name = "comments";
    comments.method = "POST";
    comments.pathGlob = "/comments";
    comments.durationMs = 30 * SECOND;
    c.cooldowns.push_back(comments);

    c.tiers = {
        Tier{"Free", {level(100, HOUR)}},
        Tier{"Pro", {level(100, MINUTE), level(5000, HOUR)}},
        Tier{"Enterprise", {level(200, MINUTE), level(10000, HOUR)}},
    };
    // Every static type a browser fetches for one page (styles, scripts and
    // modules, images, web fonts, source maps), so loading a page and
    // reloading it costs two counted requests, not twenty. Matched without
    // regard to case ("/LOGO.PNG" too).
    c.bot.excludedPaths = {"*.css",  "*.js",   "*.mjs",  "*.map",   "*.png",  "*.jpg",
                           "*.jpeg", "*.gif",  "*.svg",  "*.ico",   "*.webp", "*.avif",
                           "*.bmp",  "*.woff", "*.woff2", "*.ttf",  "*.otf",  "*.eot"};
    return c;
}

const Tier* findTier(const std::vector<Tier>& tiers, std::string_view name, std::string* ambiguous)
{
    const Tier* found = nullptr;
    std::size_t matches = 0;
    std::string names;
    for (const Tier& t : tiers) {
        if (t.name == name)
            return &t;
        if (!equalsIgnoreCase(t.name, name))
            continue;
        found = &t;
        ++matches;
        names += (names.empty() ? "\"" : ", \"") + t.name + "\"";
    }
    if (matches == 1)
        return found;
    if (matches > 1 && ambiguous)
        *ambiguous = "tier \"" + std::string(name) + "\" is ambiguous: " + names + " differ only in case; name one exactly";
    return nullptr;
}

std::vector<Level> effectiveLevels(const Tier& tier, const Customer& customer)
{
    std::map<Millis, Level> byPeriod;
    for (const Level& l : tier.levels)
        byPeriod[l.periodMs] = l;
    for (const Level& l : customer.overrides)
        byPeriod[l.periodMs] = l;
    std::vector<Level> out;
    for (auto& [period, l] : byPeriod)
        out.push_back(l);
    return out;
}

namespace {

// Tuning::maxGlobLength: a glob's cost per decision grows with its length (Glob.h).
std::optional<std::string> checkGlob(const std::string& glob, const std::string& field)
{
    if (glob.size() > Tuning::maxGlobLength)
        return field + " must be at most " + std::to_string(Tuning::maxGlobLength) + " characters";
    return std::nullopt;
}

// Tuning::maxGlobsPerField: each glob of a list is one more pass per decision.
std::optional<std::string> checkGlobs(const std::vector<std::string>& globs, const std::string& field)
{
    if (globs.size() > Tuning::maxGlobsPerField)
        return field + " has " + std::to_string(globs.size()) + " patterns: at most " + std::to_string(Tuning::maxGlobsPerField);
    for (std::size_t i = 0; i < globs.size(); ++i)
        if (auto e = checkGlob(globs[i], field + "[" + std::to_string(i) + "]"))
            return e;
    return std::nullopt;
}

} // namespace

std::optional<std::string> validate(const EngineConfig& c)
{
    std::set<std::string> names;
    std::size_t addressLevels = 0;  // every rule counted by address shares the client's entry
    std::size_t keyedRules = 0;
    for (std::size_t i = 0; i < c.rules.size(); ++i) {
        const ThrottleRule& r = c.rules[i];
        const std::string f = "rules[" + std::to_string(i) + "]";
        if (r.name.empty())
            return f + ".name must not be empty";
        if (!names.insert(r.name).second)
            return f + ".name \"" + r.name + "\" is used twice";
        if (r.discriminator == Discriminator::Header && r.header.empty())
            return f + ".header must name a header for a header discriminator";
        if (auto e = checkGlob(r.pathGlob, f + ".path"))
            return e;
        if (auto e = checkLevels(r.levels, f + ".levels", false))
            return e;
        if (r.discriminator == Discriminator::ClientAddress) {
            addressLevels += r.levels.size();
            if (addressLevels > Tuning::maxLevelsPerEntry)
                return f + ".levels: the rules counted by address have " + std::to_string(addressLevels)
                    + " levels together: at most " + std::to_string(Tuning::maxLevelsPerEntry);
        } else if (++keyedRules > Tuning::maxKeyedRules) {
            return f + ".key: at most " + std::to_string(Tuning::maxKeyedRules)
                + " rules may count by a header or by address and user agent";
        }
    }
    if (c.cooldowns.size() > Tuning::maxGlobsPerField)
        return "cooldowns has " + std::to_string(c.cooldowns.size()) + " cooldowns: at most " + std::to_string(Tuning::maxGlobsPerField);
    std::set<std::string> cooldownNames;
    for (std::size_t i = 0; i < c.cooldowns.size(); ++i) {
        const Cooldown& cd = c.cooldowns[i];
        const std::string f = "cooldowns[" + std::to_string(i) + "]";
        if (cd.name.empty())
            return f + ".name must not be empty";
        if (!cooldownNames.insert(cd.name).second)
            return f + ".name \"" + cd.name + "\" is used twice";
        if (cd.pathGlob.empty())
            return f + ".path must not be empty";
        if (auto e = checkGlob(cd.pathGlob, f + ".path"))
            return e;
        if (cd.durationMs <= 0)
            return f + ".duration must be > 0";
    }
    if (auto e = checkGlobs(c.bot.excludedPaths, "excluded_paths"))
        return e;
    if (auto e = checkGlobs(c.bot.safeUserAgents, "safe_user_agents"))
        return e;
    std::set<std::string> tierNames;
    for (std::size_t i = 0; i < c.tiers.size(); ++i) {
        const Tier& t = c.tiers[i];
        const std::string f = "tiers[" + std::to_string(i) + "]";
        if (t.name.empty())
            return f + ".name must not be empty";
        if (!tierNames.insert(t.name).second)
            return f + ".name \"" + t.name + "\" is used twice";
        if (auto e = checkLevels(t.levels, f + ".levels", false))
            return e;
    }
    std::set<std::string> customerIds;
    std::set<std::string> keyDigests;
    for (std::size_t i = 0; i < c.customers.size(); ++i) {
        const Customer& cu = c.customers[i];
        const std::string f = "customers[" + std::to_string(i) + "]";
        if (cu.id.empty())
            return f + ".id must not be empty";
        if (!customerIds.insert(cu.id).second)
            return f + ".id \"" + cu.id + "\" is used twice";
        if (!tierNames.count(cu.tier))
            return f + ".tier \"" + cu.tier + "\" is not a known tier";
        if (auto e = checkLevels(cu.overrides, f + ".overrides", true))
            return e;
        if (cu.keys.size() > Tuning::maxKeysPerCustomer)
            return f + ".keys: at most " + std::to_string(Tuning::maxKeysPerCustomer) + " keys (revoke the old ones)";
        for (std::size_t k = 0; k < cu.keys.size(); ++k) {
            const CustomerKey& key = cu.keys[k];
            const std::string kf = f + ".keys[" + std::to_string(k) + "]";
            if (!digestFromHex(key.sha256))
                return kf + ".sha256 must be 64 lowercase hex digits";
            if (key.id.empty() || key.id.size() > 40)
                return kf + ".id must be 1-40 bytes";
            if (!keyDigests.insert(key.sha256).second)
                return kf + " is another customer's key too (or this one's twice)";
        }
        const Tier& tier = *std::find_if(c.tiers.begin(), c.tiers.end(), [&](const Tier& t) { return t.name == cu.tier; });
        if (const std::size_t n = effectiveLevels(tier, cu).size(); n > Tuning::maxLevelsPerEntry)
            return f + ".overrides: with tier \"" + cu.tier + "\" they make " + std::to_string(n) + " levels: at most "
                + std::to_string(Tuning::maxLevelsPerEntry);
    }
    for (const SettingRow& row : settingTable()) {
        if (row.group == SettingGroup::Escalation && !c.escalation.enabled)
            continue;  // kept as they are while escalation is off
        if (auto problem = row.check(c))
            return problem;
    }
    for (const auto& [name, field] : {std::pair{std::string_view(c.settings.customerKeyHeader), "settings.customer_key_header"},
                                      std::pair{std::string_view(c.settings.customerHeader), "settings.customer_header"}})
        if (!isHeaderName(name))
            return std::string(field) + " must be a header name (letters, digits and !#$%&'*+-.^_`|~)";
    if (c.escalation.enabled && c.escalation.maxBanMs < c.escalation.banMs)
        return std::string("escalation.max_ban must be >= escalation.ban");
    return std::nullopt;
}

} // namespace Floodgate::Core
