// The tensor-core GEMM of the small-batch linear layers (m = 2..64): 4-bit weights
// dequantized in registers straight into mma.m16n8k16 B fragments, activations as A
// fragments, f32 accumulators (ir::SubgroupMma, ir/Mma.h), the technique of Marlin
// (Frantar et al., "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large
// Language Models", 2024) and of TensorRT-LLM's weight-only GEMMs.
//
// First op: dequant_matmul_int4 (ir/ops/DequantMatmul.h: x A[m, k] row-major, W [k, n]
// nibbles n fastest, block sidecars [ceil(k/block_size), n]) with f16 or bf16 activations.
// - Work split: a workgroup is one subgroup; it owns an m-tile of M rows of x (16, or 32
//   for m > 16: two 16-row mma tiles that share each decoded weight fragment), a
//   32-column n-tile of W (four 8-column mma tiles) and a split of K: whole blocks,
//   `splits` workgroups per tile (SplitK.h's rule: about kSplitKTargetWorkgroups
//   workgroups with two blocks per split at least, then more splits while a split's
//   staging would pass 16 KiB, where blocks allow). Grid: (n / 32, ceil(m / M), splits).
//   The splits meet through the split-K scratch (`partials` f32[splits * 16 * n * M/16 *
//   ceil(m/M)], `arrivals` u32[n/32 * ceil(m/M)]) in split order, as every split-K GEMV does;
//   lanes whose row is past m own no partial sums.
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
// batches on the tensor cores"): 4.1 us at 4096x4096 for m = 2..8 (the warps' serial
// chain), 6.0 us at m = 16 (DRAM: the split partial sums add half the weights' bytes),
// 12-17 us at 4096x11008 and 11008x4096 (three waves of warps), 16 and 35 us at
// 4096x4096 for m = 32 and 64 (the memory pipe). Next: a multi-stage pipeline whose
// staging does not grow with the split (fewer splits, one wave), warps of one
// workgroup sharing a split, and the other formats.
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
