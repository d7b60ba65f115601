// Launching on caller-provided device memory (a framework's tensors) with no copies:
// the checks of bind_device_pointers everywhere (they need no GPU), the launch itself
// and the driver-side checks of the pointers only where a GPU exists (skipped visibly).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "TestKernels.h"
#include "ir/Builder.h"
#include "runtime/backends/cuda/Driver.h"
#include "runtime/backends/cuda/Launch.h"

using namespace quantc;
using namespace quantc::runtime;
using namespace quantc::runtime::cuda;

namespace {

constexpr std::size_t kScaleBytes = test::kScaleCount * sizeof(float);  // 4000

std::string bind_failure(const ir::Program& program, const std::map<std::string, DevicePointer>& buffers) {
  try {
    bind_device_pointers(program, buffers);
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "";
}

std::string bind_failure(const ir::Program& program, const std::vector<DevicePointer>& buffers) {
  try {
    bind_device_pointers(program, buffers);
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "";
}

/// y[4i..4i+3] = x[4i..4i+3] as one 16-byte vector load and store per invocation.
ir::Program vector_copy_program() {
  using namespace ir;
  ProgramBuilder builder("vector_copy");
  BufferRef x = builder.input("x", ScalarType::F32, 64);
  BufferRef y = builder.output("y", ScalarType::F32, 64);
  builder.launch({16, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0) * 4u);
    body.store(y, i, x.load(i, 4));
  });
  return builder.build();
}

bool gpu_or_skip() {
  if (gpu_available()) return true;
  WARN("SKIPPED (no usable CUDA GPU): " << gpu_unavailable_reason());
  return false;
}

}  // namespace

TEST_CASE("device pointers bind by name or binding order into the kernel's parameter order", "[cuda][pointers]") {
  const ir::Program program = test::scale_by_two_program();
  const std::vector<CUdeviceptr> by_name =
      bind_device_pointers(program, {{"y", {0x20000, kScaleBytes}}, {"x", {0x10000, kScaleBytes}}});
  CHECK(by_name == std::vector<CUdeviceptr>{0x10000, 0x20000});
  const std::vector<CUdeviceptr> by_order =
      bind_device_pointers(program, std::vector<DevicePointer>{{0x10000, kScaleBytes}, {0x20000, kScaleBytes}});
  CHECK(by_order == by_name);
}

TEST_CASE("device pointers are checked before any device work, each error naming the buffer and the fix",
          "[cuda][pointers]") {
  const ir::Program program = test::scale_by_two_program();
  const DevicePointer x{0x10000, kScaleBytes};
  const DevicePointer y{0x20000, kScaleBytes};

  CHECK(bind_failure(program, {{"x", x}}) ==
        "program 'scale_by_two' needs a device pointer for buffer 'y' (1000 x f32, 4000 bytes); give one for each "
        "of: x, y");
  CHECK(bind_failure(program, {{"x", x}, {"y", y}, {"bias", y}}) ==
        "device pointer 'bias' names no buffer of program 'scale_by_two'; its buffers (binding order): x, y");
  CHECK(bind_failure(program, std::vector<DevicePointer>{x}) ==
        "program 'scale_by_two' has 2 buffers (x, y in binding order), 1 device pointers were given; pass one per "
        "buffer in that order");
  CHECK_THAT(bind_failure(program, {{"x", {0, kScaleBytes}}, {"y", y}}),
             Catch::Contains("buffer 'x' (binding 0, 1000 x f32): the device pointer is null"));
  CHECK_THAT(bind_failure(program, {{"x", x}, {"y", {0x20000, 4096}}}),
             Catch::Contains("buffer 'y' (binding 1): the program declares 1000 x f32 (4000 bytes), the device "
                             "pointer was given with 4096 bytes; pass a tensor of exactly 4000 bytes"));
  CHECK_THAT(bind_failure(program, std::vector<DevicePointer>{{0x10002, kScaleBytes}, y}),
             Catch::Contains("buffer 'x' (binding 0): device pointer 0x10002 is not aligned to the 4 bytes"));

  ir::Program too_large = program;
  too_large.workgroup_size = {64, 32, 1};
  CHECK_THAT(bind_failure(too_large, {{"x", x}, {"y", y}}), Catch::Contains("2048") && Catch::Contains("1024"));
}

TEST_CASE("vector accesses raise the alignment a device pointer needs", "[cuda][pointers]") {
  const ir::Program program = vector_copy_program();
  CHECK(required_alignments(program) == std::map<std::string, unsigned>{{"x", 16}, {"y", 16}});
  CHECK(required_alignments(test::scale_by_two_program()) == std::map<std::string, unsigned>{{"x", 4}, {"y", 4}});
  CHECK_THAT(bind_failure(program, {{"x", {0x10008, 256}}, {"y", {0x20000, 256}}}),
             Catch::Contains("device pointer 0x10008 is not aligned to the 16 bytes"));
  CHECK(bind_failure(program, {{"x", {0x10010, 256}}, {"y", {0x20000, 256}}}).empty());
}

// ---- Only with a GPU ---------------------------------------------------------------------

TEST_CASE("GPU: a launch on caller-owned memory and the caller's stream copies nothing and computes", "[cuda][gpu]") {
  if (!gpu_or_skip()) return;
  CudaBackend gpu;
  const ir::Program program = test::scale_by_two_program();
  const KernelImage image = KernelImage::ptx(test::scale_by_two_ptx(gpu.target().sm));
  BufferSet buffers = random_buffers(program, 5);
  const std::vector<float> x = buffers.at("x").as<float>();

  // The caller's memory (here uploaded by the backend, as a framework would hold it).
  const DeviceBufferSet device = gpu.upload(program, buffers);
  const std::map<std::string, DevicePointer> tensors = {
      {"x", {device.at("x").memory.get(), device.at("x").memory.size()}},
      {"y", {device.at("y").memory.get(), device.at("y").memory.size()}}};
  const Stream caller_stream(gpu.context());
  gpu.launch(program, image, tensors, caller_stream.get());
  caller_stream.synchronize();
  gpu.download(program, device, buffers);
  std::vector<float> y = buffers.at("y").as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);

  // By binding order, on the backend's own stream.
  buffers.at("x") = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(test::kScaleCount, 1.5f));
  const DeviceBufferSet second = gpu.upload(program, buffers);
  gpu.launch(program, image,
             std::vector<DevicePointer>{{second.at("x").memory.get(), kScaleBytes},
                                        {second.at("y").memory.get(), kScaleBytes}});
  gpu.download(program, second, buffers);
  CHECK(buffers.at("y").as<float>() == std::vector<float>(test::kScaleCount, 3.0f));
}

TEST_CASE("GPU: host memory and ranges past an allocation's end are refused before the launch", "[cuda][gpu]") {
  if (!gpu_or_skip()) return;
  CudaBackend gpu;
  const ir::Program program = test::scale_by_two_program();
  const KernelImage image = KernelImage::ptx(test::scale_by_two_ptx(gpu.target().sm));
  DeviceMemory x(gpu.context(), kScaleBytes);
  DeviceMemory y(gpu.context(), kScaleBytes);
  std::vector<float> host(test::kScaleCount, 0.0f);
  CHECK_THROWS_WITH(
      gpu.launch(program, image,
                 {{"x", {reinterpret_cast<CUdeviceptr>(host.data()), kScaleBytes}}, {"y", {y.get(), kScaleBytes}}}),
      Catch::Contains("buffer 'x'") && Catch::Contains("is not memory device"));
  CHECK_THROWS_WITH(gpu.launch(program, image, {{"x", {x.get(), kScaleBytes}}, {"y", {y.get() + 256, kScaleBytes}}}),
                    Catch::Contains("buffer 'y'") && Catch::Contains("run past the end of its allocation"));
}
