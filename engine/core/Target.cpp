// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Target.h"

#include "core/Rules.h"

namespace Floodgate::Core {

namespace {

bool isAlnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool isUnreserved(unsigned char c)
{
    return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

char upperHex(char c)
{
    return (c >= 'a' && c <= 'f') ? char(c - 'a' + 'A') : c;
}

// Appends `src` to `dst` with escapes of unreserved characters decoded and
// every other escape's hex in upper case. nullptr, or why it cannot.
const char* decodeInto(std::string_view src, std::string& dst)
{
    for (std::size_t i = 0; i < src.size(); ++i) {
        const char c = src[i];
        if (c != '%') {
            dst += c;
            continue;
        }
        const int hi = i + 2 < src.size() ? hexValue(src[i + 1]) : -1;
        const int lo = i + 2 < src.size() ? hexValue(src[i + 2]) : -1;
        if (hi < 0 || lo < 0)
            return "a malformed percent-escape in the request target (% must be followed by two hex digits)";
        const int v = hi * 16 + lo;
        if (v == 0)
            return "an encoded NUL (%00) in the request target";
        if (isUnreserved(static_cast<unsigned char>(v))) {
            dst += char(v);
        } else {
            dst += '%';
            dst += upperHex(src[i + 1]);
            dst += upperHex(src[i + 2]);
        }
        i += 2;
    }
    return nullptr;
}

// Appends the path `p` (which starts with '/') to `dst` with empty segments
// merged and dot segments removed (RFC 3986 §5.2.4: ".." above the root is
// dropped). stripParams first cuts each segment at ';'. A path whose last
// segment was empty or a dot keeps its trailing slash only when asked.
void resolveSegments(std::string_view p, std::string& dst, bool stripParams, bool keepTrailingSlash)
{
    const std::size_t base = dst.size();
    bool trailing = false;
    std::size_t i = 0;
    while (i < p.size()) {
        if (p[i] == '/')
            ++i;
        std::size_t end = p.find('/', i);
        if (end == std::string_view::npos)
            end = p.size();
        std::string_view segment = p.substr(i, end - i);
        i = end;
        if (stripParams)
            segment = segment.substr(0, segment.find(';'));
        if (segment.empty() || segment == ".") {
            trailing = true;
            continue;
        }
        if (segment == "..") {
            const auto slash = dst.rfind('/');
            if (slash != std::string::npos && slash >= base)
                dst.resize(slash);
            trailing = true;
            continue;
        }
        dst += '/';
        dst += segment;
        trailing = false;
    }
    if (dst.size() == base || (trailing && keepTrailingSlash))
        dst += '/';
}

// uri-host and port characters: unreserved, sub-delims, ':', IP-literal
// brackets and pct-encoded ('%').
bool isAuthorityChar(unsigned char c)
{
    if (isUnreserved(c))
        return true;
    switch (c) {
    case '!': case '$': case '&': case '\'': case '(': case ')': case '*': case '+': case ',': case ';': case '=':
    case ':': case '[': case ']': case '%':
        return true;
    }
    return false;
}

bool fail(NormalisedTarget& out, TargetProblem problem, const char* reason)
{
    out.problem = problem;
    out.reason = reason;
    return false;
}

} // namespace

bool isValidAuthority(std::string_view authority)
{
    for (char c : authority)
        if (!isAuthorityChar(static_cast<unsigned char>(c)))
            return false;
    return true;
}

bool normaliseTarget(std::string_view raw, NormalisedTarget& out)
{
    out.target.clear();
    out.matchPath.clear();
    out.authority.clear();
    out.scratch.clear();
    out.pathLength = 0;
    out.hasQuery = false;
    out.absoluteForm = false;
    out.problem = TargetProblem::None;
    out.reason = "";

    if (raw.find('#') != std::string_view::npos)
        return fail(out, TargetProblem::Malformed, "a fragment (#) does not belong in a request target");
    std::string_view rest = raw;
    if (raw.empty() || raw.front() != '/') {
        if (raw == "*")
            return fail(out, TargetProblem::AsteriskForm, "the asterisk-form target (*) is not served");
        const auto colonSlashes = raw.find("://");
        if (colonSlashes == std::string_view::npos) {
            // "host:port" (CONNECT's authority-form) or a word that is no target ("abc").
            const bool authorityLike = raw.find(':') != std::string_view::npos && raw.find_first_of("/?") == std::string_view::npos;
            return authorityLike ? fail(out, TargetProblem::AuthorityForm, "an authority-form target (host:port) is only for CONNECT")
                                 : fail(out, TargetProblem::Malformed, "the request target must start with '/' or be an http:// URI");
        }
        const std::string_view scheme = raw.substr(0, colonSlashes);
        if (!equalsIgnoreCase(scheme, "http") && !equalsIgnoreCase(scheme, "https"))
            return fail(out, TargetProblem::Malformed, "an absolute request target must be an http:// or https:// URI");
        rest = raw.substr(colonSlashes + 3);
        const auto authorityEnd = rest.find_first_of("/?");
        const std::string_view authority = rest.substr(0, authorityEnd);
        rest = authorityEnd == std::string_view::npos ? std::string_view{} : rest.substr(authorityEnd);
        if (authority.empty())
            return fail(out, TargetProblem::Malformed, "an absolute request target without a host");
        if (authority.find('@') != std::string_view::npos)
            return fail(out, TargetProblem::Malformed, "user information (user@) in the request target");
        if (!isValidAuthority(authority))
            return fail(out, TargetProblem::Malformed, "a character that cannot be in a host in the request target");
        out.authority.assign(authority);
        out.absoluteForm = true;
    }

    const auto q = rest.find('?');
    const std::string_view rawPath = rest.substr(0, q);
    if (rawPath.empty()) {
        out.scratch = "/";  // "http://host" and "http://host?x" name the root
    } else if (const char* why = decodeInto(rawPath, out.scratch)) {
        return fail(out, TargetProblem::Malformed, why);
    }
    resolveSegments(out.scratch, out.target, false, true);
    out.pathLength = out.target.size();
    if (q != std::string_view::npos) {
        out.hasQuery = true;
        out.target += '?';
        if (const char* why = decodeInto(rest.substr(q + 1), out.target))
            return fail(out, TargetProblem::Malformed, why);
    }
    resolveSegments(out.path(), out.matchPath, true, false);
    return true;
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

std::optional<std::string> percentDecode(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size() || hexValue(s[i + 1]) < 0 || hexValue(s[i + 2]) < 0)
            return std::nullopt;
        out += char(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
        i += 2;
    }
    return out;
}

} // namespace Floodgate::Core
