// Embedding quantc: build a kernel with the IR builder, emit PTX, and run it on the
// reference interpreter and, when a GPU exists, through the CUDA driver; every result is
// checked against a plain C++ loop.
//
// The kernel: y[i] = 3 * x[i] + y[i] for i < 1000 (f32), one invocation per element,
// workgroups of 128.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "lower/LowerToPtx.h"
#include "runtime/Buffers.h"
#if defined(QUANTC_HAS_REFERENCE_BACKEND)
#include "runtime/backends/reference/Interpreter.h"
#endif
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
bool matches(const char* backend, const runtime::BufferSet& inputs, const runtime::BufferSet& outputs) {
  const std::vector<float> x = inputs.at("x").as<float>();
  const std::vector<float> y_in = inputs.at("y").as<float>();
  const std::vector<float> y = outputs.at("y").as<float>();
  double worst = 0;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    worst = std::max(worst, std::abs(double(y[i]) - std::fma(3.0, double(x[i]), double(y_in[i]))));
  }
  const bool ok = worst <= 1e-6;
  std::printf("%s backend: %s (max abs difference %.3g)\n", backend, ok ? "matches" : "MISMATCH", worst);
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

#if defined(QUANTC_HAS_REFERENCE_BACKEND)
  try {
    runtime::BufferSet buffers = inputs;
    runtime::reference::run(program, buffers);
    ok = matches("reference", inputs, buffers) && ok;
  } catch (const std::exception& error) {
    std::printf("reference backend failed: %s\n", error.what());
    ok = false;
  }
#else
  std::printf("reference backend: not in this build\n");
#endif

#if defined(QUANTC_HAS_CUDA_BACKEND)
  if (ptx.empty()) {
    std::printf("cuda backend: skipped (no PTX)\n");
  } else if (!runtime::cuda::gpu_available()) {
    std::printf("cuda backend: skipped (%s)\n", runtime::cuda::gpu_unavailable_reason().c_str());
  } else {
    runtime::cuda::CudaBackend gpu;
    runtime::BufferSet buffers = inputs;
    gpu.run(program, runtime::cuda::KernelImage::ptx(lower::lower_to_ptx(program, gpu.target())), buffers);
    ok = matches("cuda", inputs, buffers) && ok;
  }
#endif
  std::printf("host check: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
