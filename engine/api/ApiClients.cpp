// SPDX-License-Identifier: GPL-3.0-or-later
// GET /api/v1/clients, /api/v1/clients/{address}, /api/v1/buckets: what the engine tracks now.
#include "api/AdminApi.h"

#include "api/ApiSupport.h"
#include "wire/Codec.h"
#include "core/Engine.h"

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

std::optional<AdminResponse> AdminApi::clients(const Call& call)
{
    const AdminRequest& r = call.request;
    const std::vector<std::string>& seg = call.seg;
    const Millis now = call.now;
    const bool get = call.get;
    std::string why;
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

std::optional<AdminResponse> AdminApi::buckets(const Call& call)
{
    const AdminRequest& r = call.request;
    const Millis now = call.now;
    const bool get = call.get;
    std::string why;
    if (!get)
        return methodNotAllowed("GET");
    std::int64_t top = 10;
    if (!queryNumber(r, "top", top, 100, why))
        return error(400, why);
    return json(200, Codec::toJson(m_engine.liveBuckets(std::size_t(top), now)));
}

} // namespace Floodgate::Api
