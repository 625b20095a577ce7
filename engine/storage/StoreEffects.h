// SPDX-License-Identifier: GPL-3.0-or-later
// What the Store's files share (private to engine/storage): the effects of
// a batch of jobs, published to the engine only after its COMMIT, and the
// audit trail's name for a list entry.
#pragma once

#include "core/AddressList.h"
#include "storage/Store.h"

#include <string>
#include <utility>
#include <vector>

namespace Floodgate::Storage {

struct Store::Effects {
    bool config = false;
    std::vector<std::pair<Core::ListKind, Core::ListEntry>> upserts;
    std::vector<std::pair<Core::ListKind, Core::Cidr>> removals;
    std::vector<Core::ListChange> listChanges;  // the operator's, for Store::onListChange
    std::vector<ConfigChange> configChanges;    // the operator's, for Store::onConfigChange

    void merge(Effects&& other)
    {
        config = config || other.config;
        for (auto& u : other.upserts)
            upserts.push_back(std::move(u));
        for (auto& r : other.removals)
            removals.push_back(r);
        for (auto& c : other.listChanges)
            listChanges.push_back(std::move(c));
        for (auto& c : other.configChanges)
            configChanges.push_back(std::move(c));
    }
    bool empty() const { return !config && upserts.empty() && removals.empty(); }
};

// "blocklist 203.0.113.0/24"
inline std::string subjectOf(Core::ListKind kind, const Core::Cidr& range)
{
    return std::string(toString(kind)) + " " + range.toString();
}

} // namespace Floodgate::Storage
