// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/Metrics.h"

#include "wire/Decimal.h"
#include "core/Engine.h"
#include "http/LimiterLog.h"
#include "floodgate/Version.h"

#include <map>
#include <string_view>

namespace Floodgate::Http {

namespace {

template <class T>
void bump(std::atomic<T>& x, T by = 1)
{
    x.store(x.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

constexpr std::array<int, 8> ERROR_STATUSES = {400, 408, 413, 414, 431, 501, 502, 504};

} // namespace

struct alignas(64) ListenerMetrics::Slot {
    struct RuleCount {
        Core::ShortName rule;
        Core::Action action = Core::Action::Throttle;
        std::atomic<std::uint64_t> count{0};
    };
    std::array<RuleCount, MaxRules> rules;
    std::atomic<std::size_t> ruleCount{0};  // published with release after an entry is filled
    std::atomic<std::uint64_t> otherRules{0};
    std::array<std::atomic<std::uint64_t>, LatencyBoundsNs.size() + 1> latency{};
    std::atomic<std::uint64_t> latencySumNs{0};
    std::array<std::atomic<std::uint64_t>, ERROR_STATUSES.size()> errors{};
    std::uint32_t sampleCounter = 0;
};

ListenerMetrics::ListenerMetrics(std::size_t threads)
    : m_slots(std::make_unique<Slot[]>(std::max<std::size_t>(1, threads)))
    , m_threads(std::max<std::size_t>(1, threads))
{
}

ListenerMetrics::~ListenerMetrics() = default;

void ListenerMetrics::countRefusal(std::size_t thread, const Core::Decision& d)
{
    Slot& s = m_slots[thread % m_threads];
    const std::size_t n = s.ruleCount.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
        Slot::RuleCount& rc = s.rules[i];
        if (rc.action == d.action && rc.rule.view() == d.refusalName()) {
            bump(rc.count);
            return;
        }
    }
    if (n == MaxRules) {
        bump(s.otherRules);
        return;
    }
    s.rules[n].rule.assign(d.refusalName());
    s.rules[n].action = d.action;
    s.rules[n].count.store(1, std::memory_order_relaxed);
    s.ruleCount.store(n + 1, std::memory_order_release);
}

void ListenerMetrics::countHttpError(std::size_t thread, int status)
{
    Slot& s = m_slots[thread % m_threads];
    for (std::size_t i = 0; i < ERROR_STATUSES.size(); ++i)
        if (ERROR_STATUSES[i] == status)
            s.errors[i].fetch_add(1, std::memory_order_relaxed);  // errors are rare; any thread may count
}

bool ListenerMetrics::shouldSample(std::size_t thread)
{
    Slot& s = m_slots[thread % m_threads];
    return (++s.sampleCounter % LatencySampleEvery) == 0;
}

void ListenerMetrics::observeLatency(std::size_t thread, std::int64_t ns)
{
    Slot& s = m_slots[thread % m_threads];
    std::size_t b = 0;
    while (b < LatencyBoundsNs.size() && ns > LatencyBoundsNs[b])
        ++b;
    bump(s.latency[b]);
    bump(s.latencySumNs, std::uint64_t(ns < 0 ? 0 : ns));
}

std::string ListenerMetrics::render(const Core::Engine& engine, const LimiterLog* log, Core::Millis now) const
{
    const Core::EngineCounters c = engine.counters(now);
    std::string out;
    out.reserve(4096);
    auto line = [&out](std::string_view s) {
        out += s;
        out += '\n';
    };
    auto metric = [&out](std::string_view name, std::string_view labels, std::uint64_t value) {
        out += name;
        if (!labels.empty()) {
            out += '{';
            out += labels;
            out += '}';
        }
        out += ' ';
        out += std::to_string(value);
        out += '\n';
    };

    // Constant 1, the version in its label: dashboards join on it to show what runs where.
    line("# HELP floodgate_build_info The running Floodgate's version (always 1).");
    line("# TYPE floodgate_build_info gauge");
    metric("floodgate_build_info", std::string("version=\"") + Version + "\"", 1);

    line("# HELP floodgate_requests_total Requests decided, by action.");
    line("# TYPE floodgate_requests_total counter");
    for (std::size_t a = 0; a < Core::ActionCount; ++a)
        metric("floodgate_requests_total", std::string("action=\"") + Core::toString(Core::Action(a)) + "\"", c.decisions[a]);
    line("# HELP floodgate_customer_claims_total Requests that named a customer without proving it (counted as anonymous clients), by what they sent.");
    line("# TYPE floodgate_customer_claims_total counter");
    for (std::size_t k = 1; k < Core::ClaimCount; ++k)  // 0 is Claim::None
        metric("floodgate_customer_claims_total", std::string("claim=\"") + Core::toString(Core::Claim(k)) + "\"", c.claims[k]);

    std::map<std::pair<std::string, std::string>, std::uint64_t> byRule;
    std::uint64_t other = 0;
    std::array<std::uint64_t, LatencyBoundsNs.size() + 1> latency{};
    std::uint64_t latencySum = 0;
    std::array<std::uint64_t, ERROR_STATUSES.size()> errors{};
    for (std::size_t t = 0; t < m_threads; ++t) {
        const Slot& s = m_slots[t];
        const std::size_t n = s.ruleCount.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < n; ++i)
            byRule[{Core::toString(s.rules[i].action), std::string(s.rules[i].rule.view())}] += s.rules[i].count.load(std::memory_order_relaxed);
        other += s.otherRules.load(std::memory_order_relaxed);
        for (std::size_t b = 0; b < latency.size(); ++b)
            latency[b] += s.latency[b].load(std::memory_order_relaxed);
        latencySum += s.latencySumNs.load(std::memory_order_relaxed);
        for (std::size_t e = 0; e < errors.size(); ++e)
            errors[e] += s.errors[e].load(std::memory_order_relaxed);
    }
    line("# HELP floodgate_refusals_total Refused (and dry-run would-be refused) requests, by action and binding rule.");
    line("# TYPE floodgate_refusals_total counter");
    for (const auto& [key, value] : byRule) {
        std::string rule;
        for (char ch : key.second)
            if (ch != '"' && ch != '\\' && ch != '\n')
                rule += ch;
        metric("floodgate_refusals_total", "action=\"" + key.first + "\",rule=\"" + rule + "\"", value);
    }
    if (other)
        metric("floodgate_refusals_total", "action=\"other\",rule=\"(more than 64 rules)\"", other);

    line("# HELP floodgate_decision_seconds Time spent in the engine per decision (one decision in 16 is timed).");
    line("# TYPE floodgate_decision_seconds histogram");
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < LatencyBoundsNs.size(); ++b) {
        cumulative += latency[b];
        // The bounds as %g always wrote them ("0.0001"): dashboards match le by text.
        metric("floodgate_decision_seconds_bucket", "le=\"" + Wire::decimal(double(LatencyBoundsNs[b]) / 1e9, 6) + "\"", cumulative);
    }
    cumulative += latency.back();
    metric("floodgate_decision_seconds_bucket", "le=\"+Inf\"", cumulative);
    out += "floodgate_decision_seconds_sum " + Wire::decimal(double(latencySum) / 1e9) + "\n";
    metric("floodgate_decision_seconds_count", "", cumulative);

    line("# HELP floodgate_http_errors_total Malformed or hostile requests answered with an error status, and upstream failures.");
    line("# TYPE floodgate_http_errors_total counter");
    for (std::size_t e = 0; e < errors.size(); ++e)
        metric("floodgate_http_errors_total", "status=\"" + std::to_string(ERROR_STATUSES[e]) + "\"", errors[e]);

    line("# HELP floodgate_tracked_keys Keys (clients, customers) the engine tracks now.");
    line("# TYPE floodgate_tracked_keys gauge");
    metric("floodgate_tracked_keys", "", c.trackedKeys);
    line("# HELP floodgate_tracked_keys_capacity Keys tracked before least-recently-used eviction.");
    line("# TYPE floodgate_tracked_keys_capacity gauge");
    metric("floodgate_tracked_keys_capacity", "", c.capacity);
    line("# HELP floodgate_evictions_total Keys evicted at capacity (least recently used).");
    line("# TYPE floodgate_evictions_total counter");
    metric("floodgate_evictions_total", "", c.evictions);
    line("# HELP floodgate_expirations_total Idle keys forgotten after their longest window.");
    line("# TYPE floodgate_expirations_total counter");
    metric("floodgate_expirations_total", "", c.expirations);
    line("# HELP floodgate_list_entries Active safelist and blocklist entries.");
    line("# TYPE floodgate_list_entries gauge");
    metric("floodgate_list_entries", "list=\"safelist\"", c.safelistEntries);
    metric("floodgate_list_entries", "list=\"blocklist\"", c.blocklistEntries);
    metric("floodgate_list_entries", "list=\"automatic\"", c.automaticEntries);
    line("# HELP floodgate_auto_bans_total Clients put on the blocklist by escalation.");
    line("# TYPE floodgate_auto_bans_total counter");
    metric("floodgate_auto_bans_total", "", c.autoBans);
    line("# HELP floodgate_active_cooldowns Cooldowns running now.");
    line("# TYPE floodgate_active_cooldowns gauge");
    metric("floodgate_active_cooldowns", "", c.activeCooldowns);

    line("# HELP floodgate_open_connections Client connections open now.");
    line("# TYPE floodgate_open_connections gauge");
    metric("floodgate_open_connections", "", std::uint64_t(std::max<std::int64_t>(0, openConnections.load())));
    line("# HELP floodgate_connections_total Client connections accepted, and refused over the connection cap.");
    line("# TYPE floodgate_connections_total counter");
    metric("floodgate_connections_total", "result=\"accepted\"", acceptedConnections.load());
    metric("floodgate_connections_total", "result=\"over_cap\"", rejectedConnections.load());
    line("# HELP floodgate_accept_errors_total accept() failures (e.g. too many open files); the listener backs off and retries.");
    line("# TYPE floodgate_accept_errors_total counter");
    metric("floodgate_accept_errors_total", "", acceptErrors.load());
    line("# HELP floodgate_upstream_errors_total Upstream failures answered with 502 or 504.");
    line("# TYPE floodgate_upstream_errors_total counter");
    metric("floodgate_upstream_errors_total", "", upstreamErrors.load());

    line("# HELP floodgate_limiter_log_lines_total limiter.log lines written, refusals dropped with no line accounting for them (a listener "
         "thread's queue and fold table were both full), and lines failed because the file could not be written (full disk, quota, file size "
         "limit, I/O error).");
    line("# TYPE floodgate_limiter_log_lines_total counter");
    metric("floodgate_limiter_log_lines_total", "result=\"written\"", log ? log->written() : 0);
    metric("floodgate_limiter_log_lines_total", "result=\"dropped\"", log ? log->dropped() : 0);
    metric("floodgate_limiter_log_lines_total", "result=\"failed\"", log ? log->failed() : 0);
    line("# HELP floodgate_limiter_log_folded_total Refusals a listener thread folded into per-client counts because its limiter.log "
         "queue was full (written within summary lines).");
    line("# TYPE floodgate_limiter_log_folded_total counter");
    metric("floodgate_limiter_log_folded_total", "", log ? log->folded() : 0);
    line("# HELP floodgate_limiter_log_summarised_total Refusals written as part of summary lines (attempts column) rather than a line each.");
    line("# TYPE floodgate_limiter_log_summarised_total counter");
    metric("floodgate_limiter_log_summarised_total", "", log ? log->summarised() : 0);
    line("# HELP floodgate_limiter_log_failing 1 while limiter.log cannot be written (its last write failed).");
    line("# TYPE floodgate_limiter_log_failing gauge");
    metric("floodgate_limiter_log_failing", "", log && log->failing() ? 1 : 0);
    return out;
}

} // namespace Floodgate::Http
