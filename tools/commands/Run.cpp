// quantc run SPEC.json [--backend reference|emulator|cuda] [--input NAME=FILE.npy]...
//                      [--random-inputs SEED] [--output NAME=FILE.npy]... [--compare reference]
//                      [--tolerance T] [--threads N] [--stats] [pipeline flags]
// Every backend runs the program after the pass pipeline (-O2 by default); --compare
// reference runs the interpreter on the same inputs as the oracle.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "runtime/io/Npy.h"
#include "runtime/backends/cuda/Launch.h"
#include "runtime/backends/emulator/Emulator.h"
#include "runtime/backends/reference/Interpreter.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

struct RunOptions {
  std::string spec_path;
  std::string backend = "reference";
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::optional<std::uint64_t> random_seed;
  std::optional<std::string> compare;
  std::optional<std::string> target;
  double tolerance = 1e-5;
  unsigned threads = 1;
  bool statistics = false;
  PipelineFlags pipeline;
};

bool is_unsigned_integer(ir::ScalarType type) { return ir::is_integer(type) && !ir::is_signed(type); }

runtime::BufferSet prepare_buffers(const ir::Program& program, const RunOptions& options) {
  runtime::BufferSet buffers = options.random_seed ? runtime::random_buffers(program, *options.random_seed)
                                                   : runtime::allocate_buffers(program);
  std::map<std::string, bool> provided;
  for (const std::string& binding : options.inputs) {
    auto [name, path] = split_binding(binding, "--input");
    const ir::BufferDecl* decl = program.find_buffer(name);
    if (decl == nullptr) throw CommandError(fmt::format("--input {}: the program has no buffer named '{}'", binding, name));
    runtime::NpyArray array = runtime::read_npy(path);
    // Packed codes are raw bytes: a u8 file may feed a u32 word buffer (and back) when
    // the byte sizes agree, e.g. quantize_nf4's `packed` into nf4_gemm's `b_nf4`.
    if (is_unsigned_integer(array.buffer.element) && is_unsigned_integer(decl->element) &&
        array.buffer.bytes.size() == decl->byte_size()) {
      array.buffer.element = decl->element;
    }
    if (array.buffer.element != decl->element || array.buffer.count() != decl->count) {
      throw CommandError(fmt::format("--input {}: buffer '{}' expects {} x {}, the file holds {} x {}", binding, name,
                                     decl->count, ir::to_string(decl->element), array.buffer.count(),
                                     ir::to_string(array.buffer.element)));
    }
    buffers[name] = std::move(array.buffer);
    provided[name] = true;
  }
  if (!options.random_seed) {
    std::string missing;
    for (const ir::BufferDecl& decl : program.buffers) {
      if (!decl.is_output() && !provided.count(decl.name)) missing += (missing.empty() ? "" : ", ") + decl.name;
    }
    if (!missing.empty()) {
      throw CommandError(fmt::format("missing inputs: {}; pass --input NAME=FILE.npy for each, or --random-inputs SEED",
                                     missing));
    }
  }
  return buffers;
}

void print_statistics(const runtime::reference::RunStatistics& statistics, const ir::Program& program) {
  const std::uint64_t outputs = runtime::output_element_count(program);
  const double per_output = outputs ? 1.0 / static_cast<double>(outputs) : 0.0;
  auto scaled = [per_output](std::uint64_t count) { return static_cast<double>(count) * per_output; };
  fmt::print("statistics ({} outputs): per output {:.1f} global loads, {:.1f} stores, {:.1f} shuffles, "
             "{:.1f} subgroup reductions, {:.1f} arithmetic ops\n",
             outputs, scaled(statistics.global_loads), scaled(statistics.global_stores), scaled(statistics.subgroup_shuffles),
             scaled(statistics.subgroup_reductions), scaled(statistics.arithmetic_ops));
  for (const auto& [buffer, loads] : statistics.loads_per_buffer) {
    fmt::print("  loads from {}: {:.2f} per output\n", buffer, scaled(loads));
  }
}

void run_backend(const RunOptions& options, const lower::CompiledKernel& kernel, runtime::BufferSet& buffers) {
  if (options.backend == "reference") {
    runtime::reference::RunStatistics statistics;
    runtime::reference::RunOptions run_options;
    run_options.threads = options.threads;
    run_options.statistics = options.statistics ? &statistics : nullptr;
    runtime::reference::run(kernel.program, buffers, run_options);
    if (options.statistics) print_statistics(statistics, kernel.program);
    return;
  }
  if (options.backend == "emulator") {
    runtime::emulator::run(kernel.ptx, kernel.program, buffers);
    return;
  }
  if (options.backend == "cuda") {
    runtime::cuda::CudaBackend gpu;  // throws DriverUnavailable with the fix when no GPU/driver
    return gpu.run(kernel.program, runtime::cuda::KernelImage::ptx(kernel.ptx), buffers);
  }
  throw CommandError(fmt::format("unknown backend '{}'; available: reference, emulator, cuda", options.backend));
}

/// Compiles for the backend: PTX backends need a target (the flag, else the spec's, else
/// the GPU's own for cuda); the interpreter runs the optimised IR.
lower::CompiledKernel compile_for_backend(const RunOptions& options, const ir::ops::OpSpec& spec) {
  lower::PassOptions passes = options.pipeline.pass_options(&spec);
  ir::Program program = ir::ops::build_program(spec);
  if (options.backend == "reference") return {lower::optimize(program, passes), {}};
  ptx::Target target = resolve_target(options.target, spec);
  if (options.backend == "cuda" && !options.target && !spec.target) target = runtime::cuda::CudaBackend().target();
  return lower::compile(program, {target, passes});
}

/// The logical part (output byte range) of an output buffer.
runtime::HostBuffer logical_output(const ir::BufferDecl& decl, const runtime::HostBuffer& buffer) {
  ir::ByteRange range = decl.readable_range();
  return runtime::HostBuffer{decl.element, std::vector<std::uint8_t>(buffer.bytes.begin() + static_cast<long>(range.begin),
                                                                     buffer.bytes.begin() + static_cast<long>(range.end))};
}

void print_output(const std::string& name, const runtime::HostBuffer& buffer) {
  const std::size_t count = buffer.count();
  std::string values;
  for (std::size_t i = 0; i < count; ++i) {
    if (count > 12 && i == 8) {
      values += " ...";
      i = count - 4;
    }
    values += fmt::format("{}{:g}", i == 0 ? "" : " ", runtime::element_as_double(buffer, i));
  }
  fmt::print("{} ({} x {}): [{}]\n", name, count, ir::to_string(buffer.element), values);
}

/// Prints the per-buffer max abs/rel difference; returns false when beyond tolerance.
bool compare_outputs(const ir::Program& program, const runtime::BufferSet& actual, const runtime::BufferSet& expected,
                     const std::string& label, double tolerance) {
  bool within = true;
  for (const ir::BufferDecl& decl : program.buffers) {
    if (!decl.is_output()) continue;
    runtime::HostBuffer a = logical_output(decl, actual.at(decl.name));
    runtime::HostBuffer e = logical_output(decl, expected.at(decl.name));
    double max_abs = 0, max_rel = 0;
    for (std::size_t i = 0; i < a.count(); ++i) {
      double x = runtime::element_as_double(a, i), y = runtime::element_as_double(e, i);
      if (std::isnan(x) && std::isnan(y)) continue;
      double diff = std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(x - y);
      max_abs = std::max(max_abs, diff);
      max_rel = std::max(max_rel, diff / std::max(std::fabs(y), 1e-30));
    }
    bool ok = max_abs <= tolerance || max_rel <= tolerance;
    within &= ok;
    fmt::print("compare {} vs {}: {}: max abs diff {:g}, max rel diff {:g} ({})\n", label, "reference", decl.name,
               max_abs, max_rel, ok ? "ok" : fmt::format("exceeds tolerance {:g}", tolerance));
  }
  return within;
}

void run_command(const RunOptions& options) {
  ir::ops::OpSpec spec = load_spec(options.spec_path);
  lower::CompiledKernel kernel = compile_for_backend(options, spec);
  const ir::Program& program = kernel.program;
  runtime::BufferSet buffers = prepare_buffers(program, options);
  runtime::BufferSet inputs = buffers;
  run_backend(options, kernel, buffers);

  for (const ir::BufferDecl& decl : program.buffers) {
    if (decl.is_output()) print_output(decl.name, logical_output(decl, buffers.at(decl.name)));
  }
  bool within_tolerance = true;
  if (options.compare) {
    if (*options.compare != "reference") throw CommandError(fmt::format("--compare supports 'reference', got '{}'", *options.compare));
    runtime::reference::RunOptions oracle_options;
    oracle_options.threads = options.threads;
    runtime::reference::run(program, inputs, oracle_options);
    within_tolerance = compare_outputs(program, buffers, inputs, options.backend, options.tolerance);
  }
  // Outputs are written only after every run succeeded, each atomically.
  for (const std::string& binding : options.outputs) {
    auto [name, path] = split_binding(binding, "--output");
    const ir::BufferDecl* decl = program.find_buffer(name);
    if (decl == nullptr) throw CommandError(fmt::format("--output {}: the program has no buffer named '{}'", binding, name));
    runtime::write_file_atomically(path, runtime::to_npy_bytes({logical_output(*decl, buffers.at(name)), {}}));
  }
  if (!within_tolerance) throw CommandError(fmt::format("{} differs from reference beyond tolerance {:g}", options.backend, options.tolerance));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand("run", "Run a spec's kernel on a backend and print its outputs");
  command->add_option("spec", options->spec_path, "Op spec (JSON)")->required();
  command->add_option("--backend", options->backend, "reference (the IR interpreter), emulator (the PTX on the CPU) or cuda (a GPU)")
      ->check(CLI::IsMember({"reference", "emulator", "cuda"}))
      ->capture_default_str();
  command->add_option("--input", options->inputs, "NAME=FILE.npy for an input buffer (repeatable)");
  command->add_option("--random-inputs", options->random_seed, "Generate every input not given with --input from SEED");
  command->add_option("--output", options->outputs, "NAME=FILE.npy to save an output buffer's logical range (repeatable)");
  command->add_option("--compare", options->compare, "Also run 'reference' and report max abs/rel differences");
  command->add_option("--tolerance", options->tolerance, "Max abs or rel difference accepted by --compare")->capture_default_str();
  command->add_option("--target", options->target, "PTX target for PTX backends, e.g. sm_90");
  command->add_option("--threads", options->threads, "Interpreter host threads (0: one per core)")->capture_default_str();
  command->add_flag("--stats", options->statistics, "Print the interpreter's dynamic operation counts per output");
  options->pipeline.add_to(*command);
  command->callback([options] { run_command(*options); });
}

}  // namespace quantc::tools
