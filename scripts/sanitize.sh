#!/usr/bin/env bash
# The sanitizer job: builds the whole project (libraries, CLI, every test suite) with
# AddressSanitizer + UndefinedBehaviorSanitizer in its own build directory and runs the
# whole ctest suite there. Any sanitizer report fails the test that triggered it: UB
# aborts (-fno-sanitize-recover=undefined), ASan and LeakSanitizer exit non-zero.
#   ./scripts/sanitize.sh              (CI runs it from .ci/run after the normal tests)
# Environment:
#   BUILD_DIR  build directory (default build-asan)
#   CXX, CC    compiler (default clang++-14/clang-14, which scripts/setup.sh installs for
#              scripts/fuzz.sh; gcc works too). CMake keeps the compiler a build directory
#              was configured with: delete the directory to switch.
#   QUANTC_SANITIZER_FULL_SWEEPS=1  run the heaviest tests as the normal job does. By
#              default the sweeps run smaller here (the full sizes run in the normal job):
#              the op sweeps (f32, and f16/bf16 activations) on sm_75/sm_80/sm_90 (the
#              three legalizations) instead of all seven targets, each at one optimization
#              level (-O0, -O1, -O2 in turn) instead of all three, 1,000 random programs
#              through the passes instead of 5,000, and 60 on the emulator instead of 300.
#              The ptxas check of every op uses the same three targets (ptxas is not
#              sanitized; the normal job assembles for all seven). And the cost model's
#              checks at the Llama shapes (tests/cli/profile_json_tests.cpp: the CLI
#              emulating kernels of 16M weights, 180 s of CPU here; and
#              tests/emulator/ActOrderProfileTests.cpp) do not run: the same emulator,
#              model and tensor-core code runs here on every smaller test.
#   CTEST_ARGS extra ctest arguments, e.g. "-R emulator"
# Needs scripts/setup.sh's packages and the test model (scripts/fetch_model.sh), as
# scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-asan}

# clang-14 rather than gcc 12: a fresh instrumented build took 694 s against gcc's 1255 s,
# and the same ctest ran 656 s against 1040 s (2 cores).
export CXX=${CXX:-clang++-14} CC=${CC:-clang-14}
# -O1 -g1: sanitizer-friendly code (frames kept, line numbers in reports) that compiles
# and runs faster than -O0; no NDEBUG. A unity build, as in scripts/test.sh. (Test suites
# at -O0 compiled in half the time, but the ctest ran 40% longer: 916 s against 656 s.)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1" \
  -DQUANTC_SANITIZERS=address,undefined -DQUANTC_BUILD_TESTS=ON -DQUANTC_BUILD_BENCHMARKS=OFF
cmake --build "$build_dir" -j2

supp="$PWD/scripts/lsan.supp"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
llama_shape_profiles=()
if [[ ${QUANTC_SANITIZER_FULL_SWEEPS:-0} != 1 ]]; then
  export QUANTC_SWEEP_TARGETS=${QUANTC_SWEEP_TARGETS:-sm_75,sm_80,sm_90}
  export QUANTC_SWEEP_ONE_LEVEL=${QUANTC_SWEEP_ONE_LEVEL:-1}
  export QUANTC_RANDOM_PROGRAMS=${QUANTC_RANDOM_PROGRAMS:-1000}
  export QUANTC_RANDOM_EMULATED=${QUANTC_RANDOM_EMULATED:-60}
  llama_shape_profiles=(-E '^(quantc profile --json: the fast |GPTQ act-order on the tensor cores: x gathered once)')
fi
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 1800 "${llama_shape_profiles[@]}" ${CTEST_ARGS:-}
