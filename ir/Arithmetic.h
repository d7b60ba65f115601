// The one definition of the IR's scalar arithmetic, in the spirit of tinygrad's
// `exec_alu`: what every operator computes on every scalar type. The reference
// interpreter instantiates these templates in its lane kernels, constant folding
// evaluates literals through the bit-level entry points at the bottom, and the PTX
// emulator computes the f16/bf16 instructions with the same 16-bit functions, so the
// three cannot disagree.
//
// Semantics (ir/IR.h repeats them for IR users):
// - Integers wrap modulo 2^bits. Div/Rem truncate; the one overflowing quotient
//   MIN / -1 wraps to MIN with remainder 0 (PTX div.s32). Division by zero is the
//   caller's business (the interpreter raises an error; folding leaves it alone).
//   Shl/Shr by >= the bit width give 0 (Shr of a negative signed value gives -1), the
//   amount read as unsigned, as PTX's clamped shl/shr do.
// - Floats are IEEE 754 binary16 (f16), bfloat16 (bf16), binary32 (f32) and binary64
//   (f64) with round-to-nearest-even after every operation; Fma rounds once. Every
//   arithmetic result that is NaN is the format's canonical NaN (sign clear, every
//   exponent and fraction bit set: 0x7fff, 0x7fffffff, 0x7fffffffffffffff), as NVIDIA
//   GPUs produce. Neg and Abs change the sign bit only (NaN payloads kept). Round (f32
//   and f64 only) gives the nearest integral value, ties to even, keeping the sign of a
//   zero result (-0.4 -> -0), as PTX cvt.rni.f32.f32 does. Min/Max
//   return the non-NaN operand when exactly one is NaN, the canonical NaN for two, and
//   order -0 below +0 (PTX min/max). Subnormals are kept (no flush to zero).
//   Comparisons are false when an operand is NaN, except Ne, which is true.
// - Conversions: float -> integer truncates toward zero and saturates, NaN -> 0
//   (cvt.rzi.sat); integer -> float and float -> narrower float round to nearest even
//   (cvt.rn), NaN -> canonical NaN, except bf16 -> f32, which appends 16 zero bits and
//   so keeps a NaN's sign and payload (ptxas compiles cvt.f32.bf16 to that shift, and
//   CUDA's __bfloat162float is it); integer -> integer truncates or extends by the
//   source's signedness; x -> bool is x != 0 (true for NaN); bool -> number is 1 or 0.
//
// How the 16-bit formats are computed exactly on the host: operands are decoded into
// long double (64-bit significand, which holds every f16/bf16 product exactly). A sum
// is computed with Knuth's TwoSum, so its rounding error is known exactly, and rounded
// to odd (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
// algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008); rounding that
// value to the 16-bit format gives the correctly rounded result because 64 >= p + 2.
// Quotients are rounded to long double first, innocuous because 64 >= 2p + 2
// (Figueroa, "When is double rounding innocuous?", ACM SIGNUM Newsletter 30(3), 1995).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ir/Operators.h"
#include "ir/Type.h"

namespace quantc::ir::arith {

// ---- binary floating-point formats and exact rounding ------------------------------

/// IEEE 754 rounding-direction attributes (section 4.3), PTX's .rn/.rz/.rm/.rp.
enum class Rounding : std::uint8_t { NearestEven, TowardZero, TowardNegative, TowardPositive };

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
  /// The canonical NaN: sign clear, every exponent and fraction bit set.
  constexpr std::uint64_t canonical_nan() const {
    return bits == 64 ? ~std::uint64_t{0} >> 1 : (std::uint64_t{1} << (bits - 1)) - 1;
  }
  constexpr std::uint64_t sign_bit() const { return std::uint64_t{1} << (bits - 1); }
  /// The encoding of +infinity.
  constexpr std::uint64_t infinity() const {
    return static_cast<std::uint64_t>(2 * max_exponent + 1) << mantissa_bits;
  }
  bool operator==(const FloatFormat&) const = default;
};

/// The format of a float scalar type (f16, bf16, f32, f64); std::invalid_argument otherwise.
FloatFormat format_of(ScalarType type);

/// Rounds `value` into `format` with `rounding`. Exact for every `value` a long double
/// holds (which includes every 64-bit integer and every binary64). Overflow gives
/// infinity or the largest finite value as IEEE 754 prescribes for the direction; NaN
/// gives the canonical NaN; `flush_subnormal` turns a subnormal result into a zero of
/// the same sign (PTX .ftz). Returns the encoding in the low `format.bits` bits.
std::uint64_t round_to_format(long double value, FloatFormat format, Rounding rounding = Rounding::NearestEven,
                              bool flush_subnormal = false);

/// The exact value of an encoding of `format` (NaNs decode to a quiet NaN).
long double decode(std::uint64_t bits, FloatFormat format);

/// True when the encoding is a NaN of `format`.
constexpr bool is_nan_encoding(std::uint64_t bits, FloatFormat format) {
  std::uint64_t magnitude = bits & (format.sign_bit() - 1);
  return magnitude > format.infinity();
}

/// x + y rounded to odd in long double: exactly x + y when representable, else the
/// neighbour of the exact sum whose last significand bit is 1. Finite operands only.
long double add_round_to_odd(long double x, long double y);

// ---- 16-bit formats ------------------------------------------------------------------

/// Storage of an f16 / bf16 value; arithmetic goes through half_binary / half_fma.
struct Float16 {
  std::uint16_t bits;  // no initializer: a trivial type, copied with memcpy like the integers
  static constexpr FloatFormat format() { return FloatFormat::binary16(); }
  bool operator==(const Float16&) const = default;
};
struct BFloat16 {
  std::uint16_t bits;
  static constexpr FloatFormat format() { return FloatFormat::bfloat16(); }
  bool operator==(const BFloat16&) const = default;
};

/// Correctly rounded (nearest even, canonical NaN) arithmetic on binary16/bfloat16
/// encodings. `op` is Add, Sub, Mul, Div, Min or Max (std::invalid_argument otherwise).
std::uint16_t half_binary(FloatFormat format, BinaryOp op, std::uint16_t a, std::uint16_t b);
/// a * b + c with a single rounding (nearest even, canonical NaN).
std::uint16_t half_fma(FloatFormat format, std::uint16_t a, std::uint16_t b, std::uint16_t c);

// ---- the C++ type of each scalar type ---------------------------------------------------

template <class T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool kIsFloat = kIsHalf<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// Calls `visitor.template operator()<T>()` with T the C++ type holding a value of
/// `type`: bool, uint8_t, int8_t, uint16_t, uint32_t, int32_t, uint64_t, int64_t,
/// Float16, BFloat16, float, double. Storage-only i4/u4 raise std::invalid_argument.
template <class Visitor>
decltype(auto) dispatch_scalar(ScalarType type, Visitor&& visitor) {
  switch (type) {
    case ScalarType::Bool: return visitor.template operator()<bool>();
    case ScalarType::U8: return visitor.template operator()<std::uint8_t>();
    case ScalarType::I8: return visitor.template operator()<std::int8_t>();
    case ScalarType::U16: return visitor.template operator()<std::uint16_t>();
    case ScalarType::U32: return visitor.template operator()<std::uint32_t>();
    case ScalarType::I32: return visitor.template operator()<std::int32_t>();
    case ScalarType::U64: return visitor.template operator()<std::uint64_t>();
    case ScalarType::I64: return visitor.template operator()<std::int64_t>();
    case ScalarType::F16: return visitor.template operator()<Float16>();
    case ScalarType::BF16: return visitor.template operator()<BFloat16>();
    case ScalarType::F32: return visitor.template operator()<float>();
    case ScalarType::F64: return visitor.template operator()<double>();
    case ScalarType::I4:
    case ScalarType::U4: break;
  }
  throw std::invalid_argument("storage-only type " + std::string(to_string(type)) +
                              " cannot hold a value; unpack it into u32 first");
}

/// A value from its Literal encoding (integers sign- or zero-extended to 64 bits,
/// floats as IEEE bits, bool as 0/1) and back.
template <class T>
T from_bits(std::uint64_t bits) {
  if constexpr (std::is_same_v<T, bool>) return bits != 0;
  else if constexpr (kIsHalf<T>) return T{static_cast<std::uint16_t>(bits)};
  else if constexpr (std::is_same_v<T, float>) return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
  else if constexpr (std::is_same_v<T, double>) return std::bit_cast<double>(bits);
  else return static_cast<T>(bits);
}
template <class T>
std::uint64_t to_bits(T value) {
  if constexpr (std::is_same_v<T, bool>) return value ? 1 : 0;
  else if constexpr (kIsHalf<T>) return value.bits;
  else if constexpr (std::is_same_v<T, float>) return std::bit_cast<std::uint32_t>(value);
  else if constexpr (std::is_same_v<T, double>) return std::bit_cast<std::uint64_t>(value);
  else if constexpr (std::is_signed_v<T>) return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
  else return static_cast<std::uint64_t>(value);
}

/// The exact value of a float as long double.
template <class T>
long double exact_value(T value) {
  if constexpr (kIsHalf<T>) return decode(value.bits, T::format());
  else return static_cast<long double>(value);
}

template <class T>
T canonical_nan() {
  if constexpr (kIsHalf<T>) return T{static_cast<std::uint16_t>(T::format().canonical_nan())};
  else if constexpr (std::is_same_v<T, float>) return std::bit_cast<float>(std::uint32_t{0x7fffffff});
  else return std::bit_cast<double>(std::uint64_t{0x7fffffffffffffff});
}

template <class T>
bool is_nan(T value) {
  if constexpr (kIsHalf<T>) return is_nan_encoding(value.bits, T::format());
  else if constexpr (kIsFloat<T>) return std::isnan(value);
  else return false;
}

/// NaN results become the canonical NaN (host f32/f64 arithmetic keeps payloads).
template <class T>
T canonicalize(T value) {
  return is_nan(value) ? canonical_nan<T>() : value;
}

// ---- operations -----------------------------------------------------------------------

/// Whether `op` is defined on operands of C++ type T (the IR's typing rules).
template <BinaryOp OP, class T>
constexpr bool binary_defined() {
  constexpr bool boolean = std::is_same_v<T, bool>;
  switch (OP) {
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr: return boolean;
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor: return !kIsFloat<T>;
    case BinaryOp::Rem:
    case BinaryOp::Shl:
    case BinaryOp::Shr: return kIsInteger<T>;
    case BinaryOp::Eq:
    case BinaryOp::Ne: return true;
    default: return !boolean;
  }
}

namespace detail {

/// PTX min/max on floats: a NaN operand is ignored (two NaNs give the canonical NaN)
/// and -0 orders below +0.
template <bool kMin, class T>
T float_min_max(T a, T b) {
  bool a_nan = is_nan(a), b_nan = is_nan(b);
  if (a_nan || b_nan) return a_nan && b_nan ? canonical_nan<T>() : (a_nan ? b : a);
  long double x = exact_value(a), y = exact_value(b);
  if (x == y) {  // equal, possibly zeros of different sign
    bool a_negative = std::signbit(x);
    return (kMin ? a_negative : !a_negative) ? a : b;
  }
  return (kMin ? x < y : x > y) ? a : b;
}

template <class T>
T float_sign_bit_op(T value, bool negate) {
  constexpr int kBits = kIsHalf<T> ? 16 : static_cast<int>(sizeof(T) * 8);
  constexpr std::uint64_t kSign = std::uint64_t{1} << (kBits - 1);
  std::uint64_t bits = to_bits(value);
  return from_bits<T>(negate ? bits ^ kSign : bits & ~kSign);
}

/// Integer arithmetic in an unsigned type at least 32 bits wide, so it wraps modulo
/// 2^bits without signed-overflow UB or promotion to int.
template <class T>
using Wide = std::conditional_t<sizeof(T) <= 4, std::uint32_t, std::uint64_t>;

}  // namespace detail

/// The result of `a op b`: T, or bool for comparisons and logical operators. Integer
/// Div/Rem by zero is undefined here: callers check the divisor first.
template <BinaryOp OP, class T>
auto binary(T a, T b) {
  static_assert(binary_defined<OP, T>(), "operator not defined on this type");
  if constexpr (OP == BinaryOp::LogicalAnd) return a && b;
  else if constexpr (OP == BinaryOp::LogicalOr) return a || b;
  else if constexpr (OP == BinaryOp::Eq || OP == BinaryOp::Ne || OP == BinaryOp::Lt || OP == BinaryOp::Le ||
                     OP == BinaryOp::Gt || OP == BinaryOp::Ge) {
    if constexpr (kIsFloat<T>) {
      long double x = exact_value(a), y = exact_value(b);  // NaN compares unordered
      if constexpr (OP == BinaryOp::Eq) return x == y;
      else if constexpr (OP == BinaryOp::Ne) return !(x == y);
      else if constexpr (OP == BinaryOp::Lt) return x < y;
      else if constexpr (OP == BinaryOp::Le) return x <= y;
      else if constexpr (OP == BinaryOp::Gt) return x > y;
      else return x >= y;
    } else {
      if constexpr (OP == BinaryOp::Eq) return a == b;
      else if constexpr (OP == BinaryOp::Ne) return a != b;
      else if constexpr (OP == BinaryOp::Lt) return a < b;
      else if constexpr (OP == BinaryOp::Le) return a <= b;
      else if constexpr (OP == BinaryOp::Gt) return a > b;
      else return a >= b;
    }
  } else if constexpr (OP == BinaryOp::BitAnd) return static_cast<T>(a & b);
  else if constexpr (OP == BinaryOp::BitOr) return static_cast<T>(a | b);
  else if constexpr (OP == BinaryOp::BitXor) return static_cast<T>(a ^ b);
  else if constexpr (kIsHalf<T>) {
    return T{half_binary(T::format(), OP, a.bits, b.bits)};
  } else if constexpr (kIsFloat<T>) {
    // One rounding per operation: this header must be compiled with -ffp-contract=off
    // wherever it is instantiated (x86-64 SSE has no excess precision).
    if constexpr (OP == BinaryOp::Add) return canonicalize(static_cast<T>(a + b));
    else if constexpr (OP == BinaryOp::Sub) return canonicalize(static_cast<T>(a - b));
    else if constexpr (OP == BinaryOp::Mul) return canonicalize(static_cast<T>(a * b));
    else if constexpr (OP == BinaryOp::Div) return canonicalize(static_cast<T>(a / b));
    else if constexpr (OP == BinaryOp::Min) return detail::float_min_max<true>(a, b);
    else return detail::float_min_max<false>(a, b);
  } else {
    using W = detail::Wide<T>;
    using U = std::make_unsigned_t<T>;
    constexpr unsigned kBits = sizeof(T) * 8;
    if constexpr (OP == BinaryOp::Add) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    else if constexpr (OP == BinaryOp::Sub) return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
    else if constexpr (OP == BinaryOp::Mul) return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    else if constexpr (OP == BinaryOp::Div || OP == BinaryOp::Rem) {
      if constexpr (std::is_signed_v<T>) {
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return OP == BinaryOp::Div ? a : T(0);
      }
      return OP == BinaryOp::Div ? static_cast<T>(a / b) : static_cast<T>(a % b);
    } else if constexpr (OP == BinaryOp::Min) return a < b ? a : b;
    else if constexpr (OP == BinaryOp::Max) return a > b ? a : b;
    else if constexpr (OP == BinaryOp::Shl) {
      U amount = static_cast<U>(b);  // a negative amount reads as huge: clamped like PTX shl
      if (amount >= kBits) return T(0);
      return static_cast<T>(static_cast<W>(static_cast<U>(a)) << amount);
    } else {
      U amount = static_cast<U>(b);
      if (amount >= kBits) return (std::is_signed_v<T> && a < T(0)) ? static_cast<T>(-1) : T(0);
      return static_cast<T>(a >> amount);  // arithmetic for signed types (C++20)
    }
  }
}

template <UnaryOp OP, class T>
constexpr bool unary_defined() {
  if constexpr (std::is_same_v<T, bool>) return OP == UnaryOp::Not;
  else if constexpr (OP == UnaryOp::Round) return std::is_same_v<T, float> || std::is_same_v<T, double>;
  else if constexpr (kIsFloat<T>) return OP != UnaryOp::Not;
  else return true;
}

template <UnaryOp OP, class T>
T unary(T value) {
  static_assert(unary_defined<OP, T>(), "operator not defined on this type");
  if constexpr (OP == UnaryOp::Not) {
    if constexpr (std::is_same_v<T, bool>) return !value;
    else return static_cast<T>(~value);
  } else if constexpr (OP == UnaryOp::Round) {
    // The integral value nearest to `value`, ties to even (cvt.rni.f32.f32): std::rint in
    // the default rounding mode, which quantc never changes; a NaN gives the canonical NaN.
    if (std::isnan(value)) return from_bits<T>(std::is_same_v<T, float> ? 0x7fffffffu : 0x7fffffffffffffffull);
    return std::rint(value);
  } else if constexpr (kIsFloat<T>) {
    return detail::float_sign_bit_op(value, OP == UnaryOp::Neg);
  } else {
    using W = detail::Wide<T>;
    T negated = static_cast<T>(W(0) - static_cast<W>(value));  // wraps: -MIN == MIN
    if constexpr (OP == UnaryOp::Neg) return negated;
    else if constexpr (std::is_signed_v<T>) return value < T(0) ? negated : value;
    else return value;
  }
}

namespace detail {

/// Float -> integer: round toward zero, saturate, NaN -> 0 (PTX cvt.rzi.sat).
template <class To>
To saturate_to_integer(long double value) {
  if (std::isnan(value)) return To(0);
  value = std::trunc(value);
  // Both limits are exact: 0 or -2^(n-1), and 2^n or 2^(n-1).
  const long double lowest = static_cast<long double>(std::numeric_limits<To>::min());
  const long double above_highest = std::ldexp(1.0L, std::numeric_limits<To>::digits);
  if (value < lowest) return std::numeric_limits<To>::min();
  if (value >= above_highest) return std::numeric_limits<To>::max();
  return static_cast<To>(value);
}

}  // namespace detail

/// `value` converted to To by the rules in the file comment.
template <class To, class From>
To convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsFloat<From>) return !(exact_value(value) == 0);  // NaN -> true
    else return value != 0;
  } else if constexpr (std::is_same_v<From, bool>) {
    return convert<To>(std::uint32_t{value ? 1u : 0u});
  } else if constexpr (kIsFloat<From> && !kIsFloat<To>) {
    return detail::saturate_to_integer<To>(exact_value(value));
  } else if constexpr (kIsHalf<To>) {
    long double exact;
    if constexpr (kIsFloat<From>) exact = exact_value(value);
    else exact = static_cast<long double>(value);
    return To{static_cast<std::uint16_t>(round_to_format(exact, To::format()))};
  } else if constexpr (std::is_same_v<From, BFloat16> && std::is_same_v<To, float>) {
    return std::bit_cast<float>(std::uint32_t{value.bits} << 16);  // NaN payloads kept
  } else if constexpr (kIsHalf<From>) {
    return canonicalize(static_cast<To>(exact_value(value)));  // exact in f32 and f64
  } else if constexpr (kIsFloat<To>) {
    // Integer -> float rounds to nearest even; f64 -> f32 too (x86-64 conversions).
    return canonicalize(static_cast<To>(value));
  } else {
    return static_cast<To>(value);  // integer -> integer: modular
  }
}

/// a * b + c with one rounding (floats only).
template <class T>
T fma(T a, T b, T c) {
  static_assert(kIsFloat<T>, "fma takes floats");
  if constexpr (kIsHalf<T>) return T{half_fma(T::format(), a.bits, b.bits, c.bits)};
  else return canonicalize(static_cast<T>(std::fma(a, b, c)));
}

// ---- the same operations on Literal encodings, for constant folding --------------------

/// `a op b` for operands of scalar `type`, or nullopt when the operation traps
/// (integer division or remainder by zero) or is not defined on the type.
std::optional<std::uint64_t> evaluate_binary(BinaryOp op, ScalarType type, std::uint64_t a, std::uint64_t b);
/// nullopt when `op` is not defined on `type`.
std::optional<std::uint64_t> evaluate_unary(UnaryOp op, ScalarType type, std::uint64_t value);
std::uint64_t evaluate_cast(ScalarType to, ScalarType from, std::uint64_t value);
/// Floats only; nullopt for other types.
std::optional<std::uint64_t> evaluate_fma(ScalarType type, std::uint64_t a, std::uint64_t b, std::uint64_t c);

}  // namespace quantc::ir::arith
