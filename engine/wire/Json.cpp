// SPDX-License-Identifier: GPL-3.0-or-later
#include "wire/Json.h"

#include "core/Utf8.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_set>

namespace Floodgate::Wire {

using namespace Core;

namespace {

class Parser {
public:
    Parser(std::string_view text, const Json::Limits& limits) : m_text(text), m_limits(limits) {}

    std::optional<Json> document(std::string* error)
    {
        skipSpace();
        std::optional<Json> v = value(0);
        if (v) {
            skipSpace();
            if (m_pos != m_text.size())
                fail("unexpected text after the JSON value");
        }
        if (!m_error.empty()) {
            if (error)
                *error = (m_overLimit ? "" : "malformed JSON: ") + m_error + " at offset " + std::to_string(m_errorPos);
            return std::nullopt;
        }
        return v;
    }

private:
    // Text that is not JSON.
    void fail(std::string what)
    {
        if (m_error.empty()) {
            m_error = std::move(what);
            m_errorPos = m_pos;
        }
    }
    // JSON, but more than a document may hold.
    void overLimit(std::string what)
    {
        if (m_error.empty())
            m_overLimit = true;
        fail(std::move(what) + " (the limit)");
    }
    bool atEnd() const { return m_pos >= m_text.size(); }
    char peek() const { return atEnd() ? '\0' : m_text[m_pos]; }
    void skipSpace()
    {
        while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
            ++m_pos;
    }
    bool literal(std::string_view word)
    {
        if (m_text.substr(m_pos, word.size()) != word) {
            fail("invalid literal");
            return false;
        }
        m_pos += word.size();
        return true;
    }

    std::optional<Json> value(int depth)
    {
        if ((peek() == '{' || peek() == '[') && depth >= m_limits.maxDepth) {
            overLimit("nested deeper than " + std::to_string(m_limits.maxDepth) + " levels");
            return std::nullopt;
        }
        if (++m_values > m_limits.maxValues) {
            overLimit("more than " + std::to_string(m_limits.maxValues) + " values");
            return std::nullopt;
        }
        switch (peek()) {
        case '{': return object(depth);
        case '[': return array(depth);
        case '"': {
            std::string s;
            if (!string(s))
                return std::nullopt;
            return Json(std::move(s));
        }
        case 't': return literal("true") ? std::optional<Json>(Json(true)) : std::nullopt;
        case 'f': return literal("false") ? std::optional<Json>(Json(false)) : std::nullopt;
        case 'n': return literal("null") ? std::optional<Json>(Json()) : std::nullopt;
        default:
            if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
                return number();
            fail(atEnd() ? "unexpected end of input" : "unexpected character");
            return std::nullopt;
        }
    }

    std::optional<Json> object(int depth)
    {
        ++m_pos;  // '{'
        Json::Object out;
        // The keys seen so far: a duplicate is found in constant time, so an
        // object of n keys costs O(n), not O(n^2) (80,000 keys took seconds).
        std::unordered_set<std::string> keys;
        skipSpace();
        if (peek() == '}') {
            ++m_pos;
            return Json(std::move(out));
        }
        while (true) {
            skipSpace();
            if (peek() != '"') {
                fail("expected a string key");
                return std::nullopt;
            }
            std::string key;
            if (!string(key))
                return std::nullopt;
            skipSpace();
            if (peek() != ':') {
                fail("expected ':'");
                return std::nullopt;
            }
            ++m_pos;
            skipSpace();
            auto v = value(depth + 1);
            if (!v)
                return std::nullopt;
            if (!keys.insert(key).second) {
                fail("duplicate key \"" + key + "\"");
                return std::nullopt;
            }
            if (keys.size() > m_limits.maxKeysPerObject) {
                overLimit("more than " + std::to_string(m_limits.maxKeysPerObject) + " keys in one object");
                return std::nullopt;
            }
            out.emplace_back(std::move(key), std::move(*v));
            skipSpace();
            if (peek() == ',') {
                ++m_pos;
                continue;
            }
            if (peek() == '}') {
                ++m_pos;
                return Json(std::move(out));
            }
            fail("expected ',' or '}'");
            return std::nullopt;
        }
    }

    std::optional<Json> array(int depth)
    {
        ++m_pos;  // '['
        Json::Array out;
        skipSpace();
        if (peek() == ']') {
            ++m_pos;
            return Json(std::move(out));
        }
        while (true) {
            skipSpace();
            auto v = value(depth + 1);
            if (!v)
                return std::nullopt;
            out.push_back(std::move(*v));
            skipSpace();
            if (peek() == ',') {
                ++m_pos;
                continue;
            }
            if (peek() == ']') {
                ++m_pos;
                return Json(std::move(out));
            }
            fail("expected ',' or ']'");
            return std::nullopt;
        }
    }

    std::optional<Json> number()
    {
        const std::size_t start = m_pos;
        bool integer = true;
        if (peek() == '-')
            ++m_pos;
        if (peek() == '0') {
            ++m_pos;
        } else if (peek() >= '1' && peek() <= '9') {
            while (peek() >= '0' && peek() <= '9')
                ++m_pos;
        } else {
            fail("invalid number");
            return std::nullopt;
        }
        if (peek() == '.') {
            integer = false;
            ++m_pos;
            if (!(peek() >= '0' && peek() <= '9')) {
                fail("invalid number");
                return std::nullopt;
            }
            while (peek() >= '0' && peek() <= '9')
                ++m_pos;
        }
        if (peek() == 'e' || peek() == 'E') {
            integer = false;
            ++m_pos;
            if (peek() == '+' || peek() == '-')
                ++m_pos;
            if (!(peek() >= '0' && peek() <= '9')) {
                fail("invalid number");
                return std::nullopt;
            }
            while (peek() >= '0' && peek() <= '9')
                ++m_pos;
        }
        const std::string_view text = m_text.substr(start, m_pos - start);
        if (integer) {
            std::int64_t v = 0;
            const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
            if (r.ec == std::errc() && r.ptr == text.data() + text.size())
                return Json(v);
            // Too large for 64 bits: keep it as a double.
        }
        double d = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), d);
        if (r.ec == std::errc::result_out_of_range) {
            // Valid JSON beyond the double range: too small is 0, too large
            // is infinite, and the field that reads it names its range.
            const std::size_t e = text.find_first_of("eE");
            const bool tiny = e != std::string_view::npos && text.substr(e + 1).front() == '-';
            d = tiny ? 0.0 : (text.front() == '-' ? -HUGE_VAL : HUGE_VAL);
        } else if (r.ec != std::errc()) {
            m_pos = start;
            fail("invalid number");
            return std::nullopt;
        }
        // JSON has one number type: 1e3 and 100.0 are the integers they name
        // (a limit written 100.0 is 100), 100.5 stays a fraction.
        if (d == std::trunc(d) && std::fabs(d) < 9.2e18)
            return Json(std::int64_t(d));
        return Json(d);
    }

    bool hex4(std::uint32_t& out)
    {
        out = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = peek();
            std::uint32_t v;
            if (c >= '0' && c <= '9')
                v = std::uint32_t(c - '0');
            else if (c >= 'a' && c <= 'f')
                v = std::uint32_t(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v = std::uint32_t(c - 'A' + 10);
            else {
                fail("invalid \\u escape");
                return false;
            }
            out = out * 16 + v;
            ++m_pos;
        }
        return true;
    }

    static void appendUtf8(std::string& s, std::uint32_t cp)
    {
        if (cp < 0x80) {
            s += char(cp);
        } else if (cp < 0x800) {
            s += char(0xC0 | (cp >> 6));
            s += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s += char(0xE0 | (cp >> 12));
            s += char(0x80 | ((cp >> 6) & 0x3F));
            s += char(0x80 | (cp & 0x3F));
        } else {
            s += char(0xF0 | (cp >> 18));
            s += char(0x80 | ((cp >> 12) & 0x3F));
            s += char(0x80 | ((cp >> 6) & 0x3F));
            s += char(0x80 | (cp & 0x3F));
        }
    }

    // Checks one UTF-8 sequence starting at m_pos and copies it.
    bool utf8(std::string& s)
    {
        const std::size_t length = utf8SequenceLength(m_text.substr(m_pos));
        if (length == 0) {
            fail("invalid UTF-8");
            return false;
        }
        s.append(m_text.substr(m_pos, length));
        m_pos += length;
        return true;
    }

    bool string(std::string& s)
    {
        ++m_pos;  // '"'
        while (true) {
            if (atEnd()) {
                fail("unterminated string");
                return false;
            }
            const char c = peek();
            if (c == '"') {
                ++m_pos;
                return true;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("control character in a string");
                return false;
            }
            if (static_cast<unsigned char>(c) >= 0x80) {
                if (!utf8(s))
                    return false;
                continue;
            }
            if (c != '\\') {
                s += c;
                ++m_pos;
                continue;
            }
            ++m_pos;
            const char e = peek();
            ++m_pos;
            switch (e) {
            case '"': s += '"'; break;
            case '\\': s += '\\'; break;
            case '/': s += '/'; break;
            case 'b': s += '\b'; break;
            case 'f': s += '\f'; break;
            case 'n': s += '\n'; break;
            case 'r': s += '\r'; break;
            case 't': s += '\t'; break;
            case 'u': {
                std::uint32_t cp = 0;
                if (!hex4(cp))
                    return false;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    std::uint32_t lo = 0;
                    if (peek() != '\\' || (++m_pos, peek() != 'u')) {
                        fail("unpaired surrogate in \\u escape");
                        return false;
                    }
                    ++m_pos;
                    if (!hex4(lo))
                        return false;
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        fail("unpaired surrogate in \\u escape");
                        return false;
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fail("unpaired surrogate in \\u escape");
                    return false;
                }
                appendUtf8(s, cp);
                break;
            }
            default:
                --m_pos;
                fail("invalid escape");
                return false;
            }
        }
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
    const Json::Limits& m_limits;
    std::size_t m_values = 0;
    std::string m_error;
    std::size_t m_errorPos = 0;
    bool m_overLimit = false;
};

} // namespace

std::optional<Json> Json::parse(std::string_view text, std::string* error, const Limits& limits)
{
    return Parser(text, limits).document(error);
}

const char* Json::typeName() const
{
    switch (type()) {
    case Type::Null: return "null";
    case Type::Bool: return "a boolean";
    case Type::Integer:
    case Type::Number: return "a number";
    case Type::String: return "a string";
    case Type::Array: return "an array";
    case Type::Object: return "an object";
    }
    return "null";
}

std::int64_t Json::asInteger() const
{
    if (type() == Type::Integer)
        return std::get<std::int64_t>(m_value);
    const double d = std::get<double>(m_value);
    // Casting a double beyond 64 bits is undefined: saturate.
    if (d >= 9.2e18)
        return INT64_MAX;
    if (d <= -9.2e18)
        return INT64_MIN;
    return std::int64_t(d);
}

double Json::asNumber() const
{
    if (type() == Type::Integer)
        return double(std::get<std::int64_t>(m_value));
    return std::get<double>(m_value);
}

const Json* Json::find(std::string_view key) const
{
    if (!isObject())
        return nullptr;
    for (const auto& [k, v] : asObject())
        if (k == key)
            return &v;
    return nullptr;
}

Json& Json::set(std::string key, Json value)
{
    if (!isObject())
        m_value = Object{};
    for (auto& [k, v] : asObject()) {
        if (k == key) {
            v = std::move(value);
            return v;
        }
    }
    asObject().emplace_back(std::move(key), std::move(value));
    return asObject().back().second;
}

Json& Json::push(Json value)
{
    if (!isArray())
        m_value = Array{};
    asArray().push_back(std::move(value));
    return asArray().back();
}

void appendJsonString(std::string& out, std::string_view s)
{
    static constexpr char HEX[] = "0123456789abcdef";
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const char c = s[i];
        if (static_cast<unsigned char>(c) >= 0x80) {
            // Request bytes (a user agent, a path) may be anything; JSON
            // text is UTF-8. A byte that starts no valid character becomes
            // U+FFFD, so every document written parses.
            const std::size_t length = utf8SequenceLength(s.substr(i));
            if (length == 0) {
                out += "\xef\xbf\xbd";
                ++i;
            } else {
                out.append(s.substr(i, length));
                i += length;
            }
            continue;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                out += "\\u00";
                out += HEX[(c >> 4) & 0xF];
                out += HEX[c & 0xF];
            } else {
                out += c;
            }
        }
        ++i;
    }
    out += '"';
}

void Json::dumpTo(std::string& out) const
{
    switch (type()) {
    case Type::Null: out += "null"; break;
    case Type::Bool: out += asBool() ? "true" : "false"; break;
    case Type::Integer: {
        char buf[24];
        const auto r = std::to_chars(buf, buf + sizeof buf, std::get<std::int64_t>(m_value));
        out.append(buf, r.ptr);
        break;
    }
    case Type::Number: {
        const double d = std::get<double>(m_value);
        if (std::isinf(d)) {
            out += d > 0 ? "1e999" : "-1e999";  // JSON has no infinity; this reads back as it
            break;
        }
        if (std::isnan(d)) {
            out += "null";  // no number at all
            break;
        }
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, d);  // shortest round trip, never the locale's
        out.append(buf, r.ptr);
        break;
    }
    case Type::String: appendJsonString(out, asString()); break;
    case Type::Array: {
        out += '[';
        bool first = true;
        for (const Json& v : asArray()) {
            if (!first)
                out += ',';
            first = false;
            v.dumpTo(out);
        }
        out += ']';
        break;
    }
    case Type::Object: {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : asObject()) {
            if (!first)
                out += ',';
            first = false;
            appendJsonString(out, k);
            out += ':';
            v.dumpTo(out);
        }
        out += '}';
        break;
    }
    }
}

std::string Json::dump() const
{
    std::string out;
    dumpTo(out);
    return out;
}

} // namespace Floodgate::Wire
