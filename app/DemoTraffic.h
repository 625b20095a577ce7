// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic traffic with realistic actors (browsers with cookies, a good bot
// at 1 req/s, a scraper flood at 20 req/s, a double-submitter, API customers
// of each tier, an IPv6 rotator). It only says *what* to send and when; the
// caller feeds the engine directly or sends real HTTP.
#pragma once

#include "core/Rules.h"
#include "core/Time.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace Floodgate::App {

struct DemoRequest {
    std::string actor;   // "scraper", "good-bot", ...
    std::string client;  // source address
    std::string method;
    std::string path;
    std::string query;
    std::string userAgent;
    std::uint32_t cookies = 0;
    std::vector<std::pair<std::string, std::string>> headers;
};

// How the demo's API clients prove which customer they are: each sends
// its key, and names itself in the customer header too (believed from the
// demo, a trusted proxy, when customer_auth asks for a trusted header).
struct DemoCustomerProof {
    std::string keyHeader = "X-Api-Key";
    std::string customerHeader = "X-Customer-Id";
    std::vector<std::pair<std::string, std::string>> keys;  // customer id -> its key
};

class DemoTraffic {
public:
    explicit DemoTraffic(DemoCustomerProof proof = {}, std::uint64_t seed = 42);

    // The requests due in (previous tick, now]. The first call only sets the start.
    std::vector<DemoRequest> due(Core::Millis now);

    // The customers the demo's API clients use, each with a key derived from
    // `secret` (the database's admin token: another database, other keys;
    // the same one, the same keys on every run), and those keys.
    static std::vector<Core::Customer> demoCustomers(std::string_view secret, Core::Millis now, DemoCustomerProof* proof = nullptr);

private:
    struct Actor {
        std::string name;
        double ratePerSecond;
        double owed = 0;  // fractional requests carried to the next tick
    };
    DemoRequest make(const Actor& actor);

    DemoCustomerProof m_proof;
    std::mt19937_64 m_random;
    std::vector<Actor> m_actors;
    Core::Millis m_last = -1;
    std::uint64_t m_sequence = 0;
};

} // namespace Floodgate::App
