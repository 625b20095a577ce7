// SPDX-License-Identifier: GPL-3.0-or-later
// The composition root shared by headless mode and the console: opens the
// database, builds the engine from it, starts the listener, the store's
// writer, the admin API and (with --demo) the demo traffic, and stops them
// in reverse: demo -> listener (stop accepting, finish requests) -> admin
// API -> store (finish writes) -> limiter log (flush) -> engine.
#pragma once

#include "app/ExitCode.h"
#include "app/Options.h"
#include "app/StartLines.h"
#include "core/Time.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <vector>

namespace Floodgate::Core {
class Engine;
struct EngineConfig;
}
namespace Floodgate::Storage {
class Store;
}
namespace Floodgate::Http {
class Listener;
class LimiterLog;
class RequestSamples;
class ListenerMetrics;
class AdminServer;
} // namespace Floodgate::Http

namespace Floodgate::Cluster {
class ClusterSync;
}

namespace Floodgate::App {

class DemoDriver;
class ListenClaim;
class Runtime;

struct StartFailure {
    ExitCode exitCode = ExitCode::Rejected;  // CannotListen, DatabaseUnusable, ClusterRefused, BadInput
    std::string message;                     // one line: what is wrong and what to do
};

// SIGHUP in either mode: the command line and the configuration file parsed
// again and Runtime::reload()ed; every line said on stderr. A refused file
// keeps the running configuration (and limiter.log is still reopened).
void reloadOnSignal(Runtime& runtime, int argc, char** argv);

class Runtime {
public:
    explicit Runtime(const Core::Clock& clock);
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // Everything up to serving. On failure nothing keeps running.
    std::optional<StartFailure> start(const Options& options);
    void stop();
    // After start(), on stdout, one line each: where it listens, the admin
    // API, the database, limiter.log ("limiter log ..." is the last line).
    // Both modes print them, so a script can find a port-0 listener.
    void printStartLines() const;

    // What printStartLines() says (app/StartLines.h).
    StartFacts startFacts() const;

    // SIGHUP (docs/CLI.md): `fresh` is the configuration file and the
    // command line parsed again. The options whose reload class is Live
    // (app/OptionTable.cpp) apply at once; the others, changed, are named
    // as needing a restart and keep their running value.
    // limiter.log is reopened at its path either way (`fresh` absent: the
    // file was refused, only the log is reopened). Returns the lines to say.
    std::vector<std::string> reload(const std::optional<Options>& fresh);


    // Demo traffic on or off while running (the console's toggle).
    void setDemo(bool on);
    bool demoRunning() const;

    // The traffic listener off (stops the demo too) and on again, same address.
    bool setListening(bool on, std::string* error);
    bool listening() const;

    Core::Engine& engine();
    Storage::Store& store();
    Http::Listener& listener();
    Http::LimiterLog& log();
    Http::ListenerMetrics& metrics();
    Http::RequestSamples& samples();  // the last path and user agent per client, for the console
    // What decisions are timed by: the system clock, or a cluster node's
    // (moved to Redis's, docs/CLUSTER.md).
    const Core::Clock& clock() const { return *m_decisionClock; }
    // The cluster link; null without --redis.
    Cluster::ClusterSync* cluster() { return m_cluster.get(); }

    std::string listenUrl() const;  // "http://127.0.0.1:8080"
    std::string adminUrl() const;   // empty with --admin off
    std::string modeText() const;   // "decision mode" | "proxy mode -> http://..."
    const std::string& databasePath() const { return m_dbPath; }
    const std::string& logPath() const { return m_logPath; }  // empty: off
    bool adminBeyondLoopback() const { return m_adminBeyondLoopback; }

private:
    void adjust(Core::EngineConfig& config) const;  // command-line and demo overrides, never stored
    void republish();                               // the stored configuration again, adjusted

    const Core::Clock& m_clock;
    const Core::Clock* m_decisionClock = &m_clock;
    std::unique_ptr<Cluster::ClusterSync> m_cluster;
    std::string m_clusterLine;  // the start-up line about it
    Options m_options;
    // m_options' live settings (Reload::Live in app/OptionTable.cpp):
    // reload() writes them while the store's writer thread publishes.
    mutable std::mutex m_liveMutex;
    std::string m_dbPath;
    std::string m_logPath;
    bool m_adminBeyondLoopback = false;
    std::unique_ptr<Storage::Store> m_store;
    std::unique_ptr<Core::Engine> m_engine;
    std::unique_ptr<Http::LimiterLog> m_log;
    std::unique_ptr<Http::ListenerMetrics> m_metrics;
    std::unique_ptr<Http::RequestSamples> m_samples;
    std::unique_ptr<Http::Listener> m_listener;
    std::unique_ptr<ListenClaim> m_listenClaim;  // this process's claim on its port, for its life
    struct Admin;
    std::unique_ptr<Admin> m_admin;
    std::unique_ptr<DemoDriver> m_demo;
    // Once a second, on its own thread: forget idle keys and expired bans
    // (a walk over every tracked key: never on the GUI or a listener thread).
    void housekeeping();
    std::thread m_housekeeper;
    std::mutex m_housekeeperMutex;
    std::condition_variable m_housekeeperWake;
    bool m_housekeeperStop = false;

    bool m_running = false;
    // Read by the console's snapshot thread while the GUI thread toggles them.
    std::atomic<bool> m_listening{false};
    std::atomic<bool> m_demoOn{false};
    std::atomic<bool> m_demoTrusted{false};
};

} // namespace Floodgate::App
