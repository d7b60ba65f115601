// The CUDA backend end to end on the emulated driver (tests/cuda/emulated_driver): module
// loads, uploads, launches on its own and on caller-provided device memory, downloads, and
// kernel timing with events, on every machine. What only hardware shows (the JIT, cubins,
// real times) stays in DriverTests' GPU cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "TestKernels.h"
#include "tests/ScopedEnvironment.h"
#include "ir/ops/Registry.h"
#include "runtime/backends/cuda/Driver.h"
#include "runtime/backends/cuda/Launch.h"
#include "runtime/backends/reference/ReferenceBackend.h"

using namespace quantc;
using namespace quantc::runtime;
using namespace quantc::runtime::cuda;

namespace {

std::shared_ptr<const Driver> emulated_driver() {
  static const std::shared_ptr<const Driver> driver = Driver::load(QUANTC_EMULATED_CUDA_DRIVER);
  return driver;
}

}  // namespace

TEST_CASE("emulated driver: scale_by_two runs through upload launch and download", "[cuda][emulated-driver]") {
  CudaBackend gpu(emulated_driver(), 0);
  CHECK(gpu.context().device().compute_capability == 90);
  CHECK(gpu.target().sm == 90);
  const ir::Program program = test::scale_by_two_program();
  BufferSet buffers = random_buffers(program, 7);
  const std::vector<float> x = buffers["x"].as<float>();
  const KernelImage image = KernelImage::ptx(test::scale_by_two_ptx(90));
  CHECK_FALSE(gpu.run(program, image, buffers).has_value());
  const std::vector<float> y = buffers["y"].as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);
  buffers["y"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(test::kScaleCount, 0.0f));
  gpu.run(program, image, buffers);
  CHECK(gpu.loaded_module_count() == 1);
  CHECK(buffers["y"].as<float>() == y);
}

TEST_CASE("emulated driver: timed runs report one time per launch and keep the checked outputs",
          "[cuda][emulated-driver][timing]") {
  CudaBackend gpu(emulated_driver(), 0);
  const ir::Program program = test::scale_by_two_program();
  BufferSet buffers = random_buffers(program, 3);
  const std::vector<float> x = buffers["x"].as<float>();
  RunOptions options;
  options.timed_launches = 5;
  options.warmup_launches = 2;
  const std::optional<KernelTimes> times =
      gpu.run(program, KernelImage::ptx(test::scale_by_two_ptx(90)), buffers, options);
  REQUIRE(times.has_value());
  REQUIRE(times->microseconds.size() == 5);
  CHECK(times->warmup_launches == 2);
  CHECK(times->l2_flush_bytes == 2u << 20);  // twice the emulated device's 1 MiB L2
  for (double us : times->microseconds) CHECK(us > 0);
  CHECK(times->min() == *std::min_element(times->microseconds.begin(), times->microseconds.end()));
  CHECK(times->median() >= times->min());
  const std::vector<float> y = buffers["y"].as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);

  SECTION("through the Backend interface") {
    Backend& backend = gpu;
    const BackendKernel kernel = backend.compile(program, {});
    BufferSet again = random_buffers(kernel.program, 3);
    options.timed_launches = 3;
    CHECK(backend.run(kernel, again, options).times->microseconds.size() == 3);
    CHECK_FALSE(backend.run(kernel, again, {}).times.has_value());
  }
  SECTION("a PTX launch with explicit arguments") {
    PtxLaunch launch;
    launch.ptx = test::scale_by_two_ptx(90);
    launch.grid = {4, 1, 1};
    launch.block = {256, 1, 1};
    launch.arguments = {PtxArgument::of_buffer(0), PtxArgument::of_buffer(1)};
    std::vector<NamedBuffer> ptx_buffers = {{"x", buffers.at("x")}, {"y", HostBuffer{ir::ScalarType::F32, std::vector<std::uint8_t>(4000)}}};
    options.timed_launches = 4;
    const RunReport report = gpu.launch_ptx(launch, ptx_buffers, options);
    REQUIRE(report.times.has_value());
    CHECK(report.times->microseconds.size() == 4);
    CHECK(ptx_buffers[1].buffer.as<float>() == y);
  }
}

TEST_CASE("emulated driver: back-to-back timing rotates through buffer sets twice the L2 size",
          "[cuda][emulated-driver][timing]") {
  // A 16 KiB L2, so that a few sets of these small buffers exceed twice its size.
  quantc_test::ScopedEnvironment l2("QUANTC_EMULATED_L2_BYTES", "16384");
  CudaBackend gpu(emulated_driver(), 0);
  REQUIRE(gpu.context().device().l2_cache_bytes == 16384);
  const ir::Program program = test::scale_by_two_program();
  BufferSet buffers = random_buffers(program, 11);
  const std::vector<float> x = buffers["x"].as<float>();
  RunOptions options;
  options.timing = LaunchTiming::BackToBack;
  options.timed_launches = 21;
  options.warmup_launches = 3;
  const std::optional<KernelTimes> times =
      gpu.run(program, KernelImage::ptx(test::scale_by_two_ptx(90)), buffers, options);
  REQUIRE(times.has_value());
  CHECK(times->timing == LaunchTiming::BackToBack);
  // x and y, 4000 bytes each: ceil(32 KiB / 8000) = 5 sets. A round (one CUDA graph)
  // passes through them until it holds at least 16 launches: 20; 21 launches take two
  // rounds, one time per round.
  CHECK(times->buffer_set_bytes == 8000);
  CHECK(times->buffer_sets == 5);
  CHECK(times->launches == 40);
  REQUIRE(times->microseconds.size() == 2);
  for (double us : times->microseconds) CHECK(us > 0);
  CHECK(times->l2_flush_bytes == 0);
  CHECK(times->warmup_launches == 3);
  const std::vector<float> y = buffers["y"].as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);

  SECTION("every set holds the checked run's inputs") {
    // The store's address is y + 4 * (x[0] - 1000): in bounds only where x[0] is the
    // uploaded 1000, far outside every allocation where a set's copy were missing (0).
    PtxLaunch launch;
    launch.ptx = R"(.version 7.8
.target sm_90
.address_size 64
.visible .entry store_at_marker(.param .u64 x, .param .u64 y) {
  .reg .b32 %r<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.global.u32 %r1, [%rd1];
  sub.u32 %r2, %r1, 1000;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
)";
    launch.arguments = {PtxArgument::of_buffer(0), PtxArgument::of_buffer(1)};
    // x: 64 bytes whose first word is `marker`; y: 4032 zero bytes.
    const auto buffers_marked = [](std::uint32_t marker) {
      std::vector<std::uint8_t> x(64, 0);
      std::memcpy(x.data(), &marker, sizeof marker);
      return std::vector<NamedBuffer>{{"x", HostBuffer{ir::ScalarType::U32, x}},
                                      {"y", HostBuffer{ir::ScalarType::U32, std::vector<std::uint8_t>(4032)}}};
    };
    std::vector<NamedBuffer> ptx_buffers = buffers_marked(1000);
    options.timed_launches = 1;
    const RunReport report = gpu.launch_ptx(launch, ptx_buffers, options);
    REQUIRE(report.times.has_value());
    CHECK(report.times->buffer_sets == 8);  // 32 KiB / (64 + 4032 bytes)
    CHECK(report.times->launches == 16);    // one round: twice through the sets
    CHECK(ptx_buffers[1].buffer.as<std::uint32_t>()[0] == 1000);

    // The same kernel on a set whose copy is missing fails: the check above can fail.
    std::vector<NamedBuffer> unmarked = buffers_marked(0);
    CHECK_THROWS_AS(gpu.launch_ptx(launch, unmarked, {}), CudaError);
  }
}

TEST_CASE("emulated driver: a captured graph replays its launches and a failed capture ends", "[cuda][emulated-driver]") {
  CudaBackend gpu(emulated_driver(), 0);
  const ir::Program program = test::scale_by_two_program();
  const KernelImage image = KernelImage::ptx(test::scale_by_two_ptx(90));
  BufferSet host = random_buffers(program, 13);
  DeviceBufferSet device = gpu.upload(program, host);
  gpu.launch(program, image, device);  // loads the module outside the capture
  const Stream stream(gpu.context());
  CHECK_THROWS_AS(CapturedGraph(gpu.context(), stream, [] { throw RuntimeError("enqueue failed"); }), RuntimeError);
  // The failed capture ended: capturing again on the same stream works, and nothing runs
  // until the graph is launched.
  BufferSet cleared = host;
  std::fill(cleared.at("y").bytes.begin(), cleared.at("y").bytes.end(), 0);
  DeviceBufferSet zeroed = gpu.upload(program, cleared);
  const std::map<std::string, DevicePointer> outputs = {{"x", {device.at("x").memory.get(), 4000}},
                                                        {"y", {zeroed.at("y").memory.get(), 4000}}};
  const CapturedGraph graph(gpu.context(), stream, [&] { gpu.launch(program, image, outputs, stream.get()); });
  gpu.download(program, zeroed, cleared);
  CHECK(cleared.at("y").as<float>()[0] == 0.0f);
  graph.launch(stream);
  gpu.download(program, zeroed, cleared);
  const std::vector<float> x = host.at("x").as<float>();
  const std::vector<float> y = cleared.at("y").as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);
}

TEST_CASE("emulated driver: launches on caller-provided device memory are checked", "[cuda][emulated-driver]") {
  CudaBackend gpu(emulated_driver(), 0);
  const ir::Program program = test::scale_by_two_program();
  const KernelImage image = KernelImage::ptx(test::scale_by_two_ptx(90));
  BufferSet host = random_buffers(program, 5);
  DeviceBufferSet device = gpu.upload(program, host);
  gpu.launch(program, image, std::vector<DevicePointer>{{device.at("x").memory.get(), 4000}, {device.at("y").memory.get(), 4000}});
  gpu.download(program, device, host);
  const std::vector<float> x = host["x"].as<float>();
  const std::vector<float> y = host["y"].as<float>();
  for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);

  // An address the driver never allocated, and a range past the allocation's end.
  CHECK_THROWS_WITH(gpu.launch(program, image, std::vector<DevicePointer>{{0x1000, 4000}, {device.at("y").memory.get(), 4000}}),
                    Catch::Contains("'x'") && Catch::Contains("not memory device 0 can access"));
  CHECK_THROWS_WITH(
      gpu.launch(program, image,
                 std::vector<DevicePointer>{{device.at("x").memory.get() + 16, 4000}, {device.at("y").memory.get(), 4000}}),
      Catch::Contains("run past the end of its allocation"));
}

TEST_CASE("emulated driver: every op's fast and seed programs match the interpreter bit for bit",
          "[cuda][emulated-driver][ops]") {
  // The emulated driver runs the PTX on the emulator, which agrees with the interpreter bit
  // for bit: this checks the CUDA backend's buffer plumbing (binding order, output ranges,
  // sub-word buffers) for every op's first test shape.
  CudaBackend gpu(emulated_driver(), 0);
  reference::ReferenceBackend reference;
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    if (op.test_shapes.empty()) continue;
    DYNAMIC_SECTION(op.name) {
      const ir::Program source = op.build(op.test_shapes.front());
      const BackendKernel kernel = gpu.compile(source, {});
      BufferSet on_gpu = random_buffers(kernel.program, 11);
      BufferSet expected = on_gpu;
      gpu.run(kernel, on_gpu);
      reference.run(reference.compile(source, {}), expected);
      for (const ir::BufferDecl& decl : kernel.program.buffers) {
        if (!decl.is_output()) continue;
        const ir::ByteRange range = decl.readable_range();
        INFO("buffer " << decl.name);
        CHECK(std::equal(on_gpu.at(decl.name).bytes.begin() + static_cast<long>(range.begin),
                         on_gpu.at(decl.name).bytes.begin() + static_cast<long>(range.end),
                         expected.at(decl.name).bytes.begin() + static_cast<long>(range.begin)));
      }
    }
  }
}

TEST_CASE("emulated driver: a program's even-waves reservation is sized for the device it launches on",
          "[cuda][emulated-driver]") {
  // The emulated device reports an H100 SXM's SM limits as device attributes.
  const DeviceInfo device = device_info(*emulated_driver(), 0);
  CHECK(device.sm.sms == ir::kH100SxmSm.sms);
  CHECK(device.sm.registers_per_sm == ir::kH100SxmSm.registers_per_sm);
  CHECK(device.sm.max_threads_per_sm == ir::kH100SxmSm.max_threads_per_sm);
  CHECK(device.sm.max_ctas_per_sm == ir::kH100SxmSm.max_ctas_per_sm);
  CHECK(device.sm.shared_bytes_per_sm == ir::kH100SxmSm.shared_bytes_per_sm);
  CHECK(device.sm.reserved_shared_bytes_per_cta == ir::kH100SxmSm.reserved_shared_bytes_per_cta);
  CHECK(device.sm.max_shared_bytes_per_cta == ir::kH100SxmSm.max_shared_bytes_per_cta);
  // NVFP4 at 11008x4096, m = 2 on the tensor cores: 2752 CTAs of 128 threads and 14400
  // bytes of .shared, whose plan reserves 17856 bytes on an H100 (7 CTAs an SM at 64
  // registers). An A100's 108 SMs of 164 KiB hold 7 with 8512; at 72 registers an H100 SM
  // holds 7 already, so nothing is reserved; a program without a plan reserves nothing.
  ir::ops::OpArgs args = ir::ops::OpArgs::dims({{"m", 2}, {"k", 11008}, {"n", 4096}});
  args.set("activation", std::string("f16"));
  args.set("schedule", std::string("fast"));
  const ir::Program program = ir::ops::OpRegistry::builtin().find("dequant_matmul_nvfp4")->build(args);
  REQUIRE(program.reserved_shared_bytes == 17856);
  REQUIRE(program.static_shared_bytes() == 14400);
  CHECK(launch_dynamic_shared_bytes(program, 64, device.sm) == 17856);
  const ir::SmLimits a100{108, 65536, 8, 2048, 32, 164 * 1024, 1024, 128, 163 * 1024};
  CHECK(launch_dynamic_shared_bytes(program, 64, a100) == 8512);
  CHECK(launch_dynamic_shared_bytes(program, 72, device.sm) == 0);
  ir::Program unplanned = program;
  unplanned.reserved_shared_bytes = 0;
  CHECK(launch_dynamic_shared_bytes(unplanned, 64, a100) == 0);
}

TEST_CASE("emulated driver: reserved shared memory and a PTX launch's dynamic shared memory launch, opting in past 48 KiB",
          "[cuda][emulated-driver]") {
  CudaBackend gpu(emulated_driver(), 0);
  ir::Program program = test::scale_by_two_program();
  const KernelImage image = KernelImage::ptx(test::scale_by_two_ptx(90));
  for (std::uint32_t reserved : {16u * 1024, 60u * 1024}) {
    INFO(reserved << " bytes reserved");
    program.reserved_shared_bytes = reserved;
    BufferSet buffers = random_buffers(program, 5);
    CHECK(plan_launch(program, buffers).dynamic_shared_bytes == reserved);  // the plan; one wave launches with none
    const std::vector<float> x = buffers["x"].as<float>();
    gpu.run(program, image, buffers);
    const std::vector<float> y = buffers["y"].as<float>();
    for (unsigned i = 0; i < test::kScaleCount; ++i) REQUIRE(y[i] == 2.0f * x[i]);
    // The same bytes as a PTX launch's dynamic shared memory.
    PtxLaunch launch;
    launch.ptx = test::scale_by_two_ptx(90);
    launch.grid = {4, 1, 1};
    launch.block = {256, 1, 1};
    launch.dynamic_shared_bytes = reserved;
    launch.arguments = {PtxArgument::of_buffer(0), PtxArgument::of_buffer(1)};
    std::vector<NamedBuffer> ptx_buffers = {{"x", buffers.at("x")},
                                            {"y", HostBuffer{ir::ScalarType::F32, std::vector<std::uint8_t>(4000)}}};
    gpu.launch_ptx(launch, ptx_buffers, {});
    CHECK(ptx_buffers[1].buffer.as<float>() == y);
  }
}
