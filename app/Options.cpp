// SPDX-License-Identifier: MIT
#include "app/Options.h"

#include "http/ClientIdentity.h"
#include "storage/Store.h"

#include <charconv>
#include <cstdlib>

namespace Floodgate::App {

std::optional<HostPort> parseHostPort(std::string_view text, std::string* why)
{
    auto fail = [&](std::string reason) -> std::optional<HostPort> {
        if (why)
            *why = std::move(reason);
        return std::nullopt;
    };
    HostPort hp;
    std::string_view portText;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return fail("expected [IPv6]:PORT");
        hp.host = std::string(text.substr(1, close - 1));
        portText = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos)
            return fail("expected ADDRESS:PORT");
        hp.host = std::string(text.substr(0, colon));
        portText = text.substr(colon + 1);
        if (hp.host.find(':') != std::string::npos)
            return fail("write IPv6 addresses in brackets: [::1]:8080");
    }
    if (hp.host == "localhost")
        hp.host = "127.0.0.1";
    std::string addrWhy;
    if (!Core::IpAddress::parse(hp.host, &addrWhy))
        return fail("\"" + hp.host + "\" is not an IP address: " + addrWhy);
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
    if (portText.empty() || ec != std::errc() || ptr != portText.data() + portText.size() || port > 65535)
        return fail("\"" + std::string(portText) + "\" is not a port (0-65535)");
    hp.port = std::uint16_t(port);
    return hp;
}

std::string defaultDatabasePath()
{
    std::string base;
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        base = xdg;
    else if (const char* home = std::getenv("HOME"); home && *home)
        base = std::string(home) + "/.local/share";
    else
        base = ".";
    return base + "/floodgate/floodgate.db";
}

Storage::StoreOptions storeOptions(const Options& o)
{
    Storage::StoreOptions so;
    so.path = o.db.empty() ? defaultDatabasePath() : o.db;
    so.busyTimeoutMs = int(o.dbTimeoutSeconds * 1000);
    return so;
}

std::string usageText()
{
    return "usage: floodgate [OPTIONS]              the console window\n"
           "       floodgate --headless [OPTIONS]   engine + listener + admin API, no window\n"
           "\n"
           "  --listen ADDR:PORT     traffic listener            default 127.0.0.1:8080 (port 0: any free port)\n"
           "  --upstream URL         reverse-proxy allowed requests to this http:// origin;\n"
           "                         without it the listener runs in decision mode\n"
           "  --admin ADDR:PORT|off  admin API + /metrics        default 127.0.0.1:9090\n"
           "  --db PATH              SQLite database             default $XDG_DATA_HOME/floodgate/floodgate.db\n"
           "  --log PATH|off         limiter log (CSV)           default limiter.log beside the database\n"
           "  --trusted-proxy CIDR   repeatable; forwarding headers are believed only from these peers\n"
           "  --real-ip-header NAME  the one header trusted proxies write the client in: X-Forwarded-For\n"
           "                         (default), Forwarded (RFC 7239), X-Real-IP or any name; others are ignored\n"
           "  --redis URL            count together with every node on this Redis (docs/CLUSTER.md):\n"
           "                         redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///PATH[?db=N]\n"
           "  --node-name NAME       this node's name in the cluster    default: the host name\n"
           "  --dry-run              decide and log, let everything through (log-only mode)\n"
           "  --threads N            listener threads            default: number of cores\n"
           "  --demo                 drive synthetic traffic into the listener (trusts 127.0.0.1 as a proxy\n"
           "                         so the demo's clients can have their own addresses)\n"
           "  --db-timeout SECONDS   wait this long for another writer's lock   default 5\n"
           "  --seconds N            stop by itself after N seconds\n"
           "  --theme light|dark|system   the console's colours           default system\n"
           "  --window-size WxH      the console window's size at start\n"
           "  --screenshots DIR      console: save each view as a PNG in DIR after --screenshot-delay\n"
           "                         seconds (default 8), then quit\n"
           "  --version, --help\n"
           "\n"
           "       floodgate lists export FILE [--db PATH]   safelist + blocklist to CSV or JSON (by extension)\n"
           "       floodgate lists import FILE [--db PATH]   all or nothing; reports each rejected line and why\n"
           "       floodgate token [--db PATH]               the admin API's bearer token\n"
           "       floodgate replay ACCESS_LOG... [--db PATH | --rules FILE.json] [--format auto|combined|common|nginx-json|floodgate-csv]\n"
           "                        [--trusted-proxy CIDR]... [--from TIME] [--to TIME] [--json] [--decisions OUT.csv]\n"
           "                                                 what the rules would have done to these logs (docs/CLI.md)\n"
           "\n"
           "exit codes: 0 clean stop, 1 rejected import or unwritable file, 2 bad command line,\n"
           "            3 cannot listen, 4 database unusable (corrupt, locked, newer schema),\n"
           "            5 --redis refused (wrong password, or not a Redis server)\n";
}

// `floodgate replay ACCESS_LOG... [OPTIONS]` (docs/CLI.md): its own small
// parser, kept in this one block so it moves whole to the subcommand parser.
std::optional<std::string> parseReplayOptions(int argc, char** argv, Options& o)
{
    o.command = {"replay"};
    ReplayOptions& r = o.replay;
    const char* const usage = "usage: floodgate replay ACCESS_LOG... [--db PATH | --rules FILE.json] [--format FORMAT] "
                              "[--trusted-proxy CIDR]... [--from TIME] [--to TIME] [--json] [--decisions OUT.csv]";
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        std::optional<std::string> inlineValue;
        if (a.starts_with("--") && a.find('=') != std::string::npos) {
            inlineValue = a.substr(a.find('=') + 1);
            a = a.substr(0, a.find('='));
        }
        if (a == "--help" || a == "-h") {
            o.help = true;
        } else if (a == "--json") {
            r.json = true;
        } else if (a == "--db" || a == "--rules" || a == "--format" || a == "--trusted-proxy" || a == "--from" || a == "--to"
                   || a == "--decisions" || a == "--db-timeout") {
            if (!inlineValue && i + 1 >= argc)
                return a + " needs a value";
            const std::string v = inlineValue ? *inlineValue : std::string(argv[++i]);
            std::string why;
            if (v.empty())
                return a + " needs a value";
            if (a == "--db") {
                o.db = v;
            } else if (a == "--rules") {
                r.rulesFile = v;
            } else if (a == "--format") {
                if (v != "auto" && v != "combined" && v != "common" && v != "nginx-json" && v != "floodgate-csv")
                    return "--format " + v + ": expected auto, combined, common, nginx-json or floodgate-csv";
                r.format = v;
            } else if (a == "--trusted-proxy") {
                auto c = Core::Cidr::parse(v, &why);
                if (!c)
                    return "--trusted-proxy " + v + ": " + why;
                r.trustedProxies.push_back(*c);
            } else if (a == "--from") {
                r.from = v;
            } else if (a == "--to") {
                r.to = v;
            } else if (a == "--decisions") {
                r.decisionsOut = v;
            } else {
                char* end = nullptr;
                const double s = std::strtod(v.c_str(), &end);
                if (end == v.c_str() || *end != '\0' || !(s > 0) || s > 1e6)
                    return a + " " + v + ": expected a positive number of seconds";
                o.dbTimeoutSeconds = s;
            }
        } else if (a.starts_with("-")) {
            return "replay: unknown option " + a + " (see floodgate replay --help)";
        } else {
            r.logs.push_back(argv[i]);
        }
    }
    if (r.logs.empty() && !o.help)
        return std::string(usage);
    return std::nullopt;
}

std::optional<std::string> parseOptions(int argc, char** argv, Options& o)
{
    if (argc > 1 && std::string_view(argv[1]) == "replay")
        return parseReplayOptions(argc, argv, o);
    auto needValue = [&](int& i, const char* name) -> std::optional<std::string> {
        if (i + 1 >= argc)
            return std::nullopt;
        (void)name;
        return std::string(argv[++i]);
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        std::string why;
        if (a == "--help" || a == "-h") {
            o.help = true;
        } else if (a == "--version") {
            o.version = true;
        } else if (a == "--headless") {
            o.headless = true;
        } else if (a == "--dry-run") {
            o.dryRun = true;
        } else if (a == "--demo") {
            o.demo = true;
        } else if (a == "--listen" || a == "--admin" || a == "--upstream" || a == "--db" || a == "--log" || a == "--trusted-proxy"
                   || a == "--real-ip-header" || a == "--threads" || a == "--seconds" || a == "--db-timeout" || a == "--screenshots"
                   || a == "--screenshot-delay" || a == "--theme" || a == "--window-size" || a == "--redis" || a == "--node-name") {
            auto v = needValue(i, a.c_str());
            if (!v)
                return a + " needs a value";
            if (a == "--listen") {
                auto hp = parseHostPort(*v, &why);
                if (!hp)
                    return "--listen " + *v + ": " + why;
                o.listen = *hp;
            } else if (a == "--admin") {
                if (*v == "off") {
                    o.admin.reset();
                } else {
                    auto hp = parseHostPort(*v, &why);
                    if (!hp)
                        return "--admin " + *v + ": " + why;
                    o.admin = *hp;
                }
            } else if (a == "--upstream") {
                o.upstream = *v;
            } else if (a == "--redis") {
                // The message never quotes the URL: it may hold the password.
                o.redis = Cluster::RedisUrl::parse(*v, &why);
                if (!o.redis)
                    return "--redis: " + why;
            } else if (a == "--node-name") {
                if (v->empty() || v->size() > 64 || v->find_first_of("|; \t\r\n") != std::string::npos)
                    return "--node-name " + *v + ": expected 1-64 characters without spaces, '|' or ';'";
                o.nodeName = *v;
            } else if (a == "--screenshots") {
                o.screenshots = *v;
            } else if (a == "--theme") {
                if (*v != "light" && *v != "dark" && *v != "system")
                    return "--theme " + *v + ": expected light, dark or system";
                o.theme = *v;
            } else if (a == "--window-size") {
                unsigned w = 0, h = 0;
                const auto x = v->find('x');
                auto [p1, e1] = std::from_chars(v->data(), v->data() + (x == std::string::npos ? v->size() : x), w);
                auto [p2, e2] = x == std::string::npos ? std::from_chars_result{nullptr, std::errc::invalid_argument}
                                                       : std::from_chars(v->data() + x + 1, v->data() + v->size(), h);
                if (e1 != std::errc() || e2 != std::errc() || p2 != v->data() + v->size() || w < 640 || h < 400 || w > 10000 || h > 10000)
                    return "--window-size " + *v + ": expected WIDTHxHEIGHT, at least 640x400";
                o.windowWidth = int(w);
                o.windowHeight = int(h);
            } else if (a == "--db") {
                if (v->empty())
                    return "--db needs a path";
                o.db = *v;
            } else if (a == "--log") {
                if (v->empty())
                    return "--log needs a path (or off)";
                o.log = *v;
            } else if (a == "--trusted-proxy") {
                auto c = Core::Cidr::parse(*v, &why);
                if (!c)
                    return "--trusted-proxy " + *v + ": " + why;
                o.trustedProxies.push_back(*c);
            } else if (a == "--real-ip-header") {
                if (!Http::isHeaderName(*v))
                    return "--real-ip-header " + *v + ": expected a header name such as X-Forwarded-For, Forwarded or X-Real-IP";
                o.realIpHeader = *v;
            } else if (a == "--threads") {
                unsigned n = 0;
                auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
                if (ec != std::errc() || ptr != v->data() + v->size() || n == 0 || n > 256)
                    return "--threads " + *v + ": expected a whole number from 1 to 256";
                o.threads = n;
            } else {
                char* end = nullptr;
                const double s = std::strtod(v->c_str(), &end);
                if (end == v->c_str() || *end != '\0' || !(s > 0) || s > 1e6)
                    return a + " " + *v + ": expected a positive number of seconds";
                (a == "--seconds" ? o.seconds : a == "--db-timeout" ? o.dbTimeoutSeconds : o.screenshotDelaySeconds) = s;
            }
        } else if (a.starts_with("-")) {
            return "unknown option " + a + " (see --help)";
        } else {
            o.command.push_back(a);
        }
    }
    if (!o.command.empty()) {
        const auto& c = o.command;
        if (c[0] == "lists") {
            if (c.size() != 3 || (c[1] != "export" && c[1] != "import"))
                return "usage: floodgate lists export|import FILE [--db PATH]";
        } else if (c[0] == "token") {
            if (c.size() != 1)
                return "usage: floodgate token [--db PATH]";
        } else {
            return "unknown command \"" + c[0] + "\" (see --help)";
        }
    }
    return std::nullopt;
}

} // namespace Floodgate::App
