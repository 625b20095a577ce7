// SPDX-License-Identifier: GPL-3.0-or-later
// Compiling a configuration: each rule's, tier's and customer's levels laid
// out in the cells of one table entry, signatures that tell when a key's
// entry no longer fits the levels, strings hashed into keys once.
#include "core/EngineImpl.h"

#include <map>

namespace Floodgate::Core {

namespace {

std::uint32_t foldSignature(std::uint64_t h)
{
    return std::uint32_t(h ^ (h >> 32)) | 1u;  // never 0: 0 marks a fresh entry
}

std::string lower(std::string s)
{
    for (char& c : s)
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
    return s;
}

std::uint32_t signatureOf(const std::vector<LevelSpec>& levels, std::uint64_t seed)
{
    std::uint64_t h = seed;
    for (const auto& l : levels)
        h = mix64(h ^ l.shapeSignature());
    return foldSignature(h);
}

std::vector<LevelSpec> compileLevels(const std::vector<std::pair<Level, std::string>>& named, std::uint16_t& offset, Millis& keepMs,
                                     bool shared)
{
    std::vector<LevelSpec> out;
    for (const auto& [level, name] : named) {
        LevelSpec spec = LevelSpec::compile(level, name, shared);
        spec.offset = offset;
        offset = std::uint16_t(offset + (shared ? 2 : 1) * spec.cells);  // a shared level: the other nodes' counts follow
        keepMs = std::max(keepMs, spec.keepMs());
        out.push_back(spec);
    }
    return out;
}

// A cluster entry's sync cells go after its levels; its name for Redis
// comes from the levels' shapes alone (no per-process seed), so every node
// names it the same.
SharedEntry shareEntry(const std::vector<LevelSpec>& levels, std::uint16_t& offset, std::uint64_t seed, bool clustered)
{
    SharedEntry e;
    if (!clustered)
        return e;
    e.sync = offset;
    offset = std::uint16_t(offset + SyncCells::Count);
    e.minLimit = levels.empty() ? 0 : levels.front().limit;
    e.shape = mix64(seed);
    for (const LevelSpec& l : levels) {
        e.minLimit = std::min(e.minLimit, l.limit);
        e.shape = mix64(e.shape ^ mix64(std::uint64_t(l.algorithm) + 1)) ^ mix64(std::uint64_t(l.periodMs))
            ^ mix64(std::uint64_t(l.bucketMs) * GOLDEN_GAMMA) ^ mix64(std::uint64_t(l.lockoutMs) + XXH_PRIME64_2);
    }
    return e;
}

} // namespace

Millis Compiled::lastRequestOf(const KeyTable::Header& h) const
{
    if (h.signature == clientSignature)
        return h.expiresAt - clientKeepMs;
    for (const auto& [signature, keepMs] : earlierClientKeeps)
        if (h.signature == signature)
            return h.expiresAt - keepMs;
    return 0;
}

std::shared_ptr<const Compiled> compile(std::shared_ptr<const EngineConfig> cfg, bool clustered, const Compiled* previous)
{
    auto c = std::make_shared<Compiled>();
    c->source = cfg;
    c->clustered = clustered;
    std::uint16_t clientOffset = 0;  // the live view is kept apart (KeyTable::Live)
    c->clientKeepMs = Tuning::liveWindowMs;
    std::uint16_t widest = 0;
    std::uint64_t clientShape = CLIENT_SHAPE_SEED ^ (clustered ? CLUSTER_SHAPE_SEED : 0);
    for (std::size_t i = 0; i < cfg->rules.size(); ++i) {
        const ThrottleRule& r = cfg->rules[i];
        CompiledRule cr;
        cr.name = r.name;
        cr.discriminator = r.discriminator;
        cr.header = r.header;
        cr.method = r.method;
        cr.anyPath = r.pathGlob.empty() || r.pathGlob == "*";
        if (!cr.anyPath)
            cr.path = PatternSet({r.pathGlob});
        std::vector<std::pair<Level, std::string>> named;
        for (const Level& l : r.levels)
            named.emplace_back(l, l.name.empty() ? r.name + "-" + formatPeriod(l.periodMs) : l.name);
        if (r.discriminator == Discriminator::ClientAddress) {
            cr.space = CLIENT_SPACE;
            cr.levels = compileLevels(named, clientOffset, c->clientKeepMs, clustered);
            for (const auto& l : cr.levels)
                clientShape = mix64(clientShape ^ l.shapeSignature());
            c->clientLevels.insert(c->clientLevels.end(), cr.levels.begin(), cr.levels.end());
        } else {
            cr.space = std::uint32_t(i + 1);
            std::uint16_t own = 0;
            cr.levels = compileLevels(named, own, cr.keepMs, clustered);
            cr.shared = shareEntry(cr.levels, own, i + 1, clustered);
            cr.signature = signatureOf(cr.levels, (i + 1) ^ (clustered ? CLUSTER_SHAPE_SEED : 0));
            widest = std::max(widest, own);
        }
        c->rules.push_back(std::move(cr));
    }
    c->clientShared = shareEntry(c->clientLevels, clientOffset, CLIENT_SHAPE_SEED, clustered);
    c->clientStride = clientOffset;
    c->clientSignature = foldSignature(clientShape);
    if (previous) {
        if (previous->clientSignature != c->clientSignature)
            c->earlierClientKeeps.emplace_back(previous->clientSignature, previous->clientKeepMs);
        for (const auto& earlier : previous->earlierClientKeeps)
            if (earlier.first != c->clientSignature && c->earlierClientKeeps.size() < Tuning::earlierClientKeeps)
                c->earlierClientKeeps.push_back(earlier);
    }
    c->tableStride = std::max({c->clientStride, widest, ContinuationWindow::Cells});

    std::map<std::string, const Tier*> tiers;
    for (const Tier& t : cfg->tiers)
        tiers[t.name] = &t;
    for (const Customer& cu : cfg->customers) {
        const Tier* tier = tiers.at(cu.tier);  // validate() checked it exists
        std::map<Millis, std::pair<Level, std::string>> byPeriod;
        for (const Level& l : tier->levels)
            byPeriod[l.periodMs] = {l, l.name.empty() ? lower(tier->name) + "-" + formatPeriod(l.periodMs) : l.name};
        for (const Level& l : cu.overrides)  // replace the same period, add the others
            byPeriod[l.periodMs] = {l, l.name.empty() ? cu.id + "-" + formatPeriod(l.periodMs) : l.name};
        std::vector<std::pair<Level, std::string>> named;
        for (auto& [period, p] : byPeriod)
            named.push_back(p);
        CompiledCustomer cc;
        cc.id = cu.id;
        cc.name = cu.name;
        cc.tier = cu.tier;
        std::uint16_t own = 0;
        cc.levels = compileLevels(named, own, cc.keepMs, clustered);
        cc.shared = shareEntry(cc.levels, own, CUSTOMER_SHAPE_SEED, clustered);
        cc.signature = signatureOf(cc.levels, CUSTOMER_SHAPE_SEED ^ (clustered ? CLUSTER_SHAPE_SEED : 0));
        const Hash128 idHash = keyedHash128(cu.id);
        cc.key = TableKey{idHash.lo, idHash.hi, 0, 0, 0};
        cc.tag = customerTag(cc.key);
        c->customerByTag.emplace(cc.tag, cu.id);
        c->customerStride = std::max(c->customerStride, own);
        c->customers.emplace(cu.id, std::move(cc));
    }
    for (const Customer& cu : cfg->customers)
        for (const CustomerKey& k : cu.keys)
            if (const auto digest = digestFromHex(k.sha256))  // validate() checked every one
                c->customerKeys.emplace(*digest, Compiled::KeyOwner{&c->customers.at(cu.id), k.expiresAt});
    for (const Cooldown& cd : cfg->cooldowns) {
        CompiledCooldown cc;
        cc.rule.assign("cooldown:" + cd.name);
        cc.method = cd.method;
        cc.path = PatternSet({cd.pathGlob});
        cc.durationMs = cd.durationMs;
        cc.userHeader = cd.userHeader;
        cc.actionHash = keyedHash64(cd.name);
        c->cooldowns.push_back(std::move(cc));
    }
    c->excluded = PatternSet(cfg->bot.excludedPaths, true);  // "/LOGO.PNG" is an image too
    c->safeAgents = PatternSet(cfg->bot.safeUserAgents, true, true);
    c->cookielessOnly = cfg->bot.cookielessOnly;
    c->escalation = cfg->escalation;
    c->settings = cfg->settings;
    return c;
}

} // namespace Floodgate::Core
