// SPDX-License-Identifier: GPL-3.0-or-later
// One row per option of the process (docs/INTERFACE.md's command line): its
// name (also its configuration-file key), its value, its help, its default,
// whether the configuration file may set it, what SIGHUP does when it
// changes, and how its value is read into Options. CLI11's registration
// (Options.cpp), the configuration file's reader, --help, SIGHUP's reload
// (Runtime::reload) and the man page's OPTIONS, CONFIGURATION FILE and
// docs/CLI.md's option table (app/DocText.h) all read this table, so a new
// option is a member of Options with its default plus one row here.
//
// Defaults are stated once: by the member's initialiser in Options.h, read
// back through the row's accessor (defaultText()); a default that is worked
// out at start (the database's path, the number of cores) is described in
// the row instead. The commands' own arguments (--ttl, --tier, replay's
// options) are not process options and stay with their commands.
#pragma once

#include "app/Options.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace Floodgate::App {

enum class OptionArity : std::uint8_t {
    Flag,      // --dry-run; in the file: true or false
    One,       // --listen ADDR:PORT; given twice, the last counts
    Repeated,  // --trusted-proxy CIDR, as often as needed
};

// What SIGHUP (which parses the configuration file and the same command
// line again) does when the option's value changed.
enum class Reload : std::uint8_t {
    Live,     // applied at once
    Restart,  // named as needing a restart; the running value is kept
    Fixed,    // command line only: the command line SIGHUP reads is the same, so it cannot change
};

// Who takes the option besides the console and --headless.
enum class OptionScope : std::uint8_t {
    Serving,     // the console and --headless only: refused by a command
    Everywhere,  // every command too (the database's options)
};

// An option's default as --help, the man page and docs/CLI.md say it.
struct OptionDefault {
    enum class Kind : std::uint8_t { None, Value, Described };
    Kind kind = Kind::None;
    std::string_view text;  // Described: what it is, "the number of cores"
};
inline constexpr OptionDefault NO_DEFAULT{OptionDefault::Kind::None, {}};
// Options{}'s value, read through the row's accessor.
inline constexpr OptionDefault VALUE_DEFAULT{OptionDefault::Kind::Value, {}};
constexpr OptionDefault describedDefault(std::string_view text)
{
    return {OptionDefault::Kind::Described, text};
}

// Reads, compares and copies the members of Options an option fills.
struct OptionAccess {
    bool (*same)(const Options&, const Options&) = nullptr;
    void (*take)(Options& into, const Options& from) = nullptr;  // SIGHUP: a Live option's new value
    std::string (*text)(const Options&) = nullptr;              // the value as a default is shown; null: none
    bool Options::*flag = nullptr;                              // a Flag's member, CLI11's target
};

// The value as --help and the documents show a default.
std::string valueText(bool v);
std::string valueText(const std::string& v);
std::string valueText(unsigned v);
std::string valueText(int v);
std::string valueText(double v);
std::string valueText(const HostPort& v);
std::string valueText(const std::optional<HostPort>& v);  // "off" when none

// The accessor of the members Members... (a value shown only for one member).
template <auto... Members>
constexpr OptionAccess optionAccess()
{
    OptionAccess a;
    a.same = [](const Options& x, const Options& y) { return ((x.*Members == y.*Members) && ...); };
    a.take = [](Options& into, const Options& from) { ((into.*Members = from.*Members), ...); };
    if constexpr (sizeof...(Members) == 1) {
        constexpr auto member = (Members, ...);
        using T = std::remove_cvref_t<decltype(std::declval<Options&>().*member)>;
        if constexpr (std::is_same_v<T, bool>)
            a.flag = member;
        if constexpr (requires(const T& v) { valueText(v); })
            a.text = [](const Options& x) { return valueText(x.*member); };
    }
    return a;
}

// Checks one value and stores it in `o`; the one line to print when refused.
using OptionApply = std::optional<std::string> (*)(const std::string& value, Options& o);

struct OptionRow {
    // Every part given: a row without its reload class does not compile.
    constexpr OptionRow(std::string_view name_, OptionArity arity_, std::string_view value_, std::string_view help_, OptionDefault def_,
                        bool inFile_, Reload reload_, OptionScope scope_, OptionApply apply_, OptionAccess access_, std::string_view man_)
        : name(name_), arity(arity_), value(value_), help(help_), def(def_), inFile(inFile_), reload(reload_), scope(scope_), apply(apply_),
          access(access_), man(man_)
    {
    }

    std::string_view name;   // "listen": --listen, and its key in the configuration file when inFile
    OptionArity arity;
    std::string_view value;  // "ADDR:PORT|off"; empty for a flag
    std::string_view help;   // --help's text ('\n' starts a line), without the default
    OptionDefault def;
    bool inFile;             // the configuration file may set it (under `name`)
    Reload reload;
    OptionScope scope;
    OptionApply apply;       // One and Repeated: reads a value (null for a flag, --help, --config)
    OptionAccess access;
    std::string_view man;    // the man page's paragraph (scdoc(5) markup), without the default

    std::string option() const { return "--" + std::string(name); }
};

// Every option, in --help's order.
std::span<const OptionRow> optionTable();
const OptionRow* findOption(std::string_view name);  // by name without "--"
const OptionRow& option(std::string_view name);      // one that exists

// The default as text ("127.0.0.1:8080", "the number of cores"); empty: none.
std::string defaultText(const OptionRow& row);
// --help's text: the help and the default ("   default X").
std::string helpText(const OptionRow& row);

// The checks some options share with a command's own option: explain's
// --admin (an address, never off) and replay's --trusted-proxy.
std::optional<std::string> readAdminAddress(const std::string& value, Options& o);
std::optional<std::string> appendTrustedProxy(const std::string& value, std::vector<Core::Cidr>& into);
// "N" seconds, positive, at most 10^6: --db-timeout, --seconds, --screenshot-delay.
std::optional<std::string> positiveSeconds(const std::string& name, const std::string& value, double& out);

} // namespace Floodgate::App
