#include "runtime/backends/reference/ReferenceBackend.h"

#include "runtime/backends/reference/Interpreter.h"

namespace quantc::runtime::reference {

BackendKernel ReferenceBackend::compile(const ir::Program& program, const CompileOptions& options) {
  return BackendKernel{lower::optimize(program, options.passes), {}, std::nullopt};
}

RunReport ReferenceBackend::run(const BackendKernel& kernel, BufferSet& buffers, const runtime::RunOptions& options) {
  RunReport report;
  RunStatistics statistics;
  reference::RunOptions interpreter;
  interpreter.threads = options.threads;
  interpreter.statistics = options.counters ? &statistics : nullptr;
  reference::run(kernel.program, buffers, interpreter);
  if (options.counters) report.statistics = std::move(statistics);
  return report;
}

}  // namespace quantc::runtime::reference
