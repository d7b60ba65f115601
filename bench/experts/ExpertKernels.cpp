#include "ExpertKernels.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "ir/ops/Quantize.h"
#include "lower/driver/Compiler.h"
#include "lower/driver/Hash.h"
#include "ptx/Ptxas.h"
#include "ptx/Target.h"
#include "runtime/backends/emulator/Emulator.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/Interpreter.h"

namespace quantc::bench {
namespace {

constexpr char kAffine[] = "linear_4bit_affine_grouped";
constexpr char kNf4[] = "nf4_gemm";
constexpr char kDequant[] = "dequant_matmul_int4";
constexpr std::uint32_t kStreamingMultiprocessors = 132;  // H100 SXM / H200
constexpr std::uint32_t kMaxThreadsPerCta = 256;          // the kernels' __launch_bounds__
constexpr std::uint64_t kMaxSharedBytes = 227 * 1024;     // sm_90 dynamic shared memory per CTA (opt-in)

std::uint32_t log2_exact(std::uint32_t value) { return static_cast<std::uint32_t>(std::countr_zero(value)); }

std::uint32_t floor_pow2(std::uint32_t value) { return value == 0 ? 1 : std::bit_floor(value); }

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>((std::uint64_t{a} + b - 1) / b);
}

/// Lanes side by side on one row (each loading 16 bytes = `columns_per_lane` columns): the
/// widest row that still gives at least one CTA per SM (longer contiguous segments, fewer
/// CTAs to stage x for), else 2 lanes (whole 32-byte sectors, the most CTAs).
std::uint32_t lanes_for_sms(std::uint32_t columns, std::uint32_t columns_per_lane) {
  for (std::uint32_t lanes : {8u, 4u, 2u}) {
    if (ceil_div(columns, columns_per_lane * lanes) >= kStreamingMultiprocessors) return lanes;
  }
  return 2;
}

/// How a CTA splits the reduction: row slots of `steps_per_slot` consecutive steps (k-words
/// or rows) each, `lanes` lanes per row slot, `threads` threads.
struct Tiling {
  std::uint32_t lanes = 0, steps_per_slot = 0, threads = 0;
};

/// Estimated warp instructions of one CTA thread of a row-slot kernel, read off the PTX
/// nvcc emits: `step_cost` per step (one 16-byte weight load and its 32 weights),
/// `group_cost` per group/block segment (sidecar loads, scale FMAs), `fixed_cost` per
/// thread (reduction, index math), `staging_cost` per 16 bytes of x a thread stages.
struct CostModel {
  double step_cost, group_cost, fixed_cost, staging_cost;
};

/// The steps per slot (a divisor or a multiple of the group length, so the slots of a warp
/// cross group boundaries together: no divergence) and the thread count, for `steps`
/// reduction steps in groups of `group` and `x_vectors` 16-byte vectors of x staged per CTA.
/// Two candidates: the most threads (memory-level parallelism for latency hiding) among
/// tilings that give every slot at least `min_steps` steps (amortising the per-slot
/// reduction and group setup), and the tiling with the fewest estimated warp instructions
/// per CTA; the first unless the second has as many threads (short reductions, where no
/// tiling reaches `min_steps` or a warp is all there is).
Tiling choose_tiling(std::uint32_t lanes, std::uint32_t steps, std::uint32_t group, std::uint32_t x_vectors,
                     std::uint32_t min_steps, const CostModel& cost) {
  std::vector<std::uint32_t> candidates = {steps};  // one slot: never divergent
  for (std::uint32_t d = 1; d <= std::min(group, steps); ++d) {
    if (group % d == 0) candidates.push_back(d);
  }
  for (std::uint64_t multiple = 2 * std::uint64_t{group}; multiple < std::uint64_t{steps} + group; multiple += group) {
    candidates.push_back(static_cast<std::uint32_t>(multiple));
  }
  Tiling parallel, cheapest;
  double parallel_cost = 0, cheapest_cost = 0;
  for (std::uint32_t per_slot : candidates) {
    const std::uint32_t slots = ceil_div(steps, per_slot);
    const std::uint32_t threads = ceil_div(lanes * slots, 32) * 32;
    if (threads > kMaxThreadsPerCta) continue;
    const double per_thread = per_slot * cost.step_cost + ceil_div(per_slot, group) * cost.group_cost +
                              cost.fixed_cost + ceil_div(x_vectors, threads) * cost.staging_cost;
    const double estimate = threads / 32.0 * per_thread;
    const Tiling tiling{lanes, per_slot, threads};
    if (cheapest.threads == 0 || estimate < cheapest_cost) {
      cheapest = tiling;
      cheapest_cost = estimate;
    }
    if (per_slot >= min_steps &&
        (parallel.threads == 0 || threads > parallel.threads || (threads == parallel.threads && estimate < parallel_cost))) {
      parallel = tiling;
      parallel_cost = estimate;
    }
  }
  return parallel.threads > cheapest.threads ? parallel : cheapest;
}

void check_shared(const std::string& op, std::uint64_t bytes, const std::string& what) {
  if (bytes > kMaxSharedBytes) {
    throw ExpertError(fmt::format("{} expert kernel: {} needs {} bytes of shared memory, over the {} bytes an sm_90 "
                                  "CTA can have; use a smaller reduction length",
                                  op, what, bytes, kMaxSharedBytes));
  }
}

void require_m1(const std::string& op, const ir::ops::OpArgs& args) {
  if (args.u32("m") != 1) {
    throw ExpertError(fmt::format("{} expert kernel: m={} is not supported; the expert baselines are batch-1 "
                                  "(matrix-vector) kernels, pass m=1",
                                  op, args.u32("m")));
  }
}

runtime::PtxArgument u32_argument(std::uint32_t value, const char* name) {
  return runtime::PtxArgument::of_scalar(value, 4, fmt::format("{}=u32:{}", name, value));
}

/// Buffer arguments 0..count-1: the op's buffers in binding order.
std::vector<runtime::PtxArgument> buffer_arguments(const ir::Program& program) {
  std::vector<runtime::PtxArgument> arguments;
  // The caller's buffers come first (scratch, which the expert kernels do not use, after).
  const std::size_t count = program.caller_buffers().size();
  for (std::size_t i = 0; i < count; ++i) arguments.push_back(runtime::PtxArgument::of_buffer(i));
  return arguments;
}

const ir::ops::OpInfo& op_info(const std::string& op) {
  const auto& ops = expert_ops();
  const ir::ops::OpInfo* info = ir::ops::OpRegistry::builtin().find(op);
  if (info == nullptr || std::find(ops.begin(), ops.end(), op) == ops.end()) {
    throw ExpertError(fmt::format("no expert kernel for op \"{}\"; expert baselines exist for {}", op,
                                  fmt::join(ops, ", ")));
  }
  return *info;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

// ---- correctness bounds --------------------------------------------------------------

constexpr double kUnitF32 = 0x1p-24;
constexpr double kUnitF64 = 0x1p-53;

double gamma(double n, double unit) { return n * unit / (1.0 - n * unit); }

template <class T>
std::vector<T> values(const runtime::BufferSet& buffers, const std::string& name) {
  return buffers.at(name).as<T>();
}

struct OutputBound {
  std::string output;               // the output buffer's name
  std::uint32_t count = 0;          // elements compared: [0, count)
  std::vector<double> magnitude;    // M_j
  std::uint32_t reduction = 0;      // K
  bool f64_accumulation = false;
  /// nf4_gemm's fast schedule (f64 mode): its 32-term f32 partial sums add up to 34*u*M
  /// against the seed's f64 sum (ir/ops/Nf4Gemm.h), so the f64 bound widens by that.
  bool fast_partial_sums = false;
};

/// M_j for linear_4bit_affine_grouped: |b_j| + sum_k |x_k| * |q - z| * |s|.
OutputBound affine_bound(const ir::ops::OpArgs& args, const runtime::BufferSet& buffers) {
  const std::uint32_t in = args.u32("k"), out = args.u32("n"), group = args.u32("group_size");
  const auto x = values<float>(buffers, "x");
  const auto w = values<std::uint32_t>(buffers, "w");
  const auto scale = values<float>(buffers, "scale");
  const auto zero = values<std::uint32_t>(buffers, "zero_point");
  const auto b = values<float>(buffers, "b");
  OutputBound bound{"out", out, std::vector<double>(out), in, false};
  for (std::uint32_t i = 0; i < out; ++i) {
    double sum = std::abs(double(b[i]));
    for (std::uint32_t k = 0; k < in; ++k) {
      const std::uint32_t q = (w[(k / 8) * out + i] >> (4 * (k % 8))) & 15u;
      const std::uint32_t sidecar = (k / group) * out + i;
      sum += std::abs(double(x[k])) * std::abs(double(q) - double(zero[sidecar])) * std::abs(double(scale[sidecar]));
    }
    bound.magnitude[i] = sum;
  }
  return bound;
}

/// M_j for nf4_gemm at m = 1: sum_k |a_k| * |NF4[code] * absmax| (the f32 product).
OutputBound nf4_bound(const ir::ops::OpArgs& args, const runtime::BufferSet& buffers) {
  const std::uint32_t n = args.u32("n"), k = args.u32("k");
  const bool f64 = !args.has("accumulate") || args.choice("accumulate") == "f64";
  const auto a = values<float>(buffers, "a");
  const auto codes = values<std::uint32_t>(buffers, "b_nf4");
  const auto scales = values<float>(buffers, "b_scales");
  std::array<float, 16> table{};
  const auto bits = ir::ops::nf4_lookup_table();
  for (std::size_t i = 0; i < 16; ++i) table[i] = std::bit_cast<float>(static_cast<std::uint32_t>(bits[i]));
  OutputBound bound{"c", n, std::vector<double>(n), k, f64};
  // The program is the fast one for "fast", and for "auto" (the default) at m == 1.
  bound.fast_partial_sums = f64 && args.u32("m") == 1 && (!args.has("schedule") || args.choice("schedule") != "seed");
  for (std::uint32_t column = 0; column < n; ++column) {
    double sum = 0;
    for (std::uint32_t r = 0; r < k; ++r) {
      const std::uint32_t word = codes[column * (k / 8) + r / 8];
      const float weight = table[(word >> (4 * (r % 8))) & 15u] * scales[column * (k / 64) + r / 64];
      sum += std::abs(double(a[r])) * std::abs(double(weight));
    }
    bound.magnitude[column] = sum;
  }
  return bound;
}

/// M_j for dequant_matmul_int4 at m = 1: sum_p |x_p| * (|q| + |z|) * |s|.
OutputBound dequant_bound(const ir::ops::OpArgs& args, const runtime::BufferSet& buffers) {
  const std::uint32_t k = args.u32("k"), n = args.u32("n"), block = args.u32("block_size");
  const bool asymmetric = args.boolean("asymmetric");
  const auto x = values<float>(buffers, "x");
  const auto w = values<std::uint8_t>(buffers, "w");
  const auto scales = values<float>(buffers, "scales");
  const std::vector<float> zero = asymmetric ? values<float>(buffers, "zero_points") : std::vector<float>();
  OutputBound bound{"out", n, std::vector<double>(n), k, false};
  for (std::uint32_t j = 0; j < n; ++j) {
    double sum = 0;
    for (std::uint32_t p = 0; p < k; ++p) {
      const std::uint64_t element = std::uint64_t{p} * n + j;
      const std::uint32_t q = (w[element / 2] >> (element % 2 == 0 ? 0 : 4)) & 15u;
      const std::uint64_t sidecar = std::uint64_t{p / block} * n + j;
      const double z = asymmetric ? std::abs(double(zero[sidecar])) : 0.0;
      sum += std::abs(double(x[p])) * (double(q) + z) * std::abs(double(scales[sidecar]));
    }
    bound.magnitude[j] = sum;
  }
  return bound;
}

OutputBound output_bound(const std::string& op, const ir::ops::OpArgs& args, const runtime::BufferSet& buffers) {
  if (op == kAffine) return affine_bound(args, buffers);
  if (op == kNf4) return nf4_bound(args, buffers);
  return dequant_bound(args, buffers);
}

std::string bound_formula(const OutputBound& bound) {
  if (bound.f64_accumulation && bound.fast_partial_sums) return "2^-23*|ref| + 34*u*M + 4*gamma64(K)*M + 2^-148";
  if (bound.f64_accumulation) return "2^-23*|ref| + 4*gamma64(K)*M + 2^-148";
  return "2*gamma(K+8)*M";
}

double bound_for(const OutputBound& bound, std::uint32_t j, double reference) {
  if (bound.f64_accumulation) {
    const double partial_sums = bound.fast_partial_sums ? 34.0 * kUnitF32 * bound.magnitude[j] : 0.0;
    return 0x1p-23 * std::abs(reference) + partial_sums + 4.0 * gamma(bound.reduction, kUnitF64) * bound.magnitude[j] +
           0x1p-148;
  }
  return 2.0 * gamma(bound.reduction + 8.0, kUnitF32) * bound.magnitude[j];
}

/// Compares `result` with `reference` over the bound's outputs; `exact` demands bit equality.
AccuracyCheck check_outputs(const std::vector<float>& result, const std::vector<float>& reference,
                            const OutputBound& bound, bool exact, const std::string& what) {
  AccuracyCheck check;
  check.outputs = bound.count;
  check.bound = exact ? "bit-identical" : bound_formula(bound);
  std::uint32_t worst = 0;
  for (std::uint32_t j = 0; j < bound.count; ++j) {
    const float r = reference[j], e = result[j];
    const bool identical = std::bit_cast<std::uint32_t>(r) == std::bit_cast<std::uint32_t>(e);
    if (identical) ++check.bit_identical;
    double ratio;
    if (identical || (std::isnan(r) && std::isnan(e))) {
      ratio = 0;
    } else if (exact || !std::isfinite(r) || !std::isfinite(e)) {
      ratio = std::numeric_limits<double>::infinity();
    } else {
      const double error = std::abs(double(e) - double(r));
      check.max_abs_error = std::max(check.max_abs_error, error);
      if (bound.magnitude[j] > 0) {
        check.max_error_in_units = std::max(check.max_error_in_units, error / (kUnitF32 * bound.magnitude[j]));
      }
      ratio = error / bound_for(bound, j, r);
    }
    if (ratio > check.max_bound_ratio) {
      check.max_bound_ratio = ratio;
      worst = j;
    }
  }
  if (!check.passed()) {
    throw ExpertError(fmt::format("{}: output {}[{}] = {} differs from the interpreter's {} beyond the bound {} = {} "
                                  "(M = {}, K = {})",
                                  what, bound.output, worst, result[worst], reference[worst], check.bound,
                                  exact ? 0.0 : bound_for(bound, worst, reference[worst]), bound.magnitude[worst],
                                  bound.reduction));
  }
  return check;
}

std::vector<float> output_values(const runtime::HostBuffer& buffer, std::uint32_t count) {
  std::vector<float> all = buffer.as<float>();
  all.resize(count);
  return all;
}

// ---- ptxas resources -----------------------------------------------------------------

void add_ptxas_resources(const std::string& ptx_text, const std::string& entry, const ExpertOptions& options,
                         KernelResources& resources) {
  if (!options.resources || !ptx::ptxas_available()) return;
  const ptx::PtxasResult result = ptx::run_ptxas(ptx_text, ptx::parse_target(options.arch));
  if (!result.success) throw ExpertError(fmt::format("ptxas rejected the PTX of {}:\n{}", entry, result.log));
  for (const ptx::FunctionResources& function : result.functions) {
    if (function.function != entry) continue;
    resources.registers = function.registers;
    resources.static_shared_bytes = function.static_shared_bytes;
  }
}

struct Prepared {
  ir::Program program;
  runtime::BufferSet inputs;     // random_buffers(program, seed)
  runtime::BufferSet reference;  // after the interpreter
  OutputBound bound;
  std::string label;
};

Prepared prepare(const std::string& op, const ir::ops::OpArgs& args, const ExpertOptions& options) {
  const ir::ops::OpInfo& info = op_info(op);
  Prepared prepared{info.build(args), {}, {}, {}, fmt::format("{} {}", op, case_label(op, args))};
  prepared.inputs = runtime::random_buffers(prepared.program, options.seed);
  prepared.reference = prepared.inputs;
  runtime::reference::RunOptions run_options;
  run_options.threads = options.interpreter_threads;
  // The -O2 program, as the reference backend runs it (contract_fma changes roundings, so
  // the emulated -O2 PTX equals the interpreter on this program, not on the unoptimized one).
  runtime::reference::run(lower::optimize(prepared.program, lower::PassOptions{}), prepared.reference, run_options);
  prepared.bound = output_bound(op, args, prepared.inputs);
  return prepared;
}

KernelRun launch_expert(const std::string& op, const ir::ops::OpArgs& args, const Prepared& prepared,
                        const ExpertOptions& options) {
  ExpertLaunch plan = plan_expert_launch(op, args, prepared.program);
  plan.launch.ptx = expert_ptx(plan.source, options);
  std::vector<runtime::NamedBuffer> buffers;
  for (const ir::BufferDecl& decl : prepared.program.buffers) buffers.push_back({decl.name, prepared.inputs.at(decl.name)});
  runtime::emulator::EmulatorBackend backend;
  runtime::RunReport report = backend.launch_ptx(plan.launch, buffers);

  KernelRun run;
  run.name = "expert";
  run.entry = plan.launch.entry;
  run.counters = *report.counters;
  run.resources.threads_per_cta = plan.launch.block[0] * plan.launch.block[1] * plan.launch.block[2];
  run.resources.ctas = run.counters.ctas;
  run.resources.dynamic_shared = plan.launch.dynamic_shared_bytes;
  add_ptxas_resources(plan.launch.ptx, run.entry, options, run.resources);
  const runtime::HostBuffer* output = nullptr;
  for (const runtime::NamedBuffer& buffer : buffers) {
    if (buffer.name == prepared.bound.output) output = &buffer.buffer;
  }
  run.accuracy = check_outputs(output_values(*output, prepared.bound.count),
                               output_values(prepared.reference.at(prepared.bound.output), prepared.bound.count),
                               prepared.bound, false, "expert " + prepared.label);
  return run;
}

}  // namespace

const std::vector<std::string>& expert_ops() {
  static const std::vector<std::string> ops = {kAffine, kNf4, kDequant};
  return ops;
}

ir::ops::OpArgs batch1_args(const std::string& op, std::uint32_t in_dim, std::uint32_t out_dim) {
  op_info(op);
  ir::ops::OpArgs args;
  if (op == kAffine) {
    args = ir::ops::OpArgs::dims({{"k", in_dim}, {"n", out_dim}, {"group_size", 64}});
    args.set("schedule", std::string("seed"));
  } else if (op == kNf4) {
    args = ir::ops::OpArgs::dims({{"m", 1}, {"n", out_dim}, {"k", in_dim}});
    args.set("schedule", std::string("seed"));
  } else {
    args = ir::ops::OpArgs::dims({{"m", 1}, {"k", in_dim}, {"n", out_dim}, {"block_size", 64}});
    args.set("asymmetric", true);
    args.set("schedule", std::string("seed"));  // at m = 1 "auto" would pick the fast schedule
  }
  return args;
}

std::string case_label(const std::string& op, const ir::ops::OpArgs& args) {
  if (op == kAffine) {
    const std::string schedule = args.has("schedule") ? " " + args.choice("schedule") : "";
    return fmt::format("{}x{} g{}{}", args.u32("k"), args.u32("n"), args.u32("group_size"), schedule);
  }
  if (op == kNf4) {
    const std::string accumulate = args.has("accumulate") ? args.choice("accumulate") : "f64";
    const std::string schedule = args.has("schedule") ? " " + args.choice("schedule") : "";
    return fmt::format("{}x{} {}{}", args.u32("k"), args.u32("n"), accumulate, schedule);
  }
  const std::string schedule = args.has("schedule") ? " " + args.choice("schedule") : "";
  return fmt::format("{}x{} b{} {}{}", args.u32("k"), args.u32("n"), args.u32("block_size"),
                     args.boolean("asymmetric") ? "asym" : "sym", schedule);
}

ExpertLaunch plan_expert_launch(const std::string& op, const ir::ops::OpArgs& args, const ir::Program& program) {
  op_info(op);
  ExpertLaunch plan;
  runtime::PtxLaunch& launch = plan.launch;
  launch.arguments = buffer_arguments(program);
  if (op == kAffine) {
    const std::uint32_t in = args.u32("k"), out = args.u32("n"), group = args.u32("group_size");
    if (group % 8 != 0) {
      throw ExpertError(fmt::format("{} expert kernel: group_size={} is not a multiple of 8; the kernel needs each "
                                    "packed word (8 consecutive k) inside one group",
                                    op, group));
    }
    if (out % 4 != 0) {
      throw ExpertError(fmt::format("{} expert kernel: out_dim={} is not a multiple of 4; the kernel loads 4 "
                                    "adjacent columns' words with one 16-byte load",
                                    op, out));
    }
    const std::uint32_t lanes = lanes_for_sms(out, 4);
    const Tiling tiling = choose_tiling(lanes, in / 8, group / 8, in / 4, 8, {105, 45, 60, 9});
    const std::uint32_t threads = tiling.threads;
    plan.source = "linear_4bit_affine_grouped.cu";
    launch.entry = "linear_4bit_affine_grouped_expert";
    launch.grid = {ceil_div(out, 4 * lanes), 1, 1};
    launch.block = {threads, 1, 1};
    const std::uint64_t shared = std::uint64_t{in} * 4 + std::uint64_t{threads / 32} * 4 * lanes * 4;
    check_shared(op, shared, fmt::format("in_dim={}", in));
    launch.dynamic_shared_bytes = static_cast<std::uint32_t>(shared);
    launch.arguments.push_back(u32_argument(in, "in_dim"));
    launch.arguments.push_back(u32_argument(out, "out_dim"));
    launch.arguments.push_back(u32_argument(group, "group_size"));
    launch.arguments.push_back(u32_argument(log2_exact(lanes), "lanes_per_row_log2"));
    launch.arguments.push_back(u32_argument(tiling.steps_per_slot, "words_per_slot"));
  } else if (op == kNf4) {
    require_m1(op, args);
    const std::uint32_t n = args.u32("n"), k = args.u32("k");
    const bool f64 = !args.has("accumulate") || args.choice("accumulate") == "f64";
    // Lanes per column pair: at least two 16-byte chunks (half blocks) per lane.
    const std::uint32_t lanes = std::min<std::uint32_t>(32, floor_pow2(std::max<std::uint32_t>(1, k / 32 / 2)));
    std::uint32_t threads = 32;
    for (std::uint32_t candidate : {256u, 128u, 64u}) {
      if (ceil_div(n, 2 * candidate / lanes) >= kStreamingMultiprocessors) {
        threads = candidate;
        break;
      }
    }
    plan.source = "nf4_gemm.cu";
    launch.entry = f64 ? "nf4_gemv_expert_f64" : "nf4_gemv_expert_f32";
    launch.grid = {ceil_div(n, 2 * threads / lanes), 1, 1};
    launch.block = {threads, 1, 1};
    const std::uint64_t shared = std::uint64_t{k} * (f64 ? 17 : 9) / 2;  // padded x (nf4_gemm.cu)
    check_shared(op, shared, fmt::format("k={}", k));
    launch.dynamic_shared_bytes = static_cast<std::uint32_t>(shared);
    launch.arguments.push_back(u32_argument(n, "n"));
    launch.arguments.push_back(u32_argument(k, "k"));
    launch.arguments.push_back(u32_argument(log2_exact(lanes), "lanes_per_column_log2"));
  } else {
    require_m1(op, args);
    const std::uint32_t k = args.u32("k"), n = args.u32("n"), block = args.u32("block_size");
    const bool asymmetric = args.boolean("asymmetric");
    if (n % 32 != 0) {
      throw ExpertError(fmt::format("{} expert kernel: n={} is not a multiple of 32; the kernel loads a row's 32 "
                                    "adjacent columns (16 bytes) at once and needs 16-byte aligned rows",
                                    op, n));
    }
    const std::uint32_t lanes = lanes_for_sms(n, 32);
    const Tiling tiling = choose_tiling(lanes, k, block, 0, 32, {108, 120, 130, 0});
    const std::uint32_t threads = tiling.threads;
    plan.source = "dequant_matmul_int4.cu";
    launch.entry = asymmetric ? "dequant_matmul_int4_expert_asymmetric" : "dequant_matmul_int4_expert_symmetric";
    launch.grid = {ceil_div(n, 32 * lanes), 1, 1};
    launch.block = {threads, 1, 1};
    launch.dynamic_shared_bytes = threads * 128;  // 32 partial sums per thread
    launch.arguments.push_back(u32_argument(k, "k"));
    launch.arguments.push_back(u32_argument(n, "n"));
    launch.arguments.push_back(u32_argument(block, "block_size"));
    launch.arguments.push_back(u32_argument(log2_exact(lanes), "lanes_per_row_log2"));
    launch.arguments.push_back(u32_argument(tiling.steps_per_slot, "rows_per_slot"));
  }
  return plan;
}

std::string expert_ptx(const std::string& source, const ExpertOptions& options) {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::filesystem::path path = options.sources / source;
  if (!std::filesystem::exists(path)) {
    throw ExpertError(fmt::format("expert kernel source {} does not exist", path.string()));
  }
  const std::string text = read_file(path);
  const std::string flags = fmt::format("-ptx -arch={} -O3", options.arch);
  const std::string key = lower::sha256_hex(text + '\0' + flags).substr(0, 16);
  const std::filesystem::path cached =
      options.cache / fmt::format("{}.{}.{}.ptx", path.stem().string(), options.arch, key);
  if (std::filesystem::exists(cached)) return read_file(cached);

  if (!std::filesystem::exists(options.nvcc)) {
    throw ExpertError(fmt::format("nvcc not found at {} (the CUDA toolkit CMake found); the expert kernels are "
                                  "compiled from CUDA C++ with nvcc -ptx: install the CUDA toolkit",
                                  options.nvcc));
  }
  std::filesystem::create_directories(options.cache);
  const std::filesystem::path temporary = cached.string() + fmt::format(".tmp{}", ::getpid());
  const std::filesystem::path log = cached.string() + fmt::format(".log{}", ::getpid());
  const std::string command = fmt::format("\"{}\" {} \"{}\" -o \"{}\" > \"{}\" 2>&1", options.nvcc, flags,
                                          path.string(), temporary.string(), log.string());
  const int status = std::system(command.c_str());
  if (status != 0) {
    throw ExpertError(fmt::format("nvcc failed on {} (exit status {}):\n{}\ncommand: {}", path.string(), status,
                                  read_file(log), command));
  }
  std::filesystem::remove(log);
  const std::string ptx = read_file(temporary);
  // The emulator runs no device-function calls: every helper must be inlined.
  if (ptx.find(".func") != std::string::npos || ptx.find("\tcall") != std::string::npos) {
    std::filesystem::remove(temporary);
    throw ExpertError(fmt::format("nvcc's PTX for {} calls a device function (.func/call), which the PTX emulator "
                                  "cannot run; mark the helper __forceinline__",
                                  path.string()));
  }
  std::filesystem::rename(temporary, cached);  // atomic: a concurrent compile of the same key wins harmlessly
  return ptx;
}

KernelRun run_expert(const std::string& op, const ir::ops::OpArgs& args, const ExpertOptions& options) {
  const Prepared prepared = prepare(op, args, options);
  return launch_expert(op, args, prepared, options);
}

Comparison compare_with_expert(const std::string& op, const ir::ops::OpArgs& args, const ExpertOptions& options) {
  const Prepared prepared = prepare(op, args, options);
  Comparison comparison;
  comparison.op = op;
  comparison.args = args;
  comparison.packed_weight_bytes = prepared.inputs.at(op == kNf4 ? "b_nf4" : "w").bytes.size();

  // quantc's kernel: the default -O2 pipeline for the same target.
  const lower::CompiledKernel compiled =
      lower::compile(prepared.program, lower::CompileOptions(ptx::parse_target(options.arch)));
  runtime::BufferSet buffers = prepared.inputs;
  KernelRun& quantc = comparison.quantc;
  quantc.name = "quantc";
  quantc.entry = compiled.program.name;
  quantc.counters = runtime::emulator::run(compiled.ptx, compiled.program, buffers);
  quantc.resources.threads_per_cta = compiled.program.invocations_per_workgroup();
  quantc.resources.ctas = quantc.counters.ctas;
  quantc.resources.dynamic_shared =
      runtime::emulator::DynamicShared::even_waves_plan(compiled.program.reserved_shared_bytes);
  add_ptxas_resources(compiled.ptx, quantc.entry, options, quantc.resources);
  quantc.accuracy = check_outputs(output_values(buffers.at(prepared.bound.output), prepared.bound.count),
                                  output_values(prepared.reference.at(prepared.bound.output), prepared.bound.count),
                                  prepared.bound, true, "quantc " + prepared.label);

  comparison.expert = launch_expert(op, args, prepared, options);
  return comparison;
}

}  // namespace quantc::bench
