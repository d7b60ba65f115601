#include "ir/ops/TensorDecode.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "ir/Arithmetic.h"

namespace quantc::ir::ops {

namespace {
/// The 16-bit pattern whose low 4 mantissa bits are free: 1024 (f16 0x6400, ulp 1) or
/// 128 (bf16 0x4300, ulp 1); OR-ing a code q gives 1024 + q or 128 + q exactly.
std::uint32_t half_magic(ScalarType input) { return input == ScalarType::F16 ? 0x6400u : 0x4300u; }
}  // namespace

std::uint32_t half_ones(ScalarType input) { return input == ScalarType::F16 ? 0x3c003c00u : 0x3f803f80u; }

std::array<Expr, 4> decode_int4_row_pair(Body& body, ScalarType input, const Expr& halves, const std::string& name) {
  const Type pair(input, 2);
  const std::uint32_t magic = half_magic(input) * 0x10001u;
  const Expr bias = bitcast(pair, u32(magic));
  auto low_nibble = [&](const Expr& bits) {
    return bitcast(ScalarType::U32, bitcast(pair, (bits & u32(0x000F000Fu)) | u32(magic)) - bias);
  };
  if (input == ScalarType::F16) {
    const Expr sixteenth = bitcast(pair, u32(0x2C002C00u));       // 1/16
    const Expr bias_sixteenth = bitcast(pair, u32(0xD400D400u));  // -1024 / 16
    auto high_nibble = [&](const Expr& bits) {
      return bitcast(ScalarType::U32,
                     fma(bitcast(pair, (bits & u32(0x00F000F0u)) | u32(magic)), sixteenth, bias_sixteenth));
    };
    Expr shifted = body.let(name + "_shifted", halves >> 8u);
    return {low_nibble(halves), high_nibble(halves), low_nibble(shifted), high_nibble(shifted)};
  }
  return {low_nibble(halves), low_nibble(halves >> 4u), low_nibble(halves >> 8u), low_nibble(halves >> 12u)};
}

Expr shift_left(const Expr& bits, int left) {
  if (left == 0) return bits;
  return left > 0 ? bits << std::uint32_t(left) : bits >> std::uint32_t(-left);
}

std::array<Expr, 4> decode_nvfp4_scale_word(Body& body, ScalarType input, const Expr& codes, const std::string& name) {
  const Type pair(input, 2);
  const bool f16 = input == ScalarType::F16;
  // Byte b & 0x7F plus 1 has its top bit set only for b & 0x7F == 0x7F.
  Expr nan_bytes = body.let(name + "_nan", (codes & u32(0x7F7F7F7Fu)) + u32(0x01010101u));
  std::array<Expr, 4> factors;
  for (std::uint32_t j = 0; j < 4; ++j) {
    Expr high = permute(codes, u32(0), u32(0x0404u | j << 4 | j << 12));  // [0, b_j, 0, b_j]
    Expr bits = f16 ? ((high >> 1u) & u32(0x3F803F80u)) | (high & u32(0x80008000u))
                    : ((high >> 4u) & u32(0x07F007F0u)) | (high & u32(0x80008000u));
    Expr value = f16 ? bitcast(pair, bits) * bitcast(pair, u32(0x78007800u))  // x 2^15
                     : (bitcast(pair, bits) * bitcast(pair, u32(0x7F007F00u))) *  // x 2^127
                           bitcast(pair, u32(0x77807780u));                       // x 2^112
    Expr nan_mask = permute(nan_bytes, u32(0), u32((8u | j) * 0x1111u));  // byte j's top bit, everywhere
    factors[j] = body.let(fmt::format("{}{}", name, j), bitcast(ScalarType::U32, value) | nan_mask);
  }
  return factors;
}

std::array<Expr, 4> decode_nvfp4_row_pair(ScalarType input, const Expr& halves, const std::array<Expr, 4>& factors) {
  const Type pair(input, 2);
  const bool f16 = input == ScalarType::F16;
  // The pattern's bits: the sign at 15, e1 e0 m0 from magnitude_base up; in the code the
  // sign is 3 bits above the magnitude, in the pattern `spread` more.
  const int magnitude_base = f16 ? 9 : 6, spread = 15 - magnitude_base - 3;
  const std::uint32_t pattern_mask = (0x8000u | 0x7u << magnitude_base) * 0x10001u;
  // Two codes of a half share a word holding their magnitudes and signs `spread` further
  // apart, for both halves: a bit select of the codes shifted two ways (the magnitudes by
  // `moved`, the signs by moved + spread). A tile's pattern is then one shift and one mask
  // of its word (none for the code whose magnitude is already in place).
  struct Group {
    std::array<std::uint32_t, 2> codes;  // nibbles j of a half
    int moved;                           // the magnitudes' shift (left; right where negative)
  };
  const std::array<Group, 2> groups = f16 ? std::array<Group, 2>{{{{0, 2}, 0}, {{1, 3}, -spread}}}
                                          : std::array<Group, 2>{{{{0, 1}, 0}, {{2, 3}, -spread}}};
  std::array<Expr, 4> b;
  for (const Group& group : groups) {
    std::uint32_t magnitudes = 0, signs = 0;
    for (std::uint32_t j : group.codes) {
      magnitudes |= (0x7u << (int(4 * j) + group.moved)) * 0x10001u;
      signs |= (0x8u << (int(4 * j) + group.moved + spread)) * 0x10001u;
    }
    if ((magnitudes & signs) != 0) throw std::logic_error("decode_nvfp4_row_pair: a group's codes overlap");
    const Expr magnitude_bits = shift_left(halves, group.moved), sign_bits = shift_left(halves, group.moved + spread);
    const Expr word = sign_bits ^ ((magnitude_bits ^ sign_bits) & u32(magnitudes));  // one lop3
    for (std::uint32_t j : group.codes) {
      Expr pattern = shift_left(word, magnitude_base - int(4 * j) - group.moved) & u32(pattern_mask);
      b[j] = bitcast(ScalarType::U32, bitcast(pair, pattern) * bitcast(pair, factors[j]));
    }
  }
  return b;
}

std::array<Expr, 4> decode_fp8_step(ScalarType input, Fp8Format format, const std::array<Expr, 4>& regs) {
  auto decode = [&](const Expr& reg, std::uint32_t e) {
    Expr high = permute(reg, u32(0), u32(0x0404u | e << 4 | (2 + e) << 12));  // [0, byte e, 0, byte 2 + e]
    const Expr sign = high & u32(0x80008000u);
    if (input == ScalarType::F16) {
      if (format == Fp8Format::E5M2) return high;
      return ((high >> 1u) & u32(0x3F803F80u)) | sign;
    }
    const Type pair(ScalarType::BF16, 2);
    if (format == Fp8Format::E4M3) {
      Expr pattern = ((high >> 4u) & u32(0x07F007F0u)) | sign;
      return bitcast(ScalarType::U32, bitcast(pair, pattern) * bitcast(pair, u32(0x77807780u)));  // x 2^112
    }
    Expr halves = bitcast(Type(ScalarType::F16, 2), high);
    return bitcast(ScalarType::U32, cast(pair, make_vector({cast(ScalarType::F32, extract_lane(halves, 0)),
                                                            cast(ScalarType::F32, extract_lane(halves, 1))})));
  };
  std::array<Expr, 4> b;
  for (std::uint32_t j = 0; j < 4; ++j) {
    const std::uint32_t h = j / 2, e = j % 2;
    b[j] = make_vector({decode(regs[2 * h], e), decode(regs[2 * h + 1], e)});
  }
  return b;
}

Expr fp8_nan_bytes(const Expr& reg) { return (reg & u32(0x7F7F7F7Fu)) + u32(0x01010101u); }

CodePieces code_pieces(const std::array<float, 16>& book, ScalarType input) {
  CodePieces pieces;
  const bool f16 = input == ScalarType::F16;
  pieces.count = f16 ? 2 : 3;
  pieces.scale = f16 ? 256.0 : 1.0;
  auto round16 = [&](double value, std::uint16_t& bits) {
    if (f16) {
      const arith::Float16 half = arith::convert<arith::Float16>(float(value));
      bits = half.bits;
      return double(arith::convert<float>(half));
    }
    const arith::BFloat16 half = arith::convert<arith::BFloat16>(float(value));
    bits = half.bits;
    return double(arith::convert<float>(half));
  };
  for (std::uint32_t code = 0; code < 16; ++code) {
    const double value = double(book[code]) * pieces.scale;
    double rest = value;
    for (std::uint32_t p = 0; p < pieces.count; ++p) rest -= round16(rest, pieces.bits[code][p]);
    if (std::fabs(rest) > (f16 ? std::ldexp(std::fabs(value), -22) : 0.0)) {
      throw std::logic_error(fmt::format("code book entry {} ({}) is not within the 16-bit pieces' bound", code, book[code]));
    }
  }
  return pieces;
}

Expr code_piece_pair(const CodePieces& pieces, std::uint32_t p, const Expr& code) {
  std::vector<std::uint64_t> table;
  for (const auto& bits : pieces.bits) table.push_back(bits[p] | (p + 1 < pieces.count ? std::uint32_t{bits[p + 1]} << 16 : 0u));
  return Lookup::make(ScalarType::U32, std::move(table), code);
}

}  // namespace quantc::ir::ops
