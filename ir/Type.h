// Element and value types of the quantc IR.
//
// A `ScalarType` is what a register or a buffer element holds. `DataType` adds the
// quantized storage descriptor used by typed op specs (vyre-libs 0.6.3
// `DataType::Quantized`):
// a quantized type never appears as the type of an expression, only as metadata that
// an op constructor checks before it builds a program over physical (u32/u8) words.
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
/// Parses a printed type name ("u32", "f32", ...); nullopt when unknown.
std::optional<ScalarType> parse_scalar_type(std::string_view text);
/// Width of one value in bits (bool is 1; storage-only i4/u4 are 4).
unsigned bit_width(ScalarType type);
/// Bytes one element occupies in a buffer. Sub-byte types (i4/u4) cannot be buffer
/// elements and raise std::invalid_argument; bool occupies one byte.
unsigned byte_size(ScalarType type);
bool is_float(ScalarType type);
bool is_integer(ScalarType type);  // signed or unsigned, excludes bool
bool is_signed(ScalarType type);   // signed integers and floats
/// i4/u4 exist only to describe packed storage; no expression may have these types.
bool is_storage_only(ScalarType type);

/// How a quantized tensor's scale is shared (vyre-spec QuantizationScale).
struct QuantizationScale {
  enum class Kind : std::uint8_t { PerTensor, PerChannel, PerGroup };
  Kind kind = Kind::PerTensor;
  std::uint32_t group_size = 0;  // elements per group; meaningful for PerGroup only
  static QuantizationScale per_group(std::uint32_t group_size) { return {Kind::PerGroup, group_size}; }
  bool operator==(const QuantizationScale&) const = default;
};

/// How a quantized tensor's zero point is shared (vyre-spec QuantizationZeroPoint).
struct QuantizationZeroPoint {
  enum class Kind : std::uint8_t { None, PerTensor, PerChannel, PerGroup };
  Kind kind = Kind::None;
  std::uint32_t group_size = 0;  // elements per group; meaningful for PerGroup only
  static QuantizationZeroPoint per_group(std::uint32_t group_size) { return {Kind::PerGroup, group_size}; }
  bool operator==(const QuantizationZeroPoint&) const = default;
};

/// Quantized storage: `storage` codes plus how scales and zero points are shared.
struct QuantizedType {
  ScalarType storage = ScalarType::I4;
  QuantizationScale scale;
  QuantizationZeroPoint zero_point;
  bool operator==(const QuantizedType&) const = default;
};

/// A scalar type, or a quantized storage descriptor. Cheap to copy and compare.
class DataType {
 public:
  constexpr DataType(ScalarType scalar = ScalarType::U32) : scalar_(scalar) {}  // NOLINT: implicit by design
  static DataType quantized(QuantizedType quantized) {
    DataType type(quantized.storage);
    type.quantized_ = quantized;
    return type;
  }
  /// The scalar type; for a quantized type, its storage type.
  ScalarType scalar() const { return scalar_; }
  bool is_quantized() const { return quantized_.has_value(); }
  const QuantizedType& quantized_info() const { return *quantized_; }
  bool operator==(const DataType&) const = default;
  bool operator==(ScalarType other) const { return !quantized_ && scalar_ == other; }

 private:
  ScalarType scalar_;
  std::optional<QuantizedType> quantized_;
};

/// "f32", or "quantized<i4, scale=per_group(64), zero_point=per_group(64)>".
std::string to_string(const DataType& type);

}  // namespace quantc::ir
