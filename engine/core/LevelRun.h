// SPDX-License-Identifier: GPL-3.0-or-later
// The per-level run of one decision: the levels that share one entry's cells
// are evaluated together, then counted, refused or left alone as one, and the
// binding level (what the answer reports) is chosen. Private to the engine.
#pragma once

#include "core/Tuning.h"
#include "core/Window.h"

#include <array>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace Floodgate::Core {

// The binding level of a decision: while everything passes, the one with the
// least remaining; once refused, the refusing one that lasts longest (the
// request passes only when every level lets it).
struct Binding {
    const LevelSpec* spec = nullptr;
    Verdict verdict;
    bool refusing = false;

    void consider(const LevelSpec& s, const Verdict& v)
    {
        const bool r = !v.allowed;
        if (!spec) {
            take(s, v, r);
            return;
        }
        if (r != refusing) {
            if (r)
                take(s, v, r);
            return;
        }
        if (r) {
            if (v.retryAfterMs > verdict.retryAfterMs)
                take(s, v, r);
        } else {
            const std::int64_t mine = std::int64_t(s.limit) - std::int64_t(v.used);
            const std::int64_t theirs = std::int64_t(spec->limit) - std::int64_t(verdict.used);
            if (mine < theirs)
                take(s, v, r);
        }
    }
    void take(const LevelSpec& s, const Verdict& v, bool r)
    {
        spec = &s;
        verdict = v;
        refusing = r;
    }
};

// Levels that share one entry's cells, gathered for one decision. validate()
// refuses a configuration with more than Tuning::maxLevelsPerEntry levels on
// one entry, so none is ever left out here.
struct LevelGroup {
    std::array<const LevelSpec*, Tuning::maxLevelsPerEntry> specs;
    std::size_t size = 0;

    void add(const std::vector<LevelSpec>& levels)
    {
        for (const LevelSpec& l : levels)
            if (size < specs.size())  // unreachable past the cap; never write past the array
                specs[size++] = &l;
    }
};

// Evaluates every level of a group over one entry's cells, then applies the
// outcome: counted if every level (and everything decided before) lets the
// request through; otherwise the refusing levels refuse and the countRefused
// ones count it. Returns true when this group refused.
//
// `view` says what shared levels are judged on (a cluster node), and
// `admit()` is asked before a request that passes is counted: false leaves
// the cells and the binding untouched (the request waits for the cluster).
template <class Admit>
bool runLevels(const LevelGroup& group, std::uint32_t* cells, Millis now, bool refusedBefore, Binding& binding, LevelView view,
               Admit&& admit)
{
    // Room for the most levels an entry may have, left uninitialised: a
    // decision writes only the ones it evaluates (zeroing all 64 cost more
    // than evaluating three).
    union Verdicts {
        Verdicts() {}
        Verdict at[Tuning::maxLevelsPerEntry];
    } store;
    Verdict* verdicts = store.at;
    static_assert(std::is_trivially_destructible_v<Verdict>);
    bool refused = false;
    for (std::size_t i = 0; i < group.size; ++i) {
        new (&verdicts[i]) Verdict(evaluate(*group.specs[i], cells + group.specs[i]->offset, now, view));
        refused = refused || !verdicts[i].allowed;
    }
    const bool pass = !refused && !refusedBefore;
    if (pass && group.size > 0 && !admit())
        return false;
    for (std::size_t i = 0; i < group.size; ++i) {
        const LevelSpec& spec = *group.specs[i];
        std::uint32_t* c = cells + spec.offset;
        if (pass) {
            count(spec, c, now);
            verdicts[i].resetMs = resetAfterCount(spec, c, now);
        } else if (!verdicts[i].allowed) {
            refuse(spec, c, now);
        } else if (spec.countRefused) {
            count(spec, c, now);
        }
        binding.consider(spec, verdicts[i]);
    }
    return refused;
}

inline bool runLevels(const LevelGroup& group, std::uint32_t* cells, Millis now, bool refusedBefore, Binding& binding)
{
    return runLevels(group, cells, now, refusedBefore, binding, LevelView{}, [] { return true; });
}

} // namespace Floodgate::Core
