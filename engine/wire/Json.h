// SPDX-License-Identifier: GPL-3.0-or-later
// A small JSON value for the admin API, the audit trail and list import and
// export: strict RFC 8259 parsing with bounds (depth, keys per object,
// values) and an error that says where, compact output, objects that keep
// their key order. Plain C++20; not on the request path.
#pragma once

#include "core/Tuning.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace Floodgate::Wire {

// What one JSON document may hold; beyond, the parse fails naming the bound.
// Duplicate keys are found in linear time, so the cost of a parse follows
// the size of the text whatever its shape.
struct JsonLimits {
    int maxDepth = Core::Tuning::jsonMaxDepth;
    std::size_t maxKeysPerObject = Core::Tuning::jsonMaxKeysPerObject;
    std::size_t maxValues = Core::Tuning::jsonMaxValues;
};

class Json {
public:
    using Array = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>;  // in insertion order
    enum class Type { Null, Bool, Integer, Number, String, Array, Object };

    Json() = default;  // null
    Json(std::nullptr_t) {}
    Json(bool b) : m_value(b) {}
    Json(int v) : m_value(std::int64_t(v)) {}
    Json(unsigned v) : m_value(std::int64_t(v)) {}
    Json(long v) : m_value(std::int64_t(v)) {}
    Json(long long v) : m_value(std::int64_t(v)) {}
    // Above INT64_MAX an unsigned value is kept as a double (the nearest one)
    // rather than wrapping to a negative number.
    Json(unsigned long v) : Json((unsigned long long)v) {}
    Json(unsigned long long v)
    {
        if (v <= std::uint64_t(INT64_MAX))
            m_value = std::int64_t(v);
        else
            m_value = double(v);
    }
    Json(double v) : m_value(v) {}
    Json(const char* s) : m_value(std::string(s)) {}
    Json(std::string s) : m_value(std::move(s)) {}
    Json(std::string_view s) : m_value(std::string(s)) {}
    Json(Array a) : m_value(std::move(a)) {}
    Json(Object o) : m_value(std::move(o)) {}

    static Json object() { return Json(Object{}); }
    static Json array() { return Json(Array{}); }

    using Limits = JsonLimits;

    // Numbers: an integer that fits 64 bits is exact; any other number is a
    // double, and one beyond the double range (1e400) is +-infinity, so the
    // field that reads it says it is out of range (JSON sets no limit; the
    // field does). Whole-valued numbers are integers: 1e3 and 100.0 are 1000
    // and 100.
    //
    // Strict parse of a whole document. On failure: nullopt and *error says
    // what and at which byte offset: "malformed JSON: expected ':' at offset
    // 12" for text that is not JSON, "more than 1000 keys in one object (the
    // limit) at offset 9000" for a document beyond `limits`.
    static std::optional<Json> parse(std::string_view text, std::string* error = nullptr, const Limits& limits = {});

    Type type() const { return Type(m_value.index()); }
    bool isNull() const { return type() == Type::Null; }
    bool isBool() const { return type() == Type::Bool; }
    bool isInteger() const { return type() == Type::Integer; }
    bool isNumber() const { return type() == Type::Integer || type() == Type::Number; }
    bool isString() const { return type() == Type::String; }
    bool isArray() const { return type() == Type::Array; }
    bool isObject() const { return type() == Type::Object; }
    const char* typeName() const;  // "null", "a boolean", "a number", "a string", "an array", "an object"

    bool asBool() const { return std::get<bool>(m_value); }
    std::int64_t asInteger() const;  // exact integers; a double converts, saturating beyond 64 bits
    double asNumber() const;
    const std::string& asString() const { return std::get<std::string>(m_value); }
    const Array& asArray() const { return std::get<Array>(m_value); }
    Array& asArray() { return std::get<Array>(m_value); }
    const Object& asObject() const { return std::get<Object>(m_value); }
    Object& asObject() { return std::get<Object>(m_value); }

    // Object access: find returns nullptr when absent; set replaces or appends.
    const Json* find(std::string_view key) const;
    Json& set(std::string key, Json value);
    // Array append.
    Json& push(Json value);

    // Compact text. Numbers are written with std::to_chars: never in the C
    // library's locale (a console under de_DE would write 0,5). An infinite
    // number is written 1e999 / -1e999, which reads back as itself.
    std::string dump() const;
    void dumpTo(std::string& out) const;

    friend bool operator==(const Json&, const Json&) = default;

private:
    std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> m_value;
};

// Appends `s` as a JSON string literal: quotes, escapes, valid UTF-8 passed
// through, and each byte that starts no valid UTF-8 character written as
// U+FFFD (the one string escaper: every JSON Floodgate writes goes here).
void appendJsonString(std::string& out, std::string_view s);

} // namespace Floodgate::Wire
