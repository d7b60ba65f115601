// The instruction forms quantized kernels are built from, as nvcc emits them: CUDA C++
// kernels in tests/emulator/kernels/ are compiled at test time with `nvcc -ptx
// -arch=sm_90 -O3` (and sm_80 where nvcc spells a form differently), run in the
// emulator, and compared bit for bit with plain C++ oracles that share no code with
// the emulator or ir/Arithmetic:
// - CUDA's host half/bfloat16 functions (cuda_fp16.h / cuda_bf16.h: __float2half_rn,
//   __half2float, __hadd2, __hmin2, ...), which round through f32 for + - * (an
//   innocuous double rounding) and give the canonical NaN 0x7fff;
// - an exact fma oracle: a*b + c in GCC's __float128, rounded to the 16-bit format by
//   comparing distances to neighbouring encodings;
// - integer formulas written from the PTX ISA text (lop3 truth tables, the prmt byte
//   tables, funnel shifts) and the CUDA documentation of the intrinsics.
// Each test also checks that the PTX really contains the instructions it claims to cover.
// Skipped with a warning when nvcc is not installed.
#include <catch2/catch.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "NvccSupport.h"
#include "runtime/backends/emulator/Emulator.h"

using namespace quantc::runtime::emulator;
using namespace quantc::runtime::emulator::testing;

namespace {

std::string hex(std::uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

/// Fails (naming every missing spelling and printing the PTX) unless `ptx` contains
/// each of `spellings`: the test exercises what it says it does.
void require_instructions(const std::string& ptx, const std::vector<std::string>& spellings) {
  for (const std::string& spelling : spellings) {
    INFO("the nvcc output lacks '" << spelling << "':\n" << ptx);
    REQUIRE(ptx.find(spelling) != std::string::npos);
  }
}

LaunchConfig grid_of(std::uint32_t n, std::uint32_t block = 128) {
  LaunchConfig config;
  config.grid = {(n + block - 1) / block, 1, 1};
  config.block = {block, 1, 1};
  return config;
}

// ---- 16-bit float formats, independent of ir/Arithmetic -------------------------------

struct Format {
  const char* name;
  int mantissa_bits;  // 10 or 7
  int max_exponent;   // 15 or 127 (also the bias)
  bool is_f16;
};
constexpr Format kF16{"f16", 10, 15, true};
constexpr Format kBF16{"bf16", 7, 127, false};
constexpr std::uint16_t kCanonicalNaN = 0x7fff;

std::uint16_t infinity_bits(const Format& f) {
  return static_cast<std::uint16_t>((2 * f.max_exponent + 1) << f.mantissa_bits);
}
bool is_nan16(std::uint16_t bits, const Format& f) { return (bits & 0x7fff) > infinity_bits(f); }
bool is_inf16(std::uint16_t bits, const Format& f) { return (bits & 0x7fff) == infinity_bits(f); }
bool is_zero16(std::uint16_t bits) { return (bits & 0x7fff) == 0; }

// CUDA host conversions between bits and the CUDA types.
__half half_of(std::uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half(raw);
}
std::uint16_t bits_of(__half value) { return static_cast<__half_raw>(value).x; }
__nv_bfloat16 bfloat_of(std::uint16_t bits) {
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __nv_bfloat16(raw);
}
std::uint16_t bits_of(__nv_bfloat16 value) { return static_cast<__nv_bfloat16_raw>(value).x; }
__half2 half2_of(std::uint32_t word) {
  __half2_raw raw;
  raw.x = static_cast<std::uint16_t>(word);
  raw.y = static_cast<std::uint16_t>(word >> 16);
  return __half2(raw);
}
std::uint32_t bits_of(__half2 value) {
  __half2_raw raw = static_cast<__half2_raw>(value);
  return raw.x | (static_cast<std::uint32_t>(raw.y) << 16);
}
__nv_bfloat162 bfloat2_of(std::uint32_t word) {
  __nv_bfloat162_raw raw;
  raw.x = static_cast<std::uint16_t>(word);
  raw.y = static_cast<std::uint16_t>(word >> 16);
  return __nv_bfloat162(raw);
}
std::uint32_t bits_of(__nv_bfloat162 value) {
  __nv_bfloat162_raw raw = static_cast<__nv_bfloat162_raw>(value);
  return raw.x | (static_cast<std::uint32_t>(raw.y) << 16);
}
std::uint16_t float_to(const Format& f, float value) {
  return f.is_f16 ? bits_of(__float2half_rn(value)) : bits_of(__float2bfloat16_rn(value));
}

// ---- the exact fma oracle -------------------------------------------------------------

using Quad = __float128;

Quad power_of_two(int exponent) { return static_cast<Quad>(std::ldexp(1.0, exponent)); }
Quad quad_abs(Quad x) { return x < 0 ? -x : x; }

Quad quad_value(std::uint16_t bits, const Format& f) {
  const std::uint32_t fraction = bits & ((1u << f.mantissa_bits) - 1);
  const int field = (bits >> f.mantissa_bits) & (2 * f.max_exponent + 1);
  Quad magnitude = field == 0 ? static_cast<Quad>(fraction) * power_of_two(1 - f.max_exponent - f.mantissa_bits)
                              : static_cast<Quad>(fraction | (1u << f.mantissa_bits)) *
                                    power_of_two(field - f.max_exponent - f.mantissa_bits);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

int ordinal(std::uint16_t bits) { return (bits & 0x8000) ? -static_cast<int>(bits & 0x7fff) : static_cast<int>(bits); }
std::uint16_t from_ordinal(int ordinal) {
  return ordinal >= 0 ? static_cast<std::uint16_t>(ordinal) : static_cast<std::uint16_t>(0x8000 | -ordinal);
}

/// The nonzero exact `sum` rounded to nearest even in format f.
std::uint16_t round_exact(Quad sum, const Format& f) {
  const bool negative = sum < 0;
  const Quad threshold = (2 - power_of_two(-(f.mantissa_bits + 1))) * power_of_two(f.max_exponent);
  if (quad_abs(sum) >= threshold) return static_cast<std::uint16_t>(infinity_bits(f) | (negative ? 0x8000 : 0));
  // A candidate within one unit of the answer (three roundings, each to a finer grid),
  // then the nearest of it and its neighbours, ties to the even encoding.
  std::uint16_t best = float_to(f, static_cast<float>(static_cast<double>(sum)));
  const std::uint16_t candidate = best;
  for (int step : {-1, 1}) {
    std::uint16_t other = from_ordinal(ordinal(candidate) + step);
    if (is_nan16(other, f) || is_inf16(other, f)) continue;
    if (is_inf16(best, f)) {
      best = other;
      continue;
    }
    Quad d_best = quad_abs(sum - quad_value(best, f)), d_other = quad_abs(sum - quad_value(other, f));
    if (d_other < d_best || (d_other == d_best && (other & 1) == 0)) best = other;
  }
  if (is_zero16(best)) best = negative ? 0x8000 : 0x0000;  // an underflow keeps the sign
  return best;
}

/// a * b + c rounded once to nearest even; NaN results are the canonical NaN.
std::uint16_t fma_oracle(const Format& f, std::uint16_t a, std::uint16_t b, std::uint16_t c) {
  if (is_nan16(a, f) || is_nan16(b, f) || is_nan16(c, f)) return kCanonicalNaN;
  const bool product_negative = ((a ^ b) & 0x8000) != 0;
  if (is_inf16(a, f) || is_inf16(b, f)) {
    if (is_zero16(a) || is_zero16(b)) return kCanonicalNaN;
    if (is_inf16(c, f) && ((c & 0x8000) != 0) != product_negative) return kCanonicalNaN;
    return static_cast<std::uint16_t>(infinity_bits(f) | (product_negative ? 0x8000 : 0));
  }
  if (is_inf16(c, f)) return c;
  const Quad product = quad_value(a, f) * quad_value(b, f);  // at most 22 significant bits: exact
  const Quad addend = quad_value(c, f);
  if (product == 0 && addend == 0) return (product_negative && (c & 0x8000)) ? 0x8000 : 0x0000;
  Quad sum = product + addend;
  if (sum - product != addend || sum - addend != product) {
    // The smaller term lies wholly below the 113-bit window of the larger: it only
    // decides the direction of rounding, so a same-signed stand-in far below the
    // format's precision rounds identically.
    const bool product_larger = quad_abs(product) >= quad_abs(addend);
    const Quad larger = product_larger ? product : addend, smaller = product_larger ? addend : product;
    const Quad sticky = quad_abs(larger) * power_of_two(-60);
    sum = larger + (smaller < 0 ? -sticky : sticky);
  }
  if (sum == 0) return 0x0000;  // exact cancellation: +0 in round-to-nearest
  return round_exact(sum, f);
}

// ---- input generation -------------------------------------------------------------------

const std::vector<std::uint16_t> kF16Specials = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
                                                 0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01,
                                                 0x7fff, 0x3555, 0x5bff, 0x1400};
const std::vector<std::uint16_t> kBF16Specials = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0xbf80,
                                                  0x3f81, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81,
                                                  0x7fff, 0x3eab, 0x4b80, 0x0d80};

/// A 16-bit encoding: one of `specials` (1 in 6), one with an exponent within 2 of
/// `near`'s (1 in 3, for cancellation and ties), else uniformly random bits.
std::uint16_t random_half(std::mt19937& random, const Format& f, const std::vector<std::uint16_t>& specials,
                          std::uint16_t near) {
  switch (random() % 6) {
    case 0: return specials[random() % specials.size()];
    case 1:
    case 2: {
      const int all_ones = 2 * f.max_exponent + 1;
      int field = (near >> f.mantissa_bits) & all_ones;
      field = std::clamp(field + static_cast<int>(random() % 5) - 2, 0, all_ones - 1);
      return static_cast<std::uint16_t>((random() & 0x8000) | (static_cast<std::uint32_t>(field) << f.mantissa_bits) |
                                        (random() & ((1u << f.mantissa_bits) - 1)));
    }
    default: return static_cast<std::uint16_t>(random());
  }
}

/// Three arrays of packed pairs (a, b, c) for the half-arithmetic kernels.
struct PackedInputs {
  std::vector<std::uint32_t> a, b, c;
};
PackedInputs packed_inputs(const Format& f, unsigned n, std::uint32_t seed) {
  const auto& specials = f.is_f16 ? kF16Specials : kBF16Specials;
  std::mt19937 random(seed);
  PackedInputs in;
  for (unsigned i = 0; i < n; ++i) {
    std::uint32_t words[3] = {0, 0, 0};
    for (unsigned half = 0; half < 2; ++half) {
      std::uint16_t x = random_half(random, f, specials, static_cast<std::uint16_t>(random()));
      std::uint16_t y = random_half(random, f, specials, x);
      std::uint16_t z = random_half(random, f, specials, x);
      words[0] |= std::uint32_t{x} << (16 * half);
      words[1] |= std::uint32_t{y} << (16 * half);
      words[2] |= std::uint32_t{z} << (16 * half);
    }
    in.a.push_back(words[0]);
    in.b.push_back(words[1]);
    in.c.push_back(words[2]);
  }
  return in;
}

/// Applies a per-half function to the halves of packed words.
template <class F>
std::uint32_t per_half(std::uint32_t a, std::uint32_t b, std::uint32_t c, F&& f) {
  std::uint32_t result = 0;
  for (unsigned half = 0; half < 2; ++half) {
    auto lane = [&](std::uint32_t word) { return static_cast<std::uint16_t>(word >> (16 * half)); };
    result |= std::uint32_t{f(lane(a), lane(b), lane(c))} << (16 * half);
  }
  return result;
}

/// Compares `got` with `expected` slot by slot; reports the first few mismatches with
/// the slot's name and the inputs.
struct Comparison {
  unsigned compared = 0, mismatches = 0;
  void check(std::uint64_t got, std::uint64_t expected, const std::string& what) {
    ++compared;
    if (got == expected) return;
    if (++mismatches <= 8) FAIL_CHECK(what << ": emulator " << hex(got) << ", oracle " << hex(expected));
  }
};

}  // namespace

// ---- 128-bit vector memory ------------------------------------------------------------

TEST_CASE("nvcc sm_90 ldg_uint4: ld.global.nc.v4.u32 through __ldg and st.global.v4.u32 over a partial last CTA",
          "[emulator][nvcc][sm_90]") {
  std::string ptx = compile("vector_memory", "sm_90");
  if (ptx.empty()) return;
  require_instructions(ptx, {"ld.global.nc.v4.u32", "st.global.v4.u32"});
  const int n = 300;
  std::mt19937 random(61);
  std::vector<std::uint32_t> in(4 * n);
  for (auto& word : in) word = static_cast<std::uint32_t>(random());
  in[0] = 0xffffffffu;  // .z + 1 wraps
  in[2] = 0xffffffffu;
  const std::uint32_t sentinel = 0xdeadbeef;
  std::vector<DeviceBuffer> buffers = {buffer_of("in", in), buffer_of("out", std::vector<std::uint32_t>(4 * n + 64, sentinel))};
  launch(parse_ptx(ptx), "ldg_uint4", grid_of(n), buffers,
         {PointerArgument{0, 0}, PointerArgument{1, 0}, ScalarArgument{static_cast<std::uint64_t>(n)}});
  auto out = values_of<std::uint32_t>(buffers[1]);
  for (int i = 0; i < n; ++i) {
    const std::uint32_t* v = &in[4 * i];
    const std::uint32_t expected[4] = {v[3], v[0] ^ v[1], v[2] + 1u, v[1]};
    for (int k = 0; k < 4; ++k) {
      INFO("element " << i << " component " << k);
      REQUIRE(out[4 * i + k] == expected[k]);
    }
  }
  for (std::size_t i = 4 * n; i < out.size(); ++i) REQUIRE(out[i] == sentinel);  // the guard held
}

TEST_CASE("nvcc sm_90 shared_float4: st.shared.v4 / ld.shared.v4.f32 across bar.sync keep NaN payloads",
          "[emulator][nvcc][sm_90]") {
  std::string ptx = compile("vector_memory", "sm_90");
  if (ptx.empty()) return;
  require_instructions(ptx, {"st.shared.v4", "ld.shared.v4.f32", "st.global.v4.f32", "bar.sync"});
  const unsigned block = 128, grid = 3, n = block * grid;
  std::mt19937 random(62);
  std::uniform_real_distribution<float> distribution(-100.0f, 100.0f);
  const std::uint32_t specials[] = {0x7fc00001u, 0xffbfffffu, 0x7f800000u, 0x80000000u, 0x00000001u, 0x7f7fffffu};
  std::vector<std::uint32_t> in(4 * n);
  for (unsigned i = 0; i < in.size(); ++i)
    in[i] = (i % 7 == 0) ? specials[(i / 7) % 6] : std::bit_cast<std::uint32_t>(distribution(random));
  std::vector<DeviceBuffer> buffers = {buffer_of("in", in), buffer_of("out", std::vector<std::uint32_t>(4 * n))};
  launch(parse_ptx(ptx), "shared_float4", grid_of(n, block), buffers, {PointerArgument{0, 0}, PointerArgument{1, 0}});
  auto out = values_of<std::uint32_t>(buffers[1]);
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      const std::uint32_t* v = &in[4 * (b * block + (block - 1 - t))];
      // v.w * 2.0f is an f32 multiplication: NaN results are the canonical NaN.
      float doubled = std::bit_cast<float>(v[3]) * 2.0f;
      std::uint32_t doubled_bits = std::isnan(doubled) ? 0x7fffffffu : std::bit_cast<std::uint32_t>(doubled);
      const std::uint32_t expected[4] = {v[1], v[0], doubled_bits, v[2]};
      for (int k = 0; k < 4; ++k) {
        INFO("block " << b << " thread " << t << " component " << k);
        REQUIRE(out[4 * (b * block + t) + k] == expected[k]);
      }
    }
  }
}

// ---- lop3, prmt, funnel shifts ---------------------------------------------------------------

namespace {

std::uint32_t byte_of(std::uint32_t a, std::uint32_t b, unsigned index) {
  std::uint64_t pair = (std::uint64_t{b} << 32) | a;
  return static_cast<std::uint32_t>((pair >> (8 * (index & 7))) & 0xff);
}

/// prmt.b32 (default mode), PTX ISA "prmt": nibble i of c picks result byte i from the
/// 8 bytes {b, a}; with its bit 3 set, the picked byte's sign bit is replicated.
std::uint32_t prmt_default(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t result = 0;
  for (unsigned i = 0; i < 4; ++i) {
    unsigned nibble = (c >> (4 * i)) & 0xf;
    std::uint32_t byte = byte_of(a, b, nibble & 7);
    if (nibble & 8) byte = (byte & 0x80) ? 0xff : 0x00;
    result |= byte << (8 * i);
  }
  return result;
}

/// prmt.b32.<mode>: the PTX ISA's table, written as it is printed there: for c[1:0] = 0..3
/// the source byte of d.b3 d.b2 d.b1 d.b0.
std::uint32_t prmt_mode(const char* mode, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  struct Row {
    const char* mode;
    const char* selectors[4];
  };
  static const Row table[] = {
      {"f4e", {"3210", "4321", "5432", "6543"}}, {"b4e", {"5670", "6701", "7012", "0123"}},
      {"rc8", {"0000", "1111", "2222", "3333"}}, {"ecl", {"3210", "3211", "3222", "3333"}},
      {"ecr", {"0000", "1110", "2210", "3210"}}, {"rc16", {"1010", "3232", "1010", "3232"}},
  };
  for (const Row& row : table) {
    if (std::string_view(row.mode) != mode) continue;
    const char* digits = row.selectors[c & 3];
    std::uint32_t result = 0;
    for (unsigned i = 0; i < 4; ++i) result |= byte_of(a, b, static_cast<unsigned>(digits[3 - i] - '0')) << (8 * i);
    return result;
  }
  throw std::logic_error("unknown prmt mode");
}

/// CUDA's __funnelshift_{l,lc,r,rc}(lo, hi, shift): {hi:lo} shifted by shift & 31
/// (wrap) or min(shift, 32) (clamp); l returns the high word, r the low word.
std::uint32_t funnel_shift(std::uint32_t lo, std::uint32_t hi, std::uint32_t shift, bool left, bool clamp) {
  unsigned amount = clamp ? std::min(shift, 32u) : (shift & 31u);
  std::uint64_t pair = (std::uint64_t{hi} << 32) | lo;
  return left ? static_cast<std::uint32_t>((pair << amount) >> 32) : static_cast<std::uint32_t>(pair >> amount);
}

}  // namespace

TEST_CASE("nvcc sm_90 bit_ops: lop3 immediates in lowercase hex, uppercase hex and decimal, prmt in every mode, "
          "shf.l/r.wrap/clamp",
          "[emulator][nvcc][sm_90]") {
  std::string ptx = compile("bit_ops", "sm_90");
  if (ptx.empty()) return;
  require_instructions(ptx, {"lop3.b32", ", 0xea;", ", 0XE8;", ", 0xCA;", ", 120;", "prmt.b32.f4e", "prmt.b32.b4e",
                             "prmt.b32.rc8", "prmt.b32.ecl", "prmt.b32.ecr", "prmt.b32.rc16", "0x8a9b", "shf.l.wrap.b32",
                             "shf.l.clamp.b32", "shf.r.wrap.b32", "shf.r.clamp.b32"});
  std::vector<std::uint32_t> a = {0, 0xffffffffu, 0x80808080u, 0x01234567u, 0xdeadbeefu, 0x7f00ff80u};
  std::vector<std::uint32_t> b = {0xffffffffu, 0, 0x7f7f7f7fu, 0x89abcdefu, 0x0badf00du, 0x00ff807fu};
  std::vector<std::uint32_t> c = {0, 31, 32, 33, 63, 0x8888u};
  std::mt19937 random(63);
  while (a.size() < 1000) {
    a.push_back(static_cast<std::uint32_t>(random()));
    b.push_back(static_cast<std::uint32_t>(random()));
    c.push_back(static_cast<std::uint32_t>(random()));
  }
  const int n = static_cast<int>(a.size());
  std::vector<DeviceBuffer> buffers = {buffer_of("a", a), buffer_of("b", b), buffer_of("c", c),
                                       buffer_of("out", std::vector<std::uint32_t>(21 * n))};
  launch(parse_ptx(ptx), "bit_ops", grid_of(n), buffers,
         {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, PointerArgument{3, 0},
          ScalarArgument{static_cast<std::uint64_t>(n)}});
  auto out = values_of<std::uint32_t>(buffers[3]);
  Comparison comparison;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t x = a[i], y = b[i], z = c[i], shift = z & 63u;
    const std::uint32_t expected[21] = {
        (x & y) | z,
        x ^ y ^ z,
        (x & y) | (x & z) | (y & z),
        (x & y) | (~x & z),
        x ^ (y & z),
        prmt_default(x, y, z & 0x7777u),  // __byte_perm ignores bit 3 of each selector nibble
        prmt_default(x, y, 0x3210u),
        prmt_default(x, y, 0x7654u),
        prmt_default(x, y, 0x0123u),
        prmt_default(x, y, 0x8a9bu),
        prmt_mode("f4e", x, y, z),
        prmt_mode("b4e", x, y, z),
        prmt_mode("rc8", x, y, z),
        prmt_mode("ecl", x, y, z),
        prmt_mode("ecr", x, y, z),
        prmt_mode("rc16", x, y, z),
        funnel_shift(x, y, shift, true, false),
        funnel_shift(x, y, shift, true, true),
        funnel_shift(x, y, shift, false, false),
        funnel_shift(x, y, shift, false, true),
        prmt_default(x, y, z),
    };
    static const char* names[21] = {"lop3 0xea", "lop3 0x96", "lop3 0XE8", "lop3 0xCA", "lop3 120",
                                    "__byte_perm(x, y, z)", "__byte_perm 0x3210", "__byte_perm 0x7654",
                                    "__byte_perm 0x0123", "prmt 0x8a9b", "prmt.f4e", "prmt.b4e", "prmt.rc8", "prmt.ecl",
                                    "prmt.ecr", "prmt.rc16", "__funnelshift_l", "__funnelshift_lc", "__funnelshift_r",
                                    "__funnelshift_rc", "prmt (selector from memory)"};
    for (int slot = 0; slot < 21; ++slot)
      comparison.check(out[21 * i + slot], expected[slot],
                       std::string(names[slot]) + " of (" + hex(x) + ", " + hex(y) + ", " + hex(z) + ")");
  }
  CHECK(comparison.mismatches == 0);
  CHECK(comparison.compared == 21u * n);
  // Fixed points of the tables, by hand: {b, a} bytes 0..7 = 00 11 22 33 44 55 66 77.
  CHECK(prmt_mode("f4e", 0x33221100u, 0x77665544u, 1) == 0x44332211u);
  CHECK(prmt_mode("b4e", 0x33221100u, 0x77665544u, 0) == 0x55667700u);
  CHECK(prmt_mode("ecr", 0x33221100u, 0x77665544u, 2) == 0x22221100u);
  CHECK(prmt_default(0x33221100u, 0x77665544u, 0x8a9bu) == 0x00000000u);
  CHECK(prmt_default(0x80221100u, 0x77665544u, 0x0b03u) == 0x00ff0080u);
}

// ---- packed half arithmetic ----------------------------------------------------------------

namespace {

/// nvcc's spellings of the bf16x2 kernel per architecture.
std::vector<std::string> bfloat162_spellings(const std::string& arch) {
  if (arch == "sm_90")
    return {"add.bf16x2", "sub.bf16x2", "mul.bf16x2", "fma.rn.bf16x2", "min.bf16x2", "max.bf16x2", "neg.bf16x2",
            "abs.bf16x2"};
  // sm_80 has no bf16 add/sub/mul: a + b = fma(a, 1.0, b), a - b = fma(b, -1.0, a),
  // a * b = fma(a, b, -0.0).
  return {"fma.rn.bf16x2", "0x3f803f80", "0xbf80bf80", "0x80008000", "min.bf16x2", "max.bf16x2", "neg.bf16x2",
          "abs.bf16x2"};
}

}  // namespace

TEST_CASE("nvcc half2_arith: add/sub/mul.f16x2 match CUDA's host __hadd2/__hsub2/__hmul2, fma.rn.f16x2 the exact oracle",
          "[emulator][nvcc][sm_90][half]") {
  for (std::string arch : {"sm_90", "sm_80"}) {
    std::string ptx = compile("half_arith", arch);
    if (ptx.empty()) return;
    INFO("compiled for " << arch);
    require_instructions(ptx, {"add.f16x2", "sub.f16x2", "mul.f16x2", "fma.rn.f16x2"});
    const unsigned n = 4096;
    PackedInputs in = packed_inputs(kF16, n, 71);
    std::vector<DeviceBuffer> buffers = {buffer_of("a", in.a), buffer_of("b", in.b), buffer_of("c", in.c),
                                         buffer_of("out", std::vector<std::uint32_t>(4 * n))};
    launch(parse_ptx(ptx), "half2_arith", grid_of(n), buffers,
           {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, PointerArgument{3, 0},
            ScalarArgument{std::uint64_t{n}}});
    auto out = values_of<std::uint32_t>(buffers[3]);
    Comparison comparison;
    unsigned nan_lanes = 0;
    for (unsigned i = 0; i < n; ++i) {
      const std::uint32_t x = in.a[i], y = in.b[i], z = in.c[i];
      const std::string operands = "(" + hex(x) + ", " + hex(y) + ", " + hex(z) + ")";
      comparison.check(out[4 * i + 0], bits_of(__hadd2(half2_of(x), half2_of(y))), "add.f16x2" + operands);
      comparison.check(out[4 * i + 1], bits_of(__hsub2(half2_of(x), half2_of(y))), "sub.f16x2" + operands);
      comparison.check(out[4 * i + 2], bits_of(__hmul2(half2_of(x), half2_of(y))), "mul.f16x2" + operands);
      const std::uint32_t fma = per_half(x, y, z, [](auto p, auto q, auto r) { return fma_oracle(kF16, p, q, r); });
      comparison.check(out[4 * i + 3], fma, "fma.rn.f16x2" + operands);
      nan_lanes += (fma & 0xffff) == kCanonicalNaN;
    }
    CHECK(comparison.mismatches == 0);
    CHECK(nan_lanes > 100);  // NaN propagation was exercised
  }
}

TEST_CASE("nvcc bfloat162_arith (sm_90 and sm_80 spellings): add/sub/mul/min/max vs CUDA host functions, fma.rn.bf16x2 "
          "vs the exact oracle, neg/abs",
          "[emulator][nvcc][sm_90][half]") {
  for (std::string arch : {"sm_90", "sm_80"}) {
    std::string ptx = compile("half_arith", arch);
    if (ptx.empty()) return;
    INFO("compiled for " << arch);
    require_instructions(ptx, bfloat162_spellings(arch));
    const unsigned n = 4096;
    PackedInputs in = packed_inputs(kBF16, n, 72);
    std::vector<DeviceBuffer> buffers = {buffer_of("a", in.a), buffer_of("b", in.b), buffer_of("c", in.c),
                                         buffer_of("out", std::vector<std::uint32_t>(8 * n))};
    launch(parse_ptx(ptx), "bfloat162_arith", grid_of(n), buffers,
           {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, PointerArgument{3, 0},
            ScalarArgument{std::uint64_t{n}}});
    auto out = values_of<std::uint32_t>(buffers[3]);
    Comparison comparison;
    for (unsigned i = 0; i < n; ++i) {
      const std::uint32_t x = in.a[i], y = in.b[i], z = in.c[i];
      const std::string operands = "(" + hex(x) + ", " + hex(y) + ", " + hex(z) + ")";
      const __nv_bfloat162 bx = bfloat2_of(x), by = bfloat2_of(y);
      comparison.check(out[8 * i + 0], bits_of(__hadd2(bx, by)), "add.bf16x2" + operands);
      comparison.check(out[8 * i + 1], bits_of(__hsub2(bx, by)), "sub.bf16x2" + operands);
      comparison.check(out[8 * i + 2], bits_of(__hmul2(bx, by)), "mul.bf16x2" + operands);
      comparison.check(out[8 * i + 3], per_half(x, y, z, [](auto p, auto q, auto r) { return fma_oracle(kBF16, p, q, r); }),
                       "fma.rn.bf16x2" + operands);
      comparison.check(out[8 * i + 4], bits_of(__hmin2(bx, by)), "min.bf16x2" + operands);
      comparison.check(out[8 * i + 5], bits_of(__hmax2(bx, by)), "max.bf16x2" + operands);
      // neg/abs: bit-exact on numbers (CUDA's host __hneg2/__habs2). The PTX ISA leaves
      // the NaN a NaN operand gives unspecified ("NaN inputs yield an unspecified NaN"),
      // so a NaN lane only has to stay NaN.
      const std::uint32_t neg = bits_of(__hneg2(bx)), abs = bits_of(__habs2(by));
      const std::uint32_t got_neg = out[8 * i + 6], got_abs = out[8 * i + 7];
      for (unsigned half = 0; half < 2; ++half) {
        auto lane = [&](std::uint32_t word) { return static_cast<std::uint16_t>(word >> (16 * half)); };
        if (is_nan16(lane(x), kBF16)) comparison.check(is_nan16(lane(got_neg), kBF16), 1, "neg.bf16x2 of NaN" + operands);
        else comparison.check(lane(got_neg), lane(neg), "neg.bf16x2" + operands);
        if (is_nan16(lane(y), kBF16)) comparison.check(is_nan16(lane(got_abs), kBF16), 1, "abs.bf16x2 of NaN" + operands);
        else comparison.check(lane(got_abs), lane(abs), "abs.bf16x2" + operands);
      }
    }
    CHECK(comparison.mismatches == 0);
  }
}

TEST_CASE("exact fma oracle: hand-checked f16 and bf16 cases", "[emulator][half]") {
  // The oracle the kernel tests trust, against values derived by hand.
  CHECK(fma_oracle(kF16, 0x3c00, 0x4000, 0x3c00) == 0x4200);             // 1 * 2 + 1 = 3
  CHECK(fma_oracle(kF16, 0x3c01, 0x3e00, 0x0000) == 0x3e02);             // 1.5 + 1.5 ulp: tie to even
  CHECK(fma_oracle(kF16, 0x3c01, 0x3e00, 0x8001) == 0x3e01);             // just below the tie
  CHECK(fma_oracle(kF16, 0x7bff, 0x3c00, 0x5000) == 0x7c00);             // 65504 + 32: overflow tie
  CHECK(fma_oracle(kF16, 0x0001, 0x3800, 0x8000) == 0x0000);             // 2^-25 + -0: tie to +0
  CHECK(fma_oracle(kF16, 0x8001, 0x3800, 0x0000) == 0x8000);             // -2^-25: tie to -0
  CHECK(fma_oracle(kF16, 0x3c00, 0xbc00, 0x3c00) == 0x0000);             // 1 - 1 = +0
  CHECK(fma_oracle(kF16, 0x8000, 0x3c00, 0x8000) == 0x8000);             // -0 + -0 = -0
  CHECK(fma_oracle(kF16, 0x7c00, 0x0000, 0x3c00) == kCanonicalNaN);      // inf * 0
  CHECK(fma_oracle(kF16, 0x7c00, 0x3c00, 0xfc00) == kCanonicalNaN);      // inf - inf
  CHECK(fma_oracle(kBF16, 0x3f81, 0x3fc0, 0x8d80) == 0x3fc1);            // midpoint - 2^-100
  CHECK(fma_oracle(kBF16, 0x3f83, 0x3fc0, 0x0d80) == 0x3fc5);            // midpoint + 2^-100
  CHECK(fma_oracle(kBF16, 0x3f81, 0x3fc0, 0x0001) == 0x3fc2);            // + 2^-133: beyond __float128
  CHECK(fma_oracle(kBF16, 0x3f83, 0x3fc0, 0x0001) == 0x3fc5);
  CHECK(fma_oracle(kBF16, 0x3f83, 0x3fc0, 0x8001) == 0x3fc4);
  CHECK(fma_oracle(kBF16, 0x0001, 0x0001, 0x3f80) == 0x3f80);            // 2^-266 vanishes
  CHECK(fma_oracle(kBF16, 0x7f7f, 0x4000, 0xff7f) == 0x7f7f);            // 2 max - max = max, exactly
}

// ---- conversions and packing ----------------------------------------------------------------

TEST_CASE("nvcc half_conversions: cvt.rn.f16x2/bf16x2.f32, cvt.rn.f16/bf16.f32, cvt.f32.f16, bf16 -> f32 and "
          "mov.b32 {h, h} packing",
          "[emulator][nvcc][sm_90][half]") {
  for (std::string arch : {"sm_90", "sm_80"}) {
    std::string ptx = compile("half_conversions", arch);
    if (ptx.empty()) return;
    INFO("compiled for " << arch);
    require_instructions(ptx, {"cvt.rn.f16x2.f32", "cvt.rn.bf16x2.f32", "cvt.rn.f16.f32", "cvt.rn.bf16.f32",
                               "cvt.f32.f16", "mov.b32 {low,high}"});
    // bf16 -> f32 is cvt.f32.bf16 from sm_90 and a 16-bit shift, mov.b32 %f, {0, %rs}, before.
    require_instructions(ptx, {arch == "sm_90" ? "cvt.f32.bf16" : "mov.b32 %f"});
    std::vector<float> f = {1.0f, -2.0f, 65504.0f, 65520.0f, 65519.99f, -1e9f, 0x1p-25f, 0x1.8p-24f,
                            1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 0x1.01p0f, 0x1.03p0f, -0.0f, 0.0f,
                            std::bit_cast<float>(0x7fc00001u), std::bit_cast<float>(0xff800001u),
                            INFINITY, -INFINITY, 0x1p-133f, 3.4e38f};
    std::vector<std::uint32_t> h = {0x3c00bc00u, 0x7e01fe00u, 0x7c01ffc1u, 0x00018001u, 0x7bfffbffu, 0x7f80ff80u,
                                    0x7fff0001u, 0x3f813f80u, 0x80000000u, 0xfc007c00u};
    std::mt19937 random(73);
    std::uniform_real_distribution<float> distribution(-70000.0f, 70000.0f);
    while (f.size() < 2 * 2048) {
      float v = distribution(random);
      if (random() % 3 == 0) v = std::bit_cast<float>(static_cast<std::uint32_t>(random()));  // every exponent, NaNs
      f.push_back(v);
    }
    while (h.size() < 2048) h.push_back(static_cast<std::uint32_t>(random()));
    const unsigned n = 2048;
    std::vector<DeviceBuffer> buffers = {buffer_of("f", f), buffer_of("h", h),
                                         buffer_of("out", std::vector<std::uint32_t>(6 * n)),
                                         buffer_of("wide", std::vector<std::uint32_t>(6 * n))};
    launch(parse_ptx(ptx), "half_conversions", grid_of(n), buffers,
           {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, PointerArgument{3, 0},
            ScalarArgument{std::uint64_t{n}}});
    auto out = values_of<std::uint32_t>(buffers[2]);
    auto wide = values_of<std::uint32_t>(buffers[3]);
    Comparison comparison;
    auto f32 = [](float value) { return std::bit_cast<std::uint32_t>(value); };
    for (unsigned i = 0; i < n; ++i) {
      const float x = f[2 * i], y = f[2 * i + 1];
      const std::uint32_t bits = h[i];
      const std::string inputs = " of (" + hex(f32(x)) + ", " + hex(f32(y)) + ") / " + hex(bits);
      comparison.check(out[6 * i + 0], bits_of(__floats2half2_rn(x, y)), "cvt.rn.f16x2.f32" + inputs);
      comparison.check(out[6 * i + 1], bits_of(__floats2bfloat162_rn(x, y)), "cvt.rn.bf16x2.f32" + inputs);
      comparison.check(out[6 * i + 2],
                       bits_of(__float2half_rn(x)) | (std::uint32_t{bits_of(__float2bfloat16_rn(y))} << 16),
                       "cvt.rn.f16.f32 / cvt.rn.bf16.f32" + inputs);
      comparison.check(out[6 * i + 3], (bits >> 16) | (bits << 16), "mov.b32 unpack and repack" + inputs);
      comparison.check(out[6 * i + 4], bits_of(__floats2bfloat162_rn(x, y)) ^ bits, "xor of the bf16x2 pack" + inputs);
      const float2 unpacked = __half22float2(half2_of(bits));  // CUDA's host conversion: NaN -> 0x7fffffff
      comparison.check(wide[6 * i + 0], f32(unpacked.x), "cvt.f32.f16 (low)" + inputs);
      comparison.check(wide[6 * i + 1], f32(unpacked.y), "cvt.f32.f16 (high)" + inputs);
      // bf16 -> f32 appends 16 zero bits, NaN payload and sign included: on sm_80 nvcc
      // writes that shift itself, on sm_90 ptxas compiles cvt.f32.bf16 to the same shift
      // (SHF.L.U32 by 16), as CUDA's host __bfloat162float does.
      comparison.check(wide[6 * i + 2], f32(__bfloat162float(bfloat_of(static_cast<std::uint16_t>(bits)))),
                       "bf16 -> f32 (low)" + inputs);
      comparison.check(wide[6 * i + 2], (bits & 0xffffu) << 16, "bf16 -> f32 (low) as a shift" + inputs);
      comparison.check(wide[6 * i + 3], (bits & 0xffff0000u), "bf16 -> f32 (high)" + inputs);
      comparison.check(wide[6 * i + 4], f32(__half2float(half_of(static_cast<std::uint16_t>(bits >> 16)))),
                       "__half2float" + inputs);
      const float sum = unpacked.x + unpacked.y;  // an f32 add: NaN results are the canonical NaN
      comparison.check(wide[6 * i + 5], std::isnan(sum) ? 0x7fffffffu : f32(sum), "__low2float + __high2float" + inputs);
    }
    CHECK(comparison.mismatches == 0);
  }
}

// ---- atomics -----------------------------------------------------------------------------------

TEST_CASE("nvcc sm_90 atomics: atom.add.u32/f32, red.add.u32/f32, atom/red.max.s32 and atom.cas.b32 claim and "
          "CAS-loop maximum",
          "[emulator][nvcc][sm_90]") {
  std::string ptx = compile("atomics", "sm_90");
  if (ptx.empty()) return;
  require_instructions(ptx, {"atom.global.add.u32", "red.global.add.u32", "atom.global.add.f32", "red.global.add.f32",
                             "atom.global.max.s32", "red.global.max.s32", "atom.global.cas.b32", "0f3F000000"});
  const unsigned n = 500;  // 4 CTAs, the last one partial
  std::mt19937 random(81);
  std::vector<std::uint32_t> u(n);
  std::vector<float> f(n);
  std::vector<std::int32_t> s(n);
  for (unsigned i = 0; i < n; ++i) {
    u[i] = 1 + random() % 1000;
    f[i] = static_cast<float>(1 + random() % 64) / 16.0f;  // sums of these are exact in any order
    s[i] = static_cast<std::int32_t>(random() % 2000001) - 1000000;
  }
  const std::uint32_t counter_start = 7, wrapping_start = 0xffffff00u;
  std::vector<std::uint32_t> counters = {counter_start, counter_start, wrapping_start};
  std::vector<float> sums = {0.25f, 0.0f, -1.0f, 0.0f};
  std::vector<std::int32_t> maxima = {-5, std::numeric_limits<std::int32_t>::min()};
  std::vector<std::uint32_t> claims(9, 0xffffffffu);
  claims[8] = 0xff800000u;  // -inf: the CAS loop's running maximum
  std::vector<DeviceBuffer> buffers = {
      buffer_of("u", u),           buffer_of("f", f),           buffer_of("s", s),
      buffer_of("counters", counters), buffer_of("sums", sums), buffer_of("maxima", maxima),
      buffer_of("claims", claims), buffer_of("old_u", std::vector<std::uint32_t>(n)),
      buffer_of("old_f", std::vector<float>(n)), buffer_of("old_s", std::vector<std::int32_t>(n)),
      buffer_of("claim_old", std::vector<std::uint32_t>(n))};
  std::vector<KernelArgument> arguments;
  for (std::size_t k = 0; k < buffers.size(); ++k) arguments.push_back(PointerArgument{k, 0});
  arguments.push_back(ScalarArgument{std::uint64_t{n}});
  launch(parse_ptx(ptx), "atomics", grid_of(n), buffers, arguments);

  std::uint32_t u_total = 0;
  float f_total = 0;
  for (unsigned i = 0; i < n; ++i) {
    u_total += u[i];
    f_total += f[i];
  }
  const std::int32_t s_max = *std::max_element(s.begin(), s.end());
  auto counters_after = values_of<std::uint32_t>(buffers[3]);
  auto sums_after = values_of<float>(buffers[4]);
  auto maxima_after = values_of<std::int32_t>(buffers[5]);
  auto claims_after = values_of<std::uint32_t>(buffers[6]);
  CHECK(counters_after[0] == counter_start + u_total);
  CHECK(counters_after[1] == counter_start + u_total);
  CHECK(counters_after[2] == wrapping_start + u_total);  // wraps modulo 2^32
  CHECK(sums_after[0] == 0.25f + f_total);
  CHECK(sums_after[1] == f_total);
  CHECK(sums_after[2] == -1.0f + f_total);
  CHECK(sums_after[3] == 0.5f * n);
  CHECK(maxima_after[0] == std::max(-5, s_max));
  CHECK(maxima_after[1] == s_max);

  // The values atom returned form one serialization: sorted, each is the previous plus
  // the previous thread's operand, starting from the initial value.
  auto check_serialization = [&](auto old, const auto& operand, auto start, const char* what) {
    std::vector<unsigned> order(n);
    for (unsigned i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](unsigned p, unsigned q) { return old[p] < old[q]; });
    INFO(what);
    REQUIRE(old[order[0]] == start);
    for (unsigned k = 1; k < n; ++k) REQUIRE(old[order[k]] == old[order[k - 1]] + operand[order[k - 1]]);
  };
  check_serialization(values_of<std::uint32_t>(buffers[7]), u, counter_start, "atom.global.add.u32 results");
  check_serialization(values_of<float>(buffers[8]), f, 0.25f, "atom.global.add.f32 results");
  // atomicMax results: each is the initial value or another thread's operand, never
  // above the final maximum, and the first thread saw the initial value.
  auto old_s = values_of<std::int32_t>(buffers[9]);
  CHECK(std::count(old_s.begin(), old_s.end(), -5) >= 1);
  for (unsigned i = 0; i < n; ++i) {
    INFO("thread " << i << " atomicMax returned " << old_s[i]);
    REQUIRE(old_s[i] <= maxima_after[0]);
    REQUIRE((old_s[i] == -5 || std::find(s.begin(), s.end(), old_s[i]) != s.end()));
  }
  // atomicCAS claims: one winner per slot, which every loser saw.
  auto claim_old = values_of<std::uint32_t>(buffers[10]);
  for (unsigned slot = 0; slot < 8; ++slot) {
    const std::uint32_t winner = claims_after[slot];
    INFO("slot " << slot << " claimed by " << winner);
    REQUIRE(winner < n);
    REQUIRE(winner % 8 == slot);
    for (unsigned i = slot; i < n; i += 8) REQUIRE(claim_old[i] == (i == winner ? 0xffffffffu : winner));
  }
  CHECK(std::bit_cast<float>(claims_after[8]) == *std::max_element(f.begin(), f.end()));
}

// ---- Marlin-style int4 dequantization ----------------------------------------------------------

TEST_CASE("nvcc marlin_dequant: lop3 0xea magic-number splice, sub.f16x2 and fma.rn.f16x2 give code - 8 exactly, "
          "scaled by mul/fma.f16x2",
          "[emulator][nvcc][sm_90][half]") {
  for (std::string arch : {"sm_90", "sm_80"}) {
    std::string ptx = compile("marlin_dequant", arch);
    if (ptx.empty()) return;
    INFO("compiled for " << arch);
    require_instructions(ptx, {"lop3.b32", ", 0xea;", "sub.f16x2", "fma.rn.f16x2", "mul.f16x2"});
    const unsigned n = 2048;
    std::mt19937 random(91);
    std::vector<std::uint32_t> q = {0x00000000u, 0xffffffffu, 0x88888888u, 0x01234567u, 0x89abcdefu, 0xfedcba98u};
    std::vector<std::uint32_t> scales = {0x3c003c00u, 0x7e007c00u, 0x00018001u, 0x7bff0000u, 0xfc008000u, 0x03ff2c00u};
    while (q.size() < n) q.push_back(static_cast<std::uint32_t>(random()));
    while (scales.size() < n) {
      // Mostly typical group scales (2^-12 .. 2^-2), sometimes any encoding.
      auto typical = [&] { return static_cast<std::uint32_t>(0x0c00 + random() % 0x2000); };
      std::uint32_t low = random() % 8 ? typical() : (random() & 0xffff);
      std::uint32_t high = random() % 8 ? typical() : (random() & 0xffff);
      scales.push_back(low | (high << 16));
    }
    std::vector<DeviceBuffer> buffers = {buffer_of("q", q), buffer_of("scales", scales),
                                         buffer_of("out", std::vector<std::uint32_t>(12 * n))};
    launch(parse_ptx(ptx), "marlin_dequant", grid_of(n), buffers,
           {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, ScalarArgument{std::uint64_t{n}}});
    auto out = values_of<std::uint32_t>(buffers[2]);
    Comparison comparison;
    for (unsigned i = 0; i < n; ++i) {
      const std::uint32_t codes = q[i];
      const __half2 scale = half2_of(scales[i]);
      // Pair k holds nibbles {k', k' + 4} of the word, k' = {0, 1, 2, 3}[k]: Marlin's
      // interleaved order (low nibbles of each 16-bit half first).
      for (unsigned k = 0; k < 4; ++k) {
        auto nibble = [&](unsigned index) { return static_cast<int>((codes >> (4 * index)) & 0xf); };
        const float low = static_cast<float>(nibble(k) - 8), high = static_cast<float>(nibble(k + 4) - 8);
        const __half2 dequantized = __floats2half2_rn(low, high);  // exact: small integers
        const std::string what = " pair " + std::to_string(k) + " of codes " + hex(codes) + ", scales " + hex(scales[i]);
        comparison.check(out[12 * i + k], bits_of(dequantized), "dequantized" + what);
        const std::uint32_t scaled = bits_of(__hmul2(dequantized, scale));
        comparison.check(out[12 * i + 4 + k], scaled, "mul.f16x2 by the scale" + what);
        // fma(x, scale, -0) rounds x * scale once, like the multiplication.
        comparison.check(out[12 * i + 8 + k], scaled, "fma.rn.f16x2 by the scale" + what);
      }
    }
    CHECK(comparison.mismatches == 0);
    CHECK(comparison.compared == 12u * n);
  }
}

// ---- Tensor cores: mma.sync m16n8k16 ------------------------------------------------------------

TEST_CASE("nvcc mma_tile: mma.sync.aligned.m16n8k16 fragments loaded as the PTX ISA places them give the "
          "matrix product",
          "[emulator][nvcc][mma]") {
  for (std::string arch : {"sm_80", "sm_90"}) {
    std::string ptx = compile("mma_tile", arch);
    if (ptx.empty()) return;
    require_instructions(ptx, {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                               "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                               "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                               "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "cp.async.cg.shared.global",
                               "cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group 1"});
    // mma_f16 / mma_bf16 load their fragments from global memory; mma_ldmatrix_f16 stages
    // the tile in shared memory and loads them with ldmatrix (f16 only: the layout is the
    // same); mma_async_f16 stages it with two cp.async groups.
    for (int kernel = 0; kernel < 4; ++kernel) {
      const bool bf16 = kernel == 1;
      const char* entries[] = {"mma_f16", "mma_bf16", "mma_ldmatrix_f16", "mma_async_f16"};
      const char* entry = entries[kernel];
      for (bool integers : {true, false}) {
        INFO(arch << " " << entry << (integers ? " small integers" : " reals"));
        std::mt19937 random(bf16 * 2 + integers + 17);
        std::uniform_int_distribution<int> integer(-8, 8);
        std::uniform_real_distribution<float> real(-2.0f, 2.0f);
        // Inputs through CUDA's own host conversions (cuda_fp16.h / cuda_bf16.h), kept as
        // the values the tensor cores see.
        auto input = [&](float& value) {
          const float v = integers ? float(integer(random)) : real(random);
          std::uint16_t bits;
          if (bf16) {
            const __nv_bfloat16 h = __float2bfloat16_rn(v);
            std::memcpy(&bits, &h, 2);
            value = __bfloat162float(h);
          } else {
            const __half h = __float2half_rn(v);
            std::memcpy(&bits, &h, 2);
            value = __half2float(h);
          }
          return bits;
        };
        std::vector<float> a_values(256), b_values(128), c(128);
        std::vector<std::uint16_t> a(256), b(128);
        for (unsigned i = 0; i < 256; ++i) a[i] = input(a_values[i]);
        for (unsigned i = 0; i < 128; ++i) b[i] = input(b_values[i]);
        for (float& v : c) v = integers ? float(integer(random)) : real(random);
        std::vector<DeviceBuffer> buffers = {buffer_of("a", a), buffer_of("b", b), buffer_of("c", c),
                                             buffer_of("d", std::vector<float>(128, -1.0f)),
                                             buffer_of("staged", std::vector<std::uint32_t>(32, 0))};
        LaunchConfig config;
        config.grid = {1, 1, 1};
        config.block = {32, 1, 1};
        launch(parse_ptx(ptx), entry, config, buffers,
               kernel == 3 ? std::vector<KernelArgument>{PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0},
                                                         PointerArgument{3, 0}, PointerArgument{4, 0}}
                           : std::vector<KernelArgument>{PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0},
                                                         PointerArgument{3, 0}});
        if (kernel == 3) {  // after cp.async.wait_group 1 the first group (A's rows) had landed
          auto staged = values_of<std::uint32_t>(buffers[4]);
          for (unsigned lane = 0; lane < 32; ++lane) REQUIRE(staged[lane] == (a[lane * 8] | (std::uint32_t{a[lane * 8 + 7]} << 16)));
        }
        auto d = values_of<float>(buffers[3]);
        for (unsigned row = 0; row < 16; ++row) {
          for (unsigned column = 0; column < 8; ++column) {
            double exact = c[row * 8 + column], magnitude = std::fabs(exact);
            for (unsigned k = 0; k < 16; ++k) {
              const double product = double(a_values[row * 16 + k]) * double(b_values[k * 8 + column]);
              exact += product;
              magnitude += std::fabs(product);
            }
            INFO("D[" << row << "][" << column << "] = " << d[row * 8 + column] << ", f64 " << exact);
            if (integers) REQUIRE(d[row * 8 + column] == float(exact));
            else REQUIRE(std::fabs(d[row * 8 + column] - exact) <= 17 * std::ldexp(1.0, -24) * magnitude);
          }
        }
      }
    }
  }
}
