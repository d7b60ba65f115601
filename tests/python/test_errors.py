"""Bad arguments raise typed exceptions (quantc.errors) carrying the CLI's messages."""

import json
import pathlib

import numpy as np
import pytest

import quantc

from conftest import cli_error

GEMV = {"op": "linear_4bit_affine_grouped", "in_dim": 64, "out_dim": 32, "group_size": 32}


def write_spec(tmp_path: pathlib.Path, spec: dict) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return str(path)


@pytest.mark.parametrize("spec, error", [
    ({"op": "linear_4bit_affine_grouped_typo", "k": 8}, quantc.SpecError),
    ({**GEMV, "groupsize": 32}, quantc.SpecError),
    ({**GEMV, "in_dim": "64"}, quantc.SpecError),
    ({**GEMV, "in_dim": 60}, quantc.OpError),
    ({**GEMV, "target": "sm_42"}, quantc.SpecError),
    ({**GEMV, "opt_level": "O7"}, quantc.SpecError),
])
def test_a_bad_spec_raises_the_cli_message(cli, tmp_path, spec, error):
    path = write_spec(tmp_path, spec)
    with pytest.raises(error) as raised:
        quantc.compile(path)
    assert str(raised.value) == cli_error(cli, "emit", path)
    assert isinstance(raised.value, quantc.Error)


def test_typed_errors_are_value_errors_where_the_value_is_wrong():
    with pytest.raises(ValueError):
        quantc.compile({**GEMV, "in_dim": 60})
    with pytest.raises(quantc.SpecError, match="unknown target 'sm_42'"):
        quantc.compile(GEMV, target="sm_42")
    with pytest.raises(quantc.SpecError, match="schedule"):
        quantc.compile({"op": "int4_dot_i32", "k": 8}, schedule="fast")
    with pytest.raises(quantc.SpecError, match="cannot read the spec"):
        quantc.compile("/nonexistent/spec.json")


def save(tmp_path: pathlib.Path, name: str, array: np.ndarray) -> str:
    path = tmp_path / f"{name}.npy"
    np.save(path, array)
    return str(path)


def cli_run_error(cli, tmp_path, spec: dict, **arrays: np.ndarray) -> str:
    arguments = ["run", write_spec(tmp_path, spec)]
    for name, array in arrays.items():
        arguments += ["--input", f"{name}={save(tmp_path, name, array)}"]
    return cli_error(cli, *arguments)


def cli_message_for_array(cli_message: str, name: str, tmp_path) -> str:
    """The CLI's message with its label (--input NAME=FILE) and noun (file) as the
    package words them for an array argument."""
    return cli_message.replace(f"--input {name}={tmp_path / name}.npy", f"argument '{name}'").replace(
        "the file", "the array")


def test_an_array_of_the_wrong_dtype_or_count_raises_the_cli_message(cli, tmp_path):
    kernel = quantc.compile(GEMV)
    inputs = kernel.random_inputs(1)
    for name, bad in [("x", inputs["x"].astype(np.float16)), ("x", inputs["x"].ravel()[:10]),
                      ("w", inputs["w"].view(np.int32))]:
        with pytest.raises(quantc.RunError) as raised:
            kernel.run("reference", **{**inputs, name: bad})
        expected = cli_run_error(cli, tmp_path, GEMV, **{**inputs, name: bad})
        assert str(raised.value) == cli_message_for_array(expected, name, tmp_path)


def test_a_transposed_array_is_named_as_such(cli, tmp_path):
    kernel = quantc.compile(GEMV)
    inputs = kernel.random_inputs(1)
    transposed = np.ascontiguousarray(inputs["w"].reshape(8, 32).T)
    with pytest.raises(quantc.RunError, match="looks transposed") as raised:
        kernel.run("emulator", **{**inputs, "w": transposed})
    expected = cli_run_error(cli, tmp_path, GEMV, **{**inputs, "w": transposed})
    assert str(raised.value) == cli_message_for_array(expected, "w", tmp_path)


def test_missing_unknown_scratch_and_non_contiguous_arguments():
    kernel = quantc.compile(GEMV)
    inputs = kernel.random_inputs(1)
    with pytest.raises(quantc.RunError, match="missing inputs: zero_point"):
        kernel.run("reference", **{k: v for k, v in inputs.items() if k != "zero_point"})
    with pytest.raises(quantc.RunError, match="the program has no buffer named 'y'; its buffers are: x, w"):
        kernel.run("reference", y=inputs["x"], **inputs)
    with pytest.raises(quantc.RunError, match="not C-contiguous"):
        kernel.run("reference", **{**inputs, "w": np.asfortranarray(inputs["w"].reshape(8, 32))[:, ::2]})
    with pytest.raises(quantc.RunError, match="dtype complex64 is not an element type"):
        kernel.run("reference", **{**inputs, "x": inputs["x"].astype(np.complex64)})
    split = quantc.compile({"op": "dequant_matmul_int4", "m": 2, "k": 4096, "n": 32, "block_size": 64,
                            "activation": "f16", "schedule": "fast"})
    scratch = [buffer.name for buffer in split.buffers if buffer.role == "scratch"]
    assert scratch, "the split-K GEMM declares its partial sums as scratch"
    with pytest.raises(quantc.RunError, match="scratch memory"):
        split.run("reference", seed=1, **{scratch[0]: np.zeros(1, np.float32)})


def test_an_unknown_backend_lists_the_backends():
    kernel = quantc.compile(GEMV)
    with pytest.raises(quantc.RunError, match="unknown backend 'gpu'; the backends are: reference, emulator, cuda"):
        kernel.run("gpu", seed=1)
    assert quantc.backends() == ["reference", "emulator", "cuda"]


def test_cuda_without_a_driver_is_backend_unavailable(cli, tmp_path):
    if quantc.cuda_target() is not None:
        pytest.skip("a CUDA device is present (test_launch.py runs on it)")
    kernel = quantc.compile(GEMV)
    with pytest.raises(quantc.BackendUnavailable) as raised:
        kernel.run("cuda", seed=1)
    assert str(raised.value) == cli_error(cli, "run", write_spec(tmp_path, GEMV), "--backend", "cuda",
                                          "--random-inputs", "1")


def test_pack_errors():
    with pytest.raises(quantc.PackError):
        quantc.pack(np.zeros((4, 60), np.float32), "int4-affine-grouped", group_size=64)
    with pytest.raises(quantc.PackError, match="scheme"):
        quantc.pack(np.zeros((4, 64), np.float32), "int3")
    with pytest.raises(quantc.RunError, match="2-D"):
        quantc.pack(np.zeros(64, np.float32))
    with pytest.raises(quantc.RunError, match="bias: 3 values given"):
        quantc.pack(np.zeros((4, 64), np.float32), bias=np.zeros(3))
