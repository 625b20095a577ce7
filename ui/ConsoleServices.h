// SPDX-License-Identifier: GPL-3.0-or-later
// What the console works with, handed in by the composition root (app/):
// the engine and the store, the refusal events, the request samples, and
// the few controls that start or stop things. The console never owns them.
#pragma once

#include "core/Time.h"

#include <functional>
#include <string>

namespace Floodgate::Core {
class Engine;
}
namespace Floodgate::Storage {
class Store;
}
namespace Floodgate::Http {
class LimiterLog;
class RequestSamples;
} // namespace Floodgate::Http

namespace Floodgate::Cluster {
struct ClusterStatus;
}

namespace Floodgate::Ui {

struct ConsoleServices {
    Core::Engine* engine = nullptr;
    Storage::Store* store = nullptr;
    Http::LimiterLog* log = nullptr;          // events (may be null)
    Http::RequestSamples* samples = nullptr;  // last path and user agent (may be null)
    const Core::Clock* clock = nullptr;

    // Controls; unset ones are shown disabled.
    std::function<void(bool)> setDemo;
    std::function<bool()> demoRunning;
    std::function<bool(bool, std::string*)> setListening;
    std::function<bool()> listening;
    // The cluster as this node sees it (docs/CLUSTER.md), read on the
    // snapshot thread; unset on a single node (no --redis): the console
    // then shows nothing about a cluster.
    std::function<Cluster::ClusterStatus()> clusterStatus;

    // What the window says about where things are.
    std::function<std::string()> listenUrl;  // changes when a port-0 listener restarts
    std::string modeText;                    // "decision mode" | "proxy mode -> http://..."
    std::string adminUrl;                    // empty: admin API off
    bool dryRunForced = false;               // --dry-run on the command line: the stored setting is overridden
    bool adminBeyondLoopback = false;        // the admin API is bound beyond loopback: /healthz and /metrics want the token too
    std::string databasePath;
    std::string logPath;
};

} // namespace Floodgate::Ui
