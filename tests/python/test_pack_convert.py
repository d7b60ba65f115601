"""quantc.pack and quantc.convert give the buffers and spec `quantc pack` and `quantc
convert` write, bit for bit; converted layers run and match their format's reference
dequantization (tests/convert/make_checkpoints.py) within the f32 bound."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import quantc

from conftest import REPO, run_cli, same_bits

sys.path.insert(0, str(REPO / "tests" / "convert"))
from make_checkpoints import write_safetensors  # noqa: E402  (the tests' safetensors writer)


def bundle(folder: pathlib.Path) -> tuple[dict, dict]:
    """(arrays by name, spec) of a bundle folder written by the CLI."""
    arrays = {path.stem: np.load(path) for path in folder.glob("*.npy")}
    return arrays, json.loads((folder / "spec.json").read_text())


@pytest.mark.parametrize("scheme, options, cli_options", [
    ("int4-affine-grouped", {"group_size": 32}, ["--group-size", "32"]),
    ("int4-affine-grouped", {"group_size": 64, "activation": "f16"}, ["--group-size", "64", "--activation", "f16"]),
    ("nf4", {"batch": 3}, ["--batch", "3"]),
    ("int4-symmetric", {}, []),
])
def test_pack_equals_the_cli(cli, tmp_path, scheme, options, cli_options):
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((48, 128)).astype(np.float32)  # [out, in]
    bias = rng.standard_normal(48).astype(np.float32)
    write_safetensors(tmp_path / "model.safetensors", {"layer.weight": weight, "layer.bias": bias})
    run_cli(cli, "pack", str(tmp_path / "model.safetensors"), "--tensor", "layer.weight", "--scheme", scheme,
            *cli_options, "-o", str(tmp_path / "bundle"))
    expected, expected_spec = bundle(tmp_path / "bundle")

    arrays, spec = quantc.pack(weight, scheme, bias=bias, **options)
    assert spec == expected_spec
    for name, array in arrays.items():
        assert same_bits(array, expected[name]), name
    assert set(expected) - set(arrays) <= {"bias"}  # the bundle keeps the bias beside ops without one

    # The in,out layout is the same weight transposed.
    transposed, _ = quantc.pack(weight.T, scheme, layout="in,out", bias=bias, **options)
    for name, array in arrays.items():
        assert same_bits(transposed[name], array), name


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> pathlib.Path:
    """The convert tests' checkpoints (GPTQ, AWQ, bitsandbytes; GGUF only with gguf-py)."""
    folder = tmp_path_factory.mktemp("checkpoints")
    subprocess.run([sys.executable, str(REPO / "tests" / "convert" / "make_checkpoints.py"), "--out", str(folder)],
                   check=True, capture_output=True)
    return folder


def test_convert_equals_the_cli_and_runs_within_the_bound(cli, checkpoints, tmp_path):
    manifest = json.loads((checkpoints / "manifest.json").read_text())
    cases = [case for case in manifest["cases"] if case["format"] != "gguf"]
    assert {case["format"] for case in cases} == {"gptq", "awq", "bnb"}
    for case in cases:
        path = checkpoints / case["checkpoint"]
        folder = tmp_path / case["case"]
        run_cli(cli, "convert", str(path), "--format", case["format"], "--layer", case["layer"], "-o", str(folder))
        expected, expected_spec = bundle(folder)
        arrays, spec = quantc.convert(path, case["format"], case["layer"])
        assert spec == expected_spec, case["case"]
        assert sorted(arrays) == sorted(expected), case["case"]
        for name, array in arrays.items():
            assert same_bits(array, expected[name]), (case["case"], name)

        # Run the converted layer on a random x: the format's reference weight, in f64.
        kernel = quantc.compile(spec)
        reference = np.load(checkpoints / case["weight"]).astype(np.float64)  # [in, out]
        x_buffer = next(buffer for buffer in kernel.buffers if buffer.role == "input")
        x = np.random.default_rng(1).uniform(-1, 1, x_buffer.shape).astype(np.float32)
        buffers = {name: array for name, array in arrays.items() if name != "bias"}
        out = kernel.run("emulator", **{x_buffer.name: x}, **buffers)
        (result,) = out.values()
        exact = x.reshape(-1, case["in"]).astype(np.float64) @ reference
        magnitude = np.abs(x.reshape(-1, case["in"]).astype(np.float64)) @ np.abs(reference)
        if "b" in buffers:
            exact += buffers["b"]
            magnitude += np.abs(buffers["b"])
        bound = (case["in"] + 8) * 2.0**-23 * magnitude + 1e-30
        assert np.all(np.abs(result.reshape(exact.shape) - exact) <= bound), case["case"]
