#include "runtime/backends/emulator/FloatRounding.h"

#include <bit>
#include <cmath>
#include <limits>

namespace quantc::runtime::emulator {

static_assert(std::numeric_limits<long double>::digits >= 64,
              "round_to_format needs a long double that holds every 64-bit integer exactly");

std::uint64_t FloatFormat::canonical_nan() const {
  std::uint64_t exponent_and_fraction = (bits == 64) ? ~0ull >> 1 : ((1ull << (bits - 1)) - 1);
  return exponent_and_fraction;
}

std::uint64_t round_to_format(long double value, FloatFormat format, Rounding rounding, bool flush_subnormal) {
  const std::uint64_t sign = std::signbit(value) ? (1ull << (format.bits - 1)) : 0;
  const int bias = format.max_exponent;
  const std::uint64_t infinity = static_cast<std::uint64_t>(2 * bias + 1) << format.mantissa_bits;
  if (std::isnan(value)) return format.canonical_nan();
  long double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return sign | infinity;
  if (magnitude == 0) return sign;

  int binary_exponent = 0;
  std::frexp(magnitude, &binary_exponent);  // magnitude = m * 2^e, m in [0.5, 1)
  int exponent = std::max(binary_exponent - 1, format.min_exponent);
  // Scale so that one unit in the last place of the target is 1: exact in long double.
  long double scaled = std::ldexp(magnitude, format.mantissa_bits - exponent);
  long double integral = std::floor(scaled);
  long double fraction = scaled - integral;
  auto significand = static_cast<std::uint64_t>(integral);
  bool negative = sign != 0;
  bool round_up = false;
  switch (rounding) {
    case Rounding::None: case Rounding::Nearest: case Rounding::NearestInt:
      round_up = fraction > 0.5L || (fraction == 0.5L && (significand & 1));
      break;
    case Rounding::Zero: case Rounding::ZeroInt: break;
    case Rounding::Down: case Rounding::DownInt: round_up = negative && fraction > 0; break;
    case Rounding::Up: case Rounding::UpInt: round_up = !negative && fraction > 0; break;
  }
  if (round_up) ++significand;
  const std::uint64_t hidden = 1ull << format.mantissa_bits;
  if (significand == (hidden << 1)) {
    significand >>= 1;
    ++exponent;
  }
  if (exponent > format.max_exponent) {
    bool to_infinity = rounding == Rounding::None || rounding == Rounding::Nearest ||
                       (rounding == Rounding::Up && !negative) || (rounding == Rounding::Down && negative);
    return sign | (to_infinity ? infinity : infinity - 1);
  }
  if (significand < hidden) {  // subnormal (exponent == min_exponent)
    return flush_subnormal ? sign : (sign | significand);
  }
  auto biased = static_cast<std::uint64_t>(exponent + bias);
  return sign | (biased << format.mantissa_bits) | (significand - hidden);
}

float half_to_float(std::uint16_t bits) {
  std::uint32_t sign = (bits >> 15) & 1;
  std::uint32_t exponent = (bits >> 10) & 0x1f;
  std::uint32_t fraction = bits & 0x3ff;
  float magnitude;
  if (exponent == 0x1f) {
    if (fraction != 0) return std::bit_cast<float>((sign << 31) | 0x7fc00000u | (fraction << 13));
    magnitude = std::numeric_limits<float>::infinity();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(fraction), -24);
  } else {
    magnitude = std::ldexp(static_cast<float>(fraction | 0x400), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

float bfloat16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace quantc::runtime::emulator
