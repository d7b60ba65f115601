#!/usr/bin/env python3
"""Times quantc's batch-1 kernels, the expert CUDA kernels and torch's FP16 F.linear on a GPU.

Called by bench/gpu/run.sh (steps 3 to 6); writes Markdown sections to stdout.

    time_kernels.py --quantc PATH [--launches bench/gpu/launches.jsonl] [--launches-count 200]
                    [--warmup 10] [--shapes llama|minilm|all] [--filter TEXT] [--profiles FILE]
                    [--batches 2,4,8,16,32,64] [--sections batch1,experts,batches]
                    [--timing isolated|back-to-back] [--no-check]
    time_kernels.py --quantc PATH --write-profiles FILE [--sm 90] [--shapes ...] [--filter TEXT]
                    [--schedule seed|fast|both] [--jobs N]

The second form needs no GPU: it runs `quantc profile --json` (the PTX emulator) for every case
and saves the cost model's numbers, so that a GPU run given `--profiles FILE` spends its time
on the GPU rather than emulating (the emulator takes seconds per case at the Llama shapes).

What each number is:
  - quantc: `quantc run SPEC --backend cuda --random-inputs 1 --compare reference --time N`: the
    kernel is checked against the reference interpreter first (not with --no-check), then
    launched N more times after the warm-up and timed as --timing says (`quantc run --timing`,
    both read the weights from DRAM on every launch, as a decode step does):
      isolated (default): CUDA events around each launch alone, after an L2 flush; the time
        includes the launch latency the events see; the median is reported;
      back-to-back: launches queued on one stream as a model's layers run, rotating through
        copies of the buffers twice the L2 size; a round is one CUDA graph through the copies
        (at least 16 launches), between two events; the median per-launch time of the rounds
        is reported (the kernel plus the gap between dependent kernels in a graph).
  - expert: bench/experts/<source>.cu compiled here with `nvcc -ptx -O3 -arch=sm_XX`, launched
    with `quantc run FILE.ptx --backend cuda --time N` on zero-filled buffers with the launch
    geometry kernels_bench plans (bench/gpu/launches.jsonl, written by scripts/bench_kernels.sh).
  - FP16: torch.nn.functional.linear(x, w) with x [1, in] and w [out, in] in float16 (cuBLAS),
    timed with torch.cuda.Event the same way (isolated: L2 flushed before each launch;
    back-to-back: CUDA graphs through copies of x and w twice the L2 size, as quantc's).
  - small batches (--batches, m > 1): the tensor-core GEMM of every format it runs
    (dequant_matmul_int4 b128 asym, dequant_matmul_nvfp4, dequant_matmul_fp8 e4m3, nf4_gemm f32,
    linear_4bit_affine_grouped g128 with and without act_order;
    f16 activations, "schedule": "fast") against FP16 F.linear with x [m, in], timed the same
    way. The check against the interpreter accepts 1e-2 in abs or rel difference per element
    (--batch-tolerance): the tensor cores sum a k-step's products in their own order (README,
    "Tensor cores"), and the f16 outputs round the difference to whole f16 ulps; the table's
    last column says how many elements differ and the largest rel difference.
  - model columns: with --profiles, a case missing from the files gets none (the GPU machine
    never emulates); without, `quantc profile` runs for each case there.
  - copy bandwidth: a 1 GiB device-to-device copy (bytes read + written per second).
  - GB/s: the kernel's unique bytes read + written (from `quantc profile --json`) per second.
  - launch overhead: a one-element torch kernel timed the same way (isolated: what the events
    see beyond the kernel itself; back-to-back: the shortest a launch can take in a stream).
  - model error: `quantc profile --json`'s modeled_us for this GPU / (measured median - launch
    overhead) - 1 when isolated: the model estimates the kernel, not the launch; back to back,
    modeled_us / measured median - 1 (nothing subtracted: the gap between kernels is part of
    what a decode step pays, and the model leaves it out).
Requires PyTorch with CUDA and nvcc on PATH (for the expert kernels; skipped with a note if absent).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

LLAMA_SHAPES = [(4096, 4096), (4096, 11008), (11008, 4096)]
MINILM_SHAPES = [(384, 384), (384, 1536), (1536, 384)]


def batch1_specs(k, n):
    """(label, spec without schedule) for every batch-1 op at in=k, out=n; labels follow
    kernels_bench's ("op KxN extras"), so that --filter selects the same cases in both tables."""
    m1 = {"m": 1, "k": k, "n": n}
    shape = f"{k}x{n}"
    return [
        (f"linear_4bit {shape}", {"op": "linear_4bit", "k": k, "n": n}),
        (f"linear_4bit_affine_grouped {shape} g64",
         {"op": "linear_4bit_affine_grouped", "k": k, "n": n, "group_size": 64}),
        (f"linear_4bit_affine_grouped {shape} g128",
         {"op": "linear_4bit_affine_grouped", "k": k, "n": n, "group_size": 128}),
        (f"int4_matvec_f32_scaled {shape}", {"op": "int4_matvec_f32_scaled", "n": n, "k": k}),
        (f"int4_batched_matvec_f32_scaled {shape}",
         {"op": "int4_batched_matvec_f32_scaled", "m": 1, "n": n, "k": k}),
        (f"nf4_gemm {shape} f64", {"op": "nf4_gemm", **m1, "accumulate": "f64"}),
        (f"nf4_gemm {shape} f32", {"op": "nf4_gemm", **m1, "accumulate": "f32"}),
        (f"nf4_gemm_transpose {shape}", {"op": "nf4_gemm_transpose", **m1}),
        (f"dequant_matmul_int8 {shape} b64", {"op": "dequant_matmul_int8", **m1, "block_size": 64}),
        (f"dequant_matmul_int4 {shape} b64 asym",
         {"op": "dequant_matmul_int4", **m1, "block_size": 64, "asymmetric": True}),
        (f"dequant_matmul_fp8 {shape}", {"op": "dequant_matmul_fp8", **m1}),
        (f"dequant_matmul_nvfp4 {shape}", {"op": "dequant_matmul_nvfp4", **m1}),
        (f"quantize_int4 {shape}", {"op": "quantize_int4", "n": k * n}),
        (f"dequantize_int4 {shape}", {"op": "dequantize_int4", "n": k * n}),
        (f"quantize_nf4 {shape}", {"op": "quantize_nf4", "n": k * n}),
        (f"dequantize_nf4 {shape}", {"op": "dequantize_nf4", "n": k * n}),
    ]


def batch_specs(k, n, m):
    """(label, spec without schedule) of every tensor-core case at in=k, out=n and batch m (run
    with "schedule": "fast"); labels follow kernels_bench's small-batch table ("op KxN extras mM")."""
    shape, dims = f"{k}x{n}", {"m": m, "k": k, "n": n, "activation": "f16"}
    return [
        (f"dequant_matmul_int4 {shape} b128 asym m{m}",
         {"op": "dequant_matmul_int4", **dims, "block_size": 128, "asymmetric": True}),
        (f"dequant_matmul_nvfp4 {shape} m{m}", {"op": "dequant_matmul_nvfp4", **dims}),
        (f"dequant_matmul_fp8 {shape} e4m3 m{m}", {"op": "dequant_matmul_fp8", **dims, "format": "e4m3"}),
        (f"nf4_gemm {shape} f32 m{m}", {"op": "nf4_gemm", **dims, "accumulate": "f32"}),
        (f"linear_4bit_affine_grouped {shape} g128 m{m}",
         {"op": "linear_4bit_affine_grouped", **dims, "group_size": 128}),
        (f"linear_4bit_affine_grouped {shape} g128 act_order m{m}",
         {"op": "linear_4bit_affine_grouped", **dims, "group_size": 128, "act_order": True}),
    ]


def canonical(spec):
    """A spec's identity for lookups: sorted keys, the op's defaults filled in."""
    defaults = {"nf4_gemm": {"accumulate": "f64"}, "dequant_matmul_int4": {"asymmetric": False}}
    return json.dumps({**defaults.get(spec["op"], {}), **spec}, sort_keys=True)


def model_key(device_name):
    name = device_name.upper()
    for needle, key in (("H200", "h200"), ("H100", "h100_sxm"), ("A100", "a100"), ("L40S", "l40s")):
        if needle in name:
            return key
    return None


TIME_LINE = re.compile(r"time \S+: median ([0-9.]+) us, min ([0-9.]+) us")


COMPARE_LINE = re.compile(r"compare cuda vs reference: \S+: (bit-exact|not bit-exact: (\d+) of (\d+) elements differ, "
                          r"max abs diff (\S+), max rel diff (\S+))")


def run_timed(command):
    """Runs a `quantc run ... --time` command; returns (median_us, None) or (None, error text)."""
    result = subprocess.run(command, capture_output=True, text=True)
    match = TIME_LINE.search(result.stdout)
    if result.returncode != 0 or match is None:
        return None, (result.stdout + result.stderr).strip().splitlines()[-1:] or ["failed"]
    return float(match.group(1)), result.stdout


def agreement(stdout):
    """The `--compare reference` verdict of a run's output, as a table cell: "bit-exact", or how
    many elements differ and the largest relative difference."""
    match = COMPARE_LINE.search(stdout or "")
    if match is None:
        return "–"
    if match.group(1) == "bit-exact":
        return "bit-exact"
    return f"{match.group(2)} of {match.group(3)} differ, max rel {float(match.group(5)):.1e}"


def profile_record(quantc, spec_path, sm):
    """{"modeled_us": {device key: us}, "unique_bytes": read + written} from `quantc profile --json`
    at sm_`sm`, or None when the profile failed."""
    result = subprocess.run([quantc, "profile", "--json", spec_path, "--target", f"sm_{sm}"], capture_output=True, text=True)
    if result.returncode != 0:
        return None
    kernel = json.loads(result.stdout)["kernels"][0]
    return {"modeled_us": {device: numbers["modeled_us"] for device, numbers in kernel["devices"].items()
                           if "modeled_us" in numbers},
            "unique_bytes": kernel["unique_bytes_read"] + kernel["unique_bytes_written"]}


def model_record(args, profiles, spec, schedule, sm, path):
    """The cost model's numbers for a case: from --profiles when given (a case missing there has
    none, so that a GPU run never emulates), else from `quantc profile` run now."""
    if args.profiles:
        return profiles.get(profile_key(spec, schedule, sm))
    return profile_record(args.quantc, path, sm)


def profile_key(spec, schedule, sm):
    return json.dumps({"spec": json.loads(canonical(spec)), "schedule": schedule, "sm": sm}, sort_keys=True)


def cases(shapes, text_filter):
    """(in, out, label, spec) for every batch-1 case at `shapes` whose label contains `text_filter`."""
    return [(k, n, label, spec) for k, n in shapes for label, spec in batch1_specs(k, n) if text_filter in label]


def batch_cases(shapes, batches, text_filter):
    """(in, out, m, label, spec) for every small-batch case whose label contains `text_filter`."""
    return [(k, n, m, label, spec) for k, n in shapes for m in batches for label, spec in batch_specs(k, n, m)
            if text_filter in label]


def write_profiles(args, shapes):
    """--write-profiles: the cost model's numbers for every case and schedule, one JSON line
    each, `--jobs` profiles at a time (each is one single-threaded emulation)."""
    from concurrent.futures import ThreadPoolExecutor

    schedules = ("seed", "fast") if args.schedule == "both" else (args.schedule,)
    work = [(label, spec, schedule) for _, _, label, spec in cases(shapes, args.filter) for schedule in schedules]
    work += [(label, spec, "fast") for _, _, _, label, spec in batch_cases(shapes, args.batch_list, args.filter)]
    with tempfile.TemporaryDirectory() as scratch, open(args.write_profiles, "w") as out:
        def profile_one(index):
            label, spec, schedule = work[index]
            path = os.path.join(scratch, f"spec{index}.json")
            with open(path, "w") as file:
                json.dump({**spec, "schedule": schedule}, file)
            return profile_record(args.quantc, path, args.sm)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for (label, spec, schedule), record in zip(work, pool.map(profile_one, range(len(work)))):
                if record is None:
                    print(f"error: quantc profile failed for {label} {schedule}", file=sys.stderr)
                    return 1
                out.write(json.dumps({"key": profile_key(spec, schedule, args.sm), "label": label,
                                      "schedule": schedule, **record}) + "\n")
                print(f"{label} {schedule}: {record['modeled_us']}", file=sys.stderr)
    return 0


def torch_measurements(args, shapes):
    """(device name, sm, copy GB/s, {(in, out): FP16 F.linear us}) measured with PyTorch."""
    import torch
    import torch.nn.functional as F

    flush = torch.empty(2 * 1024 ** 3 // 8, dtype=torch.int64, device="cuda")  # > every L2 there is
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size

    def torch_time(fn, operands=(), timing=args.timing):
        """Median us of fn(*operands) timed as `timing` says. Back to back, `operands` (tensors)
        are copied into enough sets that a round through them touches twice the L2 size."""
        if timing == "back-to-back":
            set_bytes = sum(t.numel() * t.element_size() for t in operands)
            count = max(1, -(-2 * l2_bytes // set_bytes)) if set_bytes else 1
            sets = [tuple(operands)] + [tuple(t.clone() for t in operands) for _ in range(count - 1)]
            # One round is a CUDA graph through every set, repeated to at least 16 launches, as
            # quantc's runtime does: launched one by one from Python, a launch costs the host
            # more than the GPU needs for a 4-bit GEMV.
            round_sets = sets * -(-16 // count)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # torch's rule: run once outside the capture first
                for operand_set in round_sets:
                    fn(*operand_set)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for operand_set in round_sets:
                    fn(*operand_set)
            for _ in range(-(-args.warmup // len(round_sets))):
                graph.replay()
            times = []
            for _ in range(max(1, -(-args.launches_count // len(round_sets)))):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                graph.replay()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) * 1e3 / len(round_sets))
            del graph, sets, round_sets
            return statistics.median(times)
        for _ in range(args.warmup):
            fn(*operands)
        times = []
        for _ in range(args.launches_count):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*operands)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)

    source = torch.empty(1024 ** 3, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    # Isolated in either mode: captured in a graph, the copy becomes a memcpy node, which an
    # H200 ran at 2.7 TB/s against 4.3 TB/s launched alone.
    copy_gbs = 2 * source.numel() / torch_time(lambda a, b: b.copy_(a), (source, target), "isolated") / 1e3
    # What a launch costs the events beyond the kernel: a one-element kernel, timed the same way.
    tiny = torch.zeros(1, device="cuda")
    launch_us = torch_time(lambda: tiny.add_(1))  # no copies: its one element is never the point
    del source, target
    fp16_us = {}  # (in, out) at batch 1, (in, out, m) at the small batches
    for k, n in shapes:
        w = torch.randn(n, k, device="cuda", dtype=torch.float16)
        for m in [1] + args.batch_list:
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            fp16_us[(k, n) if m == 1 else (k, n, m)] = torch_time(F.linear, (x, w))
    major, minor = torch.cuda.get_device_capability()
    return torch.cuda.get_device_name(), 10 * major + minor, copy_gbs, launch_us, fp16_us


def print_summary(summary):
    """Medians per shape family and schedule: % of copy bandwidth, speed-up over FP16, and the
    cost model's signed and absolute error (the figures CostModel.h's Calibration records)."""
    print("\n## Summary (medians over the ops above)\n")
    print("| shapes | schedule | kernels | % of copy | × FP16 | model error | abs. model error |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for family in ("llama", "minilm"):
        for schedule in ("seed", "fast"):
            rows = [row for row in summary if row[0] == family and row[1] == schedule]
            if not rows:
                continue
            errors = [row[4] for row in rows if row[4] is not None]
            error = f"{statistics.median(errors):+.0%} | {statistics.median(map(abs, errors)):.0%}" if errors else "– | –"
            print(f"| {family} | {schedule} | {len(rows)} | {100 * statistics.median(row[2] for row in rows):.0f}% | "
                  f"{statistics.median(row[3] for row in rows):.2f}× | {error} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quantc", required=True)
    parser.add_argument("--launches", default=os.path.join(os.path.dirname(__file__), "launches.jsonl"))
    parser.add_argument("--launches-count", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--shapes", choices=["llama", "minilm", "all"], default="all")
    parser.add_argument("--filter", default="")
    parser.add_argument("--without-torch", action="store_true",
                        help="only quantc and the experts (no copy bandwidth, no FP16): the smoke test on the "
                             "emulated CUDA driver uses it")
    parser.add_argument("--sm", type=int, default=90, help="with --without-torch: the device's sm")
    parser.add_argument("--profiles", help="JSONL files written by --write-profiles, comma-separated (a later "
                                           "file's entries win): the cost model's numbers, instead of running "
                                           "`quantc profile` per case")
    parser.add_argument("--write-profiles", metavar="FILE", help="no GPU needed: write the cost model's numbers "
                                                                 "for every case to FILE and exit")
    parser.add_argument("--schedule", choices=["seed", "fast", "both"], default="both",
                        help="which schedules to time (or, with --write-profiles, to profile)")
    parser.add_argument("--jobs", type=int, default=1, help="with --write-profiles: profiles run at a time")
    parser.add_argument("--batches", default="2,4,8,16,32,64",
                        help="batch sizes m > 1 of the tensor-core table, comma-separated ('' for none)")
    parser.add_argument("--sections", default="batch1,experts,batches",
                        help="which tables to time, comma-separated: batch1 (quantc's batch-1 kernels), experts, "
                             "batches (the tensor-core cases of --batches), in that order")
    parser.add_argument("--batch-tolerance", type=float, default=1e-2,
                        help="--compare tolerance of the tensor-core cases (their sums' order differs on a GPU)")
    parser.add_argument("--timing", choices=["isolated", "back-to-back"], default="isolated",
                        help="how every kernel is timed (quantc run --timing): each launch alone after an L2 "
                             "flush, or back to back through buffer copies twice the L2 size")
    parser.add_argument("--no-check", action="store_true",
                        help="time without --compare reference (for a second pass over cases a first pass "
                             "checked)")
    parser.add_argument("--model-device", help="cost-model device key (h100_sxm, h200, a100, l40s) for the model "
                                               "error column; default: from the GPU's name")
    args = parser.parse_args()
    args.batch_list = [int(m) for m in args.batches.split(",") if m]
    args.section_list = [section for section in args.sections.split(",") if section]
    unknown = set(args.section_list) - {"batch1", "experts", "batches"}
    if unknown:
        parser.error(f"unknown --sections {', '.join(sorted(unknown))}; choose from batch1, experts, batches")

    shapes = {"llama": LLAMA_SHAPES, "minilm": MINILM_SHAPES, "all": LLAMA_SHAPES + MINILM_SHAPES}[args.shapes]
    if args.write_profiles:
        return write_profiles(args, shapes)
    profiles = {}
    if args.profiles:
        for path in args.profiles.split(","):  # later files override earlier ones
            for line in open(path):
                record = json.loads(line)
                profiles[record["key"]] = record
    if args.without_torch:
        device_name, sm = "no torch", args.sm
        copy_gbs, launch_us = float("nan"), 0.0
        fp16_us = {key: float("nan") for k, n in shapes for key in [(k, n)] + [(k, n, m) for m in args.batch_list]}
    else:
        device_name, sm, copy_gbs, launch_us, fp16_us = torch_measurements(args, shapes)
    key = args.model_device or model_key(device_name)

    print(f"GPU: {device_name} (sm_{sm}); cost-model device: {key or 'none (no model for this GPU)'}.")
    print(f"Measured device-to-device copy bandwidth: {copy_gbs:.0f} GB/s (1 GiB copy, median of {args.launches_count}).")
    if args.timing == "back-to-back":
        if not args.without_torch:
            print(f"A one-element torch kernel back to back: {launch_us:.2f} us per launch.")
        print("The model error compares modeled_us with the measured time per launch as it is.")
        print(f"Every time is per launch, the median over rounds of launches queued back to back (at least "
              f"{args.launches_count} launches after {args.warmup} warm-up), each round one CUDA graph through "
              f"copies of the buffers twice the L2 size.\n")
        launch_us = 0.0  # nothing subtracted for the model error
    else:
        print(f"Launch overhead: {launch_us:.2f} us (a one-element torch kernel, timed the same way); the model "
              f"error compares modeled_us (kernel time) with the measured time minus this.")
        print(f"Every time is the median of {args.launches_count} launches after {args.warmup} warm-up, each after "
              f"an L2 flush.\n")
    if not args.without_torch:
        print("## torch FP16 F.linear (cuBLAS), batch 1\n")
        print("| in x out | us | GB/s (weights) |\n|---|--:|--:|")
        for key_shape, us in fp16_us.items():
            if len(key_shape) == 2:  # (in, out) at batch 1; the small batches are in their own table
                k, n = key_shape
                print(f"| {k}x{n} | {us:.2f} | {2 * k * n / us / 1e3:.0f} |")

    quantc_args = ["--backend", "cuda", "--time", str(args.launches_count), "--warmup", str(args.warmup),
                   "--timing", args.timing]
    check_args = [] if args.no_check else ["--compare", "reference"]
    measured = {}  # (canonical spec, schedule) -> us
    summary = []  # (shape family, schedule, % of copy, x FP16, model error) per timed quantc kernel
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        if "batch1" in args.section_list:
            checked = "unchecked: --no-check" if args.no_check else "checked against the interpreter first"
            print(f"\n## quantc kernels, batch 1 ({checked}; {args.timing})\n")
            print("| case | schedule | us | GB/s | % of copy | × FP16 | modeled us | model error |")
            print("|---|---|--:|--:|--:|--:|--:|--:|")
        for k, n, label, spec in cases(shapes, args.filter) if "batch1" in args.section_list else []:
            for schedule in ("seed", "fast") if args.schedule == "both" else (args.schedule,):
                path = os.path.join(scratch, "spec.json")
                with open(path, "w") as file:
                    json.dump({**spec, "schedule": schedule}, file)
                us, error = run_timed([args.quantc, "run", path, "--random-inputs", "1", *check_args,
                                       "--threads", "0", *quantc_args])
                if us is None:
                    failures.append(f"{label} {schedule}: {error[0]}")
                    print(f"| {label} | {schedule} | failed | | | | | |")
                    continue
                measured[(canonical(spec), schedule)] = us
                record = model_record(args, profiles, spec, schedule, sm, path)
                modeled = record["modeled_us"].get(key) if record and key else None
                unique_bytes = record["unique_bytes"] if record else None
                gbs = unique_bytes / us / 1e3 if unique_bytes else float("nan")
                kernel_us = max(us - launch_us, 1e-3)
                model = f"{modeled:.2f} | {modeled / kernel_us - 1:+.0%}" if modeled else "– | –"
                family = "llama" if (k, n) in LLAMA_SHAPES else "minilm"
                summary.append((family, schedule, gbs / copy_gbs, fp16_us[(k, n)] / us,
                                modeled / kernel_us - 1 if modeled else None))
                print(f"| {label} | {schedule} | {us:.2f} | {gbs:.0f} | {100 * gbs / copy_gbs:.0f}% | "
                      f"{fp16_us[(k, n)] / us:.2f}× | {model} |")

        if "experts" in args.section_list:
            nvcc = shutil.which("nvcc")
            print("\n## Expert CUDA kernels (bench/experts/), same timing\n")
            if nvcc is None or not os.path.exists(args.launches):
                print(f"note: {'nvcc not on PATH' if nvcc is None else args.launches + ' missing'}; expert kernels not timed")
            else:
                print("| case | expert us | quantc seed us | quantc fast us | fast ÷ expert |\n|---|--:|--:|--:|--:|")
                experts = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experts")
                for line in open(args.launches):
                    case = json.loads(line)
                    if args.filter and args.filter not in case["label"]:
                        continue
                    expert = case["expert"]
                    ptx = os.path.join(scratch, expert["source"] + f".sm_{sm}.ptx")
                    if not os.path.exists(ptx):
                        subprocess.run([nvcc, "-ptx", "-O3", f"-arch=sm_{sm}", os.path.join(experts, expert["source"]),
                                        "-o", ptx], check=True)
                    command = [args.quantc, "run", ptx, "--entry", expert["entry"],
                               "--grid", ",".join(map(str, expert["grid"])), "--block", ",".join(map(str, expert["block"])),
                               "--shared-bytes", str(expert["shared_bytes"]), *quantc_args]
                    for argument in expert["args"]:
                        command += ["--arg", argument]
                    us, error = run_timed(command)
                    if us is None:
                        failures.append(f"expert {case['label']}: {error[0]}")
                        print(f"| {case['label']} | failed | | | |")
                        continue
                    spec = canonical({"op": case["spec"]["op"], **case["spec"]["params"]})
                    seed, fast = measured.get((spec, "seed")), measured.get((spec, "fast"))
                    cell = lambda v: f"{v:.2f}" if v else "–"
                    ratio = f"{fast / us:.2f}×" if fast else "–"
                    print(f"| {case['label']} | {us:.2f} | {cell(seed)} | {cell(fast)} | {ratio} |")

        if args.batch_list and "batches" in args.section_list:
            checked = ("unchecked: --no-check" if args.no_check
                       else f"checked against the interpreter within {args.batch_tolerance:g}")
            print(f"\n## Small batches on the tensor cores (f16 activations, {checked}; {args.timing})\n")
            print("| case | us | FP16 F.linear us | × FP16 | modeled us | model error | vs interpreter |\n"
                  "|---|--:|--:|--:|--:|--:|---|")
            for k, n, m, label, spec in batch_cases(shapes, args.batch_list, args.filter):
                path = os.path.join(scratch, "spec.json")
                with open(path, "w") as file:
                    json.dump({**spec, "schedule": "fast"}, file)
                tolerance = [] if args.no_check else ["--tolerance", str(args.batch_tolerance)]
                us, output = run_timed([args.quantc, "run", path, "--random-inputs", "1", *check_args, *tolerance,
                                        "--threads", "0", *quantc_args])
                if us is None:
                    failures.append(f"{label}: {output[0]}")
                    print(f"| {label} | failed | | | | | |", flush=True)
                    continue
                record = model_record(args, profiles, spec, "fast", sm, path)
                modeled = record["modeled_us"].get(key) if record and key else None
                model = f"{modeled:.2f} | {modeled / max(us - launch_us, 1e-3) - 1:+.0%}" if modeled else "– | –"
                fp16 = fp16_us[(k, n, m)]
                print(f"| {label} | {us:.2f} | {fp16:.2f} | {fp16 / us:.2f}× | {model} | {agreement(output)} |",
                      flush=True)

    print_summary(summary)
    if failures:
        print("\n## Failures\n")
        for failure in failures:
            print(f"- {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
