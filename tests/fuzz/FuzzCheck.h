// SPDX-License-Identifier: GPL-3.0-or-later
// The fuzz targets' oracle: a property that does not hold is a crash, with
// the property's text and the input's length on stderr, so libFuzzer saves
// the input and a regression test can replay it.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                                                     \
    do {                                                                                                         \
        if (!(condition)) {                                                                                      \
            std::fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #condition, __FILE__, __LINE__);          \
            std::abort();                                                                                        \
        }                                                                                                        \
    } while (false)
