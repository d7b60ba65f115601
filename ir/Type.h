// Value types of the quantc IR.
//
// A `ScalarType` is what one register lane or one buffer element holds. A `Type` is a
// scalar type or a short vector of one (Halide's Type: an element type and a lane
// count): `u32x4` is four u32 lanes, `f16x2` two f16 lanes packed in 32 bits. Lane 0
// is the lowest-addressed element in memory and the low bits of a packed register
// (PTX's `{a, b}` vector operands and `mov.b32 {lo, hi}`).
//
// Vector types exist where PTX has them: 2 or 4 lanes of a 32-bit scalar (u32, i32,
// f32: the .v2/.v4 loads and stores), and 2 lanes of a 16-bit float (f16x2, bf16x2:
// the packed half-precision registers of add/fma.rn.f16x2 and friends).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace quantc::ir {

// X-macro: (enumerator, printed name, size in bits). Listed once so the enum, the
// printer and the parser cannot drift apart.
#define QUANTC_SCALAR_TYPES(X) \
  X(Bool, "bool", 1)           \
  X(U8, "u8", 8)               \
  X(I8, "i8", 8)               \
  X(U16, "u16", 16)            \
  X(U32, "u32", 32)            \
  X(I32, "i32", 32)            \
  X(U64, "u64", 64)            \
  X(I64, "i64", 64)            \
  X(F16, "f16", 16)            \
  X(BF16, "bf16", 16)          \
  X(F32, "f32", 32)            \
  X(F64, "f64", 64)            \
  X(I4, "i4", 4)               \
  X(U4, "u4", 4)

enum class ScalarType : std::uint8_t {
#define QUANTC_ENUM(name, text, bits) name,
  QUANTC_SCALAR_TYPES(QUANTC_ENUM)
#undef QUANTC_ENUM
};

std::string_view to_string(ScalarType type);
/// Parses a printed scalar type name ("u32", "bf16", ...); nullopt when unknown.
std::optional<ScalarType> parse_scalar_type(std::string_view text);
/// Width of one value in bits (bool is 1; storage-only i4/u4 are 4).
constexpr unsigned bit_width(ScalarType type) {
  switch (type) {
#define QUANTC_CASE(name, text, bits) \
  case ScalarType::name:              \
    return bits;
    QUANTC_SCALAR_TYPES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return 0;
}
/// Bytes one element occupies in a buffer. Sub-byte types (i4/u4) cannot be buffer
/// elements and raise std::invalid_argument; bool occupies one byte.
unsigned byte_size(ScalarType type);
// The predicates are inline: passes ask them for every node they visit.
/// f16, bf16, f32, f64
constexpr bool is_float(ScalarType type) {
  return type == ScalarType::F16 || type == ScalarType::BF16 || type == ScalarType::F32 || type == ScalarType::F64;
}
/// signed or unsigned, excludes bool
constexpr bool is_integer(ScalarType type) { return type != ScalarType::Bool && !is_float(type); }
/// signed integers and floats
constexpr bool is_signed(ScalarType type) {
  return type == ScalarType::I8 || type == ScalarType::I32 || type == ScalarType::I64 || type == ScalarType::I4 ||
         is_float(type);
}
/// f16 or bf16: the 16-bit floats, which packed math handles two to a 32-bit register.
constexpr bool is_half(ScalarType type) { return type == ScalarType::F16 || type == ScalarType::BF16; }
/// i4/u4 exist only to describe packed storage; no expression may have these types.
constexpr bool is_storage_only(ScalarType type) { return type == ScalarType::I4 || type == ScalarType::U4; }

/// A scalar or vector value type. Implicitly built from a ScalarType (one lane), so
/// scalar code reads as before: `expr.type() == ScalarType::F32`.
class Type {
 public:
  constexpr Type(ScalarType element = ScalarType::U32, unsigned lanes = 1)  // NOLINT: implicit by design
      : element_(element), lanes_(static_cast<std::uint8_t>(lanes)) {}

  constexpr ScalarType element() const { return element_; }
  constexpr unsigned lanes() const { return lanes_; }
  constexpr bool is_scalar() const { return lanes_ == 1; }
  constexpr bool is_vector() const { return lanes_ > 1; }
  /// Total width in bits (lanes * element width).
  unsigned bits() const { return bit_width(element_) * lanes_; }
  /// Bytes in memory (lanes * byte_size(element)).
  unsigned bytes() const { return byte_size(element_) * lanes_; }
  constexpr Type with_lanes(unsigned lanes) const { return Type(element_, lanes); }
  constexpr Type with_element(ScalarType element) const { return Type(element, lanes_); }

  constexpr bool operator==(const Type&) const = default;
  constexpr bool operator==(ScalarType scalar) const { return lanes_ == 1 && element_ == scalar; }

 private:
  ScalarType element_;
  std::uint8_t lanes_;
};

/// "f32", "u32x4", "bf16x2".
std::string to_string(Type type);
/// Parses a printed type ("u32", "f16x2", ...); nullopt when unknown or not a valid vector.
std::optional<Type> parse_type(std::string_view text);
/// True for a scalar type that may hold values, and for the vector types above:
/// 2 or 4 lanes of u32/i32/f32, 2 lanes of f16/bf16.
bool is_valid_type(Type type);
/// Element predicates (a vector is float when its lanes are).
inline bool is_float(Type type) { return is_float(type.element()); }
inline bool is_integer(Type type) { return is_integer(type.element()); }
inline bool is_signed(Type type) { return is_signed(type.element()); }
inline bool is_half(Type type) { return is_half(type.element()); }
/// f16x2 or bf16x2: one 32-bit register holding two 16-bit floats.
inline bool is_packed_half(Type type) { return type.lanes() == 2 && is_half(type.element()); }

}  // namespace quantc::ir
