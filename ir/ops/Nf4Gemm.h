// Fused NF4-dequantize GEMMs: the weight matrix B stays 4-bit in memory and each code
// is dequantized in registers inside the dot product. Semantics and layout follow
// aprender-gpu 0.31.2 `Nf4GemmKernel` / `Nf4GemmTransposeKernel`
// (trueno#108, contract C-NF4-003).
//
// B layout (both ops): B is a k x n matrix of NF4 codes stored column by column in
// blocks of 64 consecutive k (k must be a multiple of 64; blocks_per_column = k/64).
// Block (column c, block j) covers B[64j .. 64j+63, c] and has index c*blocks_per_column
// + j ("column-major block order"):
// - b_scales f32[n * k/64]: element c*blocks_per_column + j is the block's scale;
// - b_nf4 u32[n * k/8]: the block's 32 bytes are bytes (c*blocks_per_column + j)*32 ..
//   +31, byte t holding row 64j+2t in its low nibble and 64j+2t+1 in its high nibble.
//   Read as little-endian u32 words (the layout is byte-identical to the seed's u8
//   buffer), word (c*blocks_per_column + j)*8 + w holds rows 64j+8w+p at bits 4p..4p+3.
//   This is exactly quantize_nf4's output for the column-major flattening of B
//   (element c*k + r) with group_size 64, so quantize_nf4 -> nf4_gemm composes.
// Dequantized B[r, c] = scale * kNf4Table[code] in f32 (one rounding), the code book
// held as an ir::Lookup constant (PTX: a 4-level, 15-selp tree; no shared or global
// memory for it). "quant_type": "fp4" (Nf4CodeBook::BnbFp4) swaps in bitsandbytes' FP4
// table kBnbFp4Table (ir/ops/Quantize.h), so bnb's FP4 Linear4bit runs unchanged;
// everything below (layout, order, bounds) holds for either table.
//
// Activations ("activation": "f32" | "f16" | "bf16", ir/ops/Activation.h): A and C hold
// the activation type (f32 by default; B's codes and scales are unchanged). f16/bf16
// values of A widen exactly to f32 and the accumulation runs exactly as documented
// below; the sum is rounded once to the activation type when stored: from f32 (the f32
// mode) or directly from the f64 sum (the f64 modes, cvt.rn.f16.f64 / cvt.rn.bf16.f64;
// with f32 activations the f64 sum rounds to f32 as before). The bounds below are of the
// value y the f32 program computes (f64 modes: of the f64 sum, before the f32 rounding
// they include); the stored f16/bf16 output adds at most u_h*|y| + eta_h (u_h = 2^-11
// for f16, 2^-8 for bf16; eta_h = 2^-25, 2^-134); |y| >= 65520 stores +-inf in f16.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/QuantizedGemv.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The op id of nf4_gemm's regions (every schedule keeps the seed's).
inline constexpr char kNf4GemmId[] = "aprender-gpu::nf4_gemm";

/// Which 16 values B's codes stand for (bitsandbytes' quant_type): the block's scale
/// times kNf4Table[code] (NF4, the seed's) or kBnbFp4Table[code] (bitsandbytes FP4,
/// ir/ops/Quantize.h). Only the table differs: same layout, same accumulation, same
/// schedules (spec parameter "quant_type": "nf4" | "fp4").
enum class Nf4CodeBook : std::uint8_t { Nf4, BnbFp4 };

/// How nf4_gemm accumulates its dot products.
enum class Nf4Accumulation : std::uint8_t {
  /// f64 (the seed's GH-561 fix): each term f64(a) * f64(dequant) is exact in f64 and
  /// added with one f64 rounding (an f64 fma); the sum converts to f32 once, rounding
  /// to nearest even. Error: about one f32 rounding of the result.
  F64,
  /// f32 fma: acc = fma(a, dequant, acc) in f32. Faster on GPUs with slow f64, but the
  /// rounding error grows with k. Measured on k = 11008 (one row of A and 64 columns of
  /// B, both uniform in [-1, 1) and B quantized by quantize_nf4; test "nf4_gemm f32
  /// accumulation error on k = 11008"): max |C_f32 - exact| = 2.8e-4 against mean |C| =
  /// 25 (1.0e-7 of the row's sum of |terms|), versus 3.5e-6 for F64 (one f32 rounding of
  /// the result). Both stay well inside the seed's 1e-3 parity tolerance at this size; the
  /// f32 error grows roughly with sqrt(k) to k, F64's does not.
  F32,
};

/// C[m, n] = A[m, k] @ dequant(B_nf4[k, n]).
/// Buffers (bindings in order; A = the activation type): a A[m*k] row-major (k fastest),
/// b_nf4 u32[n*k/8], b_scales f32[n*k/64] (layout above; all read-only), c A[m*n]
/// row-major (n fastest, read-write). Launch: 256-invocation workgroups along x over columns
/// (ceil(n/256) workgroups) and one workgroup row per output row (m along y); the
/// invocation (col, row) with col < n computes C[row, col], looping over blocks j, then
/// words w, then nibbles p, i.e. over k in ascending order, one accumulation each.
/// Errors (OpError): m, n or k == 0; k % 64 != 0 ("multiple of 64"); m > 65535 (the
/// CUDA grid-y limit); m*k, m*n or n*k/8 over 2^32-1 elements.
Program nf4_gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k,
                 Nf4Accumulation accumulation = Nf4Accumulation::F64, ScalarType activation = ScalarType::F32,
                 Nf4CodeBook code_book = Nf4CodeBook::Nf4);

/// C[m, k] = A[m, n] @ dequant(B_nf4[k, n])^T, i.e. C[i, r] = sum_c A[i, c] * B[r, c]
/// (the backward pass through a frozen NF4 projection). Same B layout and buffers
/// a A[m*n], b_nf4, b_scales, c A[m*k] (row-major). Launch: x over the k output
/// columns (256 per workgroup, ceil(k/256) workgroups), y over the m rows; each
/// invocation loops over c = 0..n-1 ascending, accumulating in f64 as nf4_gemm F64
/// does (the seed's transpose kernel also accumulates in f64; unlike the seed, the code
/// book is a register Lookup rather than shared memory).
/// Errors (OpError): as nf4_gemm with m*n, m*k and n*k/8 checked.
Program nf4_gemm_transpose(std::uint32_t m, std::uint32_t n, std::uint32_t k, ScalarType activation = ScalarType::F32,
                           Nf4CodeBook code_book = Nf4CodeBook::Nf4);

// ---------------------------------------------------------------------------------
// The fast batch-1 schedules (m == 1), selected by the spec parameter "schedule"
// ("auto" default: fast where m == 1, else seed; "seed"; "fast"). nf4_gemm's "fast" with
// m > 1 is the tensor-core GEMM of ir/ops/TensorGemm.h (sm_80+, f16 or bf16 activations,
// n % 32 == 0, "accumulate": "f32" only: the tensor cores sum in f32; its own bound);
// nf4_gemm_transpose's "fast" needs m == 1 (OpError otherwise).
// Both declare the seed's buffers (names, element types, counts, bindings), so the same
// inputs feed either program, plus the transpose's split-K scratch (runtime-provided);
// only the launch and the summation order differ. The
// semantics stay aprender-gpu 0.31.2's (C = A @ dequant(B) with dequant = NF4[code] *
// block scale); only the floating-point order changes, within the bounds stated below
// (tests/reference/nf4_schedule_tests.cpp asserts them).
//
// Common to both:
//  - code book: every lane holds kNf4Table[lane & 15] in one register (built once by the
//    Lookup select tree); code -> value is one shfl.sync.idx from lane `code` (the nibble
//    shifted to bits 0..3; bit 4 may hold the next nibble's low bit, which only picks
//    the lane l + 16 holding the same entry; instruction selection drops the `& 31` mask
//    since shfl reads lane bits 4..0 only). No selp tree, no shared memory.
//  - 128-bit weight loads (u32x4: 32 codes = half a block), f32x4 activation loads
//    (f16/bf16: reinterpreting u32x4 loads of 8 activations, each widened once per lane
//    after the batch's loads; the transpose's one activation per column: a scalar load),
//    all of a batch issued before the first use; 32-bit index math; no atomics: lanes
//    meet in a shuffle-xor butterfly, so the result is deterministic.
//  - per element: one shift, one shuffle, one f32 fma; the block scale is applied once per
//    (column, half block) per lane; no per-element f64 conversion.
//  - non-finite inputs: a NaN activation or code book product gives NaN as in the seed;
//    an infinite scale gives a non-finite result, but where the seed forms NF4[7] * inf =
//    NaN per element the fast nf4_gemm scales the block's sum and may give +-inf instead.
//
// nf4_gemm fast (m == 1): c[col] = sum_k a[k] * NF4[code(k, col)] * s[col, k/64].
//  Column col's codes are k/2 contiguous bytes (k fastest), so the reduction runs along
//  contiguous memory. A subgroup owns (32 / k_lanes) * columns_per_lane consecutive
//  columns: lane = column_group * k_lanes + k_lane; k-lane j of a column group reads half
//  blocks j, j + k_lanes, ... of each of its columns_per_lane columns (adjacent k-lanes
//  read adjacent 16 bytes: whole 32-byte sectors) and the 32 activations of each half
//  block once for all its columns; batches of rounds_per_batch half blocks are loaded
//  before use. Per (column, half block) the lane sums p = sum_{32 k} a*NF4 in f32 (fma,
//  k ascending), then F32: acc = fma(s, p, acc) in f32; F64: acc = fma(f64(p), f64(s),
//  acc) in f64 (the product exact, one f64 rounding). The k-lanes' acc meet in a butterfly
//  (xor 1, 2, .., k_lanes/2; f64 shuffled as two 32-bit halves), the sum rounds to f32
//  once (F64). With k_subgroups > 1 (Nf4GemvSchedule) the workgroup's k_subgroups
//  subgroups per column group split the half blocks (k-lane j of the workgroup's
//  k_subgroups * k_lanes takes half blocks j, j + k_subgroups * k_lanes, ...) and their
//  sums meet in shared memory, added in k-subgroup order (ir/ops/SplitK.h); k-lane 0 of
//  k-subgroup 0 stores. Launch: subgroups_per_workgroup * k_subgroups * 32 invocations
//  per workgroup, ceil(n / columns per workgroup) workgroups; columns past n are clamped for
//  loads and never stored; half blocks past k/32 (k/32 not a multiple of k_lanes) load a
//  clamped address and contribute 0.
//  Bound (u = 2^-24, T = sum_k |a_k * NF4_k * s_k|, E = the exact real sum):
//   F64: |fast - E| <= u*|E| + 33*u*T (32-term f32 sums, the f64 part below 2^-40*T);
//        the seed's own |seed - E| <= u*|E| + u*T (its f32 rounding of NF4*s), so
//        |fast - seed| <= 2^-23*|E| + 34*u*T.
//   F32: |fast - E| <= (32 + ceil(k/(32*k_lanes)) + log2(k_lanes) + 10)*u*T (first order; the
//        k-subgroups' meeting adds at most 7 roundings), and
//        the seed's f32 fma chain |seed - E| <= (k + 1)*u*T, so |fast - seed| is within
//        the sum of both.
//  Errors (OpError): the seed's, first; then "schedule": "fast" with m > 1 and "accumulate":
//  "f64", or a shape the tensor-core GEMM cannot run (TensorGemm.h), names m, the reason
//  and the fix ("accumulate": "f32", "schedule": "seed" or "auto").
//
// nf4_gemm_transpose fast (m == 1): c[r] = sum_c a[c] * NF4[code(r, c)] * s[c, r/64].
//  Within column c the outputs r are contiguous (r fastest): lane groups own 32
//  consecutive outputs (one u32x4: half a block) and the other lane bits ("c-lanes")
//  split the columns: a subgroup holds output_lanes groups of 32 outputs and
//  32/output_lanes c-lanes; c-lane j takes columns j, j + c_lanes, ... in batches of
//  columns_per_batch whose weight, activation and scale loads are issued before use.
//  Per column the lane forms w = a[c] * s[c, block] once (f32, one rounding), then 32
//  fmas p_r = fma(w, NF4[code_r], p_r) in f32; after each chunk of columns_per_chunk
//  columns the 32 partials convert to f64 once and are added into f64 accumulators (a
//  lone chunk's are them: p, summed from +0 by fma, is never -0, so 0 + p = p).
//  The c-lanes' f64 sums meet in a reduce-scatter butterfly (xor 16, 8, ..: at each level
//  a lane keeps the half of its outputs its lane bit selects and adds the partner's copy;
//  31 f64 exchanges instead of 32 * 5), so lane c_lane ends with outputs
//  c_lane*output_lanes + 0..output_lanes-1 of its group, rounds them to f32 once and
//  stores them (coalesced). Sectors: with output_lanes = 2 (the default) the two lanes of
//  a pair read the two 16-byte halves of one 32-byte sector of their column: whole
//  sectors, 100% sector efficiency. That leaves k/64 subgroups (64 at k = 4096), too
//  few for 132 SMs, so the columns are also split across workgroups (ir/ops/SplitK.h's
//  choose_splits, then twice the splits while the grid stays one wave at the 64
//  registers a thread it asks for, Program::min_resident_workgroups, and each c-lane keeps
//  two columns: 64 splits at k = 4096, 4096 shorter warps in the one wave; 16 at k =
//  11008): c-lane j of the splits * c_lanes takes columns j, j + splits * c_lanes,
//  ..., and each workgroup's f64 sums meet in scratch `partials` f64[splits * k] (one
//  counter per output group pair in `arrivals` u32[k/64]), added in split order by the
//  last workgroup, which rounds to f32 and stores. (output_lanes = 1 reads half sectors:
//  the neighbouring warp reads the other half.) Launch: subgroups_per_workgroup * 32
//  invocations per workgroup, ceil(k / (32 * output_lanes * subgroups_per_workgroup))
//  workgroups along x and the splits along y (only with one subgroup per workgroup; k/32
//  output groups; groups past k/32 are clamped and never stored).
//  Bound (T_r = sum_c |a_c * NF4 * s|, E_r exact, J = columns_per_chunk):
//   |fast - E| <= u*|E| + (J + 2)*u*T_r; |fast - seed| <= 2^-23*|E| + (J + 3)*u*T_r (the
//   splits' partials add in f64: their roundings stay below 2^-40 * T_r).
//  Errors (OpError): the seed's first; then "fast" with m != 1.

/// Work split of the fast nf4_gemm (m == 1).
struct Nf4GemvSchedule {
  std::uint32_t k_lanes = 16;           // lanes splitting one column's half blocks (power of two, 2..32)
  /// Columns each lane reads for the same k, reusing its activations; 0 chooses: 4 where
  /// k >= 1024 and n >= 2048 (at least 128 workgroups of 16 columns), else 2. 4 ran
  /// 1.26-1.36x faster than 2 at the Llama shapes on an H200 (half the activation loads,
  /// which are most of the kernel's L1 wavefronts; bench/results/gpu-nvidia-h200.md,
  /// "nf4_gemm: columns per lane") and 8% slower at 384x1536, where the launch dominates;
  /// at small k its f64 program also spills, at small n it halves the workgroups.
  std::uint32_t columns_per_lane = 0;
  std::uint32_t rounds_per_batch = 2;   // half blocks per column loaded before use
  std::uint32_t subgroups_per_workgroup = 2;  // column subgroups per workgroup
  /// Subgroups of a workgroup that split the half blocks of the same columns (each with
  /// its own k_lanes), meeting in shared memory (ir/ops/SplitK.h); 0 chooses (see
  /// resolve_nf4_gemv_schedule).
  std::uint32_t k_subgroups = 0;
  std::uint32_t columns_per_subgroup() const { return 32 / k_lanes * columns_per_lane; }
};

/// `split` with the choices left to the fast nf4_gemm made for n columns of depth k: columns_per_lane
/// (see the field) and k_subgroups, when 0, the largest power of two up to 4 that leaves
/// every k-lane of the workgroup at least two half blocks (k/32 >= 2 * k_subgroups *
/// k_lanes), as the nibble GEMV (ir/ops/QuantizedGemv.h) and for the same reason: more,
/// shorter warps in flight.
Nf4GemvSchedule resolve_nf4_gemv_schedule(std::uint32_t n, std::uint32_t k, Nf4GemvSchedule split = {});

/// Work split of the fast nf4_gemm_transpose (m == 1).
struct Nf4GemvTransposeSchedule {
  std::uint32_t output_lanes = 2;        // lanes of 32 outputs per subgroup (1 or 2)
  std::uint32_t columns_per_batch = 32;  // columns whose loads are issued together
  std::uint32_t columns_per_chunk = 64;  // columns summed in f32 before the f64 add (multiple of the batch)
  std::uint32_t subgroups_per_workgroup = 1;
};

/// nf4_gemm with the program `schedule` picks (see above); Auto takes fast when m == 1.
Program nf4_gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k, Nf4Accumulation accumulation,
                 KernelSchedule schedule, const Nf4GemvSchedule& split = {},
                 ScalarType activation = ScalarType::F32, Nf4CodeBook code_book = Nf4CodeBook::Nf4);
/// nf4_gemm_transpose with the program `schedule` picks; Auto takes fast when m == 1.
Program nf4_gemm_transpose(std::uint32_t m, std::uint32_t n, std::uint32_t k, KernelSchedule schedule,
                           const Nf4GemvTransposeSchedule& split = {}, ScalarType activation = ScalarType::F32,
                           Nf4CodeBook code_book = Nf4CodeBook::Nf4);

/// The Lookup table entries (f32 bit patterns) of `code_book`.
std::vector<std::uint64_t> code_book_table(Nf4CodeBook code_book);

/// Registry entries: nf4_gemm (parameters accumulate: "f64" | "f32", quant_type: "nf4" |
/// "fp4", schedule, activation), nf4_gemm_transpose (quant_type, schedule, activation).
std::vector<OpInfo> nf4_gemm_ops();

}  // namespace quantc::ir::ops
