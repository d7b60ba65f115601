"""Device pointers of framework tensors for Kernel.launch: the CUDA Array Interface
(version 3, numba.readthedocs.io "CUDA Array Interface") and DLPack (dmlc/dlpack
include/dlpack/dlpack.h, the stable C ABI of DLManagedTensor), read without copying and
checked against the kernel's buffers before anything is launched."""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Iterable, Mapping, Optional

import numpy as np

from .errors import RunError

# DLPack's C structs (dlpack.h v0.8, unchanged in 1.x for DLTensor).
_DL_CUDA = 2            # kDLCUDA
_DL_CUDA_MANAGED = 13   # kDLCUDAManaged
_DL_CODES = {0: "i", 1: "u", 2: "f", 4: "bf", 6: "bool"}  # kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# quantc element type -> (typestr kind and bytes of the CUDA Array Interface, DLPack code name and bits)
_ELEMENTS = {
    "f64": ("f", 8), "f32": ("f", 4), "f16": ("f", 2), "bf16": ("bf", 2),
    "u64": ("u", 8), "i64": ("i", 8), "u32": ("u", 4), "i32": ("i", 4), "u16": ("u", 2), "i16": ("i", 2),
    "u8": ("u", 1), "i8": ("i", 1), "bool": ("bool", 1),
}


def _squeezed(shape: Iterable[int]) -> list[int]:
    return [int(d) for d in shape if int(d) != 1]


def _contiguous_strides(shape: list[int], itemsize: int) -> list[int]:
    strides, step = [], itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return list(reversed(strides))


class _View:
    """What launch needs of one tensor: pointer, shape, element kind and size, strides (bytes)."""

    def __init__(self, pointer: int, shape: list[int], kind: str, itemsize: int, strides: Optional[list[int]],
                 device: str):
        self.pointer, self.shape, self.kind, self.itemsize, self.strides, self.device = (
            pointer, shape, kind, itemsize, strides, device)


def _from_cuda_array_interface(interface: Mapping[str, Any]) -> _View:
    shape = [int(d) for d in interface["shape"]]
    typestr = np.dtype(interface["typestr"])
    kind = {"f": "f", "u": "u", "i": "i", "b": "bool"}.get(typestr.kind, typestr.kind)
    if typestr.kind == "V" and typestr.itemsize == 2:
        kind = "bf"  # PyTorch exports bfloat16 as "<V2"
    strides = interface.get("strides")
    return _View(int(interface["data"][0]), shape, kind, typestr.itemsize,
                 None if strides is None else [int(s) for s in strides], "cuda")


def _from_dlpack(tensor: Any) -> _View:
    capsule = tensor.__dlpack__()
    address = _capsule_pointer(capsule, b"dltensor")
    view = _DLTensor.from_address(address)  # DLManagedTensor starts with its DLTensor
    shape = [view.shape[i] for i in range(view.ndim)]
    itemsize = view.dtype.bits // 8
    strides = None if not view.strides else [view.strides[i] * itemsize for i in range(view.ndim)]
    kind = _DL_CODES.get(view.dtype.code, f"code {view.dtype.code}")
    device = "cuda" if view.device.device_type in (_DL_CUDA, _DL_CUDA_MANAGED) else \
        f"DLPack device type {view.device.device_type}"
    # The capsule keeps the tensor alive only while it lives; the caller's tensor object
    # (held by launch's keyword arguments) owns the memory until the launch is queued.
    return _View(view.data + view.byte_offset, shape, kind, itemsize, strides, device)


def _view(name: str, tensor: Any) -> _View:
    if hasattr(tensor, "__cuda_array_interface__"):
        return _from_cuda_array_interface(tensor.__cuda_array_interface__)
    if hasattr(tensor, "__dlpack__"):
        try:
            return _from_dlpack(tensor)
        except (BufferError, TypeError, ValueError) as error:
            raise RunError(f"argument '{name}': its DLPack export failed: {error}") from None
    raise RunError(f"argument '{name}': a {type(tensor).__name__} has neither __cuda_array_interface__ nor "
                   f"__dlpack__; pass a GPU tensor (torch.Tensor on 'cuda', cupy.ndarray, jax.Array), or use "
                   f"Kernel.run for NumPy arrays")


def device_pointers(buffers: list, tensors: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """(pointer, bytes) per buffer name, after checking every tensor against its buffer."""
    names = [buffer.name for buffer in buffers]
    for name in tensors:
        if name not in names:
            raise RunError(f"argument '{name}': the program has no buffer named '{name}'; its buffers are: "
                           f"{', '.join(names)}")
    pointers = {}
    for buffer in buffers:
        if buffer.name not in tensors:
            scratch = (f"; '{buffer.name}' is scratch: zero-filled device memory of {int(np.prod(buffer.shape))} x "
                       f"{buffer.element}" if buffer.role == "scratch" else "")
            raise RunError(f"argument '{buffer.name}' is missing: launch takes every buffer ({', '.join(names)}), "
                           f"outputs and scratch included{scratch}")
        label = f"argument '{buffer.name}'"
        view = _view(buffer.name, tensors[buffer.name])
        if view.device != "cuda":
            raise RunError(f"{label}: the tensor is on {view.device}, not a CUDA device; move it to the GPU "
                           f"(torch: t.cuda()) or use Kernel.run for host arrays")
        kind, itemsize = _ELEMENTS[buffer.element]
        # Packed words are raw bits: a signed tensor of the same width feeds an unsigned
        # word buffer (PyTorch has no uint32 arithmetic; GPTQ's qweight is int32).
        raw_words = kind == "u" and view.kind == "i"
        if (view.kind, view.itemsize) != (kind, itemsize) and not (raw_words and view.itemsize == itemsize):
            raise RunError(f"{label}: buffer '{buffer.name}' holds {buffer.element}, the tensor's elements are "
                           f"{view.kind}{view.itemsize * 8}; convert it (torch: t.to(dtype))")
        count = int(np.prod(buffer.shape))
        given = int(np.prod(view.shape)) if view.shape else 1
        if given != count or (len(view.shape) > 1 and _squeezed(view.shape) != _squeezed(buffer.shape)):
            raise RunError(f"{label}: buffer '{buffer.name}' has the logical shape {list(buffer.shape)} ({count} x "
                           f"{buffer.element}, row-major, last index fastest), the tensor's shape is {view.shape}")
        if view.strides is not None and view.strides != _contiguous_strides(view.shape, view.itemsize):
            squeezed_ok = all(s == e for s, e, d in zip(view.strides, _contiguous_strides(view.shape, view.itemsize),
                                                       view.shape) if d != 1)
            if not squeezed_ok:
                raise RunError(f"{label}: the tensor is not contiguous (strides {view.strides} bytes); pass "
                               f"t.contiguous()")
        pointers[buffer.name] = (view.pointer, count * itemsize)
    return pointers


def current_stream(stream: Any, tensors: Iterable[Any]) -> Optional[int]:
    """The CUstream handle to launch on (see Kernel.launch)."""
    if stream is not None:
        for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
            if hasattr(stream, attribute):
                return int(getattr(stream, attribute))
        return int(stream)
    torch = sys.modules.get("torch")
    if torch is not None:
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and tensor.is_cuda:
                return int(torch.cuda.current_stream(tensor.device).cuda_stream)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return int(cupy.cuda.get_current_stream().ptr)
    return 0
