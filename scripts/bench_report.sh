#!/usr/bin/env bash
# Regenerates bench/results/passes.md: where quantc stands against NVRTC.
#   ./scripts/bench_report.sh [extra Google Benchmark flags, e.g. --benchmark_filter=affine]
# Builds the passes_bench target (configuring BUILD_DIR as RelWithDebInfo, -O2, when it
# has no CMake cache yet; timings of a Debug build say nothing), runs it (console table on stdout, JSON
# to $BUILD_DIR/passes_bench.json via --benchmark_out), then bench/passes_report.py writes the
# Markdown table. Takes about 3-5 minutes on 2 cores.
# Environment: BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build_dir" -j2 --target passes_bench
"$build_dir/bench/passes_bench" --benchmark_out_format=json \
  --benchmark_out="$build_dir/passes_bench.json" "$@"
python3 bench/passes_report.py "$build_dir/passes_bench.json" bench/results/passes.md
echo "wrote bench/results/passes.md"
