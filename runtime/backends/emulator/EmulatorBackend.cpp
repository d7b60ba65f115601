#include "runtime/backends/emulator/EmulatorBackend.h"

namespace quantc::runtime::emulator {

BackendKernel EmulatorBackend::compile(const ir::Program& program, const CompileOptions& options) {
  return compile_to_ptx(program, options, ptx::default_target());
}

RunReport EmulatorBackend::run(const BackendKernel& kernel, BufferSet& buffers, const RunOptions& options) {
  require_ptx(*this, kernel);
  RunReport report;
  LaunchOptions launch_options = launch_options_;
  if (options.progress) launch_options.progress = options.progress;
  report.counters = emulator::run(kernel.ptx, kernel.program, buffers, launch_options);
  return report;
}

RunReport EmulatorBackend::launch_ptx(const PtxLaunch& launch, std::vector<NamedBuffer>& buffers,
                                      const RunOptions& options) {
  const Module module = parse_ptx(launch.ptx);
  const ptx::Entry entry = check_ptx_launch(launch, buffers);
  // The bytes move into the emulator's buffers and back, also when the launch throws.
  std::vector<DeviceBuffer> device;
  device.reserve(buffers.size());
  for (NamedBuffer& named : buffers) device.push_back({named.name, std::move(named.buffer.bytes)});
  auto give_back = [&] {
    for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i].buffer.bytes = std::move(device[i].bytes);
  };
  std::vector<KernelArgument> arguments;
  for (const PtxArgument& argument : launch.arguments) {
    if (argument.is_buffer()) {
      arguments.push_back(PointerArgument{argument.buffer, 0});
    } else {
      arguments.push_back(ScalarArgument{argument.bits});
    }
  }
  LaunchConfig config;
  config.grid = launch.grid;
  config.block = launch.block;
  config.dynamic_shared_bytes = launch.dynamic_shared_bytes;
  RunReport report;
  try {
    LaunchOptions launch_options = launch_options_;
    if (options.progress) launch_options.progress = options.progress;
    report.counters = emulator::launch(module, entry.name, config, device, arguments, launch_options);
  } catch (...) {
    give_back();
    throw;
  }
  give_back();
  return report;
}

}  // namespace quantc::runtime::emulator
