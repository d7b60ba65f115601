#!/usr/bin/env bash
# Quick-start command 1 (the main job): install dependencies, build quantc, emit PTX for
# a shipped spec, assemble it with ptxas, and run the kernel on the reference
# interpreter with generated inputs; then the real-model run (examples/minilm/run.sh):
# every linear layer of all-MiniLM-L6-v2 quantized five ways, run as emitted PTX on the
# emulator against the interpreter and the f64 product, reported in examples/minilm/report/.
# Set QUANTC_QUICKSTART_SKIP_MODEL=1 to stop after the spec demo (no 84 MB download).
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
echo "== quantc run $spec --backend emulator --compare reference"
"$quantc" run "$spec" --backend emulator --random-inputs 1 --compare reference | tail -n 1

if [[ ${QUANTC_QUICKSTART_SKIP_MODEL:-0} != 1 ]]; then
  echo "== examples/minilm/run.sh (real weights; a few minutes)"
  BUILD_DIR="$build_dir" examples/minilm/run.sh
fi
