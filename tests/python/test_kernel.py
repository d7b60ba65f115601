"""A Kernel's artifacts equal the CLI's: PTX (`quantc emit`), IR (`quantc ir`), launch
metadata (`emit --metadata`), the ptxas report (`quantc check`), the cubin, the profile
(`quantc profile --json`); the kernel cache is the CLI's too."""

import json
import os
import pathlib
import re
import subprocess

import pytest

import quantc
from quantc import _quantc

from conftest import run_cli

SPEC = {"op": "nf4_gemm", "m": 1, "n": 64, "k": 128, "schedule": "fast"}


@pytest.fixture
def spec_path(tmp_path) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return str(path)


def test_ptx_ir_and_metadata_equal_the_cli(cli, spec_path, tmp_path):
    kernel = quantc.compile(spec_path, target="sm_90", opt_level=1)
    assert kernel.ptx == run_cli(cli, "emit", spec_path, "--target", "sm_90", "-O1", "--metadata",
                                 str(tmp_path / "meta.json")).stdout
    assert kernel.metadata == json.loads((tmp_path / "meta.json").read_text())
    assert kernel.ir == run_cli(cli, "ir", spec_path, "-O1").stdout
    assert kernel.target == "sm_90" and kernel.name == "nf4_gemm"
    assert kernel.spec["schedule"] == "fast" and kernel.spec["m"] == 1
    assert [b.name for b in kernel.buffers] == [p["buffer"] for p in kernel.metadata["parameters"]]
    # The same kernel from a dict, and the schedule argument overriding the spec's.
    assert quantc.compile(SPEC, target="sm_90", opt_level="O1").ptx == kernel.ptx
    assert quantc.compile({**SPEC, "schedule": "seed"}, schedule="fast").ptx == quantc.compile(SPEC).ptx
    assert quantc.compile(SPEC, schedule="seed").ptx != quantc.compile(SPEC).ptx


def test_check_and_cubin(cli, spec_path):
    kernel = quantc.compile(spec_path)
    report = kernel.check()
    assert report["ok"] and report["target"] == "sm_80" and report["assembler"] == "ptxas"
    line = run_cli(cli, "check", spec_path).stdout
    assert f"{report['registers']} registers" in line
    assert kernel.check(target="sm_90", assembler="nvjitlink")["ok"]
    cubin = kernel.cubin()
    assert cubin[:4] == b"\x7fELF"
    with pytest.raises(quantc.RunError, match="assembler 'nvcc'"):
        kernel.check(assembler="nvcc")


def test_profile_equals_the_cli(cli, spec_path):
    profile = quantc.compile(spec_path).profile(seed=1, devices=["h100_sxm"])
    expected = json.loads(run_cli(cli, "profile", spec_path, "--json", "--device", "h100_sxm").stdout)["kernels"][0]
    assert profile["warp_instructions"] == expected["warp_instructions"] > 0
    assert profile["devices"]["h100_sxm"] == expected["devices"]["h100_sxm"]


def test_compiles_go_through_the_kernel_cache():
    cache = pathlib.Path(os.environ["QUANTC_CACHE_DIR"])
    before = set(cache.glob("*.ptx"))
    quantc.compile({**SPEC, "n": 128})
    assert len(set(cache.glob("*.ptx")) - before) == 1
    quantc.compile({**SPEC, "n": 128})
    assert len(set(cache.glob("*.ptx")) - before) == 1


def test_the_cache_version_is_this_module_s_build():
    """The compiler version in cache keys names the extension module's GNU build ID, not
    the Python interpreter's: a rebuilt module never reads its predecessor's kernels."""
    notes = subprocess.run(["readelf", "-n", _quantc.__file__], capture_output=True, text=True, check=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    assert _quantc.compiler_version() == f"{quantc.__version__}+build.{build_id[:16]}"


def test_ops_lists_the_registry(cli):
    ops = quantc.ops()
    assert ops == json.loads(run_cli(cli, "ops", "--json").stdout)
    gemv = next(op for op in ops if op["name"] == "linear_4bit_affine_grouped")
    assert {"x", "w", "scale", "zero_point", "out"} <= {b["name"] for b in gemv["buffers"]}
