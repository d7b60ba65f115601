#!/usr/bin/env python3
"""Writes all-MiniLM-L6-v2's linear layers as GGUF files, the way a llama.cpp user would
bring them, for minilm_report's GGUF rows (examples/minilm/run.sh runs it).

    PYTHONPATH=data/python /usr/bin/python3 examples/minilm/make_gguf.py \
        [--model-dir data/models/all-MiniLM-L6-v2] [--out-dir data/models/all-MiniLM-L6-v2-gguf] [--layers 0,1]

For each type in TYPES, OUT_DIR/all-MiniLM-L6-v2-<TYPE>.gguf holds every encoder
layer's 6 linear weights (36 for all 6 layers; the K-quants: see below), Q4_0 and Q8_0
quantized with gguf.quants.quantize (gguf-py's port of ggml's quantize_row_<type>_ref, as
llama.cpp's convert_hf_to_gguf.py uses it), and their biases as F32, written by gguf.GGUFWriter under llama.cpp's tensor
names (gguf-py's own BERT name map: blk.N.attn_q, attn_k, attn_v, attn_output, ffn_up,
ffn_down) with ne = [in_features, out_features]. Only the linear layers: no embeddings,
norms or tokenizer, so it is not a complete llama.cpp model.

TYPES: Q4_0 and Q8_0, which gguf-py 0.19.0 quantizes (gguf.quants.quantize) and `quantc
convert --format gguf` maps onto an op (runtime/io/Convert.h); Q6_K and Q4_K, which convert
maps too (Q4_K onto dequant_matmul_int4's offset mode). gguf-py 0.19.0 has no quantizer for the
K-quants (only their dequantizers), so this script encodes them itself with a plain
min/max rule (quantize_q6_k, quantize_q4_k below; not llama.cpp's search-based
make_qx_quants/make_qkx2_quants, so Q6_K's error here is likely somewhat above what
llama.cpp's quantizer would reach), and checks every block by decoding it with gguf-py's dequantizer, bit for bit.
tests/convert/make_checkpoints.py imports quantize() from here for its Q4_K fixture.
K-quant super-blocks hold 256 weights along a row (ne[0] = in_features), so only
output.dense (ffn_down, 1536 inputs) is written in those files: MiniLM's other linears
have 384-long rows, which 256 does not divide (llama.cpp's quantizer falls back to
another type for such tensors).

The weights are read from model.safetensors (F32) with a few lines of header parsing, so
nothing but numpy and gguf-py is needed. Deterministic; each file is written under a
temporary name and renamed. The outputs are removed first, so after a failure none is
left behind from an earlier run. Exits 3, with a message on stderr, when a prerequisite is
missing: gguf-py cannot be imported, or the model is absent (scripts/fetch_model.sh). The
callers then run minilm_report without the files: it skips the GGUF rows with a warning,
or fails where QUANTC_REQUIRE_PTXAS=1 (CI) or QUANTC_REQUIRE_GGUF_PY=1 (and reports an
absent model itself).
"""
import argparse
import json
import os
import pathlib
import struct
import sys

import numpy as np

TYPES = ["Q4_0", "Q8_0", "Q6_K", "Q4_K"]
K_QUANTS = {"Q6_K", "Q4_K"}  # encoded here (gguf-py 0.19.0 cannot); 256-weight super-blocks
QK_K = 256
LINEARS = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
           "intermediate.dense", "output.dense"]
MODEL = "all-MiniLM-L6-v2"


def output_path(out_dir, type_name):
    return out_dir / f"{MODEL}-{type_name}.gguf"


def read_safetensors(path):
    """{name: np.ndarray} of the F32 tensors of a safetensors file."""
    data = path.read_bytes()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4,
                                      offset=8 + header_size + begin).reshape(info["shape"])
    return tensors


def f16(values):
    return np.asarray(values, dtype=np.float32).astype(np.float16)


def divide(numerator, denominator):
    """numerator / denominator in f32, 0 where the denominator is 0 (an all-zero block)."""
    numerator, denominator = np.broadcast_arrays(np.float32(numerator), np.float32(denominator))
    return np.divide(numerator, denominator, out=np.zeros(numerator.shape, np.float32), where=denominator != 0)


def quantize_q6_k(weight):
    """Q6_K blocks (ggml's block_q6_K: ql[128], qh[64], int8 scales[16], f16 d) of `weight`
    [rows, 256*j], and the f32 values they decode to (w = d * scales[s] * (q - 32)).
    Plain rule: per 16 weights the step amax / 31, codes -32..31; d = the largest step
    / 127 (f16), each sub-block's scale round(step / d)."""
    n = weight.size // QK_K
    sub = weight.astype(np.float32).reshape(n, 16, 16)
    wanted_step = np.abs(sub).max(axis=-1) / np.float32(31)
    d = f16(wanted_step.max(axis=-1) / np.float32(127))
    sc = np.clip(np.rint(divide(wanted_step, d.astype(np.float32)[:, None])), 0, 127).astype(np.int8)
    step = d.astype(np.float32)[:, None] * sc.astype(np.float32)
    q = (np.clip(np.rint(divide(sub, step[..., None])), -32, 31) + 32).astype(np.uint8)
    # Element e of the block: low nibble in ql[64*(e//128) + e%64] (bits 4*((e%128)//64)),
    # high 2 bits in qh[32*(e//128) + e%32] (bits 2*((e%128)//32)).
    halves = q.reshape(n, 2, 128)
    ql = (halves[:, :, :64] & 0x0F) | ((halves[:, :, 64:] & 0x0F) << 4)
    high = (halves >> 4).reshape(n, 2, 4, 32)
    qh = high[:, :, 0] | (high[:, :, 1] << 2) | (high[:, :, 2] << 4) | (high[:, :, 3] << 6)
    blocks = np.concatenate([ql.reshape(n, 128), qh.reshape(n, 64), sc.view(np.uint8), d.view(np.uint8).reshape(n, 2)],
                            axis=1)
    decoded = step[..., None] * (q.astype(np.float32) - np.float32(32))
    return blocks.reshape(weight.shape[0], -1), decoded.reshape(weight.shape)


def quantize_q4_k(weight):
    """Q4_K blocks (ggml's block_q4_K: f16 d, f16 dmin, 6-bit scales and mins packed in
    12 bytes, qs[128]) of `weight` [rows, 256*j], and the f32 values they decode to
    (w = d * sc[s] * q - dmin * m[s] per 32 weights). Plain rule: per 32 weights
    lo = min(min, 0), step (max - lo) / 15, codes 0..15 from -lo; d and dmin = the largest
    step and -lo / 63 (f16), each sub-block's sc and m rounded to 6 bits."""
    n = weight.size // QK_K
    sub = weight.astype(np.float32).reshape(n, 8, 32)
    low = np.minimum(sub.min(axis=-1), np.float32(0))
    wanted_step = (sub.max(axis=-1) - low) / np.float32(15)
    d = f16(wanted_step.max(axis=-1) / np.float32(63))
    dmin = f16((-low).max(axis=-1) / np.float32(63))
    sc = np.clip(np.rint(divide(wanted_step, d.astype(np.float32)[:, None])), 0, 63).astype(np.uint8)
    m = np.clip(np.rint(divide(-low, dmin.astype(np.float32)[:, None])), 0, 63).astype(np.uint8)
    step = d.astype(np.float32)[:, None] * sc.astype(np.float32)
    offset = dmin.astype(np.float32)[:, None] * m.astype(np.float32)
    q = np.clip(np.rint(divide(sub + offset[..., None], step[..., None])), 0, 15).astype(np.uint8)
    scales = np.empty((n, 12), dtype=np.uint8)  # sc[0..3], m[0..3] in the low 6 bits; sc/m[4..7] split
    scales[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    scales[:, 4:8] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:] & 0x0F) | ((m[:, 4:] & 0x0F) << 4)
    pairs = q.reshape(n, 4, 2, 32)  # sub-blocks 2c and 2c+1 share qs[32c..32c+31], low and high nibbles
    qs = pairs[:, :, 0] | (pairs[:, :, 1] << 4)
    blocks = np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2), scales,
                             qs.reshape(n, 128)], axis=1)
    decoded = step[..., None] * q.astype(np.float32) - offset[..., None]
    return blocks.reshape(weight.shape[0], -1), decoded.reshape(weight.shape)


def quantize(gguf, weight, type_name, label):
    """The raw blocks of `weight` [out_features, in_features] in GGUF type `type_name`."""
    qtype = gguf.GGMLQuantizationType[type_name]
    if type_name not in K_QUANTS:
        return gguf.quants.quantize(weight, qtype)
    blocks, decoded = {"Q6_K": quantize_q6_k, "Q4_K": quantize_q4_k}[type_name](weight)
    # The block layout is the file format: gguf-py's dequantizer must read back exactly
    # the values the encoder meant, else the file would be wrong, not merely inaccurate.
    back = gguf.quants.dequantize(blocks, qtype)
    if back.shape != weight.shape or not np.array_equal(back, decoded):
        raise SystemExit(f"make_gguf.py: {label}: gguf-py decodes the {type_name} blocks to other values than the "
                         "encoder meant (a block-layout bug in make_gguf.py)")
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", default=f"data/models/{MODEL}", type=pathlib.Path)
    parser.add_argument("--out-dir", default=f"data/models/{MODEL}-gguf", type=pathlib.Path)
    parser.add_argument("--layers", default="all", help="comma-separated encoder layers 0..5, or all")
    args = parser.parse_args()
    for type_name in TYPES:
        output_path(args.out_dir, type_name).unlink(missing_ok=True)
    try:
        import gguf
    except ImportError as error:  # reported by the callers as "gguf-py missing"
        print(f"make_gguf.py: cannot import gguf-py ({error}); scripts/setup.sh installs it into data/python",
              file=sys.stderr)
        return 3
    if not (args.model_dir / "model.safetensors").is_file():
        print(f"make_gguf.py: {args.model_dir / 'model.safetensors'} is absent; run scripts/fetch_model.sh first",
              file=sys.stderr)
        return 3

    config = json.loads((args.model_dir / "config.json").read_text())
    blocks = config["num_hidden_layers"]
    layers = range(blocks) if args.layers == "all" else [int(item) for item in args.layers.split(",")]
    weights = read_safetensors(args.model_dir / "model.safetensors")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, blocks)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for type_name in TYPES:
        qtype = gguf.GGMLQuantizationType[type_name]
        path = output_path(args.out_dir, type_name)
        temporary = path.with_name(path.name + ".tmp")
        # K-quants: only the linears whose rows (in_features) the 256-weight super-blocks tile.
        linears = [linear for linear in LINEARS if type_name not in K_QUANTS
                   or weights[f"encoder.layer.0.{linear}.weight"].shape[1] % QK_K == 0]
        try:
            writer = gguf.GGUFWriter(str(temporary), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
            writer.add_name(MODEL)
            quantizer = ("make_gguf.py's min/max encoder (gguf-py 0.19.0 has no quantizer for it)"
                         if type_name in K_QUANTS else "gguf.quants.quantize")
            writer.add_description(f"{MODEL}'s linear layers only ({', '.join(linears)}; weights {type_name} by "
                                   f"{quantizer}, biases F32) for quantc's MiniLM report; no embeddings, norms or "
                                   "tokenizer")
            # llama.cpp names no plain Q4_K file type: Q4_K_S is its mostly-Q4_K one.
            file_type = "MOSTLY_Q4_K_S" if type_name == "Q4_K" else f"MOSTLY_{type_name}"
            writer.add_file_type(getattr(gguf.LlamaFileType, file_type))
            writer.add_block_count(blocks)
            writer.add_context_length(config["max_position_embeddings"])
            writer.add_embedding_length(config["hidden_size"])
            writer.add_feed_forward_length(config["intermediate_size"])
            writer.add_head_count(config["num_attention_heads"])
            writer.add_layer_norm_eps(config["layer_norm_eps"])
            for layer in layers:
                for linear in linears:
                    prefix = f"encoder.layer.{layer}.{linear}"
                    # [out_features, in_features]: ggml's rows are the in_features axis (ne[0]).
                    weight = np.ascontiguousarray(weights[prefix + ".weight"], dtype=np.float32)
                    name = names.get_name(prefix + ".weight", try_suffixes=(".weight", ".bias"))
                    if name is None:
                        raise SystemExit(f"make_gguf.py: gguf-py has no BERT tensor name for {prefix}.weight")
                    writer.add_tensor(name, quantize(gguf, weight, type_name, prefix), raw_dtype=qtype)
                    bias_name = names.get_name(prefix + ".bias", try_suffixes=(".weight", ".bias"))
                    writer.add_tensor(bias_name, np.ascontiguousarray(weights[prefix + ".bias"], dtype=np.float32))
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
            writer.close()
        except BaseException:  # leave no half-written file behind
            temporary.unlink(missing_ok=True)
            raise
        os.replace(temporary, path)
        print(f"make_gguf.py: wrote {path} ({len(layers) * len(linears)} linear layers, {type_name} by {quantizer}, "
              f"{path.stat().st_size} bytes; gguf-py {package_version()})")
    return 0


def package_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:  # imported from a source checkout without metadata
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
