// Validation of the emulator against NVIDIA's own compiler: small CUDA C++ kernels
// (tests/emulator/kernels/*.cu) are compiled at test time with `nvcc -ptx -arch=sm_80
// -O3`, run in the emulator, and compared with the same computation in plain C++.
// Skipped with a message when nvcc is not installed.
#include <catch2/catch.hpp>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include <cuda_fp16.h>

#include "NvccSupport.h"
#include "runtime/backends/emulator/Emulator.h"

using namespace quantc::runtime::emulator;
using namespace quantc::runtime::emulator::testing;

namespace {

/// Evaluates f() with the host in rounding mode `mode` (this file is built with
/// -frounding-math; operands and the result pass through volatile so the compiler can
/// neither fold the operation early nor move it past the second fesetround).
template <class F>
auto with_rounding(int mode, F f) {
  std::fesetround(mode);
  volatile auto result = f();
  std::fesetround(FE_TONEAREST);
  return static_cast<decltype(f())>(result);
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

}  // namespace

TEST_CASE("nvcc vector_add: guarded f32 addition over a partial last CTA", "[emulator][nvcc]") {
  std::string ptx = compile("vector_add");
  if (ptx.empty()) return;
  const int n = 1000;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> distribution(-10.0f, 10.0f);
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) { a[i] = distribution(random); b[i] = distribution(random); }
  std::vector<DeviceBuffer> buffers = {buffer_of("a", a), buffer_of("b", b), buffer_of("c", std::vector<float>(n, -1.0f))};
  LaunchConfig config;
  config.grid = {8, 1, 1};
  config.block = {128, 1, 1};
  LaunchCounters counters = launch(parse_ptx(ptx), "vector_add", config, buffers,
                                   {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, ScalarArgument{n}});
  auto c = values_of<float>(buffers[2]);
  for (int i = 0; i < n; ++i) REQUIRE(c[i] == a[i] + b[i]);
  CHECK(counters.unique_global_bytes_read == 2 * n * 4);
  CHECK(counters.unique_global_bytes_written == n * 4);
  // 31 full warps touch 4 sectors per load; the last warp's 8 threads touch 1.
  CHECK(counters.sectors_per_load_request() == Approx((31.0 * 4 + 1) / 32));
}

TEST_CASE("nvcc warp_sum_u32: shfl.up scan, shfl.down reduction, shfl.idx broadcast", "[emulator][nvcc]") {
  std::string ptx = compile("warp_reduce");
  if (ptx.empty()) return;
  const unsigned n = 256;
  std::mt19937 random(2);
  std::vector<unsigned> x(n);
  for (auto& v : x) v = random() % 1000;
  std::vector<DeviceBuffer> buffers = {buffer_of("x", x), buffer_of("sums", std::vector<unsigned>(n / 32)),
                                       buffer_of("prefix", std::vector<unsigned>(n))};
  LaunchConfig config;
  config.grid = {2, 1, 1};
  config.block = {128, 1, 1};
  LaunchCounters counters = launch(parse_ptx(ptx), "warp_sum_u32", config, buffers,
                                   {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}});
  auto sums = values_of<unsigned>(buffers[1]);
  auto prefix = values_of<unsigned>(buffers[2]);
  for (unsigned w = 0; w < n / 32; ++w) {
    unsigned total = 0;
    for (unsigned lane = 0; lane < 32; ++lane) {
      total += x[w * 32 + lane];
      REQUIRE(prefix[w * 32 + lane] == total);
    }
    REQUIRE(sums[w] == total);
  }
  CHECK(counters.pipe(quantc::ptx::Pipe::Shuffle) > 0);
}

TEST_CASE("nvcc block_sum_f32: butterfly shuffles, shared memory and __syncthreads", "[emulator][nvcc]") {
  std::string ptx = compile("warp_reduce");
  if (ptx.empty()) return;
  const int n = 1000, block = 256, grid = (n + block - 1) / block;
  std::mt19937 random(3);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = distribution(random);
  std::vector<DeviceBuffer> buffers = {buffer_of("x", x), buffer_of("sums", std::vector<float>(grid))};
  LaunchConfig config;
  config.grid = {static_cast<std::uint32_t>(grid), 1, 1};
  config.block = {block, 1, 1};
  LaunchCounters counters =
      launch(parse_ptx(ptx), "block_sum_f32", config, buffers, {PointerArgument{0, 0}, PointerArgument{1, 0}, ScalarArgument{n}});
  // The oracle repeats the kernel's exact order of f32 additions (butterfly trees).
  auto butterfly = [](std::vector<float> lanes) {
    for (int mask = 16; mask > 0; mask >>= 1) {
      std::vector<float> next(32);
      for (int lane = 0; lane < 32; ++lane) next[lane] = lanes[lane] + lanes[lane ^ mask];
      lanes = next;
    }
    return lanes[0];
  };
  auto sums = values_of<float>(buffers[1]);
  for (int b = 0; b < grid; ++b) {
    std::vector<float> partial(32, 0.0f);
    for (int w = 0; w < block / 32; ++w) {
      std::vector<float> lanes(32);
      for (int lane = 0; lane < 32; ++lane) {
        int i = b * block + w * 32 + lane;
        lanes[lane] = i < n ? x[i] : 0.0f;
      }
      partial[w] = butterfly(lanes);
    }
    REQUIRE(sums[b] == butterfly(partial));
  }
  CHECK(counters.barriers == static_cast<std::uint64_t>(grid));
}

TEST_CASE("nvcc collatz: divergent loops reconverge before __ballot_sync", "[emulator][nvcc]") {
  std::string ptx = compile("divergent_loop");
  if (ptx.empty()) return;
  const unsigned n = 192;
  std::vector<unsigned> start(n);
  for (unsigned i = 0; i < n; ++i) start[i] = 1 + (i * 7919u) % 5000u;
  std::vector<DeviceBuffer> buffers = {buffer_of("start", start), buffer_of("steps", std::vector<unsigned>(n)),
                                       buffer_of("ballots", std::vector<unsigned>(n / 32))};
  LaunchConfig config;
  config.block = {n, 1, 1};
  launch(parse_ptx(ptx), "collatz", config, buffers, {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}});
  auto steps = values_of<unsigned>(buffers[1]);
  auto ballots = values_of<unsigned>(buffers[2]);
  std::vector<unsigned> expected_ballots(n / 32, 0);
  for (unsigned i = 0; i < n; ++i) {
    unsigned long long x = start[i];
    unsigned count = 0;
    while (x != 1 && count < 1000) {
      if (x & 1) {
        x = 3 * x + 1;
        if (x % 5 == 0) count += 2;
      } else {
        x >>= 1;
      }
      ++count;
    }
    REQUIRE(steps[i] == count);
    if (count > 20) expected_ballots[i / 32] |= 1u << (i % 32);
  }
  CHECK(ballots == expected_ballots);
}

TEST_CASE("nvcc integer_edge_cases: division, high multiplies, shifts, bit operations", "[emulator][nvcc]") {
  std::string ptx = compile("integer_edge_cases");
  if (ptx.empty()) return;
  std::vector<int> a = {7, -7, 7, -7, 0, 1, -1, 2147483647, -2147483647, 123456789, -98765, 0x40000000, 255, -128};
  std::vector<int> b = {2, 2, -2, -2, 5, 0, 31, 2, 3, -77, 33, 7, 8, -1};
  std::mt19937 random(4);
  for (int i = 0; i < 50; ++i) {
    a.push_back(static_cast<int>(random()));
    b.push_back(static_cast<int>(random() % 2000) - 1000);
  }
  for (int& v : a) if (v == std::numeric_limits<int>::min()) v = 0;
  const int n = static_cast<int>(a.size());
  std::vector<DeviceBuffer> buffers = {buffer_of("a", a), buffer_of("b", b), buffer_of("out", std::vector<int>(12 * n))};
  LaunchConfig config;
  config.grid = {2, 1, 1};
  config.block = {64, 1, 1};
  launch(parse_ptx(ptx), "integer_edge_cases", config, buffers,
         {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, ScalarArgument{static_cast<std::uint64_t>(n)}});
  auto out = values_of<int>(buffers[2]);
  for (int i = 0; i < n; ++i) {
    int x = a[i], y = b[i];
    auto ux = static_cast<unsigned>(x), uy = static_cast<unsigned>(y);
    std::uint64_t pair = (std::uint64_t(uy) << 32) | ux;
    auto byte = [&](unsigned index) { return static_cast<unsigned>((pair >> (8 * index)) & 0xff); };
    unsigned reversed = 0;
    for (int bit = 0; bit < 32; ++bit) reversed |= ((ux >> bit) & 1u) << (31 - bit);
    unsigned shift = uy & 31;
    std::vector<int> expected = {
        y != 0 ? x / y : 0,
        y != 0 ? x % y : 0,
        static_cast<int>((std::int64_t(x) * y) >> 32),
        static_cast<int>((std::uint64_t(ux) * uy) >> 32),
        x >> (y & 31),
        static_cast<int>(ux >> (y & 31)),
        std::popcount(ux) + 100 * std::countl_zero(uy),
        static_cast<int>(reversed),
        static_cast<int>(byte(1) | (byte(3) << 8) | (byte(5) << 16) | (byte(7) << 24)),
        static_cast<int>(static_cast<std::uint32_t>(((std::uint64_t(uy) << 32 | ux) << shift) >> 32)),
        std::max(std::min(x, y), -1000) + std::abs(x) / 2,
        static_cast<int>(static_cast<signed char>(x)) + ((x >> 7) & 0x3f),
    };
    for (int slot = 0; slot < 12; ++slot) {
      INFO("element " << i << " (a=" << x << ", b=" << y << ") slot " << slot);
      REQUIRE(out[12 * i + slot] == expected[slot]);
    }
  }
}

TEST_CASE("nvcc float_conversions: rounding intrinsics, conversions, half, NaN min/max", "[emulator][nvcc]") {
  std::string ptx = compile("float_conversions");
  if (ptx.empty()) return;
  std::vector<float> a = {1.0f, -1.5f, 0.1f, 2.5e-3f, std::nanf(""), 1.9999999f, -0.0049999f, 0.3333333f};
  std::vector<float> b = {3.0f, 0.7f, -0.3f, std::nanf(""), 2.0f, 1e-30f, -1.25f, 7.0f};
  std::mt19937 random(5);
  std::uniform_real_distribution<float> distribution(-2.0f, 2.0f);
  for (int i = 0; i < 56; ++i) {
    a.push_back(distribution(random));
    b.push_back(distribution(random));
  }
  const int n = static_cast<int>(a.size());
  std::vector<double> d(n);
  for (int i = 0; i < n; ++i) d[i] = std::isnan(a[i]) ? 0.1 : double(a[i]) / 3.0 + 1e-12;
  std::vector<DeviceBuffer> buffers = {buffer_of("a", a), buffer_of("b", b), buffer_of("d", d),
                                       buffer_of("f", std::vector<float>(12 * n)), buffer_of("k", std::vector<int>(6 * n)),
                                       buffer_of("h", std::vector<std::uint16_t>(n))};
  LaunchConfig config;
  config.block = {static_cast<std::uint32_t>(n), 1, 1};
  launch(parse_ptx(ptx), "float_conversions", config, buffers,
         {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, PointerArgument{3, 0}, PointerArgument{4, 0},
          PointerArgument{5, 0}, ScalarArgument{static_cast<std::uint64_t>(n)}});
  auto f = values_of<float>(buffers[3]);
  auto k = values_of<int>(buffers[4]);
  auto h = values_of<std::uint16_t>(buffers[5]);
  auto clamp_int = [](double v) -> int {
    if (std::isnan(v)) return 0;
    if (v >= 2147483647.0) return std::numeric_limits<int>::max();
    if (v <= -2147483648.0) return std::numeric_limits<int>::min();
    return static_cast<int>(v);
  };
  for (int i = 0; i < n; ++i) {
    volatile float x = a[i], y = b[i];
    volatile double di = d[i];
    float expected[12] = {
        with_rounding(FE_TOWARDZERO, [&] { return x + y; }),
        with_rounding(FE_UPWARD, [&] { return x * y; }),
        x / y,
        with_rounding(FE_DOWNWARD, [&] { return std::fma(float(x), float(y), 1.0f); }),
        std::sqrt(std::fabs(float(x))),
        std::fmin(float(x), float(y)),
        std::fmax(float(x), float(y)),
        std::isnan(x) ? 0.0f : std::clamp(float(x), 0.0f, 1.0f),
        with_rounding(FE_DOWNWARD, [&] { return static_cast<float>(di); }),
        with_rounding(FE_UPWARD, [&] { return static_cast<float>(di); }),
        with_rounding(FE_TOWARDZERO, [&] { volatile int v = static_cast<int>(di * 1e6); return static_cast<float>(v); }),
        __half2float(__float2half_rn(x * 1000.0f)),
    };
    for (int slot = 0; slot < 12; ++slot) {
      INFO("element " << i << " (a=" << a[i] << ", b=" << b[i] << ") float slot " << slot << ": got " << f[12 * i + slot]
                      << " expected " << expected[slot] << " (bits 0x" << std::hex
                      << std::bit_cast<std::uint32_t>(f[12 * i + slot]) << " vs 0x" << std::bit_cast<std::uint32_t>(expected[slot])
                      << std::dec << ")");
      REQUIRE(same_float(f[12 * i + slot], expected[slot]));
    }
    int expected_int[6] = {
        clamp_int(std::nearbyint(double(x * 100.0f))),
        clamp_int(std::trunc(double(x * 1e10f))),
        std::isnan(x) ? 0 : static_cast<int>(std::max(0.0, std::floor(double(x * 100.0f)))),
        clamp_int(std::ceil(double(y * 100.0f))),
        clamp_int(std::nearbyint(di * 3.0)),
        std::isnan(x) ? 0 : static_cast<int>(static_cast<unsigned char>(std::fabs(float(x)) * 100.0f)),
    };
    for (int slot = 0; slot < 6; ++slot) {
      INFO("element " << i << " (a=" << a[i] << ", b=" << b[i] << ") integer slot " << slot);
      REQUIRE(k[6 * i + slot] == expected_int[slot]);
    }
    // CUDA's host conversion, round to nearest even (clang-14 has no _Float16 on x86-64).
    const std::uint16_t half_bits = static_cast<__half_raw>(__float2half_rn(float(y))).x;
    if (std::isnan(y)) CHECK((h[i] & 0x7c00) == 0x7c00);
    else CHECK(h[i] == half_bits);
  }
}

TEST_CASE("nvcc memory_spaces: local arrays, dynamic shared memory, barrier", "[emulator][nvcc]") {
  std::string ptx = compile("memory_spaces");
  if (ptx.empty()) return;
  const unsigned block = 96, grid = 3, n = block * grid;
  std::mt19937 random(6);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<int> index(n);
  std::vector<float> x(n);
  for (unsigned i = 0; i < n; ++i) {
    index[i] = static_cast<int>(random());
    x[i] = distribution(random);
  }
  Module module = parse_ptx(ptx);
  INFO(ptx);
  REQUIRE(module.kernels.at(0).local_bytes > 0);  // the array really lives in local memory
  std::vector<DeviceBuffer> buffers = {buffer_of("index", index), buffer_of("x", x), buffer_of("out", std::vector<float>(n))};
  LaunchConfig config;
  config.grid = {grid, 1, 1};
  config.block = {block, 1, 1};
  config.dynamic_shared_bytes = block * 4;
  launch(module, "memory_spaces", config, buffers, {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}});
  auto out = values_of<float>(buffers[2]);
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t) {
      unsigned mirror = b * block + (block - 1 - t);
      float expected = x[mirror] * static_cast<float>(index[mirror] & 15) + 1.0f;
      REQUIRE(out[b * block + t] == expected);
    }
  // Too little dynamic shared memory is reported, not silently read past.
  config.dynamic_shared_bytes = block * 2;
  CHECK_THROWS_WITH(launch(module, "memory_spaces", config, buffers,
                           {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}}),
                    Catch::Contains("out-of-bounds dynamic shared"));
}
