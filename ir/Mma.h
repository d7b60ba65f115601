// The one definition of the subgroup matrix multiply-accumulate (ir::SubgroupMma, PTX
// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`): which lane holds
// which matrix element, and what D = C + A·B computes. The reference interpreter and the
// PTX emulator both call multiply_accumulate, so the two cannot disagree.
//
// Fragment layouts (PTX ISA 9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 with floating
// point type"; CUTLASS's SM80_16x8x16_F32F16F16F32_TN traits are the same): a warp's 32
// lanes hold A (16x16, row-major: row = M index, fastest = K), B (16x8: K x N) and C/D
// (16x8: M x N). With g = lane / 4 and t = lane % 4,
// - A: 4 u32 words, word j holds A[g + 8*(j & 1)][2t + 8*(j >> 1) + h] in half h (h = 0 in
//   the low 16 bits);
// - B: 2 u32 words, word j holds B[2t + 8j + h][g] in half h;
// - C and D: 4 f32, element j is C[g + 8*(j >> 1)][2t + (j & 1)].
//
// Arithmetic (quantc's model): D[i][n] is an FMA chain in ascending k,
// d = C[i][n]; d = fma(A[i][k], B[k][n], d) for k = 0..15, each step rounded once to f32
// (nearest even, canonical NaN, subnormals kept). f16 and bf16 products are exact in f32
// except where a bf16 product leaves f32's range, so each step is the exact sum rounded.
// The PTX ISA leaves the hardware's order and intermediate precision open: NVIDIA tensor
// cores add the products of a k-block at once, with truncation rather than rounding (Fasi,
// Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7,
// 2021), so a GPU's D may differ from this model by the accumulation bound
// |D_gpu - D| <= 2 * 17 * 2^-24 * (|C| + sum |A*B|) per element.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "ir/Type.h"

namespace quantc::ir::mma {

inline constexpr unsigned kM = 16, kN = 8, kK = 16;
inline constexpr unsigned kLanes = 32;
inline constexpr unsigned kAWords = 4, kBWords = 2, kCElements = 4;

/// (row, column) of the A element in half `half` of word `word` of lane `lane`.
constexpr std::pair<unsigned, unsigned> a_element(unsigned lane, unsigned word, unsigned half) {
  return {lane / 4 + 8 * (word & 1), 2 * (lane % 4) + 8 * (word >> 1) + half};
}
/// (k, column) of the B element in half `half` of word `word` of lane `lane`.
constexpr std::pair<unsigned, unsigned> b_element(unsigned lane, unsigned word, unsigned half) {
  return {2 * (lane % 4) + 8 * word + half, lane / 4};
}
/// (row, column) of C/D element `element` of lane `lane`.
constexpr std::pair<unsigned, unsigned> c_element(unsigned lane, unsigned element) {
  return {lane / 4 + 8 * (element >> 1), 2 * (lane % 4) + (element & 1)};
}

/// ldmatrix.m8n8 (PTX ISA 9.7.14.5.15): each of `matrices` (1, 2, 4) 8x8 matrices of 16-bit
/// elements has its 8 rows at the addresses lanes 8i..8i+7 give (row r of matrix i at lane
/// 8i + r, 16 contiguous bytes). Word i of lane l holds two elements, half h from
/// {row-address lane, element within that row}: row l/4, elements 2(l%4) + h; transposed,
/// row 2(l%4) + h, element l/4. Composed, these are the A and B fragments of mma above.
constexpr std::pair<unsigned, unsigned> load_matrix_source(unsigned lane, unsigned matrix, unsigned half,
                                                           bool transpose) {
  return transpose ? std::pair{8 * matrix + 2 * (lane % 4) + half, lane / 4}
                   : std::pair{8 * matrix + lane / 4, 2 * (lane % 4) + half};
}
inline constexpr unsigned kMatrixRows = 8, kMatrixRowElements = 8;

/// One warp's fragments: index [lane][word or element]; f32 values as their bits.
using AFragments = std::array<std::array<std::uint32_t, kAWords>, kLanes>;
using BFragments = std::array<std::array<std::uint32_t, kBWords>, kLanes>;
using CFragments = std::array<std::array<std::uint32_t, kCElements>, kLanes>;

/// D = C + A·B as the file comment defines it; `input` is F16 or BF16 (the element type
/// of A and B; std::invalid_argument otherwise).
CFragments multiply_accumulate(ScalarType input, const AFragments& a, const BFragments& b, const CFragments& c);

}  // namespace quantc::ir::mma
