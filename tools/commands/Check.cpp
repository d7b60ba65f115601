// quantc check SPEC.json [--target sm_XX]...: assemble the spec's PTX with `ptxas -v`
// for each target (default: the spec's target, else sm_80) and report registers, spill
// bytes and ptxas errors. Exits 1 when any target fails or spills.
#include <fmt/format.h>

#include "lower/Compiler.h"
#include "ptx/Ptxas.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

struct CheckOptions {
  std::string spec_path;
  std::vector<std::string> targets;
};

/// Assembles for one target and prints one summary line; returns false on failure.
bool check_target(const ir::Program& program, const ptx::Target& target) {
  std::string ptx = lower::compile(program, {target}).ptx;
  ptx::PtxasResult result = ptx::run_ptxas(ptx, target);
  if (!result.success) {
    fmt::print("{}: FAILED (ptxas exit {})\n{}\n", target.name(), result.exit_status, result.log);
    return false;
  }
  fmt::print("{}: ok, {} registers, {} bytes spill stores, {} bytes spill loads\n", target.name(), result.registers,
             result.spill_store_bytes, result.spill_load_bytes);
  return result.spill_bytes() == 0;
}

void check_command(const CheckOptions& options) {
  ir::ops::OpSpec spec = load_spec(options.spec_path);
  ir::Program program = ir::ops::build_program(spec);
  std::vector<ptx::Target> targets;
  for (const std::string& name : options.targets) targets.push_back(resolve_target(name, spec));
  if (targets.empty()) targets.push_back(resolve_target(std::nullopt, spec));
  int failures = 0;
  for (const ptx::Target& target : targets) failures += check_target(program, target) ? 0 : 1;
  if (failures) throw CommandError(fmt::format("{} of {} targets failed ptxas or spilled", failures, targets.size()));
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* command = app.add_subcommand("check", "Assemble a spec's PTX with ptxas -v for each target");
  command->add_option("spec", options->spec_path, "Op spec (JSON)")->required();
  command->add_option("--target", options->targets, "PTX target (repeatable); default: the spec's, else sm_80");
  command->callback([options] { check_command(*options); });
}

}  // namespace quantc::tools
