// The tensor-core GEMM of the small-batch linear layers (m = 2..64): weights dequantized in
// registers straight into mma.m16n8k16 B fragments, activations as A fragments, f32
// accumulators (ir::SubgroupMma, ir/Mma.h), the technique of Marlin (Frantar et al.,
// "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large Language Models",
// 2024) and of TensorRT-LLM's weight-only GEMMs.
//
// Ops (f16 or bf16 activations A; x / a A[m, k] row-major):
// - dequant_matmul_int4 (ir/ops/DequantMatmul.h): W [k, n] nibbles n fastest, low nibble
//   first, codes 0..15 with f32 block sidecars [ceil(k/block_size), n];
// - dequant_matmul_nvfp4: W as int4's, E2M1 codes with E4M3 scale bytes [ceil(k/16), n] and
//   an f32 global scale (NVIDIA's NVFP4; OCP MX v1.0 for E2M1, OFP8 rev 1.0 for E4M3);
// - dequant_matmul_fp8: E4M3 or E5M2 bytes W [k, n] (OFP8 rev 1.0), an f32 scale per column;
// - nf4_gemm with "accumulate": "f32" (ir/ops/Nf4Gemm.h, aprender-gpu 0.31.2): B column-major
//   (a column's codes k-contiguous, two a byte), the NF4 (QLoRA) or bitsandbytes FP4 code
//   book, f32 scales per 64-row block;
// - linear_4bit_affine_grouped (ir/ops/Linear4Bit.h, vyre-libs 0.6.3; GPTQ's layout): W as
//   u32 words [k/8, n], a word's 8 nibbles 8 consecutive rows of one column, f32 scales and
//   u32 zero points per group [ceil(k/group_size), n], a bias b A[n], and with act-order x
//   read through perm. Its zero points fold as int4's ZeroPoint mode, b adds at the store.
// What differs between them is a row of the format table in TensorGemm.cpp and a register
// decoder of ir/ops/TensorDecode.h (the bit-level decoding and its exactness).
// - Work split: a subgroup owns an m-tile of M rows of x (16, or 32 for m > 16: two 16-row
//   mma tiles that share each decoded weight fragment), a 32-column n-tile of W (four
//   8-column mma tiles) and a part of K: whole blocks (int4's and NF4's scale blocks, or
//   64-row staging blocks for NVFP4 and FP8), `parts` subgroups per tile (SplitK.h's rule:
//   about kSplitKTargetWorkgroups subgroups with two blocks per part at least, then more
//   parts while a part's staging would pass 16 KiB or its rows 256 (int4; 128 for the
//   formats whose decoding costs more), where blocks allow). A workgroup holds as many of
//   them as k-subgroups (a power of two up to 8, dividing the parts) as fit 48 KiB of
//   staging together; they meet in shared memory (in the weight tiles, or where a lane's
//   sums outgrow a part's tile, m > 16, an array of their own), so that fewer partial sums
//   cross DRAM (lane-interleaved by f32x4: conflict-free). GPTQ act-order's workgroups
//   first hold column subgroups: up to 8 subgroups on adjacent column tiles of the same
//   part (a power of two dividing n / 32, as many as fit 48 KiB), which share one x tile a
//   k-subgroup, so that its gather through perm, one 2-byte load and one L1 wavefront an
//   element, happens once per column subgroups' tiles rather than once per tile (on the
//   H100 model, 4096x4096 at m = 16: 28.5 -> 5.2 us, against 3.9 without act-order);
//   without act-order the same at m <= 8 where the grid takes several waves, sharing one
//   copied x tile (fewer splits: 11008x4096 at m = 8 13.4 -> 10.4 us). NF4's workgroups at
//   m > 8 and GPTQ's at m > 16 hold two column subgroups sharing one copied x tile (NF4
//   at 4096x4096, m = 64: 22.9 -> 15.3 us; at 11008x4096, m = 16: 14.9 -> 12.4). int4's and NVFP4's
//   workgroups that have k-subgroups hold column pairs (NVFP4 at every m, int4 at m <= 8
//   and m > 32): two column subgroups whose row-major weight rows (16 bytes a column tile,
//   half a 32-byte sector) they copy together, each request reading whole sectors, and one
//   x tile.
//   Grid: (n / 32 / column subgroups, ceil(m / M), parts / k-subgroups). At m <= 8, a grid
//   of more than one wave of workgroups asks for as many per SM as make it one, where 64
//   registers a thread remain (Program::min_resident_workgroups, PTX .minnctapersm); NVFP4
//   and FP8 at m = 9..16 ask for the workgroups 64 registers allow where that takes fewer
//   waves than ptxas's 78-80 and K has at most 8 splits (their lanes hold the mma sums
//   alone; on the H100 model NVFP4 at m = 16 4096x4096 6.0 -> 3.9 us, 4096x11008 12.1 ->
//   11.2), their split-K tail then loading one split's partial sums at a time. A grid
//   still of several waves with a short last one reserves shared memory at launch so
//   that its waves are even (SplitK.h, even_out_waves: NVFP4 at 11008x4096, m = 2, 11.3
//   -> 8.9 us).
//   A ring instead, for int4, FP8 and GPTQ without act-order at m <= 16 where that grid
//   takes several waves (the 11008 shapes): workgroups of two column subgroups (int4's
//   pairs; the others sharing x) and one k-subgroup, each part walked through a ring of 3
//   slots of 128 rows (64 at m > 8 where blocks allow: FP8's; whole blocks), so that its
//   staging does not grow with it, and as
//   many splits as fit one wave (fewer than the whole-part grid's, or at m <= 8 as many),
//   the last part shorter where they do not divide K; asking for the workgroups per SM
//   that make it one wave (on the H100 model int4 11008x4096 at m = 16 12.8 -> 9.9 us,
//   FP8 at m = 2 17.7 -> 15.2). At m > 16 the same for int4 and GPTQ in workgroups of
//   four column subgroups sharing each x slot over two slots (double buffering: 32 x rows
//   make a slot four times a column tile's weights), and for FP8 two over three, where
//   the ring's one wave fills three quarters of the SMs' workgroup slots (not 4096x4096 at
//   m = 32, whose K leaves it 256 of 396); the whole-part grids there staged 32-row x
//   tiles whole, so parts of one block and 16-43 splits (int4 4096x4096 at m = 64: 11.3 ->
//   7.9 us; FP8 4096x11008 at m = 32: 25.3 -> 18.2).
//   The workgroups of a tile (each column subgroup's its own) meet through the split-K scratch (`partials` f32[splits * 32
//   * met * n/32 * ceil(m/M)], lane-interleaved so that a subgroup's f32x4 stores cover
//   512 contiguous bytes; `arrivals` u32[n/32 * ceil(m/M)]) in split order, as every
//   split-K GEMV does. Lanes whose row is past m own no partial sums, and where one m-tile
//   holds m <= 8 rows the upper eight rows' sums are never folded or met (met = 8 a lane,
//   else 16 per m-tile).
// - Staging, a cp.async pipeline: the part's blocks in up to 4 groups of equally many
//   (pipeline_stages in TensorGemm.cpp; one group for NF4, whose columns' codes of a part
//   share a 128-byte line, for a ragged last part, and where a workgroup is one subgroup,
//   which an H200 measured slower pipelined), all issued at once, each waited for and
//   barriered just before its blocks' k-steps, the first with the part's sidecars or
//   scales. A ring's prologue fills its R slots (the first group with the part's
//   sidecars); stage j is then waited for (wait_group R - 2) and barriered, the slot of
//   stage j - 1 refilled with stage j + R - 1, and stage j multiplied; every stage after
//   the first commits one group, empty past the part's stages. What they copy: the part's weight rows (16 bytes of nibbles or 32 of FP8
//   bytes a row, FP8's halves swapped in every other 4 rows; NF4 column by column, the
//   columns of each ldmatrix matrix adjacent and an odd number of 16-byte chunks apart; GPTQ
//   128-byte word rows, swizzled), its x rows below m (GPTQ act-order: gathered through
//   perm by plain loads, shared by the column subgroups; only those where one row tile
//   covers m: ldmatrix rows past them
//   read the last; rows 16 bytes longer, GPTQ's and NF4's 64 bytes apart modulo 128: every
//   ldmatrix and 16-byte load of the tiles free of bank conflicts by the emulator's count)
//   and its blocks' sidecars or scales, for a whole part straight-line copies with
//   [reg+imm] addresses (a stage's the same registers plus larger immediates).
//   NVFP4 then turns its scale bytes into B factors once (decode_nvfp4_scale_word). NF4's
//   code book stays in registers: lane l holds code l % 16's pieces (code_pieces).
// - Per 16-row k-step (unrolled up to 16 per block, every shared address a register plus an
//   immediate): A by one ldmatrix.x4 from the x tile (NF4: a 16-byte load a row a pair of
//   steps, its k-steps running over a permutation of k; GPTQ: the same, a prmt a
//   register); B by ldmatrix from the weight tile (.trans, one x4 a pair of steps for
//   nibbles, a step for FP8; NF4 plain, a pair of steps; GPTQ one 16-byte load of four words
//   a pair of steps, whose k-steps also run over a permutation of k so that each word's
//   nibble pairs (i, i + 4) are B registers as int4's lop3 decoding makes them), the columns
//   interleaved over the four mma tiles (mma column g of tile j is column 4g + j; FP8: of
//   tile 2h + e column 16h + 2g + e), decoded per TensorDecode.h (NF4: each code by a
//   shuffle from the lane of its number, a byte's two codes one prmt a piece); then one mma
//   per tile (NF4: one per code piece), and (int4 zero points, offsets) one against all-ones B for
//   X = sum x.
// - Folding, in f32: int4 and NF4 after each block's mma sums D (exact products, f32 sums):
//   acc = fma(s, D, acc) (symmetric, NF4), fma(s, fma(-z, X, D), acc) (zero point) or
//   fma(o, X, fma(s, D, acc)) (offset). NVFP4 and FP8 scale B (NVFP4) or the column (FP8)
//   instead, so their mma sums run over the whole part, and the store multiplies by the
//   decoders' power of two (exact) and the global or column scale (one rounding). FP8's
//   E4M3 NaN codes, flagged per byte while loading and gathered per column by shuffles once
//   a part, make their column's sums NaN. Each lane stores its columns per row in runs of
//   consecutive ones (8t .. 8t + 7: one 16-byte store; FP8 two 8-byte ones), one rounding
//   to the activation type.
// Modeled on an H100 SXM: bench/results/kernels.md, "Small batches on the tensor cores"
// (int4 at 4096x4096: 3.2 us for m = 2, 4.0 us for m = 16, where eight splits' partial sums
// are written to DRAM as a 16-row x tile leaves room for two k-subgroups); measured on an
// H200: bench/results/gpu-nvidia-h200.md (int4 at m = 2: 12.6 us with launch, 1.4x FP16).
// Next: the ring for NVFP4 (its scale tiles are the part's) and NF4; dynamic shared memory
// past 48 KiB, so that m > 16 rings keep three slots of four column subgroups; fewer
// registers for GPTQ's m > 16 rings (ptxas spills 8-40 bytes at 128); stream-K for the
// one-wave shapes a partial last wave still decides; parts of unequal whole blocks, so that
// K's splits can fill whole waves (NVFP4 and NF4 at 4096x11008, m = 2..16: 1376 workgroups
// of 4 an SM run waves of 528, 528 and 320; at m = 2, 22 one-k-subgroup parts of 3 blocks,
// the last of 1, model 9.4 -> 9.1 us: 12 parts of 5-6 blocks would make one wave).
// Numerics: the mma model (ir/Mma.h) sums a step's products in k order; with u = 2^-24 and
// T_p the per-term magnitudes of the ops' bounds (DequantMatmul.h, Nf4Gemm.h), the longest
// chain of f32 roundings of an output is L = block_size + 4 + blocks + parts for int4 (the
// parts meet as k-subgroups, then as splits; parts <= blocks; GPTQ one more for the bias,
// |b| a term), L = 3 * 64 + 4 + 2 blocks
// for NF4 (up to 3 pieces a code in a block's chain), and L = k + 4 + ceil(k/16) for NVFP4
// and FP8 (a part's whole chain, the meetings, the global or column scale), so
// |tensor - exact| <= 2 u L sum_p T_p (f32 value before the store; NF4 with f16 adds
// 4 u sum_p T_p for its pieces); where every product and partial sum is exact (small
// integers, power-of-two scales; not NF4's 24-bit code book) it equals the seed bit for bit.
// NVFP4 NaN scale codes and FP8 NaN codes make their columns NaN, as in the seed (E5M2's
// infinities stay infinities, or NaN against a zero or opposite one); an infinite global
// scale gives +-inf where the seed's per-element products may give NaN (0 * inf), as the
// batch-1 fast schedule does.
// Requirements (else OpError naming the value): activation f16 or bf16 (f32 x would need a
// rounding the f32 bound does not allow), n % 32 == 0, k % 16 == 0 (NF4: k % 64; GPTQ:
// k % 32); int4 also block_size % 16 == 0 (GPTQ group_size % 32 == 0) and a block's rows and
// sidecars fit the 48 KiB staging (at most 1008 at m = 16, 592 at m >= 32).
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
  Gptq,   ///< linear_4bit_affine_grouped: GPTQ's u32 words of 8 rows, f32 scales, u32 zero points, bias
};

/// One tensor-core GEMM: the op's format and shape. `block_size` is dequant_matmul_int4's
/// rows per sidecar block or GPTQ's group_size; `mode` is int4's sidecar mode (GPTQ is
/// always ZeroPoint); NVFP4 (blocks of 16 rows), FP8 and NF4 (blocks of 64 rows) ignore
/// both. `fp8_format` is FP8's, `code_book` NF4's (kNf4Table or kBnbFp4Table,
/// ir/ops/Quantize.h) and `act_order` GPTQ's.
struct TensorGemmShape {
  TensorWeights weights = TensorWeights::Int4;
  std::uint32_t m = 0, k = 0, n = 0;
  std::uint32_t block_size = 16;
  BlockAffineMode mode = BlockAffineMode::Symmetric;
  ScalarType activation = ScalarType::F16;
  Fp8Format fp8_format = Fp8Format::E4M3;  // Fp8's
  std::array<float, 16> code_book{};       // Nf4's values of the codes 0..15
  bool act_order = false;                  // Gptq's: x read through perm (Linear4Bit.h)
};

/// Why the tensor-core GEMM cannot run this shape (the file comment's requirements), or nullopt.
std::optional<std::string> tensor_gemm_unsupported(const TensorGemmShape& shape);

/// The tensor-core program (file comment) with the seed's buffers, names and types.
/// Errors: OpError where tensor_gemm_unsupported gives a reason.
Program tensor_gemm(const TensorGemmShape& shape);

/// tensor_gemm as an op's "schedule": "fast" for a batch (m > 1). Errors: OpError "Fix:
/// <op> has no fast schedule: m=<m> > 1 runs on the tensor cores, but <reason>; use
/// "schedule": "seed" (or "auto")." where tensor_gemm_unsupported gives a reason.
Program fast_tensor_gemm(const TensorGemmShape& shape);

}  // namespace quantc::ir::ops
