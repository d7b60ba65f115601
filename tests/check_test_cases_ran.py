#!/usr/bin/env python3
"""Fails when a Catch2 test case of a test executable was never started by ctest.

catch_discover_tests registers one ctest entry per test case, passing the name back as
a test spec. A name it splits (at ";") or mangles becomes entries that match nothing,
and the test case would never run while ctest reports success. Every entry runs with
`--quantc-case-log DIR` (tests/test_main.cpp), which logs each started test case; this
script compares the logs with `--list-test-names-only` of every executable.

Run as the ctest test `all_test_cases_ran` (a fixture cleanup: after every other test).
When ctest ran only some entries (-R, -E, -L, --rerun-failed, --stop-on-failure) the
comparison would report the unselected ones, so it is then skipped (exit 77) unless
QUANTC_REQUIRE_ALL_TEST_CASES_RAN=1 (scripts/test.sh, which always runs everything).

  check_test_cases_ran.py --log-dir DIR --executables FILE --ctest CTEST --build-dir DIR
  check_test_cases_ran.py --self-test --fixture EXE --catch-add-tests CatchAddTests.cmake
                          --cmake CMAKE --ctest CTEST
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIPPED = 77


def listed_names(executable):
    """The test cases an executable runs without a test spec (hidden ones excluded)."""
    result = subprocess.run([executable, "--list-test-names-only"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    # The exit code is the number of tests (Catch2 v2); a crash is negative.
    if result.returncode < 0:
        raise RuntimeError(f"{executable} --list-test-names-only died with signal {-result.returncode}:\n"
                           f"{result.stderr}")
    names = []
    for line in result.stdout.splitlines():
        if not line:
            continue
        # Catch2 quotes names that start with '#'.
        if line.startswith('"#') and line.endswith('"'):
            line = line[1:-1]
        names.append(line)
    return names


def read_logs(log_dir):
    """{executable: (processes, set of started test case names)} from the case logs."""
    processes = collections.Counter()
    started = collections.defaultdict(set)
    if not os.path.isdir(log_dir):
        return processes, started
    for entry in sorted(os.listdir(log_dir)):
        if not entry.endswith(".log"):
            continue
        executable = None
        with open(os.path.join(log_dir, entry), encoding="utf-8", errors="replace") as stream:
            for line in stream:
                line = line.rstrip("\n")
                kind, _, value = line.partition("\t")
                if kind == "executable":
                    executable = os.path.realpath(value)
                    processes[executable] += 1
                elif kind == "case" and executable is not None:
                    started[executable].add(value)
    return processes, started


def ctest_entries(ctest, build_dir):
    """{executable: number of ctest entries running it} for the tree at build_dir."""
    result = subprocess.run([ctest, "--show-only=json-v1"], cwd=build_dir, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, check=True)
    entries = collections.Counter()
    for test in json.loads(result.stdout).get("tests", []):
        command = test.get("command") or []
        if command:
            entries[os.path.realpath(command[0])] += 1
    return entries


def check(log_dir, executables, ctest, build_dir, required):
    """Returns the exit code; prints what it found."""
    processes, started = read_logs(log_dir)
    missing = {}
    total = 0
    for executable in executables:
        names = listed_names(executable)
        total += len(names)
        absent = [name for name in names if name not in started.get(executable, set())]
        if absent:
            missing[executable] = absent
    if not missing:
        print(f"all {total} test cases of {len(executables)} executables ran")
        return 0
    if not required:
        entries = ctest_entries(ctest, build_dir)
        partial = [executable for executable in executables
                   if processes.get(executable, 0) < entries.get(executable, 0)]
        if partial:
            ran = sum(min(processes.get(e, 0), entries.get(e, 0)) for e in executables)
            print(f"not checked: ctest ran {ran} of the {sum(entries.get(e, 0) for e in executables)} "
                  f"entries of the test executables (a filtered or interrupted run); "
                  f"QUANTC_REQUIRE_ALL_TEST_CASES_RAN=1 checks anyway")
            return SKIPPED
    count = sum(len(names) for names in missing.values())
    print(f"error: {count} of {total} test cases never ran, although ctest ran every entry. "
          "catch_discover_tests passes each name back to Catch2 as a test spec: a name with ';' "
          "becomes two entries, and ',', '[', ']', '\\', '\"', '*', a leading '~', '-' or '#' "
          "change what it matches. Rename them:")
    for executable, names in missing.items():
        for name in names:
            print(f"  {os.path.basename(executable)}: {name}")
    return 1


def self_test(fixture, catch_add_tests, cmake, ctest):
    """Runs the guard on a fixture executable whose test names catch_discover_tests
    mangles, through the real CatchAddTests.cmake and ctest, and checks that it fails
    naming exactly those; then that a run starting no test case exits non-zero."""
    failures = []
    work = tempfile.mkdtemp(prefix="quantc_case_guard_")
    try:
        log_dir = os.path.join(work, "log")
        tests_file = os.path.join(work, "fixture_tests.cmake")
        subprocess.run([cmake, f"-DTEST_EXECUTABLE={fixture}", f"-DTEST_WORKING_DIR={work}",
                        f"-DTEST_EXTRA_ARGS=--warn;NoTests;--quantc-case-log;{log_dir}",
                        "-DTEST_SPEC=", "-DTEST_PROPERTIES=", "-DTEST_PREFIX=", "-DTEST_SUFFIX=",
                        "-DTEST_LIST=fixture_tests", f"-DCTEST_FILE={tests_file}", "-P", catch_add_tests],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(work, "CTestTestfile.cmake"), "w", encoding="utf-8") as stream:
            stream.write(f'include("{tests_file}")\n')
        run = subprocess.run([ctest, "--output-on-failure"], cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        if run.returncode == 0:
            failures.append("ctest passed although the ';' name's halves match no test case "
                            "(--warn NoTests or the no-test-ran rule is not in effect):\n" + run.stdout)
        captured = os.path.join(work, "check.out")
        with open(captured, "w", encoding="utf-8") as stream:
            saved = sys.stdout
            sys.stdout = stream
            try:
                code = check(log_dir, [os.path.realpath(fixture)], ctest, work, required=False)
            finally:
                sys.stdout = saved
        with open(captured, encoding="utf-8") as stream:
            report = stream.read()
        expected = "guard fixture; a name split at the semicolon"
        if code != 1 or expected not in report:
            failures.append(f"the check returned {code} instead of 1 naming '{expected}':\n{report}")
        if "guard fixture: a plain name" in report or "guard fixture with a comma" in report:
            failures.append(f"the check named a test case that ran:\n{report}")
        # Without --warn NoTests, a spec that matches nothing must still fail (main's rule).
        nothing = subprocess.run([fixture, "no such test case"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        if nothing.returncode == 0:
            failures.append("a run that started no test case exited 0:\n" + nothing.stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("self-test failure: " + failure)
    if not failures:
        print("self-test passed: the guard names the test case ctest never ran")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log-dir")
    parser.add_argument("--executables", help="a file with one test executable path per line")
    parser.add_argument("--ctest", required=True)
    parser.add_argument("--build-dir")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--fixture")
    parser.add_argument("--catch-add-tests")
    parser.add_argument("--cmake")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.fixture, args.catch_add_tests, args.cmake, args.ctest)
    with open(args.executables, encoding="utf-8") as stream:
        executables = [os.path.realpath(line.strip()) for line in stream if line.strip()]
    required = os.environ.get("QUANTC_REQUIRE_ALL_TEST_CASES_RAN") == "1"
    return check(args.log_dir, executables, args.ctest, args.build_dir, required)


if __name__ == "__main__":
    sys.exit(main())
