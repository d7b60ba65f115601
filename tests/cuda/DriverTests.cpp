// The driver loader without a driver and with the toolkit's stub (everywhere), the launch
// checks (everywhere), and real launches (only when a GPU exists; skipped visibly otherwise).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "TestKernels.h"
#include "tests/ScopedEnvironment.h"
#include "ptx/NvJitLink.h"
#include "runtime/backends/cuda/Cubin.h"
#include "runtime/backends/cuda/Driver.h"
#include "runtime/backends/cuda/Launch.h"

using namespace quantc;
using namespace quantc::runtime;
using namespace quantc::runtime::cuda;
using quantc::ptx::LinkedCubin;
using quantc::ptx::link_cubin;
using quantc_test::ScopedEnvironment;

namespace {

std::string load_failure(const std::string& path) {
  try {
    Driver::load(path);
  } catch (const DriverUnavailable& error) {
    return error.what();
  }
  return "";
}

/// Whether this machine can run GPU tests; prints why not (once per test) otherwise.
bool gpu_or_skip() {
  if (gpu_available()) return true;
  WARN("SKIPPED (no usable CUDA GPU): " << gpu_unavailable_reason());
  return false;
}

}  // namespace

TEST_CASE("QUANTC_CUDA_DRIVER selects the driver library, libcuda.so.1 by default", "[cuda][driver]") {
  {
    ScopedEnvironment environment("QUANTC_CUDA_DRIVER", "/opt/custom/libcuda.so");
    CHECK(driver_library_from_environment() == "/opt/custom/libcuda.so");
  }
  ScopedEnvironment environment("QUANTC_CUDA_DRIVER", "");
  CHECK(driver_library_from_environment() == "libcuda.so.1");
}

TEST_CASE("a missing driver library gives one clear error suggesting the reference backend", "[cuda][driver]") {
  ScopedEnvironment environment("QUANTC_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  const std::string message = load_failure(driver_library_from_environment());
  INFO(message);
  CHECK_THAT(message, Catch::Contains("no CUDA driver found"));
  CHECK_THAT(message, Catch::Contains("/nonexistent/libcuda.so.1"));
  CHECK_THAT(message, Catch::Contains("--backend reference"));
}

TEST_CASE("the toolkit's stub library is recognised as a stub, not a driver", "[cuda][driver]") {
  ScopedEnvironment environment("QUANTC_CUDA_DRIVER", QUANTC_CUDA_STUB_LIBRARY);
  const std::string message = load_failure(driver_library_from_environment());
  INFO(message);
  CHECK_THAT(message, Catch::Contains("stub library"));
  CHECK_THAT(message, Catch::Contains("CUDA_ERROR_STUB_LIBRARY"));
  CHECK_THAT(message, Catch::Contains("--backend reference"));
}

TEST_CASE("CudaError carries the call, the error name and its description", "[cuda][driver]") {
  const CudaError error("cuModuleLoadDataEx", CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
                        "a PTX JIT compilation failed", "JIT log:\nline 3: syntax error");
  CHECK(error.call() == "cuModuleLoadDataEx");
  CHECK(error.result() == CUDA_ERROR_INVALID_PTX);
  CHECK(std::string(error.what()) ==
        "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)\nJIT log:\nline 3: syntax "
        "error");
}

TEST_CASE("the PTX target is the highest supported one not above the device", "[cuda][launch]") {
  CHECK(target_for_compute_capability(75).sm == 75);
  CHECK(target_for_compute_capability(80).sm == 80);
  CHECK(target_for_compute_capability(87).sm == 86);  // Orin: sm_86 PTX JIT-compiles for it
  CHECK(target_for_compute_capability(90).sm == 90);
  CHECK(target_for_compute_capability(103).sm == 100);
  CHECK(target_for_compute_capability(121).sm == 120);
  CHECK_THROWS_WITH(target_for_compute_capability(70), Catch::Contains("sm_75"));
}

TEST_CASE("launch checks reject mismatched buffers before any device work", "[cuda][launch]") {
  const ir::Program program = test::scale_by_two_program();
  BufferSet buffers = allocate_buffers(program);
  const LaunchPlan plan = plan_launch(program, buffers);
  CHECK(plan.block == std::array<unsigned, 3>{256, 1, 1});
  CHECK(plan.grid == std::array<unsigned, 3>{4, 1, 1});
  REQUIRE(plan.parameters.size() == 2);
  CHECK(plan.parameters[0]->name == "x");
  CHECK(plan.parameters[1]->name == "y");

  SECTION("wrong size") {
    buffers["x"].bytes.resize(3996);
    CHECK_THROWS_WITH(plan_launch(program, buffers), Catch::Contains("'x'") && Catch::Contains("4000 bytes"));
  }
  SECTION("wrong element type") {
    buffers["y"].element = ir::ScalarType::U32;
    CHECK_THROWS_WITH(plan_launch(program, buffers), Catch::Contains("'y'") && Catch::Contains("u32"));
  }
  SECTION("missing buffer") {
    buffers.erase("x");
    CHECK_THROWS_WITH(plan_launch(program, buffers), Catch::Contains("'x'") && Catch::Contains("not provided"));
  }
  SECTION("CTA too large") {
    ir::Program large = program;
    large.workgroup_size = {64, 32, 1};
    CHECK_THROWS_WITH(plan_launch(large, buffers), Catch::Contains("2048") && Catch::Contains("1024"));
  }
}

TEST_CASE("cubin architecture is read from the ELF header", "[cuda][cubin]") {
  for (int sm : {80, 86, 90, 120}) {
    const LinkedCubin linked = link_cubin(test::scale_by_two_ptx(75), ptx::Target{sm});
    CHECK(cubin_architecture(linked.cubin) == sm);
  }
  CHECK(cubin_runs_on(80, 86));
  CHECK_FALSE(cubin_runs_on(86, 80));
  CHECK_FALSE(cubin_runs_on(80, 90));
  CHECK_FALSE(cubin_runs_on(90, 100));
  CHECK_THROWS_WITH(cubin_architecture(test::scale_by_two_ptx()), Catch::Contains("not a cubin"));
}

// ---- Only with a GPU ---------------------------------------------------------------------

TEST_CASE("GPU: scale_by_two runs from PTX and from a cubin and matches a plain loop", "[cuda][gpu]") {
  if (!gpu_or_skip()) return;
  CudaBackend gpu;
  const ir::Program program = test::scale_by_two_program();
  BufferSet buffers = random_buffers(program, 7);
  const std::vector<float> x = buffers["x"].as<float>();

  const KernelImage ptx_image = KernelImage::ptx(test::scale_by_two_ptx(gpu.target().sm));
  gpu.run(program, ptx_image, buffers);
  std::vector<float> y = buffers["y"].as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);

  // The same image again: no second module load.
  buffers["y"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(test::kScaleCount, 0.0f));
  gpu.run(program, ptx_image, buffers);
  CHECK(gpu.loaded_module_count() == 1);
  CHECK(buffers["y"].as<float>() == y);

  const KernelImage cubin_image = KernelImage::cubin(link_cubin(test::scale_by_two_ptx(80), gpu.target()).cubin);
  buffers["y"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(test::kScaleCount, 0.0f));
  gpu.run(program, cubin_image, buffers);
  CHECK(buffers["y"].as<float>() == y);
}

TEST_CASE("GPU: output byte range limits what is copied back", "[cuda][gpu]") {
  if (!gpu_or_skip()) return;
  CudaBackend gpu;
  ir::Program program = test::scale_by_two_program();
  program.buffers[1].output_byte_range = ir::ByteRange{0, 400};  // the first 100 elements
  BufferSet buffers = random_buffers(program, 3);
  buffers["y"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(test::kScaleCount, -5.0f));
  gpu.run(program, KernelImage::ptx(test::scale_by_two_ptx(gpu.target().sm)), buffers);
  const std::vector<float> x = buffers["x"].as<float>();
  const std::vector<float> y = buffers["y"].as<float>();
  for (unsigned i = 0; i < 100; ++i) REQUIRE(y[i] == 2.0f * x[i]);
  for (unsigned i = 100; i < test::kScaleCount; ++i) REQUIRE(y[i] == -5.0f);
}

TEST_CASE("GPU: rejected PTX reports the JIT log, a wrong-architecture cubin says so", "[cuda][gpu]") {
  if (!gpu_or_skip()) return;
  CudaBackend gpu;
  std::string broken = test::scale_by_two_ptx(gpu.target().sm);
  broken.replace(broken.find("add.f32"), 7, "add.q32");
  try {
    gpu.module(KernelImage::ptx(broken));
    FAIL("broken PTX loaded");
  } catch (const CudaError& error) {
    CHECK(error.call() == "cuModuleLoadDataEx");
    CHECK_THAT(error.what(), Catch::Contains("JIT log"));
  }
  const int other = gpu.context().device().compute_capability / 10 == 8 ? 90 : 80;
  const std::string cubin = link_cubin(test::scale_by_two_ptx(75), ptx::Target{other}).cubin;
  CHECK_THROWS_WITH(gpu.module(KernelImage::cubin(cubin)),
                    Catch::Contains(fmt::format("cubin is for sm_{}", other)));
}
