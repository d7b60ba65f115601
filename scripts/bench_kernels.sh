#!/usr/bin/env bash
# Regenerates bench/results/kernels.md: quantc's kernels against hand-written expert CUDA
# C++ kernels (bench/experts/) at batch 1, both run on the PTX emulator.
#   ./scripts/bench_kernels.sh [extra kernels_bench flags, e.g. --filter 4096]
# Builds the kernels_bench target (configuring BUILD_DIR as RelWithDebInfo when it has no
# CMake cache yet: the emulator and interpreter are slow in a Debug build), runs it (one
# line per case on stdout) and writes the Markdown table. Needs the CUDA toolkit's nvcc
# (the expert kernels are compiled at run time; PTX cached in BUILD_DIR) and ptxas (register
# counts). Takes about 25 minutes on 2 cores (every batch-1 op, both schedules, six shapes, and
# the tensor-core rows: six formats x three Llama shapes x six batch sizes).
# Environment: BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build_dir" -j2 --target kernels_bench
"$build_dir/bench/kernels_bench" --markdown bench/results/kernels.md "$@"
# The expert launches bench/gpu/run.sh times on a GPU (no emulation: instant).
"$build_dir/bench/kernels_bench" --gpu-launches bench/gpu/launches.jsonl
echo "wrote bench/results/kernels.md and bench/gpu/launches.jsonl"
