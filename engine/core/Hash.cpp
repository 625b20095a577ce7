// SPDX-License-Identifier: MIT
#include "Hash.h"

#include <chrono>
#include <random>

namespace Floodgate::Core {

std::uint64_t processHashSeed()
{
    // Per process, so an attacker cannot precompute keys that collide in our
    // tables from reading the source.
    static const std::uint64_t seed = [] {
        std::random_device rd;
        const std::uint64_t a = (std::uint64_t(rd()) << 32) ^ rd();
        return mix64(a ^ std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
    }();
    return seed;
}

} // namespace Floodgate::Core
