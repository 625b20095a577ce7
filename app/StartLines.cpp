// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/StartLines.h"

#include "core/Printable.h"

namespace Floodgate::App {

namespace {

using F = StartFacts;

constexpr StartLine TABLE[] = {
    {"always; `(proxy mode -> URL)` with --upstream",
     [](const F& f) { return "listening on " + f.listenUrl + " (" + f.mode + ")"; }},
    {"unless --admin off",
     [](const F& f) { return f.adminUrl.empty() ? std::string() : "admin on " + f.adminUrl; }},
    {"unless --admin off; `(beyond loopback /healthz and /metrics too)` after the header when the admin API listens beyond loopback",
     [](const F& f) {
         if (f.adminUrl.empty())
             return std::string();
         return std::string("admin API wants \"Authorization: Bearer TOKEN\"") + (f.adminBeyondLoopback ? " (beyond loopback /healthz and /metrics too)" : "")
              + "; `floodgate token --db " + f.database + "` prints it";
     }},
    {"always; `(new, with the default rules)` when it was just made, `(the demo's own: --db names another)` with --demo and no --db",
     [](const F& f) {
         return "database " + f.database + (f.databaseCreated ? " (new, with the default rules)" : "")
              + (f.demoDatabase ? " (the demo's own: --db names another)" : "");
     }},
    {"when customers have no valid API key and customer_auth is api_key: they count as anonymous clients (up to five named)",
     [](const F& f) {
         if (f.keyless.empty())
             return std::string();
         std::string ids;
         for (std::size_t i = 0; i < f.keyless.size() && i < 5; ++i)
             ids += (i ? ", " : "") + Core::printable(f.keyless[i]);
         return "customers without an API key: " + std::to_string(f.keyless.size()) + " (" + ids + (f.keyless.size() > 5 ? ", ..." : "")
              + "), counted as anonymous clients; `floodgate customers key ID` gives one";
     }},
    {"with --redis (docs/CLUSTER.md)",
     [](const F& f) { return f.cluster.empty() ? std::string() : "cluster: " + Core::printable(f.cluster); }},
    {"always, last; `off` with --log off, `(dry run: nothing is refused)` with --dry-run",
     [](const F& f) { return "limiter log " + (f.logPath.empty() ? std::string("off") : f.logPath) + (f.dryRun ? " (dry run: nothing is refused)" : ""); }},
};

} // namespace

std::span<const StartLine> startLineTable()
{
    return TABLE;
}

std::vector<std::string> startLines(const StartFacts& facts)
{
    std::vector<std::string> lines;
    for (const StartLine& line : TABLE)
        if (std::string text = line.text(facts); !text.empty())
            lines.push_back(std::move(text));
    return lines;
}

} // namespace Floodgate::App
