// quantc run SPEC.json [--backend NAME] [--input NAME=FILE.npy]... [--inputs DIR|FILE.safetensors]...
//                      [--random-inputs SEED]
//                      [--output NAME=FILE.npy]... [--compare BACKEND] [--tolerance T]
//                      [--threads N] [--stats] [--target sm_XX]
//                      [--time N [--warmup N] [--timing isolated|back-to-back]] [pipeline flags]
// quantc run FILE.ptx [--entry NAME] --grid X[,Y,Z] --block X[,Y,Z] [--shared-bytes N]
//                     [--arg ARG]... [--output INDEX=FILE.npy]... [--backend emulator|cuda] [--stats]
//                     [--time N [--warmup N] [--timing isolated|back-to-back]]
//
// A spec runs the program after the pass pipeline (-O2 by default) on any backend of the
// registry (runtime/backends/Registry.h; default reference); --compare BACKEND runs a
// second backend on the same inputs as the oracle. A PTX module (tools/PtxLaunchFlags.h
// says how a file is recognised) launches one entry with the given arguments on a PTX
// backend (default emulator).
//
// Inputs of a spec come from --input NAME=FILE.npy, from --inputs DIR (every DIR/NAME.npy
// named after an input buffer, e.g. a bundle of `quantc convert` or `quantc pack`) and from
// --inputs FILE.safetensors (every tensor named after an input buffer). Each must have the
// buffer's element type and count, and, when the file is multi-dimensional, the buffer's
// logical shape (ir/ops/BufferShape.h) up to dimensions of size 1; a 1-D file of the right
// count is accepted as is.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

#include "ir/ops/BufferShape.h"
#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "runtime/backends/Registry.h"
#include "runtime/backends/emulator/Profile.h"
#include "runtime/io/InputArrays.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"
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
  std::vector<std::string> input_sources;  // --inputs DIR|FILE.safetensors
  std::vector<std::string> outputs;
  std::optional<std::string> random_seed;
  std::optional<std::string> compare;
  std::optional<std::string> target;
  double tolerance = 1e-5;
  unsigned threads = 1;
  bool statistics = false;
  unsigned timed_launches = 0;
  unsigned warmup_launches = 10;
  std::string timing = "isolated";  // a runtime::LaunchTiming name, checked by CLI11
  PipelineFlags pipeline;
  PtxLaunchFlags ptx;
};

/// The options only a spec takes, rejected for a PTX module.
const std::vector<std::string>& spec_only_options() {
  static const std::vector<std::string> names = {"--input",   "--inputs", "--random-inputs", "--compare", "--tolerance",
                                                 "--target",  "--threads",       "-O",        "--passes",
                                                 "--print-ir-after-all", "--print-ir-after", "--time-passes",
                                                 "--verify-each"};
  return names;
}

/// --random-inputs SEED: a decimal integer in 0..2^64-1.
std::optional<std::uint64_t> parse_seed(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::uint64_t seed = 0;
  const char* end = text->data() + text->size();
  auto [stop, error] = std::from_chars(text->data(), end, seed);
  if (text->empty() || error != std::errc() || stop != end) {
    throw CommandError(fmt::format("--random-inputs '{}': the seed must be an integer from 0 to {}", *text,
                                   std::numeric_limits<std::uint64_t>::max()));
  }
  return seed;
}

/// Where one input buffer's data comes from.
struct InputBinding {
  std::string name;   // the buffer
  std::string label;  // for messages: "--input x=x.npy", "--inputs DIR (DIR/w.npy)"
  std::string npy_path;                                   // a .npy file, or
  std::shared_ptr<const runtime::SafetensorsFile> model;  // a tensor of this file
};

/// The --input, --inputs and --output bindings, checked against the program before anything runs.
struct Bindings {
  std::vector<InputBinding> inputs;
  std::vector<std::pair<std::string, std::size_t>> outputs;  // buffer, index in `files`
  std::unique_ptr<runtime::OutputFiles> files = std::make_unique<runtime::OutputFiles>();
};

bool is_folder(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

bool is_regular_file(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
}

/// The buffers a caller gives data for: read by the kernel, not scratch.
std::vector<std::string> input_buffer_names(const ir::Program& program) {
  std::vector<std::string> names;
  for (const ir::BufferDecl& decl : program.buffers) {
    if (!decl.is_written() && !decl.is_scratch()) names.push_back(decl.name);
  }
  return names;
}

/// The bindings of one --inputs value: the input buffers DIR/NAME.npy or the
/// safetensors file provides.
std::vector<InputBinding> source_bindings(const ir::Program& program, const std::string& source) {
  std::vector<InputBinding> found;
  const std::vector<std::string> names = input_buffer_names(program);
  if (is_folder(source)) {
    for (const std::string& name : names) {
      const std::string path = (std::filesystem::path(source) / (name + ".npy")).string();
      if (is_regular_file(path)) found.push_back({name, fmt::format("--inputs {} ({})", source, path), path, nullptr});
    }
    if (found.empty()) {
      throw CommandError(fmt::format("--inputs {}: the folder holds none of the input buffers' files ({}.npy)", source,
                                     fmt::join(names, ".npy, ")));
    }
    return found;
  }
  if (!source.ends_with(".safetensors") || !is_regular_file(source)) {
    throw CommandError(fmt::format("--inputs {}: not a folder (of BUFFER.npy files) or a .safetensors file (of tensors "
                                   "named after the buffers)",
                                   source));
  }
  auto model = std::make_shared<const runtime::SafetensorsFile>(runtime::SafetensorsFile::open(source));
  for (const std::string& name : names) {
    if (model->contains(name)) found.push_back({name, fmt::format("--inputs {} (tensor '{}')", source, name), "", model});
  }
  if (found.empty()) {
    throw CommandError(fmt::format("--inputs {}: the file has no tensor named after an input buffer ({})", source,
                                   fmt::join(names, ", ")));
  }
  return found;
}

Bindings check_bindings(const ir::Program& program, const RunOptions& options) {
  Bindings bindings;
  std::map<std::string, std::string> seen;
  for (const std::string& binding : options.inputs) {
    auto [name, path] = split_binding(binding, "--input");
    runtime::input_buffer(program, name, "--input " + binding);
    if (auto [previous, inserted] = seen.emplace(name, "--input " + binding); !inserted) {
      throw CommandError(fmt::format("--input {}: buffer '{}' is already given by {}; give each buffer once", binding,
                                     name, previous->second));
    }
    bindings.inputs.push_back({name, "--input " + binding, path, nullptr});
  }
  for (const std::string& source : options.input_sources) {
    for (InputBinding& input : source_bindings(program, source)) {
      if (auto [previous, inserted] = seen.emplace(input.name, input.label); !inserted) {
        throw CommandError(fmt::format("{}: buffer '{}' is already given by {}; give each buffer once", input.label,
                                       input.name, previous->second));
      }
      bindings.inputs.push_back(std::move(input));
    }
  }
  for (const std::string& binding : options.outputs) {
    auto [name, path] = split_binding(binding, "--output");
    if (program.find_buffer(name) == nullptr) {
      throw CommandError(fmt::format("--output {}: the program has no buffer named '{}'; its buffers are: {}", binding,
                                     name, runtime::buffer_names(program)));
    }
    if (program.find_buffer(name)->is_scratch()) {
      throw CommandError(fmt::format("--output {}: buffer '{}' is the kernel's scratch memory (all zeros after every "
                                     "launch), not an output; drop this --output",
                                     binding, name));
    }
    try {
      bindings.outputs.emplace_back(name, bindings.files->add(path, /*allow_stdout=*/true));
    } catch (const runtime::RuntimeError& error) {
      throw CommandError(fmt::format("--output {}: {}", binding, error.what()));
    }
  }
  return bindings;
}

/// The element type quantc reads a safetensors dtype as; CommandError for the dtypes no
/// buffer holds.
ir::ScalarType element_of(runtime::SafetensorsDtype dtype, const std::string& label) {
  using runtime::SafetensorsDtype;
  switch (dtype) {
    case SafetensorsDtype::Bool: return ir::ScalarType::Bool;
    case SafetensorsDtype::U8: return ir::ScalarType::U8;
    case SafetensorsDtype::I8: return ir::ScalarType::I8;
    case SafetensorsDtype::U16: return ir::ScalarType::U16;
    case SafetensorsDtype::U32: return ir::ScalarType::U32;
    case SafetensorsDtype::I32: return ir::ScalarType::I32;
    case SafetensorsDtype::U64: return ir::ScalarType::U64;
    case SafetensorsDtype::I64: return ir::ScalarType::I64;
    case SafetensorsDtype::F16: return ir::ScalarType::F16;
    case SafetensorsDtype::BF16: return ir::ScalarType::BF16;
    case SafetensorsDtype::F32: return ir::ScalarType::F32;
    case SafetensorsDtype::F64: return ir::ScalarType::F64;
    default: break;
  }
  throw CommandError(fmt::format("{}: dtype {} is not an element type of any quantc buffer", label,
                                 runtime::safetensors_dtype_name(dtype)));
}

runtime::NpyArray read_input(const InputBinding& input) {
  if (!input.model) return runtime::read_npy(input.npy_path);
  const runtime::SafetensorsTensor& tensor = input.model->tensor(input.name);
  runtime::NpyArray array;
  array.buffer.element = element_of(tensor.dtype, input.label);
  array.buffer.bytes.assign(tensor.bytes.begin(), tensor.bytes.end());
  array.shape = tensor.shape;
  return array;
}

runtime::BufferSet prepare_buffers(const ir::Program& program, const ir::ops::OpSpec& spec, const Bindings& bindings,
                                   std::optional<std::uint64_t> seed) {
  runtime::BufferSet buffers = seed ? runtime::random_buffers(program, *seed) : runtime::allocate_buffers(program);
  std::map<std::string, bool> provided;
  for (const InputBinding& input : bindings.inputs) {
    const ir::BufferDecl* decl = program.find_buffer(input.name);
    runtime::NpyArray array = read_input(input);
    buffers[input.name] = runtime::accept_input_array(spec, *decl, std::move(array), input.label);
    provided[input.name] = true;
  }
  if (!seed) {
    std::string missing;
    for (const ir::BufferDecl& decl : program.buffers) {
      if (!decl.is_written() && !provided.count(decl.name)) missing += (missing.empty() ? "" : ", ") + decl.name;
    }
    if (!missing.empty()) {
      throw CommandError(fmt::format("missing inputs: {}; pass --input NAME=FILE.npy for each (or --inputs DIR with "
                                     "NAME.npy files), or --random-inputs SEED",
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

/// Prints, per output, "bit-exact" when the bytes are identical, else how many elements
/// differ, the max abs/rel difference and how many elements are beyond `tolerance`: an
/// element is within it when its abs or its rel difference is at most `tolerance` (so an
/// output near zero from cancellation, or a large one a few ulps off, both pass), and NaN
/// where the oracle has NaN. Returns false when an element is beyond it.
bool compare_outputs(std::FILE* report, const ir::Program& program, const runtime::BufferSet& actual,
                     const runtime::BufferSet& expected, const std::string& label, const std::string& oracle,
                     double tolerance) {
  bool within = true;
  for (const ir::BufferDecl& decl : program.buffers) {
    if (!decl.is_output()) continue;
    runtime::HostBuffer a = logical_output(decl, actual.at(decl.name));
    runtime::HostBuffer e = logical_output(decl, expected.at(decl.name));
    if (a.bytes == e.bytes) {
      fmt::print(report, "compare {} vs {}: {}: bit-exact ({} elements)\n", label, oracle, decl.name, a.count());
      continue;
    }
    const std::size_t element_bytes = ir::byte_size(decl.element);
    double max_abs = 0, max_rel = 0;
    std::size_t differing = 0, beyond = 0;
    for (std::size_t i = 0; i < a.count(); ++i) {
      if (std::memcmp(a.bytes.data() + i * element_bytes, e.bytes.data() + i * element_bytes, element_bytes) == 0) {
        continue;
      }
      ++differing;
      double x = runtime::element_as_double(a, i), y = runtime::element_as_double(e, i);
      if (std::isnan(x) && std::isnan(y)) continue;  // NaN payloads differ: no numeric difference
      double diff = std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(x - y);
      if (std::isinf(x) && std::isinf(y) && x == y) diff = 0;
      const double rel = diff / std::max(std::fabs(y), 1e-30);
      max_abs = std::max(max_abs, diff);
      max_rel = std::max(max_rel, rel);
      if (!(diff <= tolerance || rel <= tolerance)) ++beyond;
    }
    within &= beyond == 0;
    fmt::print(report,
               "compare {} vs {}: {}: not bit-exact: {} of {} elements differ, max abs diff {:g}, max rel diff {:g} "
               "({} beyond tolerance {:g} in abs and rel)\n",
               label, oracle, decl.name, differing, a.count(), max_abs, max_rel, beyond, tolerance);
  }
  return within;
}

/// The counters a run reported, per output element; a line saying so when there are none.
void print_counters(std::FILE* out, const runtime::Backend& backend, const runtime::RunReport& report,
                    const std::string& kernel, const std::string& target, std::uint64_t output_elements,
                    const ir::Program* program) {
  if (report.statistics && program != nullptr) {
    fmt::print(out, "{}", runtime::reference::format_statistics(*report.statistics, *program));
  }
  if (report.counters) {
    fmt::print(out, "{}", runtime::emulator::format_counters(kernel, target, *report.counters, output_elements));
  }
  if (!report.has_counters()) fmt::print(out, "backend {} reports no counters\n", backend.name());
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
  run_options.timing = runtime::parse_launch_timing(options.timing).value_or(runtime::LaunchTiming::Isolated);
  return run_options;
}

/// One line per timed run: `bench/gpu/time_kernels.py` reads the median from it.
void print_times(std::FILE* stream, const std::string& kernel, const runtime::RunReport& report) {
  if (!report.times) return;
  const runtime::KernelTimes& times = *report.times;
  if (times.timing == runtime::LaunchTiming::BackToBack) {
    const std::size_t rounds = std::max<std::size_t>(times.microseconds.size(), 1);
    fmt::print(stream, "time {}: median {:.3f} us, min {:.3f} us per launch over {} rounds of {} back-to-back launches "
               "(one CUDA graph each) after {} warm-up, through {} buffer sets of {} KiB\n",
               kernel, times.median(), times.min(), times.microseconds.size(), times.launches / rounds,
               times.warmup_launches, times.buffer_sets, times.buffer_set_bytes >> 10);
    return;
  }
  fmt::print(stream, "time {}: median {:.3f} us, min {:.3f} us over {} launches after {} warm-up (L2 flushed with {} MiB "
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
                 fmt::format("applies to PTX modules; '{}' is an op spec (its buffers are --input NAME=FILE.npy or "
                             "--inputs DIR)",
                             options.path));
  const std::optional<std::uint64_t> seed = parse_seed(options.random_seed);
  if (!std::isfinite(options.tolerance) || options.tolerance < 0) {
    throw CommandError(fmt::format("--tolerance {}: the tolerance must be a finite number >= 0, e.g. 1e-5",
                                   options.tolerance));
  }
  ir::ops::OpSpec spec = parse_spec_text(text, options.path);
  runtime::CompileOptions compile_options;
  compile_options.passes = options.pipeline.pass_options(&spec);
  compile_options.target = requested_target(options.target, spec);
  const ir::Program source = ir::ops::build_program(
      spec, compile_options.target ? std::optional<std::string>(compile_options.target->name()) : std::nullopt);
  // Every binding and output path is checked before anything is allocated or run;
  // outputs are written only after the run (and the comparison) succeeded.
  Bindings bindings = check_bindings(source, options);
  std::FILE* report = bindings.files->writes_stdout() ? stderr : stdout;
  const std::string backend_name = options.backend.value_or(kSpecDefaultBackend);
  // The buffers and an output being staged, the inputs kept for the oracle (which it
  // then runs on), and the emulator's device copy and its per-byte access map.
  std::uint64_t copies = 2 + (options.compare ? 1 : 0);
  if (backend_name == "emulator" || options.compare.value_or("") == "emulator") copies += 2;
  check_host_memory(source, copies, fmt::format("running {}", options.path));
  std::unique_ptr<runtime::Backend> oracle;
  if (options.compare) oracle = make_oracle(*options.compare);
  check_timing(options, options.backend.value_or(kSpecDefaultBackend));

  // The backend is made only now, so that every spec error is reported first (the CUDA
  // backend needs a driver and a device as soon as it exists).
  std::unique_ptr<runtime::Backend> backend = runtime::make_backend(backend_name);
  const runtime::BackendKernel kernel = backend->compile(source, compile_options);
  const ir::Program& program = kernel.program;
  runtime::BufferSet buffers = prepare_buffers(program, spec, bindings, seed);
  std::optional<runtime::BufferSet> inputs;  // the oracle starts from the same buffers
  if (oracle) inputs = buffers;
  runtime::RunOptions run_options = backend_run_options(options);
  runtime::RunReport run_report;
  {
    ProgressLine progress(fmt::format("{} {}", backend->name(), program.name));
    run_options.progress = progress.callback();
    run_report = backend->run(kernel, buffers, run_options);
  }

  for (const ir::BufferDecl& decl : program.buffers) {
    if (!decl.is_output()) continue;
    const ir::ByteRange range = decl.readable_range();
    const std::size_t element_bytes = ir::byte_size(decl.element);
    fmt::print(report, "{}", format_buffer(decl.name, buffers.at(decl.name), range.begin / element_bytes,
                                           (range.end - range.begin) / element_bytes));
  }
  if (options.statistics) {
    print_counters(report, *backend, run_report, program.name, kernel.target ? kernel.target->name() : "none",
                   runtime::output_element_count(program), &program);
  }
  print_times(report, program.name, run_report);
  if (oracle) {
    // The oracle compiles the same program with the same pipeline, quietly.
    runtime::CompileOptions oracle_options = compile_options;
    oracle_options.passes.print_ir_after_all = false;
    oracle_options.passes.print_ir_after.clear();
    oracle_options.passes.time_passes = false;
    oracle_options.passes.log = nullptr;
    const runtime::BackendKernel oracle_kernel = oracle->compile(source, oracle_options);
    runtime::BufferSet expected = std::move(*inputs);
    runtime::RunOptions oracle_run;
    oracle_run.threads = options.threads;
    {
      ProgressLine progress(fmt::format("{} {}", oracle->name(), program.name));
      oracle_run.progress = progress.callback();
      oracle->run(oracle_kernel, expected, oracle_run);
    }
    if (!compare_outputs(report, program, buffers, expected, std::string(backend->name()), std::string(oracle->name()),
                         options.tolerance)) {
      throw CommandError(fmt::format("{} differs from {} beyond tolerance {:g}; no output file was written",
                                     backend->name(), oracle->name(), options.tolerance));
    }
  }
  // Every output is staged, then all replace their targets together.
  for (const auto& [name, index] : bindings.outputs) {
    bindings.files->stage(index, runtime::to_npy_bytes({logical_output(*program.find_buffer(name), buffers.at(name)), {}}));
  }
  bindings.files->commit();
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
  runtime::RunOptions run_options = backend_run_options(options);
  runtime::RunReport run_report;
  {
    ProgressLine progress(fmt::format("{} {}", backend->name(), options.path));
    run_options.progress = progress.callback();
    run_report = backend->launch_ptx(prepared.launch, prepared.buffers, run_options);
  }
  std::FILE* report = prepared.report_stream();
  prepared.print_buffers(report);
  const std::string kernel = runtime::check_ptx_launch(prepared.launch, prepared.buffers).name;
  if (options.statistics) {
    const std::string target = run_report.counters ? runtime::emulator::parse_ptx(text).target : "";
    print_counters(report, *backend, run_report, kernel, target, prepared.output_elements(), nullptr);
  }
  print_times(report, kernel, run_report);
  // Outputs are written only after the run succeeded, all together.
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
  command->add_option("--inputs", options->input_sources,
                      "Spec: DIR (every DIR/NAME.npy named after an input buffer, e.g. a `quantc convert` or `quantc "
                      "pack` bundle) or FILE.safetensors (every tensor named after an input buffer) (repeatable)");
  command->add_option("--random-inputs", options->random_seed,
                      "Spec: generate every input not given with --input from SEED (0..18446744073709551615)");
  command->add_option("--output", options->outputs,
                      "Spec: NAME=FILE.npy saves an output buffer's logical range; PTX: INDEX=FILE.npy saves buffer "
                      "argument INDEX (0-based among the --arg values) (repeatable). FILE - is standard output (the "
                      "printed report then goes to stderr); all are written only when the run succeeded");
  command->add_option("--compare", options->compare,
                      "Spec: also run this backend (e.g. reference) and report max abs/rel differences");
  command->add_option("--tolerance", options->tolerance, "Spec: --compare accepts an element whose abs or rel difference is at most T")
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
  command
      ->add_option("--timing", options->timing,
                   "With --time: isolated (each launch alone between two CUDA events after an L2 flush, launch "
                   "latency included) or back-to-back (launches queued on one stream as CUDA graphs, rotating through "
                   "copies of the buffers twice the L2 size, as a decode step's layers run: the time per launch)")
      ->check(CLI::IsMember({std::string(runtime::to_string(runtime::LaunchTiming::Isolated)),
                             std::string(runtime::to_string(runtime::LaunchTiming::BackToBack))}))
      ->capture_default_str()
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
