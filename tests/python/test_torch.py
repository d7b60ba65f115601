"""quantc.torch.QuantizedLinear (skipped where PyTorch is not installed; scripts/test.sh
does not install it, bench/gpu/run.sh's machines have it)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="quantc.torch needs PyTorch, which is not installed here")

import quantc  # noqa: E402
import quantc.torch  # noqa: E402


def dequantized(layer) -> np.ndarray:
    """W [in, out] in f64 from the int4 affine buffers (linear_4bit_affine_grouped's definition)."""
    w = layer.q_w.numpy().view(np.uint32)  # [k/8, n]
    codes = (w[:, None, :] >> (4 * np.arange(8, dtype=np.uint32))[None, :, None]) & 15
    q = codes.reshape(layer.in_features, layer.out_features).astype(np.float64)
    groups = np.arange(layer.in_features) // layer.spec["group_size"]
    scale = layer.q_scale.numpy().astype(np.float64)[groups]
    zero = layer.q_zero_point.numpy().view(np.uint32).astype(np.float64)[groups]
    return (q - zero) * scale


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_quantized_linear_matches_its_dequantized_weight(device):
    if device == "cuda" and quantc.cuda_target() is None:
        pytest.skip("no CUDA device")
    torch.manual_seed(0)
    linear = torch.nn.Linear(128, 48)
    layer = quantc.torch.QuantizedLinear.from_linear(linear, group_size=64).to(device)
    x = torch.randn(3, 128, device=device)
    y = layer(x).cpu().double().numpy()
    w = dequantized(layer.cpu())
    exact = x.cpu().double().numpy() @ w + linear.bias.detach().double().numpy()
    magnitude = np.abs(x.cpu().double().numpy()) @ np.abs(w) + np.abs(linear.bias.detach().double().numpy())
    assert y.shape == (3, 48)
    assert np.all(np.abs(y - exact) <= 160 * 2.0**-23 * magnitude + 1e-30)
    with pytest.raises(quantc.RunError, match="in_features is 128"):
        layer(torch.randn(2, 64, device=device))


@pytest.mark.parametrize("activation", ["f32", "f16"])
def test_quantized_linear_runs_a_batch_in_one_launch_equal_to_its_rows(activation):
    # linear_4bit_affine_grouped takes "m": the layer compiles one kernel for the 5 rows. With
    # the seed schedule (at m > 1 the seed program once per row) each output row equals, bit
    # for bit on the interpreter, the row run alone.
    torch.manual_seed(1)
    linear = torch.nn.Linear(128, 64)
    arrays, spec = quantc.pack(linear.weight.detach().numpy(), "int4-affine-grouped", group_size=32,
                               bias=linear.bias.detach().numpy(), activation=activation)
    layer = quantc.torch.QuantizedLinear(arrays, {**spec, "schedule": "seed"})
    x = torch.randn(5, 128)
    y = layer(x)
    assert [key[0] for key in layer._kernels] == [5]
    rows = torch.cat([layer(x[i:i + 1]) for i in range(5)])
    assert torch.equal(y, rows)


def test_quantized_linear_runs_int4_matvec_batches_as_the_batched_matvec():
    # int4_matvec_f32_scaled (pack's int4-symmetric) has no "m": the layer runs a batch as
    # int4_batched_matvec_f32_scaled, the same buffers with x [m, k], in one launch, and
    # each row matches the f64 product of the dequantized weight within the f32 bound.
    torch.manual_seed(2)
    weight = torch.randn(40, 256)
    arrays, spec = quantc.pack(weight.numpy(), "int4-symmetric")
    layer = quantc.torch.QuantizedLinear(arrays, spec)
    x = torch.randn(3, 256)
    y = layer(x).double().numpy()
    assert [(key[0], kernel.spec["op"]) for key, kernel in layer._kernels.items()] == \
        [(3, "int4_batched_matvec_f32_scaled")]
    codes = layer.q_weights.numpy().view(np.uint32)  # [n, k/8], value i of a word at bits 4i
    nibbles = (codes[:, :, None] >> (4 * np.arange(8, dtype=np.uint32))) & 15
    q = np.where(nibbles >= 8, nibbles.astype(np.int64) - 16, nibbles).reshape(40, 256).astype(np.float64)
    w = q * layer.q_row_scales.numpy().astype(np.float64)[:, None]
    exact = x.double().numpy() @ w.T
    magnitude = np.abs(x.double().numpy()) @ np.abs(w.T)
    assert np.all(np.abs(y - exact) <= 300 * 2.0**-24 * magnitude + 1e-30)
    single = layer(x[1:2]).double().numpy()
    assert np.all(np.abs(single - exact[1:2]) <= 300 * 2.0**-24 * magnitude[1:2] + 1e-30)
