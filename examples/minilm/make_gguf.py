#!/usr/bin/env python3
"""Writes all-MiniLM-L6-v2's linear layers as GGUF files, the way a llama.cpp user would
bring them, for minilm_report's GGUF rows (examples/minilm/run.sh runs it).

    PYTHONPATH=data/python /usr/bin/python3 examples/minilm/make_gguf.py \
        [--model-dir data/models/all-MiniLM-L6-v2] [--out-dir data/models/all-MiniLM-L6-v2-gguf] [--layers 0,1]

For each type in TYPES, OUT_DIR/all-MiniLM-L6-v2-<TYPE>.gguf holds every encoder
layer's 6 linear weights (36 for all 6 layers), each quantized with gguf.quants.quantize
(gguf-py's port of ggml's quantize_row_<type>_ref, as llama.cpp's convert_hf_to_gguf.py
uses it), and their biases as F32, written by gguf.GGUFWriter under llama.cpp's tensor
names (gguf-py's own BERT name map: blk.N.attn_q, attn_k, attn_v, attn_output, ffn_up,
ffn_down) with ne = [in_features, out_features]. Only the linear layers: no embeddings,
norms or tokenizer, so it is not a complete llama.cpp model.

TYPES are the GGUF types that gguf-py 0.19.0 can quantize and `quantc convert --format
gguf` maps onto an op (runtime/io/Convert.h): Q4_0 and Q8_0. Convert also maps Q6_K, but
gguf-py 0.19.0 has no Q6_K quantizer (only its dequantizer), and Q6_K's 256-element
super-blocks cannot tile MiniLM's 384-long rows anyway.

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

TYPES = ["Q4_0", "Q8_0"]
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
        writer = gguf.GGUFWriter(str(temporary), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
        writer.add_name(MODEL)
        writer.add_description(f"{MODEL}'s linear layers only (weights {type_name}, biases F32) for quantc's "
                               "MiniLM report; no embeddings, norms or tokenizer")
        writer.add_file_type(getattr(gguf.LlamaFileType, f"MOSTLY_{type_name}"))
        writer.add_block_count(blocks)
        writer.add_context_length(config["max_position_embeddings"])
        writer.add_embedding_length(config["hidden_size"])
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_head_count(config["num_attention_heads"])
        writer.add_layer_norm_eps(config["layer_norm_eps"])
        for layer in layers:
            for linear in LINEARS:
                prefix = f"encoder.layer.{layer}.{linear}"
                # [out_features, in_features]: ggml's rows are the in_features axis (ne[0]).
                weight = np.ascontiguousarray(weights[prefix + ".weight"], dtype=np.float32)
                name = names.get_name(prefix + ".weight", try_suffixes=(".weight", ".bias"))
                if name is None:
                    raise SystemExit(f"make_gguf.py: gguf-py has no BERT tensor name for {prefix}.weight")
                writer.add_tensor(name, gguf.quants.quantize(weight, qtype), raw_dtype=qtype)
                bias_name = names.get_name(prefix + ".bias", try_suffixes=(".weight", ".bias"))
                writer.add_tensor(bias_name, np.ascontiguousarray(weights[prefix + ".bias"], dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(temporary, path)
        print(f"make_gguf.py: wrote {path} ({len(layers) * len(LINEARS)} linear layers, {type_name}, "
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
