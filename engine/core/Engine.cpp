// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's life and its publications: construction, configuration and
// list edits (each builds the next immutable set), and purge. The request
// path is in EngineDecide.cpp, the snapshots in EngineQueries.cpp.
#include "core/EngineImpl.h"

#include <stdexcept>

namespace Floodgate::Core {

namespace {

std::atomic<std::uint64_t> g_nextEngineId{1};

} // namespace

Engine::Engine(EngineConfig config)
    : m(std::make_unique<Impl>())
{
    m->id = g_nextEngineId.fetch_add(1);
    if (auto error = validate(config))
        throw std::invalid_argument("invalid engine configuration: " + *error);
    auto cfg = std::make_shared<const EngineConfig>(std::move(config));
    auto p = std::make_shared<Published>();
    p->compiled = compile(cfg, false);
    p->clients = clientTable(cfg->settings.maxTrackedKeys, p->compiled->tableStride);
    p->customers = std::make_shared<KeyTable>(std::max<std::size_t>(1024, cfg->customers.size() * 2), p->compiled->customerStride);
    m->published = std::move(p);
}

Engine::~Engine()
{
    m->stopCompactor();
}

std::optional<std::string> Engine::setConfig(EngineConfig config)
{
    if (auto error = validate(config))
        return error;
    auto cfg = std::make_shared<const EngineConfig>(std::move(config));
    auto compiled = compile(cfg, m->cluster.enabled, m->snapshot()->compiled.get());
    m->publish([&](Published& p) {
        // Keep the tables (and so every count) unless the new shape needs wider
        // entries or another capacity; entries whose shape changed start over.
        if (compiled->tableStride > p.clients->strideCells() || cfg->settings.maxTrackedKeys != p.clients->capacity())
            p.clients = clientTable(cfg->settings.maxTrackedKeys, compiled->tableStride);
        const std::size_t customerCapacity = std::max<std::size_t>(1024, cfg->customers.size() * 2);
        if (compiled->customerStride > p.customers->strideCells() || customerCapacity > p.customers->capacity())
            p.customers = std::make_shared<KeyTable>(customerCapacity, compiled->customerStride);
        p.compiled = compiled;
    });
    return std::nullopt;
}

std::shared_ptr<const EngineConfig> Engine::config() const
{
    return m->snapshot()->compiled->source;
}

void Engine::setList(ListKind kind, std::shared_ptr<const AddressList> list)
{
    if (!list)
        list = std::make_shared<const AddressList>();
    m->publish([&](Published& p) { (kind == ListKind::Safelist ? p.lists.safelist : p.lists.blocklist) = std::move(list); });
}

void Engine::editList(ListKind kind, const std::vector<ListEntry>& puts, const std::vector<Cidr>& removals)
{
    if (puts.empty() && removals.empty())
        return;
    const auto slot = kind == ListKind::Safelist ? &ListSet::safelist : &ListSet::blocklist;
    // Made outside the publication lock, which deciding threads take to pick
    // up a new set; made again under it when another edit came first.
    ListSet now = m->snapshot()->lists;
    const std::shared_ptr<const AddressList> before = now.*slot;
    auto next = std::make_shared<const AddressList>(before->edited(puts, removals));
    m->publish([&](Published& p) {
        std::shared_ptr<const AddressList>& list = p.lists.*slot;
        if (list != before)
            next = std::make_shared<const AddressList>(list->edited(puts, removals));
        list = next;
    });
    m->compactLater(*next);
}

bool Engine::compactLists()
{
    return m->compactLists();
}

bool Engine::Impl::compactLists()
{
    bool any = false;
    for (auto slot : {&ListSet::safelist, &ListSet::blocklist, &ListSet::automatic}) {
        const std::shared_ptr<const AddressList> before = snapshot()->lists.*slot;
        if (before->pendingEdits() == 0)
            continue;
        any = true;
        // The whole list is built here, outside every lock; only the edits
        // made meanwhile are carried over under the publication lock.
        const AddressList merged = before->compacted();
        publish([&](Published& p) {
            if (auto rebased = (p.lists.*slot)->rebased(*before, merged))
                p.lists.*slot = std::move(rebased);
        });
    }
    return any;
}

void Engine::Impl::compactLater(const AddressList& list)
{
    if (!list.wantsCompaction())
        return;
    std::lock_guard lock(compactor.mutex);
    if (compactor.stop || compactor.due)
        return;
    compactor.due = true;
    if (!compactor.thread.joinable()) {
        compactor.thread = std::thread([this] {
            std::unique_lock lock(compactor.mutex);
            while (true) {
                compactor.wake.wait(lock, [this] { return compactor.due || compactor.stop; });
                if (compactor.stop)
                    return;
                compactor.due = false;
                lock.unlock();
                compactLists();
                lock.lock();
            }
        });
    }
    compactor.wake.notify_one();
}

void Engine::Impl::stopCompactor()
{
    {
        std::lock_guard lock(compactor.mutex);
        compactor.stop = true;
    }
    compactor.wake.notify_one();
    if (compactor.thread.joinable())
        compactor.thread.join();
}

std::shared_ptr<const AddressList> Engine::list(ListKind kind) const
{
    const ListSet l = lists();
    return kind == ListKind::Safelist ? l.safelist : l.blocklist;
}

ListSet Engine::lists() const
{
    return m->snapshot()->lists;
}

Cidr Engine::countingRange(const IpAddress& address) const
{
    const Compiled& c = *m->snapshot()->compiled;
    const IpAddress key = countingKey(address, c.settings.ipv6PrefixBits, c.settings.ipv4PrefixBits);
    return Cidr(key, c.keyPrefix(key));
}

std::size_t Engine::purge(Millis now)
{
    m->freeRetired();
    auto p = m->snapshot();
    const Escalation e = p->compiled->escalation;
    std::size_t n = p->clients->purge(now) + p->customers->purge(now);
    n += m->cooldowns.eraseIf([now](const auto& kv) { return kv.second <= now; });
    n += m->offenders.eraseIf([&](const auto& kv) {
        const Offender& o = kv.second;
        const bool windowOver = o.refusals == 0 || now - o.windowStart >= e.findMs;
        const bool historyOver = o.bans == 0 || now - o.lastBanAt >= Tuning::escalationMemoryMs;
        return windowOver && historyOver;
    });
    if (p->lists.automatic->activeCount(now) != p->lists.automatic->size()) {
        m->publish([&](Published& next) {
            next.lists.automatic = std::make_shared<const AddressList>(next.lists.automatic->withoutExpired(now));
        });
    }
    return n;
}

} // namespace Floodgate::Core
