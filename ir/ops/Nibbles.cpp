#include "ir/ops/Nibbles.h"

#include <cmath>

namespace quantc::ir::ops {

Expr nibble_at_shift(const Expr& word, const Expr& shift) { return (word >> shift) & 0xFu; }

Expr nibble(const Expr& word, const Expr& position) { return nibble_at_shift(word, position * 4u); }

Expr shuffled_code(const Expr& book, const Expr& word, std::uint32_t position) {
  Expr lane = position == 0 ? (word & 31u) : position == 7 ? (word >> 28u) : ((word >> (4 * position)) & 31u);
  return subgroup_shuffle(book, lane);
}

Expr signed_nibble(const Expr& word, std::uint32_t position) {
  return cast(ScalarType::I32, word << double(28 - 4 * position)) >> 28.0;
}

Expr byte_buffer_nibble(Body& body, const BufferRef& bytes, const Expr& element_value) {
  Expr element = body.let("element", element_value);
  Expr byte = body.let("byte", cast(ScalarType::U32, bytes[element >> 1.0]));
  return nibble_at_shift(byte, (element & 1.0) << 2.0);
}

float nibble_bias(std::uint32_t position) { return std::ldexp(1.0f, 23 - 4 * static_cast<int>(position)); }

Expr nibble_plus_bias(const Expr& source, std::uint32_t position) {
  const std::uint32_t exponent_bits = (150u - 4 * position) << 23;  // 2^(23-4p) as f32 bits
  return bitcast(ScalarType::F32, (source & u32(0xFu << (4 * position))) | u32(exponent_bits));
}

}  // namespace quantc::ir::ops
