// SPDX-License-Identifier: MIT
// Publishing what was committed to the engine (the rules, list changes, everything after another process wrote), and purging expired entries.
#include "storage/Store.h"

#include "wire/Codec.h"
#include "core/Engine.h"
#include "storage/Sqlite.h"
#include "storage/StoreEffects.h"
#include "storage/Tables.h"

#include <algorithm>
#include <set>

namespace Floodgate::Storage {

using namespace Core;
using namespace Wire;

void Store::publishConfig(EngineConfig config)
{
    if (!m_engine)
        return;
    if (m_adjust)
        m_adjust(config);
    if (auto error = m_engine->setConfig(config)) {
        report("the stored configuration is not valid (" + *error + "); the running one stays");
        return;
    }
    if (m_published)
        m_published(config);
}

void Store::publish(const Effects& fx)
{
    if (!m_engine)
        return;
    if (fx.config)
        publishConfig(Tables::readConfig(*m_writer));
    std::vector<ListEntry> written;  // automatic bans whose rows this batch wrote
    for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
        std::set<Cidr> touched;
        std::vector<ListEntry> added;
        for (const auto& [k, e] : fx.upserts) {
            if (k != kind)
                continue;
            if (e.source == ListSource::Automatic) {
                // The engine holds the ban already; its row is now on disk.
                written.push_back(e);
                continue;
            }
            touched.insert(e.range);
            added.push_back(e);
            if (kind == ListKind::Blocklist)
                m_engine->removeAutomaticBan(e.range);  // the operator's entry replaces it
        }
        for (const auto& [k, range] : fx.removals) {
            if (k != kind)
                continue;
            touched.insert(range);
            if (kind == ListKind::Blocklist)
                m_engine->removeAutomaticBan(range);
        }
        if (touched.empty())
            continue;  // an automatic ban is not on the operator's list
        std::vector<ListEntry> next;
        const auto current = m_engine->list(kind);
        next.reserve(current->size() + added.size());
        for (const ListEntry& e : current->entries())
            if (!touched.count(e.range))
                next.push_back(e);
        for (ListEntry& e : added)
            next.push_back(std::move(e));
        m_engine->setList(kind, std::make_shared<const AddressList>(std::move(next)));
    }
    m_engine->automaticBansStored(written);
    if (m_listChanged)
        for (const ListChange& c : fx.listChanges)
            if (!c.actor.starts_with("cluster:"))
                m_listChanged(c);
}

void Store::publishAll()
{
    if (!m_engine)
        return;
    Loaded stored = readStored(*m_writer);
    publishConfig(std::move(stored.config));
    m_engine->setList(ListKind::Safelist, std::make_shared<const AddressList>(std::move(stored.safelist)));
    m_engine->setList(ListKind::Blocklist, std::make_shared<const AddressList>(std::move(stored.blocklist)));
    m_engine->reloadAutomaticBans(std::move(stored.automatic));  // keeps the bans not written yet
}

void Store::purgeExpired()
{
    const Millis now = m_clock.now();
    std::vector<ListedEntry> gone;
    {
        WriteTransaction tx(*m_writer);
        // Escalation history is forgotten after a week without a new ban, as the engine does.
        const std::size_t forgotten = Tables::deleteOffendersBefore(*m_writer, now - Tuning::escalationMemoryMs);
        gone = Tables::deleteExpired(*m_writer, now);
        if (gone.empty()) {
            if (forgotten)
                tx.commit();
            return;  // otherwise the transaction rolls back: nothing was written
        }
        // One audit row per purge; the rows that created the entries stay.
        Json before = Json::array();
        for (std::size_t i = 0; i < gone.size() && i < 100; ++i)
            before.push(Codec::toJson(gone[i].entry, gone[i].kind, now));
        writeAudit(*m_writer, Actor{"floodgate"}, "list.expire", std::to_string(gone.size()) + (gone.size() == 1 ? " entry" : " entries"),
                   &before, nullptr);
        tx.commit();
    }
    if (!m_engine)
        return;
    // Expired entries already stopped applying at their expiry; this only
    // frees their memory. The engine forgets its own expired bans in purge().
    for (ListKind kind : {ListKind::Safelist, ListKind::Blocklist}) {
        const bool any = std::any_of(gone.begin(), gone.end(), [&](const ListedEntry& e) {
            return e.kind == kind && e.entry.source != ListSource::Automatic;
        });
        if (any)
            m_engine->setList(kind, std::make_shared<const AddressList>(m_engine->list(kind)->withoutExpired(now)));
    }
}

} // namespace Floodgate::Storage
