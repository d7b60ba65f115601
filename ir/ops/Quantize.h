// Group-wise INT4 and NF4 quantization and dequantization of a flat f32 vector.
// Semantics follow oxicuda-dnn 0.1.7 `quantize` (`quantize_to_int4`, `quantize_to_nf4`,
// `dequantize_int4` and its NF4 table) with the seed's defects corrected (see
// "Deviations from the seed" below); the quantizer definitions on each function below
// are quantc's own, and the host packer (ir/ops/HostPack.h) follows them exactly.
//
// Element layout (all ops): the input x is f32[n], element i fastest. Groups are the
// runs of `group_size` consecutive elements [g*group_size, (g+1)*group_size); group g
// has one f32 scale (and, asymmetric INT4 only, one f32 zero point) at index g; the
// last group holds n - (group_count-1)*group_size elements when group_size does not
// divide n. group_count = ceil(n / group_size).
//
// Packing: codes are 4-bit (0..15), two per byte in a u8 buffer of ceil(n/2) elements
// (bytes): byte b holds element 2b in its low nibble (bits 0..3) and element 2b+1 in
// its high nibble (bits 4..7). When n is odd the last byte's high nibble is 0. The
// bytes are little-endian-compatible with the u32 words nf4_gemm reads: word w of a
// u32 view is bytes 4w..4w+3, so element 8w+p sits at bits 4p..4p+3.
//
// Why each invocation writes whole bytes: PTX has no 8-bit registers and no 4-bit
// stores, so a nibble store is a read-modify-write of its byte; two invocations
// writing the two nibbles of one byte would race. Every quantizer invocation therefore
// computes both codes of a byte and stores the byte once.
//
// Launch shape of the quantizers: 256-invocation workgroups = 8 subgroups of 32 lanes;
// one subgroup per *pair* of groups (2p, 2p+1), ceil(ceil(n/group_size)/2 / 8)
// workgroups. For each of its two groups the subgroup's lanes stride over the group
// (lane l reads elements start + l, start + l + 32, ...), keep a lane-local max|v|
// (or min and max), and combine the 32 lane values with one subgroup_max /
// subgroup_min butterfly (16, 8, 4, 2, 1; every lane gets the same bits). Pairs are
// used so that the span a subgroup owns, 2*group_size elements starting at the even
// element 2p*group_size, is exactly group_size whole bytes even for odd group sizes;
// lane l then packs bytes p*group_size + l, + l + 32, ... Subgroup operations sit
// only under subgroup-uniform control flow (the pair bound and constant trip counts);
// lane-dependent guards wrap the loads and stores only. Lane 0 stores the scales.
//
// Rounding: "round" is round-half-to-even (IEEE roundTiesToEven, PTX `cvt.rni`). The seed
// programs compute it as the seed's kernels do,
// |v| < 2^23 ? copysign((|v| + 2^23) - 2^23, v) : v (every f32 with |v| >= 2^23 is
// already an integer; NaN and infinities pass through), bit-identical to cvt.rni except
// for a NaN's payload, which no stored result depends on (a NaN input's code is chosen
// from the input, and a scale or zero point is never NaN). The fast programs use the
// IR's round (one cvt.rni).
//
// Special values (all quantizers): NaN and +-inf never enter a scale or zero point
// (the reductions take finite values only). A NaN input gets the code that
// dequantizes nearest to zero (8 symmetric INT4, 7 NF4, clamp(zero_point, 0, 15)
// asymmetric, which is exactly zero whenever the zero point lies in 0..15);
// +inf gets the largest code (15) and -inf the smallest (0). Every stored nibble is in
// 0..15. A group with no finite element has scale from absmax = 0 (INT4 symmetric,
// NF4) or min = max = 0 (asymmetric).
//
// Deviations from the seed (its defects are not copied):
// - asymmetric INT4: the seed's quantizer never adds the zero point and its
//   dequantizer never subtracts it, and its zero point -min/scale is not rounded; here
//   zero = round(-min/scale), q = clamp(round(v/scale) + zero, 0, 15) and dequant is
//   (q - zero) * scale.
// - NF4: the seed reuses the INT4 scale kernel (absmax/7) although its doc says absmax;
//   here scale = absmax.
// - symmetric INT4: the seed's comment says absmax/8 where its code divides by 7; here
//   scale = max(absmax, 1e-12) / 7 as quantize_int4 defines it. The seed clamps before
//   rounding and converts with an unspecified mode; here round half to even, then clamp.
// - the seed computes scales with one thread per group looping serially, in a separate
//   kernel; here one fused kernel reduces with subgroup butterflies.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/QuantizedGemv.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The 16 NF4 code values (normal-distribution quantiles, ascending, exactly
/// representable in f32), from the seed's NF4_LOOKUP. Code c dequantizes to
/// kNf4Table[c] * scale.
extern const std::array<float, 16> kNf4Table;

/// The smallest range the quantizers divide by, from the seed (1e-12).
inline constexpr float kQuantizeEpsilon = 1e-12f;

/// The 15 thresholds of NF4 encoding: threshold i separates codes i and i+1 and is the
/// largest f32 <= (kNf4Table[i] + kNf4Table[i+1]) / 2 (the exact midpoint, computed in
/// f64). Rounding down makes "x > threshold" equal "x > exact midpoint" for every f32
/// x, so the chosen code is the nearest one with ties to the lower code.
std::array<float, 15> nf4_thresholds();

/// INT4 group quantizer. Buffers (bindings in order): x f32[n] (read-only),
/// packed u8[ceil(n/2)], scale f32[group_count] and, when !symmetric,
/// zero_point f32[group_count] (all read-write; the zero point holds an integer value).
/// symmetric:  scale = max(absmax, 1e-12) / 7, q = clamp(round(v/scale), -8, 7) + 8.
/// asymmetric: scale = max(max - min, eps) / 15 with eps = max(1e-12, 2^-20 *
///   max(|min|, |max|)) (group-relative so zero stays an exact f32 integer below 2^24
///   and a constant group round-trips to within an ulp), range capped at FLT_MAX;
///   zero = round(-min/scale), q = clamp(round(v/scale) + zero, 0, 15).
/// Round trip: |dequant(q) - v| <= scale/2 (plus f32 rounding) for finite v, except in
/// asymmetric mode where the clamp engaged (v at the group's min or max with both
/// roundings going outward): there <= scale. Launch and special values: file comment.
/// Errors (OpError): n == 0, group_size == 0, n + 2*group_size > 2^32-1.
Program quantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric);

/// INT4 dequantizer: y[i] = (q_i - 8) * scale[g] (symmetric) or (q_i - zero_point[g])
/// * scale[g] (asymmetric), g = i / group_size, f32 arithmetic: the code converts
/// exactly, one subtraction and one multiplication each rounded to nearest even.
/// Buffers: packed u8[ceil(n/2)], scale f32[group_count], zero_point f32[group_count]
/// (asymmetric only) read-only; y f32[n] read-write. One invocation per element, 256
/// per workgroup, ceil(n/256) workgroups (invocations i >= n do nothing).
/// Errors (OpError): n == 0, group_size == 0.
Program dequantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric);

/// NF4 group quantizer: scale = absmax of the group's finite values; code = the NF4
/// value nearest to v / scale (v / 1 when absmax == 0), ties to the lower code,
/// chosen by counting the nf4_thresholds() that v/scale exceeds (15 compares).
/// Buffers: x f32[n] (read-only), packed u8[ceil(n/2)], scale f32[group_count].
/// Launch, packing and special values: file comment. Round trip: |dequant - v| is at
/// most scale * (half the widest gap between NF4 neighbours, 0.1519) + f32 rounding.
/// Errors (OpError): n == 0, group_size == 0, n + 2*group_size > 2^32-1.
Program quantize_nf4(std::uint32_t n, std::uint32_t group_size);

/// NF4 dequantizer: y[i] = kNf4Table[q_i] * scale[i / group_size], one f32
/// multiplication; the table is an ir::Lookup constant (a selp tree in PTX, no memory).
/// Buffers: packed u8[ceil(n/2)], scale f32[group_count] read-only; y f32[n]
/// read-write. One invocation per element, 256 per workgroup, ceil(n/256) workgroups.
/// Errors (OpError): n == 0, group_size == 0.
Program dequantize_nf4(std::uint32_t n, std::uint32_t group_size);

// ---------------------------------------------------------------------------------
// The fast schedules ("schedule": "fast"; "auto", the registry's default, picks them
// where they can run, else the seed programs above). Same buffers (names, element types,
// counts, binding order), same program names, same results bit for bit: the codes,
// scales, zero points and dequantized values are computed by the same f32 operations in
// the same order; only the work split, the memory accesses and the NF4 code book /
// threshold search change. The quantizers' absmax / min / max reductions run in a
// different order, which cannot change their result: max and min of the same finite
// values are exact and order-independent (-0 orders below +0 in both orders, NaN never
// enters), so every scale and zero point has the seed's bits.
//
// Fast dequantizers (any n, any group_size). Where n and group_size are multiples of 8, a
// subgroup owns 16H consecutive u32 words of `packed` in H slots of 16 words (H = 16 where
// even 8-slot subgroups would pass the 8448 warps 132 SMs hold, else 8: small grids are
// latency-bound and want more, shorter warps): lane l takes half l % 2 (codes
// 4(l % 2) .. + 3) of word base + 16h + l / 2, h = 0..H-1, each a reinterpreting u32 load
// that the lane pair shares (64 contiguous bytes a request, 2 whole sectors), with the
// scale (and zero point) of the word's group; at group_size 128 a slot is one group, the
// same in every lane, and the subgroup's H scales (and zero points) come as f32x4 loads.
// All loads issue before any use. The word shifted right by 0 or 16 puts the lane's codes
// at nibbles 0..3, which decode in place (nibble_plus_bias, ir/ops/Nibbles.h: one lop3
// gives 2^(23-4p) + q exactly, and one exact subtraction q - 8 or q), NF4 codes by a
// shuffle from lane (half >> 4p) & 31 (shuffled_code: no mask instruction); each slot's
// four values go out as one f32x4 store, so that every store request of the subgroup
// writes 512 contiguous bytes (whole sectors). An earlier layout, a lane a word and its
// eight values by two f32x4 stores that each filled half of 32 sectors, ran at 45-56% of
// an H200's copy bandwidth against 77-87% for whole-sector stores
// (bench/results/gpu-nvidia-h200.md, 2026-11-27), though the cost model saw no difference.
// 0.26 (symmetric INT4), 0.33 (zero point), 0.28 (NF4) warp instructions per packed byte
// at 4096x4096 (0.30, 0.39, 0.39 with 8 slots, scalar sidecars and masked NF4 shuffle
// lanes), 0.35 and 0.32 at MiniLM's shapes (8 slots). Tails: the word loads clamp, the
// stores are guarded. Otherwise (odd group sizes, n not a multiple of 8) the byte program:
// a subgroup owns 128 consecutive packed bytes (256 elements); lane l handles bytes base +
// 32*j + l, j = 0..3: each of the four u8 loads of a subgroup reads one whole 32-byte
// sector, and all loads (codes, scales, zero points) are issued before any use. A byte's
// two codes decode exactly by
// bitcast(0x4B000000 | q) - 2^23 (INT4; symmetric subtracts 2^23 + 8 in the same exact
// operation, giving q - 8) and are stored with one f32x2 store (the 32 lanes write 256
// contiguous bytes). NF4 codes index a register code book: every lane holds
// kNf4Table[lane & 15] and code q is subgroup_shuffle(book, q), one shfl per code
// instead of the seed's 15-selp Lookup tree. Scales (and zero points) are loaded once per
// group per byte slot; when group_size is a multiple of 64 dividing 256 or a multiple of
// 256 they are subgroup-uniform and shared by the slots of the same group. Tails: the
// loads clamp their byte to the last one, the stores are guarded (the last byte of an odd
// n stores its low element alone).
//
// Fast quantizers (group_size even and at most 512; n any). A unit is what one store
// writes: a u32 word (8 codes, a reinterpreting st.global.u32) where n and group_size are
// multiples of 8, else a byte (2 codes). A group's gs/8 words (gs/2 bytes) are owned by S
// lanes, each holding P unit slots (lane-in-group k owns units k, k + S, ...); a subgroup
// handles 32/S consecutive groups.
// - Words: S = pow2ceil(gs/8) when gs <= 64 (one word a lane; the groups of a subgroup
//   lie back to back), else S = clamp(pow2ceil(ceil(gs/16)), 8, 32) (about 2 words a lane,
//   and at least a sector's 8 words of each group per store). A word's 8 values arrive by
//   two f32x4 loads (its own 32 bytes of x); each store instruction writes whole 32-byte
//   sectors of `packed` (100% store sector efficiency, against 25% for byte stores). The
//   codes round with the IR's round (one cvt.rni; bit-identical to the seed's expression,
//   see "Rounding"). At 4096x4096 g64 this is 1.1 (symmetric), 1.4 (asymmetric) and 1.75
//   (NF4) warp instructions per packed byte, against 1.9-2.3 for the byte program: the
//   seed's per-element division v / scale (div.rn.f32, which a reciprocal cannot replace
//   bit for bit), rounding, clamp, NaN select and the finite-value reduction leave about
//   14 instructions per element, so the quantizers stay above 0.35 per packed byte; they
//   are bound by DRAM (they read 8 bytes of x per packed byte) at 90% of its bandwidth.
// - Bytes: S = min(32, pow2ceil(ceil(gs/8))), P = ceil(gs/2 / S) (each f32x2 load of a
//   slot reads 8*S contiguous bytes of x per group: whole sectors), one u8 store a byte.
// Each lane loads its values once (all loads in flight together), reduces them in
// registers (a value left out of the reduction, non-finite or past n, becomes NaN, which
// min and max pass over), combines the S lanes of its group with a shuffle-xor butterfly
// (subgroup_max / subgroup_min when S = 32), encodes from registers and stores each unit
// once. The INT4 code uses the seed's expression (encode() in Quantize.cpp); the NF4 code is the
// number of nf4_thresholds() that v/scale exceeds (v/scale computed as the seed does),
// found by a 4-step binary search over a register table (lane holds threshold[lane & 15];
// three shfl per code) instead of 15 compares: the thresholds ascend strictly, so
// "v/scale > t_i" holds for a prefix of i and the search returns the same count. The last
// three steps test "v/scale <= t" and go up when it fails, so a NaN (every compare false)
// lands on code 7, the seed's NaN code.
// Tails: values past n are excluded from the reductions (as the seed's guards do), the
// loads clamp to the last whole unit of x (byte program: pair) and an odd n's last value
// is a scalar load, stores are guarded.
// OpError (schedule fast): group_size odd (a packed byte would hold two groups' codes;
// the seed pairs groups for that) or above 512 (a group no longer fits in registers);
// the message names the value and says to use "schedule": "seed".

/// Why the fast quantizers cannot run (n, group_size), or nullopt when they can.
std::optional<std::string> fast_quantizer_unsupported(std::uint32_t n, std::uint32_t group_size);

/// The ops with the program `schedule` picks (Seed: the functions above; Fast: see above,
/// OpError where fast_quantizer_unsupported; Auto: fast where it can run, else seed).
/// Errors of the seed (n == 0, group_size == 0, index overflow) come first for both.
Program quantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric, KernelSchedule schedule);
Program dequantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric, KernelSchedule schedule);
Program quantize_nf4(std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule);
Program dequantize_nf4(std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule);

/// A 16-value code book as Lookup table entries (f32 bit patterns).
std::vector<std::uint64_t> f32_lookup_table(const std::array<float, 16>& values);

/// kNf4Table as Lookup table entries (f32 bit patterns), for other NF4 ops.
std::vector<std::uint64_t> nf4_lookup_table();

/// bitsandbytes' FP4 code book (bitsandbytes/functional.py get_4bit_type("fp4"), bnb
/// 0.43-0.45): {0, 0.0625, 8, 12, 4, 6, 2, 3} and their negations (codes 8..15: the sign
/// is bit 3, code 8 is -0), each divided by 12 in f32 (torch's data.div_(data.abs().max())).
/// These are the values of bnb's CUDA decode tree dDequantizeFP4Tree (csrc/kernels.cu:
/// 0, 5.208333333e-03f, 0.66666667f, 1, 0.33333333f, 0.5, 0.16666667f, 0.25, signed),
/// which multiplies them by the block's absmax in f32, as the ops here do.
extern const std::array<float, 16> kBnbFp4Table;

/// Registry entries: quantize_int4, dequantize_int4, quantize_nf4, dequantize_nf4
/// ("schedule": auto by default).
std::vector<OpInfo> quantize_ops();

}  // namespace quantc::ir::ops
