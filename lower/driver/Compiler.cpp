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
