// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/DemoTraffic.h"

#include "core/CustomerKey.h"

#include <array>
#include <cstdio>

namespace Floodgate::App {

namespace {

const std::array<const char*, 8> PAGES = {"/", "/products", "/products/42", "/cart", "/about", "/search", "/blog/rate-limits", "/contact"};
const std::array<const char*, 4> ASSETS = {"/static/app.css", "/static/app.js", "/img/logo.png", "/favicon.ico"};

} // namespace

DemoTraffic::DemoTraffic(DemoCustomerProof proof, std::uint64_t seed)
    : m_proof(std::move(proof))
    , m_random(seed)
{
    m_actors = {
        {"browser", 3.0},         // eight people reading pages, with cookies, fetching assets
        {"good-bot", 1.0},        // a crawler that keeps to 1 request per second (docs/BACKGROUND.md, lockout window)
        {"scraper", 20.0},        // a flood from one address, no cookies
        {"double-submit", 0.2},   // someone pressing "submit" five times, every five seconds
        {"customer-free", 0.05},  // API customers of each tier
        {"customer-pro", 2.0},
        {"customer-enterprise", 3.0},
        {"ipv6-rotator", 8.0},    // a new address for every request, inside one /64
    };
}

std::vector<Core::Customer> DemoTraffic::demoCustomers(std::string_view secret, Core::Millis now, DemoCustomerProof* proof)
{
    std::vector<Core::Customer> customers = {
        Core::Customer{"hobbyist", "Hobbyist Labs", "Free", {}, {}},
        Core::Customer{"acme", "Acme Inc.", "Pro", {}, {}},
        Core::Customer{"globex", "Globex Corporation", "Enterprise", {}, {}},
    };
    for (Core::Customer& c : customers) {
        // SHA-256 over the secret and the id: 32 bytes nobody without the secret can tell.
        const Core::KeyDigest bytes = Core::keyDigest(std::string(secret) + '\0' + "demo customer" + '\0' + c.id);
        Core::NewCustomerKey key = Core::customerKeyFrom(bytes, now);
        c.keys = {key.key};
        if (proof)
            proof->keys.emplace_back(c.id, std::move(key.secret));
    }
    return customers;
}

DemoRequest DemoTraffic::make(const Actor& a)
{
    DemoRequest r;
    r.actor = a.name;
    r.method = "GET";
    auto pick = [&](auto& list) { return std::string(list[m_random() % list.size()]); };
    char buf[64];
    if (a.name == "browser") {
        std::snprintf(buf, sizeof buf, "198.51.100.%u", unsigned(10 + m_random() % 8));
        r.client = buf;
        r.path = (m_random() % 3 == 0) ? pick(ASSETS) : pick(PAGES);
        r.userAgent = "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0";
        r.cookies = 2;
    } else if (a.name == "good-bot") {
        r.client = "66.249.66.1";
        r.path = pick(PAGES);
        r.userAgent = "Mozilla/5.0 (compatible; GoodBot/2.1; +https://example.com/bot)";
    } else if (a.name == "scraper") {
        r.client = "203.0.113.66";
        std::snprintf(buf, sizeof buf, "/products/%u", unsigned(m_random() % 5000));
        r.path = buf;
        r.userAgent = "python-requests/2.31";
    } else if (a.name == "double-submit") {
        r.client = "192.0.2.45";
        r.method = "POST";
        r.path = "/comments";
        r.userAgent = "Mozilla/5.0 (Macintosh) Safari/17.0";
        r.cookies = 1;
        r.headers.emplace_back("X-User-Id", "carol");
    } else if (a.name.starts_with("customer-")) {
        const std::string tier = a.name.substr(9);
        const char* id = tier == "free" ? "hobbyist" : tier == "pro" ? "acme" : "globex";
        const char* address = tier == "free" ? "192.0.2.10" : tier == "pro" ? "192.0.2.20" : "192.0.2.30";
        r.client = address;
        r.path = "/api/v1/orders";
        for (const auto& [customer, key] : m_proof.keys)
            if (customer == id)
                r.headers.emplace_back(m_proof.keyHeader, key);
        r.headers.emplace_back(m_proof.customerHeader, id);
        r.userAgent = "acme-sdk/3.2";
    } else {  // ipv6-rotator
        std::snprintf(buf, sizeof buf, "2001:db8:bad:1:%x:%x:%x:%x", unsigned(m_random() & 0xffff), unsigned(m_random() & 0xffff),
                      unsigned(m_random() & 0xffff), unsigned(m_random() & 0xffff));
        r.client = buf;
        r.path = pick(PAGES);
        r.userAgent = "Mozilla/5.0 (compatible; RotatingCrawler/0.1)";
    }
    ++m_sequence;
    return r;
}

std::vector<DemoRequest> DemoTraffic::due(Core::Millis now)
{
    std::vector<DemoRequest> out;
    if (m_last < 0 || now <= m_last) {
        m_last = std::max(m_last, now);
        return out;
    }
    const double seconds = double(now - m_last) / 1000.0;
    m_last = now;
    for (Actor& a : m_actors) {
        a.owed += a.ratePerSecond * seconds;
        // The double-submitter clicks in bursts of five.
        const int burst = a.name == "double-submit" ? 5 : 1;
        while (a.owed >= 1.0) {
            a.owed -= 1.0;
            for (int i = 0; i < burst; ++i)
                out.push_back(make(a));
        }
    }
    return out;
}

} // namespace Floodgate::App
