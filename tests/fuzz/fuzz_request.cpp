// SPDX-License-Identifier: GPL-3.0-or-later
// The request path after parsing, up to the decision and its answer: the
// facts the listener hands the engine (method, target, headers, the client
// resolved through a trusted proxy), Engine::decide under the default rules,
// and the bytes Floodgate would answer with. The input is read as a request
// head ("METHOD TARGET\nName: value\n..."), split leniently so that every
// byte reaches the engine. Properties: never crashes; the answer is one
// well-framed HTTP/1.1 response whose Content-Length matches its body.
#include "http/ClientIdentity.h"
#include "core/Decision.h"
#include "core/Engine.h"
#include "FuzzCheck.h"
#include "http/Responses.h"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

using namespace Floodgate;

namespace {

void checkFramed(const std::string& out, bool head)
{
    FUZZ_CHECK(out.starts_with("HTTP/1."));
    const auto end = out.find("\r\n\r\n");
    FUZZ_CHECK(end != std::string::npos);
    const auto cl = out.find("\r\nContent-Length: ");
    FUZZ_CHECK(cl != std::string::npos && cl < end);
    std::size_t length = 0;
    const char* first = out.data() + cl + 18;
    std::from_chars(first, out.data() + end, length);
    FUZZ_CHECK(head ? out.size() == end + 4 : out.size() == end + 4 + length);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static Core::Engine engine([] {
        Core::EngineConfig c = Core::defaultConfig();
        c.settings.customerHeader = "X-Customer-Id";
        return c;
    }());
    static const Http::TrustedProxies trusted({*Core::Cidr::parse("127.0.0.0/8")});
    static Core::Millis now = 1'800'000'000'000;
    now += 37;  // time moves, so windows roll and lockouts end

    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string_view> lines;
    for (std::size_t pos = 0; pos <= input.size();) {
        const auto nl = input.find('\n', pos);
        lines.push_back(input.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
        if (nl == std::string_view::npos)
            break;
        pos = nl + 1;
    }
    const std::string_view requestLine = lines.front();
    const auto sp = requestLine.find(' ');
    const std::string_view method = requestLine.substr(0, sp);
    const std::string_view target = sp == std::string_view::npos ? std::string_view("/") : requestLine.substr(sp + 1);
    std::vector<Core::HeaderField> headers;
    std::string xff, forwarded;
    std::string_view userAgent, accept;
    std::uint32_t cookies = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto colon = lines[i].find(':');
        const std::string_view name = lines[i].substr(0, colon);
        const std::string_view value = colon == std::string_view::npos ? std::string_view() : lines[i].substr(colon + 1);
        headers.push_back({name, value});
        if (Core::equalsIgnoreCase(name, "x-forwarded-for"))
            (xff.empty() ? xff : xff += ", ") += value;
        else if (Core::equalsIgnoreCase(name, "forwarded"))
            (forwarded.empty() ? forwarded : forwarded += ", ") += value;
        else if (Core::equalsIgnoreCase(name, "user-agent"))
            userAgent = value;
        else if (Core::equalsIgnoreCase(name, "accept"))
            accept = value;
        else if (Core::equalsIgnoreCase(name, "cookie"))
            ++cookies;
    }
    Core::RequestFacts f;
    f.peer = Core::IpAddress::fromV4(0x7f000001 + (size % 7));
    // The listener reads only the header the operator named (X-Forwarded-For here).
    (void)forwarded;
    f.client = Http::resolveClient(f.peer, std::string(xff), trusted).client;
    const auto q = target.find('?');
    f.path = target.substr(0, q);
    f.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    f.method = method;
    f.userAgent = userAgent;
    f.cookieCount = cookies;
    f.headers = headers;

    const Core::Decision d = engine.decide(f, now);
    if (!d.refused())
        engine.reportSuccess(f, now);
    Http::ResponseContext ctx;
    ctx.wantsJson = accept.find("json") != std::string_view::npos;
    ctx.headRequest = Core::equalsIgnoreCase(method, "HEAD");
    ctx.rateLimitHeaders = d.rateLimitHeadersOnAllowed;
    ctx.throttleStatus = d.throttleStatus;
    ctx.keepAlive = size % 2;
    std::string out;
    Http::appendDecisionResponse(out, d, ctx);
    checkFramed(out, ctx.headRequest);
    out.clear();
    Http::appendErrorResponse(out, 400, std::string_view(input.data(), std::min<std::size_t>(input.size(), 200)), true);
    checkFramed(out, false);
    return 0;
}
