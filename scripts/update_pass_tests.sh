#!/usr/bin/env bash
# Regenerates the CHECK lines of tests/passes/cases/*.qir from the current passes.
# Review the diff (git diff tests/passes/cases) before committing: it is the test.
# Usage: scripts/update_pass_tests.sh [build-dir]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
ninja -C "$build" pass_tests
QUANTC_UPDATE_PASS_TESTS=1 "$build/tests/passes/pass_tests" "[cases]"
git -C "$root" diff --stat -- tests/passes/cases
