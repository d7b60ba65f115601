// The reference interpreter as a runtime::Backend ("reference"): compile() runs the pass
// pipeline and keeps the IR, run() is runtime::reference::run.
#pragma once

#include "runtime/backends/Backend.h"

namespace quantc::runtime::reference {

class ReferenceBackend final : public Backend {
 public:
  static constexpr BackendInfo kInfo{"reference", "the IR interpreter on the CPU (the oracle every test compares against)",
                                     KernelForm::Ir};
  const BackendInfo& info() const override { return kInfo; }
  /// lower::optimize(program, options.passes); options.target is ignored.
  BackendKernel compile(const ir::Program& program, const CompileOptions& options) override;
  /// reference::run with options.threads; RunReport::statistics when options.counters.
  RunReport run(const BackendKernel& kernel, BufferSet& buffers, const runtime::RunOptions& options = {}) override;
};

}  // namespace quantc::runtime::reference
