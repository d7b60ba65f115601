// Independent oracles for the quantization formats' element values, written from the
// format specifications rather than from quantc's decoders, for the tests that check ops
// against an f64 product.
//   - FP8 E4M3 / E5M2: OCP 8-bit Floating Point Specification (OFP8) rev 1.0 (E4M3 has no
//     infinities and one NaN per sign, S.1111.111; E5M2 is IEEE-like).
//   - FP4 E2M1: OCP Microscaling Formats (MX) v1.0, table "FP4 (E2M1)".
//   - NF4: the code book of bitsandbytes / QLoRA (Dettmers et al. 2023), as the
//     aprender-gpu seed lists it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace quantc::testing {

/// The value of FP8 `code` (e4m3: E4M3, else E5M2).
inline double fp8_value(std::uint8_t code, bool e4m3) {
  const int mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int exponent = (code & 0x7F) >> mantissa_bits, mantissa = code & ((1 << mantissa_bits) - 1);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (e4m3 && (code & 0x7F) == 0x7F) return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && exponent == 31) return mantissa == 0 ? sign * INFINITY : std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) return sign * mantissa * std::ldexp(1.0, 1 - bias - mantissa_bits);
  return sign * (mantissa + (1 << mantissa_bits)) * std::ldexp(1.0, exponent - bias - mantissa_bits);
}

/// The value of FP4 E2M1 `code` (bits 0-3).
inline double e2m1_value(std::uint32_t code) {
  static const double kValues[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (code & 8 ? -1.0 : 1.0) * kValues[code & 7];
}

/// The NF4 code book entry `code` (bits 0-3), as the f32 values bitsandbytes stores.
inline double nf4_value(std::uint32_t code) {
  static const float kTable[16] = {-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
                                   -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
                                   0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f,
                                   0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
                                   0.7229568362236023f, 1.0f};
  return kTable[code & 15];
}

}  // namespace quantc::testing
