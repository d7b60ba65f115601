// What every arithmetic, logic, comparison, conversion and move form of the instruction
// table computes (PTX ISA 8.x chapter 9), one `execute_<semantics>` function per
// semantics column entry; memory and warp-level forms are in Emulator.cpp.
//
// f32/f64: IEEE with the stated rounding (directed modes through fesetround; this file
// is built with -frounding-math), .ftz flushes subnormals to signed zero, .sat clamps to
// [0, 1] (NaN -> +0), NaN results are the canonical NaN. f16/bf16 (scalar and packed
// x2): the IR's own exact definitions in ir/Arithmetic.h, so the emulator and the
// reference interpreter cannot disagree; .ftz/.sat/.relu applied around them.
// Approximate instructions are computed more accurately than hardware and are not
// bit-identical to it (see README.md).
#include <cfenv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ir/Arithmetic.h"
#include "runtime/backends/emulator/Launch.h"

namespace quantc::runtime::emulator::detail {
namespace {

namespace arith = ir::arith;

/// Sets the host rounding mode for directed-rounding float arithmetic and restores
/// round-to-nearest afterwards.
class ScopedRounding {
 public:
  explicit ScopedRounding(Rounding rounding) {
    int mode = FE_TONEAREST;
    if (rounding == Rounding::Zero) mode = FE_TOWARDZERO;
    else if (rounding == Rounding::Down) mode = FE_DOWNWARD;
    else if (rounding == Rounding::Up) mode = FE_UPWARD;
    changed_ = mode != FE_TONEAREST;
    if (changed_) std::fesetround(mode);
    // Operands are loaded from the register file after this point and results stored
    // to it before the destructor: the memory barriers pin the arithmetic in between.
    asm volatile("" ::: "memory");
  }
  ~ScopedRounding() {
    asm volatile("" ::: "memory");
    if (changed_) std::fesetround(FE_TONEAREST);
  }
  ScopedRounding(const ScopedRounding&) = delete;
  ScopedRounding& operator=(const ScopedRounding&) = delete;

 private:
  bool changed_ = false;
};

arith::Rounding to_arith(Rounding rounding) {
  switch (rounding) {
    case Rounding::Zero: case Rounding::ZeroInt: return arith::Rounding::TowardZero;
    case Rounding::Down: case Rounding::DownInt: return arith::Rounding::TowardNegative;
    case Rounding::Up: case Rounding::UpInt: return arith::Rounding::TowardPositive;
    default: return arith::Rounding::NearestEven;
  }
}

template <class T>
T saturate_unit(T value) {  // .sat on floats: clamp to [0, 1], NaN -> 0
  if (std::isnan(value)) return T(0);
  return std::min(std::max(value, T(0)), T(1));
}

/// Runs a float operation on f32 or f64 with the instruction's rounding, .ftz, .sat.
template <class F>
void float_unary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
  ScopedRounding rounding(in.rounding);
  if (in.type == ValueType::F32)
    unary(in, active, warp, [&](std::uint64_t a) {
      float r = f(load_f32(a, in.ftz));
      return store_f32(in.saturate ? saturate_unit(r) : r, in.ftz);
    });
  else
    unary(in, active, warp, [&](std::uint64_t a) {
      double r = f(load_f64(a));
      return store_f64(in.saturate ? saturate_unit(r) : r);
    });
}
template <class F>
void float_binary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
  ScopedRounding rounding(in.rounding);
  if (in.type == ValueType::F32)
    binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
      float r = f(load_f32(a, in.ftz), load_f32(b, in.ftz));
      return store_f32(in.saturate ? saturate_unit(r) : r, in.ftz);
    });
  else
    binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
      double r = f(load_f64(a), load_f64(b));
      return store_f64(in.saturate ? saturate_unit(r) : r);
    });
}

// ---- half precision: scalar f16/bf16 in the low 16 bits, packed x2 as {low, high} ----

arith::FloatFormat half_format(ValueType type) {
  return (type == ValueType::BF16 || type == ValueType::BF16x2) ? arith::FloatFormat::bfloat16()
                                                                 : arith::FloatFormat::binary16();
}

unsigned half_lanes(ValueType type) { return (type == ValueType::F16x2 || type == ValueType::BF16x2) ? 2 : 1; }

/// .ftz on f16: a subnormal input or result becomes a zero of the same sign.
std::uint16_t flush_half(std::uint16_t bits, arith::FloatFormat format, bool ftz) {
  if (!ftz) return bits;
  bool exponent_zero = ((bits >> format.mantissa_bits) & ((1u << (15 - format.mantissa_bits)) - 1)) == 0;
  return exponent_zero ? static_cast<std::uint16_t>(bits & 0x8000u) : bits;
}

/// .sat clamps a result to [0, 1] (NaN -> +0); .relu clamps negatives to +0 and keeps
/// NaN as the canonical NaN (PTX ISA 9.7.4).
std::uint16_t half_result(std::uint16_t bits, const Instruction& in, arith::FloatFormat format) {
  bits = flush_half(bits, format, in.ftz);
  long double value = arith::decode(bits, format);
  if (in.saturate) {
    if (std::isnan(value) || value <= 0) return 0;
    if (value > 1) return static_cast<std::uint16_t>(arith::round_to_format(1.0L, format));
  }
  if (in.relu) {
    if (std::isnan(value)) return static_cast<std::uint16_t>(format.canonical_nan());
    if (value < 0) return 0;
  }
  return bits;
}

/// Applies `f(format, a, b[, c])` -> u16 to each 16-bit lane of the operands.
template <class F>
void half_lanes_apply(const Instruction& in, std::uint32_t active, Warp& warp, unsigned sources, F&& f) {
  const arith::FloatFormat format = half_format(in.type);
  const unsigned lanes = half_lanes(in.type);
  auto per_lane = [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    std::uint64_t result = 0;
    for (unsigned i = 0; i < lanes; ++i) {
      auto half = [&](std::uint64_t word) { return flush_half(static_cast<std::uint16_t>(word >> (16 * i)), format, in.ftz); };
      result |= std::uint64_t{half_result(f(format, half(a), half(b), half(c)), in, format)} << (16 * i);
    }
    return result;
  };
  if (sources == 1) unary(in, active, warp, [&](std::uint64_t a) { return per_lane(a, 0, 0); });
  else if (sources == 2) binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return per_lane(a, b, 0); });
  else ternary(in, active, warp, per_lane);
}

void half_binary_op(const Instruction& in, std::uint32_t active, Warp& warp, ir::BinaryOp op) {
  half_lanes_apply(in, active, warp, 2, [&](arith::FloatFormat format, std::uint16_t a, std::uint16_t b, std::uint16_t) {
    std::uint16_t r = arith::half_binary(format, op, a, b);
    // min/max .NaN: a NaN operand gives the canonical NaN.
    if (in.propagate_nan && (arith::is_nan_encoding(a, format) || arith::is_nan_encoding(b, format)))
      r = static_cast<std::uint16_t>(format.canonical_nan());
    return r;
  });
}

// ---- integer helpers ------------------------------------------------------------------

std::uint64_t multiply(const Instruction& in, std::uint64_t a, std::uint64_t b, unsigned bits, bool is_signed) {
  const std::uint64_t mask = width_mask(bits);
  switch (in.mul_mode) {
    case MulMode::None:
    case MulMode::Lo: return (a * b) & mask;
    case MulMode::Wide:
      if (is_signed) return static_cast<std::uint64_t>(sign_extend(a, bits) * sign_extend(b, bits)) & width_mask(2 * bits);
      return ((a & mask) * (b & mask)) & width_mask(2 * bits);
    case MulMode::Hi:
      if (bits == 64) {
        if (is_signed)
          return static_cast<std::uint64_t>(
              (static_cast<__int128>(static_cast<std::int64_t>(a)) * static_cast<std::int64_t>(b)) >> 64);
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
      }
      if (is_signed) return static_cast<std::uint64_t>((sign_extend(a, bits) * sign_extend(b, bits)) >> bits) & mask;
      return (((a & mask) * (b & mask)) >> bits) & mask;
  }
  return 0;
}

std::uint64_t saturating_s32(std::int64_t value) {
  return static_cast<std::uint64_t>(std::clamp<std::int64_t>(value, INT32_MIN, INT32_MAX)) & 0xffffffffu;
}

// ---- comparisons ------------------------------------------------------------------------

bool compare_float(long double a, long double b, Compare compare) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (compare) {
    case Compare::Eq: return !unordered && a == b;
    case Compare::Ne: return !unordered && a != b;
    case Compare::Lt: return !unordered && a < b;
    case Compare::Le: return !unordered && a <= b;
    case Compare::Gt: return !unordered && a > b;
    case Compare::Ge: return !unordered && a >= b;
    case Compare::Equ: return unordered || a == b;
    case Compare::Neu: return unordered || a != b;
    case Compare::Ltu: return unordered || a < b;
    case Compare::Leu: return unordered || a <= b;
    case Compare::Gtu: return unordered || a > b;
    case Compare::Geu: return unordered || a >= b;
    case Compare::Num: return !unordered;
    case Compare::Nan: return unordered;
    case Compare::Lo: case Compare::Ls: case Compare::Hi: case Compare::Hs: return false;
  }
  return false;
}

bool compare_integer(std::uint64_t a, std::uint64_t b, ValueType type, Compare compare) {
  unsigned bits = ptx::bit_width(type);
  std::uint64_t ua = a & width_mask(bits), ub = b & width_mask(bits);
  std::int64_t sa = sign_extend(a, bits), sb = sign_extend(b, bits);
  bool is_signed = ptx::is_signed_integer(type);
  switch (compare) {
    case Compare::Eq: return ua == ub;
    case Compare::Ne: return ua != ub;
    case Compare::Lt: return is_signed ? sa < sb : ua < ub;
    case Compare::Le: return is_signed ? sa <= sb : ua <= ub;
    case Compare::Gt: return is_signed ? sa > sb : ua > ub;
    case Compare::Ge: return is_signed ? sa >= sb : ua >= ub;
    case Compare::Lo: return ua < ub;
    case Compare::Ls: return ua <= ub;
    case Compare::Hi: return ua > ub;
    case Compare::Hs: return ua >= ub;
    default: return false;
  }
}

bool combine(bool value, BoolOp op, bool c) {
  switch (op) {
    case BoolOp::None: return value;
    case BoolOp::And: return value && c;
    case BoolOp::Or: return value || c;
    case BoolOp::Xor: return value != c;
  }
  return value;
}

/// The exact value of a float register of `type` (.ftz applies to f32 only).
long double decode_float(std::uint64_t bits, ValueType type, bool ftz) {
  switch (type) {
    case ValueType::F16: return arith::decode(bits & 0xffff, arith::FloatFormat::binary16());
    case ValueType::BF16: return arith::decode(bits & 0xffff, arith::FloatFormat::bfloat16());
    case ValueType::F32: return load_f32(bits, ftz);
    default: return load_f64(bits);
  }
}

bool evaluate_compare(const Instruction& in, ValueType type, std::uint64_t a, std::uint64_t b) {
  if (ptx::is_float(type)) return compare_float(decode_float(a, type, in.ftz), decode_float(b, type, in.ftz), in.compare);
  return compare_integer(a, b, type, in.compare);
}

// ---- conversions --------------------------------------------------------------------------

arith::FloatFormat float_format(ValueType type) {
  switch (type) {
    case ValueType::F16: case ValueType::F16x2: return arith::FloatFormat::binary16();
    case ValueType::BF16: case ValueType::BF16x2: return arith::FloatFormat::bfloat16();
    case ValueType::F64: return arith::FloatFormat::binary64();
    default: return arith::FloatFormat::binary32();
  }
}

/// Rounds to an integral value (cvt .rni/.rzi/.rmi/.rpi), exactly. A zero result has the
/// operand's sign (IEEE 754 roundToIntegral, CUDA's rintf(-0.4f) == -0.0f).
long double round_integral(long double value, Rounding rounding) {
  if (std::isnan(value) || std::isinf(value)) return value;
  long double floor_value = std::floor(value);
  long double result = value;
  switch (rounding) {
    case Rounding::ZeroInt: case Rounding::Zero: case Rounding::None: result = std::trunc(value); break;
    case Rounding::DownInt: case Rounding::Down: result = floor_value; break;
    case Rounding::UpInt: case Rounding::Up: result = std::ceil(value); break;
    case Rounding::NearestInt: case Rounding::Nearest: {
      long double fraction = value - floor_value;
      if (fraction > 0.5L) result = floor_value + 1;
      else if (fraction < 0.5L) result = floor_value;
      else result = std::fmod(floor_value, 2.0L) == 0 ? floor_value : floor_value + 1;
      break;
    }
  }
  return result == 0 ? std::copysign(0.0L, value) : result;
}

/// cvt .satfinite (PTX ISA cvt): a rounded result beyond the largest finite value,
/// infinity included, becomes the largest finite value of its sign; NaN stays NaN.
std::uint64_t saturate_finite(std::uint64_t bits, arith::FloatFormat format) {
  if ((bits & (format.sign_bit() - 1)) != format.infinity()) return bits;
  return (bits & format.sign_bit()) | (format.infinity() - 1);
}

/// Float -> integer with PTX's saturation to the destination range (NaN -> 0).
std::uint64_t float_to_integer(long double value, ValueType destination) {
  if (std::isnan(value)) return 0;
  unsigned bits = ptx::bit_width(destination);
  if (ptx::is_signed_integer(destination)) {
    long double low = -std::ldexp(1.0L, static_cast<int>(bits) - 1);
    long double high = std::ldexp(1.0L, static_cast<int>(bits) - 1);
    if (value < low) return static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min() >> (64 - bits)) & width_mask(bits);
    if (value >= high) return width_mask(bits - 1);
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(value)) & width_mask(bits);
  }
  if (value <= 0) return 0;
  if (value >= std::ldexp(1.0L, static_cast<int>(bits))) return width_mask(bits);
  return static_cast<std::uint64_t>(value);
}

/// Integer -> integer with .sat: clamps to the destination range.
std::uint64_t saturate_integer(std::uint64_t raw, ValueType source, ValueType destination) {
  unsigned source_bits = ptx::bit_width(source), bits = ptx::bit_width(destination);
  if (ptx::is_signed_integer(source)) {
    std::int64_t value = sign_extend(raw, source_bits);
    if (ptx::is_signed_integer(destination)) {
      std::int64_t low = bits >= 64 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t(1) << (bits - 1));
      std::int64_t high = bits >= 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (bits - 1)) - 1;
      return static_cast<std::uint64_t>(std::clamp(value, low, high)) & width_mask(bits);
    }
    if (value < 0) return 0;
    return std::min(static_cast<std::uint64_t>(value), width_mask(bits));
  }
  std::uint64_t value = raw & width_mask(source_bits);
  std::uint64_t high = ptx::is_signed_integer(destination) ? width_mask(bits - 1) : width_mask(bits);
  return std::min(value, high);
}

std::uint64_t permute(PermuteMode mode, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint64_t source = (std::uint64_t(b) << 32) | a;
  auto byte = [&](unsigned index) { return std::uint32_t((source >> (8 * (index & 7))) & 0xff); };
  std::uint32_t result = 0;
  if (mode == PermuteMode::Generic) {
    for (unsigned i = 0; i < 4; ++i) {
      unsigned selector = (c >> (4 * i)) & 0xf;
      std::uint32_t value = byte(selector & 7);
      if (selector & 8) value = (value & 0x80) ? 0xff : 0x00;
      result |= value << (8 * i);
    }
    return result;
  }
  // PTX ISA 9.7.8.7 table: source byte for result bytes 0..3, by c[1:0].
  static const std::uint8_t table[6][4][4] = {
      {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
      {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
      {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
      {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
      {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
      {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // rc16
  };
  const auto& row = table[static_cast<unsigned>(mode) - 1][c & 3];
  for (unsigned i = 0; i < 4; ++i) result |= byte(row[i]) << (8 * i);
  return result;
}

struct TypeTraits {
  unsigned bits;
  std::uint64_t mask;
  bool is_signed;
  explicit TypeTraits(ValueType type)
      : bits(ptx::bit_width(type)), mask(width_mask(ptx::bit_width(type))), is_signed(ptx::is_signed_integer(type)) {}
};

}  // namespace

// ---- integer arithmetic -------------------------------------------------------------------

void execute_IntAdd(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  if (in.saturate && in.type == ValueType::S32)
    return binary(in, active, warp,
                  [](std::uint64_t a, std::uint64_t b) { return saturating_s32(sign_extend(a, 32) + sign_extend(b, 32)); });
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return (a + b) & t.mask; });
}

void execute_IntSub(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  if (in.saturate && in.type == ValueType::S32)
    return binary(in, active, warp,
                  [](std::uint64_t a, std::uint64_t b) { return saturating_s32(sign_extend(a, 32) - sign_extend(b, 32)); });
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return (a - b) & t.mask; });
}

void execute_IntMul(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return multiply(in, a, b, t.bits, t.is_signed); });
}

void execute_IntMad(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    unsigned result_bits = in.mul_mode == MulMode::Wide ? 2 * t.bits : t.bits;
    std::uint64_t product = multiply(in, a, b, t.bits, t.is_signed);
    if (in.saturate && in.type == ValueType::S32 && in.mul_mode == MulMode::Hi)
      return saturating_s32(sign_extend(product, 32) + sign_extend(c, 32));
    return (product + c) & width_mask(result_bits);
  });
}

void execute_IntDiv(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
    if ((b & t.mask) == 0) return t.mask;  // undefined in PTX; hardware returns all ones
    if (t.is_signed) {
      std::int64_t sa = sign_extend(a, t.bits), sb = sign_extend(b, t.bits);
      if (sb == -1) return static_cast<std::uint64_t>(0 - static_cast<std::uint64_t>(sa)) & t.mask;
      return static_cast<std::uint64_t>(sa / sb) & t.mask;
    }
    return (a & t.mask) / (b & t.mask);
  });
}

void execute_IntRem(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
    if ((b & t.mask) == 0) return a & t.mask;
    if (t.is_signed) {
      std::int64_t sa = sign_extend(a, t.bits), sb = sign_extend(b, t.bits);
      if (sb == -1) return 0;
      return static_cast<std::uint64_t>(sa % sb) & t.mask;
    }
    return (a & t.mask) % (b & t.mask);
  });
}

void execute_IntAbs(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) {
    std::int64_t v = sign_extend(a, t.bits);
    return static_cast<std::uint64_t>(v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v)) & t.mask;
  });
}

void execute_IntNeg(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) { return (0 - a) & t.mask; });
}

namespace {
void integer_min_max(const Instruction& in, std::uint32_t active, Warp& warp, bool is_min) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
    bool less = t.is_signed ? sign_extend(a, t.bits) < sign_extend(b, t.bits) : (a & t.mask) < (b & t.mask);
    return ((is_min == less) ? a : b) & t.mask;
  });
}
}  // namespace

void execute_IntMin(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  integer_min_max(in, active, warp, true);
}
void execute_IntMax(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  integer_min_max(in, active, warp, false);
}

void execute_Popc(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) { return std::uint64_t(std::popcount(a & t.mask)); });
}

void execute_Clz(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) {
    return std::uint64_t(std::countl_zero(a & t.mask) - (64 - static_cast<int>(t.bits)));
  });
}

void execute_Brev(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) {
    std::uint64_t r = 0;
    for (unsigned i = 0; i < t.bits; ++i) r |= ((a >> i) & 1) << (t.bits - 1 - i);
    return r;
  });
}

void execute_Bfind(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
    std::uint64_t v = a & t.mask;
    if (t.is_signed && ((v >> (t.bits - 1)) & 1)) v = ~v & t.mask;  // first bit that differs from the sign
    if (v == 0) return 0xffffffffu;
    unsigned position = 63 - static_cast<unsigned>(std::countl_zero(v));
    return in.clamp ? (t.bits - 1 - position) : position;
  });
}

namespace {
void dot_product(const Instruction& in, std::uint32_t active, Warp& warp, bool four_way) {
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    bool a_signed = ptx::is_signed_integer(in.type), b_signed = ptx::is_signed_integer(in.source_type);
    std::int64_t sum = static_cast<std::int64_t>(sign_extend(c, 32));
    if (!a_signed && !b_signed) sum = static_cast<std::int64_t>(c & 0xffffffffu);
    if (four_way) {
      for (unsigned i = 0; i < 4; ++i) {
        std::uint64_t ab = (a >> (8 * i)) & 0xff, bb = (b >> (8 * i)) & 0xff;
        sum += (a_signed ? sign_extend(ab, 8) : std::int64_t(ab)) * (b_signed ? sign_extend(bb, 8) : std::int64_t(bb));
      }
    } else {
      unsigned first_byte = in.mul_mode == MulMode::Hi ? 2 : 0;
      for (unsigned i = 0; i < 2; ++i) {
        std::uint64_t ah = (a >> (16 * i)) & 0xffff, bb = (b >> (8 * (first_byte + i))) & 0xff;
        sum += (a_signed ? sign_extend(ah, 16) : std::int64_t(ah)) * (b_signed ? sign_extend(bb, 8) : std::int64_t(bb));
      }
    }
    return static_cast<std::uint64_t>(sum) & 0xffffffffu;
  });
}
}  // namespace

void execute_Dp4a(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) { dot_product(in, active, warp, true); }
void execute_Dp2a(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) { dot_product(in, active, warp, false); }

// ---- logic and shift ------------------------------------------------------------------------

void execute_And(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return a & b & t.mask; });
}
void execute_Or(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return (a | b) & t.mask; });
}
void execute_Xor(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return (a ^ b) & t.mask; });
}
void execute_Not(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) { return ~a & t.mask; });
}
void execute_Cnot(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  unary(in, active, warp, [&](std::uint64_t a) { return std::uint64_t((a & t.mask) == 0); });
}

void execute_Lop3(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  quaternary(in, active, warp, [](std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t lut) {
    // PTX ISA 9.7.8.6: bit i of the result is lut[(a_i << 2) | (b_i << 1) | c_i].
    std::uint32_t r = 0;
    for (unsigned minterm = 0; minterm < 8; ++minterm) {
      if (!((lut >> minterm) & 1)) continue;
      std::uint32_t ta = (minterm & 4) ? std::uint32_t(a) : ~std::uint32_t(a);
      std::uint32_t tb = (minterm & 2) ? std::uint32_t(b) : ~std::uint32_t(b);
      std::uint32_t tc = (minterm & 1) ? std::uint32_t(c) : ~std::uint32_t(c);
      r |= ta & tb & tc;
    }
    return std::uint64_t(r);
  });
}

void execute_Shl(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
    std::uint32_t amount = static_cast<std::uint32_t>(b);
    return amount >= t.bits ? 0 : (a << amount) & t.mask;
  });
}

void execute_Shr(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
    std::uint32_t amount = std::min(static_cast<std::uint32_t>(b), t.bits);
    if (t.is_signed) return static_cast<std::uint64_t>(sign_extend(a, t.bits) >> std::min(amount, 63u)) & t.mask;
    return amount >= t.bits ? 0 : ((a & t.mask) >> amount);
  });
}

void execute_Shf(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  const bool left = static_cast<ptx::ShiftDirection>(in.mode) == ptx::ShiftDirection::Left;
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) -> std::uint64_t {
    // PTX ISA 9.7.8.10: the 64-bit {b : a} shifted; .clamp limits the amount to 32, .wrap takes it mod 32.
    std::uint32_t amount = in.clamp ? std::min<std::uint32_t>(std::uint32_t(c), 32) : (std::uint32_t(c) & 31);
    std::uint64_t pair = ((b & 0xffffffffu) << 32) | (a & 0xffffffffu);
    if (left) return amount == 32 ? (a & 0xffffffffu) : ((pair << amount) >> 32) & 0xffffffffu;
    return amount == 32 ? (b & 0xffffffffu) : (pair >> amount) & 0xffffffffu;
  });
}

void execute_Prmt(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  const auto mode = (in.present & ptx::kMode) ? static_cast<PermuteMode>(in.mode) : PermuteMode::Generic;
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    return permute(mode, std::uint32_t(a), std::uint32_t(b), std::uint32_t(c));
  });
}

void execute_Bfe(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) -> std::uint64_t {
    // PTX ISA 9.7.8.9: fields past the msb read the sign bit (signed) or zero.
    unsigned position = b & 0xff, length = c & 0xff, msb = t.bits - 1;
    if (length == 0) return 0;
    std::uint64_t sign = t.is_signed ? ((a >> std::min(position + length - 1, msb)) & 1) : 0;
    std::uint64_t r = 0;
    for (unsigned i = 0; i <= msb; ++i) {
      std::uint64_t bit = (i < length && position + i <= msb) ? ((a >> (position + i)) & 1) : sign;
      r |= bit << i;
    }
    return r;
  });
}

void execute_Bfi(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  quaternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
    unsigned position = c & 0xff, length = d & 0xff, msb = t.bits - 1;
    std::uint64_t r = b & t.mask;
    for (unsigned i = 0; i < length && position + i <= msb; ++i)
      r = (r & ~(1ull << (position + i))) | (((a >> i) & 1) << (position + i));
    return r;
  });
}

// ---- f32/f64 arithmetic ---------------------------------------------------------------------

void execute_FloatAdd(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_binary(in, active, warp, [](auto a, auto b) { return a + b; });
}
void execute_FloatSub(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_binary(in, active, warp, [](auto a, auto b) { return a - b; });
}
void execute_FloatMul(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_binary(in, active, warp, [](auto a, auto b) { return a * b; });
}

void execute_FloatFma(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  ScopedRounding rounding(in.rounding);
  if (in.type == ValueType::F32)
    return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
      float r = std::fma(load_f32(a, in.ftz), load_f32(b, in.ftz), load_f32(c, in.ftz));
      return store_f32(in.saturate ? saturate_unit(r) : r, in.ftz);
    });
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    double r = std::fma(load_f64(a), load_f64(b), load_f64(c));
    return store_f64(in.saturate ? saturate_unit(r) : r);
  });
}

void execute_FloatDiv(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  if (in.type == ValueType::F32 && in.approx) {
    // div.approx.f32 = a * (1/b); PTX ISA 9.7.3.8: for 2^126 < |b| < 2^128 the result is 0.
    return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
      float x = load_f32(a, in.ftz), y = load_f32(b, in.ftz);
      float reciprocal = 1.0f / y;
      if (std::isfinite(y) && std::fabs(y) > 0x1p126f) reciprocal = std::copysign(0.0f, y);
      return store_f32(x * reciprocal, in.ftz);
    });
  }
  // div.full.f32 (max 2 ulp error) and div.rn/rz/rm/rp: the correctly rounded quotient.
  float_binary(in, active, warp, [](auto a, auto b) { return a / b; });
}

namespace {
void float_min_max(const Instruction& in, std::uint32_t active, Warp& warp, bool is_min) {
  // PTX ISA 9.7.3.10/11: a NaN operand is ignored unless .NaN; two NaNs give the
  // canonical NaN; -0.0 is smaller than +0.0.
  auto pick = [&](auto x, auto y) {
    using T = decltype(x);
    if (std::isnan(x) || std::isnan(y)) {
      if (in.propagate_nan || (std::isnan(x) && std::isnan(y))) return std::numeric_limits<T>::quiet_NaN();
      return std::isnan(x) ? y : x;
    }
    if (x == y) return (std::signbit(x) == is_min) ? x : y;
    return ((x < y) == is_min) ? x : y;
  };
  if (in.type == ValueType::F32)
    return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
      return store_f32(pick(load_f32(a, in.ftz), load_f32(b, in.ftz)), in.ftz);
    });
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return store_f64(pick(load_f64(a), load_f64(b))); });
}
}  // namespace

void execute_FloatMin(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_min_max(in, active, warp, true);
}
void execute_FloatMax(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_min_max(in, active, warp, false);
}

void execute_FloatAbs(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  // Clears the sign bit (of the flushed value with .ftz); NaN payloads kept.
  unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
    if (in.type == ValueType::F32) return std::bit_cast<std::uint32_t>(load_f32(a, in.ftz)) & 0x7fffffffu;
    return a & ~(1ull << 63);
  });
}

void execute_FloatNeg(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
    if (in.type == ValueType::F32) return std::bit_cast<std::uint32_t>(load_f32(a, in.ftz)) ^ 0x80000000u;
    return a ^ (1ull << 63);
  });
}

void execute_Copysign(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  TypeTraits t(in.type);
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
    std::uint64_t sign_bit = in.type == ValueType::F32 ? 0x80000000ull : (1ull << 63);
    return ((b & ~sign_bit) | (a & sign_bit)) & t.mask;
  });
}

void execute_Testp(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  unary(in, active, warp, [&](std::uint64_t a) {
    double v = in.type == ValueType::F32 ? double(load_f32(a, false)) : load_f64(a);
    int kind = in.type == ValueType::F32 ? std::fpclassify(load_f32(a, false)) : std::fpclassify(v);
    bool result = false;
    switch (static_cast<TestProperty>(in.mode)) {
      case TestProperty::Finite: result = std::isfinite(v); break;
      case TestProperty::Infinite: result = std::isinf(v); break;
      case TestProperty::Number: result = !std::isnan(v); break;
      case TestProperty::NotANumber: result = std::isnan(v); break;
      case TestProperty::Normal: result = kind == FP_NORMAL; break;
      case TestProperty::Subnormal: result = kind == FP_SUBNORMAL; break;
    }
    return std::uint64_t(result);
  });
}

// Special functions: rcp/sqrt correctly rounded (within the ISA's approximation
// bounds for .approx), the rest through the host's libm.
void execute_Rcp(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return decltype(a)(1) / a; });
}
void execute_Sqrt(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return std::sqrt(a); });
}
void execute_Rsqrt(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return decltype(a)(1.0L / std::sqrt(static_cast<long double>(a))); });
}
void execute_Ex2(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return std::exp2(a); });
}
void execute_Lg2(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return std::log2(a); });
}
void execute_Sin(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return std::sin(a); });
}
void execute_Cos(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return std::cos(a); });
}
void execute_Tanh(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  float_unary(in, active, warp, [](auto a) { return std::tanh(a); });
}

// ---- half precision ---------------------------------------------------------------------------

void execute_HalfAdd(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_binary_op(in, active, warp, ir::BinaryOp::Add);
}
void execute_HalfSub(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_binary_op(in, active, warp, ir::BinaryOp::Sub);
}
void execute_HalfMul(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_binary_op(in, active, warp, ir::BinaryOp::Mul);
}
void execute_HalfMin(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_binary_op(in, active, warp, ir::BinaryOp::Min);
}
void execute_HalfMax(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_binary_op(in, active, warp, ir::BinaryOp::Max);
}
void execute_HalfFma(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_lanes_apply(in, active, warp, 3, [](arith::FloatFormat format, std::uint16_t a, std::uint16_t b, std::uint16_t c) {
    return arith::half_fma(format, a, b, c);
  });
}
void execute_HalfNeg(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_lanes_apply(in, active, warp, 1, [](arith::FloatFormat, std::uint16_t a, std::uint16_t, std::uint16_t) {
    return static_cast<std::uint16_t>(a ^ 0x8000u);
  });
}
void execute_HalfAbs(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  half_lanes_apply(in, active, warp, 1, [](arith::FloatFormat, std::uint16_t a, std::uint16_t, std::uint16_t) {
    return static_cast<std::uint16_t>(a & 0x7fffu);
  });
}

// ---- comparison and selection ---------------------------------------------------------------

void execute_Setp(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  std::uint64_t* p = reg(warp, in.operands[0].regs[0]);
  std::uint64_t* q = in.predicate_destination >= 0 ? reg(warp, static_cast<std::uint32_t>(in.predicate_destination)) : nullptr;
  const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
  const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
  const std::uint64_t* c = in.operand_count > 3 ? reg(warp, in.operands[3].regs[0]) : nullptr;
  bool c_negate = in.operand_count > 3 && in.operands[3].negate;
  for_each_lane(active, [&](unsigned lane) {
    bool t = evaluate_compare(in, in.type, a[lane], b[lane]);
    bool cv = c ? (((c[lane] & 1) != 0) != c_negate) : false;
    p[lane] = combine(t, in.bool_op, cv);
    if (q) q[lane] = combine(!t, in.bool_op, cv);
  });
}

void execute_Set(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
  const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
  const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
  const std::uint64_t* c = in.operand_count > 3 ? reg(warp, in.operands[3].regs[0]) : nullptr;
  bool c_negate = in.operand_count > 3 && in.operands[3].negate;
  std::uint64_t true_value = in.type == ValueType::F32 ? 0x3f800000u : width_mask(ptx::bit_width(in.type));
  for_each_lane(active, [&](unsigned lane) {
    bool t = evaluate_compare(in, in.source_type, a[lane], b[lane]);
    bool cv = c ? (((c[lane] & 1) != 0) != c_negate) : false;
    d[lane] = combine(t, in.bool_op, cv) ? true_value : 0;
  });
}

void execute_Selp(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    bool p = ((c & 1) != 0) != in.operands[3].negate;
    return p ? a : b;
  });
}

// ---- data movement and conversion -----------------------------------------------------------

void execute_Mov(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  const Operand& destination = in.operands[0];
  const Operand& source = in.operands[1];
  const unsigned bits = ptx::bit_width(in.type);
  if (destination.kind == Operand::Kind::Vector) {  // mov.b64 {lo, hi}, wide: unpack
    unsigned element_bits = bits / destination.count;
    const std::uint64_t* a = reg(warp, source.regs[0]);
    for_each_lane(active, [&](unsigned lane) {
      std::uint64_t value = a[lane];
      for (unsigned e = 0; e < destination.count; ++e)
        reg(warp, destination.regs[e])[lane] = (value >> (e * element_bits)) & width_mask(element_bits);
    });
    return;
  }
  std::uint64_t* d = reg(warp, destination.regs[0]);
  if (source.kind == Operand::Kind::Vector) {  // mov.b64 wide, {lo, hi}: pack
    unsigned element_bits = bits / source.count;
    for_each_lane(active, [&](unsigned lane) {
      std::uint64_t value = 0;
      for (unsigned e = 0; e < source.count; ++e)
        value |= (reg(warp, source.regs[e])[lane] & width_mask(element_bits)) << (e * element_bits);
      d[lane] = value;
    });
    return;
  }
  const std::uint64_t* a = reg(warp, source.regs[0]);
  const std::uint64_t mask = width_mask(bits);
  const bool negate = source.negate;
  for_each_lane(active, [&](unsigned lane) { d[lane] = negate ? ((a[lane] & 1) ^ 1) : (a[lane] & mask); });
}

void execute_Cvt(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  const ValueType to = in.type, from = in.source_type;
  const bool from_float = ptx::is_float(from), to_float = ptx::is_float(to);
  const unsigned to_bits = ptx::bit_width(to), from_bits = ptx::bit_width(from);
  unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
    // bf16 -> f32 appends 16 zero bits, a NaN's sign and payload included: ptxas
    // compiles cvt.f32.bf16 to a shift (SASS SHF.L.U32 by 16 on sm_90), and CUDA's
    // __bfloat162float is that shift on the host and before sm_90.
    if (from == ValueType::BF16 && to == ValueType::F32) return (a & 0xffffu) << 16;
    if (from_float) {
      long double value = decode_float(a, from, in.ftz);
      if (to_float) {
        if (in.rounding >= Rounding::NearestInt) value = round_integral(value, in.rounding);
        if (in.saturate) value = saturate_unit(value);
        if (in.relu && !std::isnan(value) && value < 0) value = 0;
        bool flush = in.ftz && to == ValueType::F32;
        std::uint64_t result = arith::round_to_format(value, float_format(to), to_arith(in.rounding), flush);
        return in.saturate_finite ? saturate_finite(result, float_format(to)) : result;
      }
      std::uint64_t integer = float_to_integer(round_integral(value, in.rounding), to);
      return ptx::is_signed_integer(to) ? static_cast<std::uint64_t>(sign_extend(integer, to_bits)) : integer;
    }
    if (to_float) {
      long double value = ptx::is_signed_integer(from) ? static_cast<long double>(sign_extend(a, from_bits))
                                                       : static_cast<long double>(a & width_mask(from_bits));
      if (in.saturate) value = saturate_unit(value);
      return arith::round_to_format(value, float_format(to), to_arith(in.rounding), in.ftz && to == ValueType::F32);
    }
    // A destination narrower than its register is sign- or zero-extended per the
    // destination type (PTX ISA 9.7.9.21); consumers read only the bits they need.
    std::uint64_t value = in.saturate ? saturate_integer(a, from, to)
                                      : (ptx::is_signed_integer(from) ? static_cast<std::uint64_t>(sign_extend(a, from_bits))
                                                                      : (a & width_mask(from_bits)));
    return ptx::is_signed_integer(to) ? static_cast<std::uint64_t>(sign_extend(value, to_bits))
                                      : value & width_mask(to_bits);
  });
}

void execute_CvtPackHalf(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  // cvt.rn.f16x2.f32 d, a, b: d = {b (low half), a (high half)} (PTX ISA 9.7.9.21).
  const arith::FloatFormat format = float_format(in.type);
  auto convert = [&](std::uint64_t bits) {
    long double value = load_f32(bits, in.ftz);
    if (in.relu && !std::isnan(value) && value < 0) value = 0;
    std::uint64_t result = arith::round_to_format(value, format, to_arith(in.rounding));
    return in.saturate_finite ? saturate_finite(result, format) : result;
  };
  binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return (convert(a) << 16) | convert(b); });
}

// ---- control flow: the scheduler (Emulator.cpp) handles bra/ret/exit/bar itself ------------

void execute_Control(Launch&, const Instruction&, std::uint32_t, Warp&) {}
void execute_Nop(Launch&, const Instruction&, std::uint32_t, Warp&) {}

const Semantics kSemantics[] = {
#define QUANTC_ROW(name, opcode, types, source_types, modifiers, operands, vectors, semantics, ...) &execute_##semantics,
    QUANTC_PTX_FORMS(QUANTC_ROW)
#undef QUANTC_ROW
};

}  // namespace quantc::runtime::emulator::detail
