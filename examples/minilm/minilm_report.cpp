// minilm_report: quantc on a real model. For every linear layer of all-MiniLM-L6-v2 and
// every 4-bit scheme, packs the real weight (ir/ops/HostPack.h), builds the op from the
// registry, compiles it to PTX (lower::compile), runs it on the reference interpreter and
// the PTX emulator with real activations, and compares with the f64 product of the
// unquantized weight. Writes report.md and results.csv (plot.py draws report.png).
//
// GGUF schemes (gguf-q4_0, gguf-q8_0, gguf-q6_k, gguf-q4_k): the layer is not packed here
// but read from the GGUF file that examples/minilm/make_gguf.py writes with gguf-py, the
// format's reference implementation (--gguf-dir; llama.cpp's tensor names, blk.N.attn_q,
// ...), and converted by runtime::convert::convert_gguf, the code `quantc convert --format
// gguf` runs; then it runs and is checked like every other scheme. Q6_K and Q4_K exist for
// output.dense only: K-quant super-blocks of 256 do not tile 384-long rows. Q4_K runs on
// dequant_matmul_int4's offset mode (w = q * s + o per 32-weight sub-block, ggml's
// d*sc*q - dmin*m). Without the files (gguf-py missing) the GGUF rows are skipped
// with a warning, or the run fails where QUANTC_REQUIRE_PTXAS=1 (CI) or
// QUANTC_REQUIRE_GGUF_PY=1, as tests/gguf decides.
//
// Activations: the word-embedding rows (embeddings.word_embeddings.weight, 30522x384) of
// the WordPiece tokens of a short English sentence, so inputs have a real distribution.
// 1536-input layers (output.dense) get the deterministic projection
// GELU(x @ W_intermediate^T + b_intermediate) of those rows, computed in f64 with the
// unquantized intermediate weight of the same layer and rounded to f32.
// All ops run with bias 0: the report measures the weight quantization alone.
//
// Exit status: 0 = every assertion held; 1 = an assertion failed (listed at the end);
// 2 = bad arguments, unreadable input, or the model absent (the message names
// scripts/fetch_model.sh); 77 = skipped, only when the model is absent and
// QUANTC_SKIP_MODEL_TESTS=1.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "examples/minilm/WordPiece.h"
#include "ir/Printer.h"
#include "ir/ops/Registry.h"
#include "lower/driver/Compiler.h"
#include "ptx/Target.h"
#include "ir/ops/Spec.h"
#include "runtime/Buffers.h"
#include "runtime/io/Convert.h"
#include "runtime/io/Gguf.h"
#include "runtime/io/PackFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/backends/cuda/Launch.h"
#include "runtime/backends/emulator/Emulator.h"
#include "runtime/backends/emulator/Profile.h"
#include "runtime/backends/reference/Interpreter.h"

namespace fs = std::filesystem;
using namespace quantc;
using ir::ops::pack::LinearWeight;
using ir::ops::pack::Scheme;

namespace {

constexpr int kSkipped = 77;

// ---- configuration ------------------------------------------------------------------

struct SchemeRun {
  Scheme scheme = Scheme::Int4AffineGrouped;
  std::uint32_t group = 0;  // group size (affine) or block (nf4); 0 = one scale per row
  /// Set for the GGUF schemes: the layer comes from the GGUF file of this type, converted
  /// by convert_gguf (scheme and group are then unused).
  std::optional<runtime::GgmlType> gguf;
  /// GGUF K-quants: 256-weight super-blocks along in_features, so only layers whose
  /// in_dim 256 divides have them (MiniLM: output.dense, 1536 inputs).
  bool k_quant() const {
    return gguf && (*gguf == runtime::GgmlType::Q4_K || *gguf == runtime::GgmlType::Q6_K);
  }
  bool applies_to(std::uint32_t in_dim) const { return !k_quant() || in_dim % 256 == 0; }
  std::string label() const {
    if (gguf) {
      std::string name(runtime::ggml_type_name(*gguf));
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      return "gguf-" + name;
    }
    switch (scheme) {
      case Scheme::Int4AffineGrouped: return fmt::format("int4-affine-g{}", group);
      case Scheme::Nf4: return fmt::format("nf4-b{}", group);
      case Scheme::Int4Symmetric: return "int4-symmetric-row";
    }
    return "";
  }
};

const std::vector<std::string> kLinears = {"attention.self.query", "attention.self.key", "attention.self.value",
                                           "attention.output.dense", "intermediate.dense", "output.dense"};
/// llama.cpp's names of kLinears, in the same order (gguf-py's BERT tensor map).
const std::vector<std::string> kGgufLinears = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down"};

std::vector<SchemeRun> all_schemes() {
  return {{Scheme::Int4AffineGrouped, 32, std::nullopt},
          {Scheme::Int4AffineGrouped, 64, std::nullopt},
          {Scheme::Int4AffineGrouped, 128, std::nullopt},
          {Scheme::Nf4, 64, std::nullopt},
          {Scheme::Int4Symmetric, 0, std::nullopt},
          // GGUF files written by examples/minilm/make_gguf.py: Q4_0 and Q8_0 quantized by
          // gguf-py, Q6_K and Q4_K encoded by make_gguf.py (gguf-py 0.19.0 cannot), those
          // two for output.dense only (k_quant). convert_gguf maps each onto an op.
          {Scheme::Int4AffineGrouped, 0, runtime::GgmlType::Q4_0},
          {Scheme::Int4AffineGrouped, 0, runtime::GgmlType::Q8_0},
          {Scheme::Int4AffineGrouped, 0, runtime::GgmlType::Q6_K},
          {Scheme::Int4AffineGrouped, 0, runtime::GgmlType::Q4_K}};
}

/// The GGUF file make_gguf.py writes for `type` into `dir`.
fs::path gguf_path(const fs::path& dir, runtime::GgmlType type) {
  return dir / fmt::format("all-MiniLM-L6-v2-{}.gguf", runtime::ggml_type_name(type));
}

/// Whether a missing gguf-py (hence a missing GGUF file) is an error rather than a skip:
/// CI sets QUANTC_REQUIRE_PTXAS=1; QUANTC_REQUIRE_GGUF_PY=1 asks for it alone (tests/gguf
/// decides the same way).
bool gguf_required() {
  for (const char* variable : {"QUANTC_REQUIRE_PTXAS", "QUANTC_REQUIRE_GGUF_PY"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::string(value) == "1") return true;
  }
  return false;
}

// ---- activations --------------------------------------------------------------------

struct Matrix {  // row-major f32, rows = tokens
  std::uint32_t rows = 0, cols = 0;
  std::vector<float> values;
  const float* row(std::uint32_t r) const { return values.data() + std::size_t{r} * cols; }
};

Matrix embedding_rows(const runtime::SafetensorsFile& model, const std::vector<int>& ids) {
  const auto& table = model.tensor("embeddings.word_embeddings.weight");
  const std::uint32_t width = static_cast<std::uint32_t>(table.shape.at(1));
  const std::vector<float> all = model.to_f32(table.name);
  Matrix x{static_cast<std::uint32_t>(ids.size()), width, {}};
  for (int id : ids) x.values.insert(x.values.end(), all.begin() + std::size_t(id) * width,
                                     all.begin() + std::size_t(id + 1) * width);
  return x;
}

double gelu(double value) { return 0.5 * value * (1.0 + std::erf(value / std::sqrt(2.0))); }

/// y[t][i] = sum_k W[i][k] x[t][k] in f64 (the unquantized reference), plus bias.
std::vector<double> product_f64(const LinearWeight& weight, const Matrix& x, const std::vector<float>* bias = nullptr) {
  std::vector<double> y(std::size_t{x.rows} * weight.out_dim);
  for (std::uint32_t t = 0; t < x.rows; ++t) {
    for (std::uint32_t i = 0; i < weight.out_dim; ++i) {
      double sum = bias ? (*bias)[i] : 0.0;
      for (std::uint32_t k = 0; k < weight.in_dim; ++k) sum += double{weight.at(k, i)} * x.row(t)[k];
      y[std::size_t{t} * weight.out_dim + i] = sum;
    }
  }
  return y;
}

Matrix intermediate_activations(const runtime::SafetensorsFile& model, int layer, const Matrix& x) {
  const std::string prefix = fmt::format("encoder.layer.{}.intermediate.dense.", layer);
  const LinearWeight weight = runtime::pack::linear_weight_from_tensor(model, prefix + "weight", true);
  const std::vector<float> bias = model.to_f32(prefix + "bias");
  const std::vector<double> y = product_f64(weight, x, &bias);
  Matrix h{x.rows, weight.out_dim, std::vector<float>(y.size())};
  for (std::size_t e = 0; e < y.size(); ++e) h.values[e] = static_cast<float>(gelu(y[e]));
  return h;
}

// ---- running one op ------------------------------------------------------------------

struct Counters {
  double sectors_per_request = 0;           // global load sectors / global load requests, all launches
  double warp_instructions_per_output = 0;  // warp instructions / outputs written, all launches
};

struct KernelRun {
  std::string schedule;          // the program that ran: "seed" or "fast" ("auto" resolved)
  std::vector<float> reference;  // interpreter output, [tokens][out_dim]
  std::vector<float> emulator;   // emulator output, same layout
  std::vector<float> cuda;       // GPU output, same layout; empty where no GPU exists
  Counters counters;
};

runtime::HostBuffer f32_buffer(const float* values, std::size_t count) {
  return runtime::HostBuffer::from(ir::ScalarType::F32, std::vector<float>(values, values + count));
}

/// The compiler configuration of every kernel in the report: the default -O2 pipeline
/// for sm_90 (H100), the GPU the emulator's counters stand for.
lower::CompileOptions compile_options() { return lower::CompileOptions(ptx::parse_target("sm_90")); }

/// One launch of `kernel` on the reference interpreter (the oracle, on the optimised
/// program) and on the PTX emulator (the emitted PTX); appends the first `output_count`
/// elements of buffer `output` from each and adds the emulator's counters to `counters`.
void launch(const lower::CompiledKernel& kernel, const runtime::BufferSet& inputs, const std::string& output,
            std::size_t output_count, KernelRun& run, runtime::emulator::LaunchCounters& counters) {
  runtime::BufferSet buffers = runtime::allocate_buffers(kernel.program);
  for (const auto& [name, buffer] : inputs) buffers[name] = buffer;
  runtime::BufferSet reference_buffers = buffers;
  runtime::reference::run(kernel.program, reference_buffers);
  const auto values = reference_buffers.at(output).as<float>();
  run.reference.insert(run.reference.end(), values.begin(), values.begin() + std::ptrdiff_t(output_count));
  runtime::BufferSet emulator_buffers = buffers;
  counters += runtime::emulator::run(kernel.ptx, kernel.program, emulator_buffers);
  const auto emulated = emulator_buffers.at(output).as<float>();
  run.emulator.insert(run.emulator.end(), emulated.begin(), emulated.begin() + std::ptrdiff_t(output_count));
  if (!runtime::cuda::gpu_available()) return;
  static runtime::cuda::CudaBackend gpu;  // one context and module cache for the whole report
  runtime::BufferSet gpu_buffers = buffers;
  gpu.run(kernel.program, runtime::cuda::KernelImage::ptx(kernel.ptx), gpu_buffers);
  const auto on_gpu = gpu_buffers.at(output).as<float>();
  run.cuda.insert(run.cuda.end(), on_gpu.begin(), on_gpu.begin() + std::ptrdiff_t(output_count));
}

/// The op's arguments for `scheme` at in_dim x out_dim; `m` rows of activations for
/// nf4_gemm (the two matvec ops take one activation vector per launch).
ir::ops::OpArgs scheme_args(const SchemeRun& scheme, std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t m) {
  ir::ops::OpArgs args;
  switch (scheme.scheme) {
    case Scheme::Nf4:
      args.set("m", m);
      args.set("n", out_dim);
      args.set("k", in_dim);
      break;
    case Scheme::Int4AffineGrouped:
      args.set("k", in_dim);
      args.set("n", out_dim);
      args.set("group_size", scheme.group);
      break;
    case Scheme::Int4Symmetric:
      args.set("n", out_dim);
      args.set("k", in_dim);
      break;
  }
  return args;
}

const ir::ops::OpInfo& scheme_op(const SchemeRun& scheme) {
  const std::string op_name = ir::ops::pack::op_for_scheme(scheme.scheme);
  const ir::ops::OpInfo* op = ir::ops::OpRegistry::builtin().find(op_name);
  if (!op) throw std::runtime_error(fmt::format("op {} is not registered in ir/ops/Registry.cpp", op_name));
  return *op;
}

struct BuiltOp {
  ir::Program program;
  std::string schedule;  // "seed" or "fast": the program "auto" built, resolved
};

/// Builds `op` with "schedule": `requested` (auto, seed or fast; OpError where the shape
/// cannot run it). "auto" is resolved to the concrete schedule whose program prints the
/// same, as `quantc profile --schedules` names it.
BuiltOp build_with_schedule(const ir::ops::OpInfo& op, ir::ops::OpArgs args, const std::string& requested) {
  args.set("schedule", requested);
  BuiltOp built{op.build(args), requested};
  if (requested != "auto") return built;
  const std::string printed = ir::print(built.program);
  for (const char* candidate : {"fast", "seed"}) {
    args.set("schedule", std::string(candidate));
    try {
      if (ir::print(op.build(args)) == printed) {
        built.schedule = candidate;
        break;
      }
    } catch (const ir::ops::OpError&) {  // this schedule cannot run the shape: auto did not pick it
    }
  }
  return built;
}

/// Launches `kernel` on the token rows of `x` (activation buffer `input`, output
/// `output` with `out_features` per row): once per token with m = 1 (`per_token`, the
/// batch-1 GEMV) or once on all rows.
void launch_on_tokens(const lower::CompiledKernel& kernel, runtime::BufferSet& weights, const char* input,
                      const char* output, std::uint32_t out_features, const Matrix& x, bool per_token, KernelRun& run,
                      runtime::emulator::LaunchCounters& counters) {
  if (per_token) {
    for (std::uint32_t t = 0; t < x.rows; ++t) {
      weights[input] = f32_buffer(x.row(t), x.cols);
      launch(kernel, weights, output, out_features, run, counters);
    }
  } else {
    weights[input] = f32_buffer(x.values.data(), x.values.size());
    launch(kernel, weights, output, std::size_t{x.rows} * out_features, run, counters);
  }
}

/// Builds the scheme's op for `weight` with "schedule": `schedule`, feeds it the packed
/// buffers and every token row: nf4_gemm is one GEMM over all tokens (m = tokens; auto
/// runs the seed program there), except with "fast", the batch-1 GEMV, which runs once
/// per token with m = 1; the two matvec ops run once per token.
KernelRun run_kernel(const SchemeRun& scheme, const LinearWeight& weight, const Matrix& x,
                     const std::string& schedule) {
  const ir::ops::OpInfo& op = scheme_op(scheme);
  ir::ops::pack::SchemeOptions options;
  options.scheme = scheme.scheme;
  options.group_size = scheme.group;
  options.block = scheme.group;
  ir::ops::pack::PackedWeight packed = ir::ops::pack::pack_weight(weight, options);
  runtime::BufferSet weights;
  for (const auto& packed_buffer : packed.buffers) {
    runtime::HostBuffer buffer;
    buffer.element = packed_buffer.element;
    buffer.bytes = packed_buffer.bytes;
    weights[packed_buffer.name] = buffer;
  }
  KernelRun run;
  runtime::emulator::LaunchCounters counters;
  if (scheme.scheme == Scheme::Nf4) {
    const bool per_token = schedule == "fast";
    const ir::ops::OpArgs args = scheme_args(scheme, weight.in_dim, weight.out_dim, per_token ? 1 : x.rows);
    BuiltOp built = build_with_schedule(op, args, schedule);
    run.schedule = built.schedule;
    const lower::CompiledKernel kernel = lower::compile(std::move(built.program), compile_options());
    launch_on_tokens(kernel, weights, "a", "c", weight.out_dim, x, per_token, run, counters);
  } else {
    if (scheme.scheme == Scheme::Int4AffineGrouped) {
      weights["b"] = runtime::HostBuffer::from(ir::ScalarType::F32, std::vector<float>(weight.out_dim, 0.0f));
    }
    BuiltOp built = build_with_schedule(op, scheme_args(scheme, weight.in_dim, weight.out_dim, 1), schedule);
    run.schedule = built.schedule;
    const lower::CompiledKernel kernel = lower::compile(std::move(built.program), compile_options());
    launch_on_tokens(kernel, weights, "x", "out", weight.out_dim, x, /*per_token=*/true, run, counters);
  }
  run.counters.sectors_per_request = counters.sectors_per_load_request();
  run.counters.warp_instructions_per_output = double(counters.warp_instructions) / double(run.emulator.size());
  return run;
}

// ---- GGUF layers ----------------------------------------------------------------------

/// An op and its arguments at one shape, with the bytes of its packed weight buffer.
struct OpChoice {
  const ir::ops::OpInfo* op = nullptr;
  ir::ops::OpArgs args;
  std::uint64_t packed_bytes = 0;
};

/// The op convert_gguf chose for `converted` (its spec, parsed as `quantc run` parses a
/// bundle's spec.json), with m activation rows.
OpChoice converted_choice(const runtime::convert::ConvertedLayer& converted, std::uint32_t m) {
  ir::ops::OpSpec spec = ir::ops::parse_spec(converted.spec.dump(), converted.layer + " (convert_gguf spec)");
  spec.args.set("m", m);
  return {spec.op, spec.args, converted.buffer("w").buffer.bytes.size()};
}

/// Layer `gguf_layer` (e.g. blk.0.attn_q) of `file` converted by convert_gguf for m
/// activation rows: the same call `quantc convert --format gguf --batch m` makes.
runtime::convert::ConvertedLayer convert_gguf_layer(const runtime::GgufFile& file, const std::string& gguf_layer,
                                                    std::uint32_t m) {
  runtime::convert::ConvertOptions options;
  options.format = runtime::convert::CheckpointFormat::Gguf;
  options.layer = gguf_layer;
  options.batch = m;
  return runtime::convert::convert_gguf(file, options);
}

/// Runs a converted layer's op (dequant_matmul_int4/int8) on every token row, as nf4_gemm
/// runs: one matmul over all tokens (m = tokens; auto runs the seed program there), except
/// with "fast", the batch-1 GEMV, which runs once per token with m = 1. The layer must have
/// been converted for that m (convert_gguf_layer).
KernelRun run_converted(const runtime::convert::ConvertedLayer& converted, const Matrix& x,
                        const std::string& schedule) {
  const bool per_token = schedule == "fast";
  const OpChoice choice = converted_choice(converted, per_token ? 1 : x.rows);
  runtime::BufferSet weights;
  for (const auto& buffer : converted.buffers) weights[buffer.name] = buffer.array.buffer;
  KernelRun run;
  runtime::emulator::LaunchCounters counters;
  BuiltOp built = build_with_schedule(*choice.op, choice.args, schedule);
  run.schedule = built.schedule;
  const lower::CompiledKernel kernel = lower::compile(std::move(built.program), compile_options());
  launch_on_tokens(kernel, weights, "x", "out", converted.out_features, x, per_token, run, counters);
  run.counters.sectors_per_request = counters.sectors_per_load_request();
  run.counters.warp_instructions_per_output = double(counters.warp_instructions) / double(run.emulator.size());
  return run;
}

/// A converted layer's weight as its op defines it (ir/ops/DequantMatmul.h: asymmetric
/// (f32(q) - z) * s, offset f32(q) * s + o, else f32(q) * s; int4 element p*n + j is the
/// low nibble of byte (p*n + j)/2 when even), in LinearWeight's [out][in] order, and per
/// element the magnitude (|q| + |z|) * |s| (offset: |q| * |s| + |o|) the op's f32
/// summation bound is stated in (its fast schedule factors the zero point or offset out
/// of the block sums).
struct OpWeight {
  LinearWeight weight;
  std::vector<double> magnitude;  // same order as weight.values
};

OpWeight op_weight(const runtime::convert::ConvertedLayer& converted) {
  const std::string op = converted.spec.at("op").get<std::string>();
  if (op != "dequant_matmul_int8" && op != "dequant_matmul_int4") {
    throw std::logic_error(fmt::format("{}: convert_gguf chose {}, which op_weight does not read", converted.layer, op));
  }
  const std::uint32_t k = converted.in_features, n = converted.out_features;
  const std::uint32_t block = converted.spec.at("block_size").get<std::uint32_t>();
  const bool asymmetric = converted.spec.at("asymmetric").get<bool>();
  const bool offset = converted.spec.value("offset", false);
  const auto& w = converted.buffer("w").buffer.bytes;
  const std::vector<float> scales = converted.buffer("scales").buffer.as<float>();
  const std::vector<float> zero_points =
      asymmetric ? converted.buffer("zero_points").buffer.as<float>() : std::vector<float>();
  const std::vector<float> offsets = offset ? converted.buffer("offsets").buffer.as<float>() : std::vector<float>();
  OpWeight result{{k, n, std::vector<float>(std::size_t{k} * n)}, std::vector<double>(std::size_t{k} * n)};
  for (std::uint32_t p = 0; p < k; ++p) {
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::size_t e = std::size_t{p} * n + j, side = std::size_t{p / block} * n + j;
      const float q = op == "dequant_matmul_int8" ? float(static_cast<std::int8_t>(w[e]))
                                                  : float(e % 2 == 0 ? w[e / 2] & 15u : w[e / 2] >> 4);
      const float s = scales[side], z = asymmetric ? zero_points[side] : 0.0f;
      const std::size_t at = std::size_t{j} * k + p;  // LinearWeight: [out][in]
      if (offset) {  // the product rounded, then the sum (exact for GGUF scales, FMA or not)
        const float product = q * s;
        result.weight.values[at] = product + offsets[side];
        result.magnitude[at] = std::fabs(double{q}) * std::fabs(double{s}) + std::fabs(double{offsets[side]});
        continue;
      }
      result.weight.values[at] = asymmetric ? (q - z) * s : q * s;
      result.magnitude[at] = (std::fabs(double{q}) + std::fabs(double{z})) * std::fabs(double{s});
    }
  }
  return result;
}

// ---- the cost model ------------------------------------------------------------------

/// The device the modeled section stands for (CostModel.h).
constexpr const char* kModeledDevice = "h100_sxm";

/// One batch-1 launch (one token) of a scheme's op at one shape and schedule, modeled.
struct Modeled {
  std::string schedule;  // "seed" or "fast"
  std::string error;     // why it has no estimate: the op's OpError, or the model's error
  std::optional<runtime::emulator::LaunchEstimate> estimate;
  std::uint64_t ctas = 0;
  std::uint32_t registers = 0;
  double warp_instructions_per_packed_byte = 0;
  double sectors_per_request = 0;
  bool ok() const { return estimate.has_value(); }
  double micros() const { return estimate ? estimate->seconds * 1e6 : 0.0; }
  double memory_bound_micros() const { return estimate ? estimate->memory_bound_seconds * 1e6 : 0.0; }
};

std::uint64_t packed_bytes_of(const SchemeRun& scheme, std::uint32_t in_dim, std::uint32_t out_dim);

/// The packed scheme's op at in_dim x out_dim (m rows for nf4_gemm).
OpChoice pack_choice(const SchemeRun& scheme, std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t m) {
  return {&scheme_op(scheme), scheme_args(scheme, in_dim, out_dim, m), packed_bytes_of(scheme, in_dim, out_dim)};
}

/// Compiles `batch1`, the op for one token (m = 1 for nf4_gemm and dequant_matmul, one
/// matvec), with "schedule": `schedule`, runs it once on the emulator (random inputs: the
/// counters do not depend on the data) and models it on kModeledDevice (registers from
/// `ptxas -v`).
Modeled model_batch1(const OpChoice& batch1, const std::string& schedule) {
  Modeled modeled;
  modeled.schedule = schedule;
  std::optional<BuiltOp> built;
  try {
    built = build_with_schedule(*batch1.op, batch1.args, schedule);
  } catch (const ir::ops::OpError& error) {
    modeled.error = error.what();
    return modeled;
  }
  const lower::CompiledKernel kernel = lower::compile(std::move(built->program), compile_options());
  runtime::emulator::ProfileOptions options;
  options.devices = {kModeledDevice};
  const runtime::emulator::KernelProfile profile =
      runtime::emulator::profile_program(kernel.program, kernel.ptx, /*seed=*/1, options);
  const runtime::emulator::DeviceProfile& device = profile.devices.front();
  modeled.ctas = profile.counters.ctas;
  modeled.registers = device.resources.registers_per_thread;
  modeled.sectors_per_request = profile.counters.sectors_per_load_request();
  modeled.warp_instructions_per_packed_byte =
      double(profile.counters.warp_instructions) / double(batch1.packed_bytes);
  if (device.estimate) {
    modeled.estimate = *device.estimate;
  } else {
    modeled.error = device.error;
  }
  return modeled;
}

/// model_batch1 once per (shape, scheme, schedule), reused for every layer of that shape.
class ModelCache {
 public:
  /// `batch1`: the scheme's op for one token at in_dim x out_dim.
  const Modeled& get(const SchemeRun& scheme, std::uint32_t in_dim, std::uint32_t out_dim,
                     const std::string& schedule, const OpChoice& batch1) {
    const auto key = std::make_tuple(in_dim, out_dim, scheme.label(), schedule);
    auto found = cache_.find(key);
    if (found == cache_.end()) found = cache_.emplace(key, model_batch1(batch1, schedule)).first;
    return found->second;
  }

 private:
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::string, std::string>, Modeled> cache_;
};

// ---- metrics -------------------------------------------------------------------------

struct Errors {
  double relative_frobenius = 0, cosine = 0, max_abs = 0;
};

Errors compare(const std::vector<float>& actual, const std::vector<double>& exact) {
  double difference = 0, norm = 0, dot = 0, actual_norm = 0, worst = 0;
  for (std::size_t e = 0; e < exact.size(); ++e) {
    const double a = actual[e], d = a - exact[e];
    difference += d * d;
    norm += exact[e] * exact[e];
    actual_norm += a * a;
    dot += a * exact[e];
    worst = std::max(worst, std::fabs(d));
  }
  return {std::sqrt(difference / norm), dot / std::sqrt(norm * actual_norm), worst};
}

struct Bytes {
  std::uint64_t packed = 0, sidecar = 0, f32 = 0;
};

Bytes bytes_of(const SchemeRun& scheme, const LinearWeight& weight) {
  const std::uint64_t in = weight.in_dim, out = weight.out_dim;
  Bytes bytes{0, 0, in * out * 4};
  switch (scheme.scheme) {
    case Scheme::Int4AffineGrouped:
      bytes.packed = in / 8 * out * 4;
      bytes.sidecar = (in + scheme.group - 1) / scheme.group * out * 8;  // f32 scale + u32 zero point
      break;
    case Scheme::Nf4:
      bytes.packed = in * out / 2;
      bytes.sidecar = in / scheme.group * out * 4;
      break;
    case Scheme::Int4Symmetric:
      bytes.packed = (in + 7) / 8 * out * 4;
      bytes.sidecar = out * 4;
      break;
  }
  return bytes;
}

std::uint64_t packed_bytes_of(const SchemeRun& scheme, std::uint32_t in_dim, std::uint32_t out_dim) {
  LinearWeight shape;
  shape.in_dim = in_dim;
  shape.out_dim = out_dim;
  return bytes_of(scheme, shape).packed;
}

struct Row {
  int layer;
  std::string linear, scheme;
  std::uint32_t in_dim, out_dim;
  Errors errors;  // emulator output vs the f64 product of the unquantized weight
  Bytes bytes;
  Counters counters;
  std::size_t backend_mismatches = 0;  // outputs where emulator and interpreter differ in any bit
  double backend_difference = 0;       // max |emulator - interpreter|
  double host_bound_ratio = 0;         // max |interpreter - x @ dequant(W)| / summation bound
  std::string schedule;                // the program the accuracy runs used ("auto" resolved)
  const Modeled* seed = nullptr;       // one token's launch modeled, "schedule": "seed" (ModelCache)
  const Modeled* fast = nullptr;       // the same with "schedule": "fast"
};

std::vector<std::uint32_t> parse_list(const std::string& text, std::uint32_t limit, const std::string& option) {
  std::vector<std::uint32_t> values;
  if (text == "all") {
    for (std::uint32_t v = 0; v < limit; ++v) values.push_back(v);
    return values;
  }
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) {
    std::size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || value >= limit) {
      throw std::invalid_argument(fmt::format("{} {}: '{}' is not an index 0..{} (or pass all)", option, text, item,
                                              limit - 1));
    }
    values.push_back(static_cast<std::uint32_t>(value));
  }
  return values;
}

std::string format_counter(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

/// Mean of the rows' values per scheme, in the order the schemes first appear.
void write_summary(std::ofstream& md, const std::vector<Row>& rows) {
  md << "| scheme | schedule | layers | mean rel. Frobenius | worst rel. Frobenius | mean cosine | bytes vs f32 "
        "(384x384) | mean sectors/req | mean warp instr/output |\n|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> order;
  for (const Row& row : rows) {
    if (std::find(order.begin(), order.end(), row.scheme) == order.end()) order.push_back(row.scheme);
  }
  for (const std::string& scheme : order) {
    double error = 0, worst = 0, cosine = 0, sectors = 0, instructions = 0, ratio = 0, other_ratio = 0;
    std::string other_shape;  // the shape of other_ratio, for schemes with no 384x384 layer (K-quants)
    int count = 0;
    std::vector<std::string> schedules;  // the schedules the scheme's runs used, in order
    for (const Row& row : rows) {
      if (row.scheme != scheme) continue;
      ++count;
      if (std::find(schedules.begin(), schedules.end(), row.schedule) == schedules.end()) schedules.push_back(row.schedule);
      error += row.errors.relative_frobenius;
      worst = std::max(worst, row.errors.relative_frobenius);
      cosine += row.errors.cosine;
      sectors += row.counters.sectors_per_request;
      instructions += row.counters.warp_instructions_per_output;
      const double row_ratio = double(row.bytes.packed + row.bytes.sidecar) / double(row.bytes.f32);
      if (row.in_dim == 384 && row.out_dim == 384) ratio = row_ratio;
      if (other_shape.empty()) other_shape = fmt::format("{}x{}", row.in_dim, row.out_dim), other_ratio = row_ratio;
    }
    md << fmt::format("| {} | {} | {} | {:.4e} | {:.4e} | {:.6f} | {} | {:.2f} | {:.1f} |\n", scheme,
                      fmt::format("{}", fmt::join(schedules, " / ")), count, error / count,
                      worst, cosine / count,
                      ratio > 0 ? fmt::format("{:.4f}", ratio) : fmt::format("{:.4f} ({})", other_ratio, other_shape),
                      sectors / count,
                      instructions / count);
  }
}

// ---- the modeled section ---------------------------------------------------------------

const std::map<std::string, std::string> kShortLinear = {
    {"attention.self.query", "query"}, {"attention.self.key", "key"}, {"attention.self.value", "value"},
    {"attention.output.dense", "attn.out"}, {"intermediate.dense", "ffn.up"}, {"output.dense", "ffn.down"}};

std::string micros_cell(const Modeled& modeled) {
  return modeled.ok() ? fmt::format("{:.2f}", modeled.micros()) : "cannot run";
}
std::string limit_cell(const Modeled& modeled) { return modeled.ok() ? modeled.estimate->limit_key() : "-"; }
std::string hbm_cell(const Modeled& modeled) {
  return modeled.ok() ? fmt::format("{:.0f}%", 100.0 * modeled.estimate->hbm_fraction()) : "-";
}
std::string speedup_cell(const Modeled& seed, const Modeled& fast) {
  return seed.ok() && fast.ok() && fast.micros() > 0 ? fmt::format("{:.2f}x", seed.micros() / fast.micros()) : "n/a";
}
/// The launch a token runs for "fast": the fast program, or the seed where fast cannot run.
const Modeled& fast_or_seed(const Row& row) { return row.fast->ok() ? *row.fast : *row.seed; }

/// The rows of one (shape, scheme): what the section's first table lists once.
struct ShapeScheme {
  std::uint32_t in_dim, out_dim;
  std::string scheme;
  std::vector<std::string> linears;
  const Row* first;
};

std::vector<ShapeScheme> shape_schemes(const std::vector<Row>& rows) {
  std::vector<ShapeScheme> groups;
  for (const Row& row : rows) {
    if (!row.seed || !row.fast) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const ShapeScheme& g) {
      return g.in_dim == row.in_dim && g.out_dim == row.out_dim && g.scheme == row.scheme;
    });
    if (group == groups.end()) {
      groups.push_back({row.in_dim, row.out_dim, row.scheme, {}, &row});
      group = groups.end() - 1;
    }
    const std::string name = kShortLinear.count(row.linear) ? kShortLinear.at(row.linear) : row.linear;
    if (std::find(group->linears.begin(), group->linears.end(), name) == group->linears.end()) {
      group->linears.push_back(name);
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const ShapeScheme& a, const ShapeScheme& b) {
    return std::make_pair(a.in_dim, a.out_dim) < std::make_pair(b.in_dim, b.out_dim);
  });
  return groups;
}

struct TokenTotal {
  std::string scheme;
  int layers = 0;
  double seed_us = 0, fast_us = 0, memory_bound_us = 0;
  bool seed_complete = true;  // every layer's seed launch was modeled
  int fast_fallbacks = 0;     // layers where fast cannot run (the seed's time is counted)
};

/// Per scheme: the modeled time of one token through every reported layer, seed vs fast.
std::vector<TokenTotal> token_totals(const std::vector<Row>& rows) {
  std::vector<TokenTotal> totals;
  for (const Row& row : rows) {
    if (!row.seed || !row.fast) continue;
    auto total = std::find_if(totals.begin(), totals.end(), [&](const TokenTotal& t) { return t.scheme == row.scheme; });
    if (total == totals.end()) {
      totals.push_back({row.scheme});
      total = totals.end() - 1;
    }
    ++total->layers;
    total->seed_complete = total->seed_complete && row.seed->ok();
    total->seed_us += row.seed->micros();
    total->fast_us += fast_or_seed(row).micros();
    total->memory_bound_us += fast_or_seed(row).memory_bound_micros();
    total->fast_fallbacks += row.fast->ok() ? 0 : 1;
  }
  return totals;
}

void write_modeled(std::ofstream& md, const std::vector<Row>& rows) {
  const runtime::emulator::DeviceSpec& device = runtime::emulator::find_device(kModeledDevice);
  md << "\n## Modeled batch-1 time per layer (H100 SXM)\n\n";
  md << fmt::format(
      "One token's launch of each layer (batch 1: one matvec; `nf4_gemm` with m = 1), built with `\"schedule\": "
      "\"seed\"` and with `\"schedule\": \"fast\"`, compiled as above, run once on the PTX emulator and modeled by "
      "the cost model of `quantc profile` (runtime/backends/emulator/CostModel.h) on the {} ({} SMs, {:.2f} TB/s; "
      "registers from `ptxas -v`). The counters do not depend on the data, so each (shape, scheme, schedule) is "
      "profiled once and its figures hold for every layer of that shape (the 6 encoder layers are identical). "
      "Limit: the one that sets the modeled time (`limit_key()`: dram_bandwidth, latency, issue_<pipe>, ctas = SMs "
      "idle for want of CTAs). HBM: memory-bound time / modeled time. The model leaves out the launch overhead (a "
      "few us per launch on the host), so the per-token totals are kernel time only.\n\n",
      device.name, device.sms, device.dram_bandwidth / 1e12);
  md << "| in x out | linears | scheme | seed us | seed limit | seed HBM | fast us | fast limit | fast HBM | "
        "speed-up | memory-bound us | fast CTAs | fast sectors/req | fast warp instr/packed B |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> errors;
  for (const ShapeScheme& group : shape_schemes(rows)) {
    const Modeled& seed = *group.first->seed;
    const Modeled& fast = *group.first->fast;
    md << fmt::format("| {}x{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} | {} | {} | {} |\n", group.in_dim,
                      group.out_dim, fmt::join(group.linears, ", "), group.scheme, micros_cell(seed), limit_cell(seed),
                      hbm_cell(seed), micros_cell(fast), limit_cell(fast), hbm_cell(fast), speedup_cell(seed, fast),
                      fast_or_seed(*group.first).memory_bound_micros(), fast.ok() ? std::to_string(fast.ctas) : "-",
                      fast.ok() ? fmt::format("{:.2f}", fast.sectors_per_request) : "-",
                      fast.ok() ? fmt::format("{:.3f}", fast.warp_instructions_per_packed_byte) : "-");
    for (const Modeled* modeled : {&seed, &fast}) {
      if (!modeled->ok()) {
        errors.push_back(fmt::format("{}x{} {} {}: {}", group.in_dim, group.out_dim, group.scheme, modeled->schedule,
                                     modeled->error));
      }
    }
  }
  for (const std::string& error : errors) md << "\n- cannot run: " << error;
  if (!errors.empty()) md << "\n";
  md << "\n### Per token, all reported layers\n\n";
  md << "| scheme | layers | seed us | fast us | speed-up | memory-bound us | fast HBM |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const TokenTotal& total : token_totals(rows)) {
    md << fmt::format("| {} | {} | {} | {:.2f}{} | {} | {:.2f} | {:.0f}% |\n", total.scheme, total.layers,
                      total.seed_complete ? fmt::format("{:.2f}", total.seed_us) : "n/a", total.fast_us,
                      total.fast_fallbacks ? fmt::format(" ({} layers seed)", total.fast_fallbacks) : "",
                      total.seed_complete && total.fast_us > 0 ? fmt::format("{:.2f}x", total.seed_us / total.fast_us)
                                                               : "n/a",
                      total.memory_bound_us, total.fast_us > 0 ? 100.0 * total.memory_bound_us / total.fast_us : 0.0);
  }
}

/// Findings from the modeled section: per-token totals and the limits at MiniLM's shapes.
void modeled_findings(const std::vector<Row>& rows, std::vector<std::string>& findings) {
  const auto totals = token_totals(rows);
  if (totals.empty()) return;
  int most_layers = 0;
  for (const TokenTotal& total : totals) most_layers = std::max(most_layers, total.layers);
  std::vector<std::string> parts;
  for (const TokenTotal& total : totals) {
    // A scheme with fewer layers (the K-quants: output.dense only) is not comparable: say so.
    parts.push_back(fmt::format("{}{} {:.1f} -> {:.1f} us ({:.1f}x)", total.scheme,
                                total.layers == most_layers ? "" : fmt::format(" ({} layers only)", total.layers),
                                total.seed_us, total.fast_us, total.fast_us > 0 ? total.seed_us / total.fast_us : 0.0));
  }
  findings.push_back(fmt::format("Modeled batch-1 time of one token through the {} reported layers on the H100 "
                                 "model, seed -> fast: {}. Kernel time only; the launch overhead is not modeled.",
                                 most_layers, fmt::join(parts, "; ")));
  std::map<std::string, int> limits;
  std::uint64_t fewest_ctas = UINT64_MAX, most_ctas = 0;
  double lowest_hbm = 1e9, highest_hbm = 0;
  int groups = 0;
  for (const ShapeScheme& group : shape_schemes(rows)) {
    const Modeled& fast = *group.first->fast;
    if (!fast.ok()) continue;
    ++groups;
    ++limits[fast.estimate->limit_key()];
    fewest_ctas = std::min(fewest_ctas, fast.ctas);
    most_ctas = std::max(most_ctas, fast.ctas);
    lowest_hbm = std::min(lowest_hbm, fast.estimate->hbm_fraction());
    highest_hbm = std::max(highest_hbm, fast.estimate->hbm_fraction());
  }
  if (groups == 0) return;
  std::vector<std::string> slower;  // shape/scheme pairs where fast does not beat the seed
  for (const ShapeScheme& group : shape_schemes(rows)) {
    const Modeled& seed = *group.first->seed;
    const Modeled& fast = *group.first->fast;
    if (seed.ok() && fast.ok() && fast.micros() >= seed.micros()) {
      slower.push_back(fmt::format("{}x{} {} ({:.2f} us fast vs {:.2f} us seed)", group.in_dim, group.out_dim,
                                   group.scheme, fast.micros(), seed.micros()));
    }
  }
  if (!slower.empty()) {
    findings.push_back(fmt::format("The fast schedule is not faster than the seed on the H100 model at: {}.",
                                   fmt::join(slower, "; ")));
  }
  std::vector<std::string> limit_parts;
  for (const auto& [key, count] : limits) limit_parts.push_back(fmt::format("{} on {}", key, count));
  findings.push_back(fmt::format(
      "The MiniLM shapes are too small to fill the GPU: the fast launches have {}-{} CTAs for the H100's {} SMs and "
      "reach {:.0f}-{:.0f}% of peak HBM bandwidth. The limit that dominates the fast kernels ({} shape/scheme "
      "pairs): {}.",
      fewest_ctas, most_ctas, runtime::emulator::find_device(kModeledDevice).sms, 100 * lowest_hbm, 100 * highest_hbm,
      groups, fmt::join(limit_parts, ", ")));
}

struct RunInfo {
  std::string sentence;
  std::string schedule;  // --schedule: what the accuracy runs request
  std::vector<examples::WordPiece::Token> tokens;
  std::size_t tokens_used = 0;
};

void write_report(const fs::path& dir, const std::vector<Row>& rows, const RunInfo& info,
                  const std::vector<std::string>& findings, const std::vector<std::string>& failures) {
  fs::create_directories(dir);
  std::ofstream csv(dir / "results.csv");
  csv << "layer,linear,scheme,schedule,in_dim,out_dim,relative_frobenius,cosine,max_abs,packed_bytes,sidecar_bytes,"
         "f32_bytes,sectors_per_request,warp_instructions_per_output,backend_mismatches,backend_max_difference,"
         "host_bound_ratio,seed_modeled_us,seed_limit,seed_hbm_fraction,fast_modeled_us,fast_limit,"
         "fast_hbm_fraction\n";
  // Modeled columns: one token's launch on the H100 model; empty where the schedule cannot run.
  const auto modeled_columns = [](const Modeled* modeled) {
    if (!modeled || !modeled->ok()) return std::string(",,");
    return fmt::format("{:.4f},{},{:.4f}", modeled->micros(), modeled->estimate->limit_key(),
                       modeled->estimate->hbm_fraction());
  };
  for (const Row& row : rows) {
    csv << fmt::format("{},{},{},{},{},{},{:.6e},{:.8f},{:.6e},{},{},{},{:.4f},{:.3f},{},{:.3e},{:.4f},{},{}\n",
                       row.layer, row.linear, row.scheme, row.schedule, row.in_dim, row.out_dim,
                       row.errors.relative_frobenius, row.errors.cosine, row.errors.max_abs, row.bytes.packed,
                       row.bytes.sidecar, row.bytes.f32, row.counters.sectors_per_request,
                       row.counters.warp_instructions_per_output, row.backend_mismatches, row.backend_difference,
                       row.host_bound_ratio, modeled_columns(row.seed), modeled_columns(row.fast));
  }
  std::ofstream md(dir / "report.md");
  md << "# all-MiniLM-L6-v2 through quantc's 4-bit kernels and from GGUF files\n\n";
  md << "Generated by `examples/minilm/run.sh` (examples/minilm/minilm_report.cpp); do not edit by hand.\n\n";
  md << fmt::format("Sentence: \"{}\" -> {} WordPiece tokens:", info.sentence, info.tokens.size());
  for (const auto& token : info.tokens) md << " `" << token.text << "`";
  md << fmt::format("; the first {} are used.\n\n", info.tokens_used);
  md << "Every kernel is built from the op registry, compiled with `lower::compile` (default -O2 pipeline, target "
        "sm_90) and run on the PTX emulator (runtime/backends/emulator) and on the reference interpreter (runtime/backends/reference); "
        "the two must agree bit for bit. Activations are the tokens' word-embedding rows (384-input layers) and GELU "
        "of the unquantized intermediate layer applied to them (output.dense, 1536 inputs). Errors compare the "
        "emulator's f32 output with the f64 product of the unquantized weight; bias is 0. Bytes: packed weights + "
        "sidecars (scales, zero points) vs the f32 weight. Counters are the emulator's, summed over the scheme's "
        "launches: global-load sectors per request, and warp instructions per output element.\n\n";
  md << "GGUF rows (`gguf-q4_0`, `gguf-q8_0`, `gguf-q6_k`, `gguf-q4_k`): the layers are not packed by quantc but "
        "read from GGUF files that examples/minilm/make_gguf.py writes with gguf-py, the GGUF format's reference "
        "implementation (its `GGUFWriter`, under llama.cpp's tensor names `blk.N.attn_q.weight`, ...). Q4_0 and Q8_0 "
        "are quantized by gguf-py (`gguf.quants.quantize`, its port of ggml's `quantize_row_*_ref`); gguf-py 0.19.0 "
        "cannot quantize the K-quants, so make_gguf.py encodes Q6_K and Q4_K itself with a plain absmax (min/max) "
        "rule and checks every block against gguf-py's dequantizer bit for bit: the K-quants' errors here are those "
        "of that rule, likely somewhat above llama.cpp's search-based quantizer. K-quants hold 256 weights per "
        "super-block along in_features, which divides only output.dense's 1536 (the other linears have 384), so Q6_K "
        "and Q4_K rows exist for output.dense only. The report reads each file with `runtime::GgufFile` and converts "
        "each layer with `convert_gguf`, the code `quantc convert --format gguf` runs: Q4_0 to `dequant_matmul_int4` "
        "(block 32, zero point 8), Q8_0 to `dequant_matmul_int8` (block 32), Q6_K to `dequant_matmul_int8` (block "
        "16, scale d * sc), Q4_K to `dequant_matmul_int4` in its offset mode (block 32, one per sub-block: scale "
        "d * sc, offset -(dmin * m), so w = q * s + o is ggml's d*sc*q - dmin*m). "
        "The converted buffers, read with the op's semantics, must equal ggml's dequantization of the file bit for "
        "bit, and x @ dequant(W) is checked with ggml's dequantization. Their bytes are the op's buffers (Q4_0: "
        "nibbles + f32 scale + f32 zero point per 32 weights, 0.1875 of f32, where the GGUF file's blocks hold 18 "
        "bytes per 32, 0.1406; Q6_K: i8 codes + an f32 scale per 16, 0.3125, where the file holds 210 bytes per 256, "
        "0.2051; Q4_K: nibbles + f32 scale + f32 offset per 32, 0.1875 as Q4_0, where the file holds 144 bytes per "
        "256, 0.1406). Like `nf4_gemm`, the dequant_matmul ops take all tokens as one matmul (m > 1: the seed program) "
        "unless `--schedule fast` (m = 1 per token).\n\n";
  md << fmt::format(
      "Schedule: the accuracy runs build each op with `\"schedule\": \"{}\"` (`--schedule`); the schedule column "
      "names the program that ran (`auto` resolved, as `quantc profile --schedules` names it: `auto` takes `fast` "
      "where the shape can run it, so the two matvec ops, one launch per token, run `fast`, while `nf4_gemm`, one "
      "GEMM over all {} tokens, runs `seed` for m > 1 since its fast program is the m = 1 GEMV; with `--schedule "
      "fast` it runs once per token with m = 1). The modeled section below profiles both schedules at batch 1.\n\n",
      info.schedule, info.tokens_used);
  md << "![errors](report.png)\n\n## Findings\n\n";
  for (const auto& finding : findings) md << "- " << finding << "\n";
  md << "\n## Assertions\n\n";
  md << "- emulator output == interpreter output, bit for bit, for every output of every layer and scheme;\n"
        "- interpreter output == host x @ dequant(W) (f64) within the recursive-summation bound "
        "in_dim * 2^-24 * sum_k |w_k x_k| (catches packing/layout mismatches; GGUF rows: sum_k (|q_k| + |z_k|) |s_k| "
        "|x_k|, Q4_K's offset mode sum_k (|q_k| |s_k| + |o_k|) |x_k|, the magnitude the dequant_matmul fast "
        "schedule's bound is stated in);\n"
        "- NF4 block 64 has a lower relative Frobenius error than symmetric INT4 per row, per layer;\n"
        "- affine INT4: error(g32) <= error(g64) <= error(g128), per layer;\n"
        "- every error against f64 is positive and finite (the kernel ran on the quantized weight);\n"
        "- GGUF: convert_gguf's buffers, read with the op's semantics, equal ggml's dequantization of the file "
        "(GgufFile::to_f32) bit for bit; GGUF Q8_0 and Q6_K have a lower error than every 4-bit scheme (GGUF Q4_K "
        "included), per layer.\n\n";
  if (failures.empty()) md << "All assertions held.\n";
  for (const auto& failure : failures) md << "- FAILED: " << failure << "\n";
  md << "\n## Summary by scheme\n\n";
  write_summary(md, rows);
  write_modeled(md, rows);
  md << "\n## Per layer and scheme\n\n";
  md << "Accuracy and counters of the runs above (schedule column); modeled: one token's launch, seed / fast (us, "
        "H100 model).\n\n";
  md << "| layer | linear | scheme | schedule | rel. Frobenius | cosine | max abs | packed + sidecar B | vs f32 | "
        "sectors/req | warp instr/output | emulator != interpreter | modeled seed / fast us |\n";
  md << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& row : rows) {
    const std::string modeled =
        row.seed && row.fast ? fmt::format("{} / {}", micros_cell(*row.seed), micros_cell(*row.fast)) : "-";
    md << fmt::format("| {} | {} | {} | {} | {:.4e} | {:.6f} | {:.3e} | {} + {} | {:.4f} | {} | {} | {} | {} |\n",
                      row.layer, row.linear, row.scheme, row.schedule, row.errors.relative_frobenius,
                      row.errors.cosine, row.errors.max_abs, row.bytes.packed, row.bytes.sidecar,
                      double(row.bytes.packed + row.bytes.sidecar) / double(row.bytes.f32),
                      format_counter(row.counters.sectors_per_request, 2),
                      format_counter(row.counters.warp_instructions_per_output, 1), row.backend_mismatches, modeled);
  }
}

LinearWeight dequantized_weight(const SchemeRun& scheme, const LinearWeight& weight) {
  switch (scheme.scheme) {
    case Scheme::Int4AffineGrouped: return dequantize(ir::ops::pack::pack_int4_affine_grouped(weight, scheme.group));
    case Scheme::Nf4: return dequantize(ir::ops::pack::pack_nf4(weight, scheme.group));
    case Scheme::Int4Symmetric: return dequantize(ir::ops::pack::pack_int4_symmetric(weight));
  }
  throw std::logic_error("unknown scheme");
}

bool same_bits(float a, float b) {
  std::uint32_t x = 0, y = 0;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

/// What a scheme's kernel computes, on the host: dequant(W), and per element the
/// magnitude its f32 summation bound is stated in (empty: |dequant(W)|).
struct HostModel {
  LinearWeight dequantized;
  std::vector<double> magnitude;  // LinearWeight order ([out][in]), or empty
};

/// Checks one layer's run under one scheme: both backends against each other and the
/// interpreter against the host model x @ dequant(W); failures are appended to
/// `failures`. The errors are the emulator's against `exact`.
Row check_run(int layer, const std::string& linear, const std::string& label, const Bytes& bytes,
              const HostModel& model, const KernelRun& run, const Matrix& x, const std::vector<double>& exact,
              std::vector<std::string>& failures) {
  const LinearWeight& dequantized = model.dequantized;
  Row row{layer, linear, label, dequantized.in_dim, dequantized.out_dim, {}, bytes, {}, 0, 0, 0, {}, nullptr, nullptr};
  const std::vector<double> host = product_f64(dequantized, x);
  const LinearWeight& weight = dequantized;  // the shape
  row.counters = run.counters;
  row.schedule = run.schedule;
  for (std::size_t e = 0; e < host.size(); ++e) {
    // The interpreter accumulates in f32 (nf4_gemm in f64) over in_dim terms, so it may
    // differ from the exact x @ dequant(W) by in_dim * 2^-24 * sum_k |w_k x_k|.
    const std::uint32_t t = std::uint32_t(e / weight.out_dim), i = std::uint32_t(e % weight.out_dim);
    double magnitude = 0;
    if (model.magnitude.empty()) {
      for (std::uint32_t k = 0; k < weight.in_dim; ++k) magnitude += std::fabs(double{dequantized.at(k, i)} * x.row(t)[k]);
    } else {
      for (std::uint32_t k = 0; k < weight.in_dim; ++k) {
        magnitude += model.magnitude[std::size_t{i} * weight.in_dim + k] * std::fabs(double{x.row(t)[k]});
      }
    }
    const double bound = weight.in_dim * std::ldexp(1.0, -24) * magnitude;
    row.host_bound_ratio = std::max(row.host_bound_ratio, std::fabs(run.reference[e] - host[e]) / std::max(bound, 1e-30));
    // Both backends execute the same optimised program with the same f32 operation
    // order (the emulator rounds every PTX instruction as the ISA defines), so they must
    // agree in every bit; any difference is a lowering or emulator bug.
    // The GPU runs the same PTX: with .rn on every float operation (no contraction) and
    // the same butterfly order it must agree in every bit too.
    if (!run.cuda.empty() && !same_bits(run.cuda[e], run.reference[e])) {
      failures.push_back(fmt::format("layer {} {} {}: GPU {:.9g} != interpreter {:.9g} at output {}", layer, linear,
                                     label, run.cuda[e], run.reference[e], e));
    }
    if (!same_bits(run.emulator[e], run.reference[e])) {
      if (row.backend_mismatches == 0) {
        failures.push_back(fmt::format("layer {} {} {}: emulator {:.9g} != interpreter {:.9g} at output {} (token {}, "
                                       "output {})",
                                       layer, linear, label, run.emulator[e], run.reference[e], e, t, i));
      }
      ++row.backend_mismatches;
      row.backend_difference = std::max(row.backend_difference, std::fabs(double{run.emulator[e]} - run.reference[e]));
    }
  }
  if (row.backend_mismatches > 0) {
    failures.push_back(fmt::format("layer {} {} {}: {} of {} outputs differ between emulator and interpreter (max {:.3e})",
                                   layer, linear, label, row.backend_mismatches, host.size(),
                                   row.backend_difference));
  }
  if (row.host_bound_ratio > 1.0) {
    failures.push_back(fmt::format("layer {} {} {}: interpreter output differs from x @ dequant(W) by {:.2f}x the "
                                   "summation bound (packing/layout mismatch between {} and the op?)",
                                   layer, linear, label, row.host_bound_ratio,
                                   label.starts_with("gguf-") ? "convert_gguf" : "ir/ops/HostPack"));
  }
  row.errors = compare(run.emulator, exact);
  // A quantized weight cannot reproduce the f64 product exactly: 0 (or NaN) means the
  // kernel did not run on the quantized weight as intended.
  if (!(row.errors.relative_frobenius > 0 && std::isfinite(row.errors.relative_frobenius))) {
    failures.push_back(fmt::format("layer {} {} {}: relative error {} against f64 is not a positive finite number",
                                   layer, linear, label, row.errors.relative_frobenius));
  }
  return row;
}

/// Packs `weight` with `scheme` (HostPack), runs it and checks it (check_run).
Row measure(int layer, const std::string& linear, const SchemeRun& scheme, const LinearWeight& weight,
            const Matrix& x, const std::vector<double>& exact, const std::string& schedule,
            std::vector<std::string>& failures) {
  const HostModel model{dequantized_weight(scheme, weight), {}};
  const KernelRun run = run_kernel(scheme, weight, x, schedule);
  return check_run(layer, linear, scheme.label(), bytes_of(scheme, weight), model, run, x, exact, failures);
}

/// Converts GGUF layer `gguf_layer` of `file` with convert_gguf (for the m the run uses),
/// checks that the op's buffers hold ggml's dequantization (GgufFile::to_f32, bit for
/// bit as ggml's dequantize_row_*) exactly, runs it and checks it (check_run, with
/// ggml's dequantization as dequant(W)). `batch1` receives the op for one token.
Row measure_gguf(int layer, const std::string& linear, const SchemeRun& scheme, const runtime::GgufFile& file,
                 const std::string& gguf_layer, const Matrix& x, const std::vector<double>& exact,
                 const std::string& schedule, OpChoice& batch1, std::vector<std::string>& failures) {
  const runtime::convert::ConvertedLayer converted =
      convert_gguf_layer(file, gguf_layer, schedule == "fast" ? 1 : x.rows);
  batch1 = converted_choice(converted, 1);
  const OpWeight op = op_weight(converted);
  const std::vector<float> ggml = file.to_f32(gguf_layer + ".weight");
  std::size_t differ = 0, first = 0;
  for (std::size_t e = 0; e < ggml.size(); ++e) {
    if (!same_bits(op.weight.values[e], ggml[e]) && differ++ == 0) first = e;
  }
  if (differ > 0) {
    failures.push_back(fmt::format("layer {} {} {}: {} of {} weights of convert_gguf's {} buffers differ from ggml's "
                                   "dequantization of {}.weight (first: out {}, in {}: {:.9g} vs {:.9g})",
                                   layer, linear, scheme.label(), differ, ggml.size(),
                                   converted.spec.at("op").get<std::string>(), gguf_layer, first / converted.in_features,
                                   first % converted.in_features, op.weight.values[first], ggml[first]));
  }
  const HostModel model{{converted.in_features, converted.out_features, ggml}, op.magnitude};
  const KernelRun run = run_converted(converted, x, schedule);
  Bytes bytes{0, 0, std::uint64_t{converted.in_features} * converted.out_features * 4};
  for (const auto& buffer : converted.buffers) {
    (buffer.name == "w" ? bytes.packed : bytes.sidecar) += buffer.array.buffer.bytes.size();
  }
  return check_run(layer, linear, scheme.label(), bytes, model, run, x, exact, failures);
}

std::optional<double> error_of(const std::vector<Row>& rows, int layer, const std::string& linear,
                               const std::string& scheme) {
  for (const Row& row : rows) {
    if (row.layer == layer && row.linear == linear && row.scheme == scheme) return row.errors.relative_frobenius;
  }
  return std::nullopt;
}

/// The asserted orderings (NF4 b64 < symmetric per row; affine g32 <= g64 <= g128; GGUF
/// Q8_0 below every 4-bit scheme) and the reported-only NF4 vs affine comparison at the
/// same group size and GGUF Q4_0 vs affine g32, its nearest quantc scheme.
void check_orderings(const std::vector<Row>& rows, std::vector<std::string>& failures,
                     std::vector<std::string>& findings) {
  int nf4_better = 0, compared = 0;
  double nf4_ratio_sum = 0;
  for (const Row& row : rows) {
    if (row.scheme != "nf4-b64") continue;
    const auto symmetric = error_of(rows, row.layer, row.linear, "int4-symmetric-row");
    if (symmetric && !(row.errors.relative_frobenius < *symmetric)) {
      failures.push_back(fmt::format("layer {} {}: NF4 block 64 error {:.4e} is not below symmetric INT4 per-row {:.4e}",
                                     row.layer, row.linear, row.errors.relative_frobenius, *symmetric));
    }
    const auto g64 = error_of(rows, row.layer, row.linear, "int4-affine-g64");
    if (g64) {
      ++compared;
      nf4_better += row.errors.relative_frobenius < *g64 ? 1 : 0;
      nf4_ratio_sum += row.errors.relative_frobenius / *g64;
    }
  }
  for (const Row& row : rows) {
    const auto g32 = error_of(rows, row.layer, row.linear, "int4-affine-g32");
    const auto g64 = error_of(rows, row.layer, row.linear, "int4-affine-g64");
    const auto g128 = error_of(rows, row.layer, row.linear, "int4-affine-g128");
    if (row.scheme == "int4-affine-g32" && g64 && *g32 > *g64) {
      failures.push_back(fmt::format("layer {} {}: affine g32 error {:.4e} exceeds g64 {:.4e}", row.layer, row.linear,
                                     *g32, *g64));
    }
    if (row.scheme == "int4-affine-g64" && g128 && *g64 > *g128) {
      failures.push_back(fmt::format("layer {} {}: affine g64 error {:.4e} exceeds g128 {:.4e}", row.layer, row.linear,
                                     *g64, *g128));
    }
  }
  if (compared > 0) {
    findings.push_back(fmt::format(
        "NF4 (block 64, one f32 absmax per block) vs affine INT4 (group 64, f32 scale + u32 zero point): NF4 has the "
        "lower error on {} of {} layers (mean error ratio NF4/affine {:.3f}). QLoRA (Dettmers et al. 2023) finds NF4 "
        "better than 4-bit integer formats on normally distributed weights; these real weights {}. The affine scheme "
        "spends twice NF4's sidecar bytes (scale + zero point vs one scale) and fits an asymmetric range per group.",
        nf4_better, compared, nf4_ratio_sum / compared,
        nf4_better * 2 > compared ? "agree" : (nf4_better == 0 ? "do not agree" : "agree only partly")));
  }
  // 8-bit codes against 4-bit ones: Q8_0's step is about 1/16 of a 4-bit step per block.
  const std::vector<std::string> four_bit = {"int4-affine-g32", "int4-affine-g64", "int4-affine-g128", "nf4-b64",
                                             "int4-symmetric-row", "gguf-q4_0", "gguf-q4_k"};
  // Q6_K's 6-bit codes, one step per 16 weights: about 1/4 of a 4-bit step.
  for (const Row& row : rows) {
    if (row.scheme != "gguf-q8_0" && row.scheme != "gguf-q6_k") continue;
    for (const std::string& other : four_bit) {
      const auto error = error_of(rows, row.layer, row.linear, other);
      if (error && !(row.errors.relative_frobenius < *error)) {
        failures.push_back(fmt::format("layer {} {}: {} error {:.4e} is not below {} {:.4e}", row.layer, row.linear,
                                       row.scheme, row.errors.relative_frobenius, other, *error));
      }
    }
  }
  int q4_better = 0, q4_compared = 0;
  double q4_ratio_sum = 0, q8_ratio_sum = 0;
  int q8_compared = 0;
  for (const Row& row : rows) {
    const auto g32 = error_of(rows, row.layer, row.linear, "int4-affine-g32");
    if (!g32) continue;
    if (row.scheme == "gguf-q4_0") {
      ++q4_compared;
      q4_better += row.errors.relative_frobenius < *g32 ? 1 : 0;
      q4_ratio_sum += row.errors.relative_frobenius / *g32;
    } else if (row.scheme == "gguf-q8_0") {
      ++q8_compared;
      q8_ratio_sum += row.errors.relative_frobenius / *g32;
    }
  }
  if (q4_compared > 0) {
    findings.push_back(fmt::format(
        "GGUF Q4_0 (gguf-py's quantizer: blocks of 32, one f16 scale d = max/-8 with max the element of largest "
        "magnitude, codes q - 8 in -8..7; run as dequant_matmul_int4 after convert_gguf) vs quantc's affine INT4 "
        "group 32 (f32 scale and zero point fitted to each group's min and max): Q4_0 has the lower error on {} of "
        "{} layers (mean error ratio Q4_0/affine {:.3f}). Same block length and code width, but Q4_0's 16 levels are "
        "fixed around 0 (from -|max| to 7/8 |max|, or mirrored) where the affine scheme spreads them over [min, max], "
        "and its scale is rounded to f16 after the codes are chosen.",
        q4_better, q4_compared, q4_ratio_sum / q4_compared));
  }
  if (q8_compared > 0) {
    findings.push_back(fmt::format("GGUF Q8_0 (8-bit codes, one f16 scale per 32) has {:.3f}x affine INT4 g32's "
                                   "error on average ({} layers).",
                                   q8_ratio_sum / q8_compared, q8_compared));
  }
  double q6_ratio_sum = 0;
  int q6_compared = 0;
  for (const Row& row : rows) {
    if (row.scheme != "gguf-q6_k") continue;
    const auto q8 = error_of(rows, row.layer, row.linear, "gguf-q8_0");
    if (!q8) continue;
    ++q6_compared;
    q6_ratio_sum += row.errors.relative_frobenius / *q8;
  }
  double q4k_q40_sum = 0, q4k_g32_sum = 0;
  int q4k_compared = 0, q4k_better = 0;
  for (const Row& row : rows) {
    if (row.scheme != "gguf-q4_k") continue;
    const auto q40 = error_of(rows, row.layer, row.linear, "gguf-q4_0");
    const auto g32 = error_of(rows, row.layer, row.linear, "int4-affine-g32");
    if (!q40 || !g32) continue;
    ++q4k_compared;
    q4k_better += row.errors.relative_frobenius < *q40 ? 1 : 0;
    q4k_q40_sum += row.errors.relative_frobenius / *q40;
    q4k_g32_sum += row.errors.relative_frobenius / *g32;
  }
  if (q4k_compared > 0) {
    findings.push_back(fmt::format(
        "GGUF Q4_K (4-bit codes 0..15 per 32 weights with a 6-bit scale and a 6-bit min under f16 super-scales per "
        "256; encoded by make_gguf.py's plain min/max rule; run as dequant_matmul_int4's offset mode, block 32, "
        "after convert_gguf) has {:.2f}x GGUF Q4_0's error and {:.2f}x affine INT4 g32's on output.dense on average "
        "(lower than Q4_0 on {} of {} layers): like the affine scheme it spreads its 16 levels over each block's "
        "range, with scale and min rounded to 6 bits.",
        q4k_q40_sum / q4k_compared, q4k_g32_sum / q4k_compared, q4k_better, q4k_compared));
  }
  if (q6_compared > 0) {
    findings.push_back(fmt::format(
        "GGUF Q6_K (6-bit codes, an 8-bit scale per 16 weights under an f16 scale per 256; encoded by make_gguf.py's "
        "plain absmax rule, not llama.cpp's search, since gguf-py 0.19.0 cannot quantize Q6_K; run as "
        "dequant_matmul_int8 block 16 after convert_gguf) has {:.2f}x GGUF Q8_0's error on output.dense on average "
        "({} layers).",
        q6_ratio_sum / q6_compared, q6_compared));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Quantize all-MiniLM-L6-v2's linear layers with quantc's 4-bit schemes (and convert them from GGUF "
               "files), run them on the PTX emulator and the reference interpreter, and report the error against f64"};
  std::string model_dir = "data/models/all-MiniLM-L6-v2", report_dir = "examples/minilm/report";
  std::string gguf_dir = "data/models/all-MiniLM-L6-v2-gguf";
  std::string layers_text = "all", linears_text = "all", schemes_text = "all", schedule = "auto";
  std::string sentence = "The quick brown fox jumps over the lazy dog near the riverbank.";
  std::size_t token_limit = 0;
  app.add_option("--model-dir", model_dir, "folder with model.safetensors and vocab.txt (scripts/fetch_model.sh)");
  app.add_option("--report-dir", report_dir, "where report.md and results.csv go");
  app.add_option("--layers", layers_text, "comma-separated layer indices 0..5, or all");
  app.add_option("--linears", linears_text, "comma-separated indices into query,key,value,attention.output.dense,"
                                            "intermediate.dense,output.dense (0..5), or all");
  app.add_option("--schemes", schemes_text, "comma-separated indices into int4-affine g32,g64,g128, nf4 b64, "
                                            "int4-symmetric, gguf-q4_0, gguf-q8_0, gguf-q6_k, gguf-q4_k (0..8; "
                                            "q6_k and q4_k: output.dense only), or all");
  app.add_option("--gguf-dir", gguf_dir, "folder with all-MiniLM-L6-v2-{Q4_0,Q8_0,Q6_K,Q4_K}.gguf, the GGUF "
                                         "schemes' layers (examples/minilm/make_gguf.py writes them)")
      ->capture_default_str();
  app.add_option("--sentence", sentence, "the English sentence whose tokens give the activations");
  app.add_option("--tokens", token_limit, "use only the first N tokens of the sentence (0 = all)");
  app.add_option("--schedule", schedule, "the \"schedule\" of every op in the accuracy runs: auto (fast where the "
                                         "shape can run it), seed or fast (nf4_gemm then runs once per token, m = 1); "
                                         "the modeled section always profiles seed and fast")
      ->check(CLI::IsMember({"auto", "seed", "fast"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const fs::path model_path = fs::path(model_dir) / "model.safetensors";
  if (!fs::exists(model_path)) {
    const char* skip = std::getenv("QUANTC_SKIP_MODEL_TESTS");
    if (skip && std::string(skip) == "1") {
      fmt::print("SKIPPED (QUANTC_SKIP_MODEL_TESTS=1): {} is absent\n", model_path.string());
      return kSkipped;
    }
    fmt::print(stderr, "minilm_report: error: {} is absent; run scripts/fetch_model.sh first (or set "
               "QUANTC_SKIP_MODEL_TESTS=1 to skip the real-model tests)\n", model_path.string());
    return 2;
  }

  try {
    const runtime::SafetensorsFile model = runtime::SafetensorsFile::open(model_path.string());
    const examples::WordPiece tokenizer((fs::path(model_dir) / "vocab.txt").string());
    RunInfo info{sentence, schedule, tokenizer.tokenize(sentence), 0};
    std::vector<int> ids;
    for (const auto& token : info.tokens) ids.push_back(token.id);
    if (token_limit > 0 && ids.size() > token_limit) ids.resize(token_limit);
    if (ids.empty()) throw std::invalid_argument(fmt::format("--sentence \"{}\" has no tokens", sentence));
    info.tokens_used = ids.size();
    const Matrix embeddings = embedding_rows(model, ids);
    const auto schemes = all_schemes();
    const auto layers = parse_list(layers_text, 6, "--layers");
    const auto linears = parse_list(linears_text, std::uint32_t(kLinears.size()), "--linears");
    std::vector<std::uint32_t> scheme_indices = parse_list(schemes_text, std::uint32_t(schemes.size()), "--schemes");

    std::vector<Row> rows;
    std::vector<std::string> failures, findings;
    // The GGUF files of the requested GGUF schemes; a missing one (gguf-py was not there
    // to write it) drops its scheme with a warning, or is an error in CI.
    std::map<runtime::GgmlType, runtime::GgufFile> gguf_files;
    std::vector<std::string> missing;
    std::erase_if(scheme_indices, [&](std::uint32_t index) {
      const SchemeRun& scheme = schemes.at(index);
      if (!scheme.gguf) return false;
      const fs::path path = gguf_path(gguf_dir, *scheme.gguf);
      if (!fs::exists(path)) {
        missing.push_back(path.string());
        return true;
      }
      gguf_files.emplace(*scheme.gguf, runtime::GgufFile::open(path.string()));
      return false;
    });
    if (!missing.empty()) {
      const std::string reason = fmt::format(
          "{} absent: examples/minilm/make_gguf.py writes the GGUF files with gguf-py (examples/minilm/run.sh runs "
          "it; scripts/setup.sh installs gguf-py 0.19.0 into data/python)",
          fmt::join(missing, " and "));
      if (gguf_required()) {
        fmt::print(stderr, "minilm_report: error: {} (QUANTC_REQUIRE_PTXAS=1 or QUANTC_REQUIRE_GGUF_PY=1: a failure, "
                   "not a skip)\n", reason);
        return 2;
      }
      fmt::print(stderr, "minilm_report: warning: GGUF rows skipped: {}; set QUANTC_REQUIRE_GGUF_PY=1 to fail "
                 "instead\n", reason);
      findings.push_back(fmt::format("GGUF rows skipped: {}.", reason));
    }
    ModelCache modeled;  // must outlive rows: they point into it
    for (std::uint32_t layer : layers) {
      std::optional<Matrix> hidden;
      for (std::uint32_t linear_index : linears) {
        const std::string& linear = kLinears.at(linear_index);
        const std::string name = fmt::format("encoder.layer.{}.{}.weight", layer, linear);
        // PyTorch nn.Linear stores [out_features, in_features]: in_dim is axis 1.
        const LinearWeight weight = runtime::pack::linear_weight_from_tensor(model, name, /*transpose=*/true);
        if (weight.in_dim != embeddings.cols && !hidden) hidden = intermediate_activations(model, int(layer), embeddings);
        const Matrix& x = weight.in_dim == embeddings.cols ? embeddings : *hidden;
        const std::vector<double> exact = product_f64(weight, x);
        for (std::uint32_t scheme_index : scheme_indices) {
          const SchemeRun& scheme = schemes.at(scheme_index);
          if (!scheme.applies_to(weight.in_dim)) continue;  // K-quants: output.dense only
          fmt::print("layer {} {:<24} {:<20}", layer, linear, scheme.label());
          std::fflush(stdout);
          const std::string gguf_layer = fmt::format("blk.{}.{}", layer, kGgufLinears.at(linear_index));
          OpChoice batch1;
          Row row = scheme.gguf ? measure_gguf(int(layer), linear, scheme, gguf_files.at(*scheme.gguf), gguf_layer, x,
                                               exact, schedule, batch1, failures)
                                : measure(int(layer), linear, scheme, weight, x, exact, schedule, failures);
          if (!scheme.gguf) batch1 = pack_choice(scheme, weight.in_dim, weight.out_dim, 1);
          row.seed = &modeled.get(scheme, weight.in_dim, weight.out_dim, "seed", batch1);
          row.fast = &modeled.get(scheme, weight.in_dim, weight.out_dim, "fast", batch1);
          fmt::print(" [{}] rel {:.4e} cos {:.6f} max {:.3e} sectors/req {:.2f} instr/out {:.1f} emu!=interp {} | "
                     "modeled us seed {} ({}) fast {} ({})\n",
                     row.schedule, row.errors.relative_frobenius, row.errors.cosine, row.errors.max_abs,
                     row.counters.sectors_per_request, row.counters.warp_instructions_per_output,
                     row.backend_mismatches, micros_cell(*row.seed), limit_cell(*row.seed), micros_cell(*row.fast),
                     limit_cell(*row.fast));
          rows.push_back(row);
        }
      }
    }
    check_orderings(rows, failures, findings);
    modeled_findings(rows, findings);
    if (token_limit > 0) {
      findings.push_back(fmt::format("Run with --tokens {}: {} of the sentence's {} tokens feed the layers.", token_limit,
                                     info.tokens_used, info.tokens.size()));
    }
    write_report(report_dir, rows, info, findings, failures);
    fmt::print("wrote {}/report.md and results.csv ({} rows)\n", report_dir, rows.size());
    for (const auto& finding : findings) fmt::print("finding: {}\n", finding);
    for (const auto& failure : failures) fmt::print("FAILED: {}\n", failure);
    return failures.empty() ? 0 : 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "minilm_report: error: {}\n", error.what());
    return 2;
  }
}
