// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/OptionTable.h"

#include "app/ConfigText.h"
#include "http/ClientIdentity.h"
#include "http/Listener.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace Floodgate::App {

std::string valueText(bool v)
{
    return v ? "true" : "false";
}

std::string valueText(const std::string& v)
{
    return v;
}

std::string valueText(unsigned v)
{
    return std::to_string(v);
}

std::string valueText(int v)
{
    return std::to_string(v);
}

std::string valueText(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

std::string valueText(const HostPort& v)
{
    const bool v6 = v.host.find(':') != std::string::npos;
    return (v6 ? "[" + v.host + "]" : v.host) + ":" + std::to_string(v.port);
}

std::string valueText(const std::optional<HostPort>& v)
{
    return v ? valueText(*v) : "off";
}

std::optional<std::string> positiveSeconds(const std::string& name, const std::string& v, double& out)
{
    char* end = nullptr;
    const double s = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(s > 0) || s > 1e6)
        return name + " " + shownValue(v) + ": expected a positive number of seconds";
    out = s;
    return std::nullopt;
}

std::optional<std::string> readAdminAddress(const std::string& v, Options& o)
{
    std::string why;
    auto hp = parseHostPort(v, &why);
    if (!hp)
        return "--admin " + shownValue(v) + ": " + why;
    o.admin = *hp;
    return std::nullopt;
}

std::optional<std::string> appendTrustedProxy(const std::string& v, std::vector<Core::Cidr>& into)
{
    std::string why;
    auto c = Core::Cidr::parse(v, &why);
    if (!c)
        return "--trusted-proxy " + shownValue(v) + ": " + why;
    into.push_back(*c);
    return std::nullopt;
}

namespace {

using A = OptionArity;
using R = Reload;
using S = OptionScope;
using Result = std::optional<std::string>;

// The configuration file's default, as --help says it; it names DefaultConfigFile.
constexpr std::string_view CONFIG_DEFAULT = "/etc/floodgate/floodgate.conf when it exists; off: none";
static_assert(CONFIG_DEFAULT.starts_with(std::string_view(DefaultConfigFile)), "--config's default is DefaultConfigFile");

constexpr OptionRow TABLE[] = {
    {"help", A::Flag, {}, "Print this help message and exit", NO_DEFAULT, false, R::Fixed, S::Everywhere, nullptr, {},
     "Print the options and commands and exit. *floodgate* _COMMAND_ *--help* prints one command's arguments."},
    {"config", A::One, "FILE|off", "read settings from FILE (the long options without --, KEY = VALUE);\nthe command line wins",
     describedDefault(CONFIG_DEFAULT), false, R::Fixed, S::Everywhere, nullptr, {},
     "Read the settings from _FILE_ instead of _/etc/floodgate/floodgate.conf_ (see *CONFIGURATION FILE*); *off* reads none. "
     "The command line wins over the file."},
    {"headless", A::Flag, {}, "engine + listener + admin API, no window", NO_DEFAULT, false, R::Fixed, S::Serving, nullptr,
     optionAccess<&Options::headless>(), "Engine, listener and admin API, no window (servers, CI)."},
    {"check-config", A::Flag, {}, "check the configuration file and the command line, then exit (0 good, 2 not)", NO_DEFAULT, false,
     R::Fixed, S::Serving, nullptr, optionAccess<&Options::checkConfig>(),
     "Read and check the configuration file and the command line, print what is wrong (one line naming the file, the line and the "
     "problem, exit status 2) or *configuration ok:* and what was read (exit status 0), with any warning on standard error, and exit "
     "without serving."},
    {"listen", A::One, "ADDR:PORT", "traffic listener (port 0: any free port)", VALUE_DEFAULT, true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         std::string why;
         auto hp = parseHostPort(v, &why);
         if (!hp)
             return "--listen " + shownValue(v) + ": " + why;
         o.listen = *hp;
         return std::nullopt;
     },
     optionAccess<&Options::listen>(),
     "The traffic listener's address. Port 0 picks any free port; the real one is printed. IPv6 addresses are written in brackets: "
     "*[::1]:8080*."},
    {"upstream", A::One, "URL", "reverse-proxy allowed requests to this http:// origin;\nwithout it the listener runs in decision mode",
     NO_DEFAULT, true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         std::string why;
         if (!Http::UpstreamUrl::parse(v, &why))
             return "--upstream " + shownValue(v) + ": " + why;
         o.upstream = v;
         return std::nullopt;
     },
     optionAccess<&Options::upstream>(),
     "Proxy mode: pass allowed requests to this *http://* origin. Without it the listener runs in decision mode and answers 200, 429 "
     "or 403 itself."},
    {"admin", A::One, "ADDR:PORT|off", "admin API + /metrics", VALUE_DEFAULT, true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         if (v == "off") {
             o.admin.reset();
             return std::nullopt;
         }
         return readAdminAddress(v, o);
     },
     optionAccess<&Options::admin>(), "The admin API and */metrics*; *off* runs none."},
    {"db", A::One, "PATH", "SQLite database",
     describedDefault("$XDG_DATA_HOME/floodgate/floodgate.db\n(under systemd: $STATE_DIRECTORY/floodgate.db)"), true, R::Restart,
     S::Everywhere,
     [](const std::string& v, Options& o) -> Result {
         if (v.empty())
             return "--db needs a path";
         o.db = v;
         return std::nullopt;
     },
     optionAccess<&Options::db>(),
     "The SQLite database, created on first run with the default rules and tiers. Default _$XDG_DATA_HOME/floodgate/floodgate.db_, "
     "or _$STATE_DIRECTORY/floodgate.db_ when systemd sets *STATE_DIRECTORY* (the service: _/var/lib/floodgate/floodgate.db_)."},
    {"db-timeout", A::One, "SECONDS", "wait this long for another writer's lock", VALUE_DEFAULT, true, R::Restart, S::Everywhere,
     [](const std::string& v, Options& o) { return positiveSeconds("--db-timeout", v, o.dbTimeoutSeconds); },
     optionAccess<&Options::dbTimeoutSeconds>(), "Wait this long for another writer's lock before giving up."},
    {"log", A::One, "PATH|off", "limiter log (CSV)", describedDefault("limiter.log beside the database"), true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         if (v.empty())
             return "--log needs a path (or off)";
         o.log = v;
         return std::nullopt;
     },
     optionAccess<&Options::log>(),
     "The limiter log: one CSV line per refused (or, in a dry run, would-be refused) request. Default _limiter.log_ beside the "
     "database."},
    {"trusted-proxy", A::Repeated, "CIDR", "repeatable; forwarding headers are believed only from these peers", NO_DEFAULT, true,
     R::Live, S::Serving, [](const std::string& v, Options& o) { return appendTrustedProxy(v, o.trustedProxies); },
     optionAccess<&Options::trustedProxies>(),
     "Repeatable. Forwarding headers are believed only from peers inside these ranges (also a rule setting). Everyone else is counted "
     "by the address they connect from."},
    {"real-ip-header", A::One, "NAME",
     "the one header trusted proxies write the client in: X-Forwarded-For,\nForwarded (RFC 7239), X-Real-IP or any name; others are "
     "ignored",
     VALUE_DEFAULT, true, R::Live, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         if (!Http::isHeaderName(v))
             return "--real-ip-header " + shownValue(v) + ": expected a header name such as X-Forwarded-For, Forwarded or X-Real-IP";
         o.realIpHeader = v;
         return std::nullopt;
     },
     optionAccess<&Options::realIpHeader>(),
     "The one header trusted proxies write the client into: *X-Forwarded-For*, *Forwarded* (RFC 7239), *X-Real-IP* or any header "
     "name. Others are ignored."},
    {"redis", A::One, "URL",
     "count together with every node on this Redis (docs/CLUSTER.md):\nredis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or "
     "unix:///PATH[?db=N]",
     NO_DEFAULT, true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         // The message never quotes the URL: it may hold the password.
         std::string why;
         o.redis = Cluster::RedisUrl::parse(v, &why);
         if (!o.redis)
             return "--redis: " + why;
         return std::nullopt;
     },
     optionAccess<&Options::redis>(),
     "Count together with every node on this Redis: *redis://*[[_USER_]:_PASSWORD_@]_HOST_[:_PORT_][/_DB_] or "
     "*unix:///*_PATH_[?db=_N_] (an absolute path: three slashes). The password is never printed."},
    {"cluster-key", A::One, "FILE",
     "with --redis: the key every node of the cluster holds (docs/CLUSTER.md);\nno node applies a shared change without it. Create "
     "one with\n`floodgate cluster-key FILE`",
     NO_DEFAULT, true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         if (v.empty())
             return "--cluster-key needs a file";
         o.clusterKeyFile = v;
         return std::nullopt;
     },
     optionAccess<&Options::clusterKeyFile>(),
     "Required with *--redis*: the key every node of the cluster reads from a file of its own (Redis never holds it). Every shared "
     "change (list entries, tiers, customers, rules, automatic bans, cooldowns) carries a tag made with it, and no node applies a "
     "change whose tag does not verify. Create it with *floodgate cluster-key* _FILE_ and copy the file to every node. A node whose "
     "key differs from the cluster's exits with status 5."},
    {"node-name", A::One, "NAME", "this node's name in the cluster", describedDefault("the host name"), true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         if (v.empty() || v.size() > 64 || v.find_first_of("|; \t\r\n") != std::string::npos)
             return "--node-name " + shownValue(v) + ": expected 1-64 characters without spaces, '|' or ';'";
         o.nodeName = v;
         return std::nullopt;
     },
     optionAccess<&Options::nodeName>(), "This node's name in the cluster. Default: the host name."},
    {"dry-run", A::Flag, {}, "decide and log, let everything through (log-only mode)", NO_DEFAULT, true, R::Live, S::Serving, nullptr,
     optionAccess<&Options::dryRun>(), "Decide and log, but let everything through (log-only mode)."},
    {"threads", A::One, "N", "listener threads", describedDefault("number of cores"), true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         unsigned n = 0;
         auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (ec != std::errc() || ptr != v.data() + v.size() || n == 0 || n > 256)
             return "--threads " + shownValue(v) + ": expected a whole number from 1 to 256";
         o.threads = n;
         return std::nullopt;
     },
     optionAccess<&Options::threads>(), "Listener threads. Default: the number of cores."},
    {"demo", A::Flag, {},
     "drive synthetic traffic into the listener (trusts 127.0.0.1 as a proxy\nso the demo's clients can have their own addresses)",
     NO_DEFAULT, false, R::Fixed, S::Serving, nullptr, optionAccess<&Options::demo>(),
     "Drive synthetic traffic into the listener: browsers, a good bot at 1 req/s, a scraper flood, a double-submitter, API customers "
     "of each tier and an IPv6 rotator. It trusts 127.0.0.1 as a proxy so the demo's clients have their own addresses."},
    {"seconds", A::One, "N", "stop by itself after N seconds", NO_DEFAULT, false, R::Fixed, S::Serving,
     [](const std::string& v, Options& o) { return positiveSeconds("--seconds", v, o.seconds); }, optionAccess<&Options::seconds>(),
     "Stop by itself after _N_ seconds."},
    {"theme", A::One, "light|dark|system", "the console's colours", VALUE_DEFAULT, true, R::Restart, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         if (v != "light" && v != "dark" && v != "system")
             return "--theme " + shownValue(v) + ": expected light, dark or system";
         o.theme = v;
         return std::nullopt;
     },
     optionAccess<&Options::theme>(), "The console's colours."},
    {"window-size", A::One, "WxH", "the console window's size at start", NO_DEFAULT, false, R::Fixed, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         unsigned w = 0, h = 0;
         const auto x = v.find('x');
         auto [p1, e1] = std::from_chars(v.data(), v.data() + (x == std::string::npos ? v.size() : x), w);
         auto [p2, e2] = x == std::string::npos ? std::from_chars_result{nullptr, std::errc::invalid_argument}
                                                : std::from_chars(v.data() + x + 1, v.data() + v.size(), h);
         if (e1 != std::errc() || e2 != std::errc() || p2 != v.data() + v.size() || w < 640 || h < 400 || w > 10000 || h > 10000)
             return "--window-size " + shownValue(v) + ": expected WIDTHxHEIGHT, at least 640x400";
         o.windowWidth = int(w);
         o.windowHeight = int(h);
         return std::nullopt;
     },
     optionAccess<&Options::windowWidth, &Options::windowHeight>(), "The console window's size at start."},
    {"screenshots", A::One, "DIR", "console: save each view as a PNG in DIR after --screenshot-delay\nseconds, then quit", NO_DEFAULT,
     false, R::Fixed, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         o.screenshots = v;
         return std::nullopt;
     },
     optionAccess<&Options::screenshots>(),
     "Console: save each view as a PNG in _DIR_ after *--screenshot-delay* seconds, then quit."},
    {"screenshot-delay", A::One, "SECONDS", "how long the demo runs before --screenshots", VALUE_DEFAULT, false, R::Fixed, S::Serving,
     [](const std::string& v, Options& o) { return positiveSeconds("--screenshot-delay", v, o.screenshotDelaySeconds); },
     optionAccess<&Options::screenshotDelaySeconds>(), "How long the demo runs before *--screenshots* takes them."},
    {"screenshot-log", A::One, "FILE", "with --screenshots: also the Rules view's \"Try on a log...\" on FILE\n(09-try-on-a-log.png)",
     NO_DEFAULT, false, R::Fixed, S::Serving,
     [](const std::string& v, Options& o) -> Result {
         o.screenshotLog = v;
         return std::nullopt;
     },
     optionAccess<&Options::screenshotLog>(),
     "With *--screenshots*: also open the Rules view's \"Try on a log...\" on _FILE_ with an edited rule and save it as "
     "09-try-on-a-log.png."},
    {"version", A::Flag, {}, "print the version and exit", NO_DEFAULT, false, R::Fixed, S::Serving, nullptr,
     optionAccess<&Options::version>(), "Print *floodgate* and the version, and exit."},
};

} // namespace

std::span<const OptionRow> optionTable()
{
    return TABLE;
}

const OptionRow* findOption(std::string_view name)
{
    for (const OptionRow& row : TABLE)
        if (row.name == name)
            return &row;
    return nullptr;
}

const OptionRow& option(std::string_view name)
{
    if (const OptionRow* row = findOption(name))
        return *row;
    throw std::logic_error("no option --" + std::string(name));
}

std::string defaultText(const OptionRow& row)
{
    switch (row.def.kind) {
    case OptionDefault::Kind::None:
        break;
    case OptionDefault::Kind::Value:
        return row.access.text ? row.access.text(Options{}) : std::string();
    case OptionDefault::Kind::Described:
        return std::string(row.def.text);
    }
    return {};
}

std::string helpText(const OptionRow& row)
{
    std::string text(row.help);
    const std::string def = defaultText(row);
    if (def.empty())
        return text;
    // A described default reads "default: the host name", a value "default 5".
    const char* lead = row.def.kind == OptionDefault::Kind::Described ? "default: " : "default ";
    // After the help's last line, or under it when that line would pass
    // --help's 100 columns (30 of them the option's).
    const auto lastLine = text.size() - (text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    const auto firstOfDefault = def.substr(0, def.find('\n')).size();
    return text + (lastLine + 3 + std::string_view(lead).size() + firstOfDefault > 70 ? "\n" : "   ") + lead + def;
}

} // namespace Floodgate::App
