#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/, clang-14, ASan + UBSan, in build-fuzz) and
# runs each one (as many at once as CPU cores), then appends one dated row per target to
# tests/fuzz/RESULTS.md.
#   ./scripts/fuzz.sh                  30 s per target: the CI smoke run (.ci/run)
#   ./scripts/fuzz.sh --long 1800      a long run, 1800 s per target
#   ./scripts/fuzz.sh --time 60 --targets npy,spec --no-record
#   ./scripts/fuzz.sh --build-only     build the fuzzers (CI: they must always link)
#   ./scripts/fuzz.sh --jobs 1         one target at a time (default: as many as CPU cores)
# One process per target (-jobs=1), as many targets at once as --jobs says. New inputs go
# to a scratch corpus in build-fuzz/, never into the checked-in seeds (tests/fuzz/corpus/<target>/).
# A crash, leak, timeout or OOM stops that target, leaves the input in
# build-fuzz/artifacts/ (reproduce: build-fuzz/tests/fuzz/<target>_fuzzer FILE) and makes
# the script exit 1 after every target ran. Check a fixed reproducer into
# tests/fuzz/corpus/<target>/ as crash_<what>: the replay test then covers it in every build.
# Environment: BUILD_DIR (default build-fuzz), CXX/CC (default clang++-14/clang-14).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-fuzz}
seconds=30
mode=smoke
record=1
build_only=0
parallel=$(nproc)
targets=(safetensors npy spec ir_text cache_entry gguf)
while (($#)); do
  case "$1" in
    --long) mode=long; seconds=$2; shift 2 ;;
    --time) seconds=$2; shift 2 ;;
    --targets) IFS=, read -r -a targets <<<"$2"; shift 2 ;;
    --no-record) record=0; shift ;;
    --build-only) build_only=1; shift ;;
    --jobs) parallel=$2; shift 2 ;;
    *) echo "usage: $0 [--long SECONDS | --time SECONDS] [--targets a,b] [--no-record] [--build-only] [--jobs N]" >&2; exit 2 ;;
  esac
done
if [[ ! $parallel =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: --jobs needs a positive number of targets to run at once, got '$parallel'" >&2
  exit 2
fi

# Largest input per target: 64 KiB for the .npy header (the version-1 limit; the parser
# does not recurse), libFuzzer's default (4096, or the largest seed) elsewhere. IR text
# deeper than kMaxNestingDepth is a parse error, so ir_text needs no cap of its own.
# GGUF: 8 KiB holds a header, metadata and a few K-quant super-blocks (210 bytes each);
# array nesting is capped by kGgufMaxArrayDepth.
declare -A max_len=([safetensors]=4096 [npy]=65536 [spec]=4096 [ir_text]=8192 [cache_entry]=4096 [gguf]=8192)

export CXX=${CXX:-clang++-14} CC=${CC:-clang-14}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_FLAGS_FUZZ="-O1 -g1" \
  -DCMAKE_C_FLAGS_FUZZ="-O1 -g1" -DQUANTC_BUILD_FUZZERS=ON -DQUANTC_BUILD_TESTS=ON -DQUANTC_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build_dir" --target quantc_fuzzers -j2
((build_only)) && exit 0

supp="$PWD/scripts/lsan.supp"
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# File and line numbers in reports (llvm-14, a dependency of llvm-14-dev, ships it).
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} && -x /usr/lib/llvm-14/bin/llvm-symbolizer ]]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi
artifacts="$PWD/$build_dir/artifacts"
mkdir -p "$artifacts"
results=tests/fuzz/RESULTS.md
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
failed=()
total_runs=0
# fuzz_one TARGET: one libFuzzer process for TARGET; its log, exit status and seconds go to
# $build_dir/fuzz-work/TARGET.{log,status,seconds}.
fuzz_one() {
  local target=$1 status=0 start
  local fuzzer="$build_dir/tests/fuzz/${target}_fuzzer" work="$build_dir/fuzz-work/$target"
  local dict=()
  [[ -f tests/fuzz/$target.dict ]] && dict=(-dict="tests/fuzz/$target.dict")
  start=$(date +%s)
  "$fuzzer" -max_total_time="$seconds" -max_len="${max_len[$target]}" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$target-" "${dict[@]}" "$work" "tests/fuzz/corpus/$target" \
    >"$work.log" 2>&1 || status=$?
  echo "$status" >"$work.status"
  echo $(($(date +%s) - start)) >"$work.seconds"
}
# Targets run $parallel at a time (each one process, -jobs=1), then report in order.
for target in "${targets[@]}"; do
  mkdir -p "$build_dir/fuzz-work/$target"
  rm -f "$artifacts/$target"-*
  echo "fuzz: $target for ${seconds}s (max_len ${max_len[$target]})"
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  fuzz_one "$target" &
done
wait
for target in "${targets[@]}"; do
  log="$build_dir/fuzz-work/$target.log"
  status=$(cat "$build_dir/fuzz-work/$target.status")
  elapsed=$(cat "$build_dir/fuzz-work/$target.seconds")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  crashes=$(find "$artifacts" -name "$target-*" -type f | wc -l)
  if ((status != 0)) && ((crashes == 0)); then crashes=1; fi  # died before writing an artifact
  runs=${runs:-0}
  total_runs=$((total_runs + runs))
  echo "fuzz: $target: $runs executions in ${elapsed}s (${speed:-0}/s), $added new inputs, $crashes crashes"
  if ((crashes)); then
    failed+=("$target")
    tail -60 "$log" >&2
    echo "fuzz: $target: reproducers in $artifacts/$target-*; full log $log" >&2
  fi
  if ((record)); then
    [[ -f $results ]] || printf '# Fuzzing results\n\nOne row per target per run of scripts/fuzz.sh (libFuzzer, clang-14, ASan + UBSan, -jobs=1).\n\n| date (UTC) | commit | target | run | seconds | executions | exec/s | new inputs | crashes |\n| --- | --- | --- | --- | --: | --: | --: | --: | --: |\n' >"$results"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit" "$target" "$mode" \
      "$elapsed" "$runs" "${speed:-0}" "${added:-0}" "$crashes" >>"$results"
  fi
done
echo "fuzz: $total_runs executions in all"
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
