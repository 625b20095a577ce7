// SPDX-License-Identifier: GPL-3.0-or-later
#include "wire/ListFile.h"

#include "wire/Codec.h"
#include "wire/Csv.h"
#include "wire/Json.h"

#include <map>
#include <set>

namespace Floodgate::Wire::ListFile {

using namespace Core;

namespace {

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
    return out;
}

std::string trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return std::string(s);
}

const std::set<std::string>& knownColumns()
{
    static const std::set<std::string> KNOWN = {"list", "address", "reason", "source", "created_at", "created_by", "expires_at", "expires_in", "ttl"};
    return KNOWN;
}

// The source a file states: operator and import are kept; automatic (an
// escalation ban) comes back as import, since the file carries the ban, not
// the escalation history the engine keeps with it; empty is import.
std::optional<ListSource> importedSource(std::string_view text, std::string* why)
{
    if (text.empty())
        return ListSource::Import;
    const auto source = listSourceFromString(lower(text));
    if (!source) {
        *why = "source \"" + std::string(text) + "\" must be operator, import or automatic";
        return std::nullopt;
    }
    return *source == ListSource::Automatic ? ListSource::Import : *source;
}

// created_at as the file states it (empty: the import's time).
bool readCreatedAt(std::string_view text, Millis& out, std::string* why)
{
    if (text.empty())
        return true;
    const auto t = Codec::parseTime(text, why);
    if (!t) {
        *why = "created_at \"" + std::string(text) + "\" " + *why;
        return false;
    }
    out = *t;
    return true;
}

struct Seen {
    std::map<std::pair<int, Cidr>, std::size_t> lines;
    // Returns the earlier line holding the same list and range, or 0.
    std::size_t note(ListKind kind, const Cidr& range, std::size_t line)
    {
        auto [it, inserted] = lines.try_emplace({int(kind), range}, line);
        return inserted ? 0 : it->second;
    }
};

Parsed parseCsv(std::string_view content, Millis now, Millis defaultTtlMs)
{
    Parsed out;
    std::vector<Csv::Record> records;
    if (!Csv::read(content, records, out.fileError))
        return out;
    if (records.empty()) {
        out.fileError = "the file is empty: it needs a header line such as \"list,address,reason,expires_at\"";
        return out;
    }
    std::map<std::string, std::size_t> column;
    const std::set<std::string>& KNOWN = knownColumns();
    for (std::size_t i = 0; i < records[0].fields.size(); ++i) {
        const std::string name = lower(trim(records[0].fields[i]));
        if (!KNOWN.count(name)) {
            out.fileError = "line 1: unknown column \"" + name + "\" (the header names: list, address, reason, expires_at or ttl, source, created_at, created_by)";
            return out;
        }
        if (!column.emplace(name, i).second) {
            out.fileError = "line 1: column \"" + name + "\" appears twice";
            return out;
        }
    }
    if (!column.count("list") || !column.count("address")) {
        out.fileError = "line 1: the header must name the columns \"list\" and \"address\"";
        return out;
    }
    if (column.count("ttl") && column.count("expires_at")) {
        out.fileError = "line 1: give \"expires_at\" or \"ttl\", not both";
        return out;
    }
    Seen seen;
    for (std::size_t r = 1; r < records.size(); ++r) {
        const Csv::Record& rec = records[r];
        auto field = [&](const char* name) -> std::string {
            auto it = column.find(name);
            return it == column.end() || it->second >= rec.fields.size() ? std::string() : trim(rec.fields[it->second]);
        };
        auto reject = [&](std::string why) { out.rejected.push_back({rec.line, std::move(why)}); };
        if (rec.fields.size() != records[0].fields.size()) {
            reject("has " + std::to_string(rec.fields.size()) + " fields, the header has " + std::to_string(records[0].fields.size()));
            continue;
        }
        const auto kind = listKindFromString(lower(field("list")));
        if (!kind) {
            reject("list \"" + field("list") + "\" must be safelist or blocklist");
            continue;
        }
        std::string why;
        const auto range = Cidr::parse(field("address"), &why);
        if (!range) {
            reject("address \"" + field("address") + "\": " + why);
            continue;
        }
        ListedEntry row;
        row.kind = *kind;
        row.entry.range = *range;
        row.entry.reason = Csv::restoreField(field("reason"));
        const auto source = importedSource(field("source"), &why);
        if (!source) {
            reject(why);
            continue;
        }
        row.entry.source = *source;
        if (!readCreatedAt(field("created_at"), row.entry.createdAt, &why)) {
            reject(why);
            continue;
        }
        row.entry.createdBy = Csv::restoreField(field("created_by"));
        if (column.count("expires_at")) {
            const std::string at = field("expires_at");
            if (at.empty()) {
                row.entry.expiresAt = NeverExpires;
            } else if (const auto t = Codec::parseTime(at, &why)) {
                row.entry.expiresAt = *t;
            } else {
                reject("expires_at \"" + at + "\" " + why);
                continue;
            }
        } else if (const std::string ttl = field("ttl"); lower(ttl) == "permanent") {
            row.entry.expiresAt = NeverExpires;  // as --ttl permanent
        } else if (!ttl.empty()) {
            const auto d = Codec::parseDuration(Json(ttl), &why);
            if (!d) {
                reject("ttl \"" + ttl + "\" " + why);
                continue;
            }
            row.entry.expiresAt = now + *d;
        } else {
            row.entry.expiresAt = now + defaultTtlMs;
        }
        if (row.entry.expiresAt <= now) {
            reject(range->toString() + " expired already (" + Codec::formatTime(row.entry.expiresAt) + ")");
            continue;
        }
        if (const std::size_t earlier = seen.note(row.kind, row.entry.range, rec.line)) {
            reject(range->toString() + " is on the " + toString(row.kind) + " already at line " + std::to_string(earlier));
            continue;
        }
        out.rows.push_back(std::move(row));
    }
    return out;
}

Parsed parseJson(std::string_view content, Millis now, Millis defaultTtlMs)
{
    Parsed out;
    std::string why;
    Json::Limits limits;
    limits.maxValues = Tuning::jsonMaxValuesInAFile;
    const auto doc = Json::parse(content, &why, limits);
    if (!doc) {
        out.fileError = why;
        return out;
    }
    const Json* entries = doc->isArray() ? &*doc : doc->find("entries");
    if (!entries || !entries->isArray()) {
        out.fileError = "the JSON must be an array of entries or an object with \"entries\"";
        return out;
    }
    Seen seen;
    for (std::size_t i = 0; i < entries->asArray().size(); ++i) {
        const Json& e = entries->asArray()[i];
        const std::size_t line = i + 1;
        auto reject = [&](std::string w) { out.rejected.push_back({line, std::move(w)}); };
        if (!e.isObject()) {
            reject("must be an object");
            continue;
        }
        const Json* list = e.find("list");
        const auto kind = list && list->isString() ? listKindFromString(list->asString()) : std::nullopt;
        if (!kind) {
            reject("list must be \"safelist\" or \"blocklist\"");
            continue;
        }
        // The export's read-only fields are fine to send back; the rest is
        // what POST /api/v1/lists accepts.
        Json body = Json::object();
        std::string createdBy, source, createdAt;
        for (const auto& [k, v] : e.asObject()) {
            if (k == "created_by" && v.isString())
                createdBy = v.asString();
            else if (k == "source" && v.isString())
                source = v.asString();
            else if (k == "created_at" && v.isString())
                createdAt = v.asString();
            else if (k == "ttl" && v.isString() && lower(v.asString()) == "permanent")
                body.set(k, Json());  // as --ttl permanent; null says the same
            else if (k != "list" && k != "source" && k != "created_at" && k != "created_by" && k != "expires_in")
                body.set(k, v);
        }
        const auto in = Codec::entryFromJson(body, now, defaultTtlMs, &why);
        if (!in) {
            reject(why);
            continue;
        }
        const auto from = importedSource(source, &why);
        if (!from) {
            reject(why);
            continue;
        }
        Millis created = 0;
        if (!readCreatedAt(createdAt, created, &why)) {
            reject(why);
            continue;
        }
        ListedEntry row;
        row.kind = *kind;
        row.entry.range = in->range;
        row.entry.reason = in->reason;
        row.entry.expiresAt = in->expiresAt;
        row.entry.source = *from;
        row.entry.createdAt = created;
        row.entry.createdBy = createdBy;
        if (const std::size_t earlier = seen.note(row.kind, row.entry.range, line)) {
            reject(in->range.toString() + " is on the " + toString(row.kind) + " already at entry " + std::to_string(earlier));
            continue;
        }
        out.rows.push_back(std::move(row));
    }
    return out;
}

// One address or range a line; '#' to the end of a line is a comment.
Parsed parseText(std::string_view content, Millis now, Millis defaultTtlMs)
{
    Parsed out;
    std::set<std::pair<int, Cidr>> seen;
    std::size_t line = 0;
    while (!content.empty()) {
        ++line;
        const std::size_t end = content.find('\n');
        std::string_view text = content.substr(0, end);
        content.remove_prefix(end == std::string_view::npos ? content.size() : end + 1);
        if (line == 1 && text.substr(0, 3) == "\xEF\xBB\xBF")
            text.remove_prefix(3);  // a byte order mark from an editor
        text = text.substr(0, text.find('#'));
        while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
            text.remove_suffix(1);
        while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
            text.remove_prefix(1);
        if (text.empty())
            continue;
        std::string why;
        const auto range = Cidr::parse(text, &why);
        if (!range) {
            out.rejected.push_back({line, "address \"" + std::string(text) + "\": " + why});
            continue;
        }
        if (!seen.insert({int(ListKind::Blocklist), *range}).second)
            continue;  // blocklists repeat themselves: once is enough
        ListedEntry row;
        row.kind = ListKind::Blocklist;
        row.entry.range = *range;
        row.entry.reason = "imported";
        row.entry.source = ListSource::Import;
        row.entry.expiresAt = now + defaultTtlMs;
        out.rows.push_back(std::move(row));
    }
    if (out.rows.empty() && out.rejected.empty())
        out.fileError = "the file has no addresses (one address or CIDR range a line, '#' for comments)";
    return out;
}

} // namespace

Format formatOfContent(std::string_view content)
{
    if (content.substr(0, 3) == "\xEF\xBB\xBF")
        content.remove_prefix(3);
    const std::size_t start = content.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos)
        return Format::Csv;  // empty: the CSV reader says what a file needs
    if (content[start] == '[' || content[start] == '{')
        return Format::Json;
    while (!content.empty()) {
        const std::size_t end = content.find('\n');
        std::string_view line = content.substr(0, end);
        content.remove_prefix(end == std::string_view::npos ? content.size() : end + 1);
        const std::string first = trim(line.substr(0, line.find('#')));
        if (first.empty() || first == "\r")
            continue;
        if (first.find(',') != std::string::npos || knownColumns().count(lower(trim(std::string_view(first).substr(0, first.find('\r'))))))
            return Format::Csv;
        return Format::Text;
    }
    return Format::Text;  // comments only
}

std::optional<Format> formatForPath(std::string_view path)
{
    const std::string p = lower(path);
    if (p.size() >= 4 && p.compare(p.size() - 4, 4, ".csv") == 0)
        return Format::Csv;
    if (p.size() >= 5 && p.compare(p.size() - 5, 5, ".json") == 0)
        return Format::Json;
    if (p.size() >= 4 && p.compare(p.size() - 4, 4, ".txt") == 0)
        return Format::Text;
    return std::nullopt;
}

Parsed parse(std::string_view content, Format format, Millis now, Millis defaultTtlMs)
{
    if (format == Format::Json)
        return parseJson(content, now, defaultTtlMs);
    // A plain address file with a .csv name: its first line is no header.
    if (format == Format::Text || formatOfContent(content) == Format::Text)
        return parseText(content, now, defaultTtlMs);
    return parseCsv(content, now, defaultTtlMs);
}

std::string format(const std::vector<ListedEntry>& entries, Format format, Millis now)
{
    if (format == Format::Json) {
        Json doc = Json::object();
        doc.set("exported_at", Codec::formatTime(now));
        Json list = Json::array();
        for (const ListedEntry& e : entries)
            list.push(Codec::toJson(e.entry, e.kind, now));
        doc.set("entries", std::move(list));
        return doc.dump() + "\n";
    }
    std::string out = std::string(CsvHeader) + "\r\n";
    for (const ListedEntry& e : entries) {
        out += toString(e.kind);
        out += ',';
        out += e.entry.range.toString();
        out += ',';
        Csv::appendField(out, e.entry.reason);
        out += ',';
        out += toString(e.entry.source);
        out += ',';
        out += Codec::formatTime(e.entry.createdAt);
        out += ',';
        Csv::appendField(out, e.entry.createdBy);
        out += ',';
        if (e.entry.expiresAt != NeverExpires)
            out += Codec::formatTime(e.entry.expiresAt);
        out += "\r\n";
    }
    return out;
}


} // namespace Floodgate::Wire::ListFile
