// SPDX-License-Identifier: GPL-3.0-or-later
// /api/v1/lists: both lists as a file, an import, one list, an entry added or removed.
#include "api/AdminApi.h"

#include "api/ApiSupport.h"
#include "wire/Codec.h"
#include "core/Engine.h"
#include "wire/ListFile.h"
#include "storage/Store.h"

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

std::optional<AdminResponse> AdminApi::lists(const Call& call)
{
    const AdminRequest& r = call.request;
    const Http::AdminReply& reply = call.reply;
    const std::vector<std::string>& seg = call.seg;
    const Millis now = call.now;
    const std::string& method = call.request.method;
    const bool get = call.get;
    std::string why;
    if (seg.size() == 3) {
        // Both lists as a file: ?format=csv|json (default json).
        if (!get)
            return methodNotAllowed("GET");
        const std::string fmt = queryValue(r.query, "format").value_or("json");
        if (fmt != "csv" && fmt != "json")
            return error(400, "format must be csv or json");
        std::vector<ListedEntry> all = m_store.entries();
        std::erase_if(all, [&](const ListedEntry& e) { return !e.entry.activeAt(now); });
        AdminResponse res;
        res.contentType = fmt == "csv" ? "text/csv; charset=utf-8" : "application/json";
        res.body = ListFile::format(all, fmt == "csv" ? ListFile::Format::Csv : ListFile::Format::Json, now);
        return res;
    }
    if (seg[3] == "import" && seg.size() == 4) {
        if (method != "POST")
            return methodNotAllowed("POST");
        // ?format=csv|json|txt, else the Content-Type (csv, json), else the
        // body itself (ListFile::formatOfContent).
        const std::string fmt = queryValue(r.query, "format").value_or("");
        const std::string type = r.header("Content-Type");
        ListFile::Format format;
        if (fmt == "csv" || (fmt.empty() && type.find("csv") != std::string::npos))
            format = ListFile::Format::Csv;
        else if (fmt == "json" || (fmt.empty() && type.find("json") != std::string::npos))
            format = ListFile::Format::Json;
        else if (fmt == "txt")
            format = ListFile::Format::Text;
        else if (fmt.empty())
            format = ListFile::formatOfContent(r.body);
        else
            return error(400, "format must be csv, json or txt");
        const ListFile::Parsed parsed = ListFile::parse(r.body, format, now, m_options.defaultListTtlMs);
        if (!parsed.ok()) {
            Json body = Json::object();
            body.set("error", parsed.fileError.empty() ? std::to_string(parsed.rejected.size()) + " line"
                                      + (parsed.rejected.size() == 1 ? "" : "s") + " rejected; nothing was imported"
                                                       : parsed.fileError);
            Json rejected = Json::array();
            for (const ListFile::Rejected& x : parsed.rejected) {
                Json o = Json::object();
                o.set("line", x.line);
                o.set("why", x.why);
                rejected.push(std::move(o));
            }
            body.set("rejected", std::move(rejected));
            return json(400, body);
        }
        const Storage::Actor actor{actorOf(r)};
        return afterCommit(reply, [&](auto done) { m_store.importEntries(parsed.rows, actor, done); });
    }
    const auto kind = listKindFromString(seg[3]);
    if (!kind)
        return error(400, "list: unknown list \"" + seg[3] + "\" (safelist or blocklist)");
    if (seg.size() == 4) {
        if (get) {
            Json entries = Json::array();
            for (const ListEntry& e : m_engine.lists().active(*kind, now))
                entries.push(Codec::toJson(e, *kind, now));
            Json body = Json::object();
            body.set("list", toString(*kind));
            body.set("count", entries.asArray().size());
            body.set("entries", std::move(entries));
            return json(200, body);
        }
        if (method != "POST")
            return methodNotAllowed("GET, POST");
        AdminResponse failure;
        const auto body = parseBody(r, failure);
        if (!body)
            return failure;
        const auto in = Codec::entryFromJson(*body, now, m_options.defaultListTtlMs, &why);
        if (!in)
            return error(400, why);
        ListEntry entry;
        entry.range = in->range;
        entry.reason = in->reason;
        entry.expiresAt = in->expiresAt;
        entry.createdAt = now;  // the TTL was counted from here
        entry.source = ListSource::Operator;
        const Storage::Actor actor{actorOf(r)};
        return afterCommit(reply, [&](auto done) { m_store.addEntry(*kind, entry, actor, done); });
    }
    // DELETE /api/v1/lists/{list}/{address}: the rest of the path is the
    // address, "/48" included.
    if (method != "DELETE")
        return methodNotAllowed("DELETE");
    const std::string prefix = "/api/v1/lists/" + seg[3] + "/";
    const auto text = r.path.size() > prefix.size() ? percentDecode(std::string_view(r.path).substr(prefix.size())) : std::nullopt;
    const auto range = text ? Cidr::parse(*text, &why) : std::nullopt;
    if (!range)
        return error(400, "address: " + (text ? why : std::string("missing or badly percent-encoded")));
    const Storage::Actor actor{actorOf(r)};
    return afterCommit(reply, [&](auto done) { m_store.removeEntry(*kind, *range, actor, done); });
}

} // namespace Floodgate::Api
