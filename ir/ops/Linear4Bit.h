// Fused 4-bit linear layers: unpack-on-demand INT4 weights inside the dot product.
// Semantics, layouts, errors and fixtures follow vyre-libs 0.6.3 `nn::linear_4bit`.
//
// The C++ constructors keep the seed's names, in_dim and out_dim; a JSON spec gives them as
// k and n (the seed's names are accepted as aliases, ir/ops/Registry.h).
//
// Packed weight layout (both ops): `w` is u32[in_dim/8 * out_dim]. Weight (k, i) —
// input feature k, output feature i — lives in word `(k/8)*out_dim + i`, nibble `k%8`
// at bits `4*(k%8) .. 4*(k%8)+3`. The output index i is fastest within a row of words,
// so the eight nibbles of one word are eight consecutive k of one output column.
//
// Activations ("activation": "f32" | "f16" | "bf16", ir/ops/Activation.h): x, b and out
// hold the activation type (f32 by default); f16/bf16 values of x and b widen exactly to
// f32, the sum below runs in f32 as documented, and `b[i] + sum` is rounded once to the
// activation type when it is stored. The error bounds below are of that f32 value y; the
// stored f16/bf16 output adds at most u_h*|y| + eta_h (u_h = 2^-11 for f16, 2^-8 for
// bf16; eta_h = 2^-25, 2^-134), and |y| >= 65520 stores +-inf in f16.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/QuantizedGemv.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The region op id of linear_4bit_affine_grouped's programs, every schedule's.
inline constexpr char kLinear4BitAffineGroupedId[] = "vyre-libs::nn::linear_4bit_affine_grouped";

/// `out[i] = b[i] + sum_k x[k] * nibble(w, k, i)` with unsigned nibbles 0..15.
/// Buffers (bindings in order; A = the activation type): x A[in_dim],
/// w u32[in_dim/8*out_dim], b A[out_dim] (all read-only), out A[out_dim] (read-write).
/// One invocation per output, 256 per workgroup, ceil(out_dim/256) workgroups; each
/// invocation accumulates sequentially in f32 from k = 0 upward, starting from b[i] (the
/// seed's order): |y - exact| <= 2*u*(in_dim + 1)*(|b[i]| + sum_k |x[k]*q|), u = 2^-24.
/// Errors (OpError): in_dim == 0, out_dim == 0, in_dim % 8 != 0, in_dim/8*out_dim > 2^32-1.
Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim, ScalarType activation = ScalarType::F32);

/// `out[i] = b[i] + sum_k x[k] * (nibble(w, k, i) - zero_point[g, i]) * scale[g, i]`
/// with g = k / group_size. Sidecars scale f32 and zero_point u32 (values 0..15) are
/// indexed `g*out_dim + i` (output fastest), group_count = ceil(in_dim/group_size).
/// Buffers (A = the activation type): x A[in_dim], w u32[in_dim/8*out_dim],
/// scale f32[group_count*out_dim], zero_point u32[group_count*out_dim], b A[out_dim],
/// out A[ceil(out_dim/8)*256] whose output byte range [0, out_dim*sizeof(A)) trims the
/// launch padding.
/// Launch: 256-invocation workgroups = 8 subgroups, one subgroup of 32 lanes per
/// output; ceil(out_dim/8) workgroups. Lane l handles k = chunk*32 + l; lane 8j loads
/// packed word j of the chunk and a subgroup shuffle broadcasts it to lanes 8j..8j+7.
/// Each lane accumulates its k in f32 in chunk order, the 32 partial sums are combined
/// by subgroup_add (butterfly 16, 8, 4, 2, 1) and lane 0 stores b[i] + sum (rounded to
/// the activation type): |y - exact| <= 2*u*(ceil(in_dim/32) + 8)*(|b[i]| + sum_k |x[k]*w|).
/// The constructor always writes the per-chunk form (sidecars loaded per chunk); the
/// sidecar-hoisting pass rewrites it into group loops when groups align to chunks.
/// Errors (OpError): in_dim == 0, out_dim == 0, group_size == 0 (message contains
/// "group_size=0"), in_dim % 8 != 0 ("not divisible by 8"), and overflow of the packed,
/// sidecar or padded output counts.
///
/// Batches ("m" > 1: an extension, the seed is a matrix-vector product): x is A[m, in_dim]
/// and out A[m, out_dim], row-major (the feature index fastest), without padding; the seed
/// program runs once per row (workgroup row r reads x[r, :] and writes out[r, :], a grid of
/// ceil(out_dim/8) x m workgroups) with the bounds above per row. With act_order each row
/// reads x[r, perm[k]], so a perm value past in_dim reads the next row's x (the last row's
/// is out of bounds). Errors (OpError) as above, and m == 0, m > 65535 (the grid's rows),
/// m*in_dim or m*out_dim past 2^32-1.
///
/// Act-order ("act_order": true; GPTQ desc_act checkpoints): the activations are read
/// through a permutation. A buffer perm u32[in_dim] (read-only) follows x, and
///   out[i] = b[i] + sum_k x[perm[k]] * (nibble(w, k, i) - zero_point[g, i]) * scale[g, i],
///   g = k / group_size,
/// in the same order and with the same bounds as above (only the x each term reads
/// changes). perm must hold values < in_dim (a permutation, as `quantc convert` writes
/// it); a larger value is an out-of-bounds load (the interpreter and the emulator report
/// it). `quantc convert` maps an act-order GPTQ layer, whose g_idx scatters each group's
/// input features over the whole of k, onto this: it sorts the input features by g_idx,
/// stably (so perm[k] is the k-th input feature in (group, index) order and group g's
/// features are rows g*group_size .. of the sorted order), moves qweight's nibbles to
/// their sorted rows, and writes perm; the sidecars keep their [group, out] layout. This
/// is the load-time reordering of ExLlama and ExLlamaV2 (QMatrix::make_sequential:
/// a stable counting sort of the rows by g_idx into q_perm, the nibbles moved row by
/// row) and of Marlin (vLLM marlin_sort_g_idx + gptq_marlin_repack); ExLlamaV2's GPTQ
/// kernel then gathers a[q_perm[k]] inside the GEMM, as this op does, while Marlin
/// (permute_cols_kernel) and ExLlama v1 by default (column_remap; a fused remap in the
/// matmul is its tuning option) permute the activations in a separate kernel first.
/// Why gather x rather than keep g_idx and index the sidecars by it (cost, batch 1,
/// where the weights' DRAM traffic sets the time):
///  - the gather adds perm, in_dim*4 bytes read once from DRAM and then from L2 by every
///    subgroup like x (16 KiB against 8 MiB of weights at 4096 x 4096: 0.2%), and turns
///    the fast schedule's two 16-byte x loads per packed row into two 16-byte perm loads
///    and 8 scalar gathers, which the fast schedule serves from a copy of x in shared
///    memory (in_dim <= 12288; QuantizedGemv.h: random addresses would cost one L1
///    wavefront per lane from global memory); the weights, the sidecars (once per group)
///    and the arithmetic are unchanged, and no second kernel or scratch copy of x in
///    device memory is needed. H100 cost model (fitted to an H200), 4096 x 4096 g128:
///    11.3 us without act_order, 13.8 us with it (11008 x 4096: 32.8 and 40.8 us);
///  - indexing the sidecars by g_idx gives every k its own group: scale and zero point
///    load per weight (8 bytes of sidecar per 4-bit weight, 16x the weight bytes, from
///    L2), g_idx adds the same in_dim*4 bytes as perm, and the fast schedule's
///    s * (sum x*q - z * sum x) factoring per group is lost (a multiply per weight).
Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   ScalarType activation = ScalarType::F32, bool act_order = false,
                                   std::uint32_t m = 1);

/// The op with the program `schedule` picks (ir/ops/QuantizedGemv.h): Seed is the
/// constructor above; Fast is nibble_gemv, whose reduction order differs (results agree
/// within the f32 accumulation bound) and which needs out_dim % 8 == 0 (OpError
/// otherwise); Auto takes Fast where it can run. Same buffers and errors as above, for
/// every activation type and with act_order (the fast schedule's gathers: QuantizedGemv.h).
/// Batches (m > 1; the linear_4bit_affine_grouped constructor above documents its m):
/// Fast is the tensor-core GEMM (ir/ops/TensorGemm.h, TensorWeights::Gptq; sm_80+), within
/// 2 u L (|b[i]| + sum_k |x w|) of the exact value, L = group_size + 5 + 2 ceil(k /
/// group_size), and equal to the seed bit for bit where every partial sum is exact, where
/// it runs the shape: f16 or bf16 activations, n % 32 == 0, k % 32 == 0 and group_size %
/// 32 == 0 with a group's rows within its shared-memory staging. Elsewhere (f32
/// activations, other shapes) Fast is nibble_gemv once per row (NibbleGemv::rows; each
/// row equal to that row's batch-1 Fast program bit for bit), and where that cannot run
/// either, OpError "Fix: linear_4bit_affine_grouped has no fast schedule for m=..: not the
/// tensor cores (<reason>), nor the GEMV per row (<reason>)". Auto takes the GEMV per row
/// where it runs, else the seed: it never takes the tensor cores, since op constructors do
/// not know the target (build_program, ir/ops/Spec.h, takes Fast for a program built for
/// sm_80+).
Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim, KernelSchedule schedule,
                    ScalarType activation = ScalarType::F32);
Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   KernelSchedule schedule, ScalarType activation = ScalarType::F32,
                                   bool act_order = false, std::uint32_t m = 1);

/// Registry entries for linear_4bit and linear_4bit_affine_grouped ("schedule": auto by
/// default; "activation": f32 by default; the affine op's "act_order": false by default,
/// its buffer perm exists only when true).
std::vector<OpInfo> linear_4bit_ops();

}  // namespace quantc::ir::ops
