"""quantc from Python: compile quantized-kernel specs (INT4, NF4, FP8, NVFP4 weight-only
linear layers and their quantize/dequantize kernels) to PTX, run them on NumPy arrays on
the CPU (the reference interpreter or the PTX emulator), launch them on a GPU on any
framework's tensors without copies, and pack or convert weights into their buffers.

    import numpy as np, quantc
    kernel = quantc.compile({"op": "linear_4bit_affine_grouped", "in_dim": 64, "out_dim": 32,
                             "group_size": 32})
    outputs = kernel.run("emulator", seed=1)        # random inputs, as `quantc run --random-inputs 1`
    outputs["y"]                                    # numpy.ndarray, the op's output buffer

Everything goes through the same C++ library calls as the ``quantc`` CLI: the same spec
checks, kernel cache ($QUANTC_CACHE_DIR, else ~/.cache/quantc), passes, emitter, backends
and error messages (quantc.errors).

Arrays: a buffer's element type maps to a NumPy dtype (f32 float32, f16 float16, u32
uint32, u8 uint8, i32 int32, ...); bf16 buffers take and give ``ml_dtypes.bfloat16``
arrays when ml_dtypes is installed, else their bit patterns as uint16. An input must be
C-contiguous; its shape is the buffer's logical shape (``quantc.ops()`` lists them,
row-major, last index fastest) up to dimensions of size 1, or flat.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from . import _quantc
from .errors import (BackendUnavailable, CompileError, ConvertError, Error, OpError, PackError, RunError,
                     SpecError)

__all__ = [
    "Buffer", "Kernel", "backends", "compile", "convert", "cuda_target", "ops", "pack",
    "BackendUnavailable", "CompileError", "ConvertError", "Error", "OpError", "PackError", "RunError", "SpecError",
]

__version__: str = _quantc.version

SpecLike = Union[Mapping[str, Any], str, "os.PathLike[str]"]

try:  # NumPy has no bfloat16; ml_dtypes (JAX's) gives one.
    import ml_dtypes as _ml_dtypes

    _BFLOAT16: Optional[np.dtype] = np.dtype(_ml_dtypes.bfloat16)
except ImportError:
    _BFLOAT16 = None

_DTYPES = {
    "f64": np.dtype(np.float64), "f32": np.dtype(np.float32), "f16": np.dtype(np.float16),
    "u64": np.dtype(np.uint64), "i64": np.dtype(np.int64), "u32": np.dtype(np.uint32), "i32": np.dtype(np.int32),
    "u16": np.dtype(np.uint16), "i16": np.dtype(np.int16), "u8": np.dtype(np.uint8), "i8": np.dtype(np.int8),
    "bool": np.dtype(np.bool_),
}


def _dtype_of(element: str) -> np.dtype:
    """The NumPy dtype that holds a buffer of `element` (bf16: ml_dtypes.bfloat16, else uint16)."""
    if element == "bf16":
        return _BFLOAT16 if _BFLOAT16 is not None else _DTYPES["u16"]
    return _DTYPES[element]


def _element_of(dtype: np.dtype, label: str) -> str:
    """The quantc element type of a NumPy dtype; RunError for a dtype no buffer holds."""
    if _BFLOAT16 is not None and dtype == _BFLOAT16:
        return "bf16"
    for element, candidate in _DTYPES.items():
        if dtype == candidate:
            return element
    raise RunError(f"{label}: dtype {dtype} is not an element type of any quantc buffer "
                   f"(float32, float16, bfloat16, float64, (u)int8/16/32/64, bool)")


def _to_numpy(array: tuple) -> np.ndarray:
    element, shape, data = array
    return np.frombuffer(data, dtype=_dtype_of(element)).reshape(shape).copy()


def _from_numpy(name: str, value: Any) -> tuple:
    label = f"argument '{name}'"
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if not array.flags.c_contiguous:
        raise RunError(f"{label}: the array is not C-contiguous (strides {array.strides}); pass "
                       f"numpy.ascontiguousarray({name})")
    return (_element_of(array.dtype, label), list(array.shape), array.tobytes())


def ops() -> list[dict]:
    """The registered ops, as ``quantc ops --json`` lists them: one dict per op with
    "name", "summary", "layout", "seed" (the document its semantics follow), "params"
    (name, type, description, constraint, default, choices, aliases) and "buffers" (name,
    role, element, count and shape formulas in the op's parameters)."""
    return json.loads(_quantc.ops_json())


def backends() -> list[str]:
    """The backends Kernel.run takes: "reference" (the IR interpreter), "emulator" (the
    PTX emulator), "cuda" (a GPU, with host copies)."""
    return list(_quantc.backend_names())


def cuda_target() -> Optional[str]:
    """The PTX target of GPU 0 ("sm_90"), or None where no CUDA driver or device exists."""
    return _quantc.cuda_target()


@dataclass(frozen=True)
class Buffer:
    """One kernel buffer, in binding order (the PTX entry's parameter order)."""

    name: str
    element: str           # quantc element type: "f32", "f16", "bf16", "u32", "u8", ...
    shape: tuple           # logical shape, row-major (last index fastest), in elements
    role: str              # "input", "output" or "scratch" (zero-filled by quantc, never given)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the buffer's arrays."""
        return _dtype_of(self.element)


class Kernel:
    """A compiled spec: what quantc.compile returns.

    Attributes: ``name`` (the PTX entry), ``target`` ("sm_80"), ``spec`` (the canonical
    spec: defaults filled), ``ptx``, ``ir`` (after the pass pipeline), ``metadata``
    (entry, grid, block, shared memory, parameters; as ``quantc emit --metadata``) and
    ``buffers`` (list of Buffer)."""

    def __init__(self, native: "_quantc.Kernel"):
        self._native = native
        self.name: str = native.name
        self.target: str = native.target
        self.ptx: str = native.ptx
        self.spec: dict = json.loads(native.spec_json)
        self.metadata: dict = json.loads(native.metadata_json)
        self.buffers: list[Buffer] = [Buffer(name, element, tuple(shape), role)
                                      for name, element, shape, role in native.buffers()]

    def __repr__(self) -> str:
        return f"<quantc.Kernel {self.name} {self.target} {json.dumps(self.spec, sort_keys=True)}>"

    @property
    def ir(self) -> str:
        """The IR after the pass pipeline, as ``quantc ir`` prints it."""
        return self._native.ir

    def cubin(self) -> bytes:
        """The kernel linked to a cubin for its target by nvJitLink (in process, no driver
        needed), through the kernel cache. CompileError when nvJitLink fails."""
        return self._native.cubin()

    def check(self, target: Optional[str] = None, assembler: str = "ptxas") -> dict:
        """Assembles the PTX (for `target`, default the kernel's) as ``quantc check`` does:
        {"ok", "registers", "spill_store_bytes", "spill_load_bytes", "log", "target",
        "assembler"}. `assembler`: "ptxas" (whole program, as the driver JIT-compiles)
        or "nvjitlink" (relocatable). CompileError when ptxas cannot be run."""
        return json.loads(self._native.check(target, assembler))

    def profile(self, seed: int = 1, devices: Sequence[str] = ()) -> dict:
        """``quantc profile --json``: runs the PTX in the emulator on random inputs and
        returns its counters and the GPU cost model's estimate per device ("h100_sxm",
        "h200", "a100", "l40s"; default every one). Keys: README, 'quantc profile --json'."""
        return json.loads(self._native.profile(seed, list(devices)))["kernels"][0]

    def random_inputs(self, seed: int) -> dict[str, np.ndarray]:
        """The input arrays ``quantc run --random-inputs SEED`` uses, by buffer name."""
        return {name: _to_numpy(array) for name, array in self._native.random_inputs(seed).items()}

    def run(self, backend: str = "reference", *, seed: Optional[int] = None, threads: int = 1,
            **arrays: Any) -> dict[str, np.ndarray]:
        """Runs the kernel on the CPU ("reference": the IR interpreter, the oracle;
        "emulator": the PTX on the emulator) or on a GPU with host copies ("cuda").

        `arrays`: one array per input buffer, by name (Kernel.buffers lists them), each
        C-contiguous with the buffer's dtype and logical shape (or flat). With `seed`,
        inputs not given are the random ones of ``quantc run --random-inputs SEED``.
        Returns every output buffer as a new array of its logical shape, by name.

        Raises RunError (messages as ``quantc run --input``) for an unknown or scratch
        buffer name, a missing input, a wrong dtype, element count or shape, a
        non-contiguous array, and execution errors; BackendUnavailable for "cuda" without
        a driver or device; RunError naming the backends for an unknown backend."""
        inputs = {name: _from_numpy(name, value) for name, value in arrays.items()}
        outputs = self._native.run(backend, inputs, seed, threads)
        return {name: _to_numpy(array) for name, array in outputs.items()}

    def launch(self, stream: Any = None, **tensors: Any) -> None:
        """Launches the kernel on the GPU on the caller's device memory, without copies.

        `tensors`: one per buffer (inputs, outputs and scratch), by name: any object with
        ``__cuda_array_interface__`` or ``__dlpack__`` (PyTorch, CuPy, JAX) on the CUDA
        device, C-contiguous, with the buffer's dtype and logical shape (or flat).
        `stream`: a CUstream handle (int), a torch.cuda.Stream, a CuPy stream, or None for
        the caller's current stream (PyTorch's when a tensor is a torch.Tensor, else
        CuPy's current stream, else the legacy default stream 0). Asynchronous: returns
        once the launch is queued on that stream.

        Raises RunError, before anything is launched, for a missing or unknown buffer, a
        tensor not on a CUDA device, a wrong dtype, shape or size, a non-contiguous
        tensor, a misaligned pointer or one outside its allocation, and a kernel compiled
        for a newer target than the GPU's; BackendUnavailable without a driver or device."""
        from ._device import device_pointers, current_stream

        pointers = device_pointers(self.buffers, tensors)
        self._native.launch(pointers, current_stream(stream, tensors.values()))


def _spec_text(spec: SpecLike, schedule: Optional[str]) -> tuple[str, str]:
    """(JSON text, source for messages) of a spec given as a dict or a JSON file path."""
    if isinstance(spec, Mapping):
        document = dict(spec)
        source = "<spec>"
    else:
        source = os.fspath(spec)
        try:
            with open(source, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            raise SpecError(f"{source}: cannot read the spec: {error.strerror}") from None
        if schedule is None:
            return text, source
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            return text, source  # the C++ parser reports the syntax error as the CLI does
        if not isinstance(document, dict):
            return text, source
    if schedule is not None:
        document["schedule"] = schedule
    return json.dumps(document), source


def compile(spec: SpecLike, target: Optional[str] = None, opt_level: Union[int, str, None] = None,
            schedule: Optional[str] = None) -> Kernel:
    """Compiles an op spec to PTX through the kernel cache, as ``quantc emit`` does.

    `spec`: a dict ({"op": ..., parameters}) or the path of a JSON spec file.
    `target`: "sm_75" .. "sm_121" (default: the spec's "target", else sm_80).
    `opt_level`: 0, 1, 2 or "O0".."O2" (default: the spec's "opt_level", else 2).
    `schedule`: sets the spec's "schedule" ("seed", "fast", "auto") for ops that have one.

    Raises SpecError (unknown op or key, a wrong value type, an unknown target or a
    schedule the op does not take), OpError (parameters the op refuses) and CompileError."""
    text, source = _spec_text(spec, schedule)
    level = None if opt_level is None else (f"O{opt_level}" if isinstance(opt_level, int) else str(opt_level))
    return Kernel(_quantc.Kernel(text, source, target, level))


def pack(weight: Any, scheme: str = "int4-affine-grouped", *, group_size: int = 64, block: int = 64,
         layout: str = "out,in", bias: Any = None, batch: int = 1,
         activation: str = "f32") -> tuple[dict[str, np.ndarray], dict]:
    """Quantizes a floating weight into an op's buffers, as ``quantc pack`` does.

    `weight`: a 2-D float array, [out_features, in_features] (PyTorch nn.Linear, layout
    "out,in") or [in, out] (layout "in,out"); converted to float32.
    `scheme`: "int4-affine-grouped" (linear_4bit_affine_grouped, `group_size`), "nf4"
    (nf4_gemm, `block` 64) or "int4-symmetric" (int4_matvec_f32_scaled). `batch`: m of the
    first two ops' specs (the affine op's spec holds it only when batch > 1).
    `bias`: [out_features] or None; linear_4bit_affine_grouped gets it as its buffer "b"
    (zeros without one), rounded once to `activation` ("f32", "f16", "bf16").
    Returns (arrays by buffer name, the op spec as a dict) for quantc.compile and Kernel.run.
    Raises PackError for a weight the scheme cannot pack (dimensions, non-finite values)
    and RunError for a weight that is not 2-D or a bias of the wrong length."""
    values = np.ascontiguousarray(np.asarray(weight, dtype=np.float32))
    if values.ndim != 2:
        raise RunError(f"weight: a 2-D array is needed ([out_features, in_features]), got shape {values.shape}")
    bias_bytes = None
    if bias is not None:
        bias_bytes = np.ascontiguousarray(np.asarray(bias, dtype=np.float32)).ravel().tobytes()
    spec, arrays, _metadata = _quantc.pack(values.tobytes(), values.shape[0], values.shape[1], layout, bias_bytes,
                                           scheme, group_size, block, batch, activation)
    return {name: _to_numpy(array) for name, array in arrays}, json.loads(spec)


def convert(checkpoint: Union[str, "os.PathLike[str]"], format: str, layer: str, *, batch: int = 1,
            checkpoint_format: Optional[str] = None) -> tuple[dict[str, np.ndarray], dict]:
    """Repacks one layer of a GPTQ, AWQ, bitsandbytes or GGUF checkpoint exactly into an
    op's buffers, as ``quantc convert`` does.

    `checkpoint`: a .safetensors file, a folder of them (with its config), or a .gguf file.
    `format`: "gptq", "awq", "bnb" or "gguf". `layer`: the prefix
    ("model.layers.0.self_attn.q_proj", GGUF "blk.0.attn_q"). `batch`: m, the activation rows
    (every op convert writes; for GPTQ and AWQ the spec holds "m" only when batch > 1).
    `checkpoint_format`: GPTQ's qzeros convention, "gptq" (v1) or "gptq_v2".
    Returns (arrays by buffer name plus "bias" (f32) when the layer has one, the op spec).
    Raises ConvertError naming the tensor, dtype or shape the converter refuses."""
    spec, arrays, bias, _source_type = _quantc.convert(os.fspath(checkpoint), format, layer, batch,
                                                      checkpoint_format)
    result = {name: _to_numpy(array) for name, array in arrays}
    if bias is not None:
        result["bias"] = np.frombuffer(bias, dtype=np.float32).copy()
    return result, json.loads(spec)
