// The tensor-core GEMM of the small-batch linear layers (m = 2..64): 4-bit weights
// dequantized in registers straight into mma.m16n8k16 B fragments, activations as A
// fragments, f32 accumulators (ir::SubgroupMma, ir/Mma.h), the technique of Marlin
// (Frantar et al., "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large
// Language Models", 2024) and of TensorRT-LLM's weight-only GEMMs.
//
// First op: dequant_matmul_int4 (ir/ops/DequantMatmul.h: x A[m, k] row-major, W [k, n]
// nibbles n fastest, block sidecars [ceil(k/block_size), n]) with f16 or bf16 activations.
// - Work split: a subgroup owns an m-tile of M rows of x (16, or 32 for m > 16: two 16-row
//   mma tiles that share each decoded weight fragment), a 32-column n-tile of W (four
//   8-column mma tiles) and a part of K: whole blocks, `parts` subgroups per tile
//   (SplitK.h's rule: about kSplitKTargetWorkgroups subgroups with two blocks per part at
//   least, then more parts while a part's staging would pass 16 KiB, where blocks allow).
//   Where one m-tile is staged and the parts pair up, a workgroup holds two of them as
//   k-subgroups (2 x 32 invocations) that meet in shared memory, reusing the weight tiles;
//   otherwise a workgroup is one subgroup. Grid: (n / 32, ceil(m / M), parts / k-subgroups).
//   The workgroups of a tile meet through the split-K scratch (`partials` f32[splits * 32
//   * met * n/32 * ceil(m/M)], lane-interleaved so that a subgroup's f32x4 stores cover
//   512 contiguous bytes; `arrivals` u32[n/32 * ceil(m/M)]) in split order, as every
//   split-K GEMV does. Lanes whose row is past m own no partial sums, and where one m-tile
//   holds m <= 8 rows the upper eight rows' sums are never folded or met (met = 8 a lane,
//   else 16 per m-tile).
// - Staging, one cp.async group: the split's 16-byte weight rows, its x rows below m and
//   its blocks' sidecars into shared memory, one wait and a barrier; for a whole split
//   straight-line copies with [reg+imm] addresses. Per 16-row k-step (unrolled up to 16
//   per block, every shared address a register plus an immediate): A by one ldmatrix.x4
//   from the x tile; B from one 32-bit word per weight row of the lane's four rows, with
//   the columns interleaved over the four 8-column mma tiles (mma column g of tile j is
//   column 4g + j): one prmt gathers two rows' half-words, then per tile one lop3 gives
//   `0x6400 | q` (f16, 1024 + q) or `0x4300 | q` (bf16, 128 + q) and one exact f16x2/bf16x2
//   subtraction (or, f16 only, an fma by 1/16 for a nibble left at bits 4..7) the code:
//   1.25 instructions per code (f16), 1.5 (bf16); then one mma per tile, and (zero points,
//   offsets) one against all-ones B for X = sum x. Each lane ends with 8 consecutive
//   columns per row: 16-byte sidecar loads and one 16-byte store per row.
// - Block factoring, in f32 after each block's mma sums D (exact products, f32 sums):
//   acc = fma(s, D, acc) (symmetric), fma(s, fma(-z, X, D), acc) (zero point) or
//   fma(o, X, fma(s, D, acc)) (offset); one rounding to the activation type at the store.
// Modeled on an H100 SXM (block 128, zero points, f16; bench/results/kernels.md, "Small
// batches on the tensor cores"): at 4096x4096 3.5 us for m = 2 (the warps' serial chain),
// 3.9 and 4.6 us for m = 8 and 16 (DRAM: the weights plus the split partial sums), 14.5 and
// 29 us for m = 32 and 64 (DRAM: partial sums of 32 rows a tile, 16 splits); 4096x11008 and
// 11008x4096 take three waves of subgroups. Next: a multi-stage pipeline whose staging does
// not grow with the part (fewer splits in one wave), and the other formats.
// Numerics: the mma model (ir/Mma.h) sums a block's products in k order per 16-row step;
// with u = 2^-24 and T_p the per-term magnitudes of DequantMatmul.h's bound, the longest
// chain of f32 roundings of an output is L = block_size + 4 + blocks + splits, so
// |tensor - exact| <= 2 u L sum_p T_p (f32 value before the store); where every product
// and partial sum is exact (small integers, power-of-two scales) it equals the seed bit for bit.
// Requirements (else OpError naming the value): activation f16 or bf16 (f32 x would need a
// rounding the f32 bound does not allow), n % 32 == 0, k % 16 == 0, block_size % 16 == 0
// and at most 768 (m <= 16) or 512 (m > 16): a block's rows and sidecars fit the 48 KiB staging.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/Program.h"
#include "ir/ops/DequantMatmul.h"

namespace quantc::ir::ops {

/// Why the tensor-core GEMM cannot run dequant_matmul_int4 at this shape, or nullopt.
std::optional<std::string> int4_tensor_gemm_unsupported(std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                                        std::uint32_t block_size, ScalarType activation);

/// The tensor-core program (file comment); the seed's buffers, names and types.
/// Errors: OpError where int4_tensor_gemm_unsupported gives a reason.
Program int4_tensor_gemm(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                         BlockAffineMode mode, ScalarType activation);

}  // namespace quantc::ir::ops
