// ir/Arithmetic (the one definition of scalar arithmetic) against oracles that share
// no code with it:
// - f16/bf16 add/sub/mul/div: the operands widened to f32 by CUDA's host
//   __half2float/__bfloat162float, the operation done in f32, the result rounded back by
//   CUDA's host __float2half_rn/__float2bfloat16_rn. Double rounding through f32 is
//   innocuous for + - * / because 24 >= 2p + 2 for p = 11 and p = 8 (Figueroa, "When is
//   double rounding innocuous?", 1995).
// - fma: the exact a*b + c in GCC's __float128 (113-bit significand) whenever it holds the
//   exact sum, and the result checked to be the representable value nearest to it, ties
//   to even, by comparing distances to the neighbouring encodings.
// - min/max: CUDA's host __hmin/__hmax, which implement PTX's rules (one NaN ignored,
//   two NaNs give the canonical NaN, -0 < +0).
// - conversions, integer and bit-level rules: values derived by hand from IEEE 754 and
//   the PTX ISA.
// Built with -ffp-contract=off (tests/ir/CMakeLists.txt) so the f32 oracle rounds after
// every operation.
#include <catch2/catch.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Arithmetic.h"

namespace arith = quantc::ir::arith;
using arith::FloatFormat;
using quantc::ir::BinaryOp;
using quantc::ir::ScalarType;
using quantc::ir::UnaryOp;

namespace {

// ---- the CUDA host oracle ------------------------------------------------------------

float f16_to_float(std::uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}
std::uint16_t float_to_f16(float value) { return static_cast<__half_raw>(__float2half_rn(value)).x; }
float bf16_to_float(std::uint16_t bits) {
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}
std::uint16_t float_to_bf16(float value) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(value)).x; }

struct HalfFormat {
  const char* name;
  FloatFormat format;
  ScalarType type;
  float (*to_float)(std::uint16_t);
  std::uint16_t (*from_float)(float);
  std::vector<std::uint16_t> specials;  // every special class of the format
};

const HalfFormat kF16{
    "f16",
    FloatFormat::binary16(),
    ScalarType::F16,
    f16_to_float,
    float_to_f16,
    {0x0000, 0x8000,                  // +-0
     0x0001, 0x8001, 0x0200, 0x03ff,  // subnormals (smallest, middle, largest)
     0x83ff, 0x0400, 0x8400,          // largest subnormal, smallest normal
     0x3c00, 0xbc00, 0x3c01, 0x3800, 0x1400, 0x5bff,
     0x7bff, 0xfbff,                  // +-max finite
     0x7c00, 0xfc00,                  // +-inf
     0x7e00, 0xfe00, 0x7c01, 0x7fff, 0xffff}};  // quiet, signalling, canonical NaNs

const HalfFormat kBF16{"bf16",
                       FloatFormat::bfloat16(),
                       ScalarType::BF16,
                       bf16_to_float,
                       float_to_bf16,
                       {0x0000, 0x8000, 0x0001, 0x8001, 0x0040, 0x007f, 0x807f, 0x0080, 0x8080, 0x3f80, 0xbf80, 0x3f81,
                        0x3f00, 0x4b80, 0x3380, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0x7fff, 0xffff}};

std::string hex(std::uint64_t bits) {
  std::ostringstream out;
  out << "0x" << std::hex << bits;
  return out.str();
}

int exponent_field(std::uint16_t bits, FloatFormat format) {
  return (bits >> format.mantissa_bits) & (2 * format.max_exponent + 1);
}

/// A random encoding whose exponent is within 3 of `near`'s (so sums cancel and round
/// at every bit position), with random sign and fraction; never inf or NaN.
std::uint16_t random_near(std::mt19937& random, std::uint16_t near, FloatFormat format) {
  const int all_ones = 2 * format.max_exponent + 1;
  int exponent = std::clamp(exponent_field(near, format) + static_cast<int>(random() % 7) - 3, 0, all_ones - 1);
  std::uint32_t fraction = random() & ((1u << format.mantissa_bits) - 1);
  std::uint32_t sign = (random() & 1) << 15;
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent) << format.mantissa_bits) | fraction);
}

/// Operand pairs: every pair of special encodings, then `count` random pairs (half
/// uniformly random encodings, half with nearby exponents).
std::vector<std::pair<std::uint16_t, std::uint16_t>> operand_pairs(const HalfFormat& half, unsigned count,
                                                                   std::uint32_t seed) {
  std::vector<std::pair<std::uint16_t, std::uint16_t>> pairs;
  for (std::uint16_t a : half.specials)
    for (std::uint16_t b : half.specials) pairs.emplace_back(a, b);
  std::mt19937 random(seed);
  for (unsigned i = 0; i < count; ++i) {
    auto a = static_cast<std::uint16_t>(random());
    auto b = (i & 1) ? random_near(random, a, half.format) : static_cast<std::uint16_t>(random());
    if (i % 64 == 0) b = half.specials[random() % half.specials.size()];
    pairs.emplace_back(a, b);
  }
  return pairs;
}

std::uint16_t float_oracle(const HalfFormat& half, BinaryOp op, std::uint16_t a, std::uint16_t b) {
  const float x = half.to_float(a), y = half.to_float(b);
  float r = 0;
  switch (op) {
    case BinaryOp::Add: r = x + y; break;
    case BinaryOp::Sub: r = x - y; break;
    case BinaryOp::Mul: r = x * y; break;
    case BinaryOp::Div: r = x / y; break;
    default: FAIL("no f32 oracle for this operator");
  }
  return half.from_float(r);
}

// ---- the exact oracle for fma ---------------------------------------------------------

using Quad = __float128;

Quad power_of_two(int exponent) { return static_cast<Quad>(std::ldexp(1.0, exponent)); }  // exact for |e| < 1000
Quad quad_abs(Quad x) { return x < 0 ? -x : x; }

/// The exact value of a finite encoding, from its fields (independent of arith::decode).
Quad quad_value(std::uint16_t bits, FloatFormat format) {
  const int m = format.mantissa_bits;
  const std::uint32_t fraction = bits & ((1u << m) - 1);
  const int field = exponent_field(bits, format);
  Quad magnitude = field == 0 ? static_cast<Quad>(fraction) * power_of_two(format.min_exponent - m)
                              : static_cast<Quad>(fraction | (1u << m)) * power_of_two(field - format.max_exponent - m);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

bool is_nan16(std::uint16_t bits, FloatFormat format) { return arith::is_nan_encoding(bits, format); }
bool is_inf16(std::uint16_t bits, FloatFormat format) { return (bits & 0x7fff) == format.infinity(); }
bool is_zero16(std::uint16_t bits) { return (bits & 0x7fff) == 0; }

/// Encodings ordered on the real line: -max .. -0 == +0 .. +max.
int ordinal(std::uint16_t bits) { return (bits & 0x8000) ? -static_cast<int>(bits & 0x7fff) : static_cast<int>(bits); }
std::uint16_t from_ordinal(int ordinal) {
  return ordinal >= 0 ? static_cast<std::uint16_t>(ordinal) : static_cast<std::uint16_t>(0x8000 | -ordinal);
}

enum class FmaCheck { Correct, Wrong, NotExact };

/// Checks that `result` is fma(a, b, c) correctly rounded to nearest even; NotExact when
/// the exact sum does not fit __float128 (the case is then not judged). `why` explains a
/// Wrong verdict.
FmaCheck check_fma(FloatFormat format, std::uint16_t a, std::uint16_t b, std::uint16_t c, std::uint16_t result,
                   std::string& why) {
  const auto nan = static_cast<std::uint16_t>(format.canonical_nan());
  const auto inf = static_cast<std::uint16_t>(format.infinity());
  auto expect = [&](std::uint16_t expected, const char* rule) {
    if (result == expected) return FmaCheck::Correct;
    why = std::string(rule) + ": expected " + hex(expected);
    return FmaCheck::Wrong;
  };
  if (is_nan16(a, format) || is_nan16(b, format) || is_nan16(c, format)) return expect(nan, "NaN operand");
  const bool product_negative = ((a ^ b) & 0x8000) != 0;
  if (is_inf16(a, format) || is_inf16(b, format)) {
    if (is_zero16(a) || is_zero16(b)) return expect(nan, "inf * 0");
    if (is_inf16(c, format) && ((c & 0x8000) != 0) != product_negative) return expect(nan, "inf - inf");
    return expect(static_cast<std::uint16_t>(inf | (product_negative ? 0x8000 : 0)), "infinite product");
  }
  if (is_inf16(c, format)) return expect(c, "infinite addend");

  const Quad product = quad_value(a, format) * quad_value(b, format);  // <= 22 significant bits: exact
  const Quad addend = quad_value(c, format);
  const Quad sum = product + addend;
  if (sum - product != addend || sum - addend != product) return FmaCheck::NotExact;

  if (sum == 0) {
    // IEEE 754 6.3: an exact zero sum is +0 in round-to-nearest unless both terms are -0.
    bool negative = product == 0 && addend == 0 && product_negative && (c & 0x8000);
    return expect(negative ? 0x8000 : 0x0000, "exact zero sum");
  }
  const bool negative = sum < 0;
  // Values at or above max + ulp(max)/2 round to infinity (max's significand is odd).
  const Quad threshold =
      (2 - power_of_two(-(format.mantissa_bits + 1))) * power_of_two(format.max_exponent);
  if (quad_abs(sum) >= threshold) return expect(static_cast<std::uint16_t>(inf | (negative ? 0x8000 : 0)), "overflow");
  if (is_nan16(result, format) || is_inf16(result, format)) {
    why = "the exact sum is finite and below the overflow threshold";
    return FmaCheck::Wrong;
  }
  if (is_zero16(result) && ((result & 0x8000) != 0) != negative) {
    why = "a zero result must carry the sign of the nonzero exact sum";
    return FmaCheck::Wrong;
  }
  const Quad distance = quad_abs(sum - quad_value(result, format));
  for (int step : {-1, 1}) {
    std::uint16_t neighbour = from_ordinal(ordinal(result) + step);
    if (is_nan16(neighbour, format) || is_inf16(neighbour, format)) continue;
    const Quad other = quad_abs(sum - quad_value(neighbour, format));
    if (other < distance) {
      why = "neighbour " + hex(neighbour) + " is nearer to the exact sum";
      return FmaCheck::Wrong;
    }
    if (other == distance && (result & 1)) {
      why = "tie with " + hex(neighbour) + " not broken to the even encoding";
      return FmaCheck::Wrong;
    }
  }
  return FmaCheck::Correct;
}

std::uint64_t f32_bits(float value) { return std::bit_cast<std::uint32_t>(value); }
std::uint64_t f64_bits(double value) { return std::bit_cast<std::uint64_t>(value); }
std::uint64_t i64_bits(std::int64_t value) { return static_cast<std::uint64_t>(value); }

}  // namespace

// ---- f16 / bf16 add, sub, mul, div -----------------------------------------------------

TEST_CASE("f16 and bf16 add/sub/mul/div are correctly rounded: CUDA host f32 oracle on 150k pairs per op",
          "[ir][arith][half]") {
  for (const HalfFormat* half : {&kF16, &kBF16}) {
    const auto pairs = operand_pairs(*half, 150000, half == &kF16 ? 11 : 12);
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div}) {
      unsigned mismatches = 0, nan_results = 0;
      for (auto [a, b] : pairs) {
        const std::uint16_t got = arith::half_binary(half->format, op, a, b);
        const std::uint16_t expected = float_oracle(*half, op, a, b);
        if (is_nan16(got, half->format)) ++nan_results;
        if (got != expected && ++mismatches <= 5) {
          FAIL_CHECK(half->name << " " << to_string(op) << "(" << hex(a) << ", " << hex(b) << ") = " << hex(got)
                                << ", CUDA host oracle gives " << hex(expected));
        }
      }
      INFO(half->name << " " << to_string(op));
      CHECK(mismatches == 0);
      CHECK(nan_results > 100);  // the NaN rules were exercised
    }
  }
}

TEST_CASE("f16 and bf16 arithmetic NaN results are exactly the canonical NaN", "[ir][arith][half]") {
  // Quiet, signalling and negative NaN inputs, and invalid operations on non-NaN inputs.
  CHECK(arith::half_binary(kF16.format, BinaryOp::Add, 0xfe01, 0x3c00) == 0x7fff);
  CHECK(arith::half_binary(kF16.format, BinaryOp::Mul, 0x3c00, 0x7c01) == 0x7fff);
  CHECK(arith::half_binary(kF16.format, BinaryOp::Sub, 0x7c00, 0x7c00) == 0x7fff);  // inf - inf
  CHECK(arith::half_binary(kF16.format, BinaryOp::Mul, 0x7c00, 0x8000) == 0x7fff);  // inf * -0
  CHECK(arith::half_binary(kF16.format, BinaryOp::Div, 0x0000, 0x8000) == 0x7fff);  // 0 / -0
  CHECK(arith::half_binary(kF16.format, BinaryOp::Div, 0xfc00, 0x7c00) == 0x7fff);  // -inf / inf
  CHECK(arith::half_binary(kBF16.format, BinaryOp::Add, 0xff81, 0x3f80) == 0x7fff);
  CHECK(arith::half_binary(kBF16.format, BinaryOp::Add, 0x7f80, 0xff80) == 0x7fff);
  CHECK(arith::half_binary(kBF16.format, BinaryOp::Div, 0x8000, 0x0000) == 0x7fff);
  CHECK(arith::half_fma(kF16.format, 0x7c00, 0x0000, 0x3c00) == 0x7fff);
  CHECK(arith::half_fma(kBF16.format, 0x3f80, 0x7f80, 0xff80) == 0x7fff);
  CHECK(arith::half_fma(kBF16.format, 0x3f80, 0x3f80, 0xffc1) == 0x7fff);
  // Non-NaN specials: signed zeros, overflow, division by zero.
  CHECK(arith::half_binary(kF16.format, BinaryOp::Add, 0x8000, 0x8000) == 0x8000);
  CHECK(arith::half_binary(kF16.format, BinaryOp::Add, 0x8000, 0x0000) == 0x0000);
  CHECK(arith::half_binary(kF16.format, BinaryOp::Sub, 0x3c00, 0x3c00) == 0x0000);
  CHECK(arith::half_binary(kF16.format, BinaryOp::Add, 0x7bff, 0x4c00) == 0x7c00);  // 65504 + 16: the tie, to inf
  CHECK(arith::half_binary(kF16.format, BinaryOp::Add, 0x7bff, 0x4bff) == 0x7bff);  // 65504 + 15.99 stays
  CHECK(arith::half_binary(kF16.format, BinaryOp::Div, 0xbc00, 0x0000) == 0xfc00);
  CHECK(arith::half_binary(kF16.format, BinaryOp::Mul, 0x0001, 0x3800) == 0x0000);  // 2^-25: tie to even 0
  CHECK(arith::half_binary(kF16.format, BinaryOp::Mul, 0x0003, 0x3800) == 0x0002);  // 1.5 ulp: tie to even 2
}

// ---- fma -------------------------------------------------------------------------------

TEST_CASE("f16 and bf16 fma round once to nearest even: exact __float128 oracle on 150k triples",
          "[ir][arith][half][fma]") {
  for (const HalfFormat* half : {&kF16, &kBF16}) {
    std::mt19937 random(half == &kF16 ? 21 : 22);
    unsigned judged = 0, not_exact = 0, wrong = 0;
    const unsigned count = 150000;
    for (unsigned i = 0; i < count; ++i) {
      auto a = static_cast<std::uint16_t>(random());
      auto b = static_cast<std::uint16_t>(random());
      std::uint16_t c;
      switch (i % 4) {
        case 0: c = static_cast<std::uint16_t>(random()); break;
        case 1: c = half->specials[random() % half->specials.size()]; break;
        default: {
          // c close to -(a*b): the sum cancels, and the rounding happens many bits down.
          b = random_near(random, half == &kF16 ? 0x3c00 : 0x3f80, half->format);
          std::uint16_t product = half->from_float(half->to_float(a) * half->to_float(b));
          c = is_nan16(product, half->format) || is_inf16(product, half->format)
                  ? random_near(random, a, half->format)
                  : static_cast<std::uint16_t>((product ^ 0x8000) + static_cast<int>(random() % 5) - 2);
        }
      }
      const std::uint16_t got = arith::half_fma(half->format, a, b, c);
      std::string why;
      switch (check_fma(half->format, a, b, c, got, why)) {
        case FmaCheck::Correct: ++judged; break;
        case FmaCheck::NotExact: ++not_exact; break;
        case FmaCheck::Wrong:
          ++judged;
          if (++wrong <= 5)
            FAIL_CHECK(half->name << " fma(" << hex(a) << ", " << hex(b) << ", " << hex(c) << ") = " << hex(got) << ": "
                                  << why);
      }
    }
    INFO(half->name << ": " << judged << " judged, " << not_exact << " sums wider than __float128");
    CHECK(wrong == 0);
    CHECK(judged > count * 3 / 4);
    if (half == &kF16) CHECK(not_exact == 0);  // every f16 fma sum spans at most 81 bits
  }
}

TEST_CASE("bf16 fma: a product on a rounding midpoint plus a tiny addend rounds away from the tie",
          "[ir][arith][half][fma]") {
  const FloatFormat bf16 = FloatFormat::bfloat16();
  const std::uint16_t tiny = 0x0d80, minus_tiny = 0x8d80;  // +-2^-100
  REQUIRE(bf16_to_float(tiny) == std::ldexp(1.0f, -100));
  // 0x3f81 * 0x3fc0 = 1.51171875, the midpoint of 0x3fc1 (odd) and 0x3fc2 (even).
  CHECK(arith::half_fma(bf16, 0x3f81, 0x3fc0, 0x0000) == 0x3fc2);      // tie: to even
  CHECK(arith::half_fma(bf16, 0x3f81, 0x3fc0, tiny) == 0x3fc2);        // above the tie
  CHECK(arith::half_fma(bf16, 0x3f81, 0x3fc0, minus_tiny) == 0x3fc1);  // below the tie
  // 0x3f83 * 0x3fc0 = 1.53515625, the midpoint of 0x3fc4 (even) and 0x3fc5 (odd).
  CHECK(arith::half_fma(bf16, 0x3f83, 0x3fc0, 0x0000) == 0x3fc4);
  CHECK(arith::half_fma(bf16, 0x3f83, 0x3fc0, tiny) == 0x3fc5);
  CHECK(arith::half_fma(bf16, 0x3f83, 0x3fc0, minus_tiny) == 0x3fc4);
  // The same with a negative product: the magnitude moves the other way.
  CHECK(arith::half_fma(bf16, 0xbf83, 0x3fc0, minus_tiny) == 0xbfc5);
  CHECK(arith::half_fma(bf16, 0xbf83, 0x3fc0, tiny) == 0xbfc4);
  CHECK(arith::half_fma(bf16, 0xbf81, 0x3fc0, tiny) == 0xbfc1);
  // Evaluating a*b + c in f64 and rounding once more loses the 2^-100 and lands on
  // the tie: these cases separate a single rounding from a naive one.
  auto naive = [](std::uint16_t a, std::uint16_t b, std::uint16_t c) {
    double sum = double(bf16_to_float(a)) * double(bf16_to_float(b)) + double(bf16_to_float(c));
    return float_to_bf16(static_cast<float>(sum));
  };
  CHECK(naive(0x3f81, 0x3fc0, minus_tiny) == 0x3fc2);
  CHECK(naive(0x3f83, 0x3fc0, tiny) == 0x3fc4);
  // The f16 analogue with the smallest subnormal addend.
  CHECK(arith::half_fma(FloatFormat::binary16(), 0x3c01, 0x3e00, 0x0000) == 0x3e02);  // 1.5 + 1.5 ulp: tie to even
  CHECK(arith::half_fma(FloatFormat::binary16(), 0x3c01, 0x3e00, 0x8001) == 0x3e01);
  CHECK(arith::half_fma(FloatFormat::binary16(), 0x3c03, 0x3e00, 0x0001) == 0x3e05);
}

// ---- min / max, neg / abs --------------------------------------------------------------

TEST_CASE("f16 and bf16 min/max ignore one NaN, give the canonical NaN for two, order -0 below +0",
          "[ir][arith][half]") {
  const FloatFormat f16 = FloatFormat::binary16(), bf16 = FloatFormat::bfloat16();
  CHECK(arith::half_binary(f16, BinaryOp::Min, 0x7e00, 0x3c00) == 0x3c00);
  CHECK(arith::half_binary(f16, BinaryOp::Min, 0xbc00, 0xfd00) == 0xbc00);
  CHECK(arith::half_binary(f16, BinaryOp::Max, 0x7c01, 0xfc00) == 0xfc00);
  CHECK(arith::half_binary(f16, BinaryOp::Max, 0x7e00, 0xfe01) == 0x7fff);
  CHECK(arith::half_binary(f16, BinaryOp::Min, 0x0000, 0x8000) == 0x8000);
  CHECK(arith::half_binary(f16, BinaryOp::Min, 0x8000, 0x0000) == 0x8000);
  CHECK(arith::half_binary(f16, BinaryOp::Max, 0x8000, 0x0000) == 0x0000);
  CHECK(arith::half_binary(f16, BinaryOp::Max, 0x0000, 0x8000) == 0x0000);
  CHECK(arith::half_binary(f16, BinaryOp::Max, 0x0001, 0x8000) == 0x0001);
  CHECK(arith::half_binary(bf16, BinaryOp::Min, 0xffc0, 0x0001) == 0x0001);
  CHECK(arith::half_binary(bf16, BinaryOp::Max, 0x7fc0, 0x7f81) == 0x7fff);
  CHECK(arith::half_binary(bf16, BinaryOp::Min, 0x0000, 0x8000) == 0x8000);
  // The same rules in f32/f64 (Literal encodings through evaluate_binary).
  const std::uint64_t f32_nan = 0x7fc00001, f64_nan = 0xfff8000000000001ull;
  CHECK(arith::evaluate_binary(BinaryOp::Min, ScalarType::F32, f32_nan, f32_bits(2.0f)) == f32_bits(2.0f));
  CHECK(arith::evaluate_binary(BinaryOp::Max, ScalarType::F32, f32_bits(-2.0f), f32_nan) == f32_bits(-2.0f));
  CHECK(arith::evaluate_binary(BinaryOp::Max, ScalarType::F32, f32_nan, f32_nan) == 0x7fffffffu);
  CHECK(arith::evaluate_binary(BinaryOp::Min, ScalarType::F32, f32_bits(0.0f), f32_bits(-0.0f)) == f32_bits(-0.0f));
  CHECK(arith::evaluate_binary(BinaryOp::Max, ScalarType::F32, f32_bits(-0.0f), f32_bits(0.0f)) == f32_bits(0.0f));
  CHECK(arith::evaluate_binary(BinaryOp::Min, ScalarType::F64, f64_nan, f64_bits(-3.0)) == f64_bits(-3.0));
  CHECK(arith::evaluate_binary(BinaryOp::Min, ScalarType::F64, f64_nan, f64_nan) == 0x7fffffffffffffffull);
  CHECK(arith::evaluate_binary(BinaryOp::Max, ScalarType::F64, f64_bits(-0.0), f64_bits(0.0)) == f64_bits(0.0));
}

TEST_CASE("f16 and bf16 min/max agree with CUDA's host __hmin/__hmax on every special pair and 100k random pairs",
          "[ir][arith][half]") {
  auto oracle_f16 = [](bool is_min, std::uint16_t a, std::uint16_t b) {
    __half_raw x, y;
    x.x = a;
    y.x = b;
    return static_cast<__half_raw>(is_min ? __hmin(__half(x), __half(y)) : __hmax(__half(x), __half(y))).x;
  };
  auto oracle_bf16 = [](bool is_min, std::uint16_t a, std::uint16_t b) {
    __nv_bfloat16_raw x, y;
    x.x = a;
    y.x = b;
    return static_cast<__nv_bfloat16_raw>(is_min ? __hmin(__nv_bfloat16(x), __nv_bfloat16(y))
                                                 : __hmax(__nv_bfloat16(x), __nv_bfloat16(y)))
        .x;
  };
  for (const HalfFormat* half : {&kF16, &kBF16}) {
    unsigned mismatches = 0;
    for (auto [a, b] : operand_pairs(*half, 100000, 31)) {
      for (bool is_min : {true, false}) {
        std::uint16_t got = arith::half_binary(half->format, is_min ? BinaryOp::Min : BinaryOp::Max, a, b);
        std::uint16_t expected = half == &kF16 ? oracle_f16(is_min, a, b) : oracle_bf16(is_min, a, b);
        if (got != expected && ++mismatches <= 5)
          FAIL_CHECK(half->name << (is_min ? " min(" : " max(") << hex(a) << ", " << hex(b) << ") = " << hex(got)
                                << ", CUDA host gives " << hex(expected));
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("neg and abs change only the sign bit, keeping NaN payloads, in every float type", "[ir][arith]") {
  for (ScalarType type : {ScalarType::F16, ScalarType::BF16}) {
    unsigned wrong = 0;
    for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
      wrong += arith::evaluate_unary(UnaryOp::Neg, type, bits) != (bits ^ 0x8000);
      wrong += arith::evaluate_unary(UnaryOp::Abs, type, bits) != (bits & 0x7fff);
    }
    CHECK(wrong == 0);
  }
  CHECK(arith::evaluate_unary(UnaryOp::Neg, ScalarType::F16, 0x7d01) == 0xfd01);
  CHECK(arith::evaluate_unary(UnaryOp::Abs, ScalarType::BF16, 0xff81) == 0x7f81);
  CHECK(arith::evaluate_unary(UnaryOp::Neg, ScalarType::F32, 0x7fa00001) == 0xffa00001);
  CHECK(arith::evaluate_unary(UnaryOp::Abs, ScalarType::F32, 0xffa00001) == 0x7fa00001);
  CHECK(arith::evaluate_unary(UnaryOp::Neg, ScalarType::F32, f32_bits(0.0f)) == f32_bits(-0.0f));
  CHECK(arith::evaluate_unary(UnaryOp::Neg, ScalarType::F64, 0x7ff4000000000001ull) == 0xfff4000000000001ull);
  CHECK(arith::evaluate_unary(UnaryOp::Abs, ScalarType::F64, 0xfff4000000000001ull) == 0x7ff4000000000001ull);
  // Arithmetic on a NaN with a payload does not keep it.
  CHECK(arith::evaluate_binary(BinaryOp::Add, ScalarType::F32, 0x7fa00001, f32_bits(1.0f)) == 0x7fffffffu);
  CHECK(arith::evaluate_binary(BinaryOp::Mul, ScalarType::F64, 0xfff4000000000001ull, f64_bits(1.0)) ==
        0x7fffffffffffffffull);
  CHECK(arith::evaluate_fma(ScalarType::F32, f32_bits(INFINITY), 0, f32_bits(1.0f)) == 0x7fffffffu);
}

TEST_CASE("float comparisons are false on NaN except !=, and -0 == +0", "[ir][arith]") {
  const std::uint64_t nan16 = 0x7e00, one16 = 0x3c00;
  CHECK(arith::evaluate_binary(BinaryOp::Lt, ScalarType::F16, nan16, one16) == 0u);
  CHECK(arith::evaluate_binary(BinaryOp::Ge, ScalarType::F16, nan16, one16) == 0u);
  CHECK(arith::evaluate_binary(BinaryOp::Eq, ScalarType::F16, nan16, nan16) == 0u);
  CHECK(arith::evaluate_binary(BinaryOp::Ne, ScalarType::F16, nan16, nan16) == 1u);
  CHECK(arith::evaluate_binary(BinaryOp::Eq, ScalarType::BF16, 0x8000, 0x0000) == 1u);
  CHECK(arith::evaluate_binary(BinaryOp::Lt, ScalarType::BF16, 0x8000, 0x0000) == 0u);
  CHECK(arith::evaluate_binary(BinaryOp::Lt, ScalarType::BF16, 0xff80, 0xff7f) == 1u);
  CHECK(arith::evaluate_binary(BinaryOp::Le, ScalarType::F32, 0x7fc00000, f32_bits(1.0f)) == 0u);
  CHECK(arith::evaluate_binary(BinaryOp::Ne, ScalarType::F64, 0x7ff8000000000000ull, f64_bits(1.0)) == 1u);
}

// ---- conversions -------------------------------------------------------------------------

TEST_CASE("f32 -> f16 and bf16 round to nearest even, overflow to inf and give the canonical NaN, as CUDA host conversions do",
          "[ir][arith][convert]") {
  std::vector<std::uint32_t> inputs = {0x00000000, 0x80000000, 0x00000001, 0x7f7fffff, 0xff7fffff, 0x7f800000,
                                       0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0x477fefff, 0x477ff000,
                                       0x477fe000, 0xc77ff000, 0x33000000, 0x33000001, 0x387fc000, 0x38800000};
  // Every midpoint between neighbouring f16 and bf16 values (exact in f32), and both
  // f32 neighbours of each.
  for (std::uint32_t bits = 0; bits < 0x7bff; ++bits) {
    float low = f16_to_float(static_cast<std::uint16_t>(bits)), high = f16_to_float(static_cast<std::uint16_t>(bits + 1));
    std::uint32_t middle = std::bit_cast<std::uint32_t>((low + high) / 2);
    for (std::uint32_t m : {middle - 1, middle, middle + 1}) {
      inputs.push_back(m);
      inputs.push_back(m | 0x80000000u);
    }
  }
  for (std::uint32_t bits = 0; bits < 0x7f7f; bits += 3) {
    std::uint32_t middle = (bits << 16) | 0x8000u;  // bf16 midpoints: the 17th bit set
    for (std::uint32_t m : {middle - 1, middle, middle + 1}) {
      inputs.push_back(m);
      inputs.push_back(m | 0x80000000u);
    }
  }
  std::mt19937 random(41);
  for (int i = 0; i < 200000; ++i) inputs.push_back(static_cast<std::uint32_t>(random()));
  unsigned f16_wrong = 0, bf16_wrong = 0, nans = 0;
  for (std::uint32_t bits : inputs) {
    float value = std::bit_cast<float>(bits);
    std::uint64_t h = arith::evaluate_cast(ScalarType::F16, ScalarType::F32, bits);
    std::uint64_t b = arith::evaluate_cast(ScalarType::BF16, ScalarType::F32, bits);
    if (h != float_to_f16(value) && ++f16_wrong <= 5)
      FAIL_CHECK("f32 " << hex(bits) << " -> f16 " << hex(h) << ", CUDA host gives " << hex(float_to_f16(value)));
    if (b != float_to_bf16(value) && ++bf16_wrong <= 5)
      FAIL_CHECK("f32 " << hex(bits) << " -> bf16 " << hex(b) << ", CUDA host gives " << hex(float_to_bf16(value)));
    // The template path agrees with the bit-level entry point.
    if (arith::convert<arith::Float16>(value).bits != h) ++f16_wrong;
    if (arith::convert<arith::BFloat16>(value).bits != b) ++bf16_wrong;
    if (std::isnan(value)) {
      ++nans;
      CHECK(h == 0x7fff);
      CHECK(b == 0x7fff);
    }
  }
  CHECK(f16_wrong == 0);
  CHECK(bf16_wrong == 0);
  CHECK(nans > 100);
  // Spot values derived by hand.
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(65520.0f)) == 0x7c00);  // the overflow tie
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(65519.996f)) == 0x7bff);
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(-1e6f)) == 0xfc00);
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(1.0f + 0x1p-11f)) == 0x3c00);  // tie: even
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(1.0f + 0x3p-11f)) == 0x3c02);  // tie: even
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(0x1p-25f)) == 0x0000);  // half the least subnormal
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F32, f32_bits(0x1.8p-24f)) == 0x0002);
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F32, 0x3f808000) == 0x3f80);
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F32, 0x3f818000) == 0x3f82);
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F32, 0x7f7fffff) == 0x7f80);  // FLT_MAX -> inf
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F32, 0x7f7f7fff) == 0x7f7f);
}

TEST_CASE("f16 and bf16 -> f32 are exact for every encoding, f16 NaN canonical, bf16 NaN payload kept",
          "[ir][arith][convert]") {
  unsigned wrong = 0;
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    std::uint64_t from_f16 = arith::evaluate_cast(ScalarType::F32, ScalarType::F16, h);
    std::uint64_t from_bf16 = arith::evaluate_cast(ScalarType::F32, ScalarType::BF16, h);
    // CUDA's host __half2float gives the canonical NaN itself; __bfloat162float keeps
    // payloads (a plain shift, as ptxas compiles cvt.f32.bf16), and so does the IR.
    std::uint64_t expected_f16 = std::bit_cast<std::uint32_t>(f16_to_float(h));
    std::uint64_t expected_bf16 = std::bit_cast<std::uint32_t>(bf16_to_float(h));
    wrong += from_f16 != expected_f16;
    wrong += from_bf16 != expected_bf16;
    wrong += arith::evaluate_cast(ScalarType::F64, ScalarType::F16, h) !=
             (is_nan16(h, FloatFormat::binary16()) ? 0x7fffffffffffffffull : f64_bits(f16_to_float(h)));
  }
  CHECK(wrong == 0);
  CHECK(arith::evaluate_cast(ScalarType::F32, ScalarType::F16, 0x0001) == f32_bits(0x1p-24f));
  CHECK(arith::evaluate_cast(ScalarType::F32, ScalarType::BF16, 0x0001) == f32_bits(0x1p-133f));
  CHECK(arith::evaluate_cast(ScalarType::F32, ScalarType::F16, 0xfe01) == 0x7fffffffu);
  CHECK(arith::evaluate_cast(ScalarType::F32, ScalarType::BF16, 0xff81) == 0xff810000u);
}

TEST_CASE("f64 -> f16 and bf16 round once, not twice through f32", "[ir][arith][convert]") {
  // 1 + 2^-11 + 2^-40: just above the f16 tie between 1 and 1 + 2^-10. Through f32 the
  // 2^-40 is lost, the tie goes to even and the result is 1.0 instead of 1 + 2^-10.
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F64, f64_bits(1.0 + 0x1p-11 + 0x1p-40)) == 0x3c01);
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F64, f64_bits(1.0 + 0x1p-11 - 0x1p-40)) == 0x3c00);
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F64, f64_bits(1.0 + 0x1p-11)) == 0x3c00);
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F64, f64_bits(1.0 + 0x1p-8 + 0x1p-40)) == 0x3f81);
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F64, f64_bits(-(1.0 + 0x1p-8 + 0x1p-40))) == 0xbf81);
  CHECK(arith::evaluate_cast(ScalarType::BF16, ScalarType::F64, f64_bits(1e300)) == 0x7f80);
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F64, f64_bits(1e-300)) == 0x0000);
  CHECK(arith::evaluate_cast(ScalarType::F16, ScalarType::F64, f64_bits(-1e-300)) == 0x8000);
  CHECK(arith::evaluate_cast(ScalarType::F32, ScalarType::F64, 0xfff8000000000001ull) == 0x7fffffffu);
  CHECK(arith::evaluate_cast(ScalarType::F64, ScalarType::F32, 0xffc00001u) == 0x7fffffffffffffffull);
}

TEST_CASE("float -> integer truncates toward zero, saturates at the type's range, NaN -> 0", "[ir][arith][convert]") {
  auto cast = [](ScalarType to, ScalarType from, std::uint64_t bits) { return arith::evaluate_cast(to, from, bits); };
  const std::uint64_t nan32 = 0x7fc00000, inf32 = 0x7f800000, minus_inf32 = 0xff800000;
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(3e9f)) == i64_bits(INT32_MAX));
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(-3e9f)) == i64_bits(INT32_MIN));
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(2147483520.0f)) == i64_bits(2147483520));
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(2147483648.0f)) == i64_bits(INT32_MAX));
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(-2147483648.0f)) == i64_bits(INT32_MIN));
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(-0.9f)) == 0u);
  CHECK(cast(ScalarType::I32, ScalarType::F32, f32_bits(-7.9f)) == i64_bits(-7));
  CHECK(cast(ScalarType::I32, ScalarType::F32, nan32) == 0u);
  CHECK(cast(ScalarType::I32, ScalarType::F32, 0xffc00001) == 0u);
  CHECK(cast(ScalarType::I32, ScalarType::F32, inf32) == i64_bits(INT32_MAX));
  CHECK(cast(ScalarType::I32, ScalarType::F32, minus_inf32) == i64_bits(INT32_MIN));
  CHECK(cast(ScalarType::U32, ScalarType::F32, f32_bits(-1.5f)) == 0u);
  CHECK(cast(ScalarType::U32, ScalarType::F32, f32_bits(4294967296.0f)) == 0xffffffffu);
  CHECK(cast(ScalarType::U32, ScalarType::F32, f32_bits(4294967040.0f)) == 4294967040u);
  CHECK(cast(ScalarType::U32, ScalarType::F32, nan32) == 0u);
  CHECK(cast(ScalarType::U8, ScalarType::F32, f32_bits(300.0f)) == 255u);
  CHECK(cast(ScalarType::U8, ScalarType::F32, f32_bits(-1.0f)) == 0u);
  CHECK(cast(ScalarType::U8, ScalarType::F32, f32_bits(255.9f)) == 255u);
  CHECK(cast(ScalarType::I8, ScalarType::F32, f32_bits(-200.0f)) == i64_bits(-128));
  CHECK(cast(ScalarType::I8, ScalarType::F32, f32_bits(127.99f)) == 127u);
  CHECK(cast(ScalarType::I64, ScalarType::F64, f64_bits(1e19)) == i64_bits(INT64_MAX));
  CHECK(cast(ScalarType::I64, ScalarType::F64, f64_bits(0x1p63)) == i64_bits(INT64_MAX));
  CHECK(cast(ScalarType::I64, ScalarType::F64, f64_bits(-0x1p63)) == i64_bits(INT64_MIN));
  CHECK(cast(ScalarType::I64, ScalarType::F64, f64_bits(0x1.fffffffffffffp62)) == i64_bits(0x7ffffffffffffc00));
  CHECK(cast(ScalarType::U64, ScalarType::F64, f64_bits(0x1p64)) == ~0ull);
  CHECK(cast(ScalarType::U64, ScalarType::F64, f64_bits(0x1.fffffffffffffp63)) == 0xfffffffffffff800ull);
  CHECK(cast(ScalarType::U64, ScalarType::F64, 0x7ff8000000000000ull) == 0u);
  CHECK(cast(ScalarType::I32, ScalarType::F16, 0x7bff) == 65504u);
  CHECK(cast(ScalarType::I32, ScalarType::F16, 0xfc00) == i64_bits(INT32_MIN));
  CHECK(cast(ScalarType::U16, ScalarType::F16, 0x7c00) == 0xffffu);
  CHECK(cast(ScalarType::U8, ScalarType::BF16, 0x4380) == 255u);  // 256 saturates
  CHECK(cast(ScalarType::I32, ScalarType::BF16, 0x7fc0) == 0u);
  CHECK(cast(ScalarType::Bool, ScalarType::F32, nan32) == 1u);
  CHECK(cast(ScalarType::Bool, ScalarType::F32, f32_bits(-0.0f)) == 0u);
}

TEST_CASE("integer -> f16/bf16/f32 round to nearest even and overflow f16 to inf", "[ir][arith][convert]") {
  auto cast = [](ScalarType to, ScalarType from, std::uint64_t bits) { return arith::evaluate_cast(to, from, bits); };
  CHECK(cast(ScalarType::F16, ScalarType::I32, 65504) == 0x7bff);
  CHECK(cast(ScalarType::F16, ScalarType::I32, 65519) == 0x7bff);  // below the overflow tie 65520
  CHECK(cast(ScalarType::F16, ScalarType::I32, 65520) == 0x7c00);
  CHECK(cast(ScalarType::F16, ScalarType::U32, 1u << 20) == 0x7c00);
  CHECK(cast(ScalarType::F16, ScalarType::I32, i64_bits(-70000)) == 0xfc00);
  CHECK(cast(ScalarType::F16, ScalarType::U64, ~0ull) == 0x7c00);
  CHECK(cast(ScalarType::F16, ScalarType::I64, i64_bits(INT64_MIN)) == 0xfc00);
  CHECK(cast(ScalarType::F16, ScalarType::I32, 2049) == 0x6800);  // tie between 2048 and 2050: even
  CHECK(cast(ScalarType::F16, ScalarType::I32, 2051) == 0x6802);  // tie between 2050 and 2052: even
  CHECK(cast(ScalarType::F16, ScalarType::I32, i64_bits(-2051)) == 0xe802);
  CHECK(cast(ScalarType::BF16, ScalarType::I32, 257) == 0x4380);  // tie: 256
  CHECK(cast(ScalarType::BF16, ScalarType::I32, 259) == 0x4382);  // tie: 260
  CHECK(cast(ScalarType::BF16, ScalarType::U64, ~0ull) == 0x5f80);  // 2^64
  CHECK(cast(ScalarType::BF16, ScalarType::I64, i64_bits(INT64_MIN)) == 0xdf00);
  CHECK(cast(ScalarType::F32, ScalarType::I32, 16777217) == f32_bits(16777216.0f));
  CHECK(cast(ScalarType::F32, ScalarType::I32, 16777219) == f32_bits(16777220.0f));
  CHECK(cast(ScalarType::F32, ScalarType::U64, ~0ull) == 0x5f800000u);
  CHECK(cast(ScalarType::F64, ScalarType::U64, ~0ull) == f64_bits(0x1p64));
  CHECK(cast(ScalarType::F64, ScalarType::I64, i64_bits((1ll << 53) + 1)) == f64_bits(0x1p53));
  CHECK(cast(ScalarType::F16, ScalarType::Bool, 1) == 0x3c00);
  CHECK(cast(ScalarType::I32, ScalarType::U8, 0xff) == 255u);
  CHECK(cast(ScalarType::I32, ScalarType::I8, i64_bits(-1)) == i64_bits(-1));  // sign-extended
  CHECK(cast(ScalarType::U8, ScalarType::I32, 0x1ff) == 0xffu);  // modular
  CHECK(cast(ScalarType::I8, ScalarType::U32, 0x80) == i64_bits(-128));
}

// ---- integers ---------------------------------------------------------------------------

TEST_CASE("integer arithmetic wraps, MIN / -1 wraps to MIN with remainder 0, shifts clamp", "[ir][arith][integer]") {
  auto op = [](BinaryOp o, ScalarType t, std::uint64_t a, std::uint64_t b) { return arith::evaluate_binary(o, t, a, b); };
  CHECK(op(BinaryOp::Add, ScalarType::I32, INT32_MAX, 1) == i64_bits(INT32_MIN));  // sign-extended encoding
  CHECK(op(BinaryOp::Add, ScalarType::U8, 255, 1) == 0u);
  CHECK(op(BinaryOp::Sub, ScalarType::U32, 0, 1) == 0xffffffffu);
  CHECK(op(BinaryOp::Mul, ScalarType::I32, 0x10000, 0x10000) == 0u);
  CHECK(op(BinaryOp::Mul, ScalarType::U16, 0xffff, 0xffff) == 1u);
  CHECK(op(BinaryOp::Mul, ScalarType::I64, i64_bits(INT64_MIN), i64_bits(-1)) == i64_bits(INT64_MIN));
  CHECK(op(BinaryOp::Div, ScalarType::I32, i64_bits(INT32_MIN), i64_bits(-1)) == i64_bits(INT32_MIN));
  CHECK(op(BinaryOp::Rem, ScalarType::I32, i64_bits(INT32_MIN), i64_bits(-1)) == 0u);
  CHECK(op(BinaryOp::Div, ScalarType::I64, i64_bits(INT64_MIN), i64_bits(-1)) == i64_bits(INT64_MIN));
  CHECK(op(BinaryOp::Rem, ScalarType::I64, i64_bits(INT64_MIN), i64_bits(-1)) == 0u);
  CHECK(op(BinaryOp::Div, ScalarType::I8, i64_bits(-128), i64_bits(-1)) == i64_bits(-128));
  CHECK(op(BinaryOp::Div, ScalarType::I32, i64_bits(-7), 2) == i64_bits(-3));  // truncates
  CHECK(op(BinaryOp::Rem, ScalarType::I32, i64_bits(-7), 2) == i64_bits(-1));
  CHECK(op(BinaryOp::Rem, ScalarType::I32, 7, i64_bits(-2)) == 1u);
  CHECK(op(BinaryOp::Div, ScalarType::U32, 0xffffffffu, 2) == 0x7fffffffu);
  // Shifts: amounts >= the width give 0 (or -1 for a negative signed value); the amount
  // is read as unsigned, so a negative amount shifts everything out.
  CHECK(op(BinaryOp::Shl, ScalarType::U32, 1, 31) == 0x80000000u);
  CHECK(op(BinaryOp::Shl, ScalarType::U32, 1, 32) == 0u);
  CHECK(op(BinaryOp::Shl, ScalarType::I32, 1, 31) == i64_bits(INT32_MIN));
  CHECK(op(BinaryOp::Shl, ScalarType::I32, 1, i64_bits(-1)) == 0u);
  CHECK(op(BinaryOp::Shl, ScalarType::U8, 0xff, 4) == 0xf0u);
  CHECK(op(BinaryOp::Shl, ScalarType::U8, 1, 8) == 0u);
  CHECK(op(BinaryOp::Shl, ScalarType::U64, 1, 63) == 0x8000000000000000ull);
  CHECK(op(BinaryOp::Shl, ScalarType::U64, 1, 64) == 0u);
  CHECK(op(BinaryOp::Shr, ScalarType::U32, 0x80000000u, 31) == 1u);
  CHECK(op(BinaryOp::Shr, ScalarType::U32, 0x80000000u, 40) == 0u);
  CHECK(op(BinaryOp::Shr, ScalarType::I32, i64_bits(-8), 1) == i64_bits(-4));  // arithmetic
  CHECK(op(BinaryOp::Shr, ScalarType::I32, i64_bits(-8), 40) == i64_bits(-1));
  CHECK(op(BinaryOp::Shr, ScalarType::I32, 8, 40) == 0u);
  CHECK(op(BinaryOp::Shr, ScalarType::I32, i64_bits(-8), i64_bits(-1)) == i64_bits(-1));
  CHECK(op(BinaryOp::Shr, ScalarType::I64, i64_bits(INT64_MIN), 64) == i64_bits(-1));
  CHECK(op(BinaryOp::Shr, ScalarType::I8, i64_bits(-128), 7) == i64_bits(-1));
  CHECK(op(BinaryOp::Min, ScalarType::I32, i64_bits(-1), 1) == i64_bits(-1));
  CHECK(op(BinaryOp::Min, ScalarType::U32, 0xffffffffu, 1) == 1u);
  CHECK(arith::evaluate_unary(UnaryOp::Neg, ScalarType::I32, i64_bits(INT32_MIN)) == i64_bits(INT32_MIN));
  CHECK(arith::evaluate_unary(UnaryOp::Abs, ScalarType::I32, i64_bits(INT32_MIN)) == i64_bits(INT32_MIN));
  CHECK(arith::evaluate_unary(UnaryOp::Abs, ScalarType::I8, i64_bits(-5)) == 5u);
  CHECK(arith::evaluate_unary(UnaryOp::Neg, ScalarType::U32, 1) == 0xffffffffu);
  CHECK(arith::evaluate_unary(UnaryOp::Not, ScalarType::U16, 0x00ff) == 0xff00u);
  CHECK(arith::evaluate_unary(UnaryOp::Not, ScalarType::Bool, 1) == 0u);
}

TEST_CASE("evaluate_* return nullopt for division by zero and for operators a type does not have",
          "[ir][arith][integer]") {
  for (ScalarType type : {ScalarType::U8, ScalarType::I8, ScalarType::U16, ScalarType::I32, ScalarType::U32,
                          ScalarType::I64, ScalarType::U64}) {
    INFO(to_string(type));
    CHECK_FALSE(arith::evaluate_binary(BinaryOp::Div, type, 7, 0).has_value());
    CHECK_FALSE(arith::evaluate_binary(BinaryOp::Rem, type, 7, 0).has_value());
    CHECK(arith::evaluate_binary(BinaryOp::Div, type, 7, 1) == 7u);
  }
  // Float division by zero is defined (inf, NaN).
  CHECK(arith::evaluate_binary(BinaryOp::Div, ScalarType::F32, f32_bits(1.0f), 0) == 0x7f800000u);
  CHECK(arith::evaluate_binary(BinaryOp::Div, ScalarType::F64, 0, 0) == 0x7fffffffffffffffull);
  CHECK(arith::evaluate_binary(BinaryOp::Div, ScalarType::F16, 0x3c00, 0x8000) == 0xfc00u);
  CHECK_FALSE(arith::evaluate_binary(BinaryOp::BitAnd, ScalarType::F32, 1, 1).has_value());
  CHECK_FALSE(arith::evaluate_binary(BinaryOp::Rem, ScalarType::F32, 1, 1).has_value());
  CHECK_FALSE(arith::evaluate_binary(BinaryOp::Shl, ScalarType::F16, 1, 1).has_value());
  CHECK_FALSE(arith::evaluate_binary(BinaryOp::LogicalAnd, ScalarType::I32, 1, 1).has_value());
  CHECK_FALSE(arith::evaluate_binary(BinaryOp::Add, ScalarType::Bool, 1, 1).has_value());
  CHECK(arith::evaluate_binary(BinaryOp::LogicalOr, ScalarType::Bool, 0, 1) == 1u);
  CHECK_FALSE(arith::evaluate_unary(UnaryOp::Not, ScalarType::F32, 0).has_value());
  CHECK_FALSE(arith::evaluate_unary(UnaryOp::Neg, ScalarType::Bool, 0).has_value());
  CHECK_FALSE(arith::evaluate_fma(ScalarType::I32, 1, 2, 3).has_value());
  CHECK(arith::evaluate_fma(ScalarType::F16, 0x3c00, 0x4000, 0x3c00) == 0x4200u);  // 1 * 2 + 1 = 3
  CHECK_THROWS_AS(arith::evaluate_binary(BinaryOp::Add, ScalarType::U4, 1, 1), std::invalid_argument);
}

namespace {

template <BinaryOp OP, class T>
std::optional<std::uint64_t> template_binary(std::uint64_t a, std::uint64_t b) {
  if constexpr (!arith::binary_defined<OP, T>()) {
    return std::nullopt;
  } else {
    T x = arith::from_bits<T>(a), y = arith::from_bits<T>(b);
    if constexpr ((OP == BinaryOp::Div || OP == BinaryOp::Rem) && arith::kIsInteger<T>) {
      if (y == T(0)) return std::nullopt;
    }
    return arith::to_bits(arith::binary<OP, T>(x, y));
  }
}

template <UnaryOp OP, class T>
std::optional<std::uint64_t> template_unary(std::uint64_t a) {
  if constexpr (!arith::unary_defined<OP, T>()) return std::nullopt;
  else return arith::to_bits(arith::unary<OP, T>(arith::from_bits<T>(a)));
}

/// A random Literal encoding of T: canonical (sign-extended integers, 0/1 bools).
template <class T>
std::uint64_t random_encoding(std::mt19937_64& random) {
  std::uint64_t raw = random();
  if (random() % 8 == 0) raw &= 0xff;  // small values, zeros and equal pairs
  return arith::to_bits(arith::from_bits<T>(raw));
}

}  // namespace

TEST_CASE("evaluate_binary/unary/cast/fma agree with the templates on every type and operator", "[ir][arith]") {
  std::mt19937_64 random(51);
  const ScalarType types[] = {ScalarType::Bool, ScalarType::U8,  ScalarType::I8,  ScalarType::U16,
                              ScalarType::U32,  ScalarType::I32, ScalarType::U64, ScalarType::I64,
                              ScalarType::F16,  ScalarType::BF16, ScalarType::F32, ScalarType::F64};
  unsigned compared = 0, mismatches = 0;
  for (ScalarType type : types) {
    arith::dispatch_scalar(type, [&]<class T>() {
      for (int i = 0; i < 300; ++i) {
        std::uint64_t a = random_encoding<T>(random), b = i % 5 == 0 ? a : random_encoding<T>(random);
#define QUANTC_CHECK_BINARY(name, text)                                                        \
  {                                                                                            \
    auto expected = template_binary<BinaryOp::name, T>(a, b);                                  \
    auto got = arith::evaluate_binary(BinaryOp::name, type, a, b);                             \
    ++compared;                                                                                \
    if (got != expected && ++mismatches <= 5)                                                  \
      FAIL_CHECK(to_string(type) << " " #name "(" << hex(a) << ", " << hex(b) << ")");          \
  }
        QUANTC_BINARY_OPS(QUANTC_CHECK_BINARY)
#undef QUANTC_CHECK_BINARY
#define QUANTC_CHECK_UNARY(name, text)                                                      \
  {                                                                                         \
    ++compared;                                                                             \
    if (arith::evaluate_unary(UnaryOp::name, type, a) != template_unary<UnaryOp::name, T>(a) && \
        ++mismatches <= 5)                                                                  \
      FAIL_CHECK(to_string(type) << " " #name "(" << hex(a) << ")");                        \
  }
        QUANTC_UNARY_OPS(QUANTC_CHECK_UNARY)
#undef QUANTC_CHECK_UNARY
        if constexpr (arith::kIsFloat<T>) {
          std::uint64_t c = random_encoding<T>(random);
          ++compared;
          auto expected = arith::to_bits(arith::fma(arith::from_bits<T>(a), arith::from_bits<T>(b), arith::from_bits<T>(c)));
          if (arith::evaluate_fma(type, a, b, c) != expected && ++mismatches <= 5)
            FAIL_CHECK(to_string(type) << " fma(" << hex(a) << ", " << hex(b) << ", " << hex(c) << ")");
        }
        for (ScalarType to : types) {
          arith::dispatch_scalar(to, [&]<class To>() {
            ++compared;
            if (arith::evaluate_cast(to, type, a) != arith::to_bits(arith::convert<To, T>(arith::from_bits<T>(a))) &&
                ++mismatches <= 5)
              FAIL_CHECK("cast " << to_string(type) << " " << hex(a) << " to " << to_string(to));
          });
        }
      }
    });
  }
  CHECK(mismatches == 0);
  CHECK(compared > 100000);
}
