// Packed signed INT4 inference primitives: dot products, row-scaled matrix-vector and
// batched products, and top-1 routing. Semantics, buffer names and fixtures follow
// vyre-libs 0.6.2 `quant::int4_*`.
//
// The C++ constructors keep the seed's names (lane_count, batch, rows, cols); a JSON spec
// gives them as k, m, n, k (the seed's names are accepted as aliases, ir/ops/Registry.h).
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
//
// Activations: the two float matvecs take "activation": "f32" | "f16" | "bf16"
// (ir/ops/Activation.h): x and out hold that type, x widens exactly to f32, the sums
// below run in f32 unchanged and row_scales[r] * sum is rounded once to the activation
// type when stored (row_scales stays f32). Their error bounds are of that f32 value y;
// the f16/bf16 output adds at most u_h*|y| + eta_h (u_h = 2^-11 f16, 2^-8 bf16; eta_h =
// 2^-25, 2^-134) and overflows to +-inf past 65504 (f16). The packed-activation ops
// (int4_dot_*, int4_batched_matmul_*) have no float activations and no such parameter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/QuantizedGemv.h"
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
/// Buffers (A = the activation type): weights u32[rows * ceil(cols/8)] (row r's words at
/// r*ceil(cols/8)), x A[cols], row_scales f32[rows] (read-only), out A[rows].
/// Bound (u = 2^-24, gamma(n) = n*u / (1 - n*u); 8*ceil(cols/256) products per lane, each
/// rounded and added, then 5 butterfly levels and the scale):
///   |y - exact| <= gamma(16*ceil(cols/256) + 6) * |row_scale| * sum_c |x[c] * q[c]|.
/// Launch: 256-invocation workgroups = 8 subgroups, one subgroup per row (8 rows per
/// workgroup, ceil(rows/8) workgroups): consecutive lanes load consecutive words.
/// Errors (OpError): rows == 0, cols == 0, rows*ceil(cols/8) > 2^32-1.
Program int4_matvec_f32_scaled(std::uint32_t rows, std::uint32_t cols, ScalarType activation = ScalarType::F32);

/// `out[b*rows + r] = row_scales[r] * sum_c w[r][c] * x[b*cols + c]`: the matvec for
/// each of `batch` activation vectors. Buffers: weights as int4_matvec_f32_scaled,
/// x A[batch*cols] ([batch, cols], column fastest), row_scales f32[rows],
/// out A[batch*rows] ([batch, rows], row index fastest).
/// Launch: one subgroup per row, each covering a tile of 4 batches (fewer when batch <
/// 4) so a weight word is loaded and unpacked once for 4 activation vectors;
/// workgroups (ceil(rows/8), ceil(batch/4)). Per output the order is the matvec's.
/// Errors (OpError): any dimension 0; batch*cols, batch*rows or the weight count over
/// 2^32-1; ceil(batch/4) over 65535 (the CUDA grid's y limit).
Program int4_batched_matvec_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols,
                                       ScalarType activation = ScalarType::F32);

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

/// The fast schedule of the two float matvec ops ("schedule": "fast"; the seed programs
/// above stay "schedule": "seed"). Same buffers, in the same binding order, with the
/// same element types and counts, and the same parameter errors first, so a user's
/// inputs run on either program. Layout as above: row r's ceil(cols/8) words are
/// consecutive, the column (reduction) index is fastest.
///
/// Schedule (per 32-lane subgroup; PTX: per warp):
///  - a row group is 4 consecutive rows (and, for batch > 1, a tile of 2 activation
///    vectors); k = int4_row_gemv_k_subgroups(cols) subgroups ("k-subgroups") share one
///    row group, each reducing its part of K. A workgroup holds max(1, 4/k) row groups x
///    k subgroups, (ceil(ceil(rows/4)/max(1, 4/k)), ceil(batch/tile)) workgroups. Rows
///    past `rows` in the last row group read row rows-1 and are not stored; batches past
///    `batch` likewise read the last batch;
///  - a row is ceil(cols/1024) spans of 128 words (512 bytes); k-subgroup ks takes spans
///    ks, ks+k, ks+2k, ..., one per step, and lane l of it words l, l+32, l+64, l+96 of
///    the span (one u32 load per word and row: each load request reads 128 consecutive
///    bytes, whole 32-byte sectors), plus each word's 8 x values as 2 f32x4 loads per
///    batch (f16/bf16: one reinterpreting u32x4 load of 8 halves, each value widened
///    once per lane after the step's loads), shared by the 4 rows. Lanes 16 bytes apart
///    in x rather than 128 keep a request's x within 8 lines instead of 32. All loads of
///    a step are issued before the first is used. In a partial last span the 32-word slots
///    wholly past the row are not loaded, and in the slot the row ends in a lane past the
///    end reads the row's last word with its x values counting 0;
///  - nibble -> f32 exactly by the exponent magic, per nibble position p of a word (or of
///    word >> 16 for nibbles 5..7): bitcast((w & 0xF<<4p) ^ (bits(2^(23-4p)) | 8<<4p))
///    - (2^(23-4p) + 8) = q (one lop3, one subtraction; no shifts for nibbles 0..4);
///  - acc = fma(x[c], q, acc) per row (and batch) in f32; the 32 lane partials meet by a
///    shuffle butterfly (xor 16, 8, 4, 2, 1); then the k-subgroups meet in shared memory,
///    k-subgroup 0 adding those of k-subgroups 1, 2, ..., k-1 in that order
///    (emit_k_subgroup_meeting, ir/ops/SplitK.h): deterministic and without atomics.
///    Lane 0 of k-subgroup 0 stores row_scales[r] * total, the 4 rows of a batch as one
///    f32x4 store (f16/bf16: two f16x2/bf16x2 stores) when rows % 4 == 0.
///
/// Floating-point order (the interpreter and the emulated PTX agree bit for bit): per
/// lane, for its spans in increasing order, within a span its 4 words in increasing
/// order and within a word in increasing column order, acc = fma(x, q, acc) from +0.0
/// (one rounding per column, no separate product rounding); then acc += shuffle(acc,
/// lane ^ m) for m = 16, 8, 4, 2, 1; then k - 1 additions of the other k-subgroups'
/// sums; then one product with the row scale. With m = 32*ceil(cols/(1024k)) + k - 1
/// and u = 2^-24:
///   |fast - exact| <= gamma(m + 6) * |row_scale| * sum_c |x[c] * q[c]|,
///   gamma(n) = n*u / (1 - n*u); the seed obeys the same form with its own term count
///   (8*ceil(cols/256) products, each rounded, plus its butterfly), so |fast - seed| is
///   within the sum of the two (tests/ops_int4_dequant/int4_gemv_schedule_tests.cpp).
///   When every partial sum is exact (e.g. small integer x), fast equals the seed bit
///   for bit.
/// The semantics are the seed's (vyre-libs 0.6.2 quant::int4_matvec_f32_scaled /
/// int4_batched_matvec_f32_scaled); only the summation order differs.
///
/// Errors (OpError): the seed op's errors first (any dimension 0, a count over 2^32-1,
/// ceil(batch/4) over 65535), then, for "fast" only, the reason of
/// int4_row_gemv_unsupported with the fix. "auto" (the default) builds the fast program
/// where int4_row_gemv_unsupported is nullopt, else the seed's.
Program int4_matvec_f32_scaled(std::uint32_t rows, std::uint32_t cols, KernelSchedule schedule,
                               ScalarType activation = ScalarType::F32);
Program int4_batched_matvec_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols,
                                       KernelSchedule schedule, ScalarType activation = ScalarType::F32);

/// Why the fast schedule cannot run the shape, or nullopt: cols must be a multiple of 32
/// (whole 16-byte chunks, so every row starts 16-byte aligned) and ceil(batch/tile)
/// workgroups along y must fit the CUDA limit of 65535 (tile = 1 for batch 1, else 2).
/// rows and batch need no alignment (tails are clamped and masked).
std::optional<std::string> int4_row_gemv_unsupported(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols);

/// The fast schedule's k-subgroups for `cols` columns (a multiple of 32): the most, a
/// power of two up to 4, that leave every k-subgroup at least one 1024-column span of a
/// row (choose_k_subgroups, ir/ops/SplitK.h): 1 up to 1024 columns, 2 up to 3072, 4
/// beyond. More warps per row group shorten each warp's serial chain of loads and FMAs,
/// which the H100 model and the H200 measurements of the other fast GEMVs say sets the
/// time.
std::uint32_t int4_row_gemv_k_subgroups(std::uint32_t cols);

/// Registry entries for the six ops above ("schedule": auto by default on the two matvecs).
std::vector<OpInfo> int4_packed_ops();

}  // namespace quantc::ir::ops
