# Sanitizer and libFuzzer instrumentation for every target of the build
# (scripts/sanitize.sh, scripts/fuzz.sh). Included before any library, tool or test is
# created (after the quantc_warnings interface target, which it amends), so the
# libraries, tools, tests and fuzz targets are all instrumented alike; imported targets
# and consumers of an installed tree are not (tests/cuda/InstallTests.cpp passes
# QUANTC_SANITIZER_FLAGS to the consumer it builds).
#
#   -DQUANTC_SANITIZERS=address,undefined   ASan + UBSan (gcc or clang); any UB is fatal
#   -DQUANTC_BUILD_FUZZERS=ON               clang only: coverage for libFuzzer everywhere,
#                                           and ASan + UBSan unless QUANTC_SANITIZERS says otherwise
set(QUANTC_SANITIZERS "" CACHE STRING "Comma-separated -fsanitize= list applied to every target (e.g. address,undefined)")

if(QUANTC_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "QUANTC_BUILD_FUZZERS needs clang (libFuzzer); configure with CXX=clang++-14 CC=clang-14")
  endif()
  if(NOT QUANTC_SANITIZERS)
    set(QUANTC_SANITIZERS "address,undefined")
  endif()
endif()

set(QUANTC_SANITIZER_FLAGS "")
if(QUANTC_SANITIZERS)
  set(QUANTC_SANITIZER_FLAGS -fsanitize=${QUANTC_SANITIZERS} -fno-omit-frame-pointer)
  if(QUANTC_SANITIZERS MATCHES "undefined")
    # Report-and-continue would let a test pass over undefined behaviour: abort instead.
    list(APPEND QUANTC_SANITIZER_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${QUANTC_SANITIZER_FLAGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's manual: sanitizers "tend to increase the rate of false positive warnings, most
    # notably those around -Wmaybe-uninitialized" (libstdc++'s <regex> trips it at -O1).
    # Warnings stay errors in the normal build; here they are only printed.
    target_compile_options(quantc_warnings INTERFACE -Wno-error -Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=${QUANTC_SANITIZERS})
  message(STATUS "quantc: every target built with -fsanitize=${QUANTC_SANITIZERS}")
endif()
if(QUANTC_BUILD_FUZZERS)
  # Coverage instrumentation only; the fuzz targets themselves link -fsanitize=fuzzer
  # (libFuzzer's main), every other executable keeps its own main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
