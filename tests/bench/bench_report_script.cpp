// SPDX-License-Identifier: GPL-3.0-or-later
// The report script's cost in Redis on its own (scripts/bench-report-script):
// two nodes' reports of the same entries, sent as the sync sends them (one
// EVALSHA of the script in engine/cluster/Scripts.cpp per batch, each report
// written by Cluster::encodeReport and its answer read by decodeAck), with
// nothing else on Redis. What it costs Redis comes from Redis itself: its
// CPU time (INFO cpu, user + system) and the script's time (INFO
// commandstats, cmdstat_evalsha) over the measured reports.
//
//   bench_report_script --redis URL [--entries N] [--batch B] [--reports R]
//                       [--buckets K] [--case far|near] [--script FILE]
//
// The entries have the default rules' three levels (a 3 s lockout, 5 min and
// 30 min sliding windows of 10 buckets each), every node's field in Redis
// (both nodes reported every entry once before the measure), and K of the
// sliding windows' buckets not zero (default 2: a client seen for about a
// minute). Case far (default): the limits a billion, as in
// scripts/bench-cluster's calm load, so every report finds the client far
// below its limits (its quiet lease). Case near: the windows' limits 1,000
// with both nodes' counts over half of that, so every report takes the
// short lease. The nodes alternate batch by batch over the entries in
// order; each restates the lease it holds, as a node that spends nothing.
// --script runs the Lua in FILE instead of the built one (a change to the
// script tried without a build; it must speak the same formats).
//
// Prints "name value" lines: case, entries, batch, reports, seconds,
// redis_cpu_us_per_report (Redis's CPU, every command included),
// script_us_per_report and script_us_per_call (cmdstat_evalsha), and
// quiet_leases (answers with a lease longer than the short one). Exit code 1
// on bad arguments or a Redis that cannot be reached or answers wrongly.
#include "cluster/RedisConnection.h"
#include "cluster/RedisUrl.h"
#include "cluster/Scripts.h"
#include "cluster/SyncProtocol.h"
#include "core/Cluster.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace Floodgate;

namespace {

int usage(const char* why)
{
    std::fprintf(stderr, "bench_report_script: %s\n"
                         "usage: bench_report_script --redis URL [--entries N] [--batch B] [--reports R] [--buckets K] [--case far|near] [--script FILE]\n",
                 why);
    return 1;
}

// A field of an INFO answer ("used_cpu_user:1.234567"), 0 when absent.
double infoField(const std::string& info, const std::string& name)
{
    const std::string key = "\n" + name + ":";
    const auto at = ("\n" + info).find(key);
    return at == std::string::npos ? 0.0 : std::atof(info.c_str() + at + key.size() - 1);
}

// cmdstat_evalsha's "calls=N,usec=U": {N, U}.
std::pair<double, double> evalshaStats(const std::string& info)
{
    const auto at = info.find("cmdstat_evalsha:calls=");
    if (at == std::string::npos)
        return {0, 0};
    const char* p = info.c_str() + at + std::strlen("cmdstat_evalsha:calls=");
    const double calls = std::atof(p);
    const char* u = std::strstr(p, "usec=");
    return {calls, u ? std::atof(u + 5) : 0.0};
}

} // namespace

int main(int argc, char** argv)
{
    std::string urlText;
    int entries = 10'000;
    int batch = 43;  // about what a node sends per 50 ms tick in the steady calm load (docs/BENCHMARKS.md)
    int reports = 100'000;
    int buckets = 2;
    std::string which = "far";
    std::string scriptFile;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc)
            return usage(("missing value after " + a).c_str());
        const char* v = argv[++i];
        if (a == "--redis")
            urlText = v;
        else if (a == "--entries")
            entries = std::atoi(v);
        else if (a == "--batch")
            batch = std::atoi(v);
        else if (a == "--reports")
            reports = std::atoi(v);
        else if (a == "--buckets")
            buckets = std::atoi(v);
        else if (a == "--case")
            which = v;
        else if (a == "--script")
            scriptFile = v;
        else
            return usage(("unknown option " + a).c_str());
    }
    if (urlText.empty() || entries < 1 || batch < 1 || reports < 1 || buckets < 1 || buckets > 10 || (which != "far" && which != "near"))
        return usage("bad arguments");
    std::string why;
    const auto url = Cluster::RedisUrl::parse(urlText, &why);
    if (!url)
        return usage(why.c_str());
    Cluster::RedisConnection conn(*url, std::chrono::milliseconds(2000), std::chrono::milliseconds(10'000));
    if (const auto o = conn.connect(); !o.ok())
        return usage(o.message.c_str());
    Cluster::Reply reply;
    auto run = [&](std::initializer_list<std::string> args) {
        const auto o = conn.run(Cluster::Command(args), reply);
        if (!o.ok() || reply.isError()) {
            std::fprintf(stderr, "bench_report_script: %s\n", o.ok() ? reply.text.c_str() : o.message.c_str());
            std::exit(1);
        }
        return reply.text;
    };
    run({"FLUSHDB"});
    std::string source(Cluster::Scripts::report);
    if (!scriptFile.empty()) {
        std::FILE* f = std::fopen(scriptFile.c_str(), "rb");
        if (!f)
            return usage(("cannot read " + scriptFile).c_str());
        source.clear();
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
            source.append(buf, n);
        std::fclose(f);
    }
    Cluster::Script script{source};

    using Core::Algorithm;
    const bool far = which == "far";
    const std::uint32_t windowLimit = far ? 1'000'000'000u : 1000u;
    const std::uint32_t perBucket = far ? 5u : 600u / std::uint32_t(2 * buckets) + 1;  // near: both nodes over half of 1,000
    const auto nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto sliding = [&](Core::Millis period) {
        Core::SharedLevel l{Algorithm::SlidingWindow, windowLimit, period, period / 10, nowMs / (period / 10), std::vector<std::uint32_t>(10, 0), 0};
        for (int k = 0; k < buckets; ++k)
            l.counts[std::size_t(9 - k)] = perBucket;
        return l;
    };
    Core::SyncReport shape;
    shape.quietLeaseMs = 15'000;
    shape.levels = {Core::SharedLevel{Algorithm::Lockout, far ? windowLimit : 6u, 3 * Core::SECOND, 0, nowMs - 1000, {1}, 0},
                    sliding(5 * Core::MINUTE), sliding(30 * Core::MINUTE)};
    std::vector<Core::SyncReport> all(std::size_t(entries), shape);
    for (int e = 0; e < entries; ++e)
        all[std::size_t(e)].entry = "c:bench" + std::to_string(e);
    std::map<std::pair<int, int>, std::uint32_t> lease;  // (node, entry) → the lease it holds
    const std::string shortMs = std::to_string(Core::Tuning::clusterLeaseMs);
    const std::string longMs = std::to_string(Core::Tuning::clusterQuietReportMs + Core::Tuning::clusterQuietSpreadMs);
    long quiet = 0;
    // One batch from `node` of the entries from `first` on, as the sync sends it.
    auto send = [&](int node, int first, int count) {
        std::vector<std::string> keys;
        std::vector<std::string> args{node ? "b" : "a", "2", shortMs, longMs};
        std::vector<Core::SyncReport*> sent;
        for (int k = 0; k < count; ++k) {
            const int e = (first + k) % entries;
            Core::SyncReport& r = all[std::size_t(e)];
            r.held = lease[{node, e}];
            ++r.levels[1].counts.back();  // a request more since the last report
            keys.push_back("fg:e:" + r.entry);
            args.push_back(Cluster::encodeReport(r));
            sent.push_back(&r);
        }
        std::vector<Cluster::Reply> replies;
        const auto o = conn.pipeline({Cluster::Command::eval(script, std::move(keys), std::move(args))}, replies);
        if (!o.ok() || replies.size() != 1 || replies[0].elements.size() != sent.size()) {
            std::fprintf(stderr, "bench_report_script: %s\n",
                         !o.ok() ? o.message.c_str() : replies.empty() ? "no answer" : replies[0].text.c_str());
            std::exit(1);
        }
        for (std::size_t k = 0; k < sent.size(); ++k) {
            const auto ack = Cluster::decodeAck(replies[0].elements[k].text, *sent[k]);
            if (!ack) {
                std::fprintf(stderr, "bench_report_script: an answer decodeAck does not read: %s\n", replies[0].elements[k].text.c_str());
                std::exit(1);
            }
            lease[{node, (first + int(k)) % entries}] = sent[k]->held + ack->granted;
            if (ack->leaseMs > Core::Tuning::clusterLeaseMs)
                ++quiet;
        }
    };
    // Both nodes' fields in every entry before the measure.
    for (int node = 0; node < 2; ++node)
        for (int first = 0; first < entries; first += batch)
            send(node, first, std::min(batch, entries - first));
    quiet = 0;
    run({"CONFIG", "RESETSTAT"});
    const std::string cpu0 = run({"INFO", "cpu"});
    const auto t0 = std::chrono::steady_clock::now();
    int sent = 0;
    int first = 0;
    for (int node = 0; sent < reports; node ^= 1) {
        const int count = std::min(batch, reports - sent);
        send(node, first, count);
        first = (first + count) % entries;
        sent += count;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string cpu1 = run({"INFO", "cpu"});
    const auto [calls, usec] = evalshaStats(run({"INFO", "commandstats"}));
    const double cpu = infoField(cpu1, "used_cpu_user") + infoField(cpu1, "used_cpu_sys") - infoField(cpu0, "used_cpu_user") - infoField(cpu0, "used_cpu_sys");
    std::printf("case %s\nentries %d\nbatch %d\nbuckets %d\nreports %d\nseconds %.2f\n", which.c_str(), entries, batch, buckets, reports, seconds);
    std::printf("redis_cpu_us_per_report %.1f\nscript_us_per_report %.1f\nscript_us_per_call %.0f\nquiet_leases %ld\n", cpu * 1e6 / reports,
                usec / reports, calls > 0 ? usec / calls : 0.0, quiet);
    return 0;
}
