// The compiler driver as a library call: program -> (passes) -> PTX. The CLI, the
// tests and embedders all compile through here so they cannot disagree.
#pragma once

#include <string>

#include "ir/Program.h"
#include "ptx/Target.h"

namespace quantc::lower {

struct CompileOptions {
  ptx::Target target = ptx::default_target();
};

struct CompiledKernel {
  ir::Program program;  // after the pass pipeline
  std::string ptx;      // lower_to_ptx(program, target)
};

/// Optimises `program` and lowers it to PTX for `options.target`. Throws ir::IRError
/// when the program fails verification or cannot be lowered.
CompiledKernel compile(const ir::Program& program, const CompileOptions& options);

}  // namespace quantc::lower
