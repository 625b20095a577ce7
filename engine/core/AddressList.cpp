// SPDX-License-Identifier: MIT
#include "AddressList.h"

#include "Hash.h"

#include <algorithm>
#include <map>

namespace Floodgate::Core {

struct AddressList::Bucket {
    int prefix = 0;
    std::vector<std::uint32_t> slots;  // entry index + 1; 0 = empty
    std::uint64_t mask = 0;

    const ListEntry* find(const std::vector<ListEntry>& entries, const IpAddress& masked) const
    {
        std::uint64_t i = hashAddress(masked) & mask;
        while (true) {
            const std::uint32_t s = slots[i];
            if (s == 0)
                return nullptr;
            const ListEntry& e = entries[s - 1];
            if (e.range.address() == masked)
                return &e;
            i = (i + 1) & mask;
        }
    }
};

const char* toString(ListKind kind)
{
    return kind == ListKind::Safelist ? "safelist" : "blocklist";
}

const char* toString(ListSource source)
{
    switch (source) {
    case ListSource::Operator: return "operator";
    case ListSource::Automatic: return "automatic";
    case ListSource::Import: return "import";
    }
    return "operator";
}

std::optional<ListKind> listKindFromString(std::string_view text)
{
    if (text == "safelist")
        return ListKind::Safelist;
    if (text == "blocklist")
        return ListKind::Blocklist;
    return std::nullopt;
}

std::optional<ListSource> listSourceFromString(std::string_view text)
{
    if (text == "operator")
        return ListSource::Operator;
    if (text == "automatic")
        return ListSource::Automatic;
    if (text == "import")
        return ListSource::Import;
    return std::nullopt;
}

AddressList::AddressList(std::vector<ListEntry> entries)
{
    // Deduplicate by range, the last one wins, keeping the first position.
    std::map<Cidr, std::size_t> seen;
    for (auto& e : entries) {
        auto [it, inserted] = seen.try_emplace(e.range, m_entries.size());
        if (inserted)
            m_entries.push_back(std::move(e));
        else
            m_entries[it->second] = std::move(e);
    }
    build();
}

void AddressList::build()
{
    std::map<int, std::vector<std::uint32_t>, std::greater<>> groups;
    for (std::uint32_t i = 0; i < m_entries.size(); ++i)
        groups[m_entries[i].range.prefix128()].push_back(i);
    m_byPrefix.clear();
    for (auto& [prefix, indices] : groups) {
        auto b = std::make_shared<Bucket>();
        b->prefix = prefix;
        std::size_t cap = 8;
        while (cap < indices.size() * 2)
            cap <<= 1;
        b->slots.assign(cap, 0);
        b->mask = cap - 1;
        for (std::uint32_t idx : indices) {
            std::uint64_t i = hashAddress(m_entries[idx].range.address()) & b->mask;
            while (b->slots[i] != 0)
                i = (i + 1) & b->mask;
            b->slots[i] = idx + 1;
        }
        m_byPrefix.push_back(std::move(b));
    }
}

const ListEntry* AddressList::match(const IpAddress& address, Millis now) const
{
    for (const auto& b : m_byPrefix) {
        const ListEntry* e = b->find(m_entries, address.masked(b->prefix));
        if (e && e->activeAt(now))
            return e;
    }
    return nullptr;
}

const ListEntry* AddressList::find(const Cidr& range) const
{
    for (const auto& b : m_byPrefix)
        if (b->prefix == range.prefix128())
            return b->find(m_entries, range.address());
    return nullptr;
}

std::size_t AddressList::activeCount(Millis now) const
{
    return std::size_t(std::count_if(m_entries.begin(), m_entries.end(), [now](const ListEntry& e) { return e.activeAt(now); }));
}

AddressList AddressList::with(const ListEntry& entry) const
{
    std::vector<ListEntry> copy = m_entries;
    copy.push_back(entry);
    return AddressList(std::move(copy));
}

AddressList AddressList::without(const Cidr& range) const
{
    std::vector<ListEntry> copy;
    copy.reserve(m_entries.size());
    for (const auto& e : m_entries)
        if (e.range != range)
            copy.push_back(e);
    return AddressList(std::move(copy));
}

AddressList AddressList::withoutExpired(Millis now) const
{
    std::vector<ListEntry> copy;
    copy.reserve(m_entries.size());
    for (const auto& e : m_entries)
        if (e.activeAt(now))
            copy.push_back(e);
    return AddressList(std::move(copy));
}

} // namespace Floodgate::Core
