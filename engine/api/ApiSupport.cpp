// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/ApiSupport.h"

#include "storage/Store.h"
#include "core/Target.h"
#include "core/Utf8.h"

#include <algorithm>
#include <charconv>

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

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

int httpStatus(Storage::Result result)
{
    switch (result) {
    case Storage::Result::Updated: return 200;
    case Storage::Result::Created: return 201;
    case Storage::Result::Removed: return 204;
    case Storage::Result::Invalid: return 400;
    case Storage::Result::NotFound: return 404;
    case Storage::Result::Conflict: return 409;
    case Storage::Result::Unavailable: return 503;
    case Storage::Result::Failed: return 500;
    }
    return 500;
}

AdminResponse fromOutcome(const Storage::Outcome& o)
{
    if (!o.ok())
        return error(httpStatus(o.result), o.error);
    if (o.result == Storage::Result::Removed) {
        AdminResponse r;
        r.status = 204;
        return r;
    }
    return json(httpStatus(o.result), o.value);
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

// Names in paths (tiers, customers): printable UTF-8, no slashes, not too
// long. A name that is no UTF-8 ("%ff") could be stored but never shown or
// named again as it is: JSON writes it with U+FFFD.
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

} // namespace Floodgate::Api
