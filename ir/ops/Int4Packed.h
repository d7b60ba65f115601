// Packed signed INT4 inference primitives: dot products, row-scaled matrix-vector and
// batched products, and top-1 routing. Semantics, buffer names and fixtures follow
// vyre-libs 0.6.2 `quant::int4_*`.
//
// Packing (every op): eight signed 4-bit values per u32 word, value i of a word in bits
// 4i..4i+3, two's complement, so 0xCDEF_4321 holds 1, 2, 3, 4, -1, -2, -3, -4. A row of
// `cols` values occupies words_per_row = ceil(cols/8) consecutive words; value c of a row
// is nibble c%8 of word c/8 (the column index is fastest). Nibbles past `cols` in a
// row's last word are padding: the seed zero-fills them, and these kernels ignore them
// whatever they hold. A nibble is sign-extended with two shifts:
// `i32(word << (28 - 4i)) >> 28` (arithmetic).
//
// Floating-point order (interpreter, oracle and GPU agree bit for bit when they follow
// it): products are rounded, then added (the program has no FMA; -O2's contract_fma
// fuses them unless --fp-contract=off, see ir/IR.h). Each lane of
// a 32-lane subgroup owns the words lane, lane+32, lane+64, ... of a row and adds their
// products to its f32 partial sum in increasing column order, starting from +0.0; the 32
// partials are combined by subgroup_add (butterfly 16, 8, 4, 2, 1); the scale is applied
// to that sum. Integer dot products wrap modulo 2^32 and are exact in any order.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// Words one packed row of `values` signed INT4 values occupies: ceil(values / 8).
std::uint32_t int4_packed_words(std::uint32_t values);

/// `out[0] = sum_{i < lane_count} lhs[i] * rhs[i]` as i32 (wrapping), lhs/rhs packed.
/// Buffers: lhs u32[ceil(lane_count/8)], rhs u32[ceil(lane_count/8)] (read-only),
/// out i32[1] (read-write). Launch: one workgroup of one 32-lane subgroup; lane l sums
/// words l, l+32, ... and subgroup_add combines the lanes (exact for integers).
/// Fixture (seed): lhs 0xCDEF_4321, rhs 0xFEDC_1234, lane_count 8 -> 40.
/// Errors (OpError): lane_count == 0.
Program int4_dot_i32(std::uint32_t lane_count);

/// `out[0] = f32(dot_i32) * (lhs_scale[0] * rhs_scale[0])`; f32(dot) rounds to nearest
/// even when |dot| > 2^24. Buffers: lhs, rhs as int4_dot_i32, lhs_scale f32[1],
/// rhs_scale f32[1] (read-only), out f32[1]. Launch as int4_dot_i32.
/// Fixture (seed): the int4_dot_i32 pair with scales 0.5 and 0.25 -> 5.0.
/// Errors (OpError): lane_count == 0.
Program int4_dot_f32_scaled(std::uint32_t lane_count);

/// `out[r] = row_scales[r] * sum_c w[r][c] * x[c]` (order in the file comment).
/// Buffers: weights u32[rows * ceil(cols/8)] (row r's words at r*ceil(cols/8)),
/// x f32[cols], row_scales f32[rows] (read-only), out f32[rows].
/// Launch: 256-invocation workgroups = 8 subgroups, one subgroup per row (8 rows per
/// workgroup, ceil(rows/8) workgroups): consecutive lanes load consecutive words.
/// Errors (OpError): rows == 0, cols == 0, rows*ceil(cols/8) > 2^32-1.
Program int4_matvec_f32_scaled(std::uint32_t rows, std::uint32_t cols);

/// `out[b*rows + r] = row_scales[r] * sum_c w[r][c] * x[b*cols + c]`: the matvec for
/// each of `batch` activation vectors. Buffers: weights as int4_matvec_f32_scaled,
/// x f32[batch*cols] ([batch, cols], column fastest), row_scales f32[rows],
/// out f32[batch*rows] ([batch, rows], row index fastest).
/// Launch: one subgroup per row, each covering a tile of 4 batches (fewer when batch <
/// 4) so a weight word is loaded and unpacked once for 4 activation vectors;
/// workgroups (ceil(rows/8), ceil(batch/4)). Per output the order is the matvec's.
/// Errors (OpError): any dimension 0; batch*cols, batch*rows or the weight count over
/// 2^32-1; ceil(batch/4) over 65535 (the CUDA grid's y limit).
Program int4_batched_matvec_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols);

/// `out[b*rows + r] = (f32(dot_i32(w[r], a[b])) * row_scales[r]) * batch_scales[b]`
/// with activations packed like the weights. Buffers: weights u32[rows*ceil(cols/8)],
/// activations u32[batch*ceil(cols/8)] (batch b's words at b*ceil(cols/8)),
/// row_scales f32[rows], batch_scales f32[batch] (read-only), out f32[batch*rows]
/// ([batch, rows], row index fastest). Launch as int4_batched_matvec_f32_scaled (one
/// subgroup per row, 4 batches per subgroup; the integer partial dots are combined by
/// subgroup_add, exactly).
/// Errors (OpError): any dimension 0; a buffer count over 2^32-1; ceil(batch/4) over 65535.
Program int4_batched_matmul_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols);

/// For each batch b, the row with the highest int4_batched_matmul_f32_scaled score:
/// `out[b]` = that score, `out[batch + b]` = its row index as f32 (exact: rows <= 2^24).
/// Ties go to the lowest row index (+0 and -0 tie). A NaN score loses against any
/// number; when every score of a batch is NaN the result is NaN with row 0.
/// Buffers: as int4_batched_matmul_f32_scaled except out f32[2*batch].
/// Launch: 256-invocation workgroups = 8 subgroups, one subgroup per batch
/// (ceil(batch/8) workgroups); lane l scores rows l, l+32, ... keeping its best, then a
/// butterfly of subgroup shuffles (16, 8, 4, 2, 1) takes the best (score, row) pair
/// under the total order above, so the result does not depend on the combining order.
/// Errors (OpError): any dimension 0; rows > 2^24 (indices would not be exact in f32);
/// a buffer count over 2^32-1.
Program int4_batched_matmul_top1_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols);

/// Registry entries for the six ops above.
std::vector<OpInfo> int4_packed_ops();

}  // namespace quantc::ir::ops
