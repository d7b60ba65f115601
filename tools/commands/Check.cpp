// quantc check SPEC.json [--target sm_XX]... [--assembler ptxas|nvjitlink] [pipeline flags]:
// assemble the spec's PTX for each target (default: the spec's target, else sm_80) and
// report registers (and the CTAs per SM they were fit for, where the kernel asks with
// `.minnctapersm`), spill bytes and assembler errors. `ptxas` compiles whole-program
// (`ptxas -v -O3`), as the driver does when it JIT-loads PTX; `nvjitlink` links a cubin
// in process, which always compiles relocatably (what `emit --format cubin` ships).
// Exits 1 when any target fails or spills.
#include <fmt/format.h>

#include "lower/driver/Compiler.h"
#include "ptx/Assemble.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

struct CheckOptions {
  std::string spec_path;
  std::vector<std::string> targets;
  std::string assembler = "ptxas";
  PipelineFlags pipeline;
};

/// Assembles for one target and prints one summary line; returns false on failure.
bool check_target(const CheckOptions& options, const ir::Program& program, const ptx::Target& target,
                  const lower::PassOptions& passes) {
  std::string ptx = lower::compile(program, {target, passes}).ptx;
  const ptx::AssemblyReport result = ptx::assemble(options.assembler, ptx, target);
  if (!result.success) {
    fmt::print("{}: FAILED ({})\n{}\n", target.name(), options.assembler, result.log);
    return false;
  }
  // A kernel that asks for CTAs per SM (.minnctapersm) had its registers capped to fit them.
  const std::string resident = program.min_resident_workgroups == 0
                                   ? std::string()
                                   : fmt::format(" (fit for {} CTAs per SM: .minnctapersm)", program.min_resident_workgroups);
  fmt::print("{}: ok ({}, {}), {} registers{}, {} bytes spill stores, {} bytes spill loads\n", target.name(),
             options.assembler, options.assembler == "ptxas" ? "whole program" : "relocatable", result.registers,
             resident, result.spill_store_bytes, result.spill_load_bytes);
  return result.spill_store_bytes + result.spill_load_bytes == 0;
}

void check_command(const CheckOptions& options) {
  ir::ops::OpSpec spec = load_spec(options.spec_path);
  lower::PassOptions passes = options.pipeline.pass_options(&spec);
  std::vector<ptx::Target> targets;
  for (const std::string& name : options.targets) targets.push_back(resolve_target(name, spec));
  if (targets.empty()) targets.push_back(resolve_target(std::nullopt, spec));
  int failures = 0;
  // Each target's own program: "auto" batches take the tensor cores on sm_80+ (build_program).
  for (const ptx::Target& target : targets) {
    const ir::Program program = ir::ops::build_program(spec, std::string(target.name()));
    failures += check_target(options, program, target, passes) ? 0 : 1;
  }
  if (failures) throw CommandError(fmt::format("{} of {} targets failed to assemble or spilled", failures, targets.size()));
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* command = app.add_subcommand("check", "Assemble a spec's PTX for each target and report registers and spills");
  command->add_option("spec", options->spec_path, "Op spec (JSON)")->required();
  command->add_option("--target", options->targets, "PTX target (repeatable); default: the spec's, else sm_80");
  command->add_option("--assembler", options->assembler, "ptxas (spawned) or nvjitlink (in process, no driver needed)")
      ->check(CLI::IsMember({"ptxas", "nvjitlink"}))
      ->capture_default_str();
  options->pipeline.add_to(*command);
  command->callback([options] { check_command(*options); });
}

}  // namespace quantc::tools
