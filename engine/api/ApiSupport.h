// SPDX-License-Identifier: GPL-3.0-or-later
// What every route of the admin API uses (private to engine/api): JSON and
// error answers, the answer to a write after its COMMIT, the path's
// segments, query parameters, bodies, names and who is asking.
#pragma once

#include "http/AdminServer.h"
#include "wire/Codec.h"
#include "wire/Json.h"
#include "core/Target.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Storage {
struct Outcome;
enum class Result : std::uint8_t;
}

namespace Floodgate::Api {

Http::AdminResponse json(int status, const Wire::Json& body);
// {"error": message}
Http::AdminResponse error(int status, std::string message);
// 405 with an Allow header.
Http::AdminResponse methodNotAllowed(const char* allow);
// A store's outcome as the API answers it.
// A storage result as the HTTP status the API answers with.
int httpStatus(Storage::Result result);
Http::AdminResponse fromOutcome(const Storage::Outcome& outcome);

// A write: submitted to the store; its answer goes out after COMMIT (or
// with its failure) from the writer thread. Nothing waits for it here.
template <class Submit>
std::optional<Http::AdminResponse> afterCommit(const Http::AdminReply& reply, Submit&& submit)
{
    submit([reply](const Storage::Outcome& o) { reply(fromOutcome(o)); });
    return std::nullopt;
}

// Percent-decoding of a path segment or a query value; nullopt when badly encoded.
using Core::percentDecode;
// A query parameter's decoded value; nullopt when absent or badly encoded.
std::optional<std::string> queryValue(std::string_view query, std::string_view name);
// A whole number query parameter from 0 to `max`; error text naming it when
// it is anything else (a sign, "-0", a fraction, an exponent, more than
// `max`: nothing is silently capped).
bool queryNumber(const Http::AdminRequest& r, std::string_view name, std::int64_t& out, std::int64_t max, std::string& why);
// "/api/v1/lists/blocklist" -> {"api", "v1", "lists", "blocklist"}
std::vector<std::string> segments(std::string_view path);
// Names in paths (tiers, customers): printable UTF-8, no slashes, not too long.
using Wire::Codec::validName;
// The body as JSON, or `failure` set to the 400 that says why not.
std::optional<Wire::Json> parseBody(const Http::AdminRequest& r, Http::AdminResponse& failure);
// The audit trail's actor for a request: "api:<peer address>".
std::string actorOf(const Http::AdminRequest& r);

} // namespace Floodgate::Api
