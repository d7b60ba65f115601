#!/usr/bin/env bash
# Quick-start command 1 (the main job): install dependencies, build quantc, emit PTX for
# a shipped spec, assemble it with ptxas, and run the kernel on the reference
# interpreter with generated inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
spec=${1:-examples/specs/linear_4bit_affine_grouped.json}

bash scripts/setup.sh
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build_dir" -j2 --target quantc_cli
quantc="$build_dir/bin/quantc"

mkdir -p "$build_dir/out"
echo "== quantc emit $spec"
"$quantc" emit "$spec" -o "$build_dir/out/kernel.ptx"
head -n 20 "$build_dir/out/kernel.ptx"
echo "   ... ($(wc -l < "$build_dir/out/kernel.ptx") lines in $build_dir/out/kernel.ptx)"
echo "== quantc check $spec (ptxas -v)"
"$quantc" check "$spec"
echo "== quantc run $spec --backend reference --random-inputs 1"
"$quantc" run "$spec" --backend reference --random-inputs 1
