// SPDX-License-Identifier: GPL-3.0-or-later
// The admin API as plain functions from request to response: /healthz,
// /metrics, clients, buckets, lists, tiers, customers, rules, events and the
// audit trail. Writes go through the store and answer only after COMMIT,
// without anyone waiting for it; reads come from the engine's snapshots. The
// transport (Http::AdminServer, Beast) stays out of here.
#pragma once

#include "http/AdminServer.h"
#include "wire/Json.h"
#include "http/LimiterLog.h"
#include "core/Time.h"
#include "core/Tuning.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Core {
class Engine;
}
namespace Floodgate::Storage {
class Store;
struct Actor;
struct Outcome;
}
namespace Floodgate::Http {
class ListenerMetrics;
}

namespace Floodgate::Cluster {
class ClusterSync;
}

namespace Floodgate::Api {

struct ApiOptions {
    // Every /api/v1/... request wants "Authorization: Bearer TOKEN", on
    // loopback too (a server-side request forgery in the protected
    // application comes from loopback). /healthz and /metrics answer without
    // it on loopback; bound beyond loopback they want it as well.
    bool beyondLoopback = false;
    std::string token;
    Core::Millis defaultListTtlMs = Core::Tuning::defaultListTtlMs;
    // The node's link to its cluster (--redis); null on a single node.
    const Cluster::ClusterSync* cluster = nullptr;
};

class AdminApi {
public:
    AdminApi(Core::Engine& engine, Storage::Store& store, Http::LimiterLog* log, Http::ListenerMetrics* metrics,
             const Core::Clock& clock, ApiOptions options);

    // What needs no waiting, on the admin server's I/O thread: refusals
    // (Origin, Host, the token), /healthz and /metrics. nullopt: the
    // request goes to handle().
    std::optional<Http::AdminResponse> answerAtOnce(const Http::AdminRequest& request);
    // Any request. Reads reply before returning; a write replies after its
    // COMMIT, from the store's writer thread: nothing here waits for it.
    void handle(const Http::AdminRequest& request, Http::AdminReply reply);
    // Both, for Http::AdminServer.
    Http::AdminHandlers handlers();

private:
    // nullopt: a write was submitted and replies later.
    std::optional<Http::AdminResponse> route(const Http::AdminRequest& request, const Http::AdminReply& reply);
    bool authorized(const Http::AdminRequest& request) const;

    // One /api/v1/ request on its way to its resource.
    struct Call {
        const Http::AdminRequest& request;
        const Http::AdminReply& reply;        // for a write: answers after COMMIT
        const std::vector<std::string>& seg;  // "api", "v1", the resource, what follows
        Core::Millis now;
        bool get;  // GET or HEAD
    };
    using Handler = std::optional<Http::AdminResponse> (AdminApi::*)(const Call&);
    // The resources, one file each: ApiClients.cpp, ApiLists.cpp,
    // ApiConfig.cpp (tiers, customers, rules), ApiHistory.cpp (events, audit),
    // ApiCluster.cpp (cluster).
    std::optional<Http::AdminResponse> clients(const Call& call);
    std::optional<Http::AdminResponse> buckets(const Call& call);
    // /api/v1/customers/{id}/keys[/{key id}]: a new key (shown once), a revocation.
    std::optional<Http::AdminResponse> customerKeys(const Call& call, const std::string& id);
    std::optional<Http::AdminResponse> lists(const Call& call);
    std::optional<Http::AdminResponse> tiers(const Call& call);
    std::optional<Http::AdminResponse> customers(const Call& call);
    std::optional<Http::AdminResponse> rules(const Call& call);
    std::optional<Http::AdminResponse> history(const Call& call);
    std::optional<Http::AdminResponse> cluster(const Call& call);  // ApiCluster.cpp

    // GET the collection; GET, PUT, DELETE one item by its name or id.
    struct Collection {
        const char* plural;     // "tiers"
        const char* singular;   // "tier"
        const char* field;      // "name": the path segment, named in errors
        std::size_t maxLength;
    };
    template <class T>
    std::optional<Http::AdminResponse> namedCollection(const Http::AdminRequest& r, const Http::AdminReply& reply,
                                                       const std::vector<std::string>& seg, const Collection& c,
                                                       const std::vector<T>& items, const std::function<std::string(const T&)>& keyOf,
                                                       const std::function<Wire::Json(const T&)>& show,
                                                       std::optional<T> (*decode)(const Wire::Json&, std::string_view, std::string*),
                                                       const std::function<void(T, const Wire::Json& body, Storage::Actor, std::function<void(const Storage::Outcome&)>)>& put,
                                                       const std::function<void(std::string, Storage::Actor, std::function<void(const Storage::Outcome&)>)>& remove);

    Core::Engine& m_engine;
    Storage::Store& m_store;
    Http::LimiterLog* m_log;
    Http::ListenerMetrics* m_metrics;
    const Core::Clock& m_clock;
    ApiOptions m_options;
};

// One refusal as the events API shows it, with its "why".
Wire::Json toJson(const Http::Event& event);

// GET /api/v1/cluster's body, and the cluster's lines of /metrics (empty on a single node).
Wire::Json clusterJson(const Cluster::ClusterSync* sync, const Core::Engine& engine);
std::string clusterMetrics(const Cluster::ClusterSync* sync, const Core::Engine& engine);

} // namespace Floodgate::Api
