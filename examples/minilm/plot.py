#!/usr/bin/env python3
"""Draws report.png from results.csv (written by minilm_report).

Relative Frobenius error per linear layer (x axis: layer.linear) for each scheme, the
bytes of packed weights + sidecars relative to f32, and the modeled batch-1 time of one
token through all reported layers on the H100 model, seed vs fast schedule (the sum of
the seed_modeled_us / fast_modeled_us columns; the seed's time where fast cannot run). A
scheme present on fewer layers (GGUF Q6_K: output.dense only) is drawn as markers and its
time labeled with its layer count. Uses Debian's matplotlib: run with /usr/bin/python3
(examples/minilm/run.sh does).
    /usr/bin/python3 examples/minilm/plot.py examples/minilm/report
"""
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


SHORT = {"attention.self.query": "q", "attention.self.key": "k", "attention.self.value": "v",
         "attention.output.dense": "attn_out", "intermediate.dense": "ffn_up", "output.dense": "ffn_down"}


def key_of(row):
    return f"{row['layer']}.{SHORT.get(row['linear'], row['linear'])}"


def main(report_dir):
    report_dir = pathlib.Path(report_dir)
    with open(report_dir / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        sys.exit(f"{report_dir}/results.csv has no rows")
    layers = []
    for row in rows:
        key = key_of(row)
        if key not in layers:
            layers.append(key)
    schemes = list(dict.fromkeys(row["scheme"] for row in rows))
    # Schemes that cover only some layers (the GGUF K-quants: output.dense only) are drawn
    # as markers without lines, and their per-token time is labeled with their layer count.
    counts = {scheme: sum(1 for row in rows if row["scheme"] == scheme) for scheme in schemes}
    most = max(counts.values())
    figure, (errors, sizes, times) = plt.subplots(
        3, 1, figsize=(max(8, 0.35 * len(layers) + 3), 11), gridspec_kw={"height_ratios": [3, 1, 1.3]})
    for scheme in schemes:
        points = {key_of(r): float(r["relative_frobenius"]) for r in rows if r["scheme"] == scheme}
        partial = counts[scheme] < most
        errors.plot([layers.index(k) for k in points], list(points.values()), marker="D" if partial else "o",
                    markersize=4 if partial else 3, linestyle="none" if partial else "-", linewidth=1,
                    label=f"{scheme} ({counts[scheme]} layers)" if partial else scheme)
    errors.set_xticks(range(len(layers)))
    errors.set_xticklabels(layers, rotation=90, fontsize=7)
    errors.set_ylabel("relative Frobenius error vs f64")
    errors.set_title("all-MiniLM-L6-v2 linear layers through quantc's kernels:\n"
                     "quantc 4-bit schemes and GGUF files (real token activations)", fontsize=10)
    errors.grid(alpha=0.3)
    errors.legend(fontsize=8)
    ratios, shapes = {}, {}
    for row in rows:
        shapes.setdefault(row["scheme"], f"{row['in_dim']}x{row['out_dim']}")
        ratios.setdefault(row["scheme"], (int(row["packed_bytes"]) + int(row["sidecar_bytes"])) / int(row["f32_bytes"]))
    sizes.bar(range(len(ratios)), list(ratios.values()), color="tab:gray")
    sizes.set_xticks(range(len(ratios)))
    sizes.set_xticklabels([name if counts[name] == most else f"{name}\n({shapes[name]})" for name in ratios],
                          fontsize=8)
    sizes.set_ylabel("bytes vs f32")
    for index, value in enumerate(ratios.values()):
        sizes.text(index, value, f"{value:.3f}", ha="center", va="bottom", fontsize=8)
    seed_us, fast_us = {}, {}
    for row in rows:
        if not row.get("seed_modeled_us"):
            continue
        seed = float(row["seed_modeled_us"])
        fast = float(row["fast_modeled_us"]) if row.get("fast_modeled_us") else seed
        seed_us[row["scheme"]] = seed_us.get(row["scheme"], 0.0) + seed
        fast_us[row["scheme"]] = fast_us.get(row["scheme"], 0.0) + fast
    if seed_us:
        names = list(seed_us)
        width = 0.4
        for offset, label, values in ((-width / 2, "seed", seed_us), (width / 2, "fast", fast_us)):
            xs = [index + offset for index in range(len(names))]
            heights = [values[name] for name in names]
            times.bar(xs, heights, width, label=label)
            for x, value in zip(xs, heights):
                times.text(x, value, f"{value:.1f}", ha="center", va="bottom", fontsize=7)
        times.set_xticks(range(len(names)))
        times.set_xticklabels([name if counts[name] == most else f"{name}\n({counts[name]} layers only)"
                               for name in names], fontsize=8)
        times.set_yscale("log")
        times.set_ylabel("modeled us per token")
        times.set_title("batch 1, one token through the reported layers, H100 SXM cost model (launch overhead "
                        "not modeled)", fontsize=9)
        times.legend(fontsize=8)
    else:
        times.set_visible(False)
    figure.tight_layout()
    figure.savefig(report_dir / "report.png", dpi=110)
    print(f"wrote {report_dir / 'report.png'}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/minilm/report")
