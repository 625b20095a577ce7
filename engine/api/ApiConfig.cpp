// SPDX-License-Identifier: GPL-3.0-or-later
// /api/v1/tiers, /api/v1/customers, /api/v1/rules: what the operator configures.
#include "api/AdminApi.h"

#include "api/ApiSupport.h"
#include "core/CustomerKey.h"
#include "wire/JsonReader.h"
#include "wire/Codec.h"
#include "core/Engine.h"
#include "storage/Store.h"

#include <type_traits>

namespace Floodgate::Api {

using namespace Core;
using namespace Wire;
using Http::AdminRequest;
using Http::AdminResponse;

template <class T>
std::optional<AdminResponse> AdminApi::namedCollection(const AdminRequest& r, const Http::AdminReply& reply, const std::vector<std::string>& seg, const Collection& c,
                                        const std::vector<T>& items, const std::function<std::string(const T&)>& keyOf,
                                        const std::function<Json(const T&)>& show,
                                        std::optional<T> (*decode)(const Json&, std::string_view, std::string*),
                                        const std::function<void(T, const Json&, Storage::Actor, Storage::Store::Done)>& put,
                                        const std::function<void(std::string, Storage::Actor, Storage::Store::Done)>& remove)
{
    const bool get = r.method == "GET" || r.method == "HEAD";
    if (seg.size() == 3) {
        if (!get)
            return methodNotAllowed("GET");
        Json list = Json::array();
        for (const T& item : items)
            list.push(show(item));
        Json body = Json::object();
        body.set(c.plural, std::move(list));
        return json(200, body);
    }
    const auto key = percentDecode(seg[3]);
    if (seg.size() != 4 || !key || !validName(*key, c.maxLength))
        return error(400, std::string(c.field) + ": a " + c.singular + " " + c.field + " is 1-" + std::to_string(c.maxLength)
                              + " bytes of printable UTF-8 without '/'");
    const Storage::Actor actor{actorOf(r)};
    if (r.method == "PUT") {
        AdminResponse failure;
        const auto body = parseBody(r, failure);
        if (!body)
            return failure;
        std::string why;
        auto item = decode(*body, *key, &why);
        if (!item)
            return error(400, why);
        return afterCommit(reply, [&](auto done) { put(std::move(*item), *body, actor, done); });
    }
    if (r.method == "DELETE")
        return afterCommit(reply, [&](auto done) { remove(*key, actor, done); });
    if (!get)
        return methodNotAllowed("GET, PUT, DELETE");
    for (const T& item : items)
        if (keyOf(item) == *key)
            return json(200, show(item));
    if constexpr (std::is_same_v<T, Tier>) {
        if (const Tier* tier = findTier(items, *key))  // "pro" is "Pro" (as the store has it)
            return json(200, show(*tier));
    }
    return error(404, "there is no " + std::string(c.singular) + " \"" + *key + "\"");
}

std::optional<AdminResponse> AdminApi::tiers(const Call& call)
{
    const AdminRequest& r = call.request;
    const Http::AdminReply& reply = call.reply;
    const std::vector<std::string>& seg = call.seg;
    const auto tiers = m_engine.config()->tiers;
    return namedCollection<Tier>(
        r, reply, seg, {"tiers", "tier", "name", 40}, tiers, [](const Tier& t) { return t.name; },
        [](const Tier& t) { return Codec::toJson(t); }, Codec::tierFromJson,
        [this](Tier t, const Json&, Storage::Actor a, Storage::Store::Done d) { m_store.putTier(std::move(t), std::move(a), std::move(d)); },
        [this](std::string n, Storage::Actor a, Storage::Store::Done d) { m_store.deleteTier(std::move(n), std::move(a), std::move(d)); });
}

std::optional<AdminResponse> AdminApi::customers(const Call& call)
{
    const AdminRequest& r = call.request;
    const Http::AdminReply& reply = call.reply;
    const std::vector<std::string>& seg = call.seg;
    const Millis now = call.now;
    const auto customers = m_engine.config()->customers;
    auto withUsage = [&](const Customer& c) {
        Json j = Codec::toJson(c);
        Json usage = Json::array();
        if (const auto levels = m_engine.customerUsage(c.id, now)) {
            for (const LevelUsage& u : *levels) {
                Json l = Json::object();
                l.set("name", u.name);
                l.set("limit", u.limit);
                l.set("period", Codec::seconds(u.periodMs));
                l.set("used", u.used);
                l.set("remaining", u.remaining);
                l.set("reset", Core::secondsRoundedUp(u.resetMs));
                usage.push(std::move(l));
            }
        }
        j.set("usage", std::move(usage));
        return j;
    };
    if (seg.size() >= 5 && seg[4] == "keys") {
        const auto id = percentDecode(seg[3]);
        if (!id || !validName(*id, 100))
            return error(400, "id: a customer id is 1-100 bytes of printable UTF-8 without '/'");
        return customerKeys(call, *id);
    }
    // A PUT that says nothing of keys keeps a stored customer's, and gives
    // a new one its first key, shown in the answer this once.
    auto put = [this, now](Customer c, const Json& body, Storage::Actor a, Storage::Store::Done d) {
        if (body.find("keys")) {
            m_store.putCustomer(std::move(c), std::move(a), std::move(d), Storage::Store::Keys::Replace);
            return;
        }
        auto fresh = makeCustomerKey(now);
        if (!fresh) {
            d(Storage::Outcome{Storage::Result::Failed, "no random bytes for the customer's key (OpenSSL's generator failed)", {}});
            return;
        }
        c.keys = {fresh->key};
        m_store.putCustomer(
            std::move(c), std::move(a),
            [d = std::move(d), secret = std::move(fresh->secret)](const Storage::Outcome& o) {
                Storage::Outcome shown = o;
                if (o.result == Storage::Result::Created)
                    shown.value.set("api_key", secret);
                d(shown);
            },
            Storage::Store::Keys::Keep);
    };
    return namedCollection<Customer>(
        r, reply, seg, {"customers", "customer", "id", 100}, customers, [](const Customer& c) { return c.id; }, withUsage,
        Codec::customerFromJson, put,
        [this](std::string id, Storage::Actor a, Storage::Store::Done d) { m_store.deleteCustomer(std::move(id), std::move(a), std::move(d)); });
}

std::optional<AdminResponse> AdminApi::customerKeys(const Call& call, const std::string& id)
{
    const AdminRequest& r = call.request;
    const Storage::Actor actor{actorOf(r)};
    if (call.seg.size() == 5) {
        if (r.method != "POST")
            return methodNotAllowed("POST");
        // {"keep_old": SECONDS}: the other keys stay valid that long (a
        // rotation's overlap); without it they are revoked at once.
        Millis keepOld = 0;
        if (!r.body.empty()) {
            AdminResponse failure;
            const auto body = parseBody(r, failure);
            if (!body)
                return failure;
            std::string why;
            Codec::Reader reader(*body, "", &why);
            if (!reader.isObject({"keep_old"}) || !reader.duration("keep_old", keepOld))
                return error(400, why);
        }
        auto fresh = makeCustomerKey(call.now);
        if (!fresh)
            return error(500, "no random bytes for the customer's key (OpenSSL's generator failed)");
        return afterCommit(call.reply, [&](auto done) {
            m_store.addCustomerKey(id, fresh->key, keepOld, actor, [done, secret = fresh->secret, keyId = fresh->key.id](const Storage::Outcome& o) {
                if (!o.ok())
                    return done(o);
                Storage::Outcome shown = o;
                Json body = Json::object();
                body.set("api_key", secret);
                body.set("id", keyId);
                body.set("customer", o.value);
                shown.value = std::move(body);
                done(shown);
            });
        });
    }
    const auto keyId = percentDecode(call.seg[5]);
    if (call.seg.size() != 6 || !keyId || keyId->empty())
        return error(404, "no such resource: /api/v1/customers/{id}/keys/{key id}");
    if (r.method != "DELETE")
        return methodNotAllowed("DELETE");
    return afterCommit(call.reply, [&](auto done) { m_store.revokeCustomerKey(id, *keyId, actor, done); });
}

std::optional<AdminResponse> AdminApi::rules(const Call& call)
{
    const AdminRequest& r = call.request;
    const Http::AdminReply& reply = call.reply;
    const std::string& method = call.request.method;
    const bool get = call.get;
    std::string why;
    if (get)
        return json(200, Codec::rulesToJson(m_store.config()));
    if (method != "PUT")
        return methodNotAllowed("GET, PUT");
    AdminResponse failure;
    const auto body = parseBody(r, failure);
    if (!body)
        return failure;
    // The body is checked first against the rules in force (a clear
    // 400 without queueing, no database read), then applied to the
    // rules as committed, inside the writer.
    EngineConfig check = *m_engine.config();
    if (!Codec::rulesFromJson(*body, check, &why))
        return error(400, why);
    const Storage::Actor actor{actorOf(r)};
    return afterCommit(reply, [&](auto done) { m_store.putRulesDocument(*body, actor, done); });
}

} // namespace Floodgate::Api
