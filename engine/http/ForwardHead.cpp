// SPDX-License-Identifier: GPL-3.0-or-later
// Proxy mode, the request head the upstream receives: the upstream URL, the
// client's fields without the hop-by-hop ones (RFC 9110 section 7.6.1), and
// the forwarding headers Floodgate writes itself (X-Forwarded-*, X-Real-IP,
// Forwarded) from what a trusted proxy said and the peer.
#include "http/Session.h"

#include "http/Responses.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace Floodgate::Http {

namespace {

// Headers an upstream may take as the truth about the client or the original
// request. Floodgate writes the first kind itself (from what a trusted proxy
// said, and the peer); the second passes only from a trusted proxy.
enum class Forwarding { Other, Written, TrustedOnly };

Forwarding forwardingHeader(std::string_view name)
{
    static constexpr std::string_view WRITTEN[] = {"x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "forwarded"};
    static constexpr std::string_view TRUSTED_ONLY[] = {"x-client-ip",    "true-client-ip",    "cf-connecting-ip", "x-cluster-client-ip",
                                                        "fastly-client-ip", "x-original-uri", "x-original-url",   "x-original-method",
                                                        "x-rewrite-url"};
    for (auto w : WRITTEN)
        if (Core::equalsIgnoreCase(name, w))
            return Forwarding::Written;
    if (name.size() > 12 && Core::equalsIgnoreCase(name.substr(0, 12), "x-forwarded-"))
        return Forwarding::TrustedOnly;  // -port, -prefix, -server, -ssl, -uri, -method...
    for (auto t : TRUSTED_ONLY)
        if (Core::equalsIgnoreCase(name, t))
            return Forwarding::TrustedOnly;
    return Forwarding::Other;
}

// A Forwarded parameter value: a token as it is, anything else quoted.
void appendForwardedValue(std::string& out, std::string_view v)
{
    const bool token = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (token) {
        out += v;
        return;
    }
    out += '"';
    for (char c : v) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    out += '"';
}

bool isHopByHop(std::string_view name)
{
    static constexpr std::string_view HOP[] = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
                                               "transfer-encoding", "upgrade", "proxy-authenticate", "proxy-authorization"};
    for (auto h : HOP)
        if (Core::equalsIgnoreCase(name, h))
            return true;
    return false;
}

bool listContainsToken(std::string_view list, std::string_view token)
{
    while (!list.empty()) {
        const auto comma = list.find(',');
        if (Core::equalsIgnoreCase(trimView(list.substr(0, comma)), token))
            return true;
        if (comma == std::string_view::npos)
            break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

} // namespace

// A field a proxy does not pass on as it is: hop-by-hop (RFC 9110 §7.6.1),
// named in the message's Connection header, or Content-Length (the body is
// framed anew).
bool endsAtThisHop(std::string_view name, std::string_view connection)
{
    return isHopByHop(name) || Core::equalsIgnoreCase(name, "content-length") || listContainsToken(connection, name);
}

void appendField(std::string& out, std::string_view name, std::string_view value)
{
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
}

// ---- upstream URL ------------------------------------------------------------

std::optional<UpstreamUrl> UpstreamUrl::parse(std::string_view url, std::string* why)
{
    auto fail = [&](std::string reason) -> std::optional<UpstreamUrl> {
        if (why)
            *why = std::move(reason);
        return std::nullopt;
    };
    UpstreamUrl u;
    u.text = std::string(url);
    if (url.starts_with("https://"))
        return fail("https upstreams are not supported: terminate TLS in front of Floodgate and use http://");
    if (!url.starts_with("http://"))
        return fail("the upstream must be an http:// URL");
    url.remove_prefix(7);
    const auto slash = url.find('/');
    std::string_view hostPort = url.substr(0, slash);
    if (slash != std::string_view::npos) {
        u.basePath = std::string(url.substr(slash));
        while (!u.basePath.empty() && u.basePath.back() == '/')
            u.basePath.pop_back();
    }
    if (hostPort.empty())
        return fail("the upstream URL has no host");
    std::string_view portText;
    if (hostPort.front() == '[') {
        const auto close = hostPort.find(']');
        if (close == std::string_view::npos)
            return fail("missing ']' in the upstream host");
        u.host = std::string(hostPort.substr(1, close - 1));
        if (close + 1 < hostPort.size()) {
            if (hostPort[close + 1] != ':')
                return fail("unexpected text after the upstream host");
            portText = hostPort.substr(close + 2);
        }
    } else {
        const auto colon = hostPort.rfind(':');
        u.host = std::string(hostPort.substr(0, colon));
        if (colon != std::string_view::npos)
            portText = hostPort.substr(colon + 1);
    }
    if (u.host.empty())
        return fail("the upstream URL has no host");
    if (!portText.empty()) {
        unsigned p = 0;
        auto [ptr, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), p);
        if (ec != std::errc() || ptr != portText.data() + portText.size() || p == 0 || p > 65535)
            return fail("the upstream port \"" + std::string(portText) + "\" is not a port number");
        u.port = std::uint16_t(p);
    }
    u.hostHeader = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
    if (u.port != 80)
        u.hostHeader += ":" + std::to_string(u.port);
    return u;
}

void Session::appendUpstreamHead(std::string& r)
{
    const RequestData& d = m_data;
    const UpstreamUrl& up = *opts().upstream;
    const std::string_view connection = d.header("Connection");
    r += d.view(d.method);
    r += ' ';
    r += up.basePath;
    r += m_target.target;
    r += " HTTP/1.1\r\n";
    std::string_view host;
    std::string_view proto;
    std::string_view forwardedHost;
    for (const auto& [n, v] : d.fields) {
        const std::string_view name = d.view(n);
        if (endsAtThisHop(name, connection) || Core::equalsIgnoreCase(name, "expect"))
            continue;
        if (Core::equalsIgnoreCase(name, "host")) {
            host = d.view(v);
            continue;
        }
        const Forwarding kind = forwardingHeader(name);
        if (kind == Forwarding::Written) {
            // Written below; what a trusted proxy said about the scheme and host is kept.
            if (m_exchange.trustedPeer && Core::equalsIgnoreCase(name, "x-forwarded-proto"))
                proto = trimView(d.view(v));
            if (m_exchange.trustedPeer && Core::equalsIgnoreCase(name, "x-forwarded-host"))
                forwardedHost = trimView(d.view(v));
            continue;
        }
        if (kind == Forwarding::TrustedOnly && !m_exchange.trustedPeer)
            continue;
        appendField(r, name, d.view(v));
    }
    // One Host: an absolute-form target's authority (RFC 9112 §3.2.2), else
    // the client's, else the upstream's own name.
    if (m_target.absoluteForm)
        host = m_target.authority;
    r += "Host: ";
    r += host.empty() ? std::string_view(up.hostHeader) : host;
    r += "\r\n";
    appendForwardingHeaders(r, host, forwardedHost, proto);
    if (m_parser->chunked()) {
        r += "Transfer-Encoding: chunked\r\n";
    } else if (const auto length = m_parser->content_length()) {
        r += "Content-Length: ";
        appendNumber(r, std::int64_t(*length));
        r += "\r\n";
    } else if (!Core::equalsIgnoreCase(d.view(d.method), "GET") && !Core::equalsIgnoreCase(d.view(d.method), "HEAD")) {
        r += "Content-Length: 0\r\n";
    }
    // No Connection header: an HTTP/1.1 request keeps its connection by
    // default (RFC 9112 section 9.3), as nginx's keep-alive pool sends it
    // (proxy_http_version 1.1, Connection ""). Every header here is parsed
    // again by the upstream for every request.
    r += "\r\n";
}

// What the upstream may believe about the client and the original request.
// Every forwarding header from the client is dropped (a trusted proxy's
// chain is carried into the new ones): X-Forwarded-For, X-Forwarded-Proto,
// X-Forwarded-Host, X-Real-IP and Forwarded are written from the peer and
// the resolved client.
void Session::appendForwardingHeaders(std::string& r, std::string_view host, std::string_view forwardedHost, std::string_view proto)
{
    if (proto.empty())
        proto = "http";
    char peerText[Core::IpAddress::maxTextLength];
    const std::string_view peer(peerText, m_peer.format(peerText));
    // The chain as a trusted proxy told it (only then), then the peer.
    r += "X-Forwarded-For: ";
    if (!m_xff.empty()) {
        r += m_xff;
        r += ", ";
    }
    r += peer;
    r += "\r\nX-Forwarded-Proto: ";
    r += proto;
    r += "\r\n";
    if (forwardedHost.empty())
        forwardedHost = host;
    if (!forwardedHost.empty()) {
        r += "X-Forwarded-Host: ";
        r += forwardedHost;
        r += "\r\n";
    }
    r += "X-Real-IP: ";
    m_facts.client.appendTo(r);
    r += "\r\nForwarded: ";
    if (!m_forwarded.empty()) {
        r += m_forwarded;
        r += ", ";
    }
    // RFC 7239: an IPv6 node is bracketed and quoted.
    r += "for=";
    if (peer.find(':') != std::string_view::npos) {
        r += "\"[";
        r += peer;
        r += "]\"";
    } else {
        r += peer;
    }
    if (!host.empty()) {
        r += ";host=";
        appendForwardedValue(r, host);
    }
    r += ";proto=";
    appendForwardedValue(r, proto);
    r += "\r\n";
}

} // namespace Floodgate::Http
