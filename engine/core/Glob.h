// SPDX-License-Identifier: GPL-3.0-or-later
// Glob patterns for paths and user agents: '*' matches any run of characters
// (including '/'), '?' one character. A set of patterns is compiled so the
// common shapes ("*.css", "/static/*", "/login") cost a comparison, not a
// backtracking match; file extensions ("*.css", "*.woff2") are one binary
// search over the path's own extension, however many there are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::Core {

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
        return m_extensions.empty() && m_suffixes.empty() && m_prefixes.empty() && m_exact.empty() && m_globs.empty()
            && m_substrings.empty();
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
    std::vector<std::string> m_substrings;
    std::vector<std::string> m_globs;
};

} // namespace Floodgate::Core
