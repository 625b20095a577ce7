// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/Report.h"

#include "core/Printable.h"
#include "wire/Codec.h"
#include "wire/Csv.h"

#include <algorithm>
#include <cstdio>

namespace Floodgate::Replay {

namespace {

// 1234567 -> "1,234,567": counts a person reads at a glance.
std::string grouped(std::uint64_t n)
{
    std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return out;
}

std::string where(const Result& r, LineRef at)
{
    const std::string& path = at.file < r.files.size() ? r.files[at.file].path : std::string("?");
    return Core::printable(path) + ":" + std::to_string(at.line);
}

std::string padded(std::string s, std::size_t width)
{
    if (s.size() < width)
        s.append(width - s.size(), ' ');
    return s;
}

std::string leftPadded(const std::string& s, std::size_t width)
{
    return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

const char* const CrawlerNote = "user agents can be forged: check the address (reverse DNS) before trusting it";

} // namespace

std::string textReport(const Result& r)
{
    std::string out;
    out += "Files:\n";
    for (const FileSummary& f : r.files) {
        out += "  " + Core::printable(f.path) + ": ";
        if (f.lines == 0 && f.error.empty()) {
            out += "empty\n";
            continue;
        }
        out += std::string(toString(f.format)) + (f.gzip ? " (gzip)" : "") + ", " + grouped(f.lines) + " lines, " + grouped(f.requests)
             + " requests, " + grouped(f.bad) + " not parsed";
        if (!f.error.empty())
            out += "\n    stopped: " + Core::printable(f.error);
        out += "\n";
    }
    out += "Lines read: " + grouped(r.lines) + "; requests replayed: " + grouped(r.requests) + "\n";
    if (r.firstTime && r.lastTime)
        out += "Time span: " + Wire::Codec::formatTime(*r.firstTime) + " to " + Wire::Codec::formatTime(*r.lastTime) + " ("
             + Wire::Codec::humanDuration(*r.lastTime - *r.firstTime) + ")\n";
    if (r.outsideRange)
        out += "Outside --from/--to (skipped): " + grouped(r.outsideRange) + "\n";
    out += "Lines that did not parse: " + grouped(r.badLines) + "\n";
    for (const BadLine& b : r.firstBad)
        out += "  " + where(r, b.where) + ": " + Core::printable(b.why) + "\n";
    if (r.badLines > r.firstBad.size())
        out += "  (" + grouped(r.badLines - r.firstBad.size()) + " more not shown)\n";
    if (r.late) {
        out += "Lines out of order: " + grouped(r.late) + " were earlier than requests already replayed (by up to "
             + Wire::Codec::humanDuration(r.lateBy) + "); they were decided at the time reached. Give rotated logs oldest first. First:";
        for (const LineRef& l : r.firstLate)
            out += " " + where(r, l);
        out += "\n";
    }
    if (r.cancelled)
        out += "Cancelled: the figures below cover the lines read until then.\n";
    for (const RunResult& run : r.runs) {
        out += "\n";
        if (r.runs.size() > 1 || !run.name.empty())
            out += "Rules: " + Core::printable(run.name) + "\n";
        out += "Decisions:";
        for (std::size_t a = 0; a < Core::ActionCount; ++a)
            out += std::string(a ? ", " : " ") + Core::toString(Core::Action(a)) + " " + grouped(run.byAction[a]);
        out += "\n";
        if (!run.refusalsByRule.empty()) {
            out += "Refusals by rule:";
            bool first = true;
            for (const auto& [rule, n] : run.refusalsByRule) {
                out += std::string(first ? " " : ", ") + Core::printable(rule) + " " + grouped(n);
                first = false;
            }
            out += "\n";
        }
        out += "Clients that would have been refused: " + grouped(run.refused.size()) + " of " + grouped(run.clientsSeen) + "\n";
        if (run.untrackedRequests)
            out += "  (" + grouped(run.untrackedRequests) + " requests, " + grouped(run.untrackedRefusals)
                 + " refused, came from clients first seen after " + grouped(run.clientsSeen)
                 + " clients, the engine's capacity: in the totals above, not listed)\n";
        const std::size_t shown = std::min(run.refused.size(), TextClientsShown);
        for (std::size_t i = 0; i < shown; ++i) {
            const RefusedClient& c = run.refused[i];
            out += "  " + padded(Core::printable(c.address), 16) + " " + leftPadded(grouped(c.refusals), 9) + " refused of "
                 + grouped(c.requests) + " requests";
            if (!c.crawler.empty())
                out += "  [says it is " + Core::printable(c.crawler) + "]";
            out += "\n";
            out += "      user agent: " + (c.userAgent.empty() ? std::string("(none)") : Core::printable(c.userAgent)) + "\n";
            const Refusal& f = c.first;
            out += "      first refused: " + where(r, f.where) + " at " + Wire::Codec::formatTime(f.time, true) + " "
                 + Core::printable(f.method) + " " + Core::printable(f.path) + " -> " + Core::toString(f.action) + ": "
                 + Core::printable(f.why) + "\n";
        }
        if (run.refused.size() > shown)
            out += "  (" + grouped(run.refused.size() - shown) + " more clients: --json lists every one)\n";
        if (std::any_of(run.refused.begin(), run.refused.end(), [](const RefusedClient& c) { return !c.crawler.empty(); }))
            out += "  [says it is ...]: a known crawler by its user agent; " + std::string(CrawlerNote) + "\n";
    }
    return out;
}

Wire::Json jsonReport(const Result& r)
{
    using Wire::Json;
    Json files = Json::array();
    for (const FileSummary& f : r.files) {
        Json o = Json::object();
        o.set("path", f.path);
        o.set("format", f.lines == 0 && f.error.empty() ? Json(nullptr) : Json(toString(f.format)));
        o.set("gzip", f.gzip);
        o.set("lines", f.lines);
        o.set("requests", f.requests);
        o.set("not_parsed", f.bad);
        o.set("error", f.error.empty() ? Json(nullptr) : Json(f.error));
        files.push(std::move(o));
    }
    Json bad = Json::array();
    for (const BadLine& b : r.firstBad) {
        Json o = Json::object();
        o.set("file", r.files[b.where.file].path);
        o.set("line", b.where.line);
        o.set("why", b.why);
        bad.push(std::move(o));
    }
    Json late = Json::array();
    for (const LineRef& l : r.firstLate) {
        Json o = Json::object();
        o.set("file", r.files[l.file].path);
        o.set("line", l.line);
        late.push(std::move(o));
    }
    Json runs = Json::array();
    for (const RunResult& run : r.runs) {
        Json actions = Json::object();
        for (std::size_t a = 0; a < Core::ActionCount; ++a)
            actions.set(Core::toString(Core::Action(a)), run.byAction[a]);
        Json rules = Json::object();
        for (const auto& [rule, n] : run.refusalsByRule)
            rules.set(rule, n);
        Json clients = Json::array();
        for (const RefusedClient& c : run.refused) {
            const Refusal& f = c.first;
            Json first = Json::object();
            first.set("file", r.files[f.where.file].path);
            first.set("line", f.where.line);
            first.set("time", Wire::Codec::formatTime(f.time, true));
            first.set("method", f.method);
            first.set("path", f.path);
            first.set("action", Core::toString(f.action));
            first.set("reason", Core::toString(f.reason));
            first.set("rule", f.rule);
            first.set("count", f.count);
            first.set("limit", f.limit);
            first.set("window", Wire::Codec::seconds(f.windowMs));
            first.set("retry_after", Wire::Codec::seconds(f.retryAfterMs));
            first.set("why", f.why);
            Json o = Json::object();
            o.set("address", c.address);
            o.set("user_agent", c.userAgent);
            o.set("known_crawler", c.crawler.empty() ? Json(nullptr) : Json(c.crawler));
            o.set("requests", c.requests);
            o.set("refusals", c.refusals);
            o.set("first_refusal", std::move(first));
            clients.push(std::move(o));
        }
        Json o = Json::object();
        o.set("rules", run.name);
        o.set("requests", run.requests());
        o.set("decisions", std::move(actions));
        o.set("refusals_by_rule", std::move(rules));
        o.set("clients_seen", run.clientsSeen);
        o.set("untracked_requests", run.untrackedRequests);
        o.set("untracked_refusals", run.untrackedRefusals);
        o.set("refused_clients", std::move(clients));
        o.set("known_crawler_note", CrawlerNote);
        runs.push(std::move(o));
    }
    Json o = Json::object();
    o.set("files", std::move(files));
    o.set("lines", r.lines);
    o.set("requests", r.requests);
    o.set("first_time", r.firstTime ? Json(Wire::Codec::formatTime(*r.firstTime, true)) : Json(nullptr));
    o.set("last_time", r.lastTime ? Json(Wire::Codec::formatTime(*r.lastTime, true)) : Json(nullptr));
    o.set("not_parsed", r.badLines);
    o.set("first_not_parsed", std::move(bad));
    o.set("outside_range", r.outsideRange);
    o.set("out_of_order", r.late);
    o.set("first_out_of_order", std::move(late));
    o.set("cancelled", r.cancelled);
    o.set("runs", std::move(runs));
    return o;
}

std::string decisionsHeader()
{
    return "file,line,time,client,method,path,action,rule,remaining\r\n";
}

void appendDecisionRow(std::string& out, const DecisionEvent& e, const std::vector<std::string>& files)
{
    const Core::RequestFacts& f = *e.facts;
    const Core::Decision& d = *e.decision;
    Wire::Csv::appendField(out, e.where.file < files.size() ? files[e.where.file] : std::string());
    out += ',';
    out += std::to_string(e.where.line);
    out += ',';
    out += Wire::Codec::formatTime(e.time, true);
    out += ',';
    out += f.client.toString();
    out += ',';
    Wire::Csv::appendField(out, f.method);
    out += ',';
    std::string path(f.path);
    if (!f.query.empty()) {
        path += '?';
        path += f.query;
    }
    Wire::Csv::appendField(out, path);
    out += ',';
    out += Core::toString(d.action);
    out += ',';
    Wire::Csv::appendField(out, d.rule.view());
    out += ',';
    if (d.limit > 0)
        out += std::to_string(d.remaining);
    out += "\r\n";
}

} // namespace Floodgate::Replay
