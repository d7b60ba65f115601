"""PyTorch integration: a quantized nn.Linear whose forward pass launches a quantc kernel
on the layer's CUDA tensors (Kernel.launch: no copies, PyTorch's current stream), or runs
it on the CPU with the reference interpreter for tensors on the CPU.

    import torch, quantc.torch
    layer = quantc.torch.QuantizedLinear.from_linear(torch.nn.Linear(4096, 4096), group_size=128).cuda()
    y = layer(x)            # x [..., 4096] float32/float16/bfloat16 on the GPU

Imported only on request (``import quantc.torch``); needs torch. An op that takes batches
(a spec with "m": linear_4bit_affine_grouped, nf4_gemm, dequant_matmul_*) runs all input
rows in one launch, with a kernel compiled on first use per batch size (on a GPU of sm_80
or later with f16/bf16 activations, "auto" picks the tensor-core GEMM for m > 1); so does
int4_matvec_f32_scaled, whose batches run as int4_batched_matvec_f32_scaled (the same
buffers with x [m, k]).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

import quantc

_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "u32": torch.int32,
                 "i32": torch.int32, "u8": torch.uint8, "i8": torch.int8}
_ACTIVATIONS = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
# GEMVs without "m" and the op that runs their batches with the same buffers.
_BATCHED_OPS = {"int4_matvec_f32_scaled": "int4_batched_matvec_f32_scaled"}


def _to_torch(array: np.ndarray, element: str) -> torch.Tensor:
    """A CPU tensor with the bits of `array`, a buffer of quantc element type `element`
    (u32 words as int32: PyTorch has no uint32; bf16 from ml_dtypes or uint16 bits)."""
    if element == "bf16":
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    if array.dtype == np.uint32:
        array = array.view(np.int32)
    return torch.from_numpy(array.copy())


def _to_numpy(tensor: torch.Tensor, element: str) -> np.ndarray:
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16)
    array = tensor.numpy()
    return array.view(np.uint32) if element == "u32" else array


class QuantizedLinear(torch.nn.Module):
    """y = x @ W^T + b with W quantized: the buffers of a quantc op (quantc.pack or
    quantc.convert) held as module buffers, the op's kernel run in forward.

    `arrays`: the op's weight-side buffers by name (what pack/convert return; "bias", f32
    [out], is added after ops without a bias buffer). `spec`: the op spec. Input x:
    [..., in_features] of the spec's activation type (float32 unless "activation" says
    f16/bf16; other float types are converted); output [..., out_features] of that type.
    Raises quantc.RunError for an input of another last dimension."""

    def __init__(self, arrays: dict[str, np.ndarray], spec: dict):
        super().__init__()
        self.spec = dict(spec)
        self._kernels: dict[tuple, quantc.Kernel] = {}
        probe = quantc.compile(self.spec)
        # The canonical spec lists every parameter of the op: "m" says it takes batches.
        self._batch_spec = dict(self.spec) if "m" in probe.spec else None
        if self._batch_spec is None and self.spec["op"] in _BATCHED_OPS:
            self._batch_spec = {**self.spec, "op": _BATCHED_OPS[self.spec["op"]]}
        # The activation buffer: the op's buffer of role "input" (the weights may come first,
        # as in int4_matvec_f32_scaled).
        op = next(info for info in quantc.ops() if info["name"] == probe.spec["op"])
        x_name = next(buffer["name"] for buffer in op["buffers"] if buffer["role"] == "input")
        self.x_buffer = next(buffer for buffer in probe.buffers if buffer.name == x_name)
        self.out_buffer = next(buffer for buffer in probe.buffers if buffer.role == "output")
        self.in_features = int(probe.spec["k"])   # the canonical spec names every linear op's dimensions
        self.out_features = int(probe.spec["n"])  # k (inputs) and n (outputs)
        self.activation = self.x_buffer.element
        self._weight_names = []
        for name, array in arrays.items():
            if name == "bias":
                continue
            self.register_buffer(f"q_{name}", _to_torch(array, quantc._element_of(array.dtype, name)))
            self._weight_names.append(name)
        bias = arrays.get("bias")
        self.register_buffer("extra_bias", None if bias is None or "b" in arrays else
                             torch.from_numpy(np.asarray(bias, np.float32).copy()))

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, scheme: str = "int4-affine-grouped", *, group_size: int = 128,
                    activation: Optional[str] = None) -> "QuantizedLinear":
        """Quantizes an nn.Linear with quantc.pack (scheme, group_size; activation default:
        the layer's dtype when f16/bf16, else f32)."""
        weight = linear.weight.detach().float().cpu().numpy()
        bias = None if linear.bias is None else linear.bias.detach().float().cpu().numpy()
        activation = activation or _ACTIVATIONS.get(linear.weight.dtype, "f32")
        arrays, spec = quantc.pack(weight, scheme, group_size=group_size, bias=bias, activation=activation)
        return cls(arrays, spec).to(linear.weight.device)

    @classmethod
    def from_checkpoint(cls, checkpoint: Any, format: str, layer: str, **options: Any) -> "QuantizedLinear":
        """Converts one layer of a GPTQ/AWQ/bitsandbytes/GGUF checkpoint (quantc.convert)."""
        arrays, spec = quantc.convert(checkpoint, format, layer, **options)
        return cls(arrays, spec)

    def _kernel(self, rows: int, target: Optional[str]) -> quantc.Kernel:
        key = (rows, target)
        if key not in self._kernels:
            spec = dict(self.spec)
            # The op's own "m", or at more than one row the op that runs its batches.
            if self._batch_spec is not None and (rows > 1 or self._batch_spec["op"] == spec["op"]):
                spec = {**self._batch_spec, "m": rows}
            self._kernels[key] = quantc.compile(spec, target=target)
        return self._kernels[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features:
            raise quantc.RunError(f"input: the last dimension is {x.shape[-1]}, the layer's in_features is "
                                  f"{self.in_features}")
        leading = x.shape[:-1]
        rows = x.reshape(-1, self.in_features).to(_TORCH_DTYPES[self.activation]).contiguous()
        if self._batch_spec is not None:  # one launch for all rows
            y = self._run(rows)
        else:  # a GEMV: one launch per row
            y = torch.cat([self._run(rows[i:i + 1]) for i in range(rows.shape[0])])
        if self.extra_bias is not None:
            y = y + self.extra_bias.to(y.device, y.dtype)
        return y.reshape(*leading, self.out_features)

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        """The op on `x` [rows, in_features]: [rows, out_features] of the activation type."""
        rows = x.shape[0]
        weights = {name: getattr(self, f"q_{name}") for name in self._weight_names}
        if x.is_cuda:
            kernel = self._kernel(rows, quantc.cuda_target())
            tensors = {self.x_buffer.name: x, **weights}
            for buffer in kernel.buffers:
                if buffer.role != "input":
                    tensors[buffer.name] = torch.zeros(buffer.shape, dtype=_TORCH_DTYPES[buffer.element],
                                                       device=x.device)
            kernel.launch(**tensors)
            out = tensors[self.out_buffer.name].reshape(-1)
        else:  # the reference interpreter, through NumPy
            kernel = self._kernel(rows, None)
            given = {**weights, self.x_buffer.name: x}
            arrays = {buffer.name: _to_numpy(given[buffer.name], buffer.element)
                      for buffer in kernel.buffers if buffer.name in given}
            out = _to_torch(kernel.run("reference", **arrays)[self.out_buffer.name], self.out_buffer.element).reshape(-1)
        return out[: rows * self.out_features].reshape(rows, self.out_features)
