// Runs a program on the reference interpreter or on the PTX emulator for one target: the
// two CPU backends the tensor-core tests compare bit for bit.
#pragma once

#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/ReferenceBackend.h"

namespace quantc::tests {

/// `program` on `buffers` (updated in place): the interpreter when `target` is null or
/// "reference", else the emulator compiling for that target (e.g. "sm_80").
inline void run_on(const ir::Program& program, runtime::BufferSet& buffers, const char* target) {
  runtime::CompileOptions options;
  if (target == nullptr || std::string(target) == "reference") {
    runtime::reference::ReferenceBackend backend;
    backend.run(backend.compile(program, options), buffers);
    return;
  }
  runtime::emulator::EmulatorBackend backend;
  options.target = ptx::parse_target(target);
  backend.run(backend.compile(program, options), buffers);
}

}  // namespace quantc::tests
