# SPDX-License-Identifier: MIT
# One INTERFACE target carries the flags every Floodgate target shares.
add_library(fg_common INTERFACE)
target_compile_features(fg_common INTERFACE cxx_std_20)
target_compile_options(fg_common INTERFACE -Wall -Wextra -Wpedantic)
target_compile_definitions(fg_common INTERFACE
  QT_NO_CAST_FROM_ASCII
  QT_NO_CONTEXTLESS_CONNECT
  QT_NO_KEYWORDS)
# RelWithDebInfo defaults to -O2 -g; the engine is the hot path, keep NDEBUG so
# asserts never run per request.
