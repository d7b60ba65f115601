// Element and value types of the quantc IR: a `ScalarType` is what a register or a
// buffer element holds.
#pragma once

#include <cstdint>
#include <optional>
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

}  // namespace quantc::ir
