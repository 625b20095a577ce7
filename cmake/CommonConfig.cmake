# SPDX-License-Identifier: GPL-3.0-or-later
# One INTERFACE target carries the flags every Floodgate target shares.
add_library(fg_common INTERFACE)
target_compile_features(fg_common INTERFACE cxx_std_20)
target_compile_options(fg_common INTERFACE -Wall -Wextra -Wpedantic)
# Includes name their layer: "core/Engine.h", "http/Listener.h" (under engine/),
# "ui/MainWindow.h", "app/Runtime.h" (under the root), so a reader sees at
# once where a header comes from.
target_include_directories(fg_common INTERFACE ${PROJECT_SOURCE_DIR}/engine ${PROJECT_SOURCE_DIR})
# "floodgate/Version.h": the project's version, generated from project(VERSION).
configure_file(${PROJECT_SOURCE_DIR}/cmake/Version.h.in ${PROJECT_BINARY_DIR}/generated/floodgate/Version.h @ONLY)
target_include_directories(fg_common INTERFACE ${PROJECT_BINARY_DIR}/generated)
target_compile_definitions(fg_common INTERFACE
  QT_NO_CAST_FROM_ASCII
  QT_NO_CONTEXTLESS_CONNECT
  QT_NO_KEYWORDS)
# RelWithDebInfo defaults to -O2 -g; the engine is the hot path, keep NDEBUG so
# asserts never run per request.

# Sanitizer builds (scripts/test-sanitizers): the flags go on fg_common, so
# every library, the binary and every suite are instrumented alike.
if(FLOODGATE_SANITIZE)
  if(NOT FLOODGATE_SANITIZE MATCHES "^(address|undefined|address,undefined|undefined,address|thread)$")
    message(FATAL_ERROR "FLOODGATE_SANITIZE=${FLOODGATE_SANITIZE}: expected address,undefined or thread")
  endif()
  target_compile_options(fg_common INTERFACE -fsanitize=${FLOODGATE_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(fg_common INTERFACE -fsanitize=${FLOODGATE_SANITIZE})
endif()
# libFuzzer (scripts/fuzz): every library is built with coverage
# instrumentation and ASan + UBSan; tests/fuzz links libFuzzer's main.
if(FLOODGATE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FLOODGATE_FUZZ needs clang (CMAKE_CXX_COMPILER=clang++-14); this is ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(FLOODGATE_SANITIZE)
    message(FATAL_ERROR "FLOODGATE_FUZZ brings its own sanitizers (address,undefined): leave FLOODGATE_SANITIZE empty")
  endif()
  target_compile_options(fg_common INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_link_options(fg_common INTERFACE -fsanitize=address,undefined)
endif()
