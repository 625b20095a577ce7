// SPDX-License-Identifier: GPL-3.0-or-later
// Strict reading of the JSON the API receives (private to engine/wire):
// every key must be known, every value of the right type and range, and the
// first problem names its field ("levels[1].period must be > 0").
#pragma once

#include "wire/Codec.h"

#include <cmath>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Wire::Codec {

inline bool fail(std::string* why, std::string message)
{
    if (why)
        *why = std::move(message);
    return false;
}

inline std::string join(const std::string& path, std::string_view key)
{
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

inline std::string indexed(const std::string& path, std::size_t i)
{
    return path + "[" + std::to_string(i) + "]";
}

// Strict reading of one JSON object: every key must be known, every value
// of the right type and range; the first problem names its field.
class Reader {
public:
    Reader(const Json& value, std::string path, std::string* why) : m_value(value), m_path(std::move(path)), m_why(why) {}

    bool isObject(std::initializer_list<std::string_view> known) { return isObject(std::span<const std::string_view>(known.begin(), known.size())); }
    bool isObject(std::span<const std::string_view> known)
    {
        if (!m_value.isObject())
            return fail(m_why, (m_path.empty() ? std::string("the body") : m_path) + " must be a JSON object");
        for (const auto& [key, v] : m_value.asObject()) {
            bool ok = false;
            for (auto k : known)
                ok = ok || k == key;
            if (!ok)
                return fail(m_why, join(m_path, key) + " is not a known field");
        }
        return true;
    }
    const Json* get(std::string_view key) const { return m_value.find(key); }
    std::string path(std::string_view key) const { return join(m_path, key); }

    bool string(std::string_view key, std::string& out, bool required = false, std::size_t maxLength = 200)
    {
        const Json* v = get(key);
        if (!v || v->isNull())
            return !required || fail(m_why, path(key) + " is required");
        if (!v->isString())
            return fail(m_why, path(key) + " must be a string");
        if (v->asString().size() > maxLength)
            return fail(m_why, path(key) + " must be at most " + std::to_string(maxLength) + " characters");
        out = v->asString();
        return true;
    }
    bool boolean(std::string_view key, bool& out)
    {
        const Json* v = get(key);
        if (!v)
            return true;
        if (!v->isBool())
            return fail(m_why, path(key) + " must be true or false");
        out = v->asBool();
        return true;
    }
    template <class Int>
    bool integer(std::string_view key, Int& out, std::int64_t min, std::int64_t max, bool required = false)
    {
        const Json* v = get(key);
        if (!v)
            return !required || fail(m_why, path(key) + " is required");
        // A whole number beyond 64 bits (99999999999999999999, 1e400) is a
        // double here: out of range like any other, not "not a number".
        if (!v->isNumber() || (!v->isInteger() && v->asNumber() != std::trunc(v->asNumber())))
            return fail(m_why, path(key) + " must be a whole number");
        const std::int64_t n = v->asInteger();  // saturates
        if (n < min || v->asNumber() < double(min))
            return fail(m_why, path(key) + (min == 1 ? std::string(" must be > 0") : " must be >= " + std::to_string(min)));
        if (n > max || v->asNumber() > double(max))
            return fail(m_why, path(key) + " must be <= " + std::to_string(max));
        out = Int(n);
        return true;
    }
    // A duration > 0. An absent one keeps its default; 0 is refused rather
    // than read as "the default" (a lockout of 0 stored as the period).
    bool duration(std::string_view key, Millis& out, bool required = false, const char* whenAbsent = nullptr)
    {
        const Json* v = get(key);
        if (!v)
            return !required || fail(m_why, path(key) + " is required");
        if (whenAbsent && v->isNumber() && v->asNumber() == 0)
            return fail(m_why, path(key) + " must be > 0 (leave it out for " + whenAbsent + ")");
        std::string why;
        const auto d = parseDuration(*v, &why);
        if (!d)
            return fail(m_why, path(key) + " " + why);
        out = *d;
        return true;
    }
    bool strings(std::string_view key, std::vector<std::string>& out)
    {
        const Json* v = get(key);
        if (!v)
            return true;
        if (!v->isArray())
            return fail(m_why, path(key) + " must be an array of strings");
        std::vector<std::string> list;
        for (std::size_t i = 0; i < v->asArray().size(); ++i) {
            const Json& s = v->asArray()[i];
            if (!s.isString() || s.asString().empty())
                return fail(m_why, indexed(path(key), i) + " must be a non-empty string");
            list.push_back(s.asString());
        }
        out = std::move(list);
        return true;
    }
    const Json* array(std::string_view key, bool required = false)
    {
        const Json* v = get(key);
        if (!v) {
            if (required)
                fail(m_why, path(key) + " is required");
            return nullptr;
        }
        if (!v->isArray()) {
            fail(m_why, path(key) + " must be an array");
            return nullptr;
        }
        return v;
    }

private:
    const Json& m_value;
    std::string m_path;
    std::string* m_why;
};

} // namespace Floodgate::Wire::Codec
