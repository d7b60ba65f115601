// quantc's kernels against hand-written expert CUDA C++ kernels (bench/experts/) at batch 1:
// for linear_4bit_affine_grouped (group 64), nf4_gemm (m = 1; f64 accumulation, the op's
// default, and f32) and dequant_matmul_int4 (m = 1, block 64, asymmetric), at the Llama-7B
// layer shapes 4096x4096, 4096x11008 and 11008x4096 and the all-MiniLM-L6-v2 shapes
// (384x384, 384x1536, 1536x384; in x out), both kernels run on the PTX emulator on the same
// random inputs (bench::compare_with_expert: quantc's output equal to the interpreter's bit
// for bit, the expert's within the stated f32/f64 accumulation bound) and the table puts
// their counters and the GPU cost model's estimate (runtime/backends/emulator/CostModel.h,
// the model of `quantc profile`) side by side. A second table profiles every batch-1 op
// (seed and fast schedules) at the same shapes against the batch-1 targets: modeled time
// within 1.15x of the memory-bound time, >= 95% weight-load sector efficiency, <= 0.35
// issued warp instructions per packed-weight byte.
//
// A plain executable, not Google Benchmark: what is measured is one deterministic
// emulated launch per kernel (instruction and memory counters, a modeled GPU time), and
// Google Benchmark's wall-clock timing would time the CPU emulator, not the kernel.
//
//   build/bench/kernels_bench [--markdown FILE] [--filter TEXT] [--profile] [--gpu-launches FILE]
//     --markdown FILE  also write the Markdown report (scripts/bench_kernels.sh writes
//                      bench/results/kernels.md)
//     --gpu-launches FILE  only write, per (op, shape), the quantc spec and the expert
//                      kernel's launch as one JSON line (bench/gpu/launches.jsonl, which
//                      bench/gpu/run.sh times on a GPU with `quantc run --backend cuda
//                      --time`); runs nothing
//     --filter TEXT    only the cases whose "op shape" label contains TEXT
//     --profile        also print the counters and the model's limit for both kernels of
//                      each case
// Takes a few minutes on 2 cores (the interpreter and the emulated seed kernels of the
// large layers dominate); prints each case's wall time and the total.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <variant>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "ExpertKernels.h"
#include "ir/ops/Registry.h"
#include "lower/driver/Compiler.h"
#include "runtime/backends/emulator/CostModel.h"
#include "runtime/backends/emulator/Profile.h"

namespace {

using namespace quantc;
using runtime::emulator::DeviceSpec;
using runtime::emulator::LaunchCounters;
using runtime::emulator::LaunchEstimate;

/// The one call into the time model: the cost model's estimate of one launch of `run` on
/// `device`, from its emulator counters and its resources (threads per CTA, CTAs, ptxas's
/// registers for sm_90, static + dynamic shared memory). Registers are
/// runtime::emulator::kAssumedRegisters where ptxas was absent (bench::KernelResources
/// then holds 0).
LaunchEstimate modeled(const bench::KernelRun& run, const DeviceSpec& device) {
  runtime::emulator::KernelResources resources;
  resources.threads_per_cta = run.resources.threads_per_cta;
  resources.ctas = run.resources.ctas;
  resources.registers_per_thread =
      run.resources.registers > 0 ? std::uint32_t(run.resources.registers) : runtime::emulator::kAssumedRegisters;
  const std::uint32_t static_shared_bytes = std::uint32_t(run.resources.static_shared_bytes);
  resources.shared_bytes_per_cta =
      static_shared_bytes + run.resources.dynamic_shared.on(device, resources.ctas, resources.threads_per_cta,
                                                            static_shared_bytes, resources.registers_per_thread);
  return runtime::emulator::estimate_launch(run.counters, resources, device);
}

struct Case {
  std::string op;
  ir::ops::OpArgs args;
};

/// in x out (K x N): the Llama-7B projections (attention 4096x4096, MLP up 4096x11008 and
/// down 11008x4096), then all-MiniLM-L6-v2's (attention 384x384, MLP 384x1536, 1536x384).
const std::vector<std::pair<std::uint32_t, std::uint32_t>> kShapes = {
    {4096, 4096}, {4096, 11008}, {11008, 4096}, {384, 384}, {384, 1536}, {1536, 384}};

std::vector<Case> cases() {
  std::vector<Case> result;
  for (const std::string& op : bench::expert_ops()) {
    for (const auto& [in, out] : kShapes) result.push_back({op, bench::batch1_args(op, in, out)});
    if (op == "linear_4bit_affine_grouped" || op == "dequant_matmul_int4") {  // ops with a fast schedule too
      for (const auto& [in, out] : kShapes) {
        ir::ops::OpArgs args = bench::batch1_args(op, in, out);
        args.set("schedule", std::string("fast"));
        result.push_back({op, args});
      }
    }
    if (op == "nf4_gemm") {
      for (const auto& [in, out] : kShapes) {
        ir::ops::OpArgs args = bench::batch1_args(op, in, out);
        args.set("accumulate", std::string("f32"));
        result.push_back({op, args});
      }
      for (const char* accumulate : {"f64", "f32"}) {  // the fast batch-1 schedule (ir/ops/Nf4Gemm.h)
        for (const auto& [in, out] : kShapes) {
          ir::ops::OpArgs args = bench::batch1_args(op, in, out);
          args.set("accumulate", std::string(accumulate));
          args.set("schedule", std::string("fast"));
          result.push_back({op, args});
        }
      }
    }
  }
  return result;
}

// ---- every batch-1 op against the targets -------------------------------------------

/// One batch-1 op at one in x out shape: its spec, the buffer holding the packed weights
/// (loaded by the GEMVs and dequantizers, stored by the quantizers) and their bytes.
struct TargetCase {
  std::string op, label, weight_buffer;
  ir::ops::OpArgs args;
  double packed_bytes = 0;
};

std::vector<TargetCase> target_cases() {
  using ir::ops::OpArgs;
  std::vector<TargetCase> result;
  for (const auto& [in, out] : kShapes) {
    const double nibble_bytes = double(in) * out / 2, byte_bytes = double(in) * out;
    const std::uint32_t elements = in * out;
    auto add = [&](const char* op, const std::string& variant, OpArgs args, const char* weight, double bytes) {
      result.push_back({op, fmt::format("{}x{}{}", in, out, variant), weight, std::move(args), bytes});
    };
    auto matmul = [&](std::initializer_list<std::pair<const char*, std::uint32_t>> extra) {
      OpArgs args = OpArgs::dims({{"m", 1}, {"k", in}, {"n", out}});
      for (const auto& [name, value] : extra) args.set(name, value);
      return args;
    };
    add("linear_4bit", "", OpArgs::dims({{"k", in}, {"n", out}}), "w", nibble_bytes);
    add("linear_4bit_affine_grouped", " g128", OpArgs::dims({{"k", in}, {"n", out}, {"group_size", 128}}),
        "w", nibble_bytes);
    add("int4_matvec_f32_scaled", "", OpArgs::dims({{"n", out}, {"k", in}}), "weights", nibble_bytes);
    add("int4_batched_matvec_f32_scaled", " batch 1", OpArgs::dims({{"m", 1}, {"n", out}, {"k", in}}),
        "weights", nibble_bytes);
    for (const char* op : {"dequant_matmul_int8", "dequant_matmul_int4"}) {
      OpArgs args = matmul({{"block_size", 64}});
      args.set("asymmetric", true);
      add(op, " b64 asym", args, "w", std::string(op) == "dequant_matmul_int8" ? byte_bytes : nibble_bytes);
    }
    OpArgs fp8 = matmul({});
    fp8.set("format", std::string("e4m3"));
    add("dequant_matmul_fp8", " e4m3", fp8, "w", byte_bytes);
    add("dequant_matmul_nvfp4", "", matmul({}), "w", nibble_bytes);
    for (const char* accumulate : {"f64", "f32"}) {
      OpArgs args = matmul({});
      args.set("accumulate", std::string(accumulate));
      add("nf4_gemm", std::string(" ") + accumulate, args, "b_nf4", nibble_bytes);
    }
    add("nf4_gemm_transpose", "", OpArgs::dims({{"m", 1}, {"n", in}, {"k", out}}), "b_nf4", nibble_bytes);
    OpArgs dequantize_int4 = OpArgs::dims({{"n", elements}, {"group_size", 128}});
    dequantize_int4.set("symmetric", false);
    add("dequantize_int4", " g128", dequantize_int4, "packed", nibble_bytes);
    add("dequantize_nf4", " g64", OpArgs::dims({{"n", elements}, {"group_size", 64}}), "packed", nibble_bytes);
    OpArgs quantize_int4 = OpArgs::dims({{"n", elements}, {"group_size", 64}});
    quantize_int4.set("symmetric", false);
    add("quantize_int4", " g64", quantize_int4, "packed", nibble_bytes);
    add("quantize_nf4", " g64", OpArgs::dims({{"n", elements}, {"group_size", 64}}), "packed", nibble_bytes);
  }
  return result;
}

/// A batch-1 op's row of the target table.
struct TargetRow {
  TargetCase spec;
  std::string schedule;
  runtime::emulator::KernelProfile profile;
};

/// `program` compiled for sm_90 (-O2), emulated and modeled on the H100 SXM.
runtime::emulator::KernelProfile profile_on_h100(const ir::Program& program) {
  const lower::CompiledKernel compiled = lower::compile(program, lower::CompileOptions(ptx::Target{90}));
  runtime::emulator::ProfileOptions options;
  options.devices = {"h100_sxm"};
  return runtime::emulator::profile_program(compiled.program, compiled.ptx, 1, options);
}

/// Op `op` at `args`, profiled as above.
runtime::emulator::KernelProfile profile_on_h100(const std::string& op, const ir::ops::OpArgs& args) {
  return profile_on_h100(ir::ops::OpRegistry::builtin().find(op)->build(args));
}

TargetRow profile_target(const TargetCase& c, const std::string& schedule) {
  ir::ops::OpArgs args = c.args;
  args.set("schedule", schedule);
  return {c, schedule, profile_on_h100(c.op, args)};
}

std::string target_table(const std::vector<TargetRow>& rows) {
  std::string text;
  text += "\n## Every batch-1 op against the targets (H100 SXM model)\n\n";
  text += "The targets at the Llama shapes: modeled time ≤ 1.15 × memory-bound (≥ 87% of HBM), weight-load sector "
          "efficiency ≥ 95% (requested ÷ fetched bytes of the packed-weight buffer's requests: loads for the GEMVs "
          "and dequantizers, stores for the quantizers), ≤ 0.35 issued warp instructions (PTX, moves excluded: "
          "ptxas removes them) per packed-weight byte. The quantizers and dequantizers also move 4 bytes of f32 "
          "per element (8 per packed byte), which is what bounds them: their instructions per byte of all DRAM "
          "traffic are in the last column. The MiniLM shapes are too small to fill the GPU; their limit is "
          "reported. ✓/✗: the three targets in order.\n\n";
  text += "| op | shape | schedule | modeled µs | memory-bound µs | % of HBM | limit | weight sector eff. | "
          "issued / packed byte | issued / DRAM byte | CTAs | regs | targets |\n";
  text += "|---|---|---|--:|--:|--:|---|--:|--:|--:|--:|--:|---|\n";
  for (const TargetRow& row : rows) {
    const runtime::emulator::KernelProfile& p = row.profile;
    const runtime::emulator::LaunchEstimate& e = *p.devices.at(0).estimate;
    const LaunchCounters& c = p.counters;
    double efficiency = 0;
    for (const runtime::emulator::BufferTraffic& buffer : c.buffers) {
      if (buffer.name != row.spec.weight_buffer) continue;
      efficiency = buffer.load_requests ? buffer.load_sector_efficiency() : buffer.store_sector_efficiency();
    }
    const double issued = double(c.warp_instructions - c.pipe(ptx::Pipe::Move));
    const double per_packed = issued / row.spec.packed_bytes;
    const bool llama = row.spec.label.rfind("384", 0) != 0 && row.spec.label.rfind("1536", 0) != 0;
    const bool bandwidth = e.seconds <= 1.15 * e.memory_bound_seconds, sectors = efficiency >= 0.95,
               instructions = per_packed <= 0.35;
    const std::string verdict = !llama || row.schedule != "fast"
                                    ? std::string("")
                                    : fmt::format("{} {} {}", bandwidth ? "✓" : "✗", sectors ? "✓" : "✗",
                                                  instructions ? "✓" : "✗");
    text += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.0f}% | {} | {:.0f}% | {:.3f} | {:.3f} | {} | {} | {} |\n",
                        row.spec.op, row.spec.label, row.schedule, e.seconds * 1e6, e.memory_bound_seconds * 1e6,
                        100.0 * e.hbm_fraction(), e.limit_key(), 100.0 * efficiency, per_packed,
                        issued / e.dram_bytes, c.ctas, p.registers ? std::to_string(*p.registers) : "?", verdict);
  }
  return text;
}

// ---- small batches on the tensor cores ------------------------------------------------

/// One small-batch row: a tensor-core op (f16 activations, schedule fast: the tensor-core
/// GEMM of ir/ops/TensorGemm.h) at in x out and m.
struct BatchRow {
  std::string op;
  std::uint32_t in = 0, out = 0, m = 0;
  runtime::emulator::KernelProfile profile;
  /// The op's own bytes: its inputs and outputs once each (no scratch), what any kernel of
  /// the op must move at the least.
  std::uint64_t op_bytes = 0;
};

const std::vector<std::uint32_t> kBatches = {2, 4, 8, 16, 32, 64};
/// The ops of the small-batch table: dequant_matmul_int4 with block 128 and zero points,
/// dequant_matmul_nvfp4 (16-row E4M3 scales, an f32 global scale), dequant_matmul_fp8
/// (E4M3, a scale per column), nf4_gemm (f32 accumulation, 64-row blocks) and
/// linear_4bit_affine_grouped (GPTQ, group 128, in sorted order: no act-order), and the
/// same with act-order (" act_order": x read through the random perm of random_buffers).
const std::vector<const char*> kBatchOps = {"dequant_matmul_int4", "dequant_matmul_nvfp4", "dequant_matmul_fp8",
                                            "nf4_gemm", "linear_4bit_affine_grouped",
                                            "linear_4bit_affine_grouped act_order"};
constexpr std::string_view kActOrderSuffix = " act_order";

BatchRow profile_batch(const std::string& row_op, std::uint32_t in, std::uint32_t out, std::uint32_t m) {
  const bool act_order = row_op.ends_with(kActOrderSuffix);
  const std::string op = act_order ? row_op.substr(0, row_op.size() - kActOrderSuffix.size()) : row_op;
  ir::ops::OpArgs args = ir::ops::OpArgs::dims({{"m", m}, {"k", in}, {"n", out}});
  if (act_order) args.set("act_order", true);
  if (op == "dequant_matmul_int4") {
    args.set("block_size", 128u);
    args.set("asymmetric", true);
  }
  if (op == "dequant_matmul_fp8") args.set("format", std::string("e4m3"));
  if (op == "nf4_gemm") args.set("accumulate", std::string("f32"));
  if (op == "linear_4bit_affine_grouped") args.set("group_size", 128u);
  args.set("activation", std::string("f16"));
  args.set("schedule", std::string("fast"));
  const ir::Program program = ir::ops::OpRegistry::builtin().find(op)->build(args);
  std::uint64_t op_bytes = 0;
  for (const ir::BufferDecl& buffer : program.buffers) {
    if (!buffer.is_scratch()) op_bytes += buffer.byte_size();
  }
  return {row_op, in, out, m, profile_on_h100(program), op_bytes};
}

std::string batch_table(const std::vector<BatchRow>& rows, const DeviceSpec& device) {
  std::string text;
  text += "\n## Small batches on the tensor cores (H100 SXM model)\n\n";
  text += "`dequant_matmul_int4` (block 128 with zero points), `dequant_matmul_nvfp4` (E4M3 scales per 16 "
          "rows, f32 global scale), `dequant_matmul_fp8` (E4M3, f32 scale per column), `nf4_gemm` (`\"accumulate\": \"f32\"`, "
          "f32 scales per 64 rows) and `linear_4bit_affine_grouped` (GPTQ's layout, group 128, u32 zero points, a bias; "
          "no act-order; `linear_4bit_affine_grouped act_order`: the same with GPTQ act-order, x gathered through a "
          "random perm) with f16 activations, `\"schedule\": \"fast\"`: the tensor-core GEMM of `ir/ops/TensorGemm.h` (m > 1). Tensor-bound µs = the `mma` count on the tensor "
          "pipe (2048 multiply-adds each at 1024 per SM and clock); FP16 ideal µs = the bytes of an FP16 GEMM "
          "(k·n·2 weight bytes, plus x and out) at the sustained DRAM bandwidth, the time the model gives any "
          "kernel that only moves those bytes (modeled µs use the same rule; at the peak bandwidth the ideal would "
          "be 10.4% shorter). Targets: modeled µs ≤ 1.15 × the larger of memory- and tensor-bound (memory-bound "
          "counts the kernel's own DRAM bytes, split-K partial sums included), and ≥ 3.5× over the FP16 ideal for "
          "m ≤ 16 and the 4-bit formats; ✓/✗ in that order. Ceiling: the speed-up over the FP16 ideal of a kernel "
          "that moves only the op's own bytes (its inputs and outputs once, at the same bandwidth): the formats' "
          "sidecars (f32 scales and zero points per 128 rows, E4M3 scales per 16, f32 scales per 64) cost half a "
          "bit per weight, so no kernel of these ops passes 3.5× where the ceiling is below it. Shared B: a CTA's "
          "`.shared` and the shared memory it reserves at launch to even out the waves.\n\n";
  text += "| op | shape | m | modeled µs | memory-bound µs | tensor-bound µs | % of the bound | FP16 ideal µs | speed-up over "
          "FP16 ideal | ceiling | limit | CTAs | regs | shared B | targets |\n";
  text += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|\n";
  for (const BatchRow& row : rows) {
    const runtime::emulator::LaunchEstimate& e = *row.profile.devices.at(0).estimate;
    const double tensor = e.pipe_seconds[static_cast<std::size_t>(ptx::Pipe::Tensor)];
    const double bound = std::max(e.memory_bound_seconds, tensor);
    const double sustained = device.dram_bandwidth * device.sustained_dram_fraction;
    const double fp16 = (2.0 * row.in * row.out + 2.0 * row.m * (row.in + row.out)) / sustained;
    const double ceiling = fp16 / (double(row.op_bytes) / sustained);
    auto mark = [](bool met) { return met ? "✓" : "✗"; };
    // The speed-up target is the 4-bit formats' (FP8's weights are half FP16's bytes: 2x at most).
    const bool four_bit = row.op != "dequant_matmul_fp8";
    const std::string targets = fmt::format("{}{}", mark(e.seconds <= 1.15 * bound),
                                            row.m <= 16 && four_bit ? fmt::format(" {}", mark(fp16 / e.seconds >= 3.5)) : "");
    text += fmt::format("| {} | {}x{} | {} | {:.2f} | {:.2f} | {:.2f} | {:.0f}% | {:.2f} | {:.2f}× | {:.2f}× | {} | {} | {} | {} | {} |\n",
                        row.op, row.in, row.out, row.m, e.seconds * 1e6, e.memory_bound_seconds * 1e6, tensor * 1e6,
                        100.0 * bound / e.seconds, fp16 * 1e6, fp16 / e.seconds, ceiling, e.limit_key(), row.profile.counters.ctas,
                        row.profile.registers ? std::to_string(*row.profile.registers) : "?",
                        row.profile.devices.at(0).resources.shared_bytes_per_cta, targets);
  }
  return text;
}

std::string markdown(const std::vector<bench::Comparison>& comparisons, const std::vector<TargetRow>& targets,
                     const std::vector<BatchRow>& batches, const DeviceSpec& device, double total_seconds) {
  std::string text;
  text += "# quantc vs expert CUDA kernels at batch 1 (PTX emulator counters, GPU cost model)\n\n";
  text += "Generated by `scripts/bench_kernels.sh` (`build/bench/kernels_bench`); do not edit by hand.\n\n";
  text += fmt::format(
      "Both kernels of each row pair run on the PTX emulator on the same random inputs: quantc's (`-O2`, sm_90; "
      "schedule `seed`, the op's seed-faithful program, and for linear_4bit_affine_grouped, nf4_gemm and "
      "dequant_matmul_int4 also `fast`, `ir/ops/QuantizedGemv.h`, `ir/ops/Nf4Gemm.h`, `ir/ops/DequantMatmul.h`) and a hand-written expert CUDA C++ kernel (`bench/experts/*.cu`, "
      "`nvcc -ptx -arch=sm_90 -O3`). quantc's output equals the reference interpreter's bit for bit; the "
      "expert's is within the bound in `bench/experts/ExpertKernels.h` (f32: 2·γ(K+8)·Σ|terms|; nf4 f64: one "
      "f32 rounding). Shapes are in × out (K × N); g/b = group/block size, asym = with zero points, f64/f32 = "
      "nf4_gemm's accumulation.\n\n"
      "Modeled time: the cost model of `quantc profile` (`runtime/backends/emulator/CostModel.h`, README "
      "\"quantc profile\") on {} ({} SMs, {:.2f} GHz, {:.2f} TB/s): per wave of CTAs the largest of per-pipe "
      "issue, DRAM bandwidth and load latency (Little's law), with occupancy from ptxas's registers, shared "
      "memory and threads per CTA — an estimate for comparing kernels, not a measurement. Memory-bound µs = "
      "unique 32-byte sectors × 32 ÷ bandwidth; % of HBM = memory-bound ÷ modeled time. Limit: the one that "
      "sets the modeled time (`dram_bandwidth`, `latency`, `issue_<pipe>`, `issue_dispatch`, `ctas` = too few "
      "CTAs to fill the SMs). Warp instructions are PTX, not SASS.\n\n",
      device.name, device.sms, device.clock_hz / 1e9, device.dram_bandwidth / 1e12);

  text += "## Summary: quantc ÷ expert, modeled on H100 SXM\n\n";
  text += "| op | shape | quantc µs | expert µs | quantc ÷ expert | quantc % of HBM | expert % of HBM | quantc limit | expert limit |\n";
  text += "|---|---|--:|--:|--:|--:|--:|---|---|\n";
  for (const bench::Comparison& comparison : comparisons) {
    const LaunchEstimate quantc = modeled(comparison.quantc, device), expert = modeled(comparison.expert, device);
    text += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f}× | {:.0f}% | {:.0f}% | {} | {} |\n", comparison.op,
                        bench::case_label(comparison.op, comparison.args), quantc.seconds * 1e6, expert.seconds * 1e6,
                        quantc.seconds / expert.seconds, 100.0 * quantc.hbm_fraction(), 100.0 * expert.hbm_fraction(),
                        quantc.limit_key(), expert.limit_key());
  }

  text += "\n## Per kernel\n\n";
  text += "| op | shape | schedule | warp instr | warp instr / weight byte | sectors / load request | CTAs | "
          "threads / CTA | regs | shared B | unique bytes | memory-bound µs | modeled µs (H100 SXM) | % of HBM | "
          "limit | quantc ÷ expert |\n";
  text += "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n";
  for (const bench::Comparison& comparison : comparisons) {
    const double expert_seconds = modeled(comparison.expert, device).seconds;
    for (const bench::KernelRun* run : {&comparison.quantc, &comparison.expert}) {
      const LaunchEstimate estimate = modeled(*run, device);
      const LaunchCounters& c = run->counters;
      text += fmt::format(
          "| {} | {} | {} | {} | {:.3f} | {:.2f} | {} | {} | {} | {} | {} | {:.2f} | {:.2f} | {:.0f}% | {} | {} |\n",
          comparison.op, bench::case_label(comparison.op, comparison.args),
          run->name != "quantc"               ? std::string("expert")
          : comparison.args.has("schedule") ? comparison.args.choice("schedule")
                                            : std::string("seed"),
          c.warp_instructions, double(c.warp_instructions) / double(comparison.packed_weight_bytes),
          c.sectors_per_load_request(), run->resources.ctas, run->resources.threads_per_cta, run->resources.registers,
          run->resources.static_shared_bytes + run->resources.dynamic_shared.bytes,
          c.unique_global_bytes_read + c.unique_global_bytes_written, estimate.memory_bound_seconds * 1e6,
          estimate.seconds * 1e6, 100.0 * estimate.hbm_fraction(), estimate.limit_key(),
          run->name == "quantc" ? fmt::format("{:.2f}×", estimate.seconds / expert_seconds) : std::string("1.00×"));
    }
  }

  text += "\n## Other modeled devices: quantc ÷ expert (and expert % of HBM)\n\n";
  text += "| op | shape |";
  std::string rule = "|---|---|";
  for (const DeviceSpec& other : runtime::emulator::devices()) {
    text += fmt::format(" {} |", other.key);
    rule += "--:|";
  }
  text += "\n" + rule + "\n";
  for (const bench::Comparison& comparison : comparisons) {
    text += fmt::format("| {} | {} |", comparison.op, bench::case_label(comparison.op, comparison.args));
    for (const DeviceSpec& other : runtime::emulator::devices()) {
      const LaunchEstimate quantc = modeled(comparison.quantc, other), expert = modeled(comparison.expert, other);
      text += fmt::format(" {:.2f}× ({:.0f}%) |", quantc.seconds / expert.seconds, 100.0 * expert.hbm_fraction());
    }
    text += "\n";
  }

  text += "\n## Expert accuracy\n\n";
  text += "quantc's outputs are bit-identical to the interpreter's in every row. The expert's error columns: the "
          "largest |expert − interpreter| over the outputs divided by the checked bound, and divided by 2^-24·M "
          "(M = Σ|terms| of that output: the error in f32 roundings of the output's magnitude).\n\n";
  text += "| op | shape | quantc ÷ expert warp instructions | expert error ÷ bound | expert error ÷ (2^-24·M) | "
          "expert bit-identical |\n";
  text += "|---|---|--:|--:|--:|--:|\n";
  for (const bench::Comparison& comparison : comparisons) {
    const double instructions =
        double(comparison.quantc.counters.warp_instructions) / double(comparison.expert.counters.warp_instructions);
    const bench::AccuracyCheck& accuracy = comparison.expert.accuracy;
    text += fmt::format("| {} | {} | {:.2f}× | {:.2g} | {:.2g} | {} / {} |\n", comparison.op,
                        bench::case_label(comparison.op, comparison.args), instructions, accuracy.max_bound_ratio,
                        accuracy.max_error_in_units, accuracy.bit_identical, accuracy.outputs);
  }
  text += target_table(targets);
  text += batch_table(batches, device);
  text += fmt::format("\nBenchmark run time: {:.0f} s on this machine (interpreter, emulator and ptxas included).\n",
                      total_seconds);
  return text;
}

/// One JSON line per (op, shape) of `cases`: the spec's op and parameters (schedule left to
/// the reader) and the expert's launch as `quantc run FILE.ptx` flags: buffers zero-filled
/// as NAME:DTYPE:COUNT in binding order, then the scalars.
std::string gpu_launches(const std::vector<Case>& cases) {
  std::string text;
  std::set<std::string> seen;
  for (const Case& c : cases) {
    // One line per shape: the reader times every schedule of the spec.
    ir::ops::OpArgs args;
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : c.args.values()) {
      if (name == "schedule") continue;
      args.set(name, value);
      std::visit([&, name = name](const auto& v) { params[name] = v; }, value);
    }
    const std::string label = c.op + " " + bench::case_label(c.op, args);
    if (!seen.insert(label).second) continue;
    const ir::Program program = ir::ops::OpRegistry::builtin().find(c.op)->build(args);
    const bench::ExpertLaunch expert = bench::plan_expert_launch(c.op, args, program);
    nlohmann::json arguments = nlohmann::json::array();
    for (const runtime::PtxArgument& argument : expert.launch.arguments) {
      if (argument.is_buffer()) {
        const ir::BufferDecl& decl = program.buffers.at(argument.buffer);
        arguments.push_back(fmt::format("{}:{}:{}", decl.name, ir::to_string(decl.element), decl.count));
      } else {
        arguments.push_back(fmt::format("u{}:{}", argument.bytes * 8, argument.bits));
      }
    }
    const nlohmann::json line = {
        {"label", label},
        {"spec", {{"op", c.op}, {"params", params}}},
        {"expert",
         {{"source", expert.source},
          {"entry", expert.launch.entry},
          {"grid", expert.launch.grid},
          {"block", expert.launch.block},
          {"shared_bytes", expert.launch.dynamic_shared_bytes},
          {"args", arguments}}}};
    text += line.dump() + "\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string markdown_path, filter, launches_path;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--profile") {
      profile = true;
    } else if ((argument == "--markdown" || argument == "--filter" || argument == "--gpu-launches") && i + 1 < argc) {
      (argument == "--markdown" ? markdown_path : argument == "--filter" ? filter : launches_path) = argv[++i];
    } else {
      std::fprintf(stderr,
                   "error: unknown argument \"%s\"\nusage: kernels_bench [--markdown FILE] [--filter TEXT] [--profile] "
                   "[--gpu-launches FILE]\n",
                   argument.c_str());
      return 1;
    }
  }
  if (!launches_path.empty()) {
    std::vector<Case> selected;
    for (const Case& c : cases()) {
      if (filter.empty() || (c.op + " " + bench::case_label(c.op, c.args)).find(filter) != std::string::npos) {
        selected.push_back(c);
      }
    }
    try {
      std::ofstream stream(launches_path);
      stream << gpu_launches(selected);
      if (!stream) throw std::runtime_error("cannot write " + launches_path);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "error: %s\n", error.what());
      return 1;
    }
    return 0;
  }
  const DeviceSpec& device = runtime::emulator::find_device("h100_sxm");
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<bench::Comparison> comparisons;
  try {
    for (const Case& c : cases()) {
      const std::string label = c.op + " " + bench::case_label(c.op, c.args);
      if (!filter.empty() && label.find(filter) == std::string::npos) continue;
      const auto case_start = Clock::now();
      comparisons.push_back(bench::compare_with_expert(c.op, c.args));
      const bench::Comparison& done = comparisons.back();
      const double seconds = std::chrono::duration<double>(Clock::now() - case_start).count();
      const LaunchEstimate quantc = modeled(done.quantc, device), expert = modeled(done.expert, device);
      std::cout << fmt::format(
          "{:<40} quantc {:>10} warp instr {:>8.2f} us {:<16} | expert {:>9} warp instr {:>7.2f} us {:<16} | {:5.2f}x  "
          "({:.1f} s)\n",
          label, done.quantc.counters.warp_instructions, quantc.seconds * 1e6, quantc.limit_key(),
          done.expert.counters.warp_instructions, expert.seconds * 1e6, expert.limit_key(),
          quantc.seconds / expert.seconds, seconds);
      if (profile) {
        for (const bench::KernelRun* run : {&done.quantc, &done.expert}) {
          const LaunchEstimate estimate = modeled(*run, device);
          std::cout << runtime::emulator::format_counters(run->name + " " + run->entry, "sm_90", run->counters,
                                                          run->accuracy.outputs)
                    << fmt::format("  modeled on {}: {:.3f} us, limit: {}; {:.1f}% of peak DRAM bandwidth\n",
                                   device.key, estimate.seconds * 1e6, estimate.limit_description(),
                                   100.0 * estimate.hbm_fraction());
        }
      }
      std::cout.flush();
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  std::vector<TargetRow> targets;
  try {
    for (const TargetCase& c : target_cases()) {
      const std::string label = c.op + " " + c.label;
      if (!filter.empty() && label.find(filter) == std::string::npos) continue;
      for (const char* schedule : {"seed", "fast"}) {
        const auto case_start = Clock::now();
        targets.push_back(profile_target(c, schedule));
        const runtime::emulator::LaunchEstimate& e = *targets.back().profile.devices.at(0).estimate;
        std::cout << fmt::format("{:<52} {:<5} {:>8.2f} us {:>5.1f}% of HBM {:<16} ({:.1f} s)\n", label, schedule,
                                 e.seconds * 1e6, 100.0 * e.hbm_fraction(), e.limit_key(),
                                 std::chrono::duration<double>(Clock::now() - case_start).count());
        std::cout.flush();
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  std::vector<BatchRow> batches;
  try {
    for (const char* op : kBatchOps) {
      for (const auto& [in, out] : kShapes) {
        if (in < 4096 && out < 4096) continue;  // the Llama shapes
        for (std::uint32_t m : kBatches) {
          const std::string label = fmt::format("{} {}x{} m{} tensor", op, in, out, m);
          if (!filter.empty() && label.find(filter) == std::string::npos) continue;
          const auto case_start = Clock::now();
          batches.push_back(profile_batch(op, in, out, m));
          const runtime::emulator::LaunchEstimate& e = *batches.back().profile.devices.at(0).estimate;
          std::cout << fmt::format("{:<52} {:>8.2f} us {:<16} ({:.1f} s)\n", label, e.seconds * 1e6, e.limit_key(),
                                   std::chrono::duration<double>(Clock::now() - case_start).count());
          std::cout.flush();
        }
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("total {:.1f} s\n", total);
  if (!markdown_path.empty()) {
    std::ofstream stream(markdown_path);
    stream << markdown(comparisons, targets, batches, device, total);
    if (!stream) {
      std::fprintf(stderr, "error: cannot write %s\n", markdown_path.c_str());
      return 1;
    }
  }
  return 0;
}
