"""Kernel.launch: the checks on framework tensors, which run before anything reaches a
GPU (so they are tested everywhere), and the launch itself on PyTorch tensors where a
CUDA device exists (skipped with a message elsewhere; bench/gpu/run.sh runs it on one)."""

import re

import numpy as np
import pytest

import quantc

GEMV = {"op": "linear_4bit_affine_grouped", "in_dim": 64, "out_dim": 32, "group_size": 32}


class FakeCudaTensor:
    """A device tensor as the CUDA Array Interface (v3) describes one; never dereferenced."""

    def __init__(self, shape, typestr, pointer=0x7F0000000000, strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (pointer, False),
                                         "strides": strides, "version": 3}


def fake_tensors(kernel: quantc.Kernel) -> dict:
    return {buffer.name: FakeCudaTensor(buffer.shape, buffer.dtype.str) for buffer in kernel.buffers}


def checked_pointers(kernel, tensors):
    from quantc._device import device_pointers

    return device_pointers(kernel.buffers, tensors)


def test_pointers_and_byte_sizes_come_from_the_interface():
    kernel = quantc.compile(GEMV)
    pointers = checked_pointers(kernel, fake_tensors(kernel))
    assert pointers["x"] == (0x7F0000000000, 64 * 4)
    assert pointers["w"] == (0x7F0000000000, 8 * 32 * 4)
    assert set(pointers) == {buffer.name for buffer in kernel.buffers}


@pytest.mark.parametrize("name, tensor, message", [
    ("x", FakeCudaTensor((64,), "<f2"), "buffer 'x' holds f32, the tensor's elements are f16"),
    ("x", FakeCudaTensor((65,), "<f4"), "the tensor's shape is [65]"),
    ("w", FakeCudaTensor((32, 8), "<u4"), "has the logical shape [8, 32]"),
    ("w", FakeCudaTensor((8, 32), "<u4", strides=(4, 32)), "not contiguous"),
    ("x", np.zeros(64, np.float32), "not a CUDA device"),
    ("x", [0.0] * 64, "neither __cuda_array_interface__ nor __dlpack__"),
    ("w", FakeCudaTensor((8, 32), "<i2"), "buffer 'w' holds u32, the tensor's elements are i16"),
])
def test_a_mismatched_tensor_is_refused_before_launching(name, tensor, message):
    kernel = quantc.compile(GEMV)
    tensors = {**fake_tensors(kernel), name: tensor}
    with pytest.raises(quantc.RunError, match=re.escape(message)):
        checked_pointers(kernel, tensors)


def test_signed_words_of_the_same_width_feed_unsigned_word_buffers():
    kernel = quantc.compile(GEMV)
    pointers = checked_pointers(kernel, {**fake_tensors(kernel), "w": FakeCudaTensor((8, 32), "<i4")})
    assert pointers["w"][1] == 8 * 32 * 4


def test_missing_and_unknown_buffers_are_refused():
    kernel = quantc.compile(GEMV)
    tensors = fake_tensors(kernel)
    with pytest.raises(quantc.RunError, match="argument 'out' is missing"):
        checked_pointers(kernel, {k: v for k, v in tensors.items() if k != "out"})
    with pytest.raises(quantc.RunError, match="no buffer named 'bias'"):
        checked_pointers(kernel, {**tensors, "bias": tensors["b"]})


def test_launch_without_a_gpu_is_backend_unavailable():
    if quantc.cuda_target() is not None:
        pytest.skip("a CUDA device is present")
    kernel = quantc.compile(GEMV)
    with pytest.raises(quantc.BackendUnavailable):
        kernel.launch(**fake_tensors(kernel))


def test_launch_on_torch_tensors_equals_the_emulator():
    target = quantc.cuda_target()
    if target is None:
        pytest.skip("no CUDA driver or device on this machine: the launch path runs where one is "
                    "(bench/gpu/run.sh)")
    torch = pytest.importorskip("torch", reason="the launch test uses PyTorch tensors")
    for spec in [GEMV, {**GEMV, "activation": "f16"},
                 {"op": "dequant_matmul_int4", "m": 4, "k": 256, "n": 64, "block_size": 32, "activation": "f16",
                  "schedule": "fast"}]:
        kernel = quantc.compile(spec, target=target)
        inputs = kernel.random_inputs(3)
        expected = quantc.compile(spec).run("emulator", **inputs)
        torch_dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "u32": torch.int32,
                        "i32": torch.int32, "u8": torch.uint8}
        # PyTorch has no uint32 tensors: u32 words travel as int32 bits.
        tensors = {name: torch.from_numpy(array.view(np.int32) if array.dtype == np.uint32 else array).cuda()
                   for name, array in inputs.items()}
        for buffer in kernel.buffers:
            if buffer.role != "input":
                tensors[buffer.name] = torch.zeros(buffer.shape, dtype=torch_dtypes[buffer.element], device="cuda")
        kernel.launch(**tensors)
        torch.cuda.synchronize()
        for name, array in expected.items():
            got = tensors[name].cpu().numpy()[: array.size].reshape(array.shape)
            # The GPU's mma may sum in another order than ir/Mma.h's model: within the f32 bound.
            np.testing.assert_allclose(got.astype(np.float64), array.astype(np.float64), rtol=2e-3, atol=2e-3)
