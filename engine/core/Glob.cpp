// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Glob.h"

#include <algorithm>

namespace Floodgate::Core {

namespace {

char fold(char c, bool ignoreCase)
{
    return (ignoreCase && c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
}

bool sameChars(std::string_view a, std::string_view b, bool ignoreCase)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (fold(a[i], ignoreCase) != fold(b[i], ignoreCase))
            return false;
    return true;
}

bool hasWildcard(std::string_view s, std::size_t from = 0, std::size_t to = std::string_view::npos)
{
    const std::string_view part = s.substr(from, to == std::string_view::npos ? std::string_view::npos : to - from);
    return part.find_first_of("*?") != std::string_view::npos;
}

} // namespace

bool globMatch(std::string_view p, std::string_view t, bool ignoreCase)
{
    // Iterative matcher with one backtrack point: linear in practice and never
    // exponential, whatever an attacker puts in the path.
    std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
    while (ti < t.size()) {
        if (pi < p.size() && (p[pi] == '?' || (p[pi] != '*' && fold(p[pi], ignoreCase) == fold(t[ti], ignoreCase)))) {
            ++pi;
            ++ti;
        } else if (pi < p.size() && p[pi] == '*') {
            star = pi++;
            mark = ti;
        } else if (star != std::string_view::npos) {
            pi = star + 1;
            ti = ++mark;
        } else {
            return false;
        }
    }
    while (pi < p.size() && p[pi] == '*')
        ++pi;
    return pi == p.size();
}

PatternSet::PatternSet(const std::vector<std::string>& patterns, bool ignoreCase, bool substringWhenPlain)
    : m_ignoreCase(ignoreCase)
{
    for (const auto& p : patterns) {
        if (p.empty())
            continue;
        if (!hasWildcard(p)) {
            (substringWhenPlain ? m_substrings : m_exact).push_back(p);
        } else if (p.size() > 1 && p.front() == '*' && !hasWildcard(p, 1)) {
            std::string suffix = p.substr(1);
            if (suffix.size() >= 2 && suffix.size() <= MaxExtension + 1 && suffix.front() == '.'
                && suffix.find_first_of("./", 1) == std::string::npos) {
                for (char& ch : suffix)
                    ch = fold(ch, m_ignoreCase);
                m_extensions.push_back(std::move(suffix));
            } else {
                m_suffixes.push_back(std::move(suffix));
            }
        } else if (p.size() > 1 && p.back() == '*' && !hasWildcard(p, 0, p.size() - 1)) {
            m_prefixes.push_back(p.substr(0, p.size() - 1));
        } else {
            m_globs.push_back(p);
        }
    }
    std::sort(m_extensions.begin(), m_extensions.end());
    m_extensions.erase(std::unique(m_extensions.begin(), m_extensions.end()), m_extensions.end());
    m_suffixesAreExtensions = std::all_of(m_suffixes.begin(), m_suffixes.end(),
                                          [](const std::string& s) { return s.find('.') == 0 && s.find('/') == std::string::npos; });
}

bool PatternSet::matches(std::string_view text) const
{
    if (!m_extensions.empty()) {
        const auto dot = text.rfind('.');
        if (dot != std::string_view::npos && text.size() - dot <= MaxExtension + 1
            && text.find('/', dot) == std::string_view::npos) {
            char folded[MaxExtension + 1];
            const std::size_t n = text.size() - dot;
            for (std::size_t i = 0; i < n; ++i)
                folded[i] = fold(text[dot + i], m_ignoreCase);
            if (std::binary_search(m_extensions.begin(), m_extensions.end(), std::string_view(folded, n),
                                   [](std::string_view a, std::string_view b) { return a < b; }))
                return true;
        }
    }
    bool trySuffixes = !m_suffixes.empty();
    if (trySuffixes && m_suffixesAreExtensions) {
        const auto dot = text.rfind('.');
        trySuffixes = dot != std::string_view::npos && text.find('/', dot) == std::string_view::npos;
    }
    if (trySuffixes)
        for (const auto& s : m_suffixes)
            if (text.size() >= s.size() && sameChars(text.substr(text.size() - s.size()), s, m_ignoreCase))
                return true;
    for (const auto& s : m_prefixes)
        if (text.size() >= s.size() && sameChars(text.substr(0, s.size()), s, m_ignoreCase))
            return true;
    for (const auto& s : m_exact)
        if (sameChars(text, s, m_ignoreCase))
            return true;
    for (const auto& s : m_substrings) {
        if (s.size() > text.size())
            continue;
        for (std::size_t i = 0; i + s.size() <= text.size(); ++i)
            if (sameChars(text.substr(i, s.size()), s, m_ignoreCase))
                return true;
    }
    for (const auto& g : m_globs)
        if (globMatch(g, text, m_ignoreCase))
            return true;
    return false;
}

} // namespace Floodgate::Core
