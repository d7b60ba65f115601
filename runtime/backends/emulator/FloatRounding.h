// Exact IEEE 754 rounding of a wide value into a narrower binary format, for every
// PTX rounding mode. Used for cvt (f64/f32/f16/bf16 and integer sources), for float
// immediates, and wherever the host's own arithmetic cannot give directed rounding.
//
// Source: IEEE 754-2019 section 4.3 (rounding-direction attributes), PTX ISA 9.7.9.21 (cvt).
#pragma once

#include <cstdint>

#include "runtime/backends/emulator/PtxModule.h"

namespace quantc::runtime::emulator {

/// A binary interchange format: `mantissa_bits` stored fraction bits, normal exponents
/// in [min_exponent, max_exponent] (unbiased), `bits` total width.
struct FloatFormat {
  int mantissa_bits;
  int min_exponent;
  int max_exponent;
  int bits;
  static constexpr FloatFormat binary16() { return {10, -14, 15, 16}; }
  static constexpr FloatFormat bfloat16() { return {7, -126, 127, 16}; }
  static constexpr FloatFormat binary32() { return {23, -126, 127, 32}; }
  static constexpr FloatFormat binary64() { return {52, -1022, 1023, 64}; }
  /// The canonical NaN PTX produces in this format (sign clear, all fraction bits set).
  std::uint64_t canonical_nan() const;
};

/// Rounds `value` (exactly representable in long double, which holds every 64-bit
/// integer and every binary64) into `format` with `rounding` (Nearest = ties to even,
/// Zero, Down = toward -inf, Up = toward +inf; None means Nearest). Overflow gives
/// infinity or the largest finite value as IEEE 754 prescribes for the mode. NaN gives
/// the format's canonical NaN. `flush_subnormal` replaces a subnormal result by a zero
/// of the same sign (PTX .ftz). Returns the encoded bits in the low `format.bits`.
std::uint64_t round_to_format(long double value, FloatFormat format, Rounding rounding, bool flush_subnormal);

/// The exact value of an encoded binary16 / bfloat16 number.
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

}  // namespace quantc::runtime::emulator
