// SPDX-License-Identifier: MIT
#include "AdminApi.h"

#include "Codec.h"
#include "Engine.h"
#include "Explain.h"
#include "ListFile.h"
#include "Metrics.h"
#include "Store.h"
#include "Utf8.h"

#include <algorithm>
#include <charconv>

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

namespace {


AdminResponse json(int status, const Json& body)
{
    AdminResponse r;
    r.status = status;
    r.contentType = "application/json";
    r.body = body.dump() + "\n";
    return r;
}

AdminResponse error(int status, std::string message)
{
    Json body = Json::object();
    body.set("error", std::move(message));
    return json(status, body);
}

AdminResponse methodNotAllowed(const char* allow)
{
    AdminResponse r = error(405, std::string("method not allowed here; use ") + allow);
    r.headers.emplace_back("Allow", allow);
    return r;
}

AdminResponse fromOutcome(const Storage::Outcome& o)
{
    if (!o.ok())
        return error(o.status, o.error);
    if (o.status == 204) {
        AdminResponse r;
        r.status = 204;
        return r;
    }
    return json(o.status, o.value);
}

// A write: submitted to the store; its answer goes out after COMMIT (or
// with its failure) from the writer thread. Nothing waits for it here.
template <class Submit>
std::optional<AdminResponse> afterCommit(const Http::AdminReply& reply, Submit&& submit)
{
    submit([reply](const Storage::Outcome& o) { reply(fromOutcome(o)); });
    return std::nullopt;
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

std::optional<std::string> percentDecode(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size() || hexValue(s[i + 1]) < 0 || hexValue(s[i + 2]) < 0)
            return std::nullopt;
        out += char(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
        i += 2;
    }
    return out;
}

// A query parameter's decoded value; nullopt when absent or badly encoded.
std::optional<std::string> queryValue(std::string_view query, std::string_view name)
{
    if (const auto raw = queryParameter(query, name))
        return percentDecode(*raw);
    return std::nullopt;
}

// A whole number query parameter from 0 to `max`; error text naming it when
// it is anything else (a sign, "-0", a fraction, an exponent, more than
// `max`: nothing is silently capped).
bool queryNumber(const AdminRequest& r, std::string_view name, std::int64_t& out, std::int64_t max, std::string& why)
{
    const auto v = queryValue(r.query, name);
    if (!v)
        return true;
    std::int64_t n = 0;
    const bool digits = !v->empty() && std::all_of(v->begin(), v->end(), [](char c) { return c >= '0' && c <= '9'; });
    const auto res = digits ? std::from_chars(v->data(), v->data() + v->size(), n) : std::from_chars_result{v->data(), std::errc::invalid_argument};
    if (res.ec != std::errc() || n > max) {
        why = std::string(name) + " must be a whole number " + (max == INT64_MAX ? std::string(">= 0") : "from 0 to " + std::to_string(max));
        return false;
    }
    out = n;
    return true;
}

std::vector<std::string> segments(std::string_view path)
{
    std::vector<std::string> out;
    while (!path.empty()) {
        if (path.front() == '/') {
            path.remove_prefix(1);
            continue;
        }
        const auto slash = path.find('/');
        out.emplace_back(path.substr(0, slash));
        if (slash == std::string_view::npos)
            break;
        path.remove_prefix(slash);
    }
    return out;
}

bool constantTimeEquals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

// Names in paths (tiers, customers): printable UTF-8, no slashes, not too
// long. A name that is no UTF-8 ("%ff") could be stored but never shown or
// named again as it is: JSON writes it with U+FFFD.
bool validName(std::string_view s, std::size_t max)
{
    if (s.empty() || s.size() > max)
        return false;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t length = utf8SequenceLength(s.substr(i));
        if (length == 0 || (length == 1 && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f || s[i] == '/')))
            return false;
        i += length;
    }
    return true;
}

std::optional<Json> parseBody(const AdminRequest& r, AdminResponse& failure)
{
    std::string why;
    auto body = Json::parse(r.body, &why);
    if (!body)
        failure = error(400, "body: " + why);
    return body;
}

std::string actorOf(const AdminRequest& r)
{
    return "api:" + r.peer.toString();
}

} // namespace

Json toJson(const Http::Event& e)
{
    const Http::LogRecord& r = e.record;
    Json j = Json::object();
    j.set("id", e.id);
    j.set("time", Codec::formatTime(r.time, true));
    j.set("action", toString(r.action));
    j.set("would_be", toString(r.wouldBe));
    j.set("reason", toString(r.reason));
    j.set("rule", std::string(r.rule.view()));
    j.set("ip", r.ip.toString());
    j.set("peer", r.peer.toString());
    j.set("forwarded_for", r.forwardedFor[0] ? Json(std::string(r.forwardedFor)) : Json());
    j.set("method", std::string(r.method));
    j.set("path", std::string(r.path));
    j.set("query", std::string(r.query));
    j.set("user_agent", std::string(r.userAgent));
    j.set("customer", r.customer[0] ? Json(std::string(r.customer)) : Json());
    j.set("attempts", r.attempts);
    j.set("limit", r.limit);
    j.set("window", Codec::seconds(r.windowMs));
    j.set("window_start", r.windowStart ? Json(Codec::formatTime(r.windowStart, true)) : Json());
    j.set("retry_after", r.retryAfterMs > 0 ? Json(Core::retryAfterSeconds(r.retryAfterMs)) : Json());
    j.set("cookies", r.cookies);
    j.set("why", Http::explain(r));
    return j;
}

AdminApi::AdminApi(Engine& engine, Storage::Store& store, Http::LimiterLog* log, Http::ListenerMetrics* metrics, const Clock& clock,
                   ApiOptions options)
    : m_engine(engine)
    , m_store(store)
    , m_log(log)
    , m_metrics(metrics)
    , m_clock(clock)
    , m_options(std::move(options))
{
}

std::optional<AdminResponse> AdminApi::answerAtOnce(const AdminRequest& r)
{
    // Browsers. The API is for scripts, curl and the console, never for a
    // web page: a page the operator has open must not be able to change the
    // lists through it (cross-site request forgery), nor read it by pointing
    // a name of its own at 127.0.0.1 (DNS rebinding). A browser marks its
    // requests with Origin; a rebound name shows in Host.
    if (!r.header("Origin").empty())
        return error(403, "origin: the admin API does not answer requests made by web pages");
    if (!m_options.beyondLoopback) {
        std::string host = r.header("Host");
        if (!host.empty() && host.front() == '[')
            host = host.substr(1, host.find(']') == std::string::npos ? std::string::npos : host.find(']') - 1);
        else if (const auto colon = host.rfind(':'); colon != std::string::npos && host.find(':') == colon)
            host = host.substr(0, colon);
        if (!host.empty() && host != "localhost" && !IpAddress::parse(host))
            return error(403, "host: on loopback the admin API answers only to an address or localhost, not \"" + host + "\"");
    }
    // The token, on every address: the protected application usually runs
    // on this host, and a request forgery in it reaches loopback. Health
    // checks and metrics tell nothing about visitors and stay open there.
    const bool open = !m_options.beyondLoopback && (r.path == "/healthz" || r.path == "/metrics");
    if (!open && !authorized(r)) {
        AdminResponse res = error(401, "authorization: the admin API wants \"Authorization: Bearer TOKEN\" "
                                       "(`floodgate token` prints the token; the console shows it in its settings)");
        res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"floodgate\"");
        return res;
    }
    const bool get = r.method == "GET" || r.method == "HEAD";
    if (r.path == "/healthz") {
        if (!get)
            return methodNotAllowed("GET");
        AdminResponse ok;
        ok.body = "ok";
        return ok;
    }
    if (r.path == "/metrics") {
        if (!get)
            return methodNotAllowed("GET");
        // Counters and snapshots only: nothing here waits for the database.
        AdminResponse res;
        res.contentType = "text/plain; version=0.0.4; charset=utf-8";
        res.body = m_metrics ? m_metrics->render(m_engine, m_log, m_clock.now()) : std::string();
        res.body += "# HELP floodgate_storage_autoban_dropped_total Escalation bans not written to the database (queue full).\n"
                    "# TYPE floodgate_storage_autoban_dropped_total counter\n"
                    "floodgate_storage_autoban_dropped_total "
            + std::to_string(m_store.droppedAutoBans())
            + "\n# HELP floodgate_storage_reloads_total Changes by other processes picked up from the database.\n"
              "# TYPE floodgate_storage_reloads_total counter\n"
              "floodgate_storage_reloads_total "
            + std::to_string(m_store.reloads()) + "\n";
        return res;
    }
    return std::nullopt;
}

void AdminApi::handle(const AdminRequest& r, Http::AdminReply reply)
{
    if (auto now = answerAtOnce(r)) {
        reply(std::move(*now));
        return;
    }
    std::optional<AdminResponse> res;
    try {
        res = route(r, reply);
    } catch (const std::exception& e) {
        res = error(500, std::string("internal: ") + e.what());
    }
    if (res)
        reply(std::move(*res));
}

Http::AdminHandlers AdminApi::handlers()
{
    return {[this](const AdminRequest& r) { return answerAtOnce(r); },
            [this](const AdminRequest& r, Http::AdminReply reply) { handle(r, std::move(reply)); }};
}

bool AdminApi::authorized(const AdminRequest& r) const
{
    const std::string auth = r.header("Authorization");
    constexpr std::string_view BEARER = "Bearer ";
    // The scheme is case-insensitive (RFC 9110 11.1); the token is compared
    // in constant time so its bytes cannot be found one by one by timing.
    return auth.size() > BEARER.size() && Core::equalsIgnoreCase(std::string_view(auth).substr(0, BEARER.size()), BEARER)
        && constantTimeEquals(std::string_view(auth).substr(BEARER.size()), m_options.token);
}

template <class T>
std::optional<AdminResponse> AdminApi::namedCollection(const AdminRequest& r, const Http::AdminReply& reply, const std::vector<std::string>& seg, const Collection& c,
                                        const std::vector<T>& items, const std::function<std::string(const T&)>& keyOf,
                                        const std::function<Json(const T&)>& show,
                                        std::optional<T> (*decode)(const Json&, std::string_view, std::string*),
                                        const std::function<void(T, Storage::Actor, Storage::Store::Done)>& put,
                                        const std::function<void(std::string, Storage::Actor, Storage::Store::Done)>& remove)
{
    const bool get = r.method == "GET" || r.method == "HEAD";
    if (seg.size() == 3) {
        if (!get)
            return methodNotAllowed("GET");
        Json list = Json::array();
        for (const T& item : items)
            list.push(show(item));
        Json body = Json::object();
        body.set(c.plural, std::move(list));
        return json(200, body);
    }
    const auto key = percentDecode(seg[3]);
    if (seg.size() != 4 || !key || !validName(*key, c.maxLength))
        return error(400, std::string(c.field) + ": a " + c.singular + " " + c.field + " is 1-" + std::to_string(c.maxLength)
                              + " bytes of printable UTF-8 without '/'");
    const Storage::Actor actor{actorOf(r)};
    if (r.method == "PUT") {
        AdminResponse failure;
        const auto body = parseBody(r, failure);
        if (!body)
            return failure;
        std::string why;
        auto item = decode(*body, *key, &why);
        if (!item)
            return error(400, why);
        return afterCommit(reply, [&](auto done) { put(std::move(*item), actor, done); });
    }
    if (r.method == "DELETE")
        return afterCommit(reply, [&](auto done) { remove(*key, actor, done); });
    if (!get)
        return methodNotAllowed("GET, PUT, DELETE");
    for (const T& item : items)
        if (keyOf(item) == *key)
            return json(200, show(item));
    return error(404, "there is no " + std::string(c.singular) + " \"" + *key + "\"");
}

std::optional<AdminResponse> AdminApi::route(const AdminRequest& r, const Http::AdminReply& reply)
{
    const Millis now = m_clock.now();
    const std::string& method = r.method;
    const bool get = method == "GET" || method == "HEAD";

    const std::vector<std::string> seg = segments(r.path);
    if (seg.size() < 3 || seg[0] != "api" || seg[1] != "v1")
        return error(404, "not found: " + r.path + " (the API lives under /api/v1/)");
    const std::string& what = seg[2];
    std::string why;

    // ---- clients and buckets ----
    if (what == "clients") {
        if (!get)
            return methodNotAllowed("GET");
        if (seg.size() == 3) {
            std::int64_t limit = 50;
            if (!queryNumber(r, "limit", limit, std::int64_t(Tuning::maxTopClients), why))
                return error(400, why);
            Json body = Json::object();
            body.set("time", Codec::formatTime(now, true));
            body.set("tracked", m_engine.counters(now).trackedKeys);
            Json list = Json::array();
            for (const ClientSummary& c : m_engine.topClients(std::size_t(limit), now))
                list.push(Codec::toJson(c, now));
            body.set("clients", std::move(list));
            return json(200, body);
        }
        const auto text = percentDecode(r.path.substr(r.path.find("/clients/") + 9));
        const auto address = text ? IpAddress::parse(*text, &why) : std::nullopt;
        if (!address)
            return error(400, "address: " + (text ? why : std::string("bad percent-encoding")));
        const auto detail = m_engine.client(*address, now);
        if (!detail)
            return error(404, address->toString() + " is not tracked and on no list");
        return json(200, Codec::toJson(*detail, now));
    }
    if (what == "buckets" && seg.size() == 3) {
        if (!get)
            return methodNotAllowed("GET");
        std::int64_t top = 10;
        if (!queryNumber(r, "top", top, 100, why))
            return error(400, why);
        return json(200, Codec::toJson(m_engine.liveBuckets(std::size_t(top), now)));
    }

    // ---- lists ----
    if (what == "lists") {
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
            std::string fmt = queryValue(r.query, "format").value_or("");
            if (fmt.empty())
                fmt = r.header("Content-Type").find("csv") != std::string::npos ? "csv" : "json";
            if (fmt != "csv" && fmt != "json")
                return error(400, "format must be csv or json");
            const ListFile::Parsed parsed =
                ListFile::parse(r.body, fmt == "csv" ? ListFile::Format::Csv : ListFile::Format::Json, now, m_options.defaultListTtlMs);
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
                auto add = [&](const AddressList& list) {
                    for (const ListEntry& e : list.entries())
                        if (e.activeAt(now))
                            entries.push(Codec::toJson(e, *kind, now));
                };
                add(*m_engine.list(*kind));
                if (*kind == ListKind::Blocklist)
                    add(*m_engine.automaticBans());
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

    // ---- tiers and customers: a collection of named things ----
    if (what == "tiers") {
        const auto tiers = m_engine.config()->tiers;
        return namedCollection<Tier>(
            r, reply, seg, {"tiers", "tier", "name", 40}, tiers, [](const Tier& t) { return t.name; },
            [](const Tier& t) { return Codec::toJson(t); }, Codec::tierFromJson,
            [this](Tier t, Storage::Actor a, Storage::Store::Done d) { m_store.putTier(std::move(t), std::move(a), std::move(d)); },
            [this](std::string n, Storage::Actor a, Storage::Store::Done d) { m_store.deleteTier(std::move(n), std::move(a), std::move(d)); });
    }
    if (what == "customers") {
        const auto customers = m_engine.config()->customers;
        auto withUsage = [&](const Customer& c) {
            Json j = Codec::toJson(c);
            Json usage = Json::array();
            if (const auto levels = m_engine.customerUsage(c.id, now)) {
                for (const LevelUsage& u : *levels) {
                    Json l = Json::object();
                    l.set("name", u.name);
                    l.set("limit", u.limit);
                    l.set("period", Codec::seconds(u.periodMs));
                    l.set("used", u.used);
                    l.set("remaining", u.remaining);
                    l.set("reset", Core::secondsRoundedUp(u.resetMs));
                    usage.push(std::move(l));
                }
            }
            j.set("usage", std::move(usage));
            return j;
        };
        return namedCollection<Customer>(
            r, reply, seg, {"customers", "customer", "id", 100}, customers, [](const Customer& c) { return c.id; }, withUsage,
            Codec::customerFromJson,
            [this](Customer c, Storage::Actor a, Storage::Store::Done d) { m_store.putCustomer(std::move(c), std::move(a), std::move(d)); },
            [this](std::string id, Storage::Actor a, Storage::Store::Done d) { m_store.deleteCustomer(std::move(id), std::move(a), std::move(d)); });
    }

    // ---- rules ----
    if (what == "rules" && seg.size() == 3) {
        if (get)
            return json(200, Codec::rulesToJson(m_store.config()));
        if (method != "PUT")
            return methodNotAllowed("GET, PUT");
        AdminResponse failure;
        const auto body = parseBody(r, failure);
        if (!body)
            return failure;
        // The body is checked first against the rules in force (a clear
        // 400 without queueing, no database read), then applied to the
        // rules as committed, inside the writer.
        EngineConfig check = *m_engine.config();
        if (!Codec::rulesFromJson(*body, check, &why))
            return error(400, why);
        const Storage::Actor actor{actorOf(r)};
        return afterCommit(reply, [&](auto done) {
            m_store.updateRules(
                [doc = *body](EngineConfig& c) -> std::optional<std::string> {
                    std::string bad;
                    if (!Codec::rulesFromJson(doc, c, &bad))
                        return bad;
                    return std::nullopt;
                },
                actor, done);
        });
    }

    // ---- events and the audit trail ----
    if ((what == "events" || what == "audit") && seg.size() == 3) {
        if (!get)
            return methodNotAllowed("GET");
        std::int64_t since = -1, limit = 100;
        if (!queryNumber(r, "since", since, INT64_MAX, why) || !queryNumber(r, "limit", limit, std::int64_t(Tuning::maxEventsKept), why))
            return error(400, why);
        Json body = Json::object();
        Json list = Json::array();
        if (what == "events") {
            if (m_log)
                for (const Http::Event& e : m_log->events(since < 0 ? 0 : std::uint64_t(since), std::size_t(limit)))
                    list.push(toJson(e));
            body.set("events", std::move(list));
            body.set("last_id", m_log ? m_log->lastEventId() : 0);
        } else {
            for (const Storage::AuditRow& a : m_store.audit(since, std::size_t(limit))) {
                Json o = Json::object();
                o.set("id", a.id);
                o.set("at", Codec::formatTime(a.at, true));
                o.set("actor", a.actor);
                o.set("action", a.action);
                o.set("subject", a.subject);
                o.set("before", a.before.empty() ? Json() : Json::parse(a.before).value_or(Json(a.before)));
                o.set("after", a.after.empty() ? Json() : Json::parse(a.after).value_or(Json(a.after)));
                list.push(std::move(o));
            }
            body.set("audit", std::move(list));
        }
        return json(200, body);
    }
    return error(404, "not found: " + r.path);
}

} // namespace Floodgate::Api
