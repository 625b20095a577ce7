// SPDX-License-Identifier: GPL-3.0-or-later
// What the listener tells the engine about a request, and what the engine answers.
#pragma once

#include "core/Address.h"
#include "core/Time.h"
#include "core/Utf8.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace Floodgate::Core {

enum class Action : std::uint8_t { Allow, Throttle, Block, DryRun };
inline constexpr std::size_t ActionCount = 4;
const char* toString(Action action);  // "allow" | "throttle" | "block" | "dry_run"

// Why the engine decided what it did (the console's and the events' "why").
enum class Reason : std::uint8_t {
    Counted,        // counted against the levels and within them
    OverLimit,      // a rule level refused
    Cooldown,       // a cooldown is running for this user and action
    Blocklisted,    // an operator or imported blocklist entry
    AutoBanned,     // an automatic (escalation) blocklist entry
    Safelisted,     // skipped every throttle
    ExcludedPath,   // not counted: excluded path (static assets)
    SafeUserAgent,  // not counted: a safe user agent
    HasCookies,     // not counted: cookie-less-only mode and the request has cookies
    RangeContinuation,  // not counted: a Range GET continuing a resource this client began reading (Tuning.h)
    ClusterDown,    // refused: Redis is out of reach and when_cluster_down is "closed"
};
const char* toString(Reason reason);

// A customer a request named without proving it (settings.customer_auth).
// Such a request is counted as the anonymous client it is; the claim is
// only told in its "why".
enum class Claim : std::uint8_t {
    None,
    UnknownKey,       // customer_key_header held no customer's key
    ExpiredKey,       // a customer's key, past its expiry (rotated out)
    UntrustedHeader,  // customer_header from a peer that is not a trusted proxy
    HeaderNotAProof,  // customer_header while customer_auth is api_key
    UnknownCustomer,  // a trusted proxy named a customer there is none of
};
inline constexpr std::size_t ClaimCount = 6;
const char* toString(Claim claim);  // "none" | "unknown_key" | "expired_key" | "untrusted_header" | "header_not_a_proof" | "unknown_customer"

struct HeaderField {
    std::string_view name;
    std::string_view value;
};

struct RequestFacts {
    IpAddress peer;    // the TCP peer
    IpAddress client;  // after trusted-proxy resolution (equal to peer without proxies)
    std::string_view method;
    std::string_view path;   // without the query
    std::string_view query;  // without '?'
    std::string_view userAgent;
    std::uint32_t cookieCount = 0;
    // The peer is a trusted proxy (settings.trusted_proxies): its forwarding
    // header and customer_header are believed.
    bool fromTrustedProxy = false;
    // A customer already proven (`floodgate replay` of a limiter.log line, whose
    // customer column a node wrote); when empty the engine asks the request
    // to prove one (settings.customer_auth).
    std::string_view customerId;
    // Every request header, for header discriminators and the cooldown user key.
    std::span<const HeaderField> headers;
    // In a cluster: this request already waited (Decision::waitForCluster)
    // as long as it may; it is decided now on what this node knows.
    bool clusterWaited = false;
};

// A short, fixed-capacity name so a decision never allocates. A longer one
// is cut, never inside a UTF-8 character (a customer id comes from the request).
struct ShortName {
    static constexpr std::size_t Capacity = 47;
    // Only the first `length` bytes and the terminator are ever written or
    // read: a Decision (two of these) is made on every request, and zeroing
    // 96 bytes it never reads showed in the profile.
    char text[Capacity + 1];
    std::uint8_t length = 0;

    ShortName() { text[0] = '\0'; }

    void assign(std::string_view s)
    {
        length = std::uint8_t(utf8Cut(s, Capacity));
        std::memcpy(text, s.data(), length);
        text[length] = '\0';
    }
    std::string_view view() const { return {text, length}; }
    bool empty() const { return length == 0; }
};

struct Decision {
    Action action = Action::Allow;
    Action wouldBe = Action::Allow;  // what it would be without dry-run
    Reason reason = Reason::Counted;
    ShortName rule;                  // the binding level: "ip-3s", "pro-1m", "cooldown:comments", "blocklist"
    std::uint32_t limit = 0;         // of the binding level (0: no level applied)
    std::uint32_t count = 0;         // requests counted in the binding window, this one included if counted
    std::uint32_t remaining = 0;     // of the binding level, after this request
    Millis windowMs = 0;             // the binding level's period
    Millis windowStartMs = 0;        // when the binding window began (for the log's window_start)
    Millis resetMs = 0;              // until the binding window's quota is whole again
    Millis retryAfterMs = 0;         // until the same request would pass (0 when allowed)
    Millis listExpiresAt = 0;        // for block/safelist decisions: when the entry ends
    bool autoBanned = false;         // this very request put the client on the blocklist
    // In a cluster: nothing was decided or counted; this client has used
    // what this node may admit before Redis acknowledges its earlier
    // requests. Decide again shortly (docs/CLUSTER.md, the error bound).
    bool waitForCluster = false;
    bool customer = false;           // decided by a customer tier
    ShortName customerId;            // that customer's id
    // Not a customer: what the request claimed without proof, and the
    // customer (or the key's first characters) it named.
    Claim claim = Claim::None;
    ShortName claimed;
    // How to answer, from the settings the decision was made under (so the
    // listener needs no second look at the configuration).
    std::uint16_t throttleStatus = 429;
    bool rateLimitHeadersOnAllowed = true;

    bool refused() const { return action == Action::Throttle || action == Action::Block; }
    // What a refusal is counted under, the same in /metrics and in replay's
    // report: the binding rule, or "automatic ban" for an escalation's
    // entry (whose rule is "blocklist", as an operator's block's is).
    std::string_view refusalName() const { return reason == Reason::AutoBanned ? std::string_view("automatic ban") : rule.view(); }
    std::int64_t retryAfterSeconds() const { return Core::retryAfterSeconds(retryAfterMs); }
    std::int64_t resetSeconds() const { return secondsRoundedUp(resetMs); }
};

} // namespace Floodgate::Core
