#!/usr/bin/env python3
"""Writes the GGUF reference files for tests/gguf/gguf_tests.cpp with gguf-py, the Python
package of the GGUF format's reference implementation (llama.cpp's gguf-py, pinned to
gguf==0.19.0 by scripts/setup.sh).

    make_reference.py --out DIR

writes into DIR:
  reference.gguf          GGUFWriter output: one tensor per (type, shape) below and a
                          metadata entry of every GGUF value type, nested arrays included
  reference_align128.gguf the same writer with general.alignment = 128
  <tensor>.npy            gguf.quants.dequantize of that tensor's bytes as GGUFReader reads
                          them back from the file (float32, numpy shape = ne reversed)
  manifest.json           the tensors (file, name, type, numpy shape, .npy), the metadata
                          written, and gguf-py's version

Tensors: F32, F16, BF16 (every bf16 bit pattern, and gguf-py's rounding of random
floats), Q4_0, Q4_1, Q8_0 (gguf.quants.quantize of random data, and random raw blocks),
Q4_K, Q5_K, Q6_K (gguf-py 0.19.0 cannot quantize these: random raw blocks with finite f16
scales). Shapes include single rows, several rows and 3-D tensors. The F16 tensor holds
every f16 bit pattern except the signalling NaNs, which are replaced by their quiet
twins: numpy widens a signalling NaN without quieting it, ggml (and the reader under
test) quiets it, and the C++ test checks that case on its own.

Deterministic (fixed seed). Exits 3, with a message on stderr, when gguf-py cannot be
imported; the C++ test turns that into a skip or, in CI, a failure.
"""
import argparse
import json
import pathlib
import sys

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf.constants import GGML_QUANT_SIZES
except ImportError as error:  # reported by the caller as "gguf-py missing"
    print(f"make_reference.py: cannot import gguf-py ({error})", file=sys.stderr)
    sys.exit(3)

try:
    from importlib.metadata import version as package_version
    GGUF_VERSION = package_version("gguf")
except Exception:  # the package imported but has no metadata (e.g. a source checkout)
    GGUF_VERSION = "unknown"

RNG = np.random.default_rng(20240611)

# Byte offsets of the f16 fields (d, dmin, m) in each block (ggml-common.h layouts).
F16_FIELDS = {T.Q4_0: [0], T.Q4_1: [0, 2], T.Q8_0: [0], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}


def random_finite_f16_bits(count):
    bits = RNG.integers(0, 1 << 16, size=count, dtype=np.uint32).astype(np.uint16)
    exponent_all_ones = (bits & 0x7C00) == 0x7C00
    return np.where(exponent_all_ones, bits & ~np.uint16(0x4000), bits).astype(np.uint16)


def raw_blocks(qtype, shape):
    """Random blocks for a tensor of numpy `shape`, as the byte-shaped uint8 array GGUFWriter takes."""
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    assert shape[-1] % block_size == 0
    n_blocks = int(np.prod(shape)) // block_size
    blocks = RNG.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint16).astype(np.uint8)
    for offset in F16_FIELDS[qtype]:
        blocks[:, offset:offset + 2] = random_finite_f16_bits(n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return blocks.reshape(*shape[:-1], shape[-1] // block_size * type_size)


def random_weights(shape):
    values = RNG.standard_normal(size=shape).astype(np.float32)
    values.flat[0] = 0.0  # an exact zero and a block-wide maximum of either sign
    if values.size > 2:
        values.flat[1] = -3.5
        values.flat[2] = 2.75
    return values


def every_f16_pattern_quiet():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    signalling = ((bits & 0x7C00) == 0x7C00) & ((bits & 0x03FF) != 0) & ((bits & 0x0200) == 0)
    return np.where(signalling, bits | np.uint16(0x0200), bits).astype(np.uint16).view(np.float16).reshape(256, 256)


def tensors():
    """(name, array, raw_dtype or None) for GGUFWriter.add_tensor."""
    out = []
    f32 = random_weights((3, 7))
    f32.flat[3:8] = [np.inf, -np.inf, -0.0, 1e-45, np.float32(3.4028235e38)]
    out += [("f32.vector", random_weights((5,)), None), ("f32.matrix", f32, None),
            ("f32.cube", random_weights((2, 3, 4)), None)]
    out += [("f16.patterns", every_f16_pattern_quiet(), None),
            ("f16.weights", random_weights((2, 3, 5)).astype(np.float16), None)]
    bf16_patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).reshape(256, 256)
    out += [("bf16.patterns", bf16_patterns.view(np.uint8).reshape(256, 512), T.BF16),
            ("bf16.weights", gguf.quants.quantize(random_weights((3, 4)), T.BF16), T.BF16)]
    for qtype in (T.Q4_0, T.Q4_1, T.Q8_0):
        label = qtype.name.lower()
        for shape in ((1, 32), (4, 96), (2, 3, 64)):
            name = f"{label}.quantized.{'x'.join(map(str, shape))}"
            out.append((name, gguf.quants.quantize(random_weights(shape), qtype), qtype))
        out.append((f"{label}.raw.5x64", raw_blocks(qtype, (5, 64)), qtype))
    for qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
        label = qtype.name.lower()
        for shape in ((1, 256), (3, 512), (2, 2, 256)):
            out.append((f"{label}.raw.{'x'.join(map(str, shape))}", raw_blocks(qtype, shape), qtype))
    return out


METADATA = [
    ("test.u8", "u8", 200), ("test.i8", "i8", -100), ("test.u16", "u16", 60000), ("test.i16", "i16", -30000),
    ("test.u32", "u32", 4000000000), ("test.i32", "i32", -2000000000), ("test.f32", "f32", 0.1),
    ("test.bool", "bool", True), ("test.string", "string", "h\u00e9llo gguf"), ("test.u64", "u64", 1 << 63),
    ("test.i64", "i64", -(1 << 62)), ("test.f64", "f64", 2.0 ** -30 + 1.0),
    ("test.strings", "array", ["a", "", "\u00fc\u00df"]), ("test.nested", "array", [[1, 2], [3], [-4, 5, 6]]),
    ("test.floats", "array", [0.5, -1.25]), ("test.bools", "array", [True, False, True]),
]


def add_metadata(writer):
    adders = {"u8": writer.add_uint8, "i8": writer.add_int8, "u16": writer.add_uint16, "i16": writer.add_int16,
              "u32": writer.add_uint32, "i32": writer.add_int32, "f32": writer.add_float32, "bool": writer.add_bool,
              "string": writer.add_string, "u64": writer.add_uint64, "i64": writer.add_int64,
              "f64": writer.add_float64, "array": writer.add_array}
    for key, kind, value in METADATA:
        adders[kind](key, value)


def write(path, tensor_list, alignment=None):
    writer = gguf.GGUFWriter(str(path), "quantc-test")
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    add_metadata(writer)
    for name, array, raw_dtype in tensor_list:
        writer.add_tensor(name, array, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def expected(path, out, prefix):
    """Dequantizes every tensor of `path` with gguf-py; returns the manifest rows."""
    rows = []
    reader = gguf.GGUFReader(str(path))
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type).astype(np.float32, copy=False)
        shape = [int(d) for d in reversed(tensor.shape.tolist())]
        values = np.ascontiguousarray(values.reshape(shape))
        npy = f"{prefix}{tensor.name}.npy"
        np.save(out / npy, values)
        rows.append({"file": path.name, "name": tensor.name, "type": tensor.tensor_type.name, "shape": shape,
                     "npy": npy})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=pathlib.Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tensor_list = tensors()
    write(args.out / "reference.gguf", tensor_list)
    aligned = [t for t in tensor_list if t[0] in ("f32.vector", "q4_k.raw.3x512", "q8_0.raw.5x64", "f16.weights")]
    write(args.out / "reference_align128.gguf", aligned, alignment=128)
    rows = expected(args.out / "reference.gguf", args.out, "")
    rows += expected(args.out / "reference_align128.gguf", args.out, "align128.")
    manifest = {
        "gguf_version": GGUF_VERSION,
        "tensors": rows,
        "metadata": [{"key": key, "type": kind, "value": value} for key, kind, value in METADATA],
        "alignments": {"reference.gguf": 32, "reference_align128.gguf": 128},
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"make_reference.py: gguf {GGUF_VERSION}: {len(rows)} tensors in {args.out}")


if __name__ == "__main__":
    main()
