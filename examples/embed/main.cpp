// Embedding quantc: build a kernel with the IR builder, emit PTX, and run it on every
// backend of the registry (the reference interpreter, the PTX emulator and, when a GPU
// exists, the CUDA driver) through the one Backend interface; where a GPU exists, also on
// device memory the program owns itself, as a framework's tensors, with no copies. Every
// result is checked against a plain C++ loop.
//
// The kernel: y[i] = 3 * x[i] + y[i] for i < 1000 (f32), one invocation per element,
// workgroups of 128.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "lower/LowerToPtx.h"
#include "runtime/Buffers.h"
#include "runtime/backends/Registry.h"
#if defined(QUANTC_HAS_CUDA_BACKEND)
#include "runtime/backends/cuda/Launch.h"
#endif

using namespace quantc;

namespace {

constexpr std::uint32_t kCount = 1000;

ir::Program build_axpy() {
  using namespace ir;
  ProgramBuilder program("axpy");
  BufferRef x = program.input("x", ScalarType::F32, kCount);
  BufferRef y = program.output("y", ScalarType::F32, kCount);
  program.launch({128, 1, 1}, {ceil_div(kCount, 128), 1, 1});
  program.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.if_then(i < kCount, [&](Body& then) { then.store(y, i, fma(f32(3.0f), x[i], y[i])); });
  });
  return program.build();
}

/// Compares the backend's y against the plain loop; prints and returns whether it matches.
bool matches(const std::string& backend, const runtime::BufferSet& inputs, const runtime::BufferSet& outputs) {
  const std::vector<float> x = inputs.at("x").as<float>();
  const std::vector<float> y_in = inputs.at("y").as<float>();
  const std::vector<float> y = outputs.at("y").as<float>();
  double worst = 0;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    worst = std::max(worst, std::abs(double(y[i]) - std::fma(3.0, double(x[i]), double(y_in[i]))));
  }
  const bool ok = worst <= 1e-6;
  std::printf("%s backend: %s (max abs difference %.3g)\n", backend.c_str(), ok ? "matches" : "MISMATCH", worst);
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  const ir::Program program = build_axpy();
  std::printf("built program %s: %zu buffers, %u x %u invocations\n", program.name.c_str(), program.buffers.size(),
              program.workgroup_count[0], program.workgroup_size[0]);

  runtime::BufferSet inputs = runtime::random_buffers(program, /*seed=*/42);
  inputs["y"] = runtime::HostBuffer::from(ir::ScalarType::F32, std::vector<float>(kCount, 0.5f));

  std::string ptx;
  try {
    ptx = lower::lower_to_ptx(program, ptx::default_target());
    std::printf("emitted %zu bytes of PTX for %s\n", ptx.size(), ptx::default_target().name().c_str());
  } catch (const std::exception& error) {
    std::printf("PTX emission unavailable: %s\n", error.what());
  }

  // Every backend through the one interface: compile for it, run on host buffers.
  for (const runtime::RegisteredBackend& entry : runtime::backends()) {
    const std::string name(entry.info.name);
    std::unique_ptr<runtime::Backend> backend;
    try {
      backend = entry.make();
    } catch (const runtime::BackendUnavailable& unavailable) {  // no CUDA driver or device
      std::printf("%s backend: skipped (%s)\n", name.c_str(), unavailable.what());
      continue;
    }
    try {
      const runtime::BackendKernel kernel = backend->compile(program, {});
      runtime::BufferSet buffers = inputs;
      backend->run(kernel, buffers);
      ok = matches(name, inputs, buffers) && ok;
    } catch (const std::exception& error) {
      std::printf("%s backend failed: %s\n", name.c_str(), error.what());
      ok = false;
    }
  }

#if defined(QUANTC_HAS_CUDA_BACKEND)
  // A framework's tensors: device memory someone else allocated and filled, handed to
  // the kernel by pointer, on the caller's stream, with no copies by quantc.
  if (runtime::cuda::gpu_available()) {
    runtime::cuda::CudaBackend gpu;
    const runtime::cuda::KernelImage image = runtime::cuda::KernelImage::ptx(lower::lower_to_ptx(program, gpu.target()));
    const runtime::cuda::DeviceBufferSet tensors = gpu.upload(program, inputs);  // stands in for the framework
    runtime::cuda::Stream stream(gpu.context());                               // the framework's stream
    gpu.launch(program, image,
               {{"x", {tensors.at("x").memory.get(), tensors.at("x").memory.size()}},
                {"y", {tensors.at("y").memory.get(), tensors.at("y").memory.size()}}},
               stream.get());
    stream.synchronize();
    runtime::BufferSet buffers = inputs;
    gpu.download(program, tensors, buffers);
    ok = matches("cuda (device pointers)", inputs, buffers) && ok;
  }
#endif
  std::printf("host check: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
