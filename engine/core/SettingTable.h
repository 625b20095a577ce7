// SPDX-License-Identifier: GPL-3.0-or-later
// One row per scalar setting of the rules document (a bot option, the
// escalation, the settings): its name in the API and in the database, what
// it may be, what it means, and where it lives in EngineConfig. The JSON
// codec, the database tables, validate() and the console's form all read
// this table, so adding a setting is a member with its default in Rules.h
// plus one row here (and, for the form, its widget).
//
// The defaults are stated once, by the members' initialisers in Rules.h;
// the table reads them back through a row's accessor (defaultNumber()).
#pragma once

#include "core/Rules.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace Floodgate::Core {

// Where a setting's key lives in the rules document.
enum class SettingGroup : std::uint8_t {
    Document,    // at the top: "cookieless_only"
    Escalation,  // in "escalation": checked by validate() only while escalation is on
    Settings,    // in "settings"
};

enum class SettingKind : std::uint8_t {
    Integer,   // a whole number in [min, max]; with choices, one of them
    Flag,      // true or false; 0 or 1 in the database
    Duration,  // milliseconds here and in the database, seconds in JSON; > 0 (the longest is the wire's)
    Text,      // a string of at most `max` characters
    Choice,    // one of `choices`, written by its name in JSON and in the database
    Ranges,    // a list of address ranges, kept in a table of its own (no database key)
};

// What validate() holds an Integer to; the API refuses anything outside
// [min, max] in a request either way.
enum class SettingBounds : std::uint8_t {
    Both,   // outside [min, max] means nothing ("must be 1-128")
    Floor,  // max only caps what one request may ask for ("must be > 0")
};

struct SettingChoice {
    std::int64_t value;     // the number, or the enum's value
    std::string_view name;  // Choice: how JSON and the database spell it; Integer: empty
};

// Reads and writes the member a row stands for. Integer, Flag, Duration and
// Choice use number (the value, 0/1, milliseconds, the enum's value); Text
// uses text; Ranges uses ranges.
struct SettingAccess {
    std::int64_t (*number)(const EngineConfig&) = nullptr;
    void (*setNumber)(EngineConfig&, std::int64_t) = nullptr;
    const std::string& (*text)(const EngineConfig&) = nullptr;
    void (*setText)(EngineConfig&, std::string) = nullptr;
    const std::vector<Cidr>& (*ranges)(const EngineConfig&) = nullptr;
    void (*setRanges)(EngineConfig&, std::vector<Cidr>) = nullptr;
};

// The accessor of EngineConfig::*Part's member *Member.
template <auto Part, auto Member>
constexpr SettingAccess settingAccess()
{
    using T = std::remove_cvref_t<decltype(std::declval<EngineConfig&>().*Part.*Member)>;
    SettingAccess a;
    if constexpr (std::is_same_v<T, std::string>) {
        a.text = [](const EngineConfig& c) -> const std::string& { return c.*Part.*Member; };
        a.setText = [](EngineConfig& c, std::string v) { c.*Part.*Member = std::move(v); };
    } else if constexpr (std::is_same_v<T, std::vector<Cidr>>) {
        a.ranges = [](const EngineConfig& c) -> const std::vector<Cidr>& { return c.*Part.*Member; };
        a.setRanges = [](EngineConfig& c, std::vector<Cidr> v) { c.*Part.*Member = std::move(v); };
    } else {
        a.number = [](const EngineConfig& c) { return std::int64_t(c.*Part.*Member); };
        a.setNumber = [](EngineConfig& c, std::int64_t v) {
            if constexpr (std::is_same_v<T, bool>)
                c.*Part.*Member = v != 0;
            else
                c.*Part.*Member = T(v);
        };
    }
    return a;
}

struct SettingRow {
    SettingGroup group;
    std::string_view key;     // in its group of the rules document: "ipv6_prefix"
    std::string_view column;  // its row in the database's settings table; empty for Ranges
    SettingKind kind;
    std::int64_t min = 0;     // Integer: the range; Text: max is the longest
    std::int64_t max = 0;
    SettingBounds bounds = SettingBounds::Both;
    std::span<const SettingChoice> choices = {};  // Choice; an Integer limited to a few values
    std::string_view help;    // what it does, for people: the console's tooltip
    SettingAccess access;

    // "settings.ipv6_prefix", "escalation.ban", "cookieless_only": how messages name it.
    std::string path() const;
    // The value of a default-constructed EngineConfig (Rules.h's initialiser).
    std::int64_t defaultNumber() const;
    // Choice: the value named `name`; the name of `value`.
    std::optional<std::int64_t> choiceValue(std::string_view name) const;
    std::string_view choiceName(std::int64_t value) const;
    // "429, 503 or 403", "\"query\", \"header\" or \"either\"".
    std::string choiceList() const;
    // nullopt when `config`'s value is one the row allows; otherwise what is
    // wrong, naming the field ("settings.ipv6_prefix must be 1-128").
    std::optional<std::string> check(const EngineConfig& config) const;
};

// Every row, in the order the rules document writes them.
std::span<const SettingRow> settingTable();
// The row `path()` names ("settings.ipv6_prefix"); nullptr when none does.
const SettingRow* findSetting(std::string_view path);
// The row stored under `column` in the database; nullptr when none is.
const SettingRow* findSettingColumn(std::string_view column);

} // namespace Floodgate::Core
