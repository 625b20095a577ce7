// SPDX-License-Identifier: GPL-3.0-or-later
// The command line of docs/INTERFACE.md, parsed into plain values. Errors name the
// option and what was wrong (exit code 2). Each process option's name, help,
// default and reload class is one row of app/OptionTable.cpp; its default is
// the member's initialiser here.
#pragma once

#include "app/ReplayOptions.h"
#include "cluster/RedisUrl.h"
#include "core/Address.h"
#include "core/Tuning.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace Floodgate::Storage {
struct StoreOptions;
}

namespace Floodgate::App {

struct HostPort {
    std::string host;
    std::uint16_t port = 0;
    friend bool operator==(const HostPort&, const HostPort&) = default;
};

// What a command (docs/CLI.md) was given, as typed: the commands decode it
// with the admin API's decoders, so both accept and refuse the same input.
struct CommandArgs {
    std::string target;                  // ADDRESS|CIDR, a list's, tier's or customer's name
    std::string file;                    // lists|rules import|export FILE
    std::optional<std::string> ttl;      // --ttl 7d|24h|permanent (absent: the default TTL)
    std::string reason;                  // --reason TEXT
    bool json = false;                   // --json
    std::vector<std::string> levels;     // tiers set NAME LIMIT/PERIOD...
    std::vector<std::string> level;      // tiers set NAME --level LIMIT/PERIOD (that period's level only)
    std::string tier;                    // customers set --tier NAME
    std::optional<std::string> name;     // customers set --name TEXT (absent: kept)
    std::vector<std::string> overrides;  // customers set --override LIMIT/PERIOD (none: kept)
    bool noOverrides = false;            // customers set --no-overrides
    std::optional<std::string> keepOld;  // customers key --keep-old DURATION: the other keys' overlap
    std::string revoke;                  // customers key --revoke KEY_ID
    std::string token;                   // explain --token (empty: read from the database)
};

// The configuration file read when it exists (docs/CLI.md): the same
// settings as the long options, the command line winning.
inline constexpr const char* DefaultConfigFile = "/etc/floodgate/floodgate.conf";

struct Options {
    bool help = false;
    bool version = false;
    bool headless = false;
    HostPort listen{"127.0.0.1", 8080};
    std::string upstream;              // empty: decision mode
    std::optional<HostPort> admin = HostPort{"127.0.0.1", 9090};  // nullopt: --admin off
    std::string db;                    // resolved default when empty
    std::string log;                   // resolved default when empty; "off" disables
    std::vector<Core::Cidr> trustedProxies;
    std::string realIpHeader = "X-Forwarded-For";  // --real-ip-header: the one header trusted proxies write
    bool dryRun = false;
    unsigned threads = 0;              // 0 = cores
    bool demo = false;
    double seconds = 0;                // --seconds N: stop after N seconds (tests, demos)
    double dbTimeoutSeconds = double(Core::Tuning::dbBusyTimeoutMs) / double(Core::SECOND);  // --db-timeout: how long to wait for another writer's lock
    std::string theme = "system";      // --theme light|dark|system: the console's palette
    int windowWidth = 0;               // --window-size WxH: the console's first size (0: remembered or default)
    int windowHeight = 0;
    std::string screenshots;           // --screenshots DIR: save each console view as PNG, then quit
    double screenshotDelaySeconds = 8; // --screenshot-delay: how long the demo runs first
    std::string screenshotLog;         // --screenshot-log FILE: also "Try on a log..." on FILE
    std::optional<Cluster::RedisUrl> redis;  // --redis: one node of the cluster that Redis holds (docs/CLUSTER.md)
    std::string nodeName;              // --node-name: default the host name
    std::string clusterKeyFile;        // --cluster-key: the cluster's key (required with --redis)
    std::vector<std::string> command;  // the command's words: {"block"}, {"lists", "show"}, {"replay"} (docs/CLI.md)
    CommandArgs args;                  // what the command was given
    ReplayOptions replay;              // `floodgate replay ...` (command = {"replay"})
    std::string helpText;              // with `help`: the help of the command asked about (or of floodgate)
    std::string configFile;            // the configuration file read (empty: none; --config off or no default file)
    bool checkConfig = false;          // --check-config: validate, print, exit
};

// "within 2 s": how soon a running Floodgate applies a change another
// process committed (Tuning::changeAppliedWithinMs), as the commands and
// --help say it.
std::string changeAppliedWithin();

// Fills `out` or returns the one line to print (exit 2). --help fills
// out.help and out.helpText.
std::optional<std::string> parseOptions(int argc, char** argv, Options& out);
// What the parser cannot see option by option: the values that parse
// but cannot work together or at all (an upstream URL Floodgate cannot
// proxy to, the listener and the admin API on one port). The one line
// to print (exit 2), or nothing. --check-config, start-up and SIGHUP use it.
std::optional<std::string> checkOptions(const Options& o);
// What works but should not be left so (one line each, without the
// "floodgate: warning: " both --check-config and the start put before it).
std::vector<std::string> optionWarnings(const Options& o);
std::optional<HostPort> parseHostPort(std::string_view text, std::string* why);
// $STATE_DIRECTORY/floodgate.db when systemd set it (the service), else
// $XDG_DATA_HOME/floodgate/floodgate.db (XDG_DATA_HOME defaults to ~/.local/share).
std::string defaultDatabasePath();
// The database the options name (--db or the default) and its --db-timeout.
Storage::StoreOptions storeOptions(const Options& o);

} // namespace Floodgate::App
