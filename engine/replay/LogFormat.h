// SPDX-License-Identifier: GPL-3.0-or-later
// Access-log lines as web servers write them, parsed into what a request
// carried: Apache/nginx "combined" and "common", nginx JSON
// (`log_format ... escape=json`) and Floodgate's own limiter.log. Strict: a
// line that is not a request says why, nothing is guessed.
#pragma once

#include "core/Address.h"
#include "core/Time.h"
#include "wire/Json.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace Floodgate::Replay {

enum class LogFormat { Auto, Combined, Common, NginxJson, FloodgateCsv };
const char* toString(LogFormat format);  // "auto", "combined", "common", "nginx-json", "floodgate-csv"
std::optional<LogFormat> formatFromName(std::string_view name);

// One request read from a line. The views point into the line or into the
// scratch the parser was given; valid until either changes.
struct LogRequest {
    Core::Millis time = 0;
    bool wholeSecond = true;   // the log gives seconds only (spread over the second, Replay.h)
    Core::IpAddress peer;      // who connected to the server
    std::string_view method;
    std::string_view target;   // path and query, as on the request line
    int status = 0;            // 0: not in the log
    std::string_view userAgent;
    std::string_view referer;
    std::string_view forwardedFor;  // X-Forwarded-For as the server received it
    std::string_view cookie;        // the Cookie header (nginx JSON with $http_cookie)
    // limiter.log only: the client after trusted-proxy resolution (peer is
    // it), the number of cookies and the customer it recorded.
    bool clientResolved = false;
    int cookieCount = -1;
    std::string_view customer;
    // How many requests the line stands for: a limiter.log summary line
    // ("throttle_summary", ...) stands for `attempts` refusals of that
    // client in its second, this request being the first of them.
    std::uint64_t repeat = 1;
};

// What a parser keeps between lines (decoded JSON, a cached timestamp).
struct ParseScratch {
    std::string text;
    std::optional<Wire::Json> json;
    std::string lastStamp;           // the last [dd/Mon/yyyy:hh:mm:ss +zzzz] seen
    Core::Millis lastStampTime = 0;
};

// The most refusals one limiter.log summary line may stand for (one client,
// one second): far past what a listener refuses in a second, so a line
// claiming more is damaged or forged and is a bad line, not minutes of replay.
inline constexpr std::uint64_t MaxSummaryRefusals = 10'000'000;

enum class LineKind { Request, Header, Bad };

// Parses one line (no line break) of `format` (not Auto). A limiter.log
// header line is a Header; anything else that is not a request is Bad,
// with *why saying what is wrong.
LineKind parseLine(std::string_view line, LogFormat format, LogRequest& out, ParseScratch& scratch, std::string* why);

// The format of a file from its first lines: the one that parses the most
// of them (at least one); nullopt when none does.
std::optional<LogFormat> detectFormat(std::span<const std::string_view> lines);

// A known crawler's name when the user agent says it is one ("Googlebot",
// "bingbot", ...); empty otherwise. User agents can be forged: this is what
// the client claims, not who it is.
std::string_view knownCrawler(std::string_view userAgent);

} // namespace Floodgate::Replay
