// The PTX emulator as a runtime::Backend ("emulator"): compile() emits PTX (sm_80 unless
// a target is given), run() is runtime::emulator::run, launch_ptx() runs any PTX entry
// with emulator::launch. Every run reports the emulator's LaunchCounters.
#pragma once

#include "runtime/backends/Backend.h"
#include "runtime/backends/emulator/Emulator.h"

namespace quantc::runtime::emulator {

class EmulatorBackend final : public Backend {
 public:
  static constexpr BackendInfo kInfo{"emulator", "the PTX on the CPU, warp by warp, with counters (quantc profile)",
                                     KernelForm::Ptx};
  EmulatorBackend() = default;
  explicit EmulatorBackend(LaunchOptions launch_options) : launch_options_(launch_options) {}

  const BackendInfo& info() const override { return kInfo; }
  BackendKernel compile(const ir::Program& program, const CompileOptions& options) override;
  RunReport run(const BackendKernel& kernel, BufferSet& buffers, const RunOptions& options = {}) override;
  /// Parses the module (PtxParseError naming the line for text outside the supported
  /// subset), checks the launch (check_ptx_launch), then runs it; throws the execution
  /// errors listed in Emulator.h (out-of-bounds accesses...). On any error `buffers`
  /// keep the bytes they held when the launch stopped.
  RunReport launch_ptx(const PtxLaunch& launch, std::vector<NamedBuffer>& buffers,
                       const RunOptions& options = {}) override;

 private:
  LaunchOptions launch_options_;
};

}  // namespace quantc::runtime::emulator
