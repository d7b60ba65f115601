#include "ir/ops/Nibbles.h"

namespace quantc::ir::ops {

Expr nibble_at_shift(const Expr& word, const Expr& shift) { return (word >> shift) & 0xFu; }

Expr nibble(const Expr& word, const Expr& position) { return nibble_at_shift(word, position * 4u); }

Expr signed_nibble(const Expr& word, std::uint32_t position) {
  return cast(ScalarType::I32, word << double(28 - 4 * position)) >> 28.0;
}

Expr byte_buffer_nibble(Body& body, const BufferRef& bytes, const Expr& element_value) {
  Expr element = body.let("element", element_value);
  Expr byte = body.let("byte", cast(ScalarType::U32, bytes[element >> 1.0]));
  return nibble_at_shift(byte, (element & 1.0) << 2.0);
}

}  // namespace quantc::ir::ops
