// The tensor-core GEMM of the small-batch linear layers (m = 2..64): 4-bit weights
// dequantized in registers straight into mma.m16n8k16 B fragments, activations as A
// fragments, f32 accumulators (ir::SubgroupMma, ir/Mma.h), the technique of Marlin
// (Frantar et al., "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large
// Language Models", 2024) and of TensorRT-LLM's weight-only GEMMs.
//
// Ops (ir/ops/DequantMatmul.h; x A[m, k] row-major, W [k, n] nibbles n fastest, low nibble
// first; f16 or bf16 activations A):
// - dequant_matmul_int4: codes 0..15 with f32 block sidecars [ceil(k/block_size), n];
// - dequant_matmul_nvfp4: E2M1 codes with E4M3 scale bytes [ceil(k/16), n] and an f32
//   global scale (NVIDIA's NVFP4; OCP MX v1.0 for E2M1, OFP8 rev 1.0 for E4M3);
// - dequant_matmul_fp8: E4M3 or E5M2 bytes W [k, n] (OFP8 rev 1.0) with an f32 scale per
//   column;
// - nf4_gemm with "accumulate": "f32" (ir/ops/Nf4Gemm.h, aprender-gpu 0.31.2): A [m, k], B
//   column-major (a column's codes k-contiguous, two a byte) with the NF4 (QLoRA) or
//   bitsandbytes FP4 code book and f32 scales per 64-row block.
// NVFP4's and FP8's "blocks" below are staging units of 64 rows: their scales apply to B
// or per column, so their mma sums run over a whole part (see their decoding below).
// - Work split: a subgroup owns an m-tile of M rows of x (16, or 32 for m > 16: two 16-row
//   mma tiles that share each decoded weight fragment), a 32-column n-tile of W (four
//   8-column mma tiles) and a part of K: whole blocks, `parts` subgroups per tile
//   (SplitK.h's rule: about kSplitKTargetWorkgroups subgroups with two blocks per part at
//   least, then more parts while a part's staging would pass 16 KiB, where blocks allow).
//   A workgroup holds as many of them as k-subgroups (a power of two up to 8, dividing the
//   parts) as fit 48 KiB of staging together; they meet in shared memory (in the weight
//   tiles, or where a lane's sums outgrow a part's tile, m > 16, an array of their own),
//   so that fewer partial sums cross DRAM. Grid: (n / 32, ceil(m / M),
//   parts / k-subgroups).
//   The workgroups of a tile meet through the split-K scratch (`partials` f32[splits * 32
//   * met * n/32 * ceil(m/M)], lane-interleaved so that a subgroup's f32x4 stores cover
//   512 contiguous bytes; `arrivals` u32[n/32 * ceil(m/M)]) in split order, as every
//   split-K GEMV does. Lanes whose row is past m own no partial sums, and where one m-tile
//   holds m <= 8 rows the upper eight rows' sums are never folded or met (met = 8 a lane,
//   else 16 per m-tile).
// - Staging, one cp.async group: the split's 16-byte weight rows, its x rows below m (only
//   those where one row tile covers m: ldmatrix rows past them read the last) and its
//   blocks' sidecars into shared memory, one wait and a barrier; for a whole split
//   straight-line copies with [reg+imm] addresses. Per 16-row k-step (unrolled up to 16
//   per block, every shared address a register plus an immediate): A by one ldmatrix.x4
//   from the x tile; B by ldmatrix.trans from the weight tile (one x4 a pair of steps), with
//   the columns interleaved over the four 8-column mma tiles (mma column g of tile j is
//   column 4g + j), so that a lane's register holds half-word g of its two rows 2t, 2t + 1
//   (the four codes of its columns), then per tile one lop3 gives
//   `0x6400 | q` (f16, 1024 + q) or `0x4300 | q` (bf16, 128 + q) and one exact f16x2/bf16x2
//   subtraction (or, f16 only, an fma by 1/16 for a nibble left at bits 4..7) the code:
//   1.125 instructions per code (f16), 1.375 (bf16); then one mma per tile, and (zero points,
//   offsets) one against all-ones B for X = sum x. Each lane ends with 8 consecutive
//   columns per row: 16-byte sidecar loads and one 16-byte store per row.
// - int4 block factoring, in f32 after each block's mma sums D (exact products, f32 sums):
//   acc = fma(s, D, acc) (symmetric), fma(s, fma(-z, X, D), acc) (zero point) or
//   fma(o, X, fma(s, D, acc)) (offset); one rounding to the activation type at the store.
// - NVFP4 decoding: after the staging each subgroup turns its part's scale bytes into B
//   factors once (per column and 16-row block a pair (s 2^7, s 2^7) f16x2 or (s 2^119, ..)
//   bf16x2; NaN codes give NaN, E4M3 having no infinity); per k-step one 16-byte shared load
//   gives a lane its four tiles' factors. A B register's two codes (rows 2t, 2t + 1 of one
//   column) move bit by bit into the pattern of v 2^-14 (f16) or v 2^-126 (bf16), exact
//   with E2M1's subnormal 0.5, and one f16x2/bf16x2 multiply by the factor gives
//   v s 2^-7 exactly (at most 6 significant bits: E2M1 x E4M3 products fit both types):
//   5 instructions per pair of codes. The mma sums run over the whole part; the store
//   multiplies by 2^7 (exact) and the global scale (one rounding). Parts hold at most 128
//   rows (int4: 256), since the decode costs twice int4's per code.
// - NF4 decoding: the tile holds each column's part contiguous (16-byte copies of a
//   column), and a non-transposed ldmatrix.x4 gives lane (g, t) its tile-j column's rows
//   8t .. 8t + 7 of a 32-row span (column 4g + j, as int4's). The k-steps run over a
//   permutation of k: step s of a span puts rows 8t + 4s .. 8t + 4s + 3 at mma rows 2t,
//   2t + 1, 2t + 8, 2t + 9, so a lane's B codes are bytes 2s, 2s + 1 of its register and its
//   A pairs one 8-byte shared load per row (reinterpreting the x tile as u32 words). The
//   code values (24-bit f32 constants) are sums of 16-bit pieces that the mma multiplies one
//   by one into the same sums: f16 hi + lo of v 2^8 (within 2^-22 |v 2^8|: 4u a term; the
//   store multiplies by 2^-8), bf16 hi + mid + lo (exact). A 256-entry shared table, built
//   by shuffles at the start, gives a byte's pieces for both its codes in one 8- or 16-byte
//   load. Blocks fold as int4's symmetric ones: acc = fma(s, D, acc). are 32 bytes (the 32 columns; two cp.async chunks), one
//   ldmatrix.x4.trans a k-step; tile j = 2h + e takes column 16h + 2g + e as its mma column
//   g, so that a lane's 16-bit element g of rows 2t, 2t + 1 of half h holds the codes of
//   tiles 2h and 2h + 1. A prmt places a column's two codes in the high bytes of an f16x2:
//   E5M2 is then its f16 pattern (1 instruction a pair, infinities and NaN included); E4M3
//   moves down one bit into the pattern of v 2^-8 (4 a pair; bf16: the bf16 pattern of
//   v 2^-120 times 2^112, 5; E5M2 bf16 through f32, 4). E4M3's NaN codes are flagged per
//   byte while loading (3 instructions a register), gathered per column over the subgroup
//   by shuffles once a part, and make that column's sums NaN. The store multiplies by 2^8
//   (E4M3, exact) and the column's scale (one rounding), and writes two runs of four
//   columns a row (16h + 4t ..).
// Modeled on an H100 SXM (block 128, zero points, f16; bench/results/kernels.md, "Small
// batches on the tensor cores"): at 4096x4096 3.2 us for m = 2 and 3.5 us for m = 8 (DRAM:
// the weights and f32 sidecars, two splits), 4.6 us for m = 16 (DRAM: eight splits' partial
// sums, as a 16-row x tile leaves room for two k-subgroups), 11.2 and 16.3 us for m = 32
// and 64 (DRAM: partial sums of 32 rows a tile, 16 splits). Next: x fragments from L2
// instead of the x tile, or a multi-stage pipeline whose staging does not grow with the
// part (fewer splits), and the other formats.
// Numerics: the mma model (ir/Mma.h) sums a block's products in k order per 16-row step;
// with u = 2^-24 and T_p the per-term magnitudes of DequantMatmul.h's bound, the longest
// chain of f32 roundings of an output is L = block_size + 4 + blocks + parts for int4 (the
// parts meet as k-subgroups, then as splits; parts <= blocks), L = 3 * 64 + 4 + 2 blocks
// for NF4 (up to 3 pieces a code in a block's chain), and L = k + 4 + ceil(k/16) for NVFP4
// and FP8 (a part's whole chain, the meetings, the global or column scale), so
// |tensor - exact| <= 2 u L sum_p T_p (f32 value before the store; NF4 f16 adds 4 u sum_p T_p
// for its pieces); where every product
// and partial sum is exact (small integers, power-of-two scales) it equals the seed bit for bit.
// NVFP4 NaN scale codes and FP8 NaN codes make their columns NaN, as in the seed (E5M2's
// infinities stay infinities, or NaN against a zero or opposite one); an infinite global scale
// gives +-inf where the seed's per-element products may give NaN (0 * inf), as the batch-1
// fast schedule does.
// Requirements (else OpError naming the value): activation f16 or bf16 (f32 x would need a
// rounding the f32 bound does not allow), n % 32 == 0, k % 16 == 0 (NF4: k % 64); int4 also
// block_size % 16 == 0 and a block's rows and sidecars fit the 48 KiB staging (at most 1008
// at m = 16, 608 at m >= 32).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ir/Program.h"
#include "ir/ops/DequantMatmul.h"

namespace quantc::ir::ops {

/// The weight formats the tensor-core GEMM decodes (file comment).
enum class TensorWeights : std::uint8_t {
  Int4,   ///< dequant_matmul_int4: codes 0..15 with f32 block sidecars (BlockAffineMode)
  Nvfp4,  ///< dequant_matmul_nvfp4: E2M1 codes, E4M3 scales per 16 rows, an f32 global scale
  Fp8,    ///< dequant_matmul_fp8: E4M3 or E5M2 bytes, an f32 scale per column
  Nf4,    ///< nf4_gemm (f32 accumulation): 16-entry code book, f32 scales per 64-row block
};

/// One tensor-core GEMM: the op's format and shape. `block_size` and `mode` are
/// dequant_matmul_int4's (rows per sidecar block, sidecar mode), which NVFP4 (blocks of
/// 16 rows), FP8 and NF4 (blocks of 64 rows) ignore; `fp8_format` is FP8's and
/// `code_book` NF4's (kNf4Table or kBnbFp4Table, ir/ops/Quantize.h).
struct TensorGemmShape {
  TensorWeights weights = TensorWeights::Int4;
  std::uint32_t m = 0, k = 0, n = 0;
  std::uint32_t block_size = 16;
  BlockAffineMode mode = BlockAffineMode::Symmetric;
  ScalarType activation = ScalarType::F16;
  Fp8Format fp8_format = Fp8Format::E4M3;  // Fp8's
  std::array<float, 16> code_book{};       // Nf4's values of the codes 0..15
};

/// Why the tensor-core GEMM cannot run this shape (the file comment's requirements), or nullopt.
std::optional<std::string> tensor_gemm_unsupported(const TensorGemmShape& shape);

/// The tensor-core program (file comment) with the seed's buffers, names and types.
/// Errors: OpError where tensor_gemm_unsupported gives a reason.
Program tensor_gemm(const TensorGemmShape& shape);

}  // namespace quantc::ir::ops
