// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/Options.h"

#include "app/ConfigText.h"
#include "app/ExitCode.h"
#include "app/OptionTable.h"
#include "core/Address.h"
#include "http/ClientIdentity.h"
#include "http/Listener.h"
#include "storage/Store.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>

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
        return fail(shownValue(hp.host, true) + " is not an IP address: " + addrWhy);
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
    if (portText.empty() || ec != std::errc() || ptr != portText.data() + portText.size() || port > 65535)
        return fail(shownValue(portText, true) + " is not a port (0-65535)");
    hp.port = std::uint16_t(port);
    return hp;
}

std::string defaultDatabasePath()
{
    // Under systemd (floodgate.service's StateDirectory=floodgate) the state
    // lives in /var/lib/floodgate; the service user has no home to speak of.
    // systemd separates several state directories with ':'; ours is the first.
    if (const char* state = std::getenv("STATE_DIRECTORY"); state && *state) {
        const std::string_view dirs(state);
        return std::string(dirs.substr(0, dirs.find(':'))) + "/floodgate.db";
    }
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
    // The demo's customers and bans go into a database of its own, never
    // into the operator's default one.
    if (!o.db.empty())
        so.path = o.db;
    else if (o.demo)
        so.path = (std::filesystem::path(defaultDatabasePath()).parent_path() / "demo.db").string();
    else
        so.path = defaultDatabasePath();
    so.busyTimeoutMs = int(o.dbTimeoutSeconds * 1000);
    return so;
}

std::optional<std::string> checkOptions(const Options& o)
{
    // Lists, tiers and rules go through Redis only with a tag made with a
    // key that Redis does not hold (docs/CLUSTER.md).
    if (o.redis && o.clusterKeyFile.empty())
        return "--redis needs --cluster-key FILE: create a key once with `floodgate cluster-key FILE`, copy the file to every node and give "
               "each --cluster-key (or cluster-key = FILE in the configuration file)";
    // Two listening sockets on one port fail at start-up with exit 3; said
    // here first, as a configuration that cannot work.
    if (o.admin && o.listen.port != 0 && o.admin->port == o.listen.port) {
        auto any = [](const std::string& host) { return host == "0.0.0.0" || host == "::"; };
        if (o.admin->host == o.listen.host || any(o.admin->host) || any(o.listen.host))
            return "--listen " + o.listen.host + ":" + std::to_string(o.listen.port) + " and --admin " + o.admin->host + ":"
                + std::to_string(o.admin->port) + " cannot share a port: give the admin API another (or --admin off)";
    }
    return std::nullopt;
}

std::vector<std::string> optionWarnings(const Options& o)
{
    std::vector<std::string> out;
    // Whoever reaches this Redis can disturb the counts (the shared state
    // is tagged): say so when nothing but the network keeps them out.
    if (o.redis && o.redis->password.empty() && !o.redis->isUnix() && o.redis->host != "localhost") {
        const auto host = Core::IpAddress::parse(o.redis->host);
        if (!(host && host->isLoopback()))
            out.push_back("--redis " + o.redis->redacted() + " has no password and is not on this machine: anyone who reaches it can disturb the "
                          "cluster's counts (docs/CLUSTER.md, \"Who may change the shared state\"); give it a password");
    }
    return out;
}

namespace {

// Checks one value of an option and stores it; returns the one line to print
// when the value is refused. Thrown as CLI11's ValidationError, which CLI11
// passes through unchanged, so the message is exactly this line.
using Apply = std::function<std::optional<std::string>(const std::string&)>;

// The refusal, with the option and the value it refused: a value that came
// from the configuration file is then told with the file's name and line.
class ValueRefused : public CLI::ValidationError {
public:
    ValueRefused(std::string option, std::string value, const std::string& message)
        : CLI::ValidationError(message), m_option(std::move(option)), m_value(std::move(value))
    {
    }
    const std::string& option() const { return m_option; }
    const std::string& value() const { return m_value; }

private:
    std::string m_option;
    std::string m_value;
};

std::string trimmed(std::string_view s)
{
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string_view::npos)
        return {};
    const auto last = s.find_last_not_of(" \t\r");
    return std::string(s.substr(first, last - first + 1));
}

// The configuration file, read by load() (a regular file of a bounded
// size, never waiting on a FIFO) before CLI11 would open it, then parsed by
// CLI11's own INI/TOML reader (quotes, [a, b] lists, # comments) line by
// line, so every problem names its line, and stricter than CLI11 alone: a
// line that is not KEY = VALUE, a key that is no setting, a flag that is
// not true or false, two values for a one-value setting and a one-value
// setting given twice are refused rather than skipped or silently resolved. CLI11 then applies the values to the
// options the command line did not give (the command line wins).
class ConfigFile : public CLI::ConfigBase {
public:
    explicit ConfigFile(const CLI::App& app)
        : m_app(app)
    {
    }

    // Reads the file `path` names, once per parse: the --config option's
    // check calls it before CLI11 opens the file itself (CLI11's
    // std::ifstream would wait forever on a FIFO and read a file of any
    // size). A default file (`given` false) that is not there is simply
    // not read; any other failure is false, with failure() the line to say.
    bool load(const std::string& path, bool given) const
    {
        if (m_loaded && m_loadedPath == path)
            return !m_failure;
        m_loaded = true;
        m_loadedPath = path;
        m_failure.reset();
        m_missing = false;
        int error = 0;
        const auto why = readConfigFile(path, &m_text, &error);
        if (!why)
            return true;
        if ((error == ENOENT || error == ENOTDIR) && !given) {
            m_missing = true;
            return true;
        }
        if (given)
            m_failure = "--config " + path + ": " + *why;
        else
            m_failure = "cannot read the configuration file " + path + ": " + *why + " ("
                      + (error == EACCES || error == EPERM ? "run as a user who can, or " : "") + "give --config FILE or --config off)";
        return false;
    }
    // Refuses `path` as --config's value without reading it.
    void refuse(const std::string& path, std::string line) const
    {
        m_loaded = true;
        m_loadedPath = path;
        m_failure = std::move(line);
    }
    bool tried(const std::string& path) const { return m_loaded && m_loadedPath == path; }
    const std::optional<std::string>& failure() const { return m_failure; }
    const std::string& requested() const { return m_loadedPath; }

    // CLI11 has opened the file load() read (Config::from_file) and hands
    // over its stream: the text load() read is parsed instead, so what is
    // parsed is what was checked.
    std::vector<CLI::ConfigItem> from_config(std::istream&) const override
    {
        if (m_missing) {
            // The default file appeared after load() found none.
            m_loaded = false;
            if (!load(m_loadedPath, false))
                throw CLI::ConfigError(*m_failure);
        }
        m_read = true;
        m_path = m_loadedPath;
        // The command line is parsed by now and the file not yet applied:
        // what has a value here came from the command line.
        for (const CLI::Option* opt : m_app.get_options())
            if (opt->count() > 0)
                m_commandLine.insert(opt->get_name());
        auto fail = [this](int line, const std::string& problem) {
            throw CLI::ConfigError(m_path + ":" + std::to_string(line) + ": " + problem);
        };
        std::vector<CLI::ConfigItem> items;
        std::map<std::string, std::pair<int, std::size_t>> seen;  // key -> its first line, its item
        int number = 0;
        for (std::string_view rest = m_text; !rest.empty();) {
            const auto end = rest.find('\n');
            const std::string_view text = rest.substr(0, end);
            rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
            ++number;
            const std::string line = trimmed(text);
            if (line.empty() || line.front() == '#' || line.front() == ';')
                continue;
            if (line.front() == '[')
                fail(number, "sections are not used: every line is KEY = VALUE");
            const auto eq = line.find('=');
            if (eq == std::string::npos)
                fail(number, "expected KEY = VALUE, such as listen = \"0.0.0.0:8080\"");
            const std::string key = trimmed(std::string_view(line).substr(0, eq));
            const OptionRow* row = findOption(key);
            if (!row)
                fail(number, "unknown setting " + shownValue(key, true) + " (the settings are the long options without --; see floodgate --help)");
            if (!row->inFile)
                fail(number, "\"" + key + "\" cannot be set in a configuration file (give --" + key + " on the command line)");
            const bool isFlag = row->arity == OptionArity::Flag;
            const bool single = row->arity != OptionArity::Repeated;
            std::string value = trimmed(std::string_view(line).substr(eq + 1));
            // "[::1]:9090" is an address, not a TOML list, for a setting that
            // takes one value: read as if quoted.
            if (single && value.starts_with('['))
                value = "\"" + trimmed(std::string_view(value).substr(0, value.find('#'))) + "\"";
            std::istringstream one(key + " = " + value);
            std::vector<CLI::ConfigItem> parsed = CLI::ConfigBase::from_config(one);
            if (parsed.size() != 1)
                fail(number, "expected KEY = VALUE");
            const std::vector<std::string>& values = parsed.front().inputs;
            if (isFlag && (values.size() != 1 || (values[0] != "true" && values[0] != "false")))
                fail(number, key + " is true or false");
            if (single && values.size() != 1)
                fail(number, key + " takes one value, not " + std::to_string(values.size()) + " (quote a value that holds a comma or a space)");
            m_lines.push_back(Line{number, "--" + key, values});
            if (const auto it = seen.find(key); it != seen.end()) {
                if (single)
                    fail(number, key + " is set twice (first on line " + std::to_string(it->second.first) + ")");
                auto& inputs = items[it->second.second].inputs;
                inputs.insert(inputs.end(), values.begin(), values.end());
            } else {
                seen.emplace(key, std::make_pair(number, items.size()));
                items.push_back(std::move(parsed.front()));
            }
        }
        return items;
    }

    bool read() const { return m_read; }
    const std::string& path() const { return m_path; }
    // Whether the command line gave this option of floodgate itself (not
    // the file, whose values apply only to options it did not give).
    bool givenOnCommandLine(const CLI::Option& opt) const { return m_read ? m_commandLine.count(opt.get_name()) > 0 : opt.count() > 0; }
    // "FILE:LINE" of the line that gave `option` this value, if the file did.
    std::optional<std::string> placeOf(const std::string& option, const std::string& value) const
    {
        if (!m_read || m_commandLine.count(option))
            return std::nullopt;
        for (const Line& l : m_lines)
            if (l.option == option && std::find(l.values.begin(), l.values.end(), value) != l.values.end())
                return m_path + ":" + std::to_string(l.number);
        return std::nullopt;
    }

private:
    struct Line {
        int number;
        std::string option;  // "--listen"
        std::vector<std::string> values;
    };
    const CLI::App& m_app;
    // Filled by load() and while CLI11 reads the file (from_config is const
    // in CLI11's interface, and load() runs in an option's check).
    mutable bool m_loaded = false;
    mutable std::string m_loadedPath;
    mutable std::string m_text;
    mutable bool m_missing = false;
    mutable std::optional<std::string> m_failure;
    mutable bool m_read = false;
    mutable std::string m_path;
    mutable std::set<std::string> m_commandLine;
    mutable std::vector<Line> m_lines;
};

// What no option takes, checked before the option's own check: a value
// longer than any option needs (a 300 MB line is not quoted back whole), or
// one holding a NUL, which a path or a C string would silently cut short.
std::optional<std::string> outOfBounds(const std::string& name, const std::string& v)
{
    if (v.size() > MaxValueBytes)
        return name + " " + shownValue(v) + ": a value is at most " + std::to_string(MaxValueBytes) + " bytes";
    if (v.find('\0') != std::string::npos)
        return name + " " + shownValue(v) + ": a value may not hold a NUL byte";
    return std::nullopt;
}

// An option with one value. Given twice, the last one counts (as it always did).
CLI::Option* valueOption(CLI::App& app, const std::string& name, const std::string& type, const std::string& help, Apply apply)
{
    auto* opt = app.add_option_function<std::string>(
        name,
        [name, apply = std::move(apply)](const std::string& v) {
            if (auto why = outOfBounds(name, v))
                throw ValueRefused(name, v, *why);
            if (auto why = apply(v))
                throw ValueRefused(name, v, *why);
        },
        help);
    opt->type_name(type)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    return opt;
}

// A repeatable option: one value each time it is given.
CLI::Option* repeatedOption(CLI::App& app, const std::string& name, const std::string& type, const std::string& help, Apply apply)
{
    auto* opt = app.add_option_function<std::vector<std::string>>(
        name,
        [name, apply = std::move(apply)](const std::vector<std::string>& values) {
            for (const std::string& v : values) {
                if (auto why = outOfBounds(name, v))
                    throw ValueRefused(name, v, *why);
                if (auto why = apply(v))
                    throw ValueRefused(name, v, *why);
            }
        },
        help);
    opt->type_name(type)->allow_extra_args(false);
    return opt;
}

CLI::Option* flag(CLI::App& app, const std::string& name, bool& target, const std::string& help)
{
    return app.add_flag(name, target, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// "floodgate lists show": the command words of the subcommands chosen, outermost first.
std::vector<const CLI::App*> chosen(const CLI::App& app)
{
    std::vector<const CLI::App*> chain;
    for (const CLI::App* a = &app;;) {
        const auto subs = a->get_subcommands();
        if (subs.empty())
            break;
        a = subs.front();
        chain.push_back(a);
    }
    return chain;
}

std::string commandName(const std::vector<const CLI::App*>& chain)
{
    std::string name = "floodgate";
    for (const CLI::App* a : chain)
        name += " " + a->get_name();
    return name;
}

// CLI11's own messages for what it refuses itself, said the way Floodgate
// says everything else: one line that names the option or the argument.
std::string describe(const CLI::ParseError& e, const CLI::App& app)
{
    const std::string what = e.what();
    const auto chain = chosen(app);
    const std::string see = " (see " + commandName(chain) + " --help)";
    // (CLI11 names some errors after the command, not the error: asked by type.)
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
        const auto colon = what.find(": ");
        std::istringstream extras(colon == std::string::npos ? what : what.substr(colon + 2));
        std::string first, option;
        for (std::string word; extras >> word;) {
            if (first.empty())
                first = word;
            if (option.empty() && word.starts_with("-"))
                option = word.substr(0, word.find('='));
        }
        if (!option.empty()) {
            if (!chain.empty() && app.get_option_no_throw(option))
                return option + " does not apply to " + commandName(chain) + see;
            return "unknown option " + option + see;
        }
        if (chain.empty())
            return "unknown command \"" + first + "\"" + see;
        return "unexpected argument \"" + first + "\"" + see;
    }
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.ends_with(" missing"))
        return what.substr(0, what.find(':')) + " needs a value";
    if (dynamic_cast<const CLI::RequiredError*>(&e) || dynamic_cast<const CLI::ExcludesError*>(&e))
        return commandName(chain) + ": " + what + see;
    return what;
}

// `words` after `lead`, wrapped at `width` columns; the lines after the
// first start under the first word.
std::string wrapped(const std::string& lead, const std::string& words, std::size_t width)
{
    std::string out = lead, line = lead;
    std::istringstream in(words);
    for (std::string word; in >> word;) {
        if (line.size() > lead.size() && line.size() + 1 + word.size() > width) {
            out += "\n" + std::string(lead.size(), ' ');
            line.assign(lead.size(), ' ');
        } else if (line.size() > lead.size()) {
            out += ' ';
            line += ' ';
        }
        out += word;
        line += word;
    }
    return out;
}

// --help's footer: the commands, the documents, and the exit codes from their table.
std::string footer()
{
    std::string codes;
    for (const ExitCodeRow& row : exitCodeTable())
        codes += (codes.empty() ? "" : ", ") + std::to_string(exitStatus(row.code)) + " " + std::string(row.brief);
    return "Commands work on the database (--db, db in the configuration file, or the default) through the\n"
           "same storage code and audit trail as the console and the admin API; a running Floodgate on that\n"
           "database applies a change " + changeAppliedWithin() + ". `floodgate COMMAND --help` tells each one's arguments;\n"
           "CLI.md has examples and the configuration file's format; SIGHUP reloads it. The guides (USER_GUIDE,\n"
           "CLI, INTERFACE, CLUSTER, INTEGRATIONS with the nginx recipe, PACKAGING) are installed in\n"
           "/usr/share/doc/floodgate (zless reads them), and are docs/ in the source.\n"
           "\n"
           + wrapped("exit codes: ", codes, 100);
}

// --help and --config: rows of the table that CLI11 makes itself.
bool cli11Own(const OptionRow& row)
{
    return row.name == "help" || row.name == "config";
}

// One process option of the table, on floodgate itself or on a command.
CLI::Option* addOption(CLI::App& app, const OptionRow& row, Options& o)
{
    CLI::Option* opt = nullptr;
    if (row.arity == OptionArity::Flag) {
        opt = flag(app, row.option(), o.*row.access.flag, helpText(row));
    } else {
        Apply apply = [&o, read = row.apply](const std::string& v) { return read(v, o); };
        opt = row.arity == OptionArity::One ? valueOption(app, row.option(), std::string(row.value), helpText(row), std::move(apply))
                                            : repeatedOption(app, row.option(), std::string(row.value), helpText(row), std::move(apply));
    }
    return opt->configurable(row.inFile);
}

} // namespace

namespace {

std::optional<std::string> parseCommandLine(int argc, char** argv, Options& o)
{
    CLI::App app("floodgate: the console window, or --headless: engine + listener + admin API with no window,\n"
                 "or one of the commands below.",
                 "floodgate");
    app.get_formatter()->column_width(30);
    app.footer(footer());
    app.require_subcommand(0, 1);
    // The configuration file: read when it exists (or the one --config
    // names, which must exist); its settings are the long options'.
    const auto configFile = std::make_shared<ConfigFile>(app);
    app.config_formatter(configFile);
    const OptionRow& configRow = option("config");
    app.set_help_flag("-h," + option("help").option(), std::string(option("help").help));
    CLI::Option* config = app.set_config(configRow.option(), DefaultConfigFile, helpText(configRow));
    // The file is read here, in --config's check, which CLI11 runs before
    // it opens the file itself (load()). Application index 0: only the
    // --config that counts (the last) is checked, and read.
    config->type_name(std::string(configRow.value))->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    config->transform(CLI::Validator(
                          [configFile, config](std::string& v) -> std::string {
                              if (v.empty())
                                  throw CLI::ValidationError("--config needs a file (or off)");
                              if (v == "off") {
                                  v.clear();
                                  return {};
                              }
                              // CLI11 checks a value more than once; a refusal is thrown the
                              // first time only, where CLI11 keeps it until --help is looked for.
                              if (configFile->tried(v))
                                  return {};
                              // A FileError, not a ValidationError: CLI11 passes it on
                              // (after --help has been looked for) and the line is failure().
                              if (auto why = outOfBounds("--config", v)) {
                                  configFile->refuse(v, *why);
                                  throw CLI::FileError(*why);
                              }
                              if (!configFile->load(v, config->count() > 0))
                                  throw CLI::FileError(*configFile->failure());
                              return {};
                          },
                          std::string(), std::string())
                          .application_index(0));

    // ---- the process options (app/OptionTable.cpp); --help and --config are CLI11's, set up above ----
    for (const OptionRow& row : optionTable())
        if (!cli11Own(row))
            addOption(app, row, o);
    // Every command takes the database's options, from the command line or the file.
    std::string databaseKeys;
    for (const OptionRow& row : optionTable())
        if (row.scope == OptionScope::Everywhere && row.inFile)
            databaseKeys += (databaseKeys.empty() ? "" : " and ") + std::string(row.name);
    auto databaseOptions = [&](CLI::App& a) {
        for (const OptionRow& row : optionTable())
            if (row.scope == OptionScope::Everywhere && !cli11Own(row))
                addOption(a, row, o);
    };

    // ---- the commands (docs/CLI.md) ----
    // Every command, and every group of commands, names its database the same way.
    auto command = [&](CLI::App& parent, const std::string& name, const std::string& help) {
        CLI::App* c = parent.add_subcommand(name, help);
        c->get_formatter()->column_width(30);
        databaseOptions(*c);
        // `floodgate block 1.2.3.4 --config FILE`: the same file as before the command's name.
        c->add_option_function<std::string>(
             configRow.option(),
             [config](const std::string& v) {
                 config->clear();
                 config->add_result(v);
             },
             "read " + databaseKeys + " from FILE   default " + defaultText(configRow))
            ->type_name(std::string(configRow.value))
            ->trigger_on_parse();
        return c;
    };
    auto fileCommand = [&](CLI::App& parent, const std::string& name, const std::string& help, const std::string& fileHelp) {
        CLI::App* c = command(parent, name, help);
        c->add_option("FILE", o.args.file, fileHelp)->required();
        return c;
    };
    auto listCommand = [&](const std::string& name, const char* list, bool add) {
        CLI::App* c = command(app, name, add ? std::string("put ADDRESS|CIDR on the ") + list + " (replaces an entry for the same range)"
                                             : std::string("take ADDRESS|CIDR off the ") + list);
        c->add_option("ADDRESS", o.args.target, "an IPv4 or IPv6 address or a CIDR range: 203.0.113.7, 2001:db8::/48")->required();
        if (add) {
            c->add_option("--ttl", o.args.ttl, "how long it applies: 30m, 24h, 7d, 2w, a number of seconds, or permanent\ndefault 7d (as the admin API)")
                ->type_name("DURATION|permanent")
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
            c->add_option("--reason", o.args.reason, "why, for the audit trail and the console")
                ->type_name("TEXT")
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        }
    };
    listCommand("block", "blocklist", true);
    listCommand("safelist", "safelist", true);
    listCommand("unblock", "blocklist", false);
    listCommand("unsafelist", "safelist", false);

    CLI::App* lists = command(app, "lists", "the safelist and the blocklist: show, import, export");
    {
        CLI::App* show = command(*lists, "show", "the entries in force with the time each has left (both lists, or one)");
        show->add_option("LIST", o.args.target, "blocklist or safelist")->check([](const std::string& v) -> std::string {
            return v == "blocklist" || v == "safelist" ? std::string() : shownValue(v, true) + " is not a list: blocklist or safelist";
        });
        flag(*show, "--json", o.args.json, "as JSON, in the shape of GET /api/v1/lists/LIST");
        fileCommand(*lists, "import", "read a list file: all or nothing; each rejected line is named with why",
                    "a .csv, .json or .txt file (one address or range a line); another name: by its content");
        fileCommand(*lists, "export", "write both lists to a .csv or .json file (by its extension)", "a .csv or .json file (by its extension)");
    }

    command(app, "token", "print the admin API's bearer token");
    fileCommand(app, "cluster-key", "create a new cluster key (docs/CLUSTER.md): copy it to every node, give each --cluster-key FILE",
                "where to write it (mode 0600; never over an existing file)");

    CLI::App* tiers = command(app, "tiers", "the API customers' tiers: show, set, remove");
    {
        CLI::App* show = command(*tiers, "show", "each tier with its levels");
        flag(*show, "--json", o.args.json, "as JSON, in the shape of GET /api/v1/tiers");
        CLI::App* set = command(*tiers, "set", "create a tier or replace its levels: floodgate tiers set Pro 100/1m 5000/1h\n"
                                               "change one level, keep the others: floodgate tiers set Pro --level 200/1m");
        set->add_option("NAME", o.args.target, "the tier's name (matched case-insensitively: pro is Pro)")->required();
        // LEVELS or --level, not both: said by the command (one line naming both).
        set->add_option("LEVELS", o.args.levels, "LIMIT/PERIOD...: 100/1m, 5000/1h, 20000/1d; they replace every level");
        set->add_option("--level", o.args.level, "repeatable; changes or adds the level of that period, keeps the others")
            ->type_name("LIMIT/PERIOD")
            ->allow_extra_args(false);
        CLI::App* remove = command(*tiers, "remove", "remove a tier (refused while customers are on it)");
        remove->add_option("NAME", o.args.target, "the tier's name (matched case-insensitively)")->required();
    }

    CLI::App* customers = command(app, "customers", "the API customers: show, set, key, remove");
    {
        CLI::App* show = command(*customers, "show", "each customer with its tier, overrides and keys");
        flag(*show, "--json", o.args.json, "as JSON, in the shape of GET /api/v1/customers");
        CLI::App* set = command(*customers, "set", "create a customer or change it: floodgate customers set acme --tier Pro\n"
                                                   "a new customer gets an API key, printed this once");
        set->add_option("ID", o.args.target, "the customer's id (what a trusted proxy names it by)")->required();
        set->add_option("--tier", o.args.tier, "the customer's tier (it must exist)")->type_name("NAME")->required()->multi_option_policy(
            CLI::MultiOptionPolicy::TakeLast);
        set->add_option("--name", o.args.name, "a name to show   default: the one stored, if any")
            ->type_name("TEXT")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        CLI::Option* overrides = set->add_option("--override", o.args.overrides,
                                                 "repeatable; replaces the tier's level of the same period, adds the others\n"
                                                 "default: the overrides stored, if any")
                                     ->type_name("LIMIT/PERIOD")
                                     ->allow_extra_args(false);
        flag(*set, "--no-overrides", o.args.noOverrides, "remove the overrides stored")->excludes(overrides);
        CLI::App* key = command(*customers, "key", "give a customer a new API key, printed this once; its other keys are revoked\n"
                                                   "rotate with an overlap: floodgate customers key acme --keep-old 24h");
        key->add_option("ID", o.args.target, "the customer's id")->required();
        CLI::Option* keepOld = key->add_option("--keep-old", o.args.keepOld, "the other keys stay valid this long (7d, 24h, 30m)")
                                   ->type_name("DURATION");
        key->add_option("--revoke", o.args.revoke, "revoke this key (its id, as customers show lists it) instead")
            ->type_name("KEY_ID")
            ->excludes(keepOld);
        CLI::App* remove = command(*customers, "remove", "remove a customer (its clients are counted as anyone else again)");
        remove->add_option("ID", o.args.target, "the customer id")->required();
    }

    CLI::App* rules = command(app, "rules", "the rules document (the JSON of GET /api/v1/rules): show, export, import");
    {
        command(*rules, "show", "print the rules document");
        fileCommand(*rules, "export", "write the rules document to FILE", "the JSON file to write");
        fileCommand(*rules, "import", "apply a rules document: the sections it has replace the stored ones\n(as PUT /api/v1/rules does); all or nothing",
                    "a JSON file, e.g. one written by rules export");
    }

    CLI::App* explain = command(app, "explain", "ask a running Floodgate about one client: its state, each level's count, limit,\nremaining and reset, the list entries that cover it, its last refusals and why");
    explain->add_option("ADDRESS", o.args.target, "the client's IPv4 or IPv6 address")->required();
    valueOption(*explain, "--admin", "ADDR:PORT", "the running instance's admin API   default " + defaultText(option("admin")),
                [&](const std::string& v) { return readAdminAddress(v, o); });
    explain->add_option("--token", o.args.token, "the admin API's bearer token   default: read from the database")
        ->type_name("TOKEN")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    CLI::App* replay = command(app, "replay", "run access logs through the rules, as the live listener would decide them (docs/CLI.md)");
    replay->add_option("ACCESS_LOG", o.replay.logs, "one or more access logs, oldest first (.gz read directly)")->required();
    CLI::Option* replayDb = replay->get_option("--db");
    CLI::Option* replayRules = valueOption(*replay, "--rules", "FILE.json", "the rules document to try (the JSON of GET /api/v1/rules)\ninstead of the database's rules",
                                           [&](const std::string& v) -> std::optional<std::string> {
                                               if (v.empty())
                                                   return "--rules needs a file";
                                               o.replay.rulesFile = v;
                                               return std::nullopt;
                                           });
    replayRules->excludes(replayDb);
    valueOption(*replay, "--format", "FORMAT", "auto|combined|common|nginx-json|floodgate-csv   default auto", [&](const std::string& v) -> std::optional<std::string> {
        if (v != "auto" && v != "combined" && v != "common" && v != "nginx-json" && v != "floodgate-csv")
            return "--format " + shownValue(v) + ": expected auto, combined, common, nginx-json or floodgate-csv";
        o.replay.format = v;
        return std::nullopt;
    });
    repeatedOption(*replay, "--trusted-proxy", "CIDR", "repeatable; X-Forwarded-For in the log is believed only from these peers",
                   [&](const std::string& v) { return appendTrustedProxy(v, o.replay.trustedProxies); });
    replay->add_option("--customer-param", o.replay.customerParam,
                       "a query parameter of the logged requests naming the customer each proved when served\n"
                       "(a log keeps no API key); without it API customers replay as anonymous clients")
        ->type_name("NAME")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    replay->add_option("--from", o.replay.from, "skip the lines before this time")->type_name("TIME")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    replay->add_option("--to", o.replay.to, "skip the lines after this time")->type_name("TIME")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    flag(*replay, "--json", o.replay.json, "the report as JSON");
    replay->add_option("--decisions", o.replay.decisionsOut, "write one CSV row per request to this file")
        ->type_name("OUT.csv")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        o.help = true;
        o.helpText = app.help();
        return std::nullopt;
    } catch (const ValueRefused& e) {
        // A value the file gave: its place, and the setting as the file names it.
        if (auto place = configFile->placeOf(e.option(), e.value())) {
            std::string what = e.what();
            if (what.starts_with("--"))
                what.erase(0, 2);
            return *place + ": " + what;
        }
        return e.what();
    } catch (const CLI::FileError&) {
        // The configuration file cannot be read (load() said why), or is
        // too long a path for one.
        if (const auto& failure = configFile->failure())
            return *failure;
        return "--config " + configFile->requested() + ": cannot read it";
    } catch (const CLI::ParseError& e) {
        return describe(e, app);
    }
    if (configFile->read())
        o.configFile = configFile->path();

    const auto chain = chosen(app);
    if (chain.empty())
        return checkOptions(o);
    for (const CLI::App* c : chain)
        o.command.push_back(c->get_name());
    const CLI::App* last = chain.back();
    if (const auto subs = last->get_subcommands([](const CLI::App*) { return true; }); !subs.empty()) {
        std::string names;
        for (std::size_t i = 0; i < subs.size(); ++i)
            names += (i == 0 ? "" : i + 1 == subs.size() ? " or " : ", ") + subs[i]->get_name();
        return commandName(chain) + " needs a command: " + names + " (see " + commandName(chain) + " --help)";
    }
    // The serving options mean nothing to a command: said, not ignored. (The
    // configuration file's are the server's: a command takes db and
    // db-timeout from it and leaves the rest.)
    for (const CLI::Option* opt : app.get_options()) {
        const OptionRow* row = findOption(std::string_view(opt->get_name()).substr(2));
        if (configFile->givenOnCommandLine(*opt) && !(row && row->scope == OptionScope::Everywhere))
            return opt->get_name() + " does not apply to " + commandName(chain) + " (see " + commandName(chain) + " --help)";
    }
    // replay --rules FILE.json without --db tries the rules on the defaults
    // (docs/CLI.md): the file's database is not laid under them.
    if (o.command.front() == "replay" && !o.replay.rulesFile.empty() && !configFile->givenOnCommandLine(*app.get_option("--db"))
        && !replay->get_option("--db")->count())
        o.db.clear();
    return std::nullopt;
}

} // namespace

std::string changeAppliedWithin()
{
    return "within " + std::to_string(Core::Tuning::changeAppliedWithinMs / Core::SECOND) + " s";
}

std::optional<std::string> parseOptions(int argc, char** argv, Options& o)
{
    // First without DefaultConfigFile ("--config off" first, so a --config
    // given wins): the console is one user's desktop program, whose
    // database is theirs; the file in /etc configures the service
    // (--headless), --check-config and the commands, which an operator runs
    // on the service's database. The console reads a file only from --config.
    std::vector<char*> args(argv, argv + argc);
    std::string configOption = "--config", off = "off";
    args.insert(args.begin() + std::min<std::ptrdiff_t>(1, argc), {configOption.data(), off.data()});
    // Whatever a parser quoted of a value (a NUL, a line break) is written
    // \xHH: the error stays one whole line.
    auto said = [](std::optional<std::string> error) { return error ? std::optional<std::string>(printable(*error)) : error; };
    auto error = parseCommandLine(int(args.size()), args.data(), o);
    if (error || o.help || o.version || (o.command.empty() && !o.headless && !o.checkConfig))
        return said(std::move(error));
    o = Options{};
    return said(parseCommandLine(argc, argv, o));
}

} // namespace Floodgate::App
