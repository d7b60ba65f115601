// The register decoders of the tensor-core GEMM (ir/ops/TensorGemm.h): per weight format,
// IR that turns the codes a lane holds (as ldmatrix hands them out) into the f16x2/bf16x2
// B registers of mma.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"), exactly:
// every decoded value is the format's value times a power of two that the GEMM undoes in
// f32 (or, for NF4's code book, a sum of 16-bit pieces). Bit patterns follow the formats'
// specifications: IEEE 754 binary16 and bfloat16, OCP OFP8 rev 1.0 (E4M3, E5M2), OCP MX
// v1.0 (E2M1), the NF4 code book of QLoRA (Dettmers et al. 2023) and bitsandbytes' FP4.
// Instruction counts are PTX instructions per pair of codes (one B register).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/DequantMatmul.h"

namespace quantc::ir::ops {

/// One in both halves: the all-ones B that makes mma sum A's rows.
std::uint32_t half_ones(ScalarType input);

/// The B registers of the four mma tiles for two consecutive weight rows (k, k + 1) of a
/// lane. Columns are interleaved over the tiles: mma column g of tile j is the subgroup's
/// column 4g + j, so group g's four columns are the four nibbles of half-word g of every
/// 16-byte row, and `halves` holds row k's half-word g in its low half and row k + 1's in
/// its high half: what ldmatrix.trans gives lane (g, t) for rows 2t and 2t + 1 of an 8-row
/// matrix (one "element" = 4 codes). Each tile's pair is then one lop3 (mask the
/// nibble, OR in the exponent of 1024 for f16 or 128 for bf16) and one exact f16x2/bf16x2
/// operation: a subtraction of the bias for a nibble at bits 0..3; for f16, whose 10
/// mantissa bits also hold a nibble at bits 4..7 (1024 + 16 q), an fma by 1/16 less
/// 1024 / 16 instead, which saves the shift (tiles 1 and 3). bf16 has 7 mantissa bits, so
/// each of its tiles shifts its nibble to bits 0..3 first. 1.125 instructions per code for
/// f16, 1.375 for bf16 (Marlin's lop3 dequantization, without its offline reordering).
std::array<Expr, 4> decode_int4_row_pair(Body& body, ScalarType input, const Expr& halves, const std::string& name);

/// `bits` (u32) shifted left by `left` bits (right where negative).
Expr shift_left(const Expr& bits, int left);

/// NVFP4's B factors: an mma B register of tile j holds rows of one column and one 16-row
/// scale block, so it is scaled by one pair (s', s'). s' = s 2^7 (f16) or s 2^119 (bf16):
/// what makes the E2M1 patterns of decode_nvfp4_row_pair exact products v s 2^-7 (the
/// store multiplies by 2^7). `codes` holds the E4M3 scale bytes of the lane's columns
/// 4g + j in byte j. Per tile: a prmt puts byte j into the high byte of both halves, the
/// exponent and mantissa move into the f16/bf16 pattern of s 2^-8 / s 2^-120 (E4M3's bias
/// is 7, f16's 15, bf16's 127; subnormal scales map to subnormal patterns), and exact
/// power-of-two multiplies give s'. NaN codes (0x7F, 0xFF: E4M3 has no infinity) become
/// 0xFFFF, a NaN in both types, so that the column's sums are NaN as the seed's are.
std::array<Expr, 4> decode_nvfp4_scale_word(Body& body, ScalarType input, const Expr& codes, const std::string& name);

/// The NVFP4 B registers of the four mma tiles for two consecutive weight rows (k, k + 1)
/// of a lane, laid out as for decode_int4_row_pair (half-word g of each row: the E2M1 codes of
/// columns 4g .. 4g + 3, tile j's in nibble j). A code's sign, exponent and mantissa bits
/// move into the pattern whose value is v 2^-14 (f16: bits 15, 10..11, 9) or v 2^-126
/// (bf16: bits 15, 7..8, 6), exactly: E2M1's bias 1 against 15 / 127, its subnormal 0.5
/// a subnormal pattern. One multiply by the tile's scale factor (decode_nvfp4_scale_word) gives
/// v s 2^-7, exact: at most 6 significant bits, within the normal and subnormal range.
/// The pattern's sign sits 6 (f16) or 9 (bf16) bits above its magnitude, the code's 3: two
/// codes of each half share a word in which a bit select (one lop3) of the codes shifted
/// two ways puts them that far apart (f16: tiles 0 and 2, 1 and 3; bf16: 0 and 1, 2 and
/// 3), so that a tile's pattern is one shift and one mask of its word (Marlin's FP4
/// dequantization shifts each code's sign and magnitude apart instead: 3 integer
/// instructions a pair). 2.75 integer instructions and one multiply per pair of codes.
std::array<Expr, 4> decode_nvfp4_row_pair(ScalarType input, const Expr& halves, const std::array<Expr, 4>& factors);
/// What decode_nvfp4_row_pair's B values are of v s: 2^-7.
inline constexpr double kNvfp4DecodedScale = 1.0 / 128;

/// FP8's B registers (u32x2) of the four mma tiles of a k-step. ldmatrix.trans of the
/// 32-byte weight rows as 16-bit elements hands lane (g, t) element g of rows 2t, 2t + 1 of
/// each 16-byte half h (`regs[2h]`; rows 2t + 8, 2t + 9 in `regs[2h + 1]`): the codes of
/// columns 16h + 2g (bytes 0, 2) and 16h + 2g + 1 (bytes 1, 3), so tile j = 2h + e takes
/// column 16h + 2g + e as its mma column g. A prmt puts a column's two codes
/// into the high bytes of an f16x2 pair: E5M2's f16 pattern, exactly (infinities and NaN
/// included); E4M3's exponent and mantissa move down one bit into the pattern of v 2^-8
/// (subnormals included; NaN codes are flagged apart, fp8_nan_bytes), and the store
/// multiplies by 2^8. bf16: E4M3 by the bf16 pattern of v 2^-120 times 2^112 (v 2^-8,
/// exact); E5M2 through f32 (exact, infinities and NaN kept). Instructions per pair of
/// codes: E5M2 f16 1, E4M3 f16 4, E4M3 bf16 5, E5M2 bf16 4.
std::array<Expr, 4> decode_fp8_step(ScalarType input, Fp8Format format, const std::array<Expr, 4>& regs);
/// What decode_fp8_step's B values are of v: 2^-8 for E4M3, 1 for E5M2.
inline constexpr double kE4m3DecodedScale = 1.0 / 256;

/// E4M3's NaN codes (0x7F, 0xFF) among the four bytes of `reg`: each byte's top bit set
/// where it is one (b & 0x7F plus 1 reaches 0x80 only for 0x7F), the rest garbage below it.
Expr fp8_nan_bytes(const Expr& reg);

/// An NF4 code book as sums of 16-bit pieces that the mma multiplies one by one into the
/// same sums. f16: v 2^8 = hi + lo + r with hi = rn(v 2^8), lo = rn(v 2^8 - hi) and
/// |r| <= 2^-22 |v 2^8| (4u; 2^8 keeps lo clear of f16's subnormals for the tables'
/// smallest nonzero entries), checked here; the store multiplies by 2^-8. bf16: v = hi +
/// mid + lo exactly (3 x 8 significant bits hold an f32's 24).
struct CodePieces {
  std::uint32_t count = 0;                                 // pieces a code: 2 (f16) or 3 (bf16)
  std::array<std::array<std::uint16_t, 3>, 16> bits{};     // per code, the pieces' bit patterns
  double scale = 1.0;                                      // the pieces sum to v * scale
};

/// `book`'s pieces for `input` (F16 or BF16). Throws std::logic_error where an entry misses
/// the bound above (no entry of kNf4Table or kBnbFp4Table does).
CodePieces code_pieces(const std::array<float, 16>& book, ScalarType input);

/// The Lookup of `pieces` p and p + 1 of code `code` as one u32 (p's in the low half).
Expr code_piece_pair(const CodePieces& pieces, std::uint32_t p, const Expr& code);

}  // namespace quantc::ir::ops
