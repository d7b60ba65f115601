// The GPU cost model (runtime/backends/emulator/CostModel.h): the device table,
// occupancy against hand-computed cases, waves, per-pipe issue time, free moves and
// parameter loads, subroutine expansions, loads in flight measured by the emulator, and
// the memory-bound, latency-bound and too-few-CTAs regimes on emulated kernels.
#include <cmath>
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "runtime/backends/emulator/CostModel.h"
#include "runtime/backends/emulator/Emulator.h"

using namespace quantc::runtime::emulator;
using quantc::ptx::Pipe;

namespace {

std::uint64_t& pipe_count(LaunchCounters& counters, Pipe pipe) {
  return counters.pipe_instructions[static_cast<std::size_t>(pipe)];
}

const DeviceSpec& h100() { return find_device("h100_sxm"); }

/// Runs entry `kernel` of `ptx` over `grid` CTAs of `block` threads; the kernel's
/// parameters are buffers of `buffer_bytes` each (zero-filled), then `scalars`.
LaunchCounters run_kernel(const std::string& ptx, const std::string& kernel, std::uint32_t grid, std::uint32_t block,
                          const std::vector<std::size_t>& buffer_bytes, const std::vector<std::uint64_t>& scalars = {}) {
  Module module = parse_ptx(ptx);
  std::vector<DeviceBuffer> buffers;
  std::vector<KernelArgument> arguments;
  for (std::size_t bytes : buffer_bytes) {
    buffers.push_back({fmt::format("buffer{}", buffers.size()), std::vector<std::uint8_t>(bytes, 0)});
    arguments.push_back(PointerArgument{buffers.size() - 1, 0});
  }
  for (std::uint64_t scalar : scalars) arguments.push_back(ScalarArgument{scalar});
  LaunchConfig config;
  config.grid = {grid, 1, 1};
  config.block = {block, 1, 1};
  return launch(module, kernel, config, buffers, arguments);
}

// Each thread copies 4 float4 (64 bytes): the 4 loads are issued before any is used, and
// each is coalesced (chunk j of the whole grid at j x chunk x 16 bytes).
const char* kCopy4 = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry copy4(.param .u64 src, .param .u64 dst, .param .u32 chunk)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<17>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u32 %r5, [chunk];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r4, 16;
  mul.wide.u32 %rd4, %r5, 16;
  add.s64 %rd5, %rd1, %rd3;
  add.s64 %rd6, %rd5, %rd4;
  add.s64 %rd7, %rd6, %rd4;
  add.s64 %rd8, %rd7, %rd4;
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd5];
  ld.global.v4.f32 {%f5, %f6, %f7, %f8}, [%rd6];
  ld.global.v4.f32 {%f9, %f10, %f11, %f12}, [%rd7];
  ld.global.v4.f32 {%f13, %f14, %f15, %f16}, [%rd8];
  add.s64 %rd9, %rd2, %rd3;
  add.s64 %rd10, %rd9, %rd4;
  add.s64 %rd11, %rd10, %rd4;
  add.s64 %rd12, %rd11, %rd4;
  st.global.v4.f32 [%rd9], {%f1, %f2, %f3, %f4};
  st.global.v4.f32 [%rd10], {%f5, %f6, %f7, %f8};
  st.global.v4.f32 [%rd11], {%f9, %f10, %f11, %f12};
  st.global.v4.f32 [%rd12], {%f13, %f14, %f15, %f16};
  ret;
}
)";

// Each thread sums 4 words of `src` at tid, tid + 1024, tid + 2048, tid + 3072 (4-byte
// words) into dst[tid]. `dependent`: every load is consumed before the next is issued
// (1 load in flight); else all 4 are issued first (4 in flight).
std::string sum4(bool dependent) {
  const std::string loads_then_adds = R"(
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd5+4096];
  ld.global.f32 %f3, [%rd5+8192];
  ld.global.f32 %f4, [%rd5+12288];
  add.rn.f32 %f5, %f1, %f2;
  add.rn.f32 %f5, %f5, %f3;
  add.rn.f32 %f5, %f5, %f4;
)";
  const std::string interleaved = R"(
  ld.global.f32 %f1, [%rd5];
  add.rn.f32 %f5, %f1, %f1;
  ld.global.f32 %f2, [%rd5+4096];
  add.rn.f32 %f5, %f5, %f2;
  ld.global.f32 %f3, [%rd5+8192];
  add.rn.f32 %f5, %f5, %f3;
  ld.global.f32 %f4, [%rd5+12288];
  add.rn.f32 %f5, %f5, %f4;
)";
  return std::string(R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry sum4(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<8>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd5, %rd1, %rd3;
)") + (dependent ? interleaved : loads_then_adds) + R"(
  add.s64 %rd6, %rd2, %rd3;
  st.global.f32 [%rd6], %f5;
  ret;
}
)";
}

// out[tid] = 2 * in[tid]: one 4-byte load per thread.
const char* kLoadOne = R"(
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
  ld.global.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, %f1;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
)";

}  // namespace

TEST_CASE("the device table: four devices, their key figures and per-pipe rates", "[emulator][cost]") {
  REQUIRE(devices().size() == 4);
  CHECK(devices()[0].key == "h100_sxm");
  CHECK(devices()[1].key == "h200");
  CHECK(devices()[2].key == "a100");
  CHECK(devices()[3].key == "l40s");
  const DeviceSpec& h = h100();
  CHECK(h.sms == 132);
  CHECK(h.clock_hz == 1.98e9);
  CHECK(h.dram_bandwidth == 3.35e12);
  CHECK(h.arch() == "sm_90");
  CHECK(h.dram_latency > 300e-9);  // several hundred ns, loaded
  CHECK(h.dram_latency < 1000e-9);
  CHECK(find_device("h200").dram_bandwidth == 4.8e12);
  CHECK(find_device("a100").sms == 108);
  CHECK(find_device("l40s").compute_capability == 89);
  // Results per clock per SM / 32 lanes (f16x2: / 64).
  CHECK(h.warp_instructions_per_clock(Pipe::Fp32) == 4);
  CHECK(find_device("a100").warp_instructions_per_clock(Pipe::Fp32) == 2);
  CHECK(find_device("l40s").warp_instructions_per_clock(Pipe::Fp64) == Approx(1.0 / 16));
  CHECK(h.warp_instructions_per_clock(Pipe::Fp64) == 2);
  CHECK(h.warp_instructions_per_clock(Pipe::Fp16) == 4);
  CHECK(find_device("l40s").warp_instructions_per_clock(Pipe::Fp16) == 2);
  CHECK(h.warp_instructions_per_clock(Pipe::Integer) == 2);
  CHECK(h.warp_instructions_per_clock(Pipe::Special) == 0.5);
  CHECK(h.warp_instructions_per_clock(Pipe::Conversion) == 0.5);
  CHECK(h.warp_instructions_per_clock(Pipe::Shuffle) == 1);
  CHECK(h.warp_instructions_per_clock(Pipe::Move) == 0);
  // Tensor cores: an m16n8k16 mma is 2048 multiply-adds; dense f16 1024 per SM and clock
  // (A100, and Hopper through mma.sync), 512 on the L40S.
  CHECK(h.warp_instructions_per_clock(Pipe::Tensor) == 0.5);
  CHECK(find_device("a100").warp_instructions_per_clock(Pipe::Tensor) == 0.5);
  CHECK(find_device("l40s").warp_instructions_per_clock(Pipe::Tensor) == 0.25);
  CHECK_THROWS_AS(find_device("b200"), CostModelError);
  CHECK_THROWS_WITH(find_device("b200"), Catch::Contains("'b200'") && Catch::Contains("h100_sxm, h200, a100, l40s"));
}

TEST_CASE("occupancy: registers, warps, shared memory and CTA slots against hand-computed cases", "[emulator][cost]") {
  SECTION("256 threads x 64 registers on H100: 2048 registers per warp, 8 warps per sub-partition -> 4 CTAs") {
    Occupancy o = occupancy({256, 1000, 64, 0}, h100());
    CHECK(o.registers_per_warp == 2048);
    CHECK(o.ctas_per_sm == 4);
    CHECK(o.limit == OccupancyLimit::Registers);
    CHECK(o.resident_warps == 32);
    CHECK(o.fraction == 0.5);
  }
  SECTION("256 threads x 32 registers: the warp limit, 8 CTAs, full occupancy") {
    Occupancy o = occupancy({256, 1000, 32, 0}, h100());
    CHECK(o.ctas_per_sm == 8);
    CHECK(o.limit == OccupancyLimit::Warps);
    CHECK(o.fraction == 1.0);
  }
  SECTION("registers are allocated per sub-partition: 3-warp CTAs x 40 registers fit 16, not 17") {
    // 40 x 32 = 1280 registers per warp; 16384 / 1280 = 12 warps per partition, 48 per
    // SM -> 16 CTAs of 3 warps (65536 / 1280 = 51 warps would give 17).
    Occupancy o = occupancy({96, 1000, 40, 0}, h100());
    CHECK(o.ctas_by_registers == 16);
    CHECK(o.ctas_per_sm == 16);
    CHECK(o.limit == OccupancyLimit::Registers);
  }
  SECTION("48 KB of shared memory per CTA: + 1 KB reserved = 50176 bytes; 228 KB / that = 4 on H100") {
    Occupancy o = occupancy({128, 1000, 32, 48 * 1024}, h100());
    CHECK(o.shared_bytes_allocated == 50176);
    CHECK(o.ctas_per_sm == 4);
    CHECK(o.limit == OccupancyLimit::SharedMemory);
    CHECK(occupancy({128, 1000, 32, 48 * 1024}, find_device("a100")).ctas_per_sm == 3);  // 164 KB
    CHECK(occupancy({128, 1000, 32, 48 * 1024}, find_device("l40s")).ctas_per_sm == 2);  // 100 KB
    // Rounded up to the 128-byte allocation unit: 100 + 1024 -> 1152.
    CHECK(occupancy({32, 1, 16, 100}, h100()).shared_bytes_allocated == 1152);
  }
  SECTION("one-warp CTAs: the CTA-slot limit, 32 on H100, 24 on L40S") {
    Occupancy o = occupancy({32, 1000, 16, 0}, h100());
    CHECK(o.ctas_per_sm == 32);
    CHECK(o.limit == OccupancyLimit::CtaSlots);
    CHECK(o.fraction == 0.5);
    CHECK(occupancy({32, 1000, 16, 0}, find_device("l40s")).ctas_per_sm == 24);
  }
  SECTION("launches a device refuses are errors naming the value and the limit") {
    CHECK_THROWS_WITH(occupancy({0, 1, 32, 0}, h100()), Catch::Contains("0 threads per CTA"));
    CHECK_THROWS_WITH(occupancy({2048, 1, 32, 0}, h100()),
                      Catch::Contains("2048 threads per CTA") && Catch::Contains("1 to 1024"));
    CHECK_THROWS_WITH(occupancy({32, 1, 256, 0}, h100()), Catch::Contains("256 registers per thread"));
    CHECK_THROWS_WITH(occupancy({1024, 1, 255, 0}, h100()),
                      Catch::Contains("255 registers per thread x 1024 threads") && Catch::Contains("65536"));
    CHECK_THROWS_WITH(occupancy({128, 1, 32, 200 * 1024}, find_device("a100")),
                      Catch::Contains("204800 bytes of shared memory") && Catch::Contains("a100"));
    CHECK_NOTHROW(occupancy({128, 1, 32, 200 * 1024}, h100()));
  }
}

TEST_CASE("per-pipe issue time: 1e6 FP32 warp instructions spread over every SM", "[emulator][cost]") {
  LaunchCounters c;
  pipe_count(c, Pipe::Fp32) = 1'000'000;
  c.warp_instructions = 1'000'000;
  SECTION("H100: one full wave of 8 CTAs per SM") {
    c.ctas = 132 * 8;
    LaunchEstimate e = estimate_launch(c, {256, c.ctas, 32, 0}, h100());
    const double expected = 1e6 * 32 / (128 * 132 * 1.98e9);
    CHECK(e.waves == 1);
    CHECK(e.pipe_seconds[static_cast<std::size_t>(Pipe::Fp32)] == Approx(expected));
    CHECK(e.seconds == Approx(expected));
    CHECK(e.limit == Limit::Issue);
    CHECK(e.limit_key() == "issue_fp32");
    CHECK(e.hbm_fraction() == 0);
  }
  SECTION("A100: 64 FP32 results per clock per SM, twice the time per SM-clock") {
    c.ctas = 108 * 8;
    LaunchEstimate e = estimate_launch(c, {256, c.ctas, 32, 0}, find_device("a100"));
    CHECK(e.seconds == Approx(1e6 * 32 / (64 * 108 * 1.41e9)));
    CHECK(e.limit_key() == "issue_fp32");
  }
  SECTION("moves are free: a million more mov instructions change nothing") {
    c.ctas = 132 * 8;
    const double before = estimate_launch(c, {256, c.ctas, 32, 0}, h100()).seconds;
    pipe_count(c, Pipe::Move) = 1'000'000;
    c.warp_instructions += 1'000'000;
    LaunchEstimate e = estimate_launch(c, {256, c.ctas, 32, 0}, h100());
    CHECK(e.seconds == before);
    CHECK(e.pipe_seconds[static_cast<std::size_t>(Pipe::Move)] == 0);
  }
}

TEST_CASE("the tensor pipe: an mma.sync kernel issues one tensor instruction per warp and tile", "[emulator][cost]") {
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry tiles()\n{\n"
      "  .reg .b32 %r<4>;\n  .reg .f32 %f<4>;\n"
      "  mov.b32 %r0, 0x3c003c00;\n  mov.b32 %r1, 0x3c003c00;\n  mov.b32 %r2, 0x3c003c00;\n  mov.b32 %r3, 0x3c003c00;\n"
      "  mov.f32 %f0, 0f00000000;\n  mov.f32 %f1, 0f00000000;\n  mov.f32 %f2, 0f00000000;\n  mov.f32 %f3, 0f00000000;\n"
      "  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, {%r0, %r1}, "
      "{%f0, %f1, %f2, %f3};\n"
      "  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, {%r0, %r1}, "
      "{%f0, %f1, %f2, %f3};\n"
      "  ret;\n}\n";
  LaunchCounters c = run_kernel(ptx, "tiles", 132 * 8, 256, {});
  const std::uint64_t warps = 132 * 8 * 8;
  CHECK(pipe_count(c, Pipe::Tensor) == 2 * warps);
  LaunchEstimate e = estimate_launch(c, {256, c.ctas, 32, 0}, h100());
  // 2 tiles x 2048 multiply-adds per warp at 1024 per SM and clock.
  CHECK(e.pipe_seconds[static_cast<std::size_t>(Pipe::Tensor)] == Approx(2.0 * warps * 2048 / (1024 * 132 * 1.98e9)));
}

TEST_CASE("ld.param is free, moves alone cost nothing, subroutines are charged to the pipes they run on",
          "[emulator][cost]") {
  LaunchCounters c;
  c.ctas = 132;
  pipe_count(c, Pipe::Move) = 5000;
  pipe_count(c, Pipe::Memory) = 3000;
  c.parameter_loads = 3000;
  LaunchEstimate free = estimate_launch(c, {32, 132, 32, 0}, h100());
  CHECK(free.seconds == 0);
  CHECK(free.dispatch_seconds == 0);

  LaunchCounters d;
  d.ctas = 132;
  pipe_count(d, Pipe::Emulated) = 1320;  // 10 u32 divisions per CTA
  d.subroutine_instructions[static_cast<std::size_t>(Subroutine::DivRem32)] = 1320;
  LaunchEstimate e = estimate_launch(d, {32, 132, 32, 0}, h100());
  const auto& expansion = subroutine_cost(Subroutine::DivRem32);
  const double integer = expansion[static_cast<std::size_t>(Pipe::Integer)];
  const double special = expansion[static_cast<std::size_t>(Pipe::Special)];
  CHECK(integer > 0);
  CHECK(special == 1);
  // One CTA per SM, 10 divisions: 10 x integer instructions at 2 per clock.
  CHECK(e.pipe_seconds[static_cast<std::size_t>(Pipe::Integer)] == Approx(10 * integer / 2 / 1.98e9));
  CHECK(e.pipe_seconds[static_cast<std::size_t>(Pipe::Special)] == Approx(10 * special / 0.5 / 1.98e9));
  CHECK(e.pipe_seconds[static_cast<std::size_t>(Pipe::Emulated)] == 0);
  double total = 0;
  for (double count : expansion) total += count;
  CHECK(total < 20);  // "below 20 instructions" (Nsight VSE, Achieved IOPs)
  CHECK(e.dispatch_seconds == Approx(10 * total / 4 / 1.98e9));
}

TEST_CASE("waves: 133 CTAs at 1 CTA per SM on 132 SMs take 2 waves", "[emulator][cost]") {
  LaunchCounters c;
  // 1024 threads x 64 registers: 32 warps x 2048 registers = the whole register file.
  const KernelResources resources{1024, 133, 64, 0};
  c.ctas = 133;
  pipe_count(c, Pipe::Fp32) = 133 * 10'000;  // 10,000 per CTA: 2,500 cycles on one SM
  LaunchEstimate e = estimate_launch(c, resources, h100());
  CHECK(e.occupancy.ctas_per_sm == 1);
  CHECK(e.cta_slots == 132);
  CHECK(e.waves == 2);
  CHECK(e.last_wave_ctas == 1);
  CHECK(e.active_sms == 132);
  const double wave = 2500 / 1.98e9;
  CHECK(e.seconds == Approx(2 * wave));
  // The idle SMs of the second wave cost almost as much as the work itself.
  const auto& limits = e.limit_seconds;
  auto find = [&](const std::string& key) {
    for (const auto& [name, seconds] : limits)
      if (name == key) return seconds;
    FAIL("no limit " << key);
    return 0.0;
  };
  CHECK(find("issue_fp32") == Approx(133.0 / 132 * wave));
  CHECK(find("ctas") == Approx(2 * wave - 133.0 / 132 * wave));

  SECTION("one CTA doing all the work: too few CTAs") {
    // On the special-function pipe (16 results per clock per SM): 20,000 cycles of issue on
    // one SM, far more than each warp's chain (312.5 instructions x 8 cycles), and the other
    // 131 SMs idle.
    LaunchCounters one;
    one.ctas = 1;
    pipe_count(one, Pipe::Special) = 10'000;
    LaunchEstimate single = estimate_launch(one, {1024, 1, 64, 0}, h100());
    CHECK(single.active_sms == 1);
    CHECK(single.seconds == Approx(10'000 / (16.0 / 32) / 1.98e9));
    CHECK(single.limit == Limit::Ctas);
    CHECK(single.limit_key() == "ctas");
  }
  SECTION("counters of another launch size are refused") {
    CHECK_THROWS_WITH(estimate_launch(c, {1024, 134, 64, 0}, h100()),
                      Catch::Contains("133 CTAs") && Catch::Contains("134 CTAs"));
    CHECK_THROWS_WITH(estimate_launch(LaunchCounters{}, {1024, 0, 64, 0}, h100()), Catch::Contains("0 CTAs"));
  }
}

/// Chunk `chunk` of a thread's cp.async copies (16 bytes each; chunks 4096 bytes apart in
/// the tile, 16384 in the source), committed as a group of its own.
std::string committed_copy(unsigned chunk) {
  return fmt::format("  cp.async.cg.shared.global [%r3+{}], [%rd5+{}], 16;\n  cp.async.commit_group;\n",
                     4096 * chunk, 16384 * chunk);
}
std::string wait_group(unsigned pending) { return fmt::format("  cp.async.wait_group {};\n  bar.sync 0;\n", pending); }

/// A kernel whose threads stage `chunks` 16-byte chunks with cp.async as `copies_and_waits`
/// orders them (committed_copy, wait_group), then add their first and last chunk.
std::string staged_copies(unsigned chunks, const std::string& copies_and_waits) {
  return fmt::format(R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry staged(.param .u64 src, .param .u64 dst)
{{
  .shared .align 16 .b8 tile[{}];
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd5, %rd1, %rd3;
  mov.u32 %r2, tile;
  shl.b32 %r4, %r1, 4;
  add.s32 %r3, %r2, %r4;
{}  bar.sync 0;
  ld.shared.f32 %f1, [%r3];
  ld.shared.f32 %f2, [%r3+{}];
  add.rn.f32 %f3, %f1, %f2;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd6, %rd2, %rd4;
  st.global.f32 [%rd6], %f3;
  ret;
}}
)",
                     4096 * chunks, copies_and_waits, 4096 * (chunks - 1));
}

TEST_CASE("cp.async groups committed before a wait share its round trip and one issued after it takes another",
          "[emulator][cost]") {
  // Pipelined: both groups committed before the first wait (wait_group 1, then 0: the
  // second group's round trip overlaps the first's); serial: each group waited for before
  // the next is issued (two round trips).
  const std::uint64_t warps = 8;
  const std::string pipelined_order = committed_copy(0) + committed_copy(1) + wait_group(1) + wait_group(0);
  const std::string serial_order = committed_copy(0) + wait_group(0) + committed_copy(1) + wait_group(0);
  const LaunchCounters pipelined = run_kernel(staged_copies(2, pipelined_order), "staged", 1, 256, {32768, 1024});
  const LaunchCounters serial = run_kernel(staged_copies(2, serial_order), "staged", 1, 256, {32768, 1024});
  CHECK(pipelined.global_load_requests == 2 * warps);
  CHECK(serial.global_load_requests == 2 * warps);
  CHECK(pipelined.global_load_batches == warps);
  CHECK(serial.global_load_batches == 2 * warps);
  CHECK(pipelined.global_load_batches_dram == warps);
  CHECK(serial.global_load_batches_dram == 2 * warps);
}

TEST_CASE("a ring of two cp.async stages costs a round trip every stage after the first pair", "[emulator][cost]") {
  // Four stages, the first two committed up front, each later one after the wait that
  // lands the stage before it (the refill of a consumed slot, as a multi-stage GEMM main
  // loop does). Stage 0 lands at the first wait (a round trip that stage 1 overlaps); stage
  // 2, committed after it, lands at the third wait (another, which stage 3 overlaps): two
  // round trips for four stages, one stage in flight while another is consumed.
  const std::uint64_t warps = 8;
  const std::string ring_order = committed_copy(0) + committed_copy(1) + wait_group(1) + committed_copy(2) +
                                 wait_group(1) + committed_copy(3) + wait_group(1) + wait_group(0);
  const LaunchCounters ring = run_kernel(staged_copies(4, ring_order), "staged", 1, 256, {65536, 1024});
  CHECK(ring.global_load_requests == 4 * warps);
  CHECK(ring.global_load_batches == 2 * warps);
  CHECK(ring.global_load_batches_dram == 2 * warps);
}

TEST_CASE("loads in flight: the emulator counts 1 vs 4 independent loads per warp", "[emulator][cost]") {
  const std::size_t bytes = 4 * 4096;
  LaunchCounters dependent = run_kernel(sum4(true), "sum4", 1, 1024, {bytes, 4096});
  LaunchCounters independent = run_kernel(sum4(false), "sum4", 1, 1024, {bytes, 4096});
  const std::uint64_t warps = 32;
  CHECK(dependent.global_load_requests == 4 * warps);
  CHECK(independent.global_load_requests == 4 * warps);
  CHECK(dependent.global_load_batches == 4 * warps);
  CHECK(independent.global_load_batches == warps);
  CHECK(dependent.global_load_batches_dram == 4 * warps);  // every word read for the first time
  CHECK(independent.global_load_batches_dram == warps);
  CHECK(dependent.global_load_batches_l2 + dependent.global_load_batches_l1 == 0);

  const KernelResources resources{1024, 1, 32, 0};
  LaunchEstimate one = estimate_launch(dependent, resources, h100());
  LaunchEstimate four = estimate_launch(independent, resources, h100());
  CHECK(one.bytes_in_flight_per_warp == 128);   // one coalesced 4-byte load: 4 sectors
  CHECK(four.bytes_in_flight_per_warp == 512);
  CHECK(one.load_batches_per_warp == 4);
  CHECK(four.load_batches_per_warp == 1);
  // Each warp's chain: its load waits, plus warp_cycles_per_instruction per issued
  // instruction (the two programs differ by one instruction per warp).
  CHECK(one.instructions_per_warp > 0);
  CHECK(std::abs(one.instructions_per_warp - four.instructions_per_warp) <= 1);
  auto instructions = [](const LaunchEstimate& e) {
    return e.instructions_per_warp * h100().warp_cycles_per_instruction / h100().clock_hz;
  };
  CHECK(one.latency_bound_seconds == Approx(4 * h100().dram_latency + instructions(one)));
  CHECK(four.latency_bound_seconds == Approx(h100().dram_latency + instructions(four)));
  CHECK(one.seconds - instructions(one) == Approx(4 * (four.seconds - instructions(four))));
  CHECK(one.limit == Limit::Latency);
  CHECK(four.limit == Limit::Latency);
  // A full SM of such warps keeps 64 x 512 bytes in flight; H100 needs bandwidth x latency / SMs.
  CHECK(four.bytes_in_flight_per_sm == 64 * 512);
  CHECK(four.bytes_in_flight_needed_per_sm == Approx(3.35e12 * h100().dram_latency / 132));
}

TEST_CASE("L1 wavefronts: a warp's 16-byte loads of 32 lines take 32, of one 512-byte span 4", "[emulator][cost]") {
  // Thread t loads 16 bytes at src + t * stride and stores one f32 to dst[t].
  const char* ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry strided(.param .u64 src, .param .u64 dst, .param .u32 stride)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<6>;
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u32 %r2, [stride];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r1, %r2;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];
  add.f32 %f5, %f1, %f4;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f5;
  ret;
}
)";
  LaunchCounters contiguous = run_kernel(ptx, "strided", 1, 32, {32 * 128, 128}, {16});
  LaunchCounters strided = run_kernel(ptx, "strided", 1, 32, {32 * 128, 128}, {128});
  CHECK(contiguous.global_load_sectors == 16);
  CHECK(contiguous.global_load_wavefronts == 4);
  CHECK(strided.global_load_sectors == 32);  // half of each sector
  CHECK(strided.global_load_wavefronts == 32);
  CHECK(contiguous.global_store_wavefronts == 1);  // 128 contiguous bytes
  CHECK(strided.global_store_wavefronts == 1);
  // The memory pipe charges one wavefront per clock on the one busy SM: 4 + 1 against
  // 32 + 1 (more than the 2 LSU instructions and than the sectors' 128 bytes per clock).
  const KernelResources resources{32, 1, 32, 0};
  const auto memory = static_cast<std::size_t>(Pipe::Memory);
  CHECK(estimate_launch(contiguous, resources, h100()).pipe_seconds[memory] == Approx(5 / h100().clock_hz));
  CHECK(estimate_launch(strided, resources, h100()).pipe_seconds[memory] == Approx(33 / h100().clock_hz));
}

TEST_CASE("shared-memory wavefronts: bank conflicts of 4-byte, 16-byte and ldmatrix accesses", "[emulator][cost]") {
  // Thread t stores and loads a u32 at byte t * word_stride, loads a u32x4 at t * row_stride
  // and names row t of an ldmatrix.x4 at t * row_stride (lanes 8i..8i+7: matrix i).
  const char* ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry banks(.param .u64 dst, .param .u32 word_stride, .param .u32 row_stride)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  .shared .align 16 .b8 tile[8192];
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [dst];
  ld.param.u32 %r2, [word_stride];
  ld.param.u32 %r3, [row_stride];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r4, tile;
  mad.lo.u32 %r5, %r1, %r2, %r4;
  st.shared.u32 [%r5], %r1;
  ld.shared.u32 %r6, [%r5];
  mad.lo.u32 %r7, %r1, %r3, %r4;
  ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r7];
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r12, %r13, %r14, %r15}, [%r7];
  add.u32 %r16, %r6, %r8;
  add.u32 %r17, %r16, %r12;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r17;
  ret;
}
)";
  // Consecutive words, and 16-byte rows 144 bytes apart (a 128-byte pitch padded by 16,
  // as the tensor GEMM's x tiles): every phase conflict-free. The u32 accesses take one
  // wavefront each, the u32x4 load and the ldmatrix.x4 four each (8 lanes x 16 bytes a phase).
  LaunchCounters padded = run_kernel(ptx, "banks", 1, 32, {128}, {4, 144});
  CHECK(padded.shared_store_wavefronts == 1);
  CHECK(padded.shared_load_wavefronts == 1 + 4 + 4);
  CHECK(padded.shared_bank_conflicts == 0);
  // Words 32 apart all fall in bank 0: 32 wavefronts. Rows 128 bytes apart put the 8 rows
  // of a phase in banks 0-3: 8 wavefronts a phase, 32 for each 16-byte request.
  LaunchCounters conflicted = run_kernel(ptx, "banks", 1, 32, {128}, {128, 128});
  CHECK(conflicted.shared_store_wavefronts == 32);
  CHECK(conflicted.shared_load_wavefronts == 32 + 32 + 32);
  CHECK(conflicted.shared_bank_conflicts == 31 + 31 + 28 + 28);
  // Per instruction, most conflicts first, then in line order.
  REQUIRE(conflicted.shared_conflict_sites.size() == 4);
  const char* sites[] = {"st.shared.u32", "ld.shared.u32", "ld.shared.v4.u32", "ldmatrix"};
  const std::uint64_t site_conflicts[] = {31, 31, 28, 28};
  for (std::size_t i = 0; i < 4; ++i) {
    INFO(i);
    CHECK(conflicted.shared_conflict_sites[i].instruction.rfind(sites[i], 0) == 0);
    CHECK(conflicted.shared_conflict_sites[i].requests == 1);
    CHECK(conflicted.shared_conflict_sites[i].bank_conflicts == site_conflicts[i]);
  }
  CHECK(conflicted.shared_conflict_sites[0].line + 1 == conflicted.shared_conflict_sites[1].line);
  CHECK(padded.shared_conflict_sites.empty());
  // Two lanes a word (8-byte stride over 4-byte words: 2-way) and every lane the same
  // word (a broadcast: one wavefront).
  LaunchCounters two_way = run_kernel(ptx, "banks", 1, 32, {128}, {8, 144});
  CHECK(two_way.shared_store_wavefronts == 2);
  LaunchCounters broadcast = run_kernel(ptx, "banks", 1, 32, {128}, {0, 144});
  CHECK(broadcast.shared_store_wavefronts == 1);
  CHECK(broadcast.shared_load_wavefronts == 1 + 4 + 4);
  // The memory pipe charges each wavefront a clock: the conflicts cost 128 - 10 = 118 clocks
  // (the one global store's line is one more in both).
  const KernelResources resources{32, 1, 32, 8192};
  const auto memory = static_cast<std::size_t>(Pipe::Memory);
  CHECK(estimate_launch(padded, resources, h100()).pipe_seconds[memory] == Approx((10 + 1) / h100().clock_hz));
  CHECK(estimate_launch(conflicted, resources, h100()).pipe_seconds[memory] == Approx((128 + 1) / h100().clock_hz));
}

TEST_CASE("cache levels of a load batch: first touch DRAM, another CTA's data L2, this CTA's L1", "[emulator][cost]") {
  // Each thread loads src[tid] twice (waiting in between); CTA 1 loads what CTA 0 loaded.
  const char* ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry twice(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, %f1;
  ld.global.f32 %f3, [%rd4];
  add.rn.f32 %f2, %f2, %f3;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd5, %r2, 128;
  add.s64 %rd6, %rd2, %rd5;
  add.s64 %rd6, %rd6, %rd3;
  st.global.f32 [%rd6], %f2;
  ret;
}
)";
  LaunchCounters c = run_kernel(ptx, "twice", 2, 32, {128, 256});
  CHECK(c.global_load_batches == 4);
  CHECK(c.global_load_batches_dram == 1);  // CTA 0, first load
  CHECK(c.global_load_batches_l1 == 2);    // each CTA's second load
  CHECK(c.global_load_batches_l2 == 1);    // CTA 1, first load: CTA 0's data
  CHECK(c.unique_global_sectors_read == 4);
  CHECK(c.unique_global_sectors_written == 8);
  LaunchEstimate e = estimate_launch(c, {32, 2, 32, 0}, h100());
  const DeviceSpec& d = h100();
  CHECK(e.latency_bound_seconds == Approx((d.dram_latency + d.l2_latency + 2 * d.l1_latency) / 2 +
                                          e.instructions_per_warp * d.warp_cycles_per_instruction / d.clock_hz));
}

TEST_CASE("a sector the launch writes and then reads crosses DRAM once: as a write", "[emulator][cost]") {
  // Each thread copies src[tid] to scratch[tid], reads it back and stores it to dst[tid]:
  // src's 4 sectors are DRAM reads; scratch's read comes from the write-back L2 (split-K
  // partial sums are such sectors), so only its write counts.
  const char* ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry roundtrip(.param .u64 src, .param .u64 scratch, .param .u64 dst)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [scratch];
  ld.param.u64 %rd3, [dst];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  st.global.f32 [%rd6], %f1;
  ld.global.f32 %f2, [%rd6];
  st.global.f32 [%rd7], %f2;
  ret;
}
)";
  LaunchCounters c = run_kernel(ptx, "roundtrip", 1, 32, {128, 128, 128});
  CHECK(c.unique_global_bytes_read == 256);  // src and scratch: every distinct byte read
  CHECK(c.unique_global_sectors_read == 4);  // src only
  CHECK(c.unique_global_sectors_written == 8);
  CHECK(estimate_launch(c, {32, 1, 32, 0}, h100()).dram_bytes == 12 * 32);
}

TEST_CASE("a streaming copy with 4 loads in flight is modeled at bytes / sustained DRAM bandwidth", "[emulator][cost]") {
  const std::uint32_t ctas = 132 * 8, threads = 256, chunk = ctas * threads;  // one full wave on H100
  const std::size_t bytes = std::size_t(chunk) * 64;
  LaunchCounters c = run_kernel(kCopy4, "copy4", ctas, threads, {bytes, bytes}, {chunk});
  CHECK(c.unique_global_bytes_read == bytes);
  CHECK(c.unique_global_sectors_read * 32 == bytes);
  CHECK(c.parameter_loads == 3 * std::uint64_t(ctas) * 8);
  CHECK(double(c.global_load_requests) / double(c.global_load_batches) == 4);
  for (const DeviceSpec& device : devices()) {
    INFO(device.key);
    LaunchEstimate e = estimate_launch(c, {threads, ctas, 32, 0}, device);
    const double ideal = 2.0 * double(bytes) / device.dram_bandwidth;
    CHECK(e.memory_bound_seconds == Approx(ideal));
    // At the sustained bandwidth: what a device copy reaches, below the peak.
    CHECK(device.sustained_dram_fraction < 1.0);
    CHECK(e.seconds == Approx(ideal / device.sustained_dram_fraction).epsilon(0.03));
    CHECK(e.limit == Limit::DramBandwidth);
    CHECK(e.hbm_fraction() == Approx(device.sustained_dram_fraction).epsilon(0.03));
  }
}

TEST_CASE("one CTA of 32 threads loading one word each is latency-bound", "[emulator][cost]") {
  LaunchCounters c = run_kernel(kLoadOne, "twice", 1, 32, {128, 128});
  REQUIRE(c.global_load_requests == 1);
  REQUIRE(c.global_load_batches == 1);
  for (const DeviceSpec& device : devices()) {
    INFO(device.key);
    LaunchEstimate e = estimate_launch(c, {32, 1, 32, 0}, device);
    CHECK(e.seconds == Approx(device.dram_latency +
                              e.instructions_per_warp * device.warp_cycles_per_instruction / device.clock_hz));
    CHECK(e.limit == Limit::Latency);
    CHECK(e.limit_key() == "latency");
    CHECK(e.hbm_fraction() < 0.01);
    CHECK(e.active_sms == 1);
  }
}

// Integer cvt: truncation and 32 -> 64-bit zero extension are register reuse on the GPU
// (free: Move); sign extension and narrow extension are one integer instruction; float
// conversions stay on the conversion pipe (16 per clock per SM).
const char* kConversions = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry conversions(.param .u64 out)
{
  .reg .b16 %h<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd6, [out];
  cvta.to.global.u64 %rd1, %rd6;
  mov.u32 %r1, %tid.x;
  cvt.u64.u32 %rd2, %r1;
  cvt.u32.u64 %r2, %rd2;
  cvt.s64.s32 %rd3, %r2;
  cvt.u16.u32 %h1, %r2;
  cvt.u32.u16 %r3, %h1;
  cvt.rn.f32.u32 %f1, %r3;
  cvt.rzi.u32.f32 %r4, %f1;
  shl.b64 %rd5, %rd3, 2;
  add.s64 %rd4, %rd5, %rd1;
  st.global.u32 [%rd4], %r4;
  ret;
}
)";

TEST_CASE("integer cvt that ptxas removes counts as a move, others on the integer or conversion pipe",
          "[emulator][cost]") {
  const LaunchCounters c = run_kernel(kConversions, "conversions", 1, 32, {256});
  // cvta + mov + cvt.u64.u32 + cvt.u32.u64 + cvt.u16.u32: free.
  CHECK(c.pipe(Pipe::Move) == 5);
  // cvt.s64.s32 (sign extension), cvt.u32.u16 (16-bit extension), shl.b64, add.s64.
  CHECK(c.pipe(Pipe::Integer) == 4);
  // cvt.rn.f32.u32 and cvt.rzi.u32.f32: I2F and F2I.
  CHECK(c.pipe(Pipe::Conversion) == 2);
}
