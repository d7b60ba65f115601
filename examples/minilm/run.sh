#!/usr/bin/env bash
# The main job: all-MiniLM-L6-v2's 36 linear layers x 5 4-bit schemes through quantc.
#   examples/minilm/run.sh [extra minilm_report flags]
# Fetches the model if absent (scripts/fetch_model.sh), builds minilm_report, runs it
# (exit non-zero when an assertion fails), and draws the plot. The report lands in
# examples/minilm/report/ (report.md, results.csv, report.png) and is kept in git.
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${BUILD_DIR:-build}

bash scripts/fetch_model.sh
if [[ ! -f $build_dir/build.ninja ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build_dir" -j2 --target minilm_report
status=0
"$build_dir/bin/minilm_report" --report-dir examples/minilm/report "$@" || status=$?
if [[ -f examples/minilm/report/results.csv ]]; then
  /usr/bin/python3 examples/minilm/plot.py examples/minilm/report
fi
exit "$status"
