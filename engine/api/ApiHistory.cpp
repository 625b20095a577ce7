// SPDX-License-Identifier: GPL-3.0-or-later
// /api/v1/events and /api/v1/audit: the refusals limiter.log holds and the audit trail.
#include "api/AdminApi.h"

#include "api/ApiSupport.h"
#include "wire/Codec.h"
#include "http/Explain.h"
#include "storage/Store.h"

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

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

// Both: ?since=ID&limit=N, oldest first.
std::optional<AdminResponse> AdminApi::history(const Call& call)
{
    const AdminRequest& r = call.request;
    const std::string& what = call.seg[2];
    const bool get = call.get;
    std::string why;
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

} // namespace Floodgate::Api
