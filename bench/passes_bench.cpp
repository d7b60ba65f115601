// Where quantc stands against NVRTC: for each op at LLM layer shapes and at -O0
// and -O2, the cost of compiling it and the quality of what comes out, next to NVRTC
// compiling an equivalent hand-written CUDA C++ kernel for the same op and shape.
//
// Rows (registered per op/shape/group size, in this order so the NVRTC time is known
// when the quantc rows need it):
//   nvrtc/<op>/<in>x<out>/g<group>       Google Benchmark times nvrtcCompileProgram
//                                         (create + compile + get PTX + destroy).
//   quantc/<op>/<in>x<out>/g<group>/O<n>  Google Benchmark times op constructor + pass
//                                         pipeline + PTX emission (what `quantc emit` does).
//   spec/<file>                           each shipped spec (examples/specs/*.json): spec
//                                         text -> optimized -O2 IR (parse, op constructor,
//                                         pass pipeline), with the pipeline's per-pass wall
//                                         time and the spec -> PTX time as counters.
// Every reported number is a counter so the JSON output (--benchmark_format=json)
// carries it; bench/passes_report.py turns that JSON into bench/results/passes.md
// (scripts/bench_report.sh runs both).
//
// Dynamic counts come from the reference interpreter's RunStatistics on a reduced
// output dimension (same reduction length and group size): every output of these
// kernels runs the same code, so counts per output do not depend on the output count,
// and the interpreter would take seconds on a full 4096x11008 layer.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ops/Quantize.h"
#include "ir/ops/Registry.h"
#include "ir/ops/Spec.h"
#include "ir/analysis/Structure.h"
#include "lower/driver/Compiler.h"
#include "lower/LowerToPtx.h"
#include "lower/PassManager.h"
#include "ptx/Ptxas.h"
#include "ptx/Target.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/Interpreter.h"

namespace {

using namespace quantc;
using Clock = std::chrono::steady_clock;

constexpr double kShufflesPerReduction = 5;  // subgroup_add = butterfly 16, 8, 4, 2, 1

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// One op at one layer shape: `in_dim` is the reduction length (K), `out_dim` the
/// output features (N); `group_size` 0 when the op has no group parameter.
struct BenchCase {
  std::string op;
  std::uint32_t in_dim = 0, out_dim = 0, group_size = 0;
  ir::ops::OpArgs args;          // the full layer, for emission and ptxas
  ir::ops::OpArgs reduced_args;  // same K and group size, fewer outputs, for the interpreter
  double reduced_outputs = 0;    // outputs the reduced program computes
  std::string cuda_source;       // the hand-written kernel for NVRTC, shapes baked in
  std::string label() const {
    return fmt::format("{}/{}x{}/g{}", op, in_dim, out_dim, group_size);
  }
};

ir::ops::OpArgs make_args(std::initializer_list<std::pair<const char*, ir::ops::ParamValue>> values) {
  ir::ops::OpArgs args;
  for (const auto& [name, value] : values) args.set(name, value);
  return args;
}

// --- hand-written CUDA C++ equivalents --------------------------------------------
// Each mirrors the quantc op's launch shape and arithmetic order (one warp per output
// with __shfl_sync where quantc uses a subgroup; products rounded before the add, so
// NVRTC runs with --fmad=false, the seed's order; quantc's -O2 contracts a*b+c, which
// changes which instructions it emits, not what compiling costs). They are what
// a CUDA programmer would write for the same contract, not a port of quantc's IR.

std::string constants(std::initializer_list<std::pair<const char*, std::uint32_t>> values) {
  std::string text;
  for (const auto& [name, value] : values) text += fmt::format("constexpr unsigned {} = {}u;\n", name, value);
  return text;
}

constexpr char kAffineGroupedCuda[] = R"(
extern "C" __global__ void __launch_bounds__(256)
linear_4bit_affine_grouped(const float* __restrict__ x, const unsigned* __restrict__ w,
                           const float* __restrict__ scale, const unsigned* __restrict__ zero_point,
                           const float* __restrict__ b, float* __restrict__ out) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned out_idx = blockIdx.x * 8 + warp;
  if (out_idx >= kOutDim) return;  // warp-uniform: the whole warp owns out_idx
  float acc = 0.0f;
  for (unsigned chunk = 0; chunk < (kInDim + 31) / 32; ++chunk) {
    const unsigned k = chunk * 32 + lane;
    const unsigned leader = lane & ~7u;
    unsigned word = 0;
    if ((lane & 7u) == 0 && chunk * 32 + leader < kInDim) word = w[((chunk * 32 + leader) / 8) * kOutDim + out_idx];
    word = __shfl_sync(0xffffffffu, word, leader);
    if (k < kInDim) {
      const unsigned sidecar = (k / kGroupSize) * kOutDim + out_idx;
      const float weight = (float((word >> (4 * (lane & 7u))) & 15u) - float(zero_point[sidecar])) * scale[sidecar];
      acc += x[k] * weight;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) out[out_idx] = b[out_idx] + acc;
}
)";

constexpr char kLinear4BitCuda[] = R"(
extern "C" __global__ void __launch_bounds__(256)
linear_4bit(const float* __restrict__ x, const unsigned* __restrict__ w, const float* __restrict__ b,
            float* __restrict__ out) {
  const unsigned i = blockIdx.x * 256 + threadIdx.x;
  if (i >= kOutDim) return;
  float acc = b[i];
  for (unsigned k = 0; k < kInDim; ++k) {
    const unsigned word = w[(k / 8) * kOutDim + i];
    acc += x[k] * float((word >> (4 * (k % 8))) & 15u);
  }
  out[i] = acc;
}
)";

constexpr char kMatvecCuda[] = R"(
extern "C" __global__ void __launch_bounds__(256)
int4_matvec_f32_scaled(const unsigned* __restrict__ weights, const float* __restrict__ x,
                       const float* __restrict__ row_scales, float* __restrict__ out) {
  const unsigned lane = threadIdx.x % 32, row = blockIdx.x * 8 + threadIdx.x / 32;
  if (row >= kRows) return;  // warp-uniform
  float acc = 0.0f;
  for (unsigned word = lane; word < kCols / 8; word += 32) {  // kCols % 8 == 0 here
    const unsigned packed = weights[row * (kCols / 8) + word];
#pragma unroll
    for (int v = 0; v < 8; ++v) acc += float(int(packed << (28 - 4 * v)) >> 28) * x[word * 8 + v];
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) out[row] = row_scales[row] * acc;
}
)";

constexpr char kNf4GemmCuda[] = R"(
extern "C" __global__ void __launch_bounds__(256)
nf4_gemm(const float* __restrict__ a, const unsigned* __restrict__ b_nf4, const float* __restrict__ b_scales,
         float* __restrict__ c) {
  const unsigned column = blockIdx.x * 256 + threadIdx.x, row = blockIdx.y;
  if (column >= kN) return;
  constexpr unsigned kBlocksPerColumn = kK / 64;
  double acc = 0.0;
  for (unsigned block = 0; block < kBlocksPerColumn; ++block) {
    const unsigned block_index = column * kBlocksPerColumn + block;
    const float scale = b_scales[block_index];
    for (unsigned word = 0; word < 8; ++word) {
      const unsigned packed = b_nf4[block_index * 8 + word];
#pragma unroll
      for (unsigned nibble = 0; nibble < 8; ++nibble) {
        const float weight = kNf4Table[(packed >> (4 * nibble)) & 15u] * scale;
        acc = fma(double(a[row * kK + block * 64 + word * 8 + nibble]), double(weight), acc);
      }
    }
  }
  c[row * kN + column] = float(acc);
}
)";

constexpr char kDequantInt4Cuda[] = R"(
extern "C" __global__ void __launch_bounds__(128)
dequant_matmul_int4(const float* __restrict__ x, const unsigned char* __restrict__ w,
                    const float* __restrict__ scales, const float* __restrict__ zero_points,
                    float* __restrict__ out) {
  const unsigned column = blockIdx.x * 128 + threadIdx.x, row_begin = blockIdx.y * kTile;
  if (column >= kN) return;
  float acc[kTile];
#pragma unroll
  for (unsigned t = 0; t < kTile; ++t) acc[t] = 0.0f;
  for (unsigned block = 0; block < (kK + kBlockSize - 1) / kBlockSize; ++block) {
    const unsigned sidecar = block * kN + column;
    const float scale = scales[sidecar], zero_point = zero_points[sidecar];
    const unsigned k_begin = block * kBlockSize;
    const unsigned k_end = k_begin + (kK - k_begin < kBlockSize ? kK - k_begin : kBlockSize);
    for (unsigned p = k_begin; p < k_end; ++p) {
      const unsigned element = p * kN + column;
      const unsigned byte = w[element >> 1];
      const float weight = (float((byte >> ((element & 1u) << 2)) & 15u) - zero_point) * scale;
#pragma unroll
      for (unsigned t = 0; t < kTile; ++t) acc[t] += x[(row_begin + t) * kK + p] * weight;
    }
  }
#pragma unroll
  for (unsigned t = 0; t < kTile; ++t) out[(row_begin + t) * kN + column] = acc[t];
}
)";

/// `__constant__ float kNf4Table[16]` with quantc's NF4 code book, bit for bit.
std::string nf4_table_source() {
  std::string text = "__constant__ float kNf4Table[16] = {";
  for (std::uint64_t bits : ir::ops::nf4_lookup_table()) {
    auto word = static_cast<std::uint32_t>(bits);
    float value;
    std::memcpy(&value, &word, sizeof value);
    text += fmt::format("{:.9e}f, ", value);
  }
  return text + "};\n";
}

// --- the case grid -----------------------------------------------------------------

constexpr std::uint32_t kLayerShapes[][2] = {{4096, 4096}, {4096, 11008}, {11008, 4096}};  // {in, out}
constexpr std::uint32_t kGroupSizes[] = {32, 64, 128};
// Small batch for the matmul ops: the decode-time regime these kernels target.
constexpr std::uint32_t kMatmulRows = 4;

BenchCase make_case(const char* op, std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size) {
  BenchCase bench_case;
  bench_case.op = op;
  bench_case.in_dim = in_dim;
  bench_case.out_dim = out_dim;
  bench_case.group_size = group_size;
  return bench_case;
}

std::vector<BenchCase> bench_cases() {
  std::vector<BenchCase> cases;
  for (const auto& [in_dim, out_dim] : kLayerShapes) {
    for (std::uint32_t group : kGroupSizes) {
      BenchCase affine = make_case("linear_4bit_affine_grouped", in_dim, out_dim, group);
      affine.args = make_args({{"k", in_dim}, {"n", out_dim}, {"group_size", group}});
      affine.reduced_args = make_args({{"k", in_dim}, {"n", 64u}, {"group_size", group}});
      affine.reduced_outputs = 64;
      affine.cuda_source =
          constants({{"kInDim", in_dim}, {"kOutDim", out_dim}, {"kGroupSize", group}}) + kAffineGroupedCuda;
      cases.push_back(std::move(affine));
    }
    BenchCase linear = make_case("linear_4bit", in_dim, out_dim, 0);
    linear.args = make_args({{"k", in_dim}, {"n", out_dim}});
    linear.reduced_args = make_args({{"k", in_dim}, {"n", 256u}});
    linear.reduced_outputs = 256;
    linear.cuda_source = constants({{"kInDim", in_dim}, {"kOutDim", out_dim}}) + kLinear4BitCuda;
    cases.push_back(std::move(linear));

    BenchCase matvec = make_case("int4_matvec_f32_scaled", in_dim, out_dim, 0);
    matvec.args = make_args({{"n", out_dim}, {"k", in_dim}});
    matvec.reduced_args = make_args({{"n", 64u}, {"k", in_dim}});
    matvec.reduced_outputs = 64;
    matvec.cuda_source = constants({{"kRows", out_dim}, {"kCols", in_dim}}) + kMatvecCuda;
    cases.push_back(std::move(matvec));

    // NF4 blocks are fixed at 64 by the format; accumulation in f64, the op's default.
    BenchCase nf4 = make_case("nf4_gemm", in_dim, out_dim, 64);
    nf4.args = make_args({{"m", kMatmulRows}, {"n", out_dim}, {"k", in_dim}, {"accumulate", std::string("f64")}});
    // One invocation per output and no row tiling: per-output counts do not depend on m.
    nf4.reduced_args = make_args({{"m", 1u}, {"n", 256u}, {"k", in_dim}, {"accumulate", std::string("f64")}});
    nf4.reduced_outputs = 256;
    nf4.cuda_source = constants({{"kN", out_dim}, {"kK", in_dim}}) + nf4_table_source() + kNf4GemmCuda;
    cases.push_back(std::move(nf4));

    for (std::uint32_t group : kGroupSizes) {
      BenchCase dequant = make_case("dequant_matmul_int4", in_dim, out_dim, group);
      dequant.args = make_args(
          {{"m", kMatmulRows}, {"k", in_dim}, {"n", out_dim}, {"block_size", group}, {"asymmetric", true}});
      // m stays 4: the 4-row tile shares each weight decode, so m changes per-output counts.
      dequant.reduced_args =
          make_args({{"m", kMatmulRows}, {"k", in_dim}, {"n", 128u}, {"block_size", group}, {"asymmetric", true}});
      dequant.reduced_outputs = 128.0 * kMatmulRows;
      dequant.cuda_source =
          constants({{"kN", out_dim}, {"kK", in_dim}, {"kBlockSize", group}, {"kTile", kMatmulRows}}) +
          kDequantInt4Cuda;
      cases.push_back(std::move(dequant));
    }
  }
  // The CUDA equivalents mirror the seed programs (and sidecar hoisting rewrites the seed's
  // loops), so every case builds "schedule": "seed"; the fast schedules are measured by
  // kernels_bench and `quantc profile --schedules`.
  for (BenchCase& bench_case : cases) {
    bench_case.args.set("schedule", std::string("seed"));
    bench_case.reduced_args.set("schedule", std::string("seed"));
  }
  return cases;
}

// --- NVRTC ------------------------------------------------------------------------

struct NvrtcResult {
  std::string ptx;
  std::string log;
  bool success = false;
};

void check_nvrtc(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS) throw std::runtime_error(fmt::format("{}: {}", call, nvrtcGetErrorString(result)));
}

/// Compiles `source` to PTX for compute_90 with NVRTC's default optimization (-O3 for
/// device code) and --fmad=false (quantc never contracts a*b+c).
NvrtcResult nvrtc_compile(const std::string& source, const std::string& name) {
  nvrtcProgram program = nullptr;
  check_nvrtc(nvrtcCreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  const char* options[] = {"--gpu-architecture=compute_90", "--fmad=false", "--std=c++17"};
  NvrtcResult result;
  result.success = nvrtcCompileProgram(program, 3, options) == NVRTC_SUCCESS;
  std::size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  result.log.resize(size);
  nvrtcGetProgramLog(program, result.log.data());
  if (result.success) {
    check_nvrtc(nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
    result.ptx.resize(size);
    check_nvrtc(nvrtcGetPTX(program, result.ptx.data()), "nvrtcGetPTX");
    if (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
  }
  nvrtcDestroyProgram(&program);
  return result;
}

/// Mean NVRTC compile time per case label, filled by the nvrtc/ rows (or on demand).
std::map<std::string, double>& nvrtc_milliseconds() {
  static std::map<std::string, double> times;
  return times;
}

double count_lines(const std::string& text) {
  double lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return lines;
}

void report_ptxas(benchmark::State& state, const std::string& ptx) {
  const auto start = Clock::now();
  ptx::PtxasResult result = ptx::run_ptxas(ptx, ptx::parse_target("sm_90"));
  state.counters["ptxas_ms"] = milliseconds_since(start);
  state.counters["ptxas_ok"] = result.success ? 1 : 0;
  state.counters["registers"] = result.registers;
  state.counters["spill_bytes"] = double(result.spill_bytes());
}

void run_nvrtc_case(benchmark::State& state, const BenchCase& bench_case) try {
  NvrtcResult result;
  const auto start = Clock::now();
  for (auto _ : state) {
    result = nvrtc_compile(bench_case.cuda_source, bench_case.op);
    benchmark::DoNotOptimize(result.ptx.data());
  }
  const double milliseconds = milliseconds_since(start) / double(state.iterations());
  if (!result.success) {
    state.SkipWithError(fmt::format("NVRTC failed for {}:\n{}", bench_case.label(), result.log).c_str());
    return;
  }
  nvrtc_milliseconds()[bench_case.label()] = milliseconds;
  state.counters["nvrtc_ms"] = milliseconds;
  state.counters["ptx_lines"] = count_lines(result.ptx);
  report_ptxas(state, result.ptx);
} catch (const std::exception& error) {
  state.SkipWithError(fmt::format("{}: {}", bench_case.label(), error.what()).c_str());
}

// --- quantc -----------------------------------------------------------------------

ir::Program build_optimized(const ir::ops::OpInfo& info, const ir::ops::OpArgs& args, lower::OptimizationLevel level) {
  lower::PassOptions options;
  options.level = level;
  return lower::run_passes(info.build(args), options);
}

void report_dynamic_counts(benchmark::State& state, const ir::ops::OpInfo& info, const BenchCase& bench_case,
                           lower::OptimizationLevel level) {
  ir::Program program = build_optimized(info, bench_case.reduced_args, level);
  runtime::BufferSet buffers = runtime::random_buffers(program, 42);
  runtime::reference::RunStatistics statistics;
  runtime::reference::RunOptions options;
  options.statistics = &statistics;
  const auto start = Clock::now();
  runtime::reference::run(program, buffers, options);
  state.counters["interpreter_ms"] = milliseconds_since(start);

  double sidecar_loads = 0;
  for (const ir::ops::BufferSpec& buffer : info.buffers) {
    auto found = statistics.loads_per_buffer.find(buffer.name);
    if (buffer.role == "sidecar" && found != statistics.loads_per_buffer.end()) sidecar_loads += double(found->second);
  }
  const double outputs = bench_case.reduced_outputs;
  state.counters["counted_outputs"] = outputs;
  state.counters["loads_per_output"] = double(statistics.global_loads) / outputs;
  state.counters["sidecar_loads_per_output"] = sidecar_loads / outputs;
  state.counters["shuffles_per_output"] =
      (double(statistics.subgroup_shuffles) + kShufflesPerReduction * double(statistics.subgroup_reductions)) / outputs;
  state.counters["arithmetic_per_output"] = double(statistics.arithmetic_ops) / outputs;
}

double nvrtc_milliseconds_for(const BenchCase& bench_case) {
  auto found = nvrtc_milliseconds().find(bench_case.label());
  if (found != nvrtc_milliseconds().end()) return found->second;
  // The nvrtc/ row was filtered out: time three compiles here.
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) nvrtc_compile(bench_case.cuda_source, bench_case.op);
  return nvrtc_milliseconds()[bench_case.label()] = milliseconds_since(start) / 3;
}

void run_quantc_case(benchmark::State& state, const BenchCase& bench_case, lower::OptimizationLevel level) {
  const ir::ops::OpInfo* info = ir::ops::OpRegistry::builtin().find(bench_case.op);
  if (info == nullptr) {
    state.SkipWithError(fmt::format("op {} is not registered", bench_case.op).c_str());
    return;
  }
  const ptx::Target target = ptx::parse_target("sm_90");
  std::string ptx_text;
  try {
    const auto start = Clock::now();
    for (auto _ : state) {
      ptx_text = lower::lower_to_ptx(build_optimized(*info, bench_case.args, level), target);
      benchmark::DoNotOptimize(ptx_text.data());
    }
    const double emit_milliseconds = milliseconds_since(start) / double(state.iterations());
    state.counters["emit_ms"] = emit_milliseconds;
    state.counters["ptx_lines"] = count_lines(ptx_text);
    report_ptxas(state, ptx_text);
    report_dynamic_counts(state, *info, bench_case, level);
    const double nvrtc = nvrtc_milliseconds_for(bench_case);
    state.counters["nvrtc_ms"] = nvrtc;
    state.counters["nvrtc_over_quantc"] = nvrtc / emit_milliseconds;
  } catch (const std::exception& error) {
    state.SkipWithError(fmt::format("{}: {}", bench_case.label(), error.what()).c_str());
  }
}

// --- shipped specs: spec text -> optimized IR -------------------------------------

struct SpecCase {
  std::string name;  // file stem
  std::string text;
};

std::vector<SpecCase> spec_cases() {
  namespace fs = std::filesystem;
  std::vector<SpecCase> cases;
  fs::path directory = fs::path(QUANTC_SOURCE_DIR) / "examples" / "specs";
  if (!fs::is_directory(directory)) return cases;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream stream(entry.path());
    std::stringstream text;
    text << stream.rdbuf();
    cases.push_back({entry.path().stem().string(), text.str()});
  }
  std::sort(cases.begin(), cases.end(), [](const SpecCase& a, const SpecCase& b) { return a.name < b.name; });
  return cases;
}

ir::Program spec_to_ir(const std::string& text, std::vector<lower::PassTiming>* timings) {
  ir::ops::OpSpec spec = ir::ops::parse_spec(text);
  lower::PassOptions options;
  options.level = lower::OptimizationLevel::O2;
  return lower::run_passes(ir::ops::build_program(spec), options, timings);
}

void run_spec_case(benchmark::State& state, const SpecCase& spec_case) try {
  ir::Program optimized;
  std::vector<lower::PassTiming> timings;
  std::map<std::string, double> per_pass;  // us, summed over iterations and rounds
  double pass_runs = 0, skipped_runs = 0;
  const auto start = Clock::now();
  for (auto _ : state) {
    timings.clear();
    optimized = spec_to_ir(spec_case.text, &timings);
    benchmark::DoNotOptimize(optimized.entry.get());
    for (const lower::PassTiming& timing : timings) {
      per_pass[timing.pass] += double(timing.wall_time.count()) / 1000.0;
      pass_runs += timing.skipped ? 0 : 1;
      skipped_runs += timing.skipped ? 1 : 0;
    }
  }
  const double iterations = double(state.iterations());
  state.counters["ir_ms"] = milliseconds_since(start) / iterations;
  double passes_us = 0;
  for (const auto& [pass, micros] : per_pass) {
    state.counters["pass_us_" + pass] = micros / iterations;
    passes_us += micros / iterations;
  }
  state.counters["passes_ms"] = passes_us / 1000.0;
  state.counters["pass_runs"] = pass_runs / iterations;
  state.counters["skipped_runs"] = skipped_runs / iterations;
  ir::ops::OpSpec spec = ir::ops::parse_spec(spec_case.text);
  // Spec parsing and the op constructor alone, for the split.
  constexpr int kBuildRuns = 200;
  const auto build_start = Clock::now();
  for (int i = 0; i < kBuildRuns; ++i) {
    ir::Program built = ir::ops::build_program(ir::ops::parse_spec(spec_case.text));
    benchmark::DoNotOptimize(built.entry.get());
  }
  state.counters["build_ms"] = milliseconds_since(build_start) / kBuildRuns;
  state.counters["nodes_before"] = double(ir::analysis::node_size(ir::ops::build_program(spec).entry));
  state.counters["nodes_after"] = double(ir::analysis::node_size(optimized.entry));
  // Spec -> PTX (what `quantc emit` does without the cache), for the total.
  const ptx::Target target = ptx::parse_target(spec.target.value_or("sm_80"));
  constexpr int kPtxRuns = 200;
  const auto ptx_start = Clock::now();
  for (int i = 0; i < kPtxRuns; ++i) {
    lower::CompiledKernel kernel =
        lower::compile(ir::ops::build_program(ir::ops::parse_spec(spec_case.text)), lower::CompileOptions(target));
    benchmark::DoNotOptimize(kernel.ptx.data());
  }
  state.counters["ptx_ms"] = milliseconds_since(ptx_start) / kPtxRuns;
} catch (const std::exception& error) {
  state.SkipWithError(fmt::format("{}: {}", spec_case.name, error.what()).c_str());
}

void register_benchmarks() {
  static const std::vector<SpecCase> specs = spec_cases();
  for (const SpecCase& spec_case : specs) {
    benchmark::RegisterBenchmark(("spec/" + spec_case.name).c_str(),
                                 [&spec_case](benchmark::State& state) { run_spec_case(state, spec_case); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->MinTime(0.2);
  }
  static const std::vector<BenchCase> cases = bench_cases();
  for (const BenchCase& bench_case : cases) {
    benchmark::RegisterBenchmark(("nvrtc/" + bench_case.label()).c_str(),
                                 [&bench_case](benchmark::State& state) { run_nvrtc_case(state, bench_case); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.2);
    for (auto [level, suffix] : {std::pair{lower::OptimizationLevel::O0, "O0"}, std::pair{lower::OptimizationLevel::O2, "O2"}}) {
      benchmark::RegisterBenchmark(fmt::format("quantc/{}/{}", bench_case.label(), suffix).c_str(),
                                   [&bench_case, level](benchmark::State& state) {
                                     run_quantc_case(state, bench_case, level);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(0.2);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
