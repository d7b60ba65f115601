// The `quantc profile` report: the printed counters, the resources the model gets
// (ptxas, given or assumed registers; static + dynamic shared memory), devices that
// cannot run the PTX, and the JSON document against the text and the model.
#include <catch2/catch.hpp>

#include <map>

#include <cstdlib>

#include <fmt/format.h>

#include "ptx/Ptxas.h"
#include "runtime/backends/emulator/Profile.h"

using namespace quantc::runtime::emulator;

namespace {

// out[tid] = in[tid] * 2 for 64 threads; the program below declares the same two buffers.
const char* kTwice = R"(
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

quantc::ir::Program twice_program() {
  quantc::ir::Program program;
  program.name = "twice";
  program.buffers = {{"in", 0, quantc::ir::BufferAccess::ReadOnly, quantc::ir::ScalarType::F32, 64, std::nullopt},
                     {"out", 1, quantc::ir::BufferAccess::WriteOnly, quantc::ir::ScalarType::F32, 64,
                      quantc::ir::ByteRange{0, 40 * 4}}};
  program.workgroup_size = {64, 1, 1};
  return program;
}

// 4096 bytes of static shared memory; each thread writes and reads back its word.
const char* kShared = R"(
.version 7.8
.target sm_90
.address_size 64
.visible .entry staged(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[4096];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, buf;
  add.u32 %r3, %r3, %r2;
  st.shared.u32 [%r3], %r1;
  bar.sync 0;
  ld.shared.u32 %r1, [%r3];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";

LaunchCounters run_staged() {
  Module module = parse_ptx(kShared);
  std::vector<DeviceBuffer> buffers{{"out", std::vector<std::uint8_t>(1024 * 4, 0)}};
  LaunchConfig config;
  config.grid = {8, 1, 1};
  config.block = {1024, 1, 1};
  return launch(module, "staged", config, buffers, {PointerArgument{0, 0}});
}

bool ptxas_or_skip() {
  if (quantc::ptx::ptxas_available()) return true;
  const char* required = std::getenv("QUANTC_REQUIRE_PTXAS");
  if (required != nullptr && std::string(required) == "1") FAIL("ptxas not found and QUANTC_REQUIRE_PTXAS=1");
  WARN("ptxas not found: skipping");
  return false;
}

}  // namespace

TEST_CASE("format_counters prints counters per kernel and per output element", "[emulator][profile]") {
  LaunchCounters counters;
  counters.warp_instructions = 800;
  counters.pipe_instructions[static_cast<std::size_t>(quantc::ptx::Pipe::Fp32)] = 200;
  counters.global_load_requests = 10;
  counters.global_load_sectors = 40;
  counters.global_load_batches = 5;
  counters.unique_global_bytes_read = 4096;
  counters.unique_global_sectors_read = 128;
  counters.thread_instructions = 800 * 16;
  counters.ctas = 2;
  counters.threads = 64;
  std::string report = format_counters("my_kernel", "sm_90", counters, 100);
  CHECK_THAT(report, Catch::Contains("kernel my_kernel (target sm_90): 2 CTAs, 64 threads, 100 output elements"));
  CHECK_THAT(report, Catch::Contains("800") && Catch::Contains("8.000 per output element"));
  CHECK_THAT(report, Catch::Contains("fp32") && Catch::Contains("2.000 per output element"));
  CHECK_THAT(report, Catch::Contains("sectors per load request             4.00"));
  CHECK_THAT(report, Catch::Contains("SIMT efficiency (active lanes / 32)  50.0%"));
  CHECK_THAT(report, Catch::Contains("unique sectors read") && Catch::Contains("1.280 per output element"));
  CHECK_THAT(report, Catch::Contains("loads in flight per warp             2.00 requests, 256 bytes"));
}

TEST_CASE("profile_program runs the kernel and models it on every device", "[emulator][profile]") {
  ProfileOptions options;
  options.registers = 24;
  KernelProfile profile = profile_program(twice_program(), kTwice, 1, options);
  CHECK(profile.kernel == "twice");
  CHECK(profile.target == "sm_80");
  CHECK(profile.output_elements == 40);
  CHECK(profile.threads_per_cta == 64);
  CHECK(profile.counters.unique_global_bytes_read == 256);
  CHECK(profile.counters.parameter_loads == 4);  // 2 ld.param x 2 warps
  REQUIRE(profile.devices.size() == 4);
  for (const DeviceProfile& device : profile.devices) {
    INFO(device.device->key);
    REQUIRE(device.estimate);
    CHECK(device.registers_source == RegisterSource::Given);
    CHECK(device.resources.registers_per_thread == 24);
    CHECK(device.resources.ctas == 1);
    CHECK(device.estimate->limit == Limit::Latency);  // one load round trip per warp dominates
  }
  const std::string report = format_profile(profile);
  CHECK_THAT(report, Catch::Contains("kernel twice (target sm_80): 1 CTAs, 64 threads, 40 output elements"));
  CHECK_THAT(report, Catch::Contains("unique bytes read                               256"));
  CHECK_THAT(report, Catch::Contains("h100_sxm: NVIDIA H100 SXM5 80GB (sm_90)") && Catch::Contains("h200:") &&
                         Catch::Contains("a100:") && Catch::Contains("l40s:"));
  CHECK_THAT(report, Catch::Contains("24 registers/thread (given)") && Catch::Contains("model assumptions"));

  SECTION("--device picks devices in the order given; an unknown key is an error listing the keys") {
    options.devices = {"l40s", "h100_sxm"};
    KernelProfile two = profile_program(twice_program(), kTwice, 1, options);
    REQUIRE(two.devices.size() == 2);
    CHECK(two.devices[0].device->key == "l40s");
    CHECK(two.devices[1].device->key == "h100_sxm");
    options.devices = {"v100"};
    CHECK_THROWS_WITH(profile_program(twice_program(), kTwice, 1, options),
                      Catch::Contains("'v100'") && Catch::Contains("h100_sxm, h200, a100, l40s"));
  }
  SECTION("without ptxas, registers are assumed and marked so") {
    options.registers.reset();
    options.run_ptxas = false;
    KernelProfile assumed = profile_program(twice_program(), kTwice, 1, options);
    CHECK_THAT(assumed.registers_note, Catch::Contains("assumed 32 registers") && Catch::Contains("--registers N"));
    for (const DeviceProfile& device : assumed.devices) {
      CHECK(device.registers_source == RegisterSource::Assumed);
      CHECK(device.resources.registers_per_thread == kAssumedRegisters);
    }
    auto json = profile_json(assumed);
    CHECK(json["devices"]["h100_sxm"]["registers_source"] == "assumed");
    CHECK(json["registers_note"].get<std::string>().find("assumed 32") != std::string::npos);
    CHECK_THAT(format_profile(assumed), Catch::Contains("note: ptxas not run: assumed 32 registers per thread"));
  }
  SECTION("registers above 255 are refused") {
    options.registers = 256;
    CHECK_THROWS_WITH(profile_program(twice_program(), kTwice, 1, options), Catch::Contains("256"));
  }
}

TEST_CASE("profile_launch: PTX for sm_90 cannot run on sm_80 or sm_89, and shared memory is static + dynamic",
          "[emulator][profile]") {
  LaunchCounters counters = run_staged();
  ProfileOptions options;
  options.registers = 16;
  KernelProfile profile = profile_launch(kShared, "staged", 1024, 2048, counters, 0, options);
  CHECK(profile.static_shared_bytes == 4096);
  REQUIRE(profile.devices.size() == 4);
  for (const DeviceProfile& device : profile.devices) {
    INFO(device.device->key);
    if (device.device->compute_capability == 90) {
      REQUIRE(device.estimate);
      CHECK(device.resources.shared_bytes_per_cta == 4096 + 2048);
    } else {
      CHECK_FALSE(device.estimate);
      CHECK_THAT(device.error, Catch::Contains("the PTX targets sm_90") && Catch::Contains("cannot run it"));
    }
  }
  auto json = profile_json(profile);
  CHECK(json["devices"]["a100"].contains("error"));
  CHECK_FALSE(json["devices"]["a100"].contains("modeled_us"));
  CHECK(json["devices"]["h200"]["shared_bytes_per_cta"] == 6144);
  CHECK_THAT(format_profile(profile), Catch::Contains("cannot model: the PTX targets sm_90; a100 is sm_80"));
  CHECK_THROWS_WITH(profile_launch(kShared, "missing", 1024, 0, counters, 0, options), Catch::Contains("'missing'"));

  SECTION("a launch a device cannot fit is an error for that device only") {
    KernelProfile big = profile_launch(kShared, "staged", 1024, 230 * 1024, counters, 0, options);
    REQUIRE_FALSE(big.devices[0].estimate);
    CHECK_THAT(big.devices[0].error, Catch::Contains("bytes of shared memory per CTA cannot launch on h100_sxm"));
  }
}

TEST_CASE("profile_launch sizes a program's even-waves reservation for each modeled device", "[emulator][profile]") {
  // kShared for sm_80, which every modeled device runs: 4096 bytes of .shared. The counters
  // stand for a grid of 2752 CTAs of 128 threads at 64 registers (8 an SM by registers on
  // every device; L40S's 100 KiB also hold 8 of 5 KiB), whose H100 plan reserves 28160.
  std::string ptx = kShared;
  ptx.replace(ptx.find("sm_90"), 5, "sm_80");
  LaunchCounters counters = run_staged();
  counters.ctas = 2752;
  ProfileOptions options;
  options.registers = 64;
  const KernelProfile profile = profile_launch(ptx, "staged", 128, DynamicShared::even_waves_plan(28160), counters, 0, options);
  CHECK(profile.even_waves);
  REQUIRE(profile.devices.size() == 4);
  // H100 and H200 (132 SMs, 228 KiB): waves of 1056, 1056, 640 -> 7 an SM, 228 KiB / 7 =
  // 33280; A100 (108 SMs, 164 KiB): 864 x 3 + 160 -> 7, 23936; L40S (142 SMs, 100 KiB):
  // 1136 x 2 + 480 -> 7, 14592. Each less 1 KiB and the .shared.
  const std::map<std::string, std::uint32_t> expected = {
      {"h100_sxm", 33280 - 1024 - 4096}, {"h200", 33280 - 1024 - 4096}, {"a100", 23936 - 1024 - 4096},
      {"l40s", 14592 - 1024 - 4096}};
  for (const DeviceProfile& device : profile.devices) {
    INFO(device.device->key);
    REQUIRE(device.estimate);
    CHECK(device.dynamic_shared_bytes == expected.at(std::string(device.device->key)));
    CHECK(device.resources.shared_bytes_per_cta == 4096 + device.dynamic_shared_bytes);
    CHECK(device.estimate->occupancy.ctas_per_sm == 7);
  }
  const auto json = profile_json(profile);
  CHECK(json["even_waves"] == true);
  CHECK(json["devices"]["a100"]["dynamic_shared_bytes"] == 23936 - 1024 - 4096);
  // A fixed count (a PTX launch's) is the same on every device.
  const KernelProfile fixed = profile_launch(ptx, "staged", 128, 28160, counters, 0, options);
  CHECK_FALSE(fixed.even_waves);
  for (const DeviceProfile& device : fixed.devices) CHECK(device.dynamic_shared_bytes == 28160);
}

TEST_CASE("profile_launch runs ptxas -v per architecture for registers and static shared memory",
          "[emulator][profile][ptxas]") {
  if (!ptxas_or_skip()) return;
  KernelProfile profile = profile_launch(kShared, "staged", 1024, 1024, run_staged(), 0, {});
  REQUIRE(profile.devices.size() == 4);
  const DeviceProfile& h100 = profile.devices[0];
  REQUIRE(h100.estimate);
  CHECK(h100.registers_source == RegisterSource::Ptxas);
  CHECK(h100.resources.registers_per_thread > 0);
  CHECK(h100.resources.registers_per_thread <= 32);
  CHECK(h100.resources.shared_bytes_per_cta == 4096 + 1024);
  CHECK(profile.devices[1].resources.registers_per_thread == h100.resources.registers_per_thread);  // h200: sm_90 too
  CHECK(profile.registers_note.empty());
  auto json = profile_json(profile);
  // kShared targets sm_90: the kernel's own registers are the sm_90 ones.
  CHECK(profile.registers == h100.resources.registers_per_thread);
  CHECK(json["registers"] == h100.resources.registers_per_thread);
  CHECK(json["registers_source"] == "ptxas");
  CHECK(json["devices"]["h100_sxm"]["registers_source"] == "ptxas");
}

TEST_CASE("profile_json has the documented keys and agrees with the model and the text", "[emulator][profile]") {
  ProfileOptions options;
  options.registers = 32;
  KernelProfile profile = profile_program(twice_program(), kTwice, 1, options);
  auto json = profile_json(profile);
  for (const char* key : {"kernel", "target", "ctas", "threads_per_cta", "threads", "output_elements",
                          "warp_instructions", "thread_instructions", "pipe_instructions", "subroutine_instructions",
                          "parameter_loads", "load_requests", "store_requests", "load_sectors", "store_sectors",
                          "shared_load_requests", "shared_store_requests", "shared_load_wavefronts",
                          "shared_store_wavefronts", "shared_bank_conflicts", "shared_conflict_sites", "unique_bytes_read", "unique_bytes_written",
                          "unique_sectors_read", "unique_sectors_written", "load_batches", "load_batches_dram",
                          "load_batches_l2", "load_batches_l1", "loads_in_flight_per_warp", "bytes_in_flight_per_warp",
                          "barriers", "buffers", "static_shared_bytes", "dynamic_shared_bytes", "registers", "devices"}) {
    INFO(key);
    CHECK(json.contains(key));
  }
  CHECK(json["kernel"] == "twice");
  CHECK(json["ctas"] == 1);
  CHECK(json["threads_per_cta"] == 64);
  CHECK(json["warp_instructions"] == profile.counters.warp_instructions);
  CHECK(json["unique_bytes_read"] == 256);
  CHECK(json["unique_bytes_written"] == 256);
  CHECK(json["load_requests"] == 2);
  // Per buffer, in binding order: 64 f32 of `in` read and of `out` written, whole sectors.
  REQUIRE(json["buffers"].size() == 2);
  CHECK(json["buffers"][0]["name"] == "in");
  CHECK(json["buffers"][0]["load_requests"] == 2);
  CHECK(json["buffers"][0]["load_sectors"] == 8);
  CHECK(json["buffers"][0]["load_bytes"] == 256);
  CHECK(json["buffers"][0]["load_sector_efficiency"] == 1.0);
  CHECK(json["buffers"][1]["name"] == "out");
  CHECK(json["buffers"][1]["store_bytes"] == 256);
  CHECK(json["buffers"][1]["load_sector_efficiency"] == 0.0);
  CHECK(json["pipe_instructions"]["fp32"] == 2);
  CHECK(json["registers"] == 32);
  CHECK(json["registers_source"] == "given");
  const std::string text = format_profile(profile);
  for (const DeviceProfile& device : profile.devices) {
    const auto& entry = json["devices"][std::string(device.device->key)];
    INFO(device.device->key);
    for (const char* key : {"name", "arch", "registers", "registers_source", "spill_bytes", "shared_bytes_per_cta",
                            "ctas_per_sm", "occupancy_limit", "ctas_per_sm_by", "resident_warps_per_sm", "occupancy",
                            "cta_slots", "waves", "last_wave_ctas", "active_sms", "dram_bytes", "memory_bound_us",
                            "latency_bound_us", "issue_bound_us", "issue_us", "load_batches_per_warp",
                            "bytes_in_flight_per_warp", "bytes_in_flight_per_sm", "bytes_in_flight_needed_per_sm",
                            "limits_us", "modeled_us", "limit", "limit_description", "hbm_fraction"}) {
      INFO(key);
      CHECK(entry.contains(key));
    }
    const LaunchEstimate& e = *device.estimate;
    CHECK(entry["modeled_us"].get<double>() == Approx(e.seconds * 1e6));
    CHECK(entry["memory_bound_us"].get<double>() == Approx(e.memory_bound_seconds * 1e6));
    CHECK(entry["hbm_fraction"].get<double>() ==
          Approx(entry["memory_bound_us"].get<double>() / entry["modeled_us"].get<double>()));
    CHECK(entry["limit"] == e.limit_key());
    CHECK(entry["limits_us"].contains(e.limit_key()));
    CHECK(entry["ctas_per_sm"] == e.occupancy.ctas_per_sm);
    // The text shows the same numbers.
    CHECK_THAT(text, Catch::Contains(fmt::format("modeled          {:10.3f} us  limit: {}", e.seconds * 1e6,
                                                 e.limit_description())));
  }
  CHECK(devices_json()["h100_sxm"]["sms"] == 132);
  CHECK(devices_json()["a100"]["calibration"]["measured_kernels"] == 0);
  // The H200 was measured (bench/results/gpu-nvidia-h200.md): its error is recorded.
  CHECK(devices_json()["h200"]["calibration"]["measured_kernels"] == 96);
  CHECK(devices_json()["h200"]["calibration"]["median_relative_error"].get<double>() == Approx(0.38));
  CHECK(devices_json()["l40s"]["results_per_clock_per_sm"]["fp64"] == 2.0);
}
