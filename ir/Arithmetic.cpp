#include "ir/Arithmetic.h"

#include <fmt/format.h>

namespace quantc::ir::arith {

static_assert(std::numeric_limits<long double>::digits >= 64,
              "exact rounding needs a long double that holds every 64-bit integer (x87 extended precision)");

FloatFormat format_of(ScalarType type) {
  switch (type) {
    case ScalarType::F16: return FloatFormat::binary16();
    case ScalarType::BF16: return FloatFormat::bfloat16();
    case ScalarType::F32: return FloatFormat::binary32();
    case ScalarType::F64: return FloatFormat::binary64();
    default: throw std::invalid_argument(fmt::format("{} is not a floating-point type", to_string(type)));
  }
}

std::uint64_t round_to_format(long double value, FloatFormat format, Rounding rounding, bool flush_subnormal) {
  const std::uint64_t sign = std::signbit(value) ? format.sign_bit() : 0;
  if (std::isnan(value)) return format.canonical_nan();
  long double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return sign | format.infinity();
  if (magnitude == 0) return sign;

  int binary_exponent = 0;
  std::frexp(magnitude, &binary_exponent);  // magnitude = m * 2^e, m in [0.5, 1)
  int exponent = std::max(binary_exponent - 1, format.min_exponent);
  // Scale so that one unit in the last place of the target is 1: exact in long double.
  long double scaled = std::ldexp(magnitude, format.mantissa_bits - exponent);
  long double integral = std::floor(scaled);
  long double fraction = scaled - integral;
  auto significand = static_cast<std::uint64_t>(integral);
  const bool negative = sign != 0;
  bool round_up = false;
  switch (rounding) {
    case Rounding::NearestEven: round_up = fraction > 0.5L || (fraction == 0.5L && (significand & 1)); break;
    case Rounding::TowardZero: break;
    case Rounding::TowardNegative: round_up = negative && fraction > 0; break;
    case Rounding::TowardPositive: round_up = !negative && fraction > 0; break;
  }
  if (round_up) ++significand;
  const std::uint64_t hidden = std::uint64_t{1} << format.mantissa_bits;
  if (significand == (hidden << 1)) {
    significand >>= 1;
    ++exponent;
  }
  if (exponent > format.max_exponent) {
    bool to_infinity = rounding == Rounding::NearestEven || (rounding == Rounding::TowardPositive && !negative) ||
                       (rounding == Rounding::TowardNegative && negative);
    return sign | (to_infinity ? format.infinity() : format.infinity() - 1);
  }
  if (significand < hidden) return flush_subnormal ? sign : (sign | significand);  // subnormal
  auto biased = static_cast<std::uint64_t>(exponent + format.max_exponent);
  return sign | (biased << format.mantissa_bits) | (significand - hidden);
}

long double decode(std::uint64_t bits, FloatFormat format) {
  const bool negative = (bits & format.sign_bit()) != 0;
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << format.mantissa_bits) - 1);
  const auto exponent_field =
      static_cast<int>((bits >> format.mantissa_bits) & static_cast<std::uint64_t>(2 * format.max_exponent + 1));
  long double magnitude;
  if (exponent_field == 2 * format.max_exponent + 1) {
    if (fraction != 0) return std::numeric_limits<long double>::quiet_NaN();
    magnitude = std::numeric_limits<long double>::infinity();
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<long double>(fraction), format.min_exponent - format.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<long double>(fraction | (std::uint64_t{1} << format.mantissa_bits)),
                           exponent_field - format.max_exponent - format.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

long double add_round_to_odd(long double x, long double y) {
  // TwoSum (Knuth): s + error == x + y exactly, with s = RN(x + y).
  long double s = x + y;
  long double y_virtual = s - x;
  long double x_virtual = s - y_virtual;
  long double error = (x - x_virtual) + (y - y_virtual);
  if (error == 0 || !std::isfinite(s)) return s;
  int exponent = 0;
  long double mantissa = std::frexp(std::fabs(s), &exponent);  // [0.5, 1)
  auto significand = static_cast<std::uint64_t>(std::ldexp(mantissa, std::numeric_limits<long double>::digits));
  if (significand & 1) return s;  // s is the odd neighbour of the exact sum
  return std::nextafter(s, error > 0 ? std::numeric_limits<long double>::infinity()
                                     : -std::numeric_limits<long double>::infinity());
}

namespace {

std::uint16_t round_half(long double value, FloatFormat format) {
  return static_cast<std::uint16_t>(round_to_format(value, format));
}

/// x + y correctly rounded to `format` (nearest even). Infinite operands follow IEEE.
std::uint16_t rounded_sum(long double x, long double y, FloatFormat format) {
  if (!std::isfinite(x) || !std::isfinite(y)) return round_half(x + y, format);
  return round_half(add_round_to_odd(x, y), format);
}

}  // namespace

std::uint16_t half_binary(FloatFormat format, BinaryOp op, std::uint16_t a, std::uint16_t b) {
  const long double x = decode(a, format), y = decode(b, format);
  switch (op) {
    case BinaryOp::Add: return rounded_sum(x, y, format);
    case BinaryOp::Sub: return rounded_sum(x, -y, format);
    case BinaryOp::Mul: return round_half(x * y, format);  // the product is exact in long double
    case BinaryOp::Div: return round_half(x / y, format);  // double rounding innocuous: 64 >= 2p + 2
    case BinaryOp::Min:
    case BinaryOp::Max: {
      bool a_nan = std::isnan(x), b_nan = std::isnan(y);
      if (a_nan || b_nan) return a_nan && b_nan ? static_cast<std::uint16_t>(format.canonical_nan()) : (a_nan ? b : a);
      bool take_a;
      if (x == y) take_a = (op == BinaryOp::Min) == static_cast<bool>(std::signbit(x));
      else take_a = (op == BinaryOp::Min) == (x < y);
      return take_a ? a : b;
    }
    default:
      throw std::invalid_argument(fmt::format("'{}' is not a 16-bit float arithmetic operator", to_string(op)));
  }
}

std::uint16_t half_fma(FloatFormat format, std::uint16_t a, std::uint16_t b, std::uint16_t c) {
  const long double product = decode(a, format) * decode(b, format);  // exact: 2p <= 22 bits
  return rounded_sum(product, decode(c, format), format);
}

// ---- bit-level entry points -----------------------------------------------------------

std::optional<std::uint64_t> evaluate_binary(BinaryOp op, ScalarType type, std::uint64_t a, std::uint64_t b) {
  return dispatch_scalar(type, [&]<class T>() -> std::optional<std::uint64_t> {
    T x = from_bits<T>(a), y = from_bits<T>(b);
    switch (op) {
#define QUANTC_CASE(name, text)                                                  \
  case BinaryOp::name:                                                           \
    if constexpr (binary_defined<BinaryOp::name, T>()) {                         \
      if constexpr ((BinaryOp::name == BinaryOp::Div || BinaryOp::name == BinaryOp::Rem) && kIsInteger<T>) { \
        if (y == T(0)) return std::nullopt;                                      \
      }                                                                          \
      return to_bits(binary<BinaryOp::name, T>(x, y));                           \
    }                                                                            \
    return std::nullopt;
      QUANTC_BINARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
    }
    return std::nullopt;
  });
}

std::optional<std::uint64_t> evaluate_unary(UnaryOp op, ScalarType type, std::uint64_t value) {
  return dispatch_scalar(type, [&]<class T>() -> std::optional<std::uint64_t> {
    switch (op) {
#define QUANTC_CASE(name, text)                                        \
  case UnaryOp::name:                                                  \
    if constexpr (unary_defined<UnaryOp::name, T>()) {                 \
      return to_bits(unary<UnaryOp::name, T>(from_bits<T>(value)));    \
    }                                                                  \
    return std::nullopt;
      QUANTC_UNARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
    }
    return std::nullopt;
  });
}

std::uint64_t evaluate_cast(ScalarType to, ScalarType from, std::uint64_t value) {
  return dispatch_scalar(from, [&]<class From>() {
    return dispatch_scalar(to, [&]<class To>() { return to_bits(convert<To, From>(from_bits<From>(value))); });
  });
}

std::optional<std::uint64_t> evaluate_fma(ScalarType type, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return dispatch_scalar(type, [&]<class T>() -> std::optional<std::uint64_t> {
    if constexpr (kIsFloat<T>) return to_bits(fma(from_bits<T>(a), from_bits<T>(b), from_bits<T>(c)));
    return std::nullopt;
  });
}

}  // namespace quantc::ir::arith
