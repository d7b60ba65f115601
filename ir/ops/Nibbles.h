// Unpacking 4-bit codes inside op constructors: the one place that builds the IR which
// extracts a nibble, shared by every op family that reads packed 4-bit data.
//
// Each helper builds exactly the expression tree its callers built before it existed
// (same operators, operand order, literal types and let names), so the IR and PTX of
// every op are unchanged (tests/golden/ pins them).
#pragma once

#include <cstdint>

#include "ir/Builder.h"

namespace quantc::ir::ops {

/// 4-bit codes in a u32 word (code i at bits 4i..4i+3).
inline constexpr std::uint32_t kNibblesPerWord = 8;

/// 2^23 as f32 bits: OR-ing an integer q < 2^23 into the mantissa gives the f32 2^23 + q
/// exactly, so bitcast(kMagicBits | q) - kMagic is q with no conversion instruction.
inline constexpr std::uint32_t kMagicBits = 0x4B000000u;
inline constexpr float kMagic = 8388608.0f;

/// Unsigned nibble at bit `shift` of `word`: `(word >> shift) & 0xF`, in word's type.
Expr nibble_at_shift(const Expr& word, const Expr& shift);

/// Unsigned nibble `position` (0..7) of a u32 word, value i at bits 4i..4i+3:
/// `(word >> (position * 4)) & 0xF`.
Expr nibble(const Expr& word, const Expr& position);

/// Signed nibble `position` (0..7) of a u32 word, sign-extended to i32: the nibble is
/// shifted to the top of the word, then back arithmetically,
/// `i32(word << (28 - 4*position)) >> 28`.
Expr signed_nibble(const Expr& word, std::uint32_t position);

/// Element `element` of a two-per-byte u8 buffer (element 2b in the low nibble of byte b,
/// 2b+1 in the high one), as an unsigned u32 nibble. Binds the lets `element` and
/// `byte` (the byte widened to u32) in `body`:
/// `(byte >> ((element & 1) << 2)) & 0xF` with byte = u32(bytes[element >> 1]).
Expr byte_buffer_nibble(Body& body, const BufferRef& bytes, const Expr& element);

/// The bias nibble_plus_bias adds at `position` (0..4): 2^(23 - 4*position).
float nibble_bias(std::uint32_t position);

/// Nibble `position` (0..4) of `source` (q at bits 4p..4p+3) as the exact f32
/// nibble_bias(p) + q: bitcast((source & (0xF << 4p)) | bits(2^(23-4p))), one lop3 and no
/// shift, because at exponent 23 - 4p the mantissa bit 4p weighs 1 (Marlin's and
/// TensorRT-LLM's lop3 dequantization, at five exponents). Subtracting nibble_bias(p) (+ an
/// offset such as 8) is exact. Nibbles 5..7 of a word decode the same from word >> 16 at
/// positions 1..3.
Expr nibble_plus_bias(const Expr& source, std::uint32_t position);

/// The value of nibble `position` (0..7) of u32 `word` in a code book held one entry a
/// lane, entry i in lanes i and i + 16 (`book` = table[lane & 15], as NF4's and FP4's
/// kernels build it): a shuffle from lane (word >> 4p) & 31. Bit 4, the next nibble's low
/// bit, selects a lane holding the same entry, and the `& 31` (which makes the IR
/// shuffle's lane provably < 32) costs no instruction, as shfl.sync reads only bits 4..0
/// of the lane (PTX ISA, shfl.sync); nibble 0 needs no shift and nibble 7 no mask. All 32
/// lanes must run the shuffle.
Expr shuffled_code(const Expr& book, const Expr& word, std::uint32_t position);

}  // namespace quantc::ir::ops
