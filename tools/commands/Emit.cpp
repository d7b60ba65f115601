// quantc emit SPEC.json [-o OUT] [--metadata OUT.json] [--target sm_XX] [--format ptx|cubin]
//             [pipeline flags]
// quantc ir SPEC.json [-o OUT.qir] [pipeline flags]      (the IR after the pipeline)
// quantc opt FILE.qir [-o OUT.qir] [pipeline flags]      (IR text in, IR text out)
#include <fmt/format.h>


#include "ir/Parser.h"
#include "ir/Printer.h"
#include "lower/driver/Compiler.h"
#include "lower/driver/KernelCache.h"
#include "lower/driver/KernelMetadataJson.h"
#include "ptx/NvJitLink.h"
#include "runtime/io/AtomicFile.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

struct EmitOptions {
  std::string input_path;
  std::string output_path;
  std::string metadata_path;  // --metadata: the launch metadata as JSON (emit only)
  std::optional<std::string> target;
  std::string format = "ptx";
  PipelineFlags pipeline;
};

void write_output(const std::string& text, const std::string& output_path) {
  if (output_path.empty() || output_path == "-") {
    fmt::print("{}", text);
  } else {
    runtime::write_file_atomically(output_path, text);
  }
}

/// PTX or cubin for a spec, through the on-disk kernel cache (Triton-style: the key is
/// the canonical spec, target, pipeline and compiler version). Watching the pipeline
/// (--print-ir-*, --time-passes) bypasses the cache so the passes really run. With
/// --metadata, the launch metadata goes to its own file; both outputs are checked before
/// compiling and replaced together only when both are ready.
void emit_artifact(const EmitOptions& options) {
  runtime::OutputFiles files;
  const std::size_t artifact_file = files.add(options.output_path.empty() ? "-" : options.output_path, true);
  std::optional<std::size_t> metadata_file;
  if (!options.metadata_path.empty()) metadata_file = files.add(options.metadata_path, true);
  if (options.format == "cubin" && (options.output_path.empty() || options.output_path == "-")) {
    throw CommandError("--format cubin writes binary data; name the file with -o OUT.cubin");
  }

  ir::ops::OpSpec spec = load_spec(options.input_path);
  lower::CompileOptions compile_options{resolve_target(options.target, spec), options.pipeline.pass_options(&spec)};
  const ir::Program program = ir::ops::build_program(spec, std::string(compile_options.target.name()));
  auto build_ptx = [&] { return lower::compile(program, compile_options).ptx; };
  lower::KernelCache cache = options.pipeline.observes_pipeline() ? lower::KernelCache::disabled()
                                                                  : lower::KernelCache::from_environment();
  auto key =
      lower::CacheKey::for_spec(spec, compile_options.target.name(), lower::pipeline_name(compile_options.passes));
  std::string artifact = cache.get_or_build(key, lower::ArtifactKind::Ptx, build_ptx);
  if (options.format == "cubin") {
    artifact = cache.get_or_build(key, lower::ArtifactKind::Cubin,
                                  [&] { return ptx::link_cubin(artifact, compile_options.target).cubin; });
  }
  files.stage(artifact_file, artifact);
  if (metadata_file) {
    files.stage(*metadata_file,
                lower::metadata_json(lower::KernelMetadata::of(program, compile_options.target.name())));
  }
  files.commit();
}

}  // namespace

void add_emit_commands(CLI::App& app) {
  auto emit = std::make_shared<EmitOptions>();
  CLI::App* emit_command = app.add_subcommand("emit", "Compile a spec to PTX text (or a cubin via nvJitLink)");
  emit_command->add_option("spec", emit->input_path, "Op spec (JSON)")->required();
  emit_command->add_option("-o,--output", emit->output_path, "Write here (atomically) instead of stdout");
  emit_command->add_option("--metadata", emit->metadata_path,
                           "Also write the launch metadata (entry, grid, block, shared memory, parameters) as JSON")
      ->type_name("FILE.json");
  emit_command->add_option("--target", emit->target, "PTX target, e.g. sm_90 (overrides the spec's \"target\")");
  emit_command->add_option("--format", emit->format, "ptx, or cubin (linked in process with nvJitLink; needs -o)")
      ->check(CLI::IsMember({"ptx", "cubin"}))
      ->capture_default_str();
  emit->pipeline.add_to(*emit_command);
  emit_command->callback([emit] { emit_artifact(*emit); });

  auto ir_options = std::make_shared<EmitOptions>();
  CLI::App* ir_command = app.add_subcommand("ir", "Print a spec's IR after the pass pipeline (-O0: as constructed)");
  ir_command->add_option("spec", ir_options->input_path, "Op spec (JSON)")->required();
  ir_command->add_option("-o,--output", ir_options->output_path, "Write the IR here instead of stdout");
  ir_options->pipeline.add_to(*ir_command);
  ir_command->callback([ir_options] {
    ir::ops::OpSpec spec = load_spec(ir_options->input_path);
    ir::Program program = lower::optimize(ir::ops::build_program(spec), ir_options->pipeline.pass_options(&spec));
    write_output(ir::print(program), ir_options->output_path);
  });

  auto opt = std::make_shared<EmitOptions>();
  CLI::App* opt_command = app.add_subcommand("opt", "Run passes on IR text (.qir, as `quantc ir` prints) and print the result");
  opt_command->add_option("file", opt->input_path, "IR text file")->required();
  opt_command->add_option("-o,--output", opt->output_path, "Write the IR here instead of stdout");
  opt->pipeline.add_to(*opt_command);
  opt_command->callback([opt] {
    ir::Program program = ir::parse_program(read_text_file(opt->input_path), opt->input_path);
    write_output(ir::print(lower::optimize(program, opt->pipeline.pass_options())), opt->output_path);
  });
}

}  // namespace quantc::tools
