// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/SettingTable.h"

namespace Floodgate::Core {

namespace {

constexpr SettingChoice THROTTLE_STATUSES[] = {{429, {}}, {503, {}}, {403, {}}};

constexpr SettingChoice CUSTOMER_AUTHS[] = {
    {std::int64_t(CustomerAuth::ApiKey), "api_key"},
    {std::int64_t(CustomerAuth::TrustedHeader), "trusted_header"},
    {std::int64_t(CustomerAuth::ApiKeyOrTrustedHeader), "api_key_or_trusted_header"},
};

constexpr SettingChoice WHEN_CLUSTER_DOWN[] = {
    {std::int64_t(WhenClusterDown::Local), "local"},
    {std::int64_t(WhenClusterDown::Open), "open"},
    {std::int64_t(WhenClusterDown::Closed), "closed"},
};

using G = SettingGroup;
using K = SettingKind;
using B = SettingBounds;

// In the order the rules document writes them: each group's keys come out
// (and are read, and checked) in this order.
constexpr SettingRow TABLE[] = {
    {G::Document, "cookieless_only", "cookieless_only", K::Flag, 0, 0, B::Both, {},
     "Count only requests without cookies: people with a session are not counted.",
     settingAccess<&EngineConfig::bot, &BotOptions::cookielessOnly>()},

    {G::Escalation, "enabled", "escalation_enabled", K::Flag, 0, 0, B::Both, {},
     "Put clients that keep being refused on the blocklist for a while, longer on each repeat.",
     settingAccess<&EngineConfig::escalation, &Escalation::enabled>()},
    {G::Escalation, "refusals", "escalation_refusals", K::Integer, 1, 1'000'000'000, B::Floor, {},
     "How many over-limit refusals within the find time put a client on the blocklist.",
     settingAccess<&EngineConfig::escalation, &Escalation::refusals>()},
    {G::Escalation, "find", "escalation_find_ms", K::Duration, 0, 0, B::Both, {},
     "The time the refusals are counted over.",
     settingAccess<&EngineConfig::escalation, &Escalation::findMs>()},
    {G::Escalation, "ban", "escalation_ban_ms", K::Duration, 0, 0, B::Both, {},
     "How long a client's first ban lasts.",
     settingAccess<&EngineConfig::escalation, &Escalation::banMs>()},
    {G::Escalation, "max_ban", "escalation_max_ban_ms", K::Duration, 0, 0, B::Both, {},
     "The longest ban: each repeat multiplies the ban by the factor, up to this.",
     settingAccess<&EngineConfig::escalation, &Escalation::maxBanMs>()},
    {G::Escalation, "factor", "escalation_factor", K::Integer, 1, 100, B::Floor, {},
     "Each repeat ban lasts this many times the one before.",
     settingAccess<&EngineConfig::escalation, &Escalation::factor>()},

    {G::Settings, "throttle_status", "throttle_status", K::Integer, 100, 599, B::Both, THROTTLE_STATUSES,
     "The status a refused request is answered with.",
     settingAccess<&EngineConfig::settings, &Settings::throttleStatus>()},
    {G::Settings, "ipv6_prefix", "ipv6_prefix", K::Integer, 1, 128, B::Both, {},
     "IPv6 clients are counted per this prefix: every address in it is one client.",
     settingAccess<&EngineConfig::settings, &Settings::ipv6PrefixBits>()},
    {G::Settings, "ipv4_prefix", "ipv4_prefix", K::Integer, 1, 32, B::Both, {},
     "IPv4 clients are counted per this prefix (32: every address on its own).",
     settingAccess<&EngineConfig::settings, &Settings::ipv4PrefixBits>()},
    {G::Settings, "dry_run", "dry_run", K::Flag, 0, 0, B::Both, {},
     "Decide and report as usual, but let every request through.",
     settingAccess<&EngineConfig::settings, &Settings::dryRun>()},
    {G::Settings, "rate_limit_headers", "rate_limit_headers", K::Flag, 0, 0, B::Both, {},
     "Send the RateLimit headers on allowed answers too, not only on refusals.",
     settingAccess<&EngineConfig::settings, &Settings::rateLimitHeadersOnAllowed>()},
    {G::Settings, "customer_auth", "customer_auth", K::Choice, 0, 0, B::Both, CUSTOMER_AUTHS,
     "How a request proves which customer it speaks for: one of the customer's API keys, the customer header from a trusted "
     "proxy, or either. Anything else is counted as the anonymous client it is.",
     settingAccess<&EngineConfig::settings, &Settings::customerAuth>()},
    {G::Settings, "customer_key_header", "customer_key_header", K::Text, 1, 100, B::Both, {},
     "The header a customer sends its API key in.",
     settingAccess<&EngineConfig::settings, &Settings::customerKeyHeader>()},
    {G::Settings, "customer_header", "customer_header", K::Text, 1, 100, B::Both, {},
     "The header a trusted proxy names the customer in (it authenticated the caller); from anyone else it is not believed.",
     settingAccess<&EngineConfig::settings, &Settings::customerHeader>()},
    {G::Settings, "trusted_proxies", {}, K::Ranges, 0, 0, B::Both, {},
     "Forwarding headers (X-Forwarded-For, Forwarded) are believed only from peers in these ranges.",
     settingAccess<&EngineConfig::settings, &Settings::trustedProxies>()},
    {G::Settings, "max_tracked_keys", "max_tracked_keys", K::Integer, 1, 100'000'000, B::Floor, {},
     "How many clients are tracked at once; the least recently seen make way for new ones.",
     settingAccess<&EngineConfig::settings, &Settings::maxTrackedKeys>()},
    {G::Settings, "when_cluster_down", "when_cluster_down", K::Choice, 0, 0, B::Both, WHEN_CLUSTER_DOWN,
     "In a cluster, while Redis is out of reach: each node enforces its share of every limit (local), "
     "the whole limit on its own (open), or refuses counted requests (closed).",
     settingAccess<&EngineConfig::settings, &Settings::whenClusterDown>()},
};

std::string below(std::int64_t min)
{
    return min == 1 ? std::string(" must be > 0") : " must be >= " + std::to_string(min);
}

} // namespace

std::span<const SettingRow> settingTable()
{
    return TABLE;
}

const SettingRow* findSetting(std::string_view path)
{
    for (const SettingRow& row : TABLE)
        if (row.path() == path)
            return &row;
    return nullptr;
}

const SettingRow* findSettingColumn(std::string_view column)
{
    for (const SettingRow& row : TABLE)
        if (!row.column.empty() && row.column == column)
            return &row;
    return nullptr;
}

std::string SettingRow::path() const
{
    switch (group) {
    case SettingGroup::Document: return std::string(key);
    case SettingGroup::Escalation: return "escalation." + std::string(key);
    case SettingGroup::Settings: return "settings." + std::string(key);
    }
    return std::string(key);
}

std::int64_t SettingRow::defaultNumber() const
{
    return access.number ? access.number(EngineConfig{}) : 0;
}

std::optional<std::int64_t> SettingRow::choiceValue(std::string_view name) const
{
    for (const SettingChoice& c : choices)
        if (!c.name.empty() && c.name == name)
            return c.value;
    return std::nullopt;
}

std::string_view SettingRow::choiceName(std::int64_t value) const
{
    for (const SettingChoice& c : choices)
        if (c.value == value)
            return c.name;
    return {};
}

std::string SettingRow::choiceList() const
{
    std::string out;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (i > 0)
            out += i + 1 == choices.size() ? " or " : ", ";
        out += kind == SettingKind::Choice ? "\"" + std::string(choices[i].name) + "\"" : std::to_string(choices[i].value);
    }
    return out;
}

std::optional<std::string> SettingRow::check(const EngineConfig& config) const
{
    if (!choices.empty()) {
        const std::int64_t v = access.number(config);
        for (const SettingChoice& c : choices)
            if (c.value == v)
                return std::nullopt;
        return path() + " must be " + choiceList();
    }
    switch (kind) {
    case SettingKind::Integer: {
        const std::int64_t v = access.number(config);
        if (bounds == SettingBounds::Both && (v < min || v > max))
            return path() + " must be " + std::to_string(min) + "-" + std::to_string(max);
        if (v < min)
            return path() + below(min);
        return std::nullopt;
    }
    case SettingKind::Duration:
        if (access.number(config) <= 0)
            return path() + " must be > 0";
        return std::nullopt;
    case SettingKind::Flag:
    case SettingKind::Text:
    case SettingKind::Choice:
    case SettingKind::Ranges:
        return std::nullopt;
    }
    return std::nullopt;
}

} // namespace Floodgate::Core
