// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/Runtime.h"
#include "app/ClusterLink.h"
#include "app/ListenClaim.h"
#include "app/OptionTable.h"

#include "api/AdminApi.h"
#include "http/AdminServer.h"
#include "app/DemoDriver.h"
#include "app/DemoTraffic.h"
#include "cluster/ClusterSync.h"
#include "core/Engine.h"
#include "core/Printable.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "http/Metrics.h"
#include "files/PrivateFiles.h"
#include "http/RequestSamples.h"
#include "storage/Store.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace Floodgate::App {

namespace {

// The cluster's default node name.
std::string hostName()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || !name[0])
        return "floodgate";
    return name;
}

std::string urlOf(const std::string& host, std::uint16_t port)
{
    return host.find(':') != std::string::npos ? "http://[" + host + "]:" + std::to_string(port)
                                               : "http://" + host + ":" + std::to_string(port);
}

} // namespace

struct Runtime::Admin {
    std::unique_ptr<Api::AdminApi> api;
    std::unique_ptr<Http::AdminServer> server;
};

Runtime::Runtime(const Core::Clock& clock)
    : m_clock(clock)
{
}

Runtime::~Runtime()
{
    stop();
}

std::optional<StartFailure> Runtime::start(const Options& o)
{
    m_options = o;
    m_demoTrusted = o.demo;
    auto failWith = [this](ExitCode code, std::string message) {
        stop();
        return std::optional<StartFailure>(StartFailure{code, std::move(message)});
    };

    // 1. The database: nothing else starts when it cannot be used as it is.
    // Nor when another Floodgate listens on this port (ListenClaim.h): it
    // is not even opened then.
    const Storage::StoreOptions so = storeOptions(o);
    m_dbPath = so.path;
    std::string claimed;
    m_listenClaim = ListenClaim::claim(o.listen.port,
                                       {o.listen.host + ":" + std::to_string(o.listen.port), m_dbPath,
                                        o.admin ? o.admin->host + ":" + std::to_string(o.admin->port) : std::string("off")},
                                       &claimed);
    if (!claimed.empty())
        return failWith(ExitCode::CannotListen, claimed);
    Storage::OpenFailure failure;
    m_store = Storage::Store::open(so, m_clock, &failure);
    if (!m_store)
        return failWith(ExitCode::DatabaseUnusable, failure.message);
    Storage::Loaded loaded = m_store->load();

    // 2. The engine, on the stored configuration plus the command line's overrides.
    Core::EngineConfig config = loaded.config;
    adjust(config);
    try {
        m_engine = std::make_unique<Core::Engine>(config);
    } catch (const std::invalid_argument& e) {
        return failWith(ExitCode::DatabaseUnusable, m_dbPath + ": " + e.what() + " (fix it with the sqlite3 shell or restore a backup)");
    }
    m_engine->setList(Core::ListKind::Safelist, std::make_shared<const Core::AddressList>(std::move(loaded.safelist)));
    m_engine->setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(std::move(loaded.blocklist)));
    m_engine->restoreAutomaticBans(loaded.automatic);
    std::vector<Core::Engine::OffenderRecord> offenders;
    for (const Storage::OffenderRow& o : loaded.offenders)
        offenders.push_back({o.key.address(), o.bans, o.lastBanAt});
    m_engine->restoreOffenders(offenders);

    // 2b. The cluster (docs/CLUSTER.md): with --redis this node counts
    // together with every node on that Redis, on Redis's clock.
    m_decisionClock = &m_clock;
    for (const std::string& w : optionWarnings(o))
        std::fprintf(stderr, "floodgate: warning: %s\n", w.c_str());
    if (o.redis) {
        Cluster::ClusterSync::Options co;
        co.url = *o.redis;
        std::string keyProblem;
        const auto key = Cluster::ClusterKey::load(o.clusterKeyFile, &keyProblem);
        if (!key)
            return failWith(ExitCode::ClusterRefused, "--cluster-key: " + keyProblem);
        co.key = *key;
        // Its lines carry what Redis holds (keys, node names, actors): escaped.
        co.notice = [](const std::string& line) { std::fprintf(stderr, "floodgate: cluster: %s\n", Core::printable(line).c_str()); };
        co.node = o.nodeName.empty() ? hostName() : o.nodeName;
        // Port 0: the real one is only known once the listener listens
        // (below); until then the heartbeat says no address rather than ":0".
        co.address = o.listen.port ? urlOf(o.listen.host, o.listen.port) : std::string();
        Core::Engine* engine = m_engine.get();
        const Core::Clock* clock = &m_clock;
        co.requestRate = [engine, clock] {
            const auto seconds = engine->perSecond(clock->now(), 2);
            return seconds.empty() ? 0.0 : double(seconds.front().total());
        };
        m_cluster = std::make_unique<Cluster::ClusterSync>(*m_engine, co, m_clock);
        // The lists, the tiers, the customers and the rules travel both
        // ways through storage (app/ClusterLink.h).
        shareThroughCluster(*m_cluster, *m_store, *m_engine);
        const Cluster::JoinResult joined = m_cluster->join();
        if (joined.kind == Cluster::JoinResult::Kind::Refused)
            return failWith(ExitCode::ClusterRefused, "--redis: " + joined.message);
        m_clusterLine = joined.message;
        m_decisionClock = &m_cluster->clock();
        m_cluster->start();
    }
    // The engine's automatic bans: journalled by storage, and with --redis
    // told to the other nodes.
    Storage::Store* store = m_store.get();
    m_engine->onAutomaticBan([this, store, cluster = m_cluster.get()](const Core::ListEntry& e) {
        store->journalAutomaticBan(e);
        // The demo's synthetic scrapers are this node's business only.
        if (cluster && !m_demoOn.load())
            announceAutomaticBan(*cluster, e);
    });
    const Core::Clock& clock = *m_decisionClock;

    // 3. limiter.log beside the database unless told otherwise.
    unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    m_logPath = o.log.empty() ? (std::filesystem::path(m_dbPath).parent_path() / "limiter.log").string() : o.log;
    if (m_logPath == "off")
        m_logPath.clear();
    std::string why;
    if (!m_logPath.empty()) {
        const auto dir = std::filesystem::path(m_logPath).parent_path();
        if (!dir.empty() && !Files::createPrivateFolders(dir.string(), &why))
            return failWith(ExitCode::DatabaseUnusable, why + " (choose another place with --db or --log)");
    }
    m_log = std::make_unique<Http::LimiterLog>(m_logPath, threads, clock);
    if (!m_log->start(&why))
        return failWith(ExitCode::DatabaseUnusable, why + " (choose another place with --log)");
    m_metrics = std::make_unique<Http::ListenerMetrics>(threads);

    // 4. The listener.
    Http::ListenerOptions lo;
    lo.address = o.listen.host;
    lo.port = o.listen.port;
    lo.threads = threads;
    lo.trustedProxies = Http::TrustedProxies(config.settings.trustedProxies, o.realIpHeader);
    if (!o.upstream.empty()) {
        lo.upstream = Http::UpstreamUrl::parse(o.upstream, &why);
        if (!lo.upstream)
            return failWith(ExitCode::BadInput, "--upstream " + o.upstream + ": " + why);
    }
    m_listener = std::make_unique<Http::Listener>(*m_engine, lo, m_log.get(), m_metrics.get(), clock);
    m_samples = std::make_unique<Http::RequestSamples>(threads);
    m_listener->setRequestSamples(m_samples.get());
    if (!m_listener->start(&why))
        return failWith(ExitCode::CannotListen, why + " (is another server on that port? choose another with --listen)");
    if (m_cluster)
        m_cluster->setAddress(listenUrl());

    // 5. Writes from now on: every committed change is published to the
    // engine (and the trusted proxies to the listener) before it is answered.
    m_store->start(
        m_engine.get(), [this](Core::EngineConfig& c) { adjust(c); },
        [this](const Core::EngineConfig& c) {
            std::string header;
            {
                std::lock_guard lock(m_liveMutex);
                header = m_options.realIpHeader;
            }
            m_listener->setTrustedProxies(Http::TrustedProxies(c.settings.trustedProxies, header));
        });

    // 6. The admin API.
    if (o.admin) {
        const auto host = Core::IpAddress::parse(o.admin->host);
        m_adminBeyondLoopback = !(host && host->isLoopback());
        Api::ApiOptions ao;
        ao.beyondLoopback = m_adminBeyondLoopback;
        ao.token = m_store->adminToken();
        ao.cluster = m_cluster.get();
        m_admin = std::make_unique<Admin>();
        m_admin->api = std::make_unique<Api::AdminApi>(*m_engine, *m_store, m_log.get(), m_metrics.get(), clock, ao);
        Http::AdminOptions opts;
        opts.address = o.admin->host;
        opts.port = o.admin->port;
        m_admin->server = std::make_unique<Http::AdminServer>(opts, m_admin->api->handlers(), clock);
        if (!m_admin->server->start(&why))
            return failWith(ExitCode::CannotListen, "admin: " + why + " (choose another with --admin ADDR:PORT or --admin off)");
    }
    if (m_listenClaim && m_admin && m_admin->server)
        m_listenClaim->describe({o.listen.host + ":" + std::to_string(o.listen.port), m_dbPath, adminUrl()});
    m_housekeeperStop = false;
    m_housekeeper = std::thread([this] { housekeeping(); });
    m_running = true;
    m_listening = true;
    if (o.demo)
        setDemo(true);
    return std::nullopt;
}

StartFacts Runtime::startFacts() const
{
    StartFacts f;
    f.listenUrl = listenUrl();
    f.mode = modeText();
    f.adminUrl = adminUrl();
    f.adminBeyondLoopback = m_adminBeyondLoopback;
    f.database = m_dbPath;
    f.databaseCreated = m_store->created();
    f.demoDatabase = m_options.demo && m_options.db.empty();
    f.keyless = Core::keylessCustomers(*m_engine->config(), m_clock.now());
    f.cluster = m_clusterLine;
    f.logPath = m_logPath;
    f.dryRun = m_options.dryRun;
    return f;
}

void Runtime::printStartLines() const
{
    for (const std::string& line : startLines(startFacts()))
        std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

void Runtime::adjust(Core::EngineConfig& c) const
{
    // Command-line overrides: applied to every configuration published,
    // never written to the database.
    std::lock_guard lock(m_liveMutex);
    if (m_options.dryRun)
        c.settings.dryRun = true;
    for (const Core::Cidr& p : m_options.trustedProxies)
        c.settings.trustedProxies.push_back(p);
    if (m_demoTrusted.load()) {
        // The demo's actors speak over loopback and name their own address
        // in the header --real-ip-header names.
        c.settings.trustedProxies.push_back(*Core::Cidr::parse("127.0.0.1/32"));
        c.settings.trustedProxies.push_back(*Core::Cidr::parse("::1/128"));
    }
}

std::vector<std::string> Runtime::reload(const std::optional<Options>& fresh)
{
    std::vector<std::string> lines;
    if (fresh && m_running) {
        const Options& was = m_options;
        auto join = [](const std::vector<std::string>& names) {
            std::string text;
            for (std::size_t i = 0; i < names.size(); ++i)
                text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
            return text;
        };
        // Each option as its row says (app/OptionTable.cpp): a Live one is
        // taken now, what every published configuration is adjusted with; a
        // Restart one is named and keeps its running value. (A Fixed one
        // comes from the command line, which is read again unchanged.)
        std::vector<std::string> applied, restart;
        {
            std::lock_guard lock(m_liveMutex);
            for (const OptionRow& row : optionTable()) {
                if (row.reload == Reload::Fixed || row.access.same(*fresh, was))
                    continue;
                if (row.reload == Reload::Live) {
                    row.access.take(m_options, *fresh);
                    applied.emplace_back(row.name);
                } else {
                    restart.emplace_back(row.name);
                }
            }
        }
        const std::string source = fresh->configFile.empty() ? "the command line (no configuration file)" : fresh->configFile;
        if (applied.empty())
            lines.push_back("configuration read again from " + source + ": nothing that applies while running changed");
        else
            lines.push_back("configuration read again from " + source + ": " + join(applied) + " applied");
        if (!restart.empty())
            lines.push_back(join(restart) + (restart.size() == 1 ? " changed and needs" : " changed and need")
                            + " a restart; running on with the old value" + (restart.size() == 1 ? "" : "s"));
        if (!applied.empty())
            republish();
    }
    if (m_log && !m_logPath.empty()) {
        std::string why;
        if (m_log->reopen(&why))
            lines.push_back("limiter log " + m_logPath + " reopened");
        else
            lines.push_back(why + "; still writing to the file open before");
    }
    return lines;
}

void reloadOnSignal(Runtime& runtime, int argc, char** argv)
{
    Options fresh;
    std::optional<Options> parsed;
    if (auto error = parseOptions(argc, argv, fresh))
        std::fprintf(stderr, "floodgate: SIGHUP: %s; keeping the running configuration\n", Core::printable(*error).c_str());
    else
        parsed = std::move(fresh);
    for (const std::string& line : runtime.reload(parsed))
        std::fprintf(stderr, "floodgate: SIGHUP: %s\n", Core::printable(line).c_str());
    std::fflush(stderr);
}

void Runtime::republish()
{
    // Through the writer, in order with every write: a read here could
    // publish a configuration older than one the writer just published.
    m_store->republish([](const Storage::Outcome& o) {
        if (!o.ok())
            std::fprintf(stderr, "floodgate: republishing the configuration: %s\n", Core::printable(o.error).c_str());
    });
}

void Runtime::setDemo(bool on)
{
    if (!m_running || on == bool(m_demo) || (on && !m_listening))
        return;
    if (!on) {
        m_demoOn = false;
        m_demo->stop();
        m_demo.reset();
        m_demoTrusted = false;
        republish();
        return;
    }
    if (!m_demoTrusted.exchange(true))
        republish();  // (at start-up with --demo the engine was built trusting it already)
    // The demo's API clients are customers of each tier: add the missing
    // ones, and the demo's key to those that lack it.
    const auto config = m_engine->config();
    DemoCustomerProof proof{config->settings.customerKeyHeader, config->settings.customerHeader, {}};
    for (Core::Customer c : DemoTraffic::demoCustomers(m_store->adminToken(), m_clock.now(), &proof)) {
        const auto have = std::find_if(config->customers.begin(), config->customers.end(), [&](const Core::Customer& x) { return x.id == c.id; });
        if (have != config->customers.end()) {
            const std::string& sha256 = c.keys.front().sha256;
            if (std::any_of(have->keys.begin(), have->keys.end(), [&](const Core::CustomerKey& k) { return k.sha256 == sha256; }))
                continue;
            std::vector<Core::CustomerKey> keys = have->keys;
            keys.push_back(c.keys.front());
            c = *have;
            c.keys = std::move(keys);
        }
        m_store->putCustomer(c, Storage::Actor{"demo"}, [id = c.id](const Storage::Outcome& o) {
            if (!o.ok())
                std::fprintf(stderr, "floodgate: demo customer %s not added: %s\n", id.c_str(), Core::printable(o.error).c_str());
        });
    }
    const std::string& host = m_options.listen.host;
    m_demo = std::make_unique<DemoDriver>(host == "0.0.0.0" ? "127.0.0.1" : (host == "::" ? "::1" : host), m_listener->port(),
                                          m_options.realIpHeader, std::move(proof));
    m_demo->start();
    m_demoOn = true;
}

bool Runtime::demoRunning() const
{
    return m_demoOn.load();
}

bool Runtime::setListening(bool on, std::string* error)
{
    if (!m_running || on == m_listening.load())
        return true;
    if (!on) {
        setDemo(false);
        m_listener->stop();
        m_listening = false;
        return true;
    }
    if (!m_listener->start(error))
        return false;
    if (m_cluster)
        m_cluster->setAddress(listenUrl());  // a port-0 listener gets another port
    m_listening = true;
    return true;
}

bool Runtime::listening() const
{
    return m_listening;
}

void Runtime::housekeeping()
{
    std::unique_lock lock(m_housekeeperMutex);
    while (!m_housekeeperWake.wait_for(lock, std::chrono::seconds(1), [this] { return m_housekeeperStop; }))
        m_engine->purge(clock().now());
}

void Runtime::stop()
{
    if (m_housekeeper.joinable()) {
        {
            std::lock_guard lock(m_housekeeperMutex);
            m_housekeeperStop = true;
        }
        m_housekeeperWake.notify_all();
        m_housekeeper.join();
    }
    if (m_demo) {
        m_demoOn = false;
        m_demo->stop();
        m_demo.reset();
    }
    if (m_listener)
        m_listener->stop();
    m_listening = false;
    if (m_admin && m_admin->server)
        m_admin->server->stop();
    if (m_store)
        m_store->stop();
    if (m_cluster)
        m_cluster->stop();
    if (m_log)
        m_log->stop();
    m_listenClaim.reset();  // the port is free for another Floodgate from here on
    m_running = false;
}

Core::Engine& Runtime::engine()
{
    return *m_engine;
}

Storage::Store& Runtime::store()
{
    return *m_store;
}

Http::Listener& Runtime::listener()
{
    return *m_listener;
}

Http::LimiterLog& Runtime::log()
{
    return *m_log;
}

Http::ListenerMetrics& Runtime::metrics()
{
    return *m_metrics;
}

Http::RequestSamples& Runtime::samples()
{
    return *m_samples;
}

std::string Runtime::listenUrl() const
{
    return m_listener ? urlOf(m_options.listen.host, m_listener->port()) : std::string();
}

std::string Runtime::adminUrl() const
{
    return m_admin && m_admin->server ? urlOf(m_options.admin->host, m_admin->server->port()) : std::string();
}

std::string Runtime::modeText() const
{
    return m_options.upstream.empty() ? "decision mode" : "proxy mode -> " + m_options.upstream;
}

} // namespace Floodgate::App
