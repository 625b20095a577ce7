// SPDX-License-Identifier: GPL-3.0-or-later
// Whether this test binary runs under a sanitizer (scripts/test-sanitizers),
// for the few tests that measure time or memory: instrumented code runs
// several times slower (TSan about 5-15x) and holds more memory.
#pragma once

namespace FloodgateTest {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool Sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool Sanitized = true;
#else
inline constexpr bool Sanitized = false;
#endif
#else
inline constexpr bool Sanitized = false;
#endif

// A latency bound a test asserts, stretched under a sanitizer: what such a
// run checks is correctness (no race, no bad access), not speed.
constexpr long long latencyBound(long long ms)
{
    return Sanitized ? ms * 5 : ms;
}

} // namespace FloodgateTest
