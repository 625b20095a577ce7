// SPDX-License-Identifier: GPL-3.0-or-later
// What the admin API suites share: the serving stack with the admin server on
// 127.0.0.1 port 0 (TrafficStack plus AdminApi and AdminServer), calls with
// and without the admin token, a string field of a JSON answer, and a
// temporary folder handing each case a fresh SQLite file.
#pragma once

#include "api/AdminApi.h"
#include "http/AdminServer.h"
#include "wire/Json.h"
#include "TrafficStack.h"

#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <QtGlobal>

#include <memory>
#include <string>

namespace FloodgateTest {

// How a test wants its admin server.
struct Setup {
    bool beyondLoopback = false;
    Floodgate::Http::AdminOptions admin = [] {
        Floodgate::Http::AdminOptions o;
        o.port = 0;
        o.bodyLimitBytes = 64 * 1024;
        return o;
    }();
    int busyTimeoutMs = Floodgate::Storage::StoreOptions{}.busyTimeoutMs;
};

struct Stack : TrafficStack {
    explicit Stack(const QString& dbPath, Setup setup = {})
        : TrafficStack(dbPath.toStdString(), setup.busyTimeoutMs)
    {
        Floodgate::Api::ApiOptions ao;
        ao.beyondLoopback = setup.beyondLoopback;
        ao.token = store->adminToken();
        api = std::make_unique<Floodgate::Api::AdminApi>(*engine, *store, &log, &metrics, clock, ao);
        admin = std::make_unique<Floodgate::Http::AdminServer>(setup.admin, api->handlers());
        std::string why;
        if (!admin->start(&why))
            qFatal("admin: %s", why.c_str());
    }
    ~Stack() { admin->stop(); }

    // With the token, as every script sends it.
    Response call(const std::string& method, const std::string& target, const std::string& body = {}, const std::string& headers = {})
    {
        return callWithout(method, target, body, bearer(store->adminToken()) + headers);
    }
    // Exactly the headers given: no token unless they carry one.
    Response callWithout(const std::string& method, const std::string& target, const std::string& body = {}, const std::string& headers = {})
    {
        return fetch(admin->port(), withBody(method, target, body, headers)).value_or(Response{});
    }
    Floodgate::Wire::Json callJson(const std::string& method, const std::string& target, const std::string& body = {})
    {
        return Floodgate::Wire::Json::parse(call(method, target, body).body).value_or(Floodgate::Wire::Json());
    }
    std::unique_ptr<Floodgate::Api::AdminApi> api;
    std::unique_ptr<Floodgate::Http::AdminServer> admin;
};

inline QString str(const Floodgate::Wire::Json* j)
{
    return j && j->isString() ? QString::fromStdString(j->asString()) : QStringLiteral("<missing>");
}

// The base of every admin API suite: freshDb() names a new SQLite file in a
// temporary folder that lives as long as the suite.
class ApiSuite : public QObject {
protected:
    QString freshDb() { return m_dir.filePath(QStringLiteral("api%1.db").arg(++m_n)); }

private:
    QTemporaryDir m_dir;
    int m_n = 0;
};

} // namespace FloodgateTest
