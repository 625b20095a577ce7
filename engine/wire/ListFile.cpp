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
    static const std::set<std::string> KNOWN = {"list", "address", "reason", "source", "created_at", "created_by", "expires_at", "expires_in", "ttl"};
    for (std::size_t i = 0; i < records[0].fields.size(); ++i) {
        const std::string name = lower(trim(records[0].fields[i]));
        if (!KNOWN.count(name)) {
            out.fileError = "line 1: unknown column \"" + name + "\" (the header names: list, address, reason, expires_at or ttl, created_by)";
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
        row.entry.source = ListSource::Import;
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
        } else if (const std::string ttl = field("ttl"); !ttl.empty()) {
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
        std::string createdBy;
        for (const auto& [k, v] : e.asObject()) {
            if (k == "created_by" && v.isString())
                createdBy = v.asString();
            else if (k != "list" && k != "source" && k != "created_at" && k != "created_by" && k != "expires_in")
                body.set(k, v);
        }
        const auto in = Codec::entryFromJson(body, now, defaultTtlMs, &why);
        if (!in) {
            reject(why);
            continue;
        }
        ListedEntry row;
        row.kind = *kind;
        row.entry.range = in->range;
        row.entry.reason = in->reason;
        row.entry.expiresAt = in->expiresAt;
        row.entry.source = ListSource::Import;
        row.entry.createdBy = createdBy;
        if (const std::size_t earlier = seen.note(row.kind, row.entry.range, line)) {
            reject(in->range.toString() + " is on the " + toString(row.kind) + " already at entry " + std::to_string(earlier));
            continue;
        }
        out.rows.push_back(std::move(row));
    }
    return out;
}

} // namespace

std::optional<Format> formatForPath(std::string_view path)
{
    const std::string p = lower(path);
    if (p.size() >= 4 && p.compare(p.size() - 4, 4, ".csv") == 0)
        return Format::Csv;
    if (p.size() >= 5 && p.compare(p.size() - 5, 5, ".json") == 0)
        return Format::Json;
    return std::nullopt;
}

Parsed parse(std::string_view content, Format format, Millis now, Millis defaultTtlMs)
{
    return format == Format::Csv ? parseCsv(content, now, defaultTtlMs) : parseJson(content, now, defaultTtlMs);
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
