// quantc run SPEC.json [--backend NAME] [--input NAME=FILE.npy]... [--random-inputs SEED]
//                      [--output NAME=FILE.npy]... [--compare BACKEND] [--tolerance T]
//                      [--threads N] [--stats] [--target sm_XX] [--time N [--warmup N]]
//                      [pipeline flags]
// quantc run FILE.ptx [--entry NAME] --grid X[,Y,Z] --block X[,Y,Z] [--shared-bytes N]
//                     [--arg ARG]... [--output INDEX=FILE.npy]... [--backend emulator|cuda] [--stats]
//                     [--time N [--warmup N]]
//
// A spec runs the program after the pass pipeline (-O2 by default) on any backend of the
// registry (runtime/backends/Registry.h; default reference); --compare BACKEND runs a
// second backend on the same inputs as the oracle. A PTX module (tools/PtxLaunchFlags.h
// says how a file is recognised) launches one entry with the given arguments on a PTX
// backend (default emulator).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "runtime/backends/Registry.h"
#include "runtime/backends/emulator/Profile.h"
#include "runtime/io/Npy.h"
#include "tools/CommandSupport.h"
#include "tools/PtxLaunchFlags.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

constexpr const char* kSpecDefaultBackend = "reference";
constexpr const char* kPtxDefaultBackend = "emulator";

struct RunOptions {
  std::string path;
  std::optional<std::string> backend;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::optional<std::uint64_t> random_seed;
  std::optional<std::string> compare;
  std::optional<std::string> target;
  double tolerance = 1e-5;
  unsigned threads = 1;
  bool statistics = false;
  unsigned timed_launches = 0;
  unsigned warmup_launches = 10;
  PipelineFlags pipeline;
  PtxLaunchFlags ptx;
};

/// The options only a spec takes, rejected for a PTX module.
const std::vector<std::string>& spec_only_options() {
  static const std::vector<std::string> names = {"--input",   "--random-inputs", "--compare", "--tolerance",
                                                 "--target",  "--threads",       "-O",        "--passes",
                                                 "--print-ir-after-all", "--print-ir-after", "--time-passes",
                                                 "--verify-each"};
  return names;
}

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

/// The logical part (output byte range) of an output buffer.
runtime::HostBuffer logical_output(const ir::BufferDecl& decl, const runtime::HostBuffer& buffer) {
  ir::ByteRange range = decl.readable_range();
  return runtime::HostBuffer{decl.element, std::vector<std::uint8_t>(buffer.bytes.begin() + static_cast<long>(range.begin),
                                                                     buffer.bytes.begin() + static_cast<long>(range.end))};
}

/// Prints the per-buffer max abs/rel difference; returns false when beyond tolerance.
bool compare_outputs(const ir::Program& program, const runtime::BufferSet& actual, const runtime::BufferSet& expected,
                     const std::string& label, const std::string& oracle, double tolerance) {
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
    fmt::print("compare {} vs {}: {}: max abs diff {:g}, max rel diff {:g} ({})\n", label, oracle, decl.name, max_abs,
               max_rel, ok ? "ok" : fmt::format("exceeds tolerance {:g}", tolerance));
  }
  return within;
}

/// The counters a run reported, per output element; a line saying so when there are none.
void print_counters(const runtime::Backend& backend, const runtime::RunReport& report, const std::string& kernel,
                    const std::string& target, std::uint64_t output_elements, const ir::Program* program) {
  if (report.statistics && program != nullptr) fmt::print("{}", runtime::reference::format_statistics(*report.statistics, *program));
  if (report.counters) {
    fmt::print("{}", runtime::emulator::format_counters(kernel, target, *report.counters, output_elements));
  }
  if (!report.has_counters()) fmt::print("backend {} reports no counters\n", backend.name());
}

/// --time needs a backend that measures kernels on hardware; checked before any work.
void check_timing(const RunOptions& options, const std::string& backend_name) {
  if (options.timed_launches == 0) return;
  const runtime::RegisteredBackend* entry = runtime::find_backend(backend_name);
  if (entry != nullptr && !entry->info.times_kernels) {
    throw CommandError(fmt::format("--time {}: backend '{}' does not time kernels on hardware; use --backend cuda "
                                   "(for the emulator's modeled time, run `quantc profile`)",
                                   options.timed_launches, backend_name));
  }
}

runtime::RunOptions backend_run_options(const RunOptions& options) {
  runtime::RunOptions run_options;
  run_options.threads = options.threads;
  run_options.counters = options.statistics;
  run_options.timed_launches = options.timed_launches;
  run_options.warmup_launches = options.warmup_launches;
  return run_options;
}

/// One line per timed run: `bench/gpu/run.sh` reads the median from it.
void print_times(const std::string& kernel, const runtime::RunReport& report) {
  if (!report.times) return;
  const runtime::KernelTimes& times = *report.times;
  fmt::print("time {}: median {:.3f} us, min {:.3f} us over {} launches after {} warm-up (L2 flushed with {} MiB "
             "before each)\n",
             kernel, times.median(), times.min(), times.microseconds.size(), times.warmup_launches,
             times.l2_flush_bytes >> 20);
}

/// The --compare value: a registered backend other than the one that ran.
std::unique_ptr<runtime::Backend> make_oracle(const std::string& name) {
  if (runtime::find_backend(name) == nullptr) {
    throw CommandError(fmt::format("--compare '{}': no such backend; the backends are: {}", name, runtime::backend_list()));
  }
  return runtime::make_backend(name);
}

void run_spec(const RunOptions& options, const std::string& text, const CLI::App& command) {
  reject_options(command, PtxLaunchFlags::names(),
                 fmt::format("applies to PTX modules; '{}' is an op spec (its buffers are --input NAME=FILE.npy)",
                             options.path));
  ir::ops::OpSpec spec = ir::ops::parse_spec(text, options.path);
  runtime::CompileOptions compile_options;
  compile_options.passes = options.pipeline.pass_options(&spec);
  compile_options.target = requested_target(options.target, spec);
  const ir::Program source = ir::ops::build_program(spec);
  std::unique_ptr<runtime::Backend> oracle;
  if (options.compare) oracle = make_oracle(*options.compare);
  check_timing(options, options.backend.value_or(kSpecDefaultBackend));

  // The backend is made only now, so that every spec error is reported first (the CUDA
  // backend needs a driver and a device as soon as it exists).
  std::unique_ptr<runtime::Backend> backend = runtime::make_backend(options.backend.value_or(kSpecDefaultBackend));
  const runtime::BackendKernel kernel = backend->compile(source, compile_options);
  const ir::Program& program = kernel.program;
  runtime::BufferSet buffers = prepare_buffers(program, options);
  for (const std::string& binding : options.outputs) {
    auto [name, path] = split_binding(binding, "--output");
    if (program.find_buffer(name) == nullptr) {
      throw CommandError(fmt::format("--output {}: the program has no buffer named '{}'", binding, name));
    }
  }
  const runtime::BufferSet inputs = buffers;
  const runtime::RunReport report = backend->run(kernel, buffers, backend_run_options(options));

  for (const ir::BufferDecl& decl : program.buffers) {
    if (decl.is_output()) fmt::print("{}", format_buffer(decl.name, logical_output(decl, buffers.at(decl.name))));
  }
  if (options.statistics) {
    print_counters(*backend, report, program.name, kernel.target ? kernel.target->name() : "none",
                   runtime::output_element_count(program), &program);
  }
  print_times(program.name, report);
  bool within_tolerance = true;
  if (oracle) {
    // The oracle compiles the same program with the same pipeline, quietly.
    runtime::CompileOptions oracle_options = compile_options;
    oracle_options.passes.print_ir_after_all = false;
    oracle_options.passes.print_ir_after.clear();
    oracle_options.passes.time_passes = false;
    oracle_options.passes.log = nullptr;
    const runtime::BackendKernel oracle_kernel = oracle->compile(source, oracle_options);
    runtime::BufferSet expected = inputs;
    runtime::RunOptions oracle_run;
    oracle_run.threads = options.threads;
    oracle->run(oracle_kernel, expected, oracle_run);
    within_tolerance = compare_outputs(program, buffers, expected, std::string(backend->name()),
                                       std::string(oracle->name()), options.tolerance);
  }
  if (!within_tolerance) {
    throw CommandError(fmt::format("{} differs from {} beyond tolerance {:g}", backend->name(), oracle->name(),
                                   options.tolerance));
  }
  // Outputs are written only after every run succeeded, each atomically.
  for (const std::string& binding : options.outputs) {
    auto [name, path] = split_binding(binding, "--output");
    runtime::write_file_atomically(path, runtime::to_npy_bytes({logical_output(*program.find_buffer(name), buffers.at(name)), {}}));
  }
}

void run_ptx(const RunOptions& options, const std::string& text, const CLI::App& command) {
  reject_options(command, spec_only_options(),
                 fmt::format("applies to op specs; '{}' is a PTX module (give its arguments with --arg)", options.path));
  const std::string backend_name = options.backend.value_or(kPtxDefaultBackend);
  const runtime::RegisteredBackend* entry = runtime::find_backend(backend_name);
  if (entry != nullptr && entry->info.form != runtime::KernelForm::Ptx) {
    throw CommandError(fmt::format("backend '{}' runs quantc {}, not PTX; run '{}' with --backend {}", backend_name,
                                   runtime::to_string(entry->info.form), options.path,
                                   fmt::join(runtime::backend_names(runtime::KernelForm::Ptx), " or --backend ")));
  }
  check_timing(options, backend_name);
  PreparedPtxLaunch prepared = prepare_ptx_launch(text, options.ptx, options.outputs);
  std::unique_ptr<runtime::Backend> backend = runtime::make_backend(backend_name);
  const runtime::RunReport report = backend->launch_ptx(prepared.launch, prepared.buffers, backend_run_options(options));
  prepared.print_buffers();
  const std::string kernel = runtime::check_ptx_launch(prepared.launch, prepared.buffers).name;
  if (options.statistics) {
    const std::string target = report.counters ? runtime::emulator::parse_ptx(text).target : "";
    print_counters(*backend, report, kernel, target, prepared.output_elements(), nullptr);
  }
  print_times(kernel, report);
  // Outputs are written only after the run succeeded, each atomically.
  prepared.write_outputs();
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand("run", "Run a spec's kernel, or an entry of any PTX module, on a backend");
  command->add_option("file", options->path,
                      "Op spec (JSON), or a PTX module (*.ptx, or text starting with .version) to launch with "
                      "--entry/--grid/--block/--arg")
      ->required();
  std::string backends_help = fmt::format("Backend (default: {} for a spec, {} for PTX).", kSpecDefaultBackend,
                                          kPtxDefaultBackend);
  for (const runtime::RegisteredBackend& entry : runtime::backends()) {
    backends_help += fmt::format(" {}: {} [runs {}].", entry.info.name, entry.info.description,
                                 runtime::to_string(entry.info.form));
  }
  command->add_option("--backend", options->backend, backends_help)->check(CLI::IsMember(runtime::backend_names()));
  command->add_option("--input", options->inputs, "Spec: NAME=FILE.npy for an input buffer (repeatable)");
  command->add_option("--random-inputs", options->random_seed, "Spec: generate every input not given with --input from SEED");
  command->add_option("--output", options->outputs,
                      "Spec: NAME=FILE.npy saves an output buffer's logical range; PTX: INDEX=FILE.npy saves buffer "
                      "argument INDEX (0-based among the --arg values) (repeatable)");
  command->add_option("--compare", options->compare,
                      "Spec: also run this backend (e.g. reference) and report max abs/rel differences");
  command->add_option("--tolerance", options->tolerance, "Spec: max abs or rel difference accepted by --compare")
      ->capture_default_str();
  command->add_option("--target", options->target, "Spec: PTX target for PTX backends, e.g. sm_90");
  command->add_option("--threads", options->threads, "Spec: interpreter host threads (0: one per core)")
      ->capture_default_str();
  command->add_flag("--stats", options->statistics,
                    "Print the backend's counters per output (reference: operation counts; emulator: the profile "
                    "counters)");
  CLI::Option* time_option = command->add_option("--time", options->timed_launches,
                      "Time the kernel on the GPU (--backend cuda): after the checked run, N more launches timed "
                      "with CUDA events, each after an L2 flush; prints the median and minimum in microseconds")
      ->check(CLI::Range(1u, 100000u));
  command->add_option("--warmup", options->warmup_launches, "With --time: untimed launches before the timed ones")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100000u))
      ->needs(time_option);
  options->pipeline.add_to(*command);
  options->ptx.add_to(*command);
  command->callback([options, command] {
    const std::string text = read_text_file(options->path);
    if (is_ptx_file(options->path, text)) {
      run_ptx(*options, text, *command);
    } else {
      run_spec(*options, text, *command);
    }
  });
}

}  // namespace quantc::tools
