// ir/Occupancy.h: CTAs an SM holds, and the even-waves reservation, on the SM limits of
// the devices quantc models (CUDA C++ Programming Guide, "Technical Specifications per
// Compute Capability").
#include <catch2/catch.hpp>

#include "ir/Occupancy.h"

using namespace quantc::ir;

namespace {
// An A100 SXM's (sm_80) SMs: 108 of them, 164 KiB of shared memory, 163 KiB a CTA.
constexpr SmLimits kA100Sm{108, 65536, 8, 2048, 32, 164 * 1024, 1024, 128, 163 * 1024};
// An L40S's (sm_89): 142 SMs, 1536 threads, 24 CTAs and 100 KiB an SM, 99 KiB a CTA.
constexpr SmLimits kL40sSm{142, 65536, 8, 1536, 24, 100 * 1024, 1024, 128, 99 * 1024};
}  // namespace

TEST_CASE("resident_ctas is the fewest of an SM's CTA slots, threads, registers and shared memory", "[occupancy]") {
  CHECK(resident_ctas(128, 14400, 64, kH100SxmSm) == 8);     // 65536 / (64 x 128)
  CHECK(resident_ctas(128, 14400, 60, kH100SxmSm) == 8);     // 60 -> 64: units of 8
  CHECK(resident_ctas(128, 14400, 32, kH100SxmSm) == 15);    // 228 KiB / (14400 + 1024)
  CHECK(resident_ctas(128, 14400, 32, kL40sSm) == 6);        // 100 KiB / 15424
  CHECK(resident_ctas(32, 0, 16, kH100SxmSm) == 32);         // the CTA slots
  CHECK(resident_ctas(1024, 0, 16, kL40sSm) == 1);           // 1536 threads
  CHECK(resident_ctas(1024, 0, 128, kH100SxmSm) == 0);       // 131072 registers: none fits
  CHECK(resident_ctas(0, 0, 64, kH100SxmSm) == 0);
  CHECK(resident_ctas(128, 0, 0, kH100SxmSm) == 0);
}

TEST_CASE("the even-waves reservation is sized for each device's SMs", "[occupancy]") {
  // NVFP4 at 11008x4096, m = 2 (the tensor GEMM): 2752 CTAs of 128 threads, 14400 bytes
  // of .shared, 64 registers.
  // H100: 8 an SM, waves of 1056, 1056, 640; 7 make 924, 924, 904: 228 KiB / 7 in
  // 128-byte units (33280) less 1 KiB and the .shared.
  CHECK(even_waves_dynamic_shared_bytes(2752, 128, 14400, 64, kH100SxmSm) == 33280 - 1024 - 14400);
  // A100: 8 an SM of 108 SMs, four waves (864 x 3 + 160); 7 make four of 756 or fewer:
  // 164 KiB / 7 -> 23936.
  CHECK(even_waves_dynamic_shared_bytes(2752, 128, 14400, 64, kA100Sm) == 23936 - 1024 - 14400);
  CHECK(resident_ctas(128, 23936 - 1024, 64, kA100Sm) == 7);
  // L40S: 6 an SM (shared memory) of 142, four waves (852 x 3 + 196); 5 make four of 710
  // or fewer: 100 KiB / 5 = 20480.
  CHECK(even_waves_dynamic_shared_bytes(2752, 128, 14400, 64, kL40sSm) == 20480 - 1024 - 14400);
  CHECK(resident_ctas(128, 20480 - 1024, 64, kL40sSm) == 5);
  // One wave: nothing to even out.
  CHECK(even_waves_dynamic_shared_bytes(1000, 128, 14400, 64, kH100SxmSm) == 0);
  CHECK(even_waves_dynamic_shared_bytes(800, 128, 14400, 64, kA100Sm) == 0);
  // Waves already even: 2112 = 2 x 1056.
  CHECK(even_waves_dynamic_shared_bytes(2112, 128, 14400, 64, kH100SxmSm) == 0);
  // A reservation past 64 KiB a CTA with the .shared (r = 3 on an H100) is not made.
  CHECK(even_waves_dynamic_shared_bytes(700, 256, 0, 64, kH100SxmSm) == 0);  // 4 an SM: 528 + 172 -> 3
  // A plan that does not know its registers passes the most the fewest registers allow:
  // at 64 an SM holds 4 of these (528, 528, 320), which is already even, but 7 could fit.
  CHECK(even_waves_dynamic_shared_bytes(1376, 256, 28800, 64, kH100SxmSm) == 0);
  CHECK(even_waves_dynamic_shared_bytes(1376, 256, 28800, 64, kH100SxmSm, 7) == 58368 - 1024 - 28800);
  // Degenerate grids and devices.
  CHECK(even_waves_dynamic_shared_bytes(0, 128, 0, 64, kH100SxmSm) == 0);
  CHECK(even_waves_dynamic_shared_bytes(2752, 128, 14400, 64, SmLimits{}) == 0);
}
