// SPDX-License-Identifier: GPL-3.0-or-later
// The request parser: a Beast basic_parser that copies what the engine needs
// into per-connection storage reused from request to request, and refuses
// what HTTP says to refuse (obs-fold, a missing or doubled Host, framing that
// could be read two ways) before anything is decided.
#include "http/Session.h"

#include "http/LimiterLog.h"
#include "http/Metrics.h"
#include "http/Peer.h"
#include "http/RequestSamples.h"
#include "http/Responses.h"

#include <algorithm>

namespace Floodgate::Http {

void RequestParser::on_request_impl(http::verb, beast::string_view method, beast::string_view target, int version, error_code&)
{
    m_data.method = m_data.keep(std::string_view(method.data(), method.size()));
    m_data.target = m_data.keep(std::string_view(target.data(), target.size()));
    m_data.version = unsigned(version);
}

void RequestParser::on_field_impl(http::field f, beast::string_view name, beast::string_view value, error_code& ec)
{
    // A trailer field (after a chunked body) arrives here too. The request
    // was decided on its header, whose views point into this storage: a
    // trailer must neither move that storage (a use after free, found by
    // fuzz_listener) nor reach the upstream as if it were a header, so it is
    // dropped, as RFC 9110 section 6.5.1 allows.
    if (is_header_done())
        return;
    if (m_data.fields.size() >= m_data.maxFields) {
        m_data.rejectStatus = 431;
        m_data.rejectReason = "too many header fields";
        ec = http::error::header_limit;
        return;
    }
    const std::string_view n(name.data(), name.size());
    const std::string_view v(value.data(), value.size());
    if (isFolded(n, v)) {
        m_data.rejectStatus = 400;
        m_data.rejectReason = "obsolete line folding: a header continued on the next line";
        ec = http::error::bad_value;
        return;
    }
    // nginx's underscores_in_headers off: "Transfer_Encoding" and
    // "X_User_Id" become the same CGI variable as their dashed twins
    // behind many frameworks; nothing here or upstream sees them.
    if (n.find('_') != std::string_view::npos)
        return;
    // Request smuggling: Beast 1.74 merges identical Content-Length
    // headers and lets "Transfer-Encoding: gzip" pass beside a
    // Content-Length; count them and judge the whole header at its end.
    if (f == http::field::content_length)
        ++m_data.contentLengthCount;
    if (f == http::field::transfer_encoding) {
        ++m_data.transferEncodingCount;
        m_data.transferEncoding = m_data.keep(v);
    }
    const RequestData::Span nameSpan = m_data.keep(n);
    const RequestData::Span valueSpan = m_data.keep(v);
    m_data.fields.emplace_back(nameSpan, valueSpan);
    if (f == http::field::host) {
        ++m_data.hostCount;
        m_data.host = valueSpan;
    }
}

// Beast joins a folded value (RFC 9112 §5.2 obs-fold) in a buffer of its
// own, or, when the first line was empty, hands over the text after the
// fold: either way the value does not follow the name on its line.
bool RequestParser::isFolded(std::string_view name, std::string_view value) const
{
    const auto nameEnd = reinterpret_cast<std::uintptr_t>(name.data() + name.size());
    const auto valueStart = reinterpret_cast<std::uintptr_t>(value.data());
    if (valueStart < nameEnd || valueStart - nameEnd > m_data.headerLimit)
        return true;
    const std::string_view gap(name.data() + name.size(), valueStart - nameEnd);
    return gap.find_first_of("\r\n") != std::string_view::npos;
}

void RequestParser::on_header_impl(error_code& ec)
{
    auto reject = [&](int status, const char* why) {
        m_data.rejectStatus = status;
        m_data.rejectReason = why;
        ec = http::error::bad_transfer_encoding;
    };
    // RFC 9112 §3.2: one Host, with a valid value, in every HTTP/1.1 request.
    if (m_data.hostCount > 1)
        return reject(400, "more than one Host header");
    if (m_data.hostCount == 0 && m_data.version >= 11)
        return reject(400, "an HTTP/1.1 request without a Host header");
    if (m_data.hostCount == 1 && !Core::isValidAuthority(m_data.view(m_data.host)))
        return reject(400, "the Host header is not a host name or address");
    // A reverse proxy opens no tunnels: no resource here supports CONNECT.
    if (m_data.view(m_data.method) == "CONNECT")
        return reject(501, "CONNECT is not supported: Floodgate is not a forward proxy");
    if (m_data.contentLengthCount > 1)
        return reject(400, "more than one Content-Length header");
    if (m_data.transferEncodingCount > 0) {
        if (m_data.contentLengthCount > 0)
            return reject(400, "both Content-Length and Transfer-Encoding");
        if (m_data.version < 11)
            return reject(400, "Transfer-Encoding in an HTTP/1.0 request");
        if (m_data.transferEncodingCount > 1 || !Core::equalsIgnoreCase(trimView(m_data.view(m_data.transferEncoding)), "chunked"))
            return reject(501, "only Transfer-Encoding: chunked is supported");
    }
}

int statusFor(const error_code& ec, const RequestData& data, const beast::flat_buffer& buffer, std::size_t headerLimit,
              std::string& why)
{
    if (data.rejectStatus) {
        why = data.rejectReason;
        return data.rejectStatus;
    }
    if (ec == http::error::header_limit) {
        // A request line that alone overflows the limit is a URI too long.
        // (Beast parses the request line before the fields: once it has, the
        // overflow is in the fields.)
        const std::string_view seen(static_cast<const char*>(buffer.data().data()), std::min(buffer.size(), headerLimit));
        if (data.method.length == 0 && seen.find("\r\n") == std::string_view::npos) {
            why = "request line too long";
            return 414;
        }
        why = "request header too large";
        return 431;
    }
    if (ec == http::error::body_limit) {
        why = "request body too large";
        return 413;
    }
    why = "malformed request: " + ec.message();
    return 400;
}

} // namespace Floodgate::Http
