// The `quantc profile` report: roofline arithmetic and the printed counters.
#include <catch2/catch.hpp>

#include "runtime/emulator/Profile.h"

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
  counters.float_instructions = 200;
  counters.global_load_requests = 10;
  counters.global_load_sectors = 40;
  counters.unique_global_bytes_read = 4096;
  counters.thread_instructions = 800 * 16;
  counters.ctas = 2;
  counters.threads = 64;
  std::string report = format_profile("my_kernel", "sm_90", counters, 100);
  CHECK_THAT(report, Catch::Contains("kernel my_kernel (target sm_90): 2 CTAs, 64 threads, 100 output elements"));
  CHECK_THAT(report, Catch::Contains("800") && Catch::Contains("8.000 per output element"));
  CHECK_THAT(report, Catch::Contains("2.000 per output element"));  // float instructions
  CHECK_THAT(report, Catch::Contains("sectors per load request             4.00"));
  CHECK_THAT(report, Catch::Contains("SIMT efficiency (active lanes / 32)  50.0%"));
  CHECK_THAT(report, Catch::Contains("H100 SXM") && Catch::Contains("H200") && Catch::Contains("dominates"));
  CHECK_THAT(report, Catch::Contains("model assumptions") && Catch::Contains("3.35 TB/s") &&
                         Catch::Contains("132 SMs x 4 schedulers x 1.98 GHz"));
}
