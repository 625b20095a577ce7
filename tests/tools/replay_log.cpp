// SPDX-License-Identifier: GPL-3.0-or-later
// Replays real web server access logs (Apache/nginx "combined" format)
// through the engine with the default rules, on the log's own clock, and
// reports which clients the defaults would have refused and why.
//
//   replay_log [--all] access.log [more.log ...]
//
// The replay itself is floodgate replay's (engine/replay: the parser, the
// time rules, the client's identity, the engine); this tool only keeps its
// own tallies from each decision. Every format floodgate replay reads works
// here too (combined, common, nginx JSON, limiter.log; gzipped, several
// files in a row). A 206 (Partial Content) answer is taken as a request
// that carried a Range header (Replay.h).
//
// Prints Markdown: the totals, then every refused client (--all: every
// client) with its user agent, its request count, its busiest 3 seconds (all
// requests, and the ones the rules counted) and minute, and what refused it.
#include "replay/Replay.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace Floodgate::Core;

namespace {

bool contains(std::string_view text, std::string_view word)
{
    for (std::size_t i = 0; i + word.size() <= text.size(); ++i)
        if (equalsIgnoreCase(text.substr(i, word.size()), word))
            return true;
    return false;
}

// A person's browser, as far as a user agent tells: "Mozilla/", not a
// "(compatible; Something/1.0)" that is not Internet Explorer, and no word
// that crawlers, feed readers, previews and scripts put in theirs.
bool looksLikeABrowser(std::string_view agent)
{
    if (agent.rfind("Mozilla/", 0) != 0)
        return false;
    if (contains(agent, "(compatible;") && !contains(agent, "MSIE"))
        return false;
    for (const char* w : {"bot", "crawl", "spider", "slurp", "fetch", "feed", "preview", "scan", "monitor", "http", "python",
                          "curl", "wget", "java/", "headless", "phantom"})
        if (contains(agent, w))
            return false;
    return true;
}

struct ClientStats {
    std::string agent;
    std::size_t requests = 0;
    std::size_t refused = 0;
    std::size_t rangeParts = 0;
    std::vector<Millis> times;
    std::vector<Millis> counted;  // the requests the rules counted (not excluded, not a continuation)
    std::map<std::string, std::size_t> refusingRules;
    std::string firstRefusal;  // "GET /path (rule)"
};

std::size_t busiest(const std::vector<Millis>& times, Millis width)
{
    std::size_t best = 0;
    std::size_t from = 0;
    for (std::size_t i = 0; i < times.size(); ++i) {
        while (times[i] - times[from] >= width)
            ++from;
        best = std::max(best, i - from + 1);
    }
    return best;
}

std::string shortAgent(const std::string& agent)
{
    return agent.size() <= 110 ? agent : agent.substr(0, 107) + "...";
}

// Addresses in the report keep their first half only (the logs are public,
// the report need not name anyone).
std::string masked(const std::string& client)
{
    if (client.find(':') != std::string::npos) {
        std::size_t colons = 0, i = 0;
        for (; i < client.size() && colons < 2; ++i)
            colons += client[i] == ':';
        return client.substr(0, i) + "…";
    }
    const auto first = client.find('.');
    const auto second = first == std::string::npos ? first : client.find('.', first + 1);
    return second == std::string::npos ? client : client.substr(0, second) + ".x.x";
}

} // namespace

int main(int argc, char** argv)
{
    bool all = false;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--all")
            all = true;
        else
            files.push_back(a);
    }
    if (files.empty()) {
        std::cerr << "usage: replay_log [--all] access.log [more.log ...]\n";
        return 2;
    }
    Floodgate::Replay::Input input;
    input.files = files;
    std::map<std::string, ClientStats> clients;
    std::size_t refusedRequests = 0;
    input.onDecision = [&](const Floodgate::Replay::DecisionEvent& e) {
        const RequestFacts& f = *e.facts;
        const Decision& d = *e.decision;
        ClientStats& c = clients[f.client.toString()];
        if (c.agent.empty())
            c.agent = std::string(f.userAgent);
        ++c.requests;
        for (const HeaderField& h : f.headers)
            c.rangeParts += equalsIgnoreCase(h.name, "Range");
        c.times.push_back(e.time);
        if (d.reason == Reason::Counted || d.reason == Reason::OverLimit)
            c.counted.push_back(e.time);
        if (d.refused()) {
            ++c.refused;
            ++refusedRequests;
            const std::string rule(d.rule.view());
            ++c.refusingRules[rule];
            if (c.firstRefusal.empty())
                c.firstRefusal = std::string(f.method) + " " + std::string(f.path.substr(0, 60)) + " (" + rule + ")";
        }
    };
    // The defaults of a new database.
    const Floodgate::Replay::Result result = Floodgate::Replay::replay(input, {Floodgate::Replay::Configuration{}});
    if (!result.fatal.empty()) {
        std::cerr << "replay_log: " << result.fatal << "\n";
        return 1;
    }
    for (const Floodgate::Replay::FileSummary& f : result.files)
        if (!f.error.empty())
            std::cerr << "replay_log: " << f.path << ": " << f.error << "\n";

    std::size_t refusedClients = 0, browsers = 0, refusedBrowsers = 0, closest = 0;
    for (const auto& [client, c] : clients) {
        const bool browser = looksLikeABrowser(c.agent);
        browsers += browser;
        if (browser)
            closest = std::max(closest, busiest(c.counted, 3000));
        refusedClients += c.refused > 0;
        refusedBrowsers += browser && c.refused > 0;
    }
    const double span = result.firstTime ? double(*result.lastTime - *result.firstTime) / 3'600'000.0 : 0.0;
    std::printf("Requests: %llu (%llu lines that did not parse), over %.1f hours\n", (unsigned long long)result.requests,
                (unsigned long long)result.badLines, span);
    if (result.late > 0)
        std::printf("Out of time order by more than %lld s: %llu lines, decided at the time already reached (as floodgate replay does)\n",
                    (long long)Floodgate::Replay::ReorderSeconds, (unsigned long long)result.late);
    std::printf("Clients: %zu, of which %zu look like browsers\n", clients.size(), browsers);
    std::printf("Refused: %zu requests; %zu clients (%.2f%%), of which %zu look like browsers\n", refusedRequests,
                refusedClients, clients.empty() ? 0.0 : 100.0 * double(refusedClients) / double(clients.size()), refusedBrowsers);
    std::printf("Closest a browser came to the 3 s level: %zu counted requests in 3 s (limit 6)\n\n", closest);
    std::printf("| client | user agent | kind | requests | 206 parts | busiest 3 s | counted in its busiest 3 s | busiest minute | refused | first refusal |\n");
    std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    std::vector<std::pair<std::string, const ClientStats*>> rows;
    for (const auto& [client, c] : clients)
        if (all || c.refused > 0)
            rows.emplace_back(client, &c);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second->refused > b.second->refused; });
    for (const auto& [client, c] : rows) {
        std::string agent = shortAgent(c->agent);
        std::replace(agent.begin(), agent.end(), '|', '/');
        std::printf("| %s | `%s` | %s | %zu | %zu | %zu | %zu | %zu | %zu | %s |\n", masked(client).c_str(), agent.c_str(),
                    looksLikeABrowser(c->agent) ? "browser" : "bot/tool", c->requests, c->rangeParts, busiest(c->times, 3000),
                    busiest(c->counted, 3000), busiest(c->times, 60'000), c->refused, c->firstRefusal.c_str());
    }
    return 0;
}
