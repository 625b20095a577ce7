// SPDX-License-Identifier: GPL-3.0-or-later
// The admin API's front: the gate (Origin, Host, the bearer token), the
// answers that never wait (/healthz, /metrics), and the table that sends
// every /api/v1/ request to its resource's file (ApiClients, ApiLists,
// ApiConfig, ApiHistory).
#include "api/AdminApi.h"

#include "core/Hash.h"

#include "api/ApiSupport.h"
#include "core/Engine.h"
#include "http/Metrics.h"
#include "storage/Store.h"

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

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
        res.body += clusterMetrics(m_options.cluster, m_engine);
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

std::optional<AdminResponse> AdminApi::route(const AdminRequest& r, const Http::AdminReply& reply)
{
    const std::vector<std::string> seg = segments(r.path);
    if (seg.size() < 3 || seg[0] != "api" || seg[1] != "v1")
        return error(404, "not found: " + r.path + " (the API lives under /api/v1/)");
    // One row per resource under /api/v1/; `whole`: the resource itself
    // only, nothing below it.
    struct Route {
        std::string_view resource;
        bool whole;
        Handler handler;
    };
    static constexpr Route ROUTES[] = {
        {"clients", false, &AdminApi::clients},   {"buckets", true, &AdminApi::buckets}, {"lists", false, &AdminApi::lists},
        {"tiers", false, &AdminApi::tiers},       {"customers", false, &AdminApi::customers}, {"rules", true, &AdminApi::rules},
        {"events", true, &AdminApi::history},     {"audit", true, &AdminApi::history},   {"cluster", true, &AdminApi::cluster},
    };
    for (const Route& route : ROUTES)
        if (seg[2] == route.resource && (!route.whole || seg.size() == 3))
            return (this->*route.handler)(Call{r, reply, seg, m_clock.now(), r.method == "GET" || r.method == "HEAD"});
    return error(404, "not found: " + r.path);
}

} // namespace Floodgate::Api
