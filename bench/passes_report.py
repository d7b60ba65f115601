#!/usr/bin/env python3
"""Turns passes_bench's Google Benchmark JSON into bench/results/passes.md.

Usage: passes_report.py BENCH.json OUT.md   (scripts/bench_report.sh runs it)

Reads the counters of the rows `quantc/<op>/<in>x<out>/g<group>/O<level>`,
`nvrtc/<op>/<in>x<out>/g<group>` and `spec/<file>` (see bench/passes_bench.cpp);
standard library only.
"""
import json
import re
import statistics
import sys
from collections import defaultdict

SPEC_ROW = re.compile(r"^spec/(?P<spec>[a-z0-9_]+)(/.*)?$")
PASSES = ["hoist_sidecars", "fold_constants", "licm", "cse", "unroll_loops", "dce"]
QUANTC_ROW = re.compile(r"^quantc/(?P<op>[a-z0-9_]+)/(?P<in>\d+)x(?P<out>\d+)/g(?P<group>\d+)/(?P<level>O\d)(/.*)?$")
NVRTC_ROW = re.compile(r"^nvrtc/(?P<op>[a-z0-9_]+)/(?P<in>\d+)x(?P<out>\d+)/g(?P<group>\d+)(/.*)?$")

OP_NOTES = {
    "linear_4bit_affine_grouped": "one warp per output, lanes over k (chunks of 32), "
    "sidecars `scale`/`zero_point`; counts on out_dim=64",
    "linear_4bit": "one thread per output, no sidecar; counts on out_dim=256",
    "int4_matvec_f32_scaled": "rows=out, cols=in, one warp per row, sidecar `row_scales`; counts on rows=64",
    "nf4_gemm": "m=4, n=out, k=in, NF4 block 64 (fixed by the format), f64 accumulation (op default), "
    "sidecar `b_scales`; counts on m=1, n=256 (one thread per output, no row tiling)",
    "dequant_matmul_int4": "m=4 (tile of 4 rows per thread), k=in, n=out, block_size=group, asymmetric, "
    "sidecars `scales`/`zero_points`; counts on m=4, n=128",
}


def fmt(value, digits=1):
    if value is None:
        return "—"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def load(path):
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    quantc, nvrtc, specs, errors = {}, {}, {}, []
    for row in data["benchmarks"]:
        name = row.get("run_name", row["name"])
        if row.get("error_occurred"):
            errors.append(f"{name}: {row.get('error_message', '').strip()}")
            continue
        if match := SPEC_ROW.match(name):
            specs[match["spec"]] = row
        elif match := QUANTC_ROW.match(name):
            key = (match["op"], int(match["in"]), int(match["out"]), int(match["group"]))
            quantc[key + (match["level"],)] = row
        elif match := NVRTC_ROW.match(name):
            nvrtc[(match["op"], int(match["in"]), int(match["out"]), int(match["group"]))] = row
    return data.get("context", {}), quantc, nvrtc, specs, errors


def sidecar_summary(quantc):
    """Lines comparing -O0 and -O2 sidecar loads per output for every grouped case."""
    lines = []
    for (op, in_dim, out_dim, group, level), row in sorted(quantc.items()):
        if level != "O2" or (op, in_dim, out_dim, group, "O0") not in quantc:
            continue
        before = quantc[(op, in_dim, out_dim, group, "O0")].get("sidecar_loads_per_output")
        after = row.get("sidecar_loads_per_output")
        if not before:
            continue
        group_text = str(group) if group else "—"
        lines.append(f"| {op} | {in_dim}x{out_dim} | {group_text} | {fmt(before)} | {fmt(after)} | "
                     f"{before / after if after else float('inf'):.1f}x |")
    return lines


def headline(quantc, nvrtc):
    """Medians over all cases: what compiling one kernel costs each way."""
    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    lines = ["## Headline (medians over all op/shape/group cases)", ""]
    lines.append("| | quantc -O0 | quantc -O2 | NVRTC |")
    lines.append("|---|---:|---:|---:|")
    by_level = {level: [row for key, row in quantc.items() if key[4] == level] for level in ("O0", "O2")}
    nvrtc_rows = list(nvrtc.values())

    def row(label, quantc_counter, nvrtc_counter, digits=1):
        cells = [fmt(median(r.get(quantc_counter) for r in by_level[level]), digits) for level in ("O0", "O2")]
        cells.append(fmt(median(r.get(nvrtc_counter) for r in nvrtc_rows), digits) if nvrtc_counter else "—")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("source -> PTX, ms", "emit_ms", "nvrtc_ms", 2)
    row("ptxas -v sm_90, ms", "ptxas_ms", "ptxas_ms")
    row("PTX lines", "ptx_lines", "ptx_lines", 0)
    row("registers", "registers", "registers", 0)
    row("NVRTC/quantc (source -> PTX)", "nvrtc_over_quantc", None)
    lines.append("")
    return lines


def spec_table(specs):
    """Spec text -> optimized IR for every shipped spec, with the pipeline's per-pass time."""
    lines = ["## Shipped specs: spec -> optimized IR (-O2)", ""]
    lines.append("Each `examples/specs/*.json` at its own shape: **parse+build** = spec parsing and the op "
                 "constructor; **passes** = the -O2 pipeline's pass runs (sum of their wall times); "
                 "**spec -> IR** = the whole `quantc ir` path in process (parse, build, pipeline); "
                 "**spec -> PTX** = that plus PTX emission (`quantc emit` without the cache). Per-pass columns "
                 "are microseconds summed over the pipeline's rounds; **runs** counts pass runs, with the runs "
                 "the pass manager skipped (result already known) in parentheses.")
    lines.append("")
    header = ("| spec | nodes in -> out | parse+build ms | passes ms | spec -> IR ms | spec -> PTX ms | runs | "
              + " | ".join(PASSES) + " |")
    lines.append(header)
    lines.append("|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(PASSES))
    for spec in sorted(specs):
        row = specs[spec]
        cells = [f"{fmt(row.get('pass_us_' + p), 1)}" for p in PASSES]
        skipped = row.get("skipped_runs")
        runs = fmt(row.get("pass_runs"), 0) + (f" ({fmt(skipped, 0)})" if skipped else "")
        lines.append(f"| {spec} | {fmt(row.get('nodes_before'), 0)} -> {fmt(row.get('nodes_after'), 0)} | "
                     f"{fmt(row.get('build_ms'), 3)} | {fmt(row.get('passes_ms'), 3)} | {fmt(row.get('ir_ms'), 3)} | "
                     f"{fmt(row.get('ptx_ms'), 3)} | {runs} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: passes_report.py BENCH.json OUT.md")
    context, quantc, nvrtc, specs, errors = load(argv[1])
    out = []
    out.append("# quantc pass pipeline: compile cost and code quality vs NVRTC")
    out.append("")
    out.append("Generated by `scripts/bench_report.sh` (bench/passes_bench.cpp -> bench/passes_report.py); "
               "do not edit by hand.")
    out.append(f"Run: {context.get('date', '?')} on {context.get('host_name', '?')}, "
               f"{context.get('num_cpus', '?')} CPUs (shared with other jobs: timings are indicative), "
               f"PTX for sm_90.")
    out.append("")
    out.append("Columns:")
    out.append("- **emit ms**: op constructor + pass pipeline (-O0: none; -O2: the default pipeline) + PTX emission, "
               "mean wall time per compile (Google Benchmark).")
    out.append("- **PTX lines**, **regs**, **spill B** (spill store + load bytes) and **ptxas ms** from "
               "`ptxas -v --gpu-name sm_90` on that PTX (a user pays emit + ptxas).")
    out.append("- **loads/out**, **sidecar/out**, **shfl/out**, **arith/out**: dynamic counts per output from the "
               "reference interpreter's RunStatistics, summed over invocations (an operation run by 32 lanes "
               "counts 32). sidecar = loads from buffers whose role is `sidecar` (scales, zero points). shfl = "
               "explicit shuffles + 5 per subgroup_add (its butterfly). arith = Binary, Unary, Cast, Select, Fma, "
               "Lookup evaluations. Measured on a reduced output count with the same reduction length and group "
               "size (see per-op notes): every output runs the same code, so per-output counts do not depend "
               "on the output count.")
    out.append("- **NVRTC ms**: `nvrtcCompileProgram` (+ create, get PTX, destroy) of an equivalent hand-written "
               "CUDA C++ kernel with the same shape constants, `--gpu-architecture=compute_90 --fmad=false` "
               "(default -O3); **NVRTC/quantc** = NVRTC ms / emit ms (above 1: quantc compiles faster); "
               "**NVRTC regs** = ptxas registers of NVRTC's PTX.")
    out.append("")

    out.extend(headline(quantc, nvrtc))
    if specs:
        out.extend(spec_table(specs))
    summary = sidecar_summary(quantc)
    if summary:
        out.append("## Sidecar loads per output, -O0 vs -O2")
        out.append("")
        out.append("Sidecar hoisting turns the per-chunk loads into one load per group when the group size is a "
                   "multiple of the 32-wide chunk and larger than it (64, 128); group 32 (one chunk per group) "
                   "is left in the per-chunk form by design. dequant_matmul_int4 already loads once per block.")
        out.append("")
        out.append("| op | in x out | group | sidecar/out -O0 | sidecar/out -O2 | reduction |")
        out.append("|---|---|---:|---:|---:|---:|")
        out.extend(summary)
        out.append("")

    by_op = defaultdict(list)
    for key in quantc:
        by_op[key[0]].append(key)
    for op in sorted(by_op):
        out.append(f"## {op}")
        out.append("")
        if op in OP_NOTES:
            out.append(f"Parameters: {OP_NOTES[op]}.")
            out.append("")
        out.append("| in x out | group | level | emit ms | PTX lines | regs | spill B | ptxas ms | loads/out | "
                   "sidecar/out | shfl/out | arith/out | NVRTC ms | NVRTC/quantc | NVRTC regs |")
        out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key in sorted(by_op[op], key=lambda k: (k[1], k[2], k[3], k[4])):
            _, in_dim, out_dim, group, level = key
            row = quantc[key]
            reference = nvrtc.get((op, in_dim, out_dim, group), {})
            group_text = str(group) if op in ("linear_4bit_affine_grouped", "dequant_matmul_int4", "nf4_gemm") else "—"
            ok = "" if row.get("ptxas_ok", 1) else " (ptxas failed)"
            out.append(
                f"| {in_dim}x{out_dim} | {group_text} | -{level} | {fmt(row.get('emit_ms'), 2)} | "
                f"{fmt(row.get('ptx_lines'), 0)} | {fmt(row.get('registers'), 0)}{ok} | "
                f"{fmt(row.get('spill_bytes'), 0)} | {fmt(row.get('ptxas_ms'), 0)} | "
                f"{fmt(row.get('loads_per_output'))} | {fmt(row.get('sidecar_loads_per_output'))} | "
                f"{fmt(row.get('shuffles_per_output'))} | {fmt(row.get('arithmetic_per_output'))} | "
                f"{fmt(row.get('nvrtc_ms'), 1)} | {fmt(row.get('nvrtc_over_quantc'), 1)}x | "
                f"{fmt(reference.get('registers'), 0)} |")
        out.append("")

    if errors:
        out.append("## Rows that failed")
        out.append("")
        out.extend(f"- {error}" for error in errors)
        out.append("")
    with open(argv[2], "w", encoding="utf-8") as handle:
        handle.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv)
