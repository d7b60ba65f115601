// Fused 4-bit linear layers: unpack-on-demand INT4 weights inside the dot product.
// Semantics, layouts, errors and fixtures follow vyre-libs 0.6.3 `nn::linear_4bit`.
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
Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   ScalarType activation = ScalarType::F32);

/// The op with the program `schedule` picks (ir/ops/QuantizedGemv.h): Seed is the
/// constructor above; Fast is nibble_gemv, whose reduction order differs (results agree
/// within the f32 accumulation bound) and which needs out_dim % 8 == 0 (OpError
/// otherwise); Auto takes Fast where it can run. Same buffers and errors as above, for
/// every activation type.
Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim, KernelSchedule schedule,
                    ScalarType activation = ScalarType::F32);
Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   KernelSchedule schedule, ScalarType activation = ScalarType::F32);

/// Registry entries for linear_4bit and linear_4bit_affine_grouped ("schedule": auto by
/// default; "activation": f32 by default).
std::vector<OpInfo> linear_4bit_ops();

}  // namespace quantc::ir::ops
