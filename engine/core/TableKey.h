// SPDX-License-Identifier: GPL-3.0-or-later
// The key of an entry in the engine's key table (KeyTable.h): an address, or
// a string's keyed hash, with what else tells entries apart. On its own so
// that the cluster's plain values (Cluster.h) can name an entry.
#pragma once

#include <cstdint>

namespace Floodgate::Core {

struct TableKey {
    std::uint64_t a = 0;      // address words, or a string's 128-bit keyed hash
    std::uint64_t b = 0;
    std::uint64_t extra = 0;  // second discriminator next to an address (user agent, path), keyed hash
    std::uint32_t space = 0;  // 0 = client address; rule-specific spaces above
    std::uint32_t pad = 0;
    friend bool operator==(const TableKey&, const TableKey&) = default;
};

} // namespace Floodgate::Core
