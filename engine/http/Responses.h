// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes Floodgate answers with itself (decision mode, refusals, errors).
// Written by hand into a reused string: no allocation once warm, and exactly
// the headers docs/INTERFACE.md promises.
#pragma once

#include "core/Decision.h"
#include "core/Rules.h"

#include <string>
#include <string_view>

namespace Floodgate::Http {

struct ResponseContext {
    bool keepAlive = true;
    bool http10 = false;
    bool wantsJson = false;      // the client asked for application/json
    bool headRequest = false;    // HEAD: headers only
    bool rateLimitHeaders = true;
    int throttleStatus = 429;
};

const char* reasonPhrase(int status);

// A decimal number appended with std::to_chars: no locale, no allocation
// beyond the string's own growth.
void appendNumber(std::string& out, std::int64_t v);

// RateLimit-Policy and RateLimit for the binding window (draft-ietf-httpapi-
// ratelimit-headers, structured-field form), each ending in CRLF. Nothing when
// no level applied.
void appendRateLimitHeaders(std::string& out, const Core::Decision& d);

// The whole response for a decision Floodgate answers itself: 200 "ok"
// (decision mode), the throttle status, or 403 for the blocklist.
void appendDecisionResponse(std::string& out, const Core::Decision& d, const ResponseContext& ctx);

// A plain error (400, 413, 414, 431, 501, 502, 504...) with a one-line body;
// `close` adds Connection: close.
void appendErrorResponse(std::string& out, int status, std::string_view message, bool close, bool http10 = false);

} // namespace Floodgate::Http
