// SPDX-License-Identifier: GPL-3.0-or-later
// Cooldowns shared by the nodes of a cluster (docs/CLUSTER.md): the engine
// tells the hook of each cooldown reportSuccess starts, takes the ones other
// nodes started, and lists what it holds. The request path only reads the
// cooldown map (EngineDecide.cpp); nothing here waits on anything.
#include "core/EngineImpl.h"

#include <charconv>
#include <cstdio>

namespace Floodgate::Core {

std::string encodeCooldownKey(const CooldownKey& k)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%c%016llx%016llx%016llx", k.byAddress ? 'a' : 'u', static_cast<unsigned long long>(k.a),
                  static_cast<unsigned long long>(k.b), static_cast<unsigned long long>(k.action));
    return buf;
}

std::optional<CooldownKey> decodeCooldownKey(std::string_view text)
{
    if (text.size() != 49 || (text[0] != 'a' && text[0] != 'u'))
        return std::nullopt;
    CooldownKey k;
    k.byAddress = text[0] == 'a';
    std::uint64_t* words[] = {&k.a, &k.b, &k.action};
    for (int i = 0; i < 3; ++i) {
        const char* b = text.data() + 1 + 16 * i;
        const auto r = std::from_chars(b, b + 16, *words[i], 16);
        if (r.ec != std::errc() || r.ptr != b + 16)
            return std::nullopt;
    }
    return k;
}

void Engine::onCooldownStarted(std::function<void(const SharedCooldown&)> hook)
{
    m->onCooldownStarted = std::move(hook);
}

bool Engine::takeCooldown(const SharedCooldown& cooldown)
{
    const auto key = decodeCooldownKey(cooldown.key);
    if (!key)
        return false;
    m->cooldowns.with(*key, [&](auto& map, auto it) {
        if (it == map.end())
            map.emplace(*key, cooldown.until);
        else
            it->second = std::max(it->second, cooldown.until);
    });
    return true;
}

bool Engine::dropCooldown(std::string_view text)
{
    const auto key = decodeCooldownKey(text);
    if (!key)
        return false;
    return m->cooldowns.with(*key, [&](auto& map, auto it) {
        if (it == map.end())
            return false;
        map.erase(it);
        return true;
    });
}

std::vector<SharedCooldown> Engine::cooldowns(Millis now) const
{
    std::vector<SharedCooldown> out;
    m->cooldowns.forEach([&](const auto& kv) {
        if (kv.second > now)
            out.push_back(SharedCooldown{encodeCooldownKey(kv.first), kv.second});
    });
    return out;
}

} // namespace Floodgate::Core
