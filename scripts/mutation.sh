#!/usr/bin/env bash
# Mutation testing with a curated list of mutants (tests/mutants.txt): for each mutant,
# apply it to a copy of the source tree, build, run the tests, record whether the suite
# failed ("killed") or passed ("SURVIVED"), and revert. A surviving mutant is a bug the
# tests would not notice. Not part of CI: a full run takes hours on 2 cores.
#
#   ./scripts/mutation.sh                  every mutant
#   ./scripts/mutation.sh ID [ID...]       only these
#   ./scripts/mutation.sh --check          only check that every mutant applies (no build)
#
# Environment:
#   MUTATION_DIR  work folder (default build-mutation; git-ignored). It holds src/ (a copy
#                 of the working tree, uncommitted changes included, refreshed each run),
#                 src/build/ (the mutant build, with ccache when installed), results/
#                 (one line per mutant, kept across runs: rerunning some mutants updates
#                 their rows), results.md (the table for tests/MUTATION.md), logs/.
#   JOBS          build and ctest parallelism (default 2)
#   SKIP_BASELINE=1  skip building and running the unmutated suite first (it must pass,
#                 or a mutant's failure would prove nothing)
#
# Each mutant first runs the ctest entries matching its `tests:` regex (a fast kill);
# when they pass, the whole suite runs with --stop-on-failure. The kernel cache of each
# run is a fresh folder (QUANTC_CACHE_DIR), so no PTX compiled before the mutation is
# served. The mutation is reverted after each mutant, and on exit or Ctrl-C (trap); the
# real source tree is never modified.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
mutants_file=$repo/tests/mutants.txt
work=${MUTATION_DIR:-$repo/build-mutation}
case $work in /*) ;; *) work=$repo/$work ;; esac
jobs=${JOBS:-2}
src=$work/src
build=$src/build   # inside the copy, so ccache (base_dir) sees the same relative paths as build/

check_only=0
selected=()
for argument in "$@"; do
  case $argument in
    --check) check_only=1 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) selected+=("$argument") ;;
  esac
done

# mutant_field FILE ID FIELD: the field of mutant ID, escapes decoded (printed raw).
mutant_tool() {
  python3 - "$@" <<'PY'
import sys

def parse(path):
    mutants, current = [], None
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            line = line.rstrip("\n")
            if line.startswith("#") or not line.strip():
                continue
            if line.startswith("== "):
                current = {"id": line[3:].strip(), "line": number}
                mutants.append(current)
                continue
            key, sep, value = line.partition(": ")
            if not sep or current is None:
                sys.exit(f"{path}:{number}: expected 'key: value' inside a mutant block")
            current[key.strip()] = value
    for mutant in mutants:
        for key in ("area", "what", "file", "find", "replace", "tests"):
            if key not in mutant:
                sys.exit(f"{path}:{mutant['line']}: mutant {mutant['id']} has no '{key}:'")
    ids = [m["id"] for m in mutants]
    if len(set(ids)) != len(ids):
        sys.exit(f"{path}: duplicate mutant ids")
    return mutants

def decode(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "n\\":
            out.append("\n" if text[i + 1] == "n" else "\\")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)

command, path = sys.argv[1], sys.argv[2]
mutants = parse(path)
by_id = {m["id"]: m for m in mutants}
if command == "ids":
    print("\n".join(m["id"] for m in mutants))
elif command == "field":
    print(by_id[sys.argv[3]][sys.argv[4]])
elif command == "apply":
    # apply ID ROOT: replaces find by replace in ROOT/file; exit 3 when find does not
    # occur exactly once (the source changed since the mutant was written).
    mutant, root = by_id[sys.argv[3]], sys.argv[4]
    target = f"{root}/{mutant['file']}"
    try:
        text = open(target, encoding="utf-8").read()
    except FileNotFoundError:
        print(f"{mutant['file']}: no such file", file=sys.stderr)
        sys.exit(3)
    find, replace = decode(mutant["find"]), decode(mutant["replace"])
    count = text.count(find)
    if count != 1:
        print(f"{mutant['file']}: the original text occurs {count} times (expected once): {mutant['find']}",
              file=sys.stderr)
        sys.exit(3)
    if "--dry-run" not in sys.argv:
        with open(target, "w", encoding="utf-8") as stream:
            stream.write(text.replace(find, replace))
else:
    sys.exit(f"unknown command {command}")
PY
}

mapfile -t all_ids < <(mutant_tool ids "$mutants_file")
if ((${#selected[@]} == 0)); then selected=("${all_ids[@]}"); fi
for id in "${selected[@]}"; do
  if ! printf '%s\n' "${all_ids[@]}" | grep -qx -- "$id"; then
    echo "error: no mutant '$id' in $mutants_file" >&2
    exit 2
  fi
done

if ((check_only)); then
  status=0
  for id in "${selected[@]}"; do
    if mutant_tool apply "$mutants_file" "$id" "$repo" --dry-run; then echo "ok       $id"; else echo "STALE    $id"; status=1; fi
  done
  exit $status
fi

mkdir -p "$work/logs"
echo "mutation: copying the working tree to $src"
mkdir -p "$src"
find "$src" -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
git ls-files -z --cached --others --exclude-standard | tar -C "$repo" --null --ignore-failed-read -T - -cf - | tar -C "$src" -xf -
if [[ -L data || -d data ]]; then ln -sfn "$(readlink -f data)" "$src/data"; fi   # the test model (git-ignored)

# The file under mutation and its original bytes; restored on every exit path.
mutated_file=""
backup=$work/original.bak
restore() {
  if [[ -n $mutated_file ]]; then
    cp -p "$backup" "$src/$mutated_file"
    touch "$src/$mutated_file"   # newer than the mutant's objects: the next build recompiles it
    mutated_file=""
  fi
}
trap 'restore' EXIT
trap 'restore; echo "mutation: interrupted, mutation reverted" >&2; exit 130' INT TERM

launcher=()
if command -v ccache > /dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUANTC_BUILD_TESTS=ON "${launcher[@]}" \
  > "$work/logs/configure.log"

# run_tests LOG [ctest args...]: 0 when every selected test passed; failed names in $failed.
failed=""
run_tests() {
  local log=$1
  shift
  local cache=$work/kernel-cache
  rm -rf "$cache"
  local status=0
  QUANTC_CACHE_DIR=$cache ctest --test-dir "$build" -j"$jobs" --timeout 600 --output-on-failure "$@" \
    > "$log" 2>&1 || status=$?
  failed=$(sed -n '/The following tests FAILED:/,$p' "$log" | grep -E '^\s+[0-9]+ - ' |
             sed -E 's/^\s+[0-9]+ - (.*) \([A-Za-z ]+\)$/\1/' | paste -sd ';' - || true)
  if ((status != 0)) && [[ -z $failed ]]; then failed="(ctest exit $status; see $log)"; fi
  return $status
}

if [[ ${SKIP_BASELINE:-0} != 1 ]]; then
  echo "mutation: baseline build and full test run (unmutated)"
  cmake --build "$build" -j"$jobs" > "$work/logs/baseline-build.log" 2>&1 ||
    { echo "error: the unmutated build fails; see $work/logs/baseline-build.log" >&2; exit 1; }
  if ! run_tests "$work/logs/baseline-tests.log"; then
    echo "error: the unmutated suite fails ($failed); fix that first (log: $work/logs/baseline-tests.log)" >&2
    exit 1
  fi
fi

mkdir -p "$work/results"
for id in "${selected[@]}"; do
  file=$(mutant_tool field "$mutants_file" "$id" file)
  area=$(mutant_tool field "$mutants_file" "$id" area)
  what=$(mutant_tool field "$mutants_file" "$id" what)
  hint=$(mutant_tool field "$mutants_file" "$id" tests)
  log=$work/logs/$id
  cp -p "$src/$file" "$backup" 2> /dev/null || true
  mutated_file=$file
  if ! mutant_tool apply "$mutants_file" "$id" "$src" 2> "$log.apply"; then
    mutated_file=""
    result="not applicable" by="$(cat "$log.apply")"
  elif ! cmake --build "$build" -j"$jobs" > "$log.build" 2>&1; then
    # Does not compile: the compiler, not a test, rejects it; it counts for neither side.
    result="does not compile" by="see $log.build"
  elif ! run_tests "$log.fast" -R "$hint"; then
    result=killed by=$failed
  elif ! run_tests "$log.full" --stop-on-failure; then
    result=killed by=$failed
  else
    result=SURVIVED by="-"
  fi
  restore
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$area" "$file" "$result" "$by" "$what" > "$work/results/$id.tsv"
  echo "mutation: $id: $result${by:+ ($by)}"
done
# Rebuild the unmutated tree so the work folder is left consistent.
cmake --build "$build" -j"$jobs" > "$work/logs/final-build.log" 2>&1 || true

# The table: every mutant of the list with a recorded result, in the list's order.
killed=0 survived=0 skipped=0
for id in "${all_ids[@]}"; do
  [[ -f $work/results/$id.tsv ]] || continue
  case $(cut -f4 "$work/results/$id.tsv") in
    killed) killed=$((killed + 1)) ;;
    SURVIVED) survived=$((survived + 1)) ;;
    *) skipped=$((skipped + 1)) ;;
  esac
done
total=$((killed + survived))
score="n/a"
if ((total > 0)); then score=$(awk -v k=$killed -v t=$total 'BEGIN { printf "%.1f%%", 100 * k / t }'); fi
{
  echo "| mutant | area | location | result | killed by |"
  echo "| --- | --- | --- | --- | --- |"
  # Fields are never empty (tab is whitespace to read: empty fields would collapse).
  for id in "${all_ids[@]}"; do
    [[ -f $work/results/$id.tsv ]] || continue
    IFS=$'\t' read -r id area file result by what < "$work/results/$id.tsv"
    IFS=';' read -r -a tests <<< "$by"
    shown=$(printf '%s; ' "${tests[@]:0:3}")
    shown=${shown%; }
    if ((${#tests[@]} > 3)); then shown+=" (and $((${#tests[@]} - 3)) more)"; fi
    echo "| \`$id\`: $what | $area | \`$file\` | $result | $shown |"
  done
  echo
  echo "Score: $killed killed of $total ($score); $survived survived; $skipped not counted (not applicable or not compiling)."
} > "$work/results.md"
cat "$work/results.md"
