// SPDX-License-Identifier: GPL-3.0-or-later
// What the operator configures: throttle rules and their levels, cooldowns,
// customer tiers, bot options, escalation and settings. Plain values; the
// engine compiles a validated copy and publishes it atomically.
#pragma once

#include "core/Address.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Core {

enum class Algorithm : std::uint8_t {
    SlidingWindow,  // buckets over the period; a request passes while the window sum < limit
    FixedWindow,    // rack-attack: counter keyed floor(now / period), reset at each boundary
    Lockout,        // docs/BACKGROUND.md, lockout window: the window starts at the first request; once over,
                    // refused for the lockout time, then let in again
};

enum class Discriminator : std::uint8_t {
    ClientAddress,        // the client address (IPv6 cut to the counting prefix)
    AddressAndUserAgent,  // many users behind one NAT with different browsers
    Header,               // the value of a request header (an API key, a session id)
};

// One "limit per period" of a rule.
struct Level {
    std::string name;            // shown in headers and the UI; empty: "<rule>-<period>"
    std::uint32_t limit = 0;     // requests allowed per period (> 0)
    Millis periodMs = 0;         // > 0
    Algorithm algorithm = Algorithm::SlidingWindow;
    Millis bucketMs = 0;         // sliding only: bucket width; 0 = period / Tuning::defaultSlidingBuckets
    Millis lockoutMs = 0;        // lockout only: how long a client is refused once over; 0 = the period
    bool countRefused = false;   // do refused requests count against this level?
                                 // (the plain N-per-D throttle counts them; the lockout window does not: the default)
                                 // For a lockout level it means a refusal restarts the lockout.
};

struct ThrottleRule {
    std::string name;  // "ip"
    Discriminator discriminator = Discriminator::ClientAddress;
    std::string header;    // for Discriminator::Header
    std::string method;    // empty = any method
    std::string pathGlob;  // empty = any path
    std::vector<Level> levels;
};

// docs/BACKGROUND.md, cooldown: once an action succeeded, the same user may not repeat it for a while.
struct Cooldown {
    std::string name;        // "comments"
    std::string method;      // "POST"
    std::string pathGlob;    // "/comments"
    Millis durationMs = 0;
    std::string userHeader = "X-User-Id";  // identifies the user; absent: the client address
};

struct Tier {
    std::string name;  // "Pro"
    std::vector<Level> levels;
};

// An API key a customer proves who it is with (docs/INTERFACE.md, "Customers
// prove who they are"). The key itself is shown once, when it is made, and
// never stored: only its SHA-256 (core/CustomerKey.h).
struct CustomerKey {
    std::string id;      // the key's first characters ("fgk_Ab12Cd34"): tells keys apart, proves nothing
    std::string sha256;  // 64 lowercase hex digits
    Millis createdAt = 0;
    Millis expiresAt = 0;  // 0: until revoked; otherwise no longer accepted from then on
    friend bool operator==(const CustomerKey&, const CustomerKey&) = default;
};

struct Customer {
    std::string id;    // "acme": how the operator, the events and a trusted proxy's header name it
    std::string name;  // "Acme Inc."
    std::string tier;  // a Tier name
    // Replace the tier's level of the same period and add the others (docs/BACKGROUND.md, tiers:
    // {60:100, 3600:1000, 86400:10000}).
    std::vector<Level> overrides;
    std::vector<CustomerKey> keys;  // oldest first
};

struct BotOptions {
    bool cookielessOnly = false;              // count only requests without cookies
    std::vector<std::string> safeUserAgents;  // glob if it has * or ?, otherwise a case-insensitive substring
    std::vector<std::string> excludedPaths;   // globs on the path; these requests are not counted
};

// fail2ban's bantime.increment: K refusals within F put the client on the
// blocklist for T, doubling on each repeat up to a cap.
//
// The initialisers here, in BotOptions and in Settings are the defaults;
// SettingTable.h describes each of these members for the API, the database,
// validate() and the console.
struct Escalation {
    bool enabled = true;
    std::uint32_t refusals = 100;       // K
    Millis findMs = MINUTE;             // F
    Millis banMs = 15 * MINUTE;         // T
    Millis maxBanMs = 7 * DAY;
    std::uint32_t factor = 2;           // each repeat multiplies the ban by this
};

// How a request proves which customer it speaks for. Anything else (an
// unknown key, a customer header from a peer that is not a trusted proxy)
// is a claim, not a proof: the request counts as the anonymous client it is.
enum class CustomerAuth : std::uint8_t {
    ApiKey,                  // one of the customer's keys, in customer_key_header
    TrustedHeader,           // customer_header, believed only from a trusted proxy
    ApiKeyOrTrustedHeader,   // either proof
};

// What a node of a cluster enforces while Redis is out of reach (docs/CLUSTER.md).
enum class WhenClusterDown : std::uint8_t {
    Local,   // its share of each limit: limit / nodes, for the last known number of nodes
    Open,    // the whole limit, counted on this node alone
    Closed,  // refuse every counted request
};

struct Settings {
    int throttleStatus = 429;         // 429, 503 or 403
    int ipv6PrefixBits = Tuning::defaultIpv6CountingPrefix;  // IPv6 clients are counted per this prefix
    int ipv4PrefixBits = 32;
    bool dryRun = false;              // decide and report, let everything through
    bool rateLimitHeadersOnAllowed = true;
    CustomerAuth customerAuth = CustomerAuth::ApiKey;
    std::string customerKeyHeader = "X-Api-Key";
    std::string customerHeader = "X-Customer-Id";  // believed only from trusted proxies
    std::vector<Cidr> trustedProxies;  // used by the listener
    std::size_t maxTrackedKeys = Tuning::defaultMaxTrackedKeys;
    WhenClusterDown whenClusterDown = WhenClusterDown::Local;  // only with --redis
};

struct EngineConfig {
    std::vector<ThrottleRule> rules;  // apply to anonymous clients (no known customer)
    std::vector<Cooldown> cooldowns;
    std::vector<Tier> tiers;
    std::vector<Customer> customers;
    BotOptions bot;
    Escalation escalation;
    Settings settings;
};

// docs/INTERFACE.md's defaults on a new database.
EngineConfig defaultConfig();

// A rule that counts every request by client address (any method, any
// path): what limits every anonymous client. Without one, per-IP limiting
// is off and only narrower rules (a path, a header) apply, if any.
bool isPerIpRule(const ThrottleRule& rule);
bool perIpLimiting(const std::vector<ThrottleRule>& rules);

// nullopt when the configuration can be published; otherwise what is wrong,
// naming the field ("rules[0].levels[1].limit must be > 0").
std::optional<std::string> validate(const EngineConfig& config);
// The part of validate() for one list of levels, named `field` ("tiers[0].levels").
std::optional<std::string> checkLevels(const std::vector<Level>& levels, const std::string& field, bool allowEmpty);

// Tier names are one namespace, case-insensitively (ASCII): "pro" names the
// tier "Pro", which keeps its spelling. The tier `name` names: the one spelt
// exactly so, else the only one equal to it ignoring case. Null when none
// is; also when several are (a database from before 0.6.0 may hold "Pro"
// and "pro"), and then *ambiguous says which, to be named exactly.
const Tier* findTier(const std::vector<Tier>& tiers, std::string_view name, std::string* ambiguous = nullptr);

// "3s", "5m", "30m", "1h", "1d", "90s": the compact period used in level names.
std::string formatPeriod(Millis periodMs);
// The effective levels of a customer: the tier's, with overrides replacing the
// level of the same period and adding the others; sorted by period.
std::vector<Level> effectiveLevels(const Tier& tier, const Customer& customer);

// The raw (still percent-encoded) value of `name` in a query string
// ("a=1&b=2"); "" for a bare "name", nullopt when it is absent.
// The customers that cannot prove who they are: none of their keys is
// valid at `now` and customer_auth is api_key (a trusted proxy cannot name
// them either). They are counted as anonymous clients; the start-up lines
// and the console say so.
std::vector<std::string> keylessCustomers(const EngineConfig& config, Millis now);

// RFC 9110: a token character, and a field name (a token): what a header
// setting, a rule's header and --real-ip-header accept.
bool isTchar(char c);
bool isHeaderName(std::string_view name);

std::optional<std::string_view> queryParameter(std::string_view query, std::string_view name);

// Case-insensitive ASCII comparison (header names, methods).
bool equalsIgnoreCase(std::string_view a, std::string_view b);

} // namespace Floodgate::Core
