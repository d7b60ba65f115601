// The fast schedules of quantize_int4, dequantize_int4, quantize_nf4 and dequantize_nf4
// (ir/ops/Quantize.h) on the reference interpreter: bit for bit equal to the seed
// programs and to the plain-C++ oracles (Oracles.h) on random and edge-case inputs
// (NaN, +-inf, -0, subnormals, huge values, partial last groups, odd n, n not a multiple
// of 8), the same buffers, and the shapes fast cannot run named in OpError. (The
// emulator sweep over every registry test shape checks the emitted PTX against the
// interpreter bit for bit.)
//
// Why bit for bit and not within a bound: the fast programs compute every code, scale,
// zero point and dequantized value with the seed's f32 operations in the seed's order.
// The quantizers' reductions (max |v|, or min and max) run in another order, but max and
// min of one set of finite values are exact and independent of order (PTX min/max order
// -0 below +0, NaN and infinities never enter), so the scales are the same bits. The NF4
// threshold binary search returns the count of thresholds exceeded, as the seed's 15
// compares do, because the thresholds ascend strictly (checked at every threshold and
// its neighbours below).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

#include "Oracles.h"
#include "ir/Printer.h"
#include "ir/ops/Quantize.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/Interpreter.h"

namespace quantc::tests::quantize_nf4 {
namespace {

using ir::ops::KernelSchedule;
using runtime::BufferSet;
using runtime::HostBuffer;

constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

enum Scheme { kSymmetric, kAsymmetric, kNf4 };
const char* scheme_name(int scheme) { return scheme == kSymmetric ? "int4 symmetric" : scheme == kAsymmetric ? "int4 asymmetric" : "nf4"; }

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

ir::Program quantizer(int scheme, std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule) {
  return scheme == kNf4 ? ir::ops::quantize_nf4(n, group_size, schedule)
                        : ir::ops::quantize_int4(n, group_size, scheme == kSymmetric, schedule);
}

ir::Program dequantizer(int scheme, std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule) {
  return scheme == kNf4 ? ir::ops::dequantize_nf4(n, group_size, schedule)
                        : ir::ops::dequantize_int4(n, group_size, scheme == kSymmetric, schedule);
}

BufferSet run(const ir::Program& program, const BufferSet& inputs) {
  BufferSet buffers = runtime::allocate_buffers(program);
  for (const auto& [name, buffer] : inputs) buffers[name] = buffer;
  runtime::reference::run(program, buffers);
  return buffers;
}

Quantized quantized_of(const BufferSet& buffers, int scheme) {
  Quantized q{buffers.at("packed").as<std::uint8_t>(), buffers.at("scale").as<float>(), {}};
  if (scheme == kAsymmetric) q.zero_point = buffers.at("zero_point").as<float>();
  return q;
}

void require_same(const Quantized& actual, const Quantized& expected, const std::string& what) {
  INFO(what);
  REQUIRE(actual.packed == expected.packed);
  REQUIRE(actual.scale.size() == expected.scale.size());
  for (std::size_t g = 0; g < actual.scale.size(); ++g) {
    INFO("group " << g << ": " << actual.scale[g] << " vs " << expected.scale[g]);
    REQUIRE(same_bits(actual.scale[g], expected.scale[g]));
  }
  REQUIRE(actual.zero_point.size() == expected.zero_point.size());
  for (std::size_t g = 0; g < actual.zero_point.size(); ++g) {
    INFO("group " << g << ": zero point " << actual.zero_point[g] << " vs " << expected.zero_point[g]);
    REQUIRE(same_bits(actual.zero_point[g], expected.zero_point[g]));
  }
}

/// Bit for bit; with `any_nan`, any two NaNs match (the host oracle's NaNs keep C++'s
/// payloads and signs, the IR's are canonical).
void require_same(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what,
                  bool any_nan = false) {
  INFO(what);
  REQUIRE(actual.size() == expected.size());
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (any_nan && std::isnan(actual[i]) && std::isnan(expected[i])) continue;
    if (!same_bits(actual[i], expected[i]) && mismatches++ == 0) first = i;
  }
  INFO(mismatches << " mismatching elements; the first, element " << first << ": " << actual[first] << " vs "
                  << expected[first]);
  REQUIRE(mismatches == 0);
}

/// Random values in [-2, 3) with special values sprinkled in: NaN, +-inf, +-0,
/// subnormals, values near FLT_MAX, ties of the rounding (k + 0.5) and whole groups of
/// one special kind.
std::vector<float> edgy_floats(std::uint32_t n, std::uint32_t group_size, std::uint64_t seed) {
  std::vector<float> x = random_floats(n, seed, -2.0f, 3.0f);
  std::mt19937_64 engine(seed ^ 0x9E3779B97F4A7C15ull);
  const float specials[] = {kNaN, kInfinity, -kInfinity, 0.0f, -0.0f, 1e-40f, -1e-40f, 3e38f, -3e38f, 2.5f, -0.5f};
  for (float& v : x) {
    if (engine() % 8 == 0) v = specials[engine() % std::size(specials)];
  }
  // Group 1 all -0, group 2 all NaN (where they exist): no finite magnitude > 0.
  for (std::uint32_t i = group_size; i < std::min(n, 2 * group_size); ++i) x[i] = -0.0f;
  for (std::uint32_t i = 2 * group_size; i < std::min(n, 3 * group_size); ++i) x[i] = kNaN;
  return x;
}

void check_quantizer(int scheme, std::uint32_t n, std::uint32_t group_size, const std::vector<float>& x) {
  const std::string what = fmt::format("{} n={} group_size={}", scheme_name(scheme), n, group_size);
  ir::Program fast = quantizer(scheme, n, group_size, KernelSchedule::Fast);
  ir::Program seed = quantizer(scheme, n, group_size, KernelSchedule::Seed);
  REQUIRE(fast.caller_buffers() == seed.caller_buffers());  // one set of files feeds either schedule
  REQUIRE(fast.name == seed.name);
  BufferSet inputs{{"x", HostBuffer::from(ir::ScalarType::F32, x)}};
  Quantized fast_q = quantized_of(run(fast, inputs), scheme);
  require_same(fast_q, quantized_of(run(seed, inputs), scheme), what + " fast vs seed");
  require_same(fast_q, scheme == kNf4 ? quantize_nf4(x, group_size) : quantize_int4(x, group_size, scheme == kSymmetric),
               what + " fast vs oracle");
  if (n % 2 == 1) REQUIRE((fast_q.packed.back() >> 4) == 0);
}

void check_dequantizer(int scheme, std::uint32_t n, std::uint32_t group_size, const Quantized& q) {
  const std::string what = fmt::format("{} n={} group_size={}", scheme_name(scheme), n, group_size);
  ir::Program fast = dequantizer(scheme, n, group_size, KernelSchedule::Fast);
  ir::Program seed = dequantizer(scheme, n, group_size, KernelSchedule::Seed);
  REQUIRE(fast.caller_buffers() == seed.caller_buffers());
  REQUIRE(fast.name == seed.name);
  BufferSet inputs{{"packed", HostBuffer::from(ir::ScalarType::U8, q.packed)},
                   {"scale", HostBuffer::from(ir::ScalarType::F32, q.scale)}};
  if (scheme == kAsymmetric) inputs["zero_point"] = HostBuffer::from(ir::ScalarType::F32, q.zero_point);
  std::vector<float> y = run(fast, inputs).at("y").as<float>();
  require_same(y, run(seed, inputs).at("y").as<float>(), what + " fast vs seed");
  require_same(y, scheme == kNf4 ? dequantize_nf4(q, n, group_size) : dequantize_int4(q, n, group_size, scheme == kSymmetric),
               what + " fast vs oracle", /*any_nan=*/true);
}

/// Random codes (every byte value) and sidecars with special values: NaN, +-inf, -0,
/// subnormal scales; non-integer and out-of-range zero points.
Quantized random_quantized(int scheme, std::uint32_t n, std::uint32_t group_size, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  Quantized q;
  for (std::uint32_t b = 0; b < (n + 1) / 2; ++b) q.packed.push_back(static_cast<std::uint8_t>(engine()));
  if (n % 2 == 1) q.packed.back() &= 0x0F;
  const std::uint32_t groups = (n + group_size - 1) / group_size;
  const float specials[] = {kNaN, kInfinity, -kInfinity, -0.0f, 0.0f, 1e-40f, 3e38f};
  q.scale = random_floats(groups, seed + 1, -2.0f, 2.0f);
  for (float& s : q.scale) {
    if (engine() % 6 == 0) s = specials[engine() % std::size(specials)];
  }
  if (scheme == kAsymmetric) {
    q.zero_point = random_floats(groups, seed + 2, -20.0f, 20.0f);
    for (std::size_t g = 0; g < groups; ++g) {
      if (g % 2 == 0) q.zero_point[g] = std::nearbyint(q.zero_point[g]);
      if (engine() % 7 == 0) q.zero_point[g] = specials[engine() % std::size(specials)];
    }
  }
  return q;
}

// Multiples of 8 (the word program where n is one too): 8, 24 and 40 (1, 3, 5 words: idle
// lanes), 96 (12 words: a second slot that overhangs the group), 32..512.
const std::vector<std::uint32_t> kEvenGroupSizes = {2, 4, 8, 10, 24, 32, 40, 64, 96, 128, 256, 512};
// Multiples of 8 with a partial last group or subgroup (40, 1000, 4104) next to the byte
// program's odd and unaligned lengths.
const std::vector<std::uint32_t> kLengths = {1, 2, 7, 40, 63, 64, 65, 300, 301, 1000, 1024, 4097, 4104};

TEST_CASE("fast quantizers equal the seed programs and the oracles bit for bit", "[quantize][schedule]") {
  for (int scheme : {kSymmetric, kAsymmetric, kNf4}) {
    for (std::uint32_t group_size : kEvenGroupSizes) {
      for (std::uint32_t n : kLengths) {
        DYNAMIC_SECTION(scheme_name(scheme) << " group " << group_size << " n " << n) {
          check_quantizer(scheme, n, group_size, random_floats(n, n * 31 + group_size + scheme, -2.0f, 3.0f));
          check_quantizer(scheme, n, group_size, edgy_floats(n, group_size, n * 17 + group_size + scheme));
        }
      }
    }
  }
}

TEST_CASE("fast quantizers on the targets' exact-cover shapes (no guards) equal the seed", "[quantize][schedule]") {
  for (int scheme : {kSymmetric, kAsymmetric, kNf4}) {
    for (auto [n, group_size] : {std::pair{8192u, 64u}, std::pair{8192u, 128u}, std::pair{2048u, 512u}}) {
      DYNAMIC_SECTION(scheme_name(scheme) << " group " << group_size << " n " << n) {
        check_quantizer(scheme, n, group_size, edgy_floats(n, group_size, n + group_size + scheme));
      }
    }
  }
}

TEST_CASE("fast NF4 threshold search picks the seed's code at every threshold and its neighbours",
          "[quantize][schedule][nf4]") {
  // One group of 64 whose absmax is exactly 1 (scale 1): v/scale == v, so each value
  // probes the search directly. Each threshold, the f32 just below and just above it,
  // the table values themselves, +-0, subnormals, NaN and +-inf.
  std::vector<float> probes = {1.0f, -1.0f, 0.0f, -0.0f, 1e-45f, -1e-45f, kNaN, kInfinity, -kInfinity};
  for (float t : ir::ops::nf4_thresholds()) {
    probes.push_back(t);
    probes.push_back(std::nextafter(t, -kInfinity));
    probes.push_back(std::nextafter(t, kInfinity));
  }
  for (float v : ir::ops::kNf4Table) probes.push_back(v);
  REQUIRE(probes.size() <= 128);
  probes.resize(128, 0.25f);
  check_quantizer(kNf4, 128, 128, probes);
  check_quantizer(kNf4, 128, 64, probes);
  Quantized q = quantize_nf4(probes, 128);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (!std::isnan(probes[i])) {
      INFO("value " << probes[i]);
      REQUIRE(code_at(q.packed, i) == nearest_nf4_code(probes[i] / q.scale[0]));
    }
  }
}

TEST_CASE("fast dequantizers equal the seed programs and the oracles bit for bit", "[dequantize][schedule]") {
  std::vector<std::uint32_t> group_sizes = kEvenGroupSizes;
  group_sizes.insert(group_sizes.end(), {1, 3, 31, 33});  // odd: a byte's two elements in two groups
  for (int scheme : {kSymmetric, kAsymmetric, kNf4}) {
    for (std::uint32_t group_size : group_sizes) {
      // 2048 and 6144: whole subgroups of the word program (at group 128 its f32x4 sidecars).
      for (std::uint32_t n : {1u, 2u, 7u, 31u, 63u, 65u, 255u, 256u, 257u, 300u, 301u, 1024u, 2048u, 4097u, 6144u}) {
        DYNAMIC_SECTION(scheme_name(scheme) << " group " << group_size << " n " << n) {
          check_dequantizer(scheme, n, group_size, random_quantized(scheme, n, group_size, n * 13 + group_size + scheme));
          // The codes the fast quantizer produces round-trip exactly as the seed's.
          if (group_size % 2 == 0) {
            std::vector<float> x = edgy_floats(n, group_size, n + group_size);
            check_dequantizer(scheme, n, group_size,
                              quantized_of(run(quantizer(scheme, n, group_size, KernelSchedule::Fast),
                                               {{"x", HostBuffer::from(ir::ScalarType::F32, x)}}),
                                           scheme));
          }
        }
      }
    }
  }
}

TEST_CASE("fast dequantizers with 16 slots a lane equal the seed programs and the oracles bit for bit",
          "[dequantize][schedule]") {
  // The word program takes 16 slots a lane only where 8-slot subgroups would pass the
  // warps 132 SMs hold (8448, 1024 elements each): n = 4225 * 2048 is the first whole
  // number of 16-slot subgroups past it.
  const std::uint32_t n = 4225 * 2048;
  CHECK(ir::ops::dequantize_int4(n, 128, false, KernelSchedule::Fast).workgroup_count[0] == n / 16384 + 1);
  CHECK(ir::ops::dequantize_int4(8448 * 1024, 128, false, KernelSchedule::Fast).workgroup_count[0] == 8448 / 8);
  // Group 128: one group a slot, the sidecars by f32x4 loads; group 64: two a slot.
  for (const auto& [scheme, group_size] : {std::pair{kAsymmetric, 128u}, std::pair{kNf4, 64u}}) {
    DYNAMIC_SECTION(scheme_name(scheme) << " group " << group_size) {
      check_dequantizer(scheme, n, group_size, random_quantized(scheme, n, group_size, group_size + scheme));
    }
  }
}

TEST_CASE("fast dequantizers: every code of every byte with power-of-two scales is exact", "[dequantize][schedule]") {
  // Bytes 0..255 in order, scales 2^k: (q - 8) * 2^k and NF4[q] * 2^k are exact, so the
  // outputs are known without an oracle: y = value(q) * scale.
  const std::uint32_t n = 512, group_size = 64;
  for (int scheme : {kSymmetric, kAsymmetric, kNf4}) {
    Quantized q;
    for (std::uint32_t b = 0; b < n / 2; ++b) q.packed.push_back(static_cast<std::uint8_t>(b));
    for (std::uint32_t g = 0; g < n / group_size; ++g) q.scale.push_back(std::ldexp(1.0f, static_cast<int>(g) - 3));
    if (scheme == kAsymmetric) q.zero_point.assign(n / group_size, 5.0f);
    BufferSet inputs{{"packed", HostBuffer::from(ir::ScalarType::U8, q.packed)},
                     {"scale", HostBuffer::from(ir::ScalarType::F32, q.scale)}};
    if (scheme == kAsymmetric) inputs["zero_point"] = HostBuffer::from(ir::ScalarType::F32, q.zero_point);
    std::vector<float> y = run(dequantizer(scheme, n, group_size, KernelSchedule::Fast), inputs).at("y").as<float>();
    for (std::uint32_t i = 0; i < n; ++i) {
      const unsigned code = code_at(q.packed, i);
      const float s = q.scale[i / group_size];
      const double value = scheme == kNf4 ? kSeedNf4Lookup[code] : double(code) - (scheme == kSymmetric ? 8.0 : 5.0);
      INFO(scheme_name(scheme) << " element " << i << " code " << code);
      REQUIRE(double(y[i]) == value * s);
    }
  }
}

TEST_CASE("quantizer schedule fast names the shape it cannot run and auto falls back to the seed", "[quantize][schedule]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(ir::ops::quantize_int4(65, 31, true, KernelSchedule::Fast),
                    Contains("group_size=31 is odd") && Contains("\"schedule\": \"seed\""));
  CHECK_THROWS_WITH(ir::ops::quantize_nf4(65, 31, KernelSchedule::Fast), Contains("group_size=31 is odd"));
  CHECK_THROWS_WITH(ir::ops::quantize_int4(4096, 1024, false, KernelSchedule::Fast),
                    Contains("group_size=1024 is above 512") && Contains("\"schedule\": \"seed\""));
  // The seed's own errors come first under every schedule.
  for (KernelSchedule schedule : {KernelSchedule::Fast, KernelSchedule::Auto}) {
    CHECK_THROWS_WITH(ir::ops::quantize_nf4(0, 64, schedule), Contains("n=0"));
    CHECK_THROWS_WITH(ir::ops::quantize_int4(64, 0, true, schedule), Contains("group_size=0"));
    CHECK_THROWS_WITH(ir::ops::quantize_nf4(4294967000u, 1024, schedule), Contains("overflows u32"));
    CHECK_THROWS_WITH(ir::ops::dequantize_int4(64, 0, false, schedule), Contains("group_size=0"));
    CHECK_THROWS_WITH(ir::ops::dequantize_nf4(0, 64, schedule), Contains("n=0"));
  }
  // auto: the seed program where fast cannot run, fast elsewhere (fast launches fewer workgroups).
  CHECK(ir::print(ir::ops::quantize_int4(65, 31, false, KernelSchedule::Auto)) ==
        ir::print(ir::ops::quantize_int4(65, 31, false)));
  CHECK(ir::print(ir::ops::quantize_nf4(8192, 1024, KernelSchedule::Auto)) == ir::print(ir::ops::quantize_nf4(8192, 1024)));
  CHECK(ir::print(ir::ops::quantize_nf4(8192, 64, KernelSchedule::Auto)) ==
        ir::print(ir::ops::quantize_nf4(8192, 64, KernelSchedule::Fast)));
  CHECK(ir::print(ir::ops::dequantize_nf4(8192, 31, KernelSchedule::Auto)) ==
        ir::print(ir::ops::dequantize_nf4(8192, 31, KernelSchedule::Fast)));
  // Fast: 8 subgroups of 256 u32 words (16 half words a lane), 16384 elements per
  // workgroup (2048 with the byte loads an odd group size or n falls back to).
  CHECK(ir::ops::dequantize_int4(1u << 24, 64, true, KernelSchedule::Fast).workgroup_count[0] == (1u << 24) / 16384);
  CHECK(ir::ops::dequantize_int4((1u << 24) + 2, 64, true, KernelSchedule::Fast).workgroup_count[0] ==
        (1u << 24) / 2048 + 1);
  CHECK(ir::ops::dequantize_int4(1u << 24, 64, true, KernelSchedule::Seed).workgroup_count[0] == (1u << 24) / 256);
}

}  // namespace
}  // namespace quantc::tests::quantize_nf4
