"""Shared fixtures of the Python package's tests: the quantc CLI the results are compared
with (QUANTC_CLI, else build/bin/quantc of the checkout), and a private kernel cache."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def private_kernel_cache(tmp_path_factory):
    """Every compile of the session (the package's and the CLI's) goes to a fresh cache."""
    os.environ["QUANTC_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))


@pytest.fixture(scope="session")
def cli() -> str:
    """The quantc CLI; a failure, not a skip, when it is missing: the comparisons with the
    CLI are what these tests are for."""
    path = os.environ.get("QUANTC_CLI", str(REPO / "build" / "bin" / "quantc"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the quantc CLI is not at {path}: build it (scripts/test.sh) or set QUANTC_CLI")
    return path


def run_cli(cli: str, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([cli, *arguments], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"quantc {' '.join(arguments)} failed ({result.returncode}):\n{result.stderr}")
    return result


def cli_error(cli: str, *arguments: str) -> str:
    """The message of a failing CLI command: its stderr after 'error: '."""
    result = run_cli(cli, *arguments, check=False)
    assert result.returncode == 1, result
    line = next(line for line in result.stderr.splitlines() if line.startswith("error: "))
    return line[len("error: "):]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype.itemsize == b.dtype.itemsize and a.size == b.size and \
        np.array_equal(np.ascontiguousarray(a).view(np.uint8).ravel(), np.ascontiguousarray(b).view(np.uint8).ravel())
