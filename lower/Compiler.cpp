#include "lower/Compiler.h"

#include "ir/Verifier.h"
#include "lower/LowerToPtx.h"

namespace quantc::lower {

CompiledKernel compile(const ir::Program& program, const CompileOptions& options) {
  ir::verify_or_throw(program);
  CompiledKernel kernel{program, {}};
  kernel.ptx = lower_to_ptx(kernel.program, options.target);
  return kernel;
}

}  // namespace quantc::lower
