#!/usr/bin/env python3
"""CTest minilm_gguf_leg: the MiniLM report's GGUF leg on layer 0, checked from outside.

    check_gguf_leg.py --report BIN/minilm_report --quantc BIN/quantc --model-dir DIR --gguf-dir DIR --work-dir DIR

The fixture minilm_gguf_files has written layer 0's GGUF files into --gguf-dir with
examples/minilm/make_gguf.py (Q4_0 and Q8_0 by gguf-py's quantizer, Q6_K and Q4_K for
output.dense by make_gguf.py's own encoder). This script

1. runs minilm_report on layer 0's query (384x384) and output.dense (1536x384) with
   quantc's affine INT4 g32 and the four GGUF schemes: the report converts each layer with
   convert_gguf, runs it on the PTX emulator and the interpreter and asserts what it
   asserts (bit-exact backends, ggml's dequantization, the summation bound, orderings);
   its exit status must be 0;
2. reads its results.csv and report.md and checks the numbers themselves, so a leg that
   silently produced no rows, or rows of the wrong size or accuracy, fails: every GGUF
   row is present with the expected shape, schedule and op bytes, its relative Frobenius
   error against the f64 product lies in a band around what the run gives today (far
   above 0, below a bound of its bit width), and Q8_0 < Q6_K < Q4_0 and Q6_K < Q4_K where
   they meet;
3. runs `quantc convert` on the same files, as a user would: blk.0.attn_q of the Q4_0
   file becomes a dequant_matmul_int4 bundle, blk.0.ffn_down of the Q6_K file a
   dequant_matmul_int8 bundle (block 16) and blk.0.ffn_down of the Q4_K file a
   dequant_matmul_int4 bundle in the offset mode (block 32), which `quantc run --inputs`
   then runs on the emulator, bit-exact with the interpreter.

Skips (exit 77) when the GGUF files are absent (gguf-py missing: the fixture skipped),
unless QUANTC_REQUIRE_PTXAS=1 (CI) or QUANTC_REQUIRE_GGUF_PY=1, as tests/gguf decides; and
passes minilm_report's own skip (77: model absent with QUANTC_SKIP_MODEL_TESTS=1) through.
"""
import argparse
import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys

SKIPPED = 77
TYPES = ["Q4_0", "Q8_0", "Q6_K", "Q4_K"]
# scheme -> (linears it has, op bytes vs f32, relative Frobenius error band). The run of
# 2025-11 gives: Q4_0 0.109 (query) / 0.069 (output.dense), Q8_0 0.0067 / 0.0049, Q6_K
# 0.0144 (output.dense), Q4_K 0.0587 (output.dense); the bands leave room for other
# activations or quantizer versions, not for a broken kernel or conversion (which give
# errors near 1, or 0).
EXPECTED = {
    "gguf-q4_0": ({"attention.self.query", "output.dense"}, 0.1875, (0.03, 0.2)),
    "gguf-q8_0": ({"attention.self.query", "output.dense"}, 0.28125, (0.001, 0.02)),
    "gguf-q6_k": ({"output.dense"}, 0.3125, (0.003, 0.05)),
    # nibbles + an f32 scale and an f32 offset per 32 weights (the offset mode)
    "gguf-q4_k": ({"output.dense"}, 0.1875, (0.02, 0.2)),
}
SHAPES = {"attention.self.query": (384, 384), "output.dense": (1536, 384)}


def required():
    return any(os.environ.get(name) == "1" for name in ("QUANTC_REQUIRE_PTXAS", "QUANTC_REQUIRE_GGUF_PY"))


def fail(message):
    print(f"check_gguf_leg.py: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def run(command, **kwargs):
    print("+ " + " ".join(str(part) for part in command), flush=True)
    return subprocess.run([str(part) for part in command], text=True, capture_output=True, **kwargs)


def check_report(report_dir):
    with open(report_dir / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    errors = {}
    for row in rows:
        errors[(row["scheme"], row["linear"])] = float(row["relative_frobenius"])
    for scheme, (linears, bytes_ratio, (low, high)) in EXPECTED.items():
        scheme_rows = [row for row in rows if row["scheme"] == scheme]
        if {row["linear"] for row in scheme_rows} != linears or len(scheme_rows) != len(linears):
            fail(f"{scheme}: rows for {sorted(row['linear'] for row in scheme_rows)}, expected one each for "
                 f"{sorted(linears)}")
        for row in scheme_rows:
            label = f"{scheme} {row['linear']}"
            if (int(row["in_dim"]), int(row["out_dim"])) != SHAPES[row["linear"]]:
                fail(f"{label}: shape {row['in_dim']}x{row['out_dim']}, expected {SHAPES[row['linear']]}")
            # auto runs the dequant_matmul ops as one matmul over the 14 tokens: the seed program.
            if row["schedule"] != "seed":
                fail(f"{label}: ran schedule {row['schedule']}, expected seed (one matmul over all tokens)")
            ratio = (int(row["packed_bytes"]) + int(row["sidecar_bytes"])) / int(row["f32_bytes"])
            if abs(ratio - bytes_ratio) > 1e-9:
                fail(f"{label}: op buffers {ratio:.5f} of f32, expected {bytes_ratio}")
            error = float(row["relative_frobenius"])
            if not low < error < high:
                fail(f"{label}: relative Frobenius error {error:.4e} against f64 outside ({low}, {high})")
            if int(row["backend_mismatches"]) != 0:
                fail(f"{label}: {row['backend_mismatches']} outputs differ between emulator and interpreter")
            if not 0 <= float(row["host_bound_ratio"]) <= 1:
                fail(f"{label}: interpreter vs x @ dequant(W) at {row['host_bound_ratio']} of the summation bound")
            print(f"ok: {label}: rel {error:.4e}, {ratio:.4f} of f32")
    for linear in ("attention.self.query", "output.dense"):
        if not errors[("gguf-q8_0", linear)] < errors[("gguf-q4_0", linear)]:
            fail(f"{linear}: Q8_0 error is not below Q4_0's")
    if not errors[("gguf-q8_0", "output.dense")] < errors[("gguf-q6_k", "output.dense")] < \
            errors[("gguf-q4_0", "output.dense")]:
        fail("output.dense: expected Q8_0 < Q6_K < Q4_0 in relative error")
    if not errors[("gguf-q6_k", "output.dense")] < errors[("gguf-q4_k", "output.dense")]:
        fail("output.dense: expected Q6_K < Q4_K in relative error")


def check_cli(quantc, gguf_dir, work_dir):
    for type_name, layer, op, block in (("Q4_0", "blk.0.attn_q", "dequant_matmul_int4", 32),
                                        ("Q6_K", "blk.0.ffn_down", "dequant_matmul_int8", 16),
                                        ("Q4_K", "blk.0.ffn_down", "dequant_matmul_int4", 32)):
        bundle = work_dir / f"convert-{type_name}"
        shutil.rmtree(bundle, ignore_errors=True)
        result = run([quantc, "convert", gguf_dir / f"all-MiniLM-L6-v2-{type_name}.gguf", "--format", "gguf",
                      "--layer", layer, "-o", bundle])
        if result.returncode != 0:
            fail(f"quantc convert {type_name} {layer}: exit status {result.returncode}\n{result.stdout}{result.stderr}")
        spec = json.loads((bundle / "spec.json").read_text())
        if spec.get("op") != op or spec.get("block_size") != block:
            fail(f"quantc convert {type_name} {layer}: spec {spec}, expected op {op} with block_size {block}")
        if spec.get("offset", False) != (type_name == "Q4_K"):
            fail(f"quantc convert {type_name} {layer}: spec {spec}, expected \"offset\": true for Q4_K only")
        print(f"ok: quantc convert {type_name} {layer} -> {op} (block {block})")
    # The Q4_K bundle as a user runs it: its buffers from the folder, a random x, the
    # emulator against the interpreter (m = 1: the fast GEMV).
    bundle = work_dir / "convert-Q4_K"
    result = run([quantc, "run", bundle / "spec.json", "--inputs", bundle, "--random-inputs", "7", "--backend",
                  "emulator", "--compare", "reference", "--tolerance", "0"])
    if result.returncode != 0 or "bit-exact" not in result.stdout:
        fail(f"quantc run of the Q4_K bundle: exit status {result.returncode}, expected emulator == interpreter "
             f"bit-exact\n{result.stdout}{result.stderr}")
    print("ok: quantc run Q4_K blk.0.ffn_down bundle: emulator bit-exact with the interpreter")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("report", "quantc", "model-dir", "gguf-dir", "work-dir"):
        parser.add_argument(f"--{name}", required=True, type=pathlib.Path)
    args = parser.parse_args()
    missing = [str(args.gguf_dir / f"all-MiniLM-L6-v2-{t}.gguf") for t in TYPES
               if not (args.gguf_dir / f"all-MiniLM-L6-v2-{t}.gguf").is_file()]
    if missing:
        reason = (f"{', '.join(missing)} absent: the fixture minilm_gguf_files writes them with gguf-py "
                  "(scripts/setup.sh installs it into data/python)")
        if required():
            fail(f"{reason}; QUANTC_REQUIRE_PTXAS=1 or QUANTC_REQUIRE_GGUF_PY=1 make that a failure")
        print(f"check_gguf_leg.py: SKIPPED: {reason}")
        return SKIPPED
    report_dir = args.work_dir / "report"
    shutil.rmtree(report_dir, ignore_errors=True)
    result = run([args.report, "--layers", "0", "--linears", "0,5", "--schemes", "0,5,6,7,8", "--model-dir",
                  args.model_dir, "--gguf-dir", args.gguf_dir, "--report-dir", report_dir])
    print(result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    if result.returncode == SKIPPED:
        return SKIPPED
    if result.returncode != 0:
        fail(f"minilm_report exited with {result.returncode} (1: an assertion failed, listed above)")
    if "GGUF rows skipped" in result.stderr:
        fail("minilm_report skipped the GGUF rows although the files exist")
    check_report(report_dir)
    check_cli(args.quantc, args.gguf_dir, args.work_dir)
    print("check_gguf_leg.py: the GGUF leg holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
