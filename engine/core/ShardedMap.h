// SPDX-License-Identifier: GPL-3.0-or-later
// A small map split in 16 shards, each behind its own lock (ShortLock.h: a
// thread that finds it taken spins a little before it sleeps), for engine
// state touched only on some requests (cooldowns, escalation history).
// Private to the engine.
#pragma once

#include "core/ShortLock.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace Floodgate::Core {

template <class Key, class Value, class Hash>
class ShardedMap {
public:
    template <class Fn>
    decltype(auto) with(const Key& key, Fn&& fn)
    {
        Shard& s = shard(key);
        std::lock_guard lock(s.mutex);
        return fn(s.map, s.map.find(key));
    }
    template <class Pred>
    std::size_t eraseIf(Pred&& pred)
    {
        std::size_t n = 0;
        for (Shard& s : m_shards) {
            std::lock_guard lock(s.mutex);
            n += std::erase_if(s.map, pred);
        }
        return n;
    }
    template <class Pred>
    std::size_t countIf(Pred&& pred) const
    {
        std::size_t n = 0;
        for (const Shard& s : m_shards) {
            std::lock_guard lock(s.mutex);
            n += std::size_t(std::count_if(s.map.begin(), s.map.end(), pred));
        }
        return n;
    }

    template <class Fn>
    void forEach(Fn&& fn) const
    {
        for (const Shard& s : m_shards) {
            std::lock_guard lock(s.mutex);
            for (const auto& kv : s.map)
                fn(kv);
        }
    }

private:
    struct alignas(64) Shard {
        mutable ShortLock mutex;
        std::unordered_map<Key, Value, Hash> map;
    };
    Shard& shard(const Key& key) { return m_shards[(Hash{}(key) >> 20) % m_shards.size()]; }
    std::array<Shard, 16> m_shards;
};

} // namespace Floodgate::Core
