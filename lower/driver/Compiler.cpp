#include "lower/driver/Compiler.h"

#include <fmt/format.h>

#include "ir/Verifier.h"
#include "lower/LowerToPtx.h"

namespace quantc::lower {

ir::Program optimize(const ir::Program& program, const PassOptions& options) {
  ir::verify_or_throw(program);
  return run_passes(program, options);
}

CompiledKernel compile(const ir::Program& program, const CompileOptions& options) {
  CompiledKernel kernel{optimize(program, options.passes), {}};
  kernel.ptx = lower_verified_to_ptx(kernel.program, options.target);
  return kernel;
}

ir::ops::OpSpec parse_spec_with_target(const std::string& text, const std::string& source) {
  ir::ops::OpSpec spec = ir::ops::parse_spec(text, source);
  if (spec.target) {
    try {
      ptx::parse_target(*spec.target);
    } catch (const std::invalid_argument& error) {
      throw ir::ops::SpecError(fmt::format("{}: \"target\": {}", source, error.what()));
    }
  }
  return spec;
}

ptx::Target resolve_target(const std::optional<std::string>& requested, const ir::ops::OpSpec& spec) {
  if (requested) return ptx::parse_target(*requested);
  if (spec.target) return ptx::parse_target(*spec.target);
  return ptx::default_target();
}

PassOptions resolve_pass_options(const ir::ops::OpSpec& spec, const std::optional<std::string>& level,
                                 const std::optional<std::string>& fp_contract) {
  PassOptions options;
  if (level) options.level = parse_optimization_level(*level);
  else if (spec.opt_level) options.level = parse_optimization_level(*spec.opt_level);
  if (fp_contract) options.fp_contract = *fp_contract == "on";
  else if (spec.fp_contract) options.fp_contract = *spec.fp_contract == "on";
  return options;
}

std::string pipeline_name(const PassOptions& options) {
  if (!options.passes.empty()) return fmt::format("passes={}", fmt::join(options.passes, ","));
  switch (options.level) {
    case OptimizationLevel::O0:
      return "O0";
    case OptimizationLevel::O1:
      return "O1";
    case OptimizationLevel::O2:
      return options.fp_contract ? "O2" : "O2,fp-contract=off";
  }
  return "O2";
}

}  // namespace quantc::lower
