// SPDX-License-Identifier: GPL-3.0-or-later
// The request target, normalised once before anything matches it. Rules,
// cooldowns and exclusions compare paths as text, so every spelling of one
// resource ("//comments", "/%63omments", "/./comments", "/comments/",
// "/comments;jsessionid=1", "http://host/comments") must reach them as the
// same text, and proxy mode must forward what was matched, not the raw bytes.
// Plain C++ (no Boost, no I/O) so a log-replay tool can use the very same
// function the listener uses.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::Core {

enum class TargetProblem {
    None,
    Malformed,      // 400: not a target at all, a bad %-escape, an encoded NUL, a fragment, userinfo...
    AuthorityForm,  // "host:port": only CONNECT uses it (RFC 9112 §3.2.3)
    AsteriskForm,   // "*": only OPTIONS uses it (RFC 9112 §3.2.4)
};

// The result; its strings are reused from request to request (cleared,
// capacity kept), so a warm caller normalises without allocating.
struct NormalisedTarget {
    // Origin-form: the normalised path, then '?' and the query when the
    // request had one. What proxy mode forwards.
    std::string target;
    std::size_t pathLength = 0;  // target[0, pathLength) is the path
    bool hasQuery = false;
    // What rules, cooldowns and exclusions match: the path with ";params"
    // cut from every segment (dot segments resolved again after the cut, so
    // "/a/..;/b" is "/b" as Tomcat reads it) and no trailing slash ("/" stays).
    std::string matchPath;
    // Absolute-form only ("http://host:8080/x"): "host:8080". The request's
    // Host then comes from here, not from the Host header (RFC 9112 §3.2.2).
    std::string authority;
    bool absoluteForm = false;

    TargetProblem problem = TargetProblem::None;
    const char* reason = "";  // a sentence for the 400 body when problem != None
    std::string scratch;      // working space (the decoded path), reused

    std::string_view path() const { return std::string_view(target).substr(0, pathLength); }
    std::string_view query() const { return hasQuery ? std::string_view(target).substr(pathLength + 1) : std::string_view{}; }
    bool ok() const { return problem == TargetProblem::None; }
};

// Normalises `raw` (a request target as it came on the request line, or an
// X-Original-URI / X-Forwarded-Uri from a trusted proxy) into `out`:
//  - absolute-form (http or https) to origin-form, the authority kept aside;
//  - percent-escapes of unreserved characters (ALPHA DIGIT - . _ ~) decoded,
//    every other escape kept with its hex in upper case; a malformed escape
//    or an encoded NUL is a problem (400), in the path and in the query;
//  - in the path: empty segments merged (nginx's merge_slashes) and dot
//    segments removed (RFC 3986 §5.2.4), after decoding, so "%2e" counts.
// The query is decoded the same way but otherwise kept as it is.
// Returns out.ok().
bool normaliseTarget(std::string_view raw, NormalisedTarget& out);

// The value of one hex digit of a percent-escape (either case); -1 when `c`
// is not one.
int hexValue(char c);

// Every %XX of `s` decoded (any byte, %00 included: the caller judges the
// result); nullopt when a '%' is not followed by two hex digits. The admin
// API's path segments and query values, the credentials of a --redis URL.
std::optional<std::string> percentDecode(std::string_view s);

// A Host header value or an absolute-form authority: uri-host [":" port]
// characters only (no user information, no spaces, no slashes). Empty is
// valid (RFC 9110 §7.2: a target without an authority).
bool isValidAuthority(std::string_view authority);

} // namespace Floodgate::Core
