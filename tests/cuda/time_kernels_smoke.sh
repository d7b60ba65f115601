#!/usr/bin/env bash
# Runs bench/gpu/time_kernels.py on the emulated CUDA driver for one small case and checks
# that the three tables have a timed row (quantc fast with the model's error, the expert, and
# the tensor-core GEMM at m = 2 with its agreement with the interpreter); then that
# `--sections batches` with a profiles file lacking the case times the tensor-core table alone
# and leaves its model columns empty instead of emulating; last, that `--timing back-to-back
# --no-check` times the batch-1 case per launch through buffer copies, unchecked.
#   time_kernels_smoke.sh PYTHON SCRIPT QUANTC EMULATED_DRIVER NVCC
set -euo pipefail
python=$1 script=$2 quantc=$3 driver=$4 nvcc=$5
report=$(PATH="$(dirname "$nvcc"):$PATH" QUANTC_CACHE=0 QUANTC_CUDA_DRIVER="$driver" \
  "$python" "$script" --quantc "$quantc" --without-torch --model-device h100_sxm --shapes minilm \
  --filter 'dequant_matmul_int4 384x384' --batches 2 --launches-count 3 --warmup 1)
echo "$report"
number='[0-9]+(\.[0-9]+)?'
grep -Eq "^\| dequant_matmul_int4 384x384 b64 asym \| fast \| $number \|.*\| $number \| [-+][0-9]+% \|$" <<<"$report" ||
  { echo "error: no timed quantc row with a model error" >&2; exit 1; }
grep -Eq "^\| dequant_matmul_int4 384x384 b64 asym \| $number \| $number \| $number \| $number×" <<<"$report" ||
  { echo "error: no timed expert row" >&2; exit 1; }
grep -Eq "^\| dequant_matmul_int4 384x384 b128 asym m2 \| $number \| nan \| nan× \| $number \| [-+][0-9]+% \| bit-exact \|$" <<<"$report" ||
  { echo "error: no timed tensor-core row with a model error and the emulator bit-exact" >&2; exit 1; }

report=$(PATH="$(dirname "$nvcc"):$PATH" QUANTC_CACHE=0 QUANTC_CUDA_DRIVER="$driver" \
  "$python" "$script" --quantc "$quantc" --without-torch --model-device h100_sxm --shapes minilm \
  --filter 'dequant_matmul_int4 384x384' --batches 2 --launches-count 3 --warmup 1 --sections batches \
  --profiles /dev/null)
echo "$report"
if grep -q "batch 1\|Expert" <<<"$report"; then
  echo "error: --sections batches printed the batch-1 or expert table" >&2; exit 1
fi
grep -Eq "^\| dequant_matmul_int4 384x384 b128 asym m2 \| $number \| nan \| nan× \| – \| – \| bit-exact \|$" <<<"$report" ||
  { echo "error: a case missing from --profiles was profiled, or not timed" >&2; exit 1; }

# A 64 KiB emulated L2: the 384x384 case's buffers (about 80 KiB) make two back-to-back sets.
report=$(PATH="$(dirname "$nvcc"):$PATH" QUANTC_CACHE=0 QUANTC_CUDA_DRIVER="$driver" QUANTC_EMULATED_L2_BYTES=65536 \
  "$python" "$script" --quantc "$quantc" --without-torch --model-device h100_sxm --shapes minilm \
  --filter 'dequant_matmul_int4 384x384' --schedule fast --launches-count 3 --warmup 1 --sections batch1 \
  --timing back-to-back --no-check)
echo "$report"
grep -q "per launch, the median over rounds of launches queued back to back" <<<"$report" ||
  { echo "error: the back-to-back report does not say how it timed" >&2; exit 1; }
grep -Eq "^\| dequant_matmul_int4 384x384 b64 asym \| fast \| $number \|.*\| $number \| [-+][0-9]+% \|$" <<<"$report" ||
  { echo "error: no back-to-back quantc row with a model error" >&2; exit 1; }
