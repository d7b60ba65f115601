"""Every registered op at every test shape, on both CPU backends, through the Python API: the outputs equal
the CLI's (`quantc run SPEC --random-inputs SEED --output ...`) bit for bit, and passing
the same inputs as NumPy arrays gives the same bits again."""

import json
import pathlib

import numpy as np
import pytest

import quantc
from quantc import _quantc

from conftest import run_cli, same_bits

SEED = 7


def sweep_specs() -> list[dict]:
    """Every op's test shapes: the registry's golden/ptxas/emulator sweep shapes (both
    schedules, odd sizes, every activation type)."""
    return [json.loads(text) for text in _quantc.test_specs()]


SPECS = sweep_specs()


def test_the_sweep_covers_every_registered_op():
    assert {spec["op"] for spec in SPECS} == {op["name"] for op in quantc.ops()}


@pytest.mark.parametrize("backend", ["reference", "emulator"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: "-".join(f"{k}={v}" for k, v in sorted(spec.items())))
def test_outputs_equal_the_cli_bit_for_bit(cli, tmp_path: pathlib.Path, spec: dict, backend: str):
    kernel = quantc.compile(spec)
    outputs = kernel.run(backend, seed=SEED)
    expected_outputs = [buffer.name for buffer in kernel.buffers if buffer.role == "output"]
    assert sorted(outputs) == sorted(expected_outputs)

    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    arguments = ["run", str(spec_path), "--backend", backend, "--random-inputs", str(SEED)]
    for name in outputs:
        arguments += ["--output", f"{name}={tmp_path / name}.npy"]
    run_cli(cli, *arguments)
    for name, actual in outputs.items():
        expected = np.load(tmp_path / f"{name}.npy")
        assert same_bits(actual, expected), f"{name}: the Python result differs from the CLI's"

    # The same inputs given as arrays (what `--random-inputs` draws) give the same bits.
    again = kernel.run(backend, **kernel.random_inputs(SEED))
    for name, actual in outputs.items():
        assert same_bits(again[name], actual), name


def test_a_linear_layer_against_numpy_in_float64():
    """An independent oracle: the INT4 affine GEMV against NumPy's f64 product of the
    dequantized weight, within the f32 accumulation bound."""
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((48, 256)).astype(np.float32)  # [out, in], PyTorch's
    arrays, spec = quantc.pack(weight, "int4-affine-grouped", group_size=64)
    kernel = quantc.compile(spec)
    x = rng.standard_normal(256).astype(np.float32)
    for backend in ("reference", "emulator"):
        out = kernel.run(backend, x=x, **arrays)["out"]
        groups = np.repeat(np.arange(4), 64)
        codes = (arrays["w"][:, None, :] >> (4 * np.arange(8))[None, :, None]) & 15  # [k/8, 8, n]
        q = codes.reshape(256, 48).astype(np.float64)
        w = (q - arrays["zero_point"][groups]) * arrays["scale"][groups].astype(np.float64)
        exact = x.astype(np.float64) @ w + arrays["b"]
        magnitude = np.abs(x.astype(np.float64)) @ np.abs(w) + np.abs(arrays["b"])
        assert np.all(np.abs(out - exact) <= 256 * 2.0**-23 * magnitude + 1e-30), backend
