// SPDX-License-Identifier: GPL-3.0-or-later
// Glob patterns for paths and user agents: '*' matches any run of characters
// (including '/'), '?' one character. A set of patterns is compiled so the
// common shapes ("*.css", "/static/*", "/login") cost a comparison, not a
// scan of the text; file extensions ("*.css", "*.woff2") are one binary
// search over the path's own extension, however many there are. The other
// globs are compiled once into a bit-parallel automaton that reads each
// character of the text once (Glob below): no pattern and no text makes a
// match quadratic.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Core {

// One glob, compiled. matches() costs one pass over the text with
// ceil(m / 64) machine words of work per character, m being the pattern's
// characters other than '*' (at most 8 words for Tuning::maxGlobLength),
// whatever the pattern and the text are.
class Glob {
public:
    Glob() : Glob(std::string_view()) {}
    explicit Glob(std::string_view pattern, bool ignoreCase = false);

    bool matches(std::string_view text) const;

private:
    template <std::size_t Words, bool LeadingStar>
    bool run(std::string_view text) const;
    template <bool LeadingStar>
    bool runFor(std::string_view text) const;

    std::size_t m_positions = 0;   // the pattern's characters other than '*': bit i is "matched up to the i-th"
    std::size_t m_words = 0;       // ceil(m_positions / 64)
    bool m_leadingStar = false;    // the start state never ends (else: only before the first character)
    bool m_anyStar = false;
    std::array<std::uint16_t, 256> m_class{};  // byte -> its row of m_masks; row 0: a byte no position names
    std::vector<std::uint64_t> m_masks;        // per row, m_words words: bit i set when position i takes that byte
    std::vector<std::uint64_t> m_stars;        // bit i set when a '*' follows position i (it stays on any byte)
};

bool globMatch(std::string_view pattern, std::string_view text, bool ignoreCase = false);

class PatternSet {
public:
    PatternSet() = default;
    // Globs when a pattern has '*' or '?'; otherwise exact (or, with
    // substringWhenPlain, a substring match: "Googlebot" in a user agent).
    explicit PatternSet(const std::vector<std::string>& patterns, bool ignoreCase = false, bool substringWhenPlain = false);

    bool matches(std::string_view text) const;
    bool empty() const
    {
        return m_extensions.empty() && m_suffixes.empty() && m_prefixes.empty() && m_exact.empty() && m_globs.empty();
    }

private:
    // "*.css" and the like: a dot, then up to this many characters with no dot, '/' or wildcard.
    static constexpr std::size_t MaxExtension = 15;

    bool m_ignoreCase = false;
    bool m_suffixesAreExtensions = false;  // every other suffix starts with '.': skip them for paths with no extension
    std::vector<std::string> m_extensions;  // "*.css" -> ".css" (lower case when ignoring case), sorted
    std::vector<std::string> m_suffixes;    // "*.min.js" -> ".min.js"
    std::vector<std::string> m_prefixes;    // "/static/*" -> "/static/"
    std::vector<std::string> m_exact;
    std::vector<Glob> m_globs;              // the rest, and substrings ("Googlebot" as "*Googlebot*")
};

} // namespace Floodgate::Core
