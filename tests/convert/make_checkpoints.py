#!/usr/bin/env python3
"""Writes the quantized checkpoints of tests/convert/convert_tests.cpp, each packed the way
its format's reference implementation packs it, and the format's reference
dequantization of every layer that quantc converts.

    make_checkpoints.py --out DIR

The packing and dequantization below are re-derived from the formats' sources (cited at
each function); nothing imports those packages except gguf-py, the GGUF format's own
Python package (pinned to gguf==0.19.0 by scripts/setup.sh, found on PYTHONPATH). Without
gguf-py the GGUF checkpoint is left out and the manifest says so ("gguf": false). numpy
is the only other dependency.

DIR gets:
  gptq/model.safetensors       AutoGPTQ v1 layers (qzeros hold zero - 1), no config
  gptq_v2/model.safetensors    GPTQModel v2 layer, quantize_config.json with checkpoint_format gptq_v2
  awq/model.safetensors        AutoAWQ GEMM layers, quant_config.json (version GEMM)
  awq_gemv/model.safetensors   the same tensors, quant_config.json saying version GEMV
  bnb/model.safetensors        bitsandbytes 4-bit layers as transformers saves them
  gguf/model.gguf              GGUF tensors (Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K and refused types)
  ref/<case>.weight.npy        the format's dequantization of the layer, f32 [in, out]
  ref/<case>.bias.npy          its bias, f32 [out], where it has one
  manifest.json                {"gguf": bool, "gguf_version", "cases": [{case, checkpoint,
                               format, layer, in, out, op, weight, bias}]}
Deterministic (fixed seed).
"""
import argparse
import json
import pathlib
import struct
import sys

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf.constants import GGML_QUANT_SIZES
    try:
        from importlib.metadata import version as package_version
        GGUF_VERSION = package_version("gguf")
    except Exception:
        GGUF_VERSION = "unknown"
except ImportError as error:  # the GGUF checkpoint is skipped; the C++ test decides skip or fail
    gguf = None
    GGUF_VERSION = f"missing ({error})"

RNG = np.random.default_rng(20250101)


# ---- safetensors (https://github.com/huggingface/safetensors, format section) -----------

SAFETENSORS_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
                      np.dtype(np.int32): "I32", np.dtype(np.int64): "I64", np.dtype(np.uint8): "U8"}


def write_safetensors(path, tensors, bf16=()):
    """tensors: name -> numpy array, stored in order; names in `bf16` are uint16 bf16 bits."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        dtype = "BF16" if name in bf16 else SAFETENSORS_DTYPES[array.dtype]
        data = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(text)))
        file.write(text)
        for data in blobs:
            file.write(data)


def weights(out_features, in_features):
    return RNG.standard_normal((out_features, in_features)).astype(np.float32) * np.float32(0.05)


# ---- GPTQ -------------------------------------------------------------------------------

def gptq_quantize(w, group_size, sym, g_idx, force_zero_point_zero=False):
    """Integer codes, zero points and f16 scales as GPTQ's Quantizer finds them
    (auto_gptq/quantization/quantizer.py: xmin = min(x.min, 0), xmax = max(x.max, 0),
    scale = (xmax - xmin) / maxq, zero = round(-xmin / scale), sym: zero = (maxq + 1) / 2),
    per output row and group of input features, group g being the input features k with
    g_idx[k] == g (contiguous runs of group_size without act-order). Rounding to the
    nearest code stands in for GPTQ's error-compensating updates, which change the codes,
    not the format. Returns q [out, in], zeros [groups, out], scales f16 [groups, out]."""
    out_features, in_features = w.shape
    groups = (in_features + group_size - 1) // group_size
    q = np.zeros((out_features, in_features), dtype=np.int64)
    zeros = np.zeros((groups, out_features), dtype=np.int64)
    scales = np.zeros((groups, out_features), dtype=np.float16)
    for g in range(groups):
        columns = np.nonzero(g_idx == g)[0]
        block = w[:, columns].astype(np.float64)
        xmin = np.minimum(block.min(axis=1), 0)
        xmax = np.maximum(block.max(axis=1), 0)
        if sym:
            xmax = np.maximum(np.abs(xmin), xmax)
            xmin = np.where(xmin < 0, -xmax, xmin)
        scale = (xmax - xmin) / 15
        zero = np.full(out_features, 8) if sym else np.round(-xmin / scale).astype(np.int64)
        if force_zero_point_zero and g == 1:
            zero[3] = 0  # a group whose zero point is 0 (all its weights >= 0 in GPTQ's quantizer)
        scale16 = scale.astype(np.float16)
        scales[g] = scale16
        zeros[g] = zero
        codes = np.round(block / scale16.astype(np.float64)[:, None]) + zero[:, None]
        q[:, columns] = np.clip(codes, 0, 15)
    return q, zeros, scales


def gptq_pack(q, zeros, v1):
    """qweight and qzeros as AutoGPTQ's QuantLinear.pack writes them
    (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py): qweight[row] |= intweight[j] <<
    (4 * (j - i)) over 8 consecutive input features, and zeros -= 1 (v1), cast to uint32
    (a -1 is 0xFFFFFFFF, whose shifted copy sets every higher nibble), qzeros[:, col] |=
    zeros[:, j] << (4 * (j - i)); both stored as int32. v1=False writes the zero points as
    they are (GPTQModel's gptq_v2)."""
    intweight = q.T.astype(np.uint32)  # [in, out]
    qweight = np.zeros((intweight.shape[0] // 8, intweight.shape[1]), dtype=np.uint32)
    for j in range(intweight.shape[0]):
        qweight[j // 8] |= intweight[j] << np.uint32(4 * (j % 8))
    z = zeros - 1 if v1 else zeros
    z = z.astype(np.int64).astype(np.uint32)  # -1 -> 0xFFFFFFFF as numpy's astype(np.uint32)
    qzeros = np.zeros((z.shape[0], z.shape[1] // 8), dtype=np.uint32)
    for j in range(z.shape[1]):
        qzeros[:, j // 8] |= z[:, j] << np.uint32(4 * (j % 8))
    return qweight.view(np.int32), qzeros.view(np.int32)


def gptq_dequantize(qweight, qzeros, scales, g_idx, v1):
    """AutoGPTQ's torch dequantization (qlinear_cuda_old.py forward without the CUDA kernel):
    unpack nibbles with shifts and & 15, zeros + 1 (v1), & 15, then scales[g_idx] * (weight
    - zeros[g_idx]). Computed in f32 with the exact integer difference: the exact value, which
    the f16 torch path rounds only where it needs more than 11 significand bits."""
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    qw = qweight.view(np.uint32)
    weight = ((qw[:, None, :] >> shifts[None, :, None]) & np.uint32(15)).reshape(-1, qw.shape[1])  # [in, out]
    qz = qzeros.view(np.uint32)
    zeros = (qz[:, :, None] >> shifts[None, None, :]).reshape(qz.shape[0], -1)
    if v1:
        zeros = zeros + np.uint32(1)
    zeros = zeros & np.uint32(15)
    diff = weight.astype(np.int64) - zeros[g_idx].astype(np.int64)
    return (diff.astype(np.float32) * scales[g_idx].astype(np.float32)).astype(np.float32)


def gptq_layer(tensors, prefix, out_features, in_features, group_size, sym, v1, bias, g_idx="trivial",
               force_zero_point_zero=False):
    """One GPTQ layer. g_idx="act-order" is desc_act=True as AutoGPTQ writes it
    (auto_gptq/quantization/gptq.py fasterquant: the columns are quantized in a permuted
    order perm, group j // group_size of that order, and g_idx = (arange // group_size)[invperm],
    i.e. g_idx[perm[j]] = j // group_size), the codes and qweight staying in the layer's
    own input order; None leaves g_idx out. Returns the reference dequantization (scales[g_idx]
    * (q - zeros[g_idx])) [in, out] and the bias."""
    w = weights(out_features, in_features)
    trivial = np.arange(in_features, dtype=np.int32) // group_size
    if g_idx == "act-order":
        perm = RNG.permutation(in_features)
        index = np.zeros(in_features, dtype=np.int32)
        index[perm] = np.arange(in_features, dtype=np.int32) // group_size
        assert not np.array_equal(index, trivial), prefix
    else:
        index = trivial
    q, zeros, scales = gptq_quantize(w, group_size, sym, index, force_zero_point_zero)
    qweight, qzeros = gptq_pack(q, zeros, v1)
    tensors[f"{prefix}.qweight"] = qweight
    tensors[f"{prefix}.qzeros"] = qzeros
    tensors[f"{prefix}.scales"] = scales
    if g_idx is not None:
        tensors[f"{prefix}.g_idx"] = index
    if bias:
        tensors[f"{prefix}.bias"] = (RNG.standard_normal(out_features) * 0.1).astype(np.float16)
    reference = gptq_dequantize(qweight, qzeros, scales, index, v1)
    truth = ((q.T - zeros[index]).astype(np.float32) * scales[index].astype(np.float32))
    if not (v1 and force_zero_point_zero):  # AutoGPTQ's v1 packing loses a zero point of 0's neighbours
        assert np.array_equal(reference.view(np.uint32), truth.view(np.uint32)), prefix
    return reference, (tensors[f"{prefix}.bias"].astype(np.float32) if bias else None)


# ---- AWQ --------------------------------------------------------------------------------

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]          # awq/modules/linear/gemm.py, WQLinear_GEMM.from_linear
AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]  # awq/utils/packing_utils.py


def awq_quantize(w, group_size):
    """AutoAWQ's pseudo_quantize_tensor with zero_point=True (awq/quantize/quantizer.py):
    scales = (max - min).clamp(min=1e-5) / 15, zeros = (-round(min / scales)).clamp(0, 15),
    q = clamp(round(w / scales) + zeros, 0, 15). Returns q [out, in], zeros [groups, out],
    scales f16 [groups, out]."""
    out_features, in_features = w.shape
    groups = in_features // group_size
    blocks = w.reshape(out_features, groups, group_size).astype(np.float64)
    max_val, min_val = blocks.max(axis=2), blocks.min(axis=2)
    scales = (np.maximum(max_val - min_val, 1e-5) / 15).astype(np.float16)
    zeros = np.clip(-np.round(min_val / scales.astype(np.float64)), 0, 15).astype(np.int64)
    q = np.clip(np.round(blocks / scales.astype(np.float64)[:, :, None]) + zeros[:, :, None], 0, 15).astype(np.int64)
    return q.reshape(out_features, in_features), zeros.T.copy(), scales.T.copy()


def awq_pack(q, zeros):
    """WQLinear_GEMM.from_linear: intweight [in, out]; qweight[:, col] |=
    intweight[:, col * 8 + order_map[i]] << (i * 4), likewise qzeros from zeros [groups,
    out], no zero - 1."""
    intweight = q.T.astype(np.uint32)
    qweight = np.zeros((intweight.shape[0], intweight.shape[1] // 8), dtype=np.uint32)
    for col in range(intweight.shape[1] // 8):
        for i in range(8):
            qweight[:, col] |= intweight[:, col * 8 + AWQ_ORDER[i]] << np.uint32(i * 4)
    z = zeros.astype(np.uint32)
    qzeros = np.zeros((z.shape[0], z.shape[1] // 8), dtype=np.uint32)
    for col in range(z.shape[1] // 8):
        for i in range(8):
            qzeros[:, col] |= z[:, col * 8 + AWQ_ORDER[i]] << np.uint32(i * 4)
    return qweight.view(np.int32), qzeros.view(np.int32)


def awq_dequantize(qweight, qzeros, scales, group_size):
    """dequantize_gemm (awq/utils/packing_utils.py): unpack_awq (right shifts by 0, 4, ..,
    28 per word, columnwise), reverse_awq_order (columns permuted by AWQ_REVERSE_ORDER
    within each 8), & 15, then (iweight - izeros) * scales with the sidecars repeated
    group_size times along in. In f32 with the exact integer difference, as for GPTQ."""
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    iweights = (qweight.view(np.uint32)[:, :, None] >> shifts[None, None, :]).reshape(qweight.shape[0], -1)
    izeros = (qzeros.view(np.uint32)[:, :, None] >> shifts[None, None, :]).reshape(qzeros.shape[0], -1)
    order = np.arange(iweights.shape[1]).reshape(-1, 8)[:, AWQ_REVERSE_ORDER].reshape(-1)
    iweights = iweights[:, order] & np.uint32(15)
    izeros = izeros[:, order] & np.uint32(15)
    zeros = np.repeat(izeros, group_size, axis=0).astype(np.int64)
    scale = np.repeat(scales, group_size, axis=0).astype(np.float32)
    return ((iweights.astype(np.int64) - zeros).astype(np.float32) * scale).astype(np.float32)


def awq_layer(tensors, prefix, out_features, in_features, group_size, bias):
    w = weights(out_features, in_features)
    q, zeros, scales = awq_quantize(w, group_size)
    qweight, qzeros = awq_pack(q, zeros)
    tensors[f"{prefix}.qweight"] = qweight
    tensors[f"{prefix}.qzeros"] = qzeros
    tensors[f"{prefix}.scales"] = scales
    if bias:
        tensors[f"{prefix}.bias"] = (RNG.standard_normal(out_features) * 0.1).astype(np.float16)
    reference = awq_dequantize(qweight, qzeros, scales, group_size)
    g = np.arange(in_features) // group_size
    truth = (q.T - zeros[g]).astype(np.float32) * scales[g].astype(np.float32)
    assert np.array_equal(reference.view(np.uint32), truth.view(np.uint32)), prefix
    return reference, (tensors[f"{prefix}.bias"].astype(np.float32) if bias else None)


# ---- bitsandbytes -----------------------------------------------------------------------

# get_4bit_type("nf4") (bitsandbytes/functional.py), as float32.
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)
# dQuantizeNF4's decision tree (csrc/kernels.cu): code = how many of these x exceeds.
NF4_THRESHOLDS = np.array([-0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
                           -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
                           0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
                           0.5016634166240692, 0.6427869200706482, 0.8614784181118011], dtype=np.float32)
# get_4bit_type("fp4"): [0, 0.0625, 8, 12, 4, 6, 2, 3] and their negations, over 12.
FP4 = (np.array([0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0, -0.0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0])
       / 12.0).astype(np.float32)


def create_dynamic_map(max_exponent_bits=7, total_bits=8):
    """bitsandbytes/functional.py create_dynamic_map(signed=True): per exponent i, the
    midpoints of linspace(0.1, 1, 2**i + 1) times 10**(i - 6), both signs, plus 0 and 1,
    sorted (256 values)."""
    data = []
    non_sign_bits = total_bits - 1
    for i in range(max_exponent_bits):
        fraction_items = int(2 ** (i + non_sign_bits - max_exponent_bits) + 1)
        boundaries = np.linspace(0.1, 1, fraction_items, dtype=np.float32)
        means = (boundaries[:-1] + boundaries[1:]) / np.float32(2.0)
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 2 ** total_bits
    return np.array(sorted(data), dtype=np.float32)


def bnb_quantize_blocks(flat, blocksize):
    """kQuantizeBlockwise's absmax and normalisation (csrc/kernels.cu): absmax per block of
    blocksize, x * (1 / absmax) in f32."""
    padded = np.concatenate([flat, np.zeros((-len(flat)) % blocksize, dtype=np.float32)])
    blocks = padded.reshape(-1, blocksize)
    absmax = np.abs(blocks).max(axis=1).astype(np.float32)
    normed = (blocks * (np.float32(1.0) / absmax)[:, None]).astype(np.float32)
    return absmax, normed.reshape(-1)[:len(flat)]


def bnb_quantize_4bit(w, blocksize, quant_type, compress_statistics):
    """bitsandbytes.functional.quantize_4bit on the flattened [out, in] weight: codes by
    dQuantizeNF4 (or an FP4 nearest code), packed two per byte with the FIRST element in
    the HIGH nibble; with compress_statistics, offset = absmax.mean() and the absmax minus
    the offset quantized by quantize_blockwise (blocksize 256, the dynamic map, nearest
    code). Returns the quant state's tensors and JSON dictionary."""
    out_features, in_features = w.shape
    flat = w.reshape(-1).astype(np.float32)
    absmax, normed = bnb_quantize_blocks(flat, blocksize)
    if quant_type == "nf4":
        codes = (normed[:, None] > NF4_THRESHOLDS[None, :]).sum(axis=1).astype(np.uint8)
        quant_map = NF4
    else:
        codes = np.abs(normed[:, None] - FP4[None, :]).argmin(axis=1).astype(np.uint8)
        quant_map = FP4
    if len(codes) % 2:
        codes = np.concatenate([codes, np.zeros(1, dtype=np.uint8)])
    packed = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8).reshape(-1, 1)
    state = {"quant_type": quant_type, "blocksize": blocksize, "dtype": "bfloat16",
             "shape": [out_features, in_features]}
    tensors = {"weight": packed}
    if compress_statistics:
        offset = np.float32(absmax.mean(dtype=np.float32))
        code = create_dynamic_map()
        nested_absmax, normed2 = bnb_quantize_blocks((absmax - offset).astype(np.float32), 256)
        qabsmax = np.abs(normed2[:, None] - code[None, :]).argmin(axis=1).astype(np.uint8)
        tensors.update({"weight.absmax": qabsmax, "weight.quant_map": quant_map,
                        "weight.nested_absmax": nested_absmax, "weight.nested_quant_map": code})
        state.update({"nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": float(offset)})
    else:
        tensors.update({"weight.absmax": absmax, "weight.quant_map": quant_map})
    # QuantState.as_dict(packed=True): the non-tensor entries as json.dumps bytes (pack_dict_to_tensor)
    tensors[f"weight.quant_state.bitsandbytes__{quant_type}"] = np.frombuffer(json.dumps(state).encode("utf-8"),
                                                                              dtype=np.uint8)
    return tensors, state


def bnb_dequantize_4bit(tensors, state):
    """bitsandbytes.functional.dequantize_4bit: with a nested state, absmax =
    dequantize_blockwise(qabsmax, state2) = code[q] * nested_absmax[i // 256] (f32), then
    absmax += offset (f32); then out[i] = quant_map[code_i] * absmax[i // blocksize] in f32
    (kDequantizeBlockwise; bnb casts the f32 product to the state's dtype, quantc keeps it).
    Returns [in, out]."""
    out_features, in_features = state["shape"]
    n = out_features * in_features
    if "nested_blocksize" in state:
        code, nested = tensors["weight.nested_quant_map"], tensors["weight.nested_absmax"]
        q = tensors["weight.absmax"].astype(np.int64)
        product = (code[q] * nested[np.arange(len(q)) // state["nested_blocksize"]]).astype(np.float32)
        absmax = (product + np.float32(state["nested_offset"])).astype(np.float32)
    else:
        absmax = tensors["weight.absmax"]
    packed = tensors["weight"].reshape(-1)
    codes = np.stack([packed >> 4, packed & 15], axis=1).reshape(-1)[:n]
    values = (tensors["weight.quant_map"][codes] * absmax[np.arange(n) // state["blocksize"]]).astype(np.float32)
    return np.ascontiguousarray(values.reshape(out_features, in_features).T)


def bnb_layer(tensors, prefix, out_features, in_features, blocksize=64, quant_type="nf4", nested=True, bias=False):
    w = weights(out_features, in_features)
    w = (w.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)  # a bf16 model's weights
    layer, state = bnb_quantize_4bit(w, blocksize, quant_type, nested)
    for name, array in layer.items():
        tensors[f"{prefix}.{name}"] = array
    if bias:
        tensors[f"{prefix}.bias"] = (RNG.standard_normal(out_features) * 0.1).astype(np.float32)
    return bnb_dequantize_4bit(layer, state), (tensors[f"{prefix}.bias"] if bias else None)


# ---- GGUF -------------------------------------------------------------------------------

def random_finite_f16_bits(count):
    bits = RNG.integers(0, 1 << 16, size=count, dtype=np.uint32).astype(np.uint16)
    exponent_all_ones = (bits & 0x7C00) == 0x7C00
    return np.where(exponent_all_ones, bits & ~np.uint16(0x4000), bits).astype(np.uint16)


# Byte offsets of the f16 fields in each block (ggml-common.h layouts).
F16_FIELDS = {"Q4_0": [0], "Q4_1": [0, 2], "Q8_0": [0], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}


def encode_q4_k(weight):
    """Q4_K blocks of `weight` [out, in] by examples/minilm/make_gguf.py's encoder (gguf-py
    0.19.0 has no K-quant quantizer), which checks every block against gguf-py's
    dequantizer; the one encoder for the tests and the MiniLM report."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "minilm"))
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    try:
        import make_gguf
    finally:
        sys.path.pop(0)
    return make_gguf.quantize(gguf, weight, "Q4_K", "make_checkpoints.py Q4_K")


def raw_blocks(qtype, out_features, in_features):
    """Random valid blocks (every code, random finite f16 scales, signed sub-block scales)
    as the byte rows GGUFWriter takes: [out, in / block_size * type_size]."""
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    n_blocks = out_features * in_features // block_size
    blocks = RNG.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint16).astype(np.uint8)
    for offset in F16_FIELDS[qtype.name]:
        blocks[:, offset:offset + 2] = random_finite_f16_bits(n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return blocks.reshape(out_features, in_features // block_size * type_size)


def write_gguf(out, cases):
    """gguf/model.gguf through gguf-py's GGUFWriter: Q8_0, Q4_0 and Q4_1 from gguf.quants.quantize
    (gguf-py's port of ggml's quantize_row_*_ref) and from random raw blocks (every code,
    f16 fields of either sign, subnormals included), Q4_K from weights by make_gguf.py's
    encoder and from random raw blocks, Q5_K and Q6_K from random raw blocks (gguf-py cannot
    quantize K-quants), and types quantc refuses; the reference is gguf.quants.dequantize
    of the tensors as GGUFReader reads them back."""
    path = out / "gguf" / "model.gguf"
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = [
        ("blk.0.attn_q.weight", gguf.quants.quantize(weights(64, 256), T.Q8_0), T.Q8_0),
        ("blk.0.attn_k.weight", gguf.quants.quantize(weights(64, 256), T.Q4_0), T.Q4_0),
        ("blk.0.attn_k.bias", (RNG.standard_normal(64) * 0.1).astype(np.float32), None),
        ("blk.0.ffn_down.weight", raw_blocks(T.Q6_K, 32, 512), T.Q6_K),
        ("blk.1.attn_q.weight", raw_blocks(T.Q8_0, 32, 128), T.Q8_0),
        ("blk.1.attn_k.weight", raw_blocks(T.Q4_0, 64, 96), T.Q4_0),
        ("blk.0.attn_v.weight", weights(64, 256).astype(np.float16), None),
        ("blk.0.attn_output.weight", raw_blocks(T.Q4_K, 64, 256), T.Q4_K),
        ("blk.0.ffn_up.weight", gguf.quants.quantize(weights(64, 256), T.Q4_1), T.Q4_1),
        ("blk.0.attn_norm.weight", np.ones(256, dtype=np.float32), None),
        # The offset mode (w = q * s + o): Q4_1 and Q4_K on dequant_matmul_int4, Q5_K on
        # dequant_matmul_int8; odd out_features (33) runs the seed schedule, 64 the fast one.
        ("blk.1.ffn_up.weight", raw_blocks(T.Q4_1, 33, 96), T.Q4_1),
        ("blk.1.attn_output.weight", encode_q4_k(weights(64, 512)), T.Q4_K),
        ("blk.1.attn_output.bias", (RNG.standard_normal(64) * 0.1).astype(np.float32), None),
        ("blk.2.attn_output.weight", raw_blocks(T.Q4_K, 33, 256), T.Q4_K),
        ("blk.0.ffn_gate.weight", raw_blocks(T.Q5_K, 32, 512), T.Q5_K),
        ("blk.1.ffn_gate.weight", gguf.quants.quantize(weights(32, 256), T.Q5_0), T.Q5_0),
    ]
    writer = gguf.GGUFWriter(str(path), "quantc-test")
    for name, array, raw_dtype in tensors:
        writer.add_tensor(name, array, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(str(path))
    data = {}
    for tensor in reader.tensors:
        shape = [int(d) for d in reversed(tensor.shape.tolist())]
        values = gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type).astype(np.float32, copy=False)
        data[tensor.name] = (tensor.tensor_type.name, np.ascontiguousarray(values.reshape(shape)))
    ops = {"Q8_0": "dequant_matmul_int8", "Q4_0": "dequant_matmul_int4", "Q6_K": "dequant_matmul_int8",
           "Q4_1": "dequant_matmul_int4", "Q4_K": "dequant_matmul_int4", "Q5_K": "dequant_matmul_int8"}
    for case, layer in [("gguf_q8_0", "blk.0.attn_q"), ("gguf_q4_0", "blk.0.attn_k"), ("gguf_q6_k", "blk.0.ffn_down"),
                        ("gguf_q8_0_raw", "blk.1.attn_q"), ("gguf_q4_0_raw", "blk.1.attn_k"),
                        ("gguf_q4_1", "blk.0.ffn_up"), ("gguf_q4_1_raw", "blk.1.ffn_up"),
                        ("gguf_q4_k", "blk.1.attn_output"), ("gguf_q4_k_raw", "blk.0.attn_output"),
                        ("gguf_q4_k_raw_odd", "blk.2.attn_output"), ("gguf_q5_k_raw", "blk.0.ffn_gate")]:
        qtype, values = data[layer + ".weight"]
        bias = data[layer + ".bias"][1] if layer + ".bias" in data else None
        cases.append(case_entry(out, case, "gguf/model.gguf", "gguf", layer, ops[qtype], values.T.copy(), bias))


# ---- the manifest -----------------------------------------------------------------------

def case_entry(out, case, checkpoint, fmt, layer, op, weight, bias):
    ref = out / "ref"
    ref.mkdir(parents=True, exist_ok=True)
    np.save(ref / f"{case}.weight.npy", np.ascontiguousarray(weight, dtype=np.float32))
    entry = {"case": case, "checkpoint": checkpoint, "format": fmt, "layer": layer, "in": int(weight.shape[0]),
             "out": int(weight.shape[1]), "op": op, "weight": f"ref/{case}.weight.npy", "bias": None}
    if bias is not None:
        np.save(ref / f"{case}.bias.npy", np.ascontiguousarray(bias, dtype=np.float32))
        entry["bias"] = f"ref/{case}.bias.npy"
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=pathlib.Path)
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    affine = "linear_4bit_affine_grouped"

    # GPTQ v1 (AutoGPTQ), no config: the v1 convention is the default.
    tensors = {}
    w, b = gptq_layer(tensors, "model.layers.0.self_attn.q_proj", 64, 256, 64, sym=False, v1=True, bias=True)
    cases.append(case_entry(out, "gptq_v1_asym", "gptq/model.safetensors", "gptq", "model.layers.0.self_attn.q_proj",
                            affine, w, b))
    w, b = gptq_layer(tensors, "model.layers.0.mlp.down_proj", 32, 256, 128, sym=True, v1=True, bias=False)
    cases.append(case_entry(out, "gptq_v1_sym", "gptq/model.safetensors", "gptq", "model.layers.0.mlp.down_proj",
                            affine, w, b))
    w, b = gptq_layer(tensors, "model.layers.0.self_attn.k_proj", 64, 128, 32, sym=False, v1=True, bias=False,
                      g_idx=None)
    cases.append(case_entry(out, "gptq_v1_no_g_idx", "gptq/model.safetensors", "gptq",
                            "model.layers.0.self_attn.k_proj", affine, w, b))
    # Act-order (desc_act=True): g_idx scatters the groups; quantc sorts the rows by group.
    w, b = gptq_layer(tensors, "model.layers.0.self_attn.v_proj", 64, 256, 64, sym=False, v1=True, bias=False,
                      g_idx="act-order")
    cases.append(case_entry(out, "gptq_v1_act_order_asym", "gptq/model.safetensors", "gptq",
                            "model.layers.0.self_attn.v_proj", affine, w, b))
    gptq_layer(tensors, "model.layers.0.self_attn.o_proj", 64, 256, 64, sym=False, v1=True, bias=False,
               force_zero_point_zero=True)
    # 3-bit: qweight [in * 3 / 32, out], qzeros [groups, out * 3 / 32] (contents irrelevant: refused)
    tensors["model.layers.1.self_attn.q_proj.qweight"] = RNG.integers(0, 1 << 31, (24, 64)).astype(np.int32)
    tensors["model.layers.1.self_attn.q_proj.qzeros"] = RNG.integers(0, 1 << 31, (4, 6)).astype(np.int32)
    tensors["model.layers.1.self_attn.q_proj.scales"] = np.ones((4, 64), dtype=np.float16)
    tensors["model.layers.1.self_attn.q_proj.g_idx"] = np.arange(256, dtype=np.int32) // 64
    # Wrong scales dtype (F64) and a missing qzeros.
    gptq_layer(tensors, "model.layers.1.self_attn.k_proj", 64, 128, 64, sym=False, v1=True, bias=False)
    tensors["model.layers.1.self_attn.k_proj.scales"] = tensors["model.layers.1.self_attn.k_proj.scales"].astype(
        np.float64)
    gptq_layer(tensors, "model.layers.1.self_attn.v_proj", 64, 128, 64, sym=False, v1=True, bias=False)
    del tensors["model.layers.1.self_attn.v_proj.qzeros"]
    # Act-order, symmetric, with a bias and a partial last group (200 = 3 * 64 + 8).
    w, b = gptq_layer(tensors, "model.layers.0.mlp.gate_proj", 32, 200, 64, sym=True, v1=True, bias=True,
                      g_idx="act-order")
    cases.append(case_entry(out, "gptq_v1_act_order_sym", "gptq/model.safetensors", "gptq",
                            "model.layers.0.mlp.gate_proj", affine, w, b))
    # g_idx that are no group map of their layer: a group index past the scales' rows, a
    # g_idx one word too short, and groups of the wrong sizes (one feature moved from
    # group 0 to group 1).
    for name, fault in (("q_proj", "out of range"), ("k_proj", "short"), ("v_proj", "sizes")):
        prefix = f"model.layers.2.self_attn.{name}"
        gptq_layer(tensors, prefix, 64, 128, 32, sym=False, v1=True, bias=False, g_idx="act-order")
        index = tensors[f"{prefix}.g_idx"].copy()
        if fault == "out of range":
            index[np.nonzero(index == 1)[0][0]] = 4  # 4 groups: 0..3
        elif fault == "short":
            index = index[:120]
        else:
            index[np.nonzero(index == 0)[0][0]] = 1
        tensors[f"{prefix}.g_idx"] = index
    tensors["lm_head.weight"] = weights(32, 64).astype(np.float16)
    write_safetensors(out / "gptq" / "model.safetensors", tensors)

    # GPTQ v2 (GPTQModel): zero points of 0 and 15 stored as they are.
    tensors = {}
    w, b = gptq_layer(tensors, "model.layers.0.self_attn.q_proj", 64, 256, 32, sym=False, v1=False, bias=True,
                      force_zero_point_zero=True)
    cases.append(case_entry(out, "gptq_v2", "gptq_v2/model.safetensors", "gptq", "model.layers.0.self_attn.q_proj",
                            affine, w, b))
    write_safetensors(out / "gptq_v2" / "model.safetensors", tensors)
    (out / "gptq_v2" / "quantize_config.json").write_text(json.dumps(
        {"bits": 4, "group_size": 32, "desc_act": False, "sym": False, "checkpoint_format": "gptq_v2",
         "quant_method": "gptq"}))

    # AWQ (AutoAWQ GEMM).
    tensors = {}
    w, b = awq_layer(tensors, "model.layers.0.self_attn.q_proj", 64, 256, 64, bias=True)
    cases.append(case_entry(out, "awq", "awq/model.safetensors", "awq", "model.layers.0.self_attn.q_proj", affine, w,
                            b))
    w, b = awq_layer(tensors, "model.layers.0.mlp.up_proj", 128, 128, 128, bias=False)
    for folder, version in (("awq", "GEMM"), ("awq_gemv", "GEMV")):
        write_safetensors(out / folder / "model.safetensors", tensors)
        (out / folder / "quant_config.json").write_text(json.dumps(
            {"zero_point": True, "q_group_size": 64, "w_bit": 4, "version": version}))
    # The second layer has group_size 128, which the folder's config (64) contradicts;
    # its own folder carries no config.
    write_safetensors(out / "awq_noconfig" / "model.safetensors", tensors)
    cases.append(case_entry(out, "awq_g128", "awq_noconfig/model.safetensors", "awq", "model.layers.0.mlp.up_proj",
                            affine, w, b))

    # bitsandbytes 4-bit.
    tensors = {}
    w, b = bnb_layer(tensors, "model.layers.0.self_attn.q_proj", 64, 256, nested=True, bias=True)
    cases.append(case_entry(out, "bnb_nf4_nested", "bnb/model.safetensors", "bnb", "model.layers.0.self_attn.q_proj",
                            "nf4_gemm", w, b))
    w, b = bnb_layer(tensors, "model.layers.0.self_attn.k_proj", 32, 128, nested=False)
    cases.append(case_entry(out, "bnb_nf4", "bnb/model.safetensors", "bnb", "model.layers.0.self_attn.k_proj",
                            "nf4_gemm", w, b))
    w, b = bnb_layer(tensors, "model.layers.0.self_attn.v_proj", 32, 256, blocksize=128)
    cases.append(case_entry(out, "bnb_nf4_b128", "bnb/model.safetensors", "bnb", "model.layers.0.self_attn.v_proj",
                            "nf4_gemm", w, b))
    w, b = bnb_layer(tensors, "model.layers.0.self_attn.o_proj", 32, 128, quant_type="fp4")
    cases.append(case_entry(out, "bnb_fp4_nested", "bnb/model.safetensors", "bnb", "model.layers.0.self_attn.o_proj",
                            "nf4_gemm", w, b))
    # A block of 4096 spans 32 rows of 128; FP4 without double quantization.
    w, b = bnb_layer(tensors, "model.layers.0.mlp.up_proj", 64, 128, blocksize=4096, quant_type="fp4", nested=False)
    cases.append(case_entry(out, "bnb_fp4_b4096", "bnb/model.safetensors", "bnb", "model.layers.0.mlp.up_proj",
                            "nf4_gemm", w, b))
    bnb_layer(tensors, "model.layers.0.mlp.gate_proj", 32, 96)
    bnb_layer(tensors, "model.layers.0.mlp.down_proj", 32, 128, blocksize=32)
    tensors["lm_head.weight"] = weights(32, 64).astype(np.float16)
    write_safetensors(out / "bnb" / "model.safetensors", tensors)

    if gguf is not None:
        write_gguf(out, cases)
    manifest = {"gguf": gguf is not None, "gguf_version": GGUF_VERSION, "cases": cases}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"make_checkpoints.py: {len(cases)} cases in {out} (gguf-py {GGUF_VERSION})")


if __name__ == "__main__":
    main()
