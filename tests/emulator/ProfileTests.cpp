// The `quantc profile` report: roofline arithmetic and the printed counters.
#include <catch2/catch.hpp>

#include "runtime/backends/emulator/Profile.h"

using namespace quantc::runtime::emulator;

TEST_CASE("roofline estimate: memory-bound and issue-bound times for H100 SXM and H200", "[emulator][profile]") {
  LaunchCounters counters;
  counters.unique_global_bytes_read = 3'000'000;
  counters.unique_global_bytes_written = 350'000;  // 3.35 MB: 1 us at 3.35 TB/s
  counters.warp_instructions = 2'090'880;          // 2 us at 132 x 4 x 1.98 GHz
  const auto& devices = roofline_devices();
  REQUIRE(devices.size() == 2);
  RooflineEstimate h100 = estimate_roofline(counters, devices[0]);
  RooflineEstimate h200 = estimate_roofline(counters, devices[1]);
  CHECK(h100.memory_seconds == Approx(1e-6));
  CHECK(h100.issue_seconds == Approx(2e-6));
  CHECK_FALSE(h100.memory_bound());
  CHECK(h200.memory_seconds == Approx(3.35e6 / 4.8e12));
  CHECK(h200.seconds() == Approx(2e-6));
  counters.warp_instructions = 1000;
  CHECK(estimate_roofline(counters, devices[0]).memory_bound());
}

TEST_CASE("profile report prints counters per kernel and per output element with the model's assumptions",
          "[emulator][profile]") {
  LaunchCounters counters;
  counters.warp_instructions = 800;
  counters.pipe_instructions[static_cast<std::size_t>(quantc::ptx::Pipe::Fp32)] = 200;
  counters.global_load_requests = 10;
  counters.global_load_sectors = 40;
  counters.unique_global_bytes_read = 4096;
  counters.thread_instructions = 800 * 16;
  counters.ctas = 2;
  counters.threads = 64;
  std::string report = format_profile("my_kernel", "sm_90", counters, 100);
  CHECK_THAT(report, Catch::Contains("kernel my_kernel (target sm_90): 2 CTAs, 64 threads, 100 output elements"));
  CHECK_THAT(report, Catch::Contains("800") && Catch::Contains("8.000 per output element"));
  CHECK_THAT(report, Catch::Contains("fp32") && Catch::Contains("2.000 per output element"));
  CHECK_THAT(report, Catch::Contains("sectors per load request             4.00"));
  CHECK_THAT(report, Catch::Contains("SIMT efficiency (active lanes / 32)  50.0%"));
  CHECK_THAT(report, Catch::Contains("H100 SXM") && Catch::Contains("H200") && Catch::Contains("dominates"));
  CHECK_THAT(report, Catch::Contains("model assumptions") && Catch::Contains("3.35 TB/s") &&
                         Catch::Contains("132 SMs x 4 schedulers x 1.98 GHz"));
}

TEST_CASE("profile_program runs the kernel on generated inputs and counts outputs from the readable ranges",
          "[emulator][profile]") {
  // out[tid] = in[tid] * 2 for 64 threads; the program declares the same two buffers.
  quantc::ir::Program program;
  program.name = "twice";
  program.buffers = {{"in", 0, quantc::ir::BufferAccess::ReadOnly, quantc::ir::ScalarType::F32, 64, std::nullopt},
                     {"out", 1, quantc::ir::BufferAccess::WriteOnly, quantc::ir::ScalarType::F32, 64,
                      quantc::ir::ByteRange{0, 40 * 4}}};
  program.workgroup_size = {64, 1, 1};
  const std::string ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry twice(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.nc.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, %f1;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
)";
  std::string report = profile_program(program, ptx, "sm_80");
  CHECK_THAT(report, Catch::Contains("kernel twice (target sm_80): 1 CTAs, 64 threads, 40 output elements"));
  CHECK_THAT(report, Catch::Contains("unique bytes read                               256"));
}
