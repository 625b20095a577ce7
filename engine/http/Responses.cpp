// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/Responses.h"

#include "wire/Json.h"

#include <charconv>

namespace Floodgate::Http {

using Core::Action;
using Core::Decision;

namespace {

// A rule name as an sf-string: quotes and backslashes escaped, only printable ASCII kept.
void appendSfString(std::string& out, std::string_view s)
{
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c >= 0x20 && c < 0x7f)
            out += c;
    }
    out += '"';
}

void appendStatusLine(std::string& out, int status, bool http10)
{
    out += http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    appendNumber(out, status);
    out += ' ';
    out += reasonPhrase(status);
    out += "\r\n";
}

void appendBody(std::string& out, std::string_view contentType, std::string_view body, const ResponseContext& ctx)
{
    out += "Content-Type: ";
    out += contentType;
    out += "\r\nContent-Length: ";
    appendNumber(out, std::int64_t(body.size()));
    out += "\r\n";
    if (!ctx.keepAlive)
        out += "Connection: close\r\n";
    else if (ctx.http10)
        out += "Connection: keep-alive\r\n";
    out += "\r\n";
    if (!ctx.headRequest)
        out += body;
}

// A body whose length is known only once it is written (a number, an
// escaped rule name in it) is built here first: one buffer per listener
// thread, its capacity kept, so a refusal allocates nothing once warm.
std::string& bodyScratch()
{
    thread_local std::string scratch;
    scratch.clear();
    return scratch;
}

} // namespace

void appendNumber(std::string& out, std::int64_t v)
{
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, std::size_t(end - buf));
}

const char* reasonPhrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    }
    return "Unknown";
}

void appendRateLimitHeaders(std::string& out, const Decision& d)
{
    if (d.limit == 0 || d.windowMs <= 0)
        return;
    out += "RateLimit-Policy: ";
    appendSfString(out, d.rule.view());
    out += ";q=";
    appendNumber(out, d.limit);
    out += ";w=";
    appendNumber(out, Core::secondsRoundedUp(d.windowMs));
    out += "\r\nRateLimit: ";
    appendSfString(out, d.rule.view());
    out += ";r=";
    appendNumber(out, d.remaining);
    out += ";t=";
    // Refused: the time until the request would pass (= Retry-After);
    // allowed: the time until the window's quota is whole again.
    appendNumber(out, d.refused() ? d.retryAfterSeconds() : d.resetSeconds());
    out += "\r\n";
}

void appendDecisionResponse(std::string& out, const Decision& d, const ResponseContext& ctx)
{
    if (d.action == Action::Block) {
        appendStatusLine(out, 403, ctx.http10);
        out += "Cache-Control: no-store\r\n";
        if (ctx.wantsJson)
            appendBody(out, "application/json", "{\"error\":\"blocked\",\"rule\":\"blocklist\"}\n", ctx);
        else
            appendBody(out, "text/plain; charset=utf-8", "Your address is blocked.\n", ctx);
        return;
    }
    if (d.action == Action::Throttle) {
        appendStatusLine(out, ctx.throttleStatus, ctx.http10);
        out += "Retry-After: ";
        appendNumber(out, d.retryAfterSeconds());
        out += "\r\nCache-Control: no-store\r\n";
        appendRateLimitHeaders(out, d);
        std::string& body = bodyScratch();
        if (ctx.wantsJson) {
            body += "{\"error\":\"rate_limited\",\"rule\":";
            Wire::appendJsonString(body, d.rule.view());
            body += ",\"retry_after\":";
            appendNumber(body, d.retryAfterSeconds());
            body += "}\n";
            appendBody(out, "application/json", body, ctx);
        } else {
            body += "You are making too many requests too fast, please slow down and wait ";
            appendNumber(body, d.retryAfterSeconds());
            body += " seconds.\n";
            appendBody(out, "text/plain; charset=utf-8", body, ctx);
        }
        return;
    }
    // Allowed (or dry-run: let through).
    appendStatusLine(out, 200, ctx.http10);
    if (ctx.rateLimitHeaders)
        appendRateLimitHeaders(out, d);
    appendBody(out, "text/plain; charset=utf-8", "ok", ctx);
}

void appendErrorResponse(std::string& out, int status, std::string_view message, bool close, bool http10)
{
    ResponseContext ctx;
    ctx.keepAlive = !close;
    ctx.http10 = http10;
    appendStatusLine(out, status, http10);
    std::string& body = bodyScratch();
    body += message;
    body += '\n';
    appendBody(out, "text/plain; charset=utf-8", body, ctx);
}

} // namespace Floodgate::Http
