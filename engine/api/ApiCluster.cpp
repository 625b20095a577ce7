// SPDX-License-Identifier: GPL-3.0-or-later
// /api/v1/cluster and the cluster's lines of /metrics (docs/CLUSTER.md):
// the nodes seen, Redis's state, the sync's figures. Without --redis the
// resource says {"enabled": false} and /metrics has no cluster lines.
#include "api/AdminApi.h"

#include "api/ApiSupport.h"
#include "cluster/ClusterSync.h"
#include "core/Engine.h"
#include "wire/Codec.h"
#include "wire/Decimal.h"

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminResponse;

namespace {

const char* stateName(Cluster::ClusterStatus::Redis r)
{
    switch (r) {
    case Cluster::ClusterStatus::Redis::Up: return "up";
    case Cluster::ClusterStatus::Redis::Degraded: return "degraded";
    case Cluster::ClusterStatus::Redis::Down: return "down";
    }
    return "down";
}

} // namespace

Json clusterJson(const Cluster::ClusterSync* sync, const Engine& engine)
{
    Json j = Json::object();
    j.set("enabled", sync != nullptr);
    if (!sync)
        return j;
    const Cluster::ClusterStatus st = sync->status();
    const ClusterCounters k = engine.clusterCounters();
    j.set("node", st.node);
    Json redis = Json::object();
    redis.set("url", st.url);
    redis.set("state", stateName(st.redis));
    redis.set("round_trip_ms", Json(double(st.roundTripMicros) / 1000.0));
    redis.set("sync_lag_ms", st.syncLagMs);
    redis.set("clock_offset_ms", st.clockOffsetMs);
    redis.set("breaker", st.breakerOpen ? "open" : "closed");
    redis.set("breaker_opened", st.breakerOpened);
    redis.set("errors", st.errors);
    redis.set("last_error", st.lastError.empty() ? Json() : Json(st.lastError));
    j.set("redis", std::move(redis));
    j.set("counting_nodes", st.nodesCounting);
    Json nodes = Json::array();
    for (const Cluster::NodeStatus& n : st.nodes) {
        Json o = Json::object();
        o.set("name", n.name);
        o.set("address", n.address);
        o.set("last_heartbeat", Codec::formatTime(n.lastSeenMs, true));
        o.set("requests_per_second", Json(n.requestsPerSecond));
        o.set("self", n.self);
        nodes.push(std::move(o));
    }
    j.set("nodes", std::move(nodes));
    Json s = Json::object();
    s.set("batches", st.batches);
    s.set("reports", st.reports);
    s.set("last_batch", st.lastBatchSize);
    s.set("queued", k.queued);
    s.set("scheduled", k.scheduled);
    s.set("leases_given_up", k.leasesGivenUp);
    s.set("waits", k.waits);
    s.set("overdrafts", k.overdrafts);
    s.set("dropped_changes", st.droppedChanges);
    s.set("refused_changes", st.refusedChanges);
    s.set("last_refused", st.lastRefused.empty() ? Json() : Json(st.lastRefused));
    s.set("malformed_fields", st.malformedFields);
    s.set("last_malformed", st.lastMalformed.empty() ? Json() : Json(st.lastMalformed));
    s.set("levelling_refused", st.levellingRefused.empty() ? Json() : Json(st.levellingRefused));
    j.set("sync", std::move(s));
    return j;
}

std::string clusterMetrics(const Cluster::ClusterSync* sync, const Engine& engine)
{
    if (!sync)
        return {};
    const Cluster::ClusterStatus st = sync->status();
    const ClusterCounters k = engine.clusterCounters();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, const std::string& value, const std::string& labels = {}) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name
            + (labels.empty() ? "" : "{" + labels + "}") + " " + value + "\n";
    };
    out += "# HELP floodgate_cluster_redis_state Redis as this node sees it: 1 for the state it is in.\n"
           "# TYPE floodgate_cluster_redis_state gauge\n";
    for (auto r : {Cluster::ClusterStatus::Redis::Up, Cluster::ClusterStatus::Redis::Degraded, Cluster::ClusterStatus::Redis::Down})
        out += std::string("floodgate_cluster_redis_state{state=\"") + stateName(r) + "\"} " + (st.redis == r ? "1" : "0") + "\n";
    metric("floodgate_cluster_redis_round_trip_seconds", "gauge", "The last sync batch's round trip to Redis.",
           decimal(double(st.roundTripMicros) / 1e6));
    metric("floodgate_cluster_sync_lag_seconds", "gauge", "From the oldest report of the last batch to its acknowledgement.",
           decimal(double(st.syncLagMs) / 1e3));
    metric("floodgate_cluster_sync_batch_size", "gauge", "Entry reports in the last batch.", std::to_string(st.lastBatchSize));
    metric("floodgate_cluster_sync_batches_total", "counter", "Report batches sent to Redis and acknowledged.", std::to_string(st.batches));
    metric("floodgate_cluster_sync_reports_total", "counter", "Entry reports acknowledged by Redis.", std::to_string(st.reports));
    metric("floodgate_cluster_redis_errors_total", "counter", "Failed calls to Redis (deadline, lost connection, error reply).",
           std::to_string(st.errors));
    metric("floodgate_cluster_breaker_open", "gauge", "1 while the circuit breaker keeps this node deciding on its own.",
           st.breakerOpen ? "1" : "0");
    metric("floodgate_cluster_breaker_opened_total", "counter", "Times the circuit breaker opened.", std::to_string(st.breakerOpened));
    metric("floodgate_cluster_nodes", "gauge", "Nodes counting together (heartbeat in the last 3 s).", std::to_string(st.nodesCounting));
    metric("floodgate_cluster_clock_offset_seconds", "gauge", "Redis's clock minus this node's.", decimal(double(st.clockOffsetMs) / 1e3));
    metric("floodgate_cluster_waits_total", "counter", "Requests that waited for Redis to acknowledge their client's earlier ones.",
           std::to_string(k.waits));
    metric("floodgate_cluster_overdrafts_total", "counter", "Requests admitted after waiting in vain (beyond the error bound).",
           std::to_string(k.overdrafts));
    metric("floodgate_cluster_dropped_changes_total", "counter",
           "Changes made on this node that never reached the cluster: more than 100000 waited for Redis during an outage and the oldest went.",
           std::to_string(st.droppedChanges));
    metric("floodgate_cluster_refused_changes_total", "counter",
           "Shared changes read from Redis and not applied: no valid tag of this cluster's key, or a key and a value that disagree.",
           std::to_string(st.refusedChanges));
    metric("floodgate_cluster_malformed_fields_total", "counter",
           "Fields in Redis's entry hashes that were not a node's counts, removed by the report script.", std::to_string(st.malformedFields));
    metric("floodgate_cluster_levelling_refused", "gauge",
           "1 once a levelling with the cluster would have removed too much of what this node holds, and removed nothing.",
           st.levellingRefused.empty() ? "0" : "1");
    return out;
}

std::optional<AdminResponse> AdminApi::cluster(const Call& call)
{
    if (!call.get)
        return methodNotAllowed("GET");
    return json(200, clusterJson(m_options.cluster, m_engine));
}

} // namespace Floodgate::Api
