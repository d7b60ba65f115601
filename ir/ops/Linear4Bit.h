// Fused 4-bit linear layers: unpack-on-demand INT4 weights inside the dot product.
// Semantics, layouts, errors and fixtures follow vyre-libs 0.6.3 `nn::linear_4bit`.
//
// Packed weight layout (both ops): `w` is u32[in_dim/8 * out_dim]. Weight (k, i) —
// input feature k, output feature i — lives in word `(k/8)*out_dim + i`, nibble `k%8`
// at bits `4*(k%8) .. 4*(k%8)+3`. The output index i is fastest within a row of words,
// so the eight nibbles of one word are eight consecutive k of one output column.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/QuantizedGemv.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// `out[i] = b[i] + sum_k x[k] * nibble(w, k, i)` with unsigned nibbles 0..15.
/// Buffers (bindings in order): x f32[in_dim], w u32[in_dim/8*out_dim], b f32[out_dim]
/// (all read-only), out f32[out_dim] (read-write). One invocation per output, 256 per
/// workgroup, ceil(out_dim/256) workgroups; each invocation accumulates sequentially
/// in f32 from k = 0 upward, starting from b[i] (the seed's order).
/// Errors (OpError): in_dim == 0, out_dim == 0, in_dim % 8 != 0, in_dim/8*out_dim > 2^32-1.
Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim);

/// `out[i] = b[i] + sum_k x[k] * (nibble(w, k, i) - zero_point[g, i]) * scale[g, i]`
/// with g = k / group_size. Sidecars scale f32 and zero_point u32 (values 0..15) are
/// indexed `g*out_dim + i` (output fastest), group_count = ceil(in_dim/group_size).
/// Buffers: x f32[in_dim], w u32[in_dim/8*out_dim], scale f32[group_count*out_dim],
/// zero_point u32[group_count*out_dim], b f32[out_dim], out f32[ceil(out_dim/8)*256]
/// whose output byte range [0, out_dim*4) trims the launch padding.
/// Launch: 256-invocation workgroups = 8 subgroups, one subgroup of 32 lanes per
/// output; ceil(out_dim/8) workgroups. Lane l handles k = chunk*32 + l; lane 8j loads
/// packed word j of the chunk and a subgroup shuffle broadcasts it to lanes 8j..8j+7.
/// Each lane accumulates its k in f32 in chunk order, the 32 partial sums are combined
/// by subgroup_add (butterfly 16, 8, 4, 2, 1) and lane 0 stores b[i] + sum.
/// The constructor always writes the per-chunk form (sidecars loaded per chunk); the
/// sidecar-hoisting pass rewrites it into group loops when groups align to chunks.
/// Errors (OpError): in_dim == 0, out_dim == 0, group_size == 0 (message contains
/// "group_size=0"), in_dim % 8 != 0 ("not divisible by 8"), and overflow of the packed,
/// sidecar or padded output counts.
Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size);

/// The op with the program `schedule` picks (ir/ops/QuantizedGemv.h): Seed is the
/// constructor above; Fast is nibble_gemv, whose reduction order differs (results agree
/// within the f32 accumulation bound) and which needs out_dim % 8 == 0 (OpError
/// otherwise); Auto takes Fast where it can run. Same buffers and errors as above.
Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim, KernelSchedule schedule);
Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   KernelSchedule schedule);

/// Registry entries for linear_4bit and linear_4bit_affine_grouped ("schedule": auto by default).
std::vector<OpInfo> linear_4bit_ops();

}  // namespace quantc::ir::ops
