// SPDX-License-Identifier: MIT
// Replays real web server access logs (Apache/nginx "combined" format)
// through the engine with the default rules, on the log's own clock, and
// reports which clients the defaults would have refused and why.
//
//   replay_log [--all] access.log [more.log ...]
//
// Each line becomes one Engine::decide() at the line's time. A log has
// one-second timestamps: the lines of one second are spread evenly over it
// in the order they were written (a burst stays a burst, never bunched at
// the second's start, never spread over the next second). A combined log
// does not keep request headers, so a 206 (Partial Content) answer is taken
// as a request that carried a Range header; cookies are unknown (none).
//
// Prints Markdown: the totals, then every refused client (--all: every
// client) with its user agent, its request count, its busiest 3 seconds (all
// requests, and the ones the rules counted) and minute, and what refused it.
#include "core/Engine.h"
#include "replay/LogFormat.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace Floodgate::Core;

namespace {

struct Line {
    std::string client;
    std::int64_t second = 0;  // Unix time, UTC
    std::string method;
    std::string target;
    int status = 0;
    std::string agent;
};

// One combined line, read by floodgate replay's parser (engine/replay).
std::optional<Line> parse(const std::string& s)
{
    static Floodgate::Replay::ParseScratch scratch;
    Floodgate::Replay::LogRequest r;
    if (Floodgate::Replay::parseLine(s, Floodgate::Replay::LogFormat::Combined, r, scratch, nullptr) != Floodgate::Replay::LineKind::Request)
        return std::nullopt;
    Line l;
    l.client = r.peer.toString();
    l.second = r.time / 1000;
    l.method = std::string(r.method);
    l.target = std::string(r.target);
    l.status = r.status;
    l.agent = std::string(r.userAgent);
    return l;
}

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
    std::vector<Line> lines;
    std::size_t unparsed = 0;
    for (const std::string& f : files) {
        std::ifstream in(f);
        if (!in) {
            std::cerr << "replay_log: cannot read " << f << "\n";
            return 1;
        }
        std::string s;
        while (std::getline(in, s)) {
            if (auto l = parse(s))
                lines.push_back(std::move(*l));
            else if (!s.empty())
                ++unparsed;
        }
    }
    // Time order; lines of one second keep the order they were written in.
    std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.second < b.second; });

    Engine engine;  // the defaults of a new database
    std::map<std::string, ClientStats> clients;
    std::size_t refusedRequests = 0;
    Millis lastPurge = 0;
    for (std::size_t i = 0; i < lines.size();) {
        std::size_t j = i;
        while (j < lines.size() && lines[j].second == lines[i].second)
            ++j;
        const std::size_t inSecond = j - i;
        for (std::size_t k = i; k < j; ++k) {
            const Line& l = lines[k];
            const Millis now = l.second * 1000 + Millis((k - i) * 1000 / inSecond);
            if (now - lastPurge >= 60'000) {
                engine.purge(now);
                lastPurge = now;
            }
            const auto address = IpAddress::parse(l.client);
            if (!address)
                continue;
            const auto q = l.target.find('?');
            std::vector<HeaderField> headers;
            if (l.status == 206)
                headers.push_back({"Range", "bytes=0-"});
            RequestFacts f;
            f.peer = *address;
            f.client = *address;
            f.method = l.method;
            f.path = std::string_view(l.target).substr(0, q);
            f.query = q == std::string::npos ? std::string_view{} : std::string_view(l.target).substr(q + 1);
            f.userAgent = l.agent;
            f.headers = headers;
            const Decision d = engine.decide(f, now);
            ClientStats& c = clients[l.client];
            if (c.agent.empty())
                c.agent = l.agent;
            ++c.requests;
            c.rangeParts += l.status == 206;
            c.times.push_back(now);
            const std::string_view reason = toString(d.reason);
            if (reason == "counted" || reason == "over_limit")
                c.counted.push_back(now);
            if (d.refused()) {
                ++c.refused;
                ++refusedRequests;
                const std::string rule(d.rule.view());
                ++c.refusingRules[rule];
                if (c.firstRefusal.empty())
                    c.firstRefusal = l.method + " " + std::string(f.path.substr(0, 60)) + " (" + rule + ")";
            }
        }
        i = j;
    }

    std::size_t refusedClients = 0, browsers = 0, refusedBrowsers = 0, closest = 0;
    for (const auto& [client, c] : clients) {
        const bool browser = looksLikeABrowser(c.agent);
        browsers += browser;
        if (browser)
            closest = std::max(closest, busiest(c.counted, 3000));
        refusedClients += c.refused > 0;
        refusedBrowsers += browser && c.refused > 0;
    }
    const double span = lines.empty() ? 0 : double(lines.back().second - lines.front().second) / 3600.0;
    std::printf("Requests: %zu (%zu lines not in combined format), over %.1f hours\n", lines.size(), unparsed, span);
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
