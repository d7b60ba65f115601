#!/usr/bin/env python3
"""Quantize one real layer with quantc from Python, run it, and check it.

MiniLM's first attention query projection (all-MiniLM-L6-v2, a 384x384 nn.Linear with
bias) is packed to INT4 with group-wise scales and zero points (quantc.pack, GPTQ's
affine layout), compiled (quantc.compile), run on the PTX emulator (Kernel.run) on a real
activation (the embedding of a word), and compared with NumPy's float64 product:

- against the dequantized weight: the kernel's only error is f32 rounding, so it must
  stay within the f32 accumulation bound (the script fails otherwise);
- against the original float32 weight: the quantization error, reported.

Where a CUDA GPU and PyTorch are present, the same kernel is launched on torch tensors
(Kernel.launch, no copies) and compared the same way.

    python examples/python/minilm_layer.py [--model data/models/all-MiniLM-L6-v2/model.safetensors]

Needs: pip install . (quantc), safetensors, numpy; the model from scripts/fetch_model.sh.
"""

import argparse
import pathlib
import sys

import numpy as np
from safetensors.numpy import load_file

import quantc

REPO = pathlib.Path(__file__).resolve().parents[2]
LAYER = "encoder.layer.0.attention.self.query"
GROUP_SIZE = 64


def dequantize(arrays: dict, in_features: int, out_features: int) -> np.ndarray:
    """W [in, out] in float64, as linear_4bit_affine_grouped defines it: w holds input
    rows k/8 of 32-bit words, input k at bits 4*(k%8); W[k, n] = (q - zero_point) * scale
    of group k / group_size."""
    words = arrays["w"]                                                      # [in/8, out] u32
    codes = (words[:, None, :] >> (4 * np.arange(8, dtype=np.uint32))[None, :, None]) & 15
    q = codes.reshape(in_features, out_features).astype(np.float64)
    group = np.arange(in_features) // GROUP_SIZE
    return (q - arrays["zero_point"][group]) * arrays["scale"][group].astype(np.float64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(REPO / "data/models/all-MiniLM-L6-v2/model.safetensors"))
    args = parser.parse_args()

    tensors = load_file(args.model)
    weight, bias = tensors[f"{LAYER}.weight"], tensors[f"{LAYER}.bias"]   # [out, in], [out]
    out_features, in_features = weight.shape
    x = tensors["embeddings.word_embeddings.weight"][2023].astype(np.float32)  # a real activation: one word

    arrays, spec = quantc.pack(weight, "int4-affine-grouped", group_size=GROUP_SIZE, bias=bias)
    kernel = quantc.compile(spec)
    print(f"{LAYER}: [{out_features}, {in_features}] -> {kernel.name}, group {GROUP_SIZE}, "
          f"{sum(a.nbytes for a in arrays.values())} bytes packed ({weight.nbytes} as f32)")

    y = kernel.run("emulator", x=x, **arrays)["out"]

    w = dequantize(arrays, in_features, out_features)
    exact = x.astype(np.float64) @ w + arrays["b"]
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(w) + np.abs(arrays["b"])
    bound = (in_features + 2) * 2.0**-23 * magnitude
    worst = float(np.max(np.abs(y - exact) / np.maximum(bound, 1e-30)))
    unquantized = x.astype(np.float64) @ weight.T.astype(np.float64) + bias
    quantization = float(np.linalg.norm(y - unquantized) / np.linalg.norm(unquantized))
    print(f"emulator vs f64 of the dequantized weight: max error {worst:.3f} of the f32 bound")
    print(f"emulator vs f64 of the f32 weight: relative L2 error {quantization:.4f} (INT4 quantization)")
    failed = worst > 1.0

    target = quantc.cuda_target()
    try:
        import torch
    except ImportError:
        torch = None
    if target is not None and torch is not None:
        gpu = quantc.compile(spec, target=target)
        tensors_gpu = {name: torch.from_numpy(a.view(np.int32) if a.dtype == np.uint32 else a).cuda()
                       for name, a in {"x": x, **arrays}.items()}
        out = torch.zeros(next(b for b in gpu.buffers if b.name == "out").shape, device="cuda")
        gpu.launch(**tensors_gpu, out=out)
        torch.cuda.synchronize()
        y_gpu = out.cpu().numpy()[:out_features]
        worst_gpu = float(np.max(np.abs(y_gpu - exact) / np.maximum(bound, 1e-30)))
        print(f"{target} launch vs f64 of the dequantized weight: max error {worst_gpu:.3f} of the f32 bound")
        failed |= worst_gpu > 1.0
    else:
        print("no CUDA GPU with PyTorch here: the launch step is skipped")

    if failed:
        print("FAILED: an error above the f32 bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
