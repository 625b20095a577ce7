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

// Why a bit-parallel automaton (Baeza-Yates and Gonnet's Shift-And, with the
// stars as states that loop on any byte) rather than the usual matcher that
// backtracks to the last '*': that one re-compares the literal after the
// star from every start in the text, so "*aaaa...ab*" against "aaaa..." costs
// |literal| x |text|. Searching for each literal with Knuth-Morris-Pratt would
// be linear, but '?' breaks KMP's failure function (a shift that is safe for
// "a?b" depends on the byte the '?' took). Here the state after a character
// is one bit per pattern position ("the pattern up to here matches the text
// read so far"), every position advanced at once by a shift, an AND with the
// byte's mask and an OR for the stars: each character of the text is read
// once and costs ceil(m / 64) words of work, m <= Tuning::maxGlobLength (8
// words), whatever the pattern and the text; nothing is ever re-read. The
// masks take a row of ceil(m / 64) words per distinct byte of the pattern.
Glob::Glob(std::string_view pattern, bool ignoreCase)
{
    std::string bytes;              // one per position, folded; '?' kept as it is
    std::vector<bool> any;          // the position is a '?'
    std::vector<bool> starAfter;    // a '*' follows the position
    for (char ch : pattern) {
        if (ch == '*') {
            m_anyStar = true;
            if (bytes.empty())
                m_leadingStar = true;
            else
                starAfter.back() = true;
            continue;
        }
        bytes.push_back(fold(ch, ignoreCase));
        any.push_back(ch == '?');
        starAfter.push_back(false);
    }
    m_positions = bytes.size();
    m_words = (m_positions + 63) / 64;

    // A row of masks per byte the pattern names (both cases of a letter share
    // one when ignoring case), and row 0 for every other byte: it takes only
    // the '?' positions.
    std::size_t rows = 1;
    for (std::size_t i = 0; i < m_positions; ++i) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        if (!any[i] && m_class[b] == 0)
            m_class[b] = std::uint16_t(rows++);
    }
    if (ignoreCase)
        for (char c = 'A'; c <= 'Z'; ++c)
            m_class[static_cast<unsigned char>(c)] = m_class[static_cast<unsigned char>(c - 'A' + 'a')];
    m_masks.assign(rows * m_words, 0);
    m_stars.assign(m_words, 0);
    for (std::size_t i = 0; i < m_positions; ++i) {
        const std::size_t word = i / 64;
        const std::uint64_t bit = std::uint64_t(1) << (i % 64);
        if (any[i]) {
            for (std::size_t r = 0; r < rows; ++r)
                m_masks[r * m_words + word] |= bit;
        } else {
            m_masks[m_class[static_cast<unsigned char>(bytes[i])] * m_words + word] |= bit;
        }
        if (starAfter[i])
            m_stars[word] |= bit;
    }
}

// Words == 0: as many words as the pattern needs, on the heap (a pattern
// longer than Tuning::maxGlobLength, built outside the engine). Otherwise a
// fixed count the compiler unrolls and keeps in registers.
template <std::size_t Words, bool LeadingStar>
bool Glob::run(std::string_view text) const
{
    const std::size_t words = Words ? Words : m_words;
    std::uint64_t fixed[Words ? Words : 1] = {};
    std::vector<std::uint64_t> heap;
    std::uint64_t* state = fixed;
    if constexpr (Words == 0) {
        heap.assign(words, 0);
        state = heap.data();
    }
    const std::uint64_t* masks = m_masks.data();
    const std::uint64_t* stars = m_stars.data();
    const std::size_t acceptWord = words - 1;  // the last position's
    const std::uint64_t acceptBit = std::uint64_t(1) << ((m_positions - 1) % 64);
    const bool trailingStar = (stars[acceptWord] & acceptBit) != 0;
    std::uint64_t start = 1;  // the start state: before the first byte, and after it only with a leading '*'
    for (const char ch : text) {
        const std::uint64_t* mask = masks + std::size_t(m_class[static_cast<unsigned char>(ch)]) * words;
        std::uint64_t carry = start;  // into position 0, from the start state
        std::uint64_t live = 0;
#pragma GCC unroll 8  // the state stays in registers: twice as fast at 8 words
        for (std::size_t k = 0; k < words; ++k) {
            const std::uint64_t was = state[k];
            state[k] = (((was << 1) | carry) & mask[k]) | (was & stars[k]);
            carry = was >> 63;
            if constexpr (!LeadingStar)
                live |= state[k];
        }
        if constexpr (LeadingStar) {
            start = 1;
        } else {
            start = 0;
            if (live == 0)
                return false;  // anchored at the start and nothing is left alive
        }
        if (trailingStar && (state[acceptWord] & acceptBit))
            return true;  // the whole pattern matched and its last '*' takes the rest
    }
    return (state[acceptWord] & acceptBit) != 0;
}

template <bool LeadingStar>
bool Glob::runFor(std::string_view text) const
{
    switch (m_words) {
    case 1: return run<1, LeadingStar>(text);
    case 2: return run<2, LeadingStar>(text);
    case 3: return run<3, LeadingStar>(text);
    case 4: return run<4, LeadingStar>(text);
    case 5: return run<5, LeadingStar>(text);
    case 6: return run<6, LeadingStar>(text);
    case 7: return run<7, LeadingStar>(text);
    case 8: return run<8, LeadingStar>(text);
    default: return run<0, LeadingStar>(text);
    }
}

bool Glob::matches(std::string_view text) const
{
    if (m_positions == 0)
        return m_leadingStar || text.empty();
    // Every position takes one byte; without a star, exactly.
    if (text.size() < m_positions || (!m_anyStar && text.size() != m_positions))
        return false;
    return m_leadingStar ? runFor<true>(text) : runFor<false>(text);
}

bool globMatch(std::string_view pattern, std::string_view text, bool ignoreCase)
{
    return Glob(pattern, ignoreCase).matches(text);
}

PatternSet::PatternSet(const std::vector<std::string>& patterns, bool ignoreCase, bool substringWhenPlain)
    : m_ignoreCase(ignoreCase)
{
    for (const auto& p : patterns) {
        if (p.empty())
            continue;
        if (!hasWildcard(p)) {
            if (substringWhenPlain)
                m_globs.emplace_back("*" + p + "*", m_ignoreCase);  // a substring search, linear too
            else
                m_exact.push_back(p);
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
            m_globs.emplace_back(p, m_ignoreCase);
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
    for (const auto& g : m_globs)
        if (g.matches(text))
            return true;
    return false;
}

} // namespace Floodgate::Core
