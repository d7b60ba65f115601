// The compiler driver as a library call: program -> pass pipeline -> PTX. The CLI, the
// tests and embedders all compile through here so they cannot disagree.
#pragma once

#include <optional>
#include <string>

#include "ir/Program.h"
#include "ir/ops/Spec.h"
#include "lower/PassManager.h"
#include "ptx/Target.h"

namespace quantc::lower {

struct CompileOptions {
  CompileOptions() = default;
  CompileOptions(ptx::Target target, PassOptions passes = {}) : target(target), passes(std::move(passes)) {}  // NOLINT
  ptx::Target target = ptx::default_target();
  PassOptions passes;  // default: the -O2 pipeline
};

struct CompiledKernel {
  ir::Program program;  // after the pass pipeline
  std::string ptx;      // lower_to_ptx(program, target)
};

/// Runs the pass pipeline on `program`; ir::IRError when it fails verification,
/// PassError for an unknown pass or a pass that broke the program (with verify_each).
ir::Program optimize(const ir::Program& program, const PassOptions& options);

/// Optimises `program` and lowers it to PTX for `options.target`. Throws as optimize(),
/// plus ir::IRError when the program cannot be lowered.
CompiledKernel compile(const ir::Program& program, const CompileOptions& options);

/// ir::ops::parse_spec plus the check of the spec's "target" that needs the PTX layer:
/// ir::ops::SpecError `SOURCE: "target": unknown target ...` for a target quantc does not
/// support. What every command and the Python package parse specs with.
ir::ops::OpSpec parse_spec_with_target(const std::string& text, const std::string& source);

/// The target a spec compiles for: `requested` (a --target flag, a function argument),
/// else the spec's "target", else ptx::default_target() (sm_80). Throws
/// std::invalid_argument naming the value and the supported targets for an unknown one.
ptx::Target resolve_target(const std::optional<std::string>& requested, const ir::ops::OpSpec& spec);

/// The pass options a spec compiles with: optimization level `level` ("O0".."O2", a -O
/// flag or a function argument), else the spec's "opt_level", else O2; FMA contraction
/// `fp_contract` ("on"/"off"), else the spec's "fp_contract", else on. Throws PassError
/// for an unknown level.
PassOptions resolve_pass_options(const ir::ops::OpSpec& spec, const std::optional<std::string>& level,
                                 const std::optional<std::string>& fp_contract);

/// The pipeline's name for cache keys and logs: "O0", "O1", "O2" ("O2,fp-contract=off"
/// without contraction), or "passes=a,b,c" for an explicit list.
std::string pipeline_name(const PassOptions& options);

}  // namespace quantc::lower
