// quantc emit SPEC.json [-o OUT.ptx] [--target sm_XX]: PTX text.
// quantc ir SPEC.json [-o OUT.qir]: the IR text.
#include <fmt/format.h>

#include "ir/Printer.h"
#include "lower/Compiler.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

struct EmitOptions {
  std::string spec_path;
  std::string output_path;
  std::optional<std::string> target;
};

void emit_text(const std::string& text, const std::string& output_path) {
  if (output_path.empty() || output_path == "-") {
    fmt::print("{}", text);
  } else {
    write_file_atomically(output_path, text);
  }
}

}  // namespace

void add_emit_commands(CLI::App& app) {
  auto emit = std::make_shared<EmitOptions>();
  CLI::App* emit_command = app.add_subcommand("emit", "Compile a spec to PTX text");
  emit_command->add_option("spec", emit->spec_path, "Op spec (JSON)")->required();
  emit_command->add_option("-o,--output", emit->output_path, "Write PTX here (written atomically) instead of stdout");
  emit_command->add_option("--target", emit->target, "PTX target, e.g. sm_90 (overrides the spec's \"target\")");
  emit_command->callback([emit] {
    ir::ops::OpSpec spec = load_spec(emit->spec_path);
    lower::CompileOptions options{resolve_target(emit->target, spec)};
    emit_text(lower::compile(ir::ops::build_program(spec), options).ptx, emit->output_path);
  });

  auto ir_options = std::make_shared<EmitOptions>();
  CLI::App* ir_command = app.add_subcommand("ir", "Print the IR an op constructor builds for a spec");
  ir_command->add_option("spec", ir_options->spec_path, "Op spec (JSON)")->required();
  ir_command->add_option("-o,--output", ir_options->output_path, "Write the IR here instead of stdout");
  ir_command->callback([ir_options] {
    ir::ops::OpSpec spec = load_spec(ir_options->spec_path);
    emit_text(ir::print(ir::ops::build_program(spec)), ir_options->output_path);
  });
}

}  // namespace quantc::tools
