// Fused dequantize + matmul: `out[i, j] = sum_p x[i, p] * dequant(W[p, j])` with the
// weights kept quantized in memory. Semantics and layouts follow RLX's CPU thunks
// `dequant_matmul_{int8,int4,fp8,nvfp4}` (RLX `rlx_cpu/thunk.rs`, no released version).
//
// Shapes (every op): x f32[m*k] is [m, k] row-major (k fastest); the logical weight W is
// [k, n] row-major (n fastest): element (p, j) has linear index p*n + j; out f32[m*n] is
// [m, n] row-major (n fastest). Block sidecars are [ceil(k/block_size), n] (n fastest):
// the entry for (p, j) is at (p/block_size)*n + j. A partial last block is allowed.
//
// Floating-point order (the seed's, so results match RLX's CPU reference bit for bit):
// each output starts from +0.0 and adds x[i, p] * w(p, j) for p = 0, 1, ..., k-1 in
// that order, the product rounded before the add (as built; -O2's contract_fma fuses
// them into FMAs unless --fp-contract=off, see ir/IR.h, and RLX bit-exactness then
// needs --fp-contract=off).
// How w(p, j) and the product are rounded is given per op below.
//
// Kernel tile (every op): an invocation owns one output column j and a tile of
// min(m, 4) consecutive rows. Each weight is loaded and decoded once per invocation and
// reused from a register for the tile's rows, so weight traffic, which dominates a
// quantized matmul, is divided by the tile height; 4 rows keep the register footprint
// (4 accumulators + 4 row offsets) small enough for full occupancy. Consecutive
// invocations take consecutive columns, so a subgroup's weight loads at one p are 32
// consecutive elements (coalesced) and its x loads are one broadcast address per row.
// Workgroups are 128 invocations along n: the grid is (ceil(n/128), ceil(m/tile)).
// The k loop runs block by block so each block's sidecars are loaded once. Rows past
// m in the last row tile reload row m-1 and skip their stores. The IR has no shared
// memory, so there is no cross-invocation staging; a later tuning pass may add it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/IR.h"
#include "ir/Program.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The two OCP 8-bit floating-point formats.
enum class Fp8Format : std::uint8_t { E4M3, E5M2 };
std::string_view to_string(Fp8Format format);  // "e4m3", "e5m2"
/// Parses "e4m3" / "e5m2"; nullopt otherwise.
std::optional<Fp8Format> parse_fp8_format(std::string_view text);

/// IR that decodes an FP8 code (u32 holding 0..255) to f32, exactly, per the OCP 8-bit
/// floating point specification as NVIDIA implements it (cuda_fp8.h `__nv_cvt_fp8_to_halfraw`):
/// - E4M3 (bias 7): no infinities; 0x7F and 0xFF are NaN; largest finite 448 (0x7E);
///   exponent 0 is subnormal, m * 2^-9. The RLX seed's decoder instead treats
///   exponent 15 as infinity/NaN (so 0x78..0x7E read as inf/NaN there, 256..448 here):
///   this op follows the standard, not the seed.
/// - E5M2 (bias 15): IEEE-like; exponent 31 is infinity (mantissa 0) or NaN; subnormals
///   m * 2^-16; largest finite 57344.
/// Built from a 16/32-entry power-of-two Lookup (exponent) times the integer
/// significand, then times +-1 for the sign, so every value is exact; 0x80 decodes to
/// -0.0. Binds its intermediates in `body` as lets named `<prefix>_exponent`,
/// `<prefix>_magnitude`, ... (the prefix must be unused in that scope).
Expr decode_fp8(Body& body, Fp8Format format, const Expr& code, const std::string& prefix);

/// IR that decodes an FP4 E2M1 nibble (u32 holding 0..15) to f32 through a 16-entry
/// Lookup: codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; code 8+c is the negation of code c
/// (8 is -0.0). E2M1 has no infinities or NaN.
Expr decode_fp4_e2m1(Expr code);

/// INT8 block-quantized weights: w(p, j) = (f32(q) - z) * s, where q = W[p*n + j] (i8,
/// -128..127), s = scales[b*n + j], z = zero_points[b*n + j] (asymmetric) or absent
/// (symmetric: w = f32(q) * s, the same value as with z = 0), b = p / block_size.
/// Buffers (bindings in order): x f32[m*k], w i8[k*n], scales f32[ceil(k/block_size)*n],
/// zero_points f32[ceil(k/block_size)*n] (only when asymmetric), out f32[m*n].
/// Loads of w are byte loads that widen to 32 bits (PTX has no 8-bit registers).
/// Errors (OpError): m, k, n or block_size 0; a buffer count (m*k, k*n, m*n,
/// ceil(k/block_size)*n) over 2^32-1; ceil(m/4) over 65535 (CUDA grid y).
Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric);

/// INT4 block-quantized weights, two unsigned nibbles per byte: element e = p*n + j is
/// the low nibble (bits 0..3) of byte w[e/2] when e is even, the high nibble when odd.
/// Codes are unsigned 0..15 as in the seed: symmetric means z = 0 (no implicit offset
/// of 8). w(p, j) = (f32(code) - z) * s with the int8 op's sidecars.
/// Buffers: x f32[m*k], w u8[ceil(k*n/2)], scales and (asymmetric) zero_points
/// f32[ceil(k/block_size)*n], out f32[m*n]. Errors as for dequant_matmul_int8.
Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric);

/// FP8 weights with one f32 scale per output column: the seed's `acc += x * w * s`,
/// i.e. product = (x[i, p] * decode_fp8(W[p*n + j])) * scales[j]. NaN codes (and
/// E5M2 infinities times 0) give NaN outputs. Buffers: x f32[m*k], w u8[k*n],
/// scales f32[n], out f32[m*n]. Errors (OpError): m, k or n 0; a count over 2^32-1;
/// ceil(m/4) over 65535.
Program dequant_matmul_fp8(std::uint32_t m, std::uint32_t k, std::uint32_t n, Fp8Format format);

/// NVFP4: E2M1 nibbles packed as dequant_matmul_int4 (element p*n + j, low nibble
/// first), one FP8-E4M3 scale byte per 16 consecutive p per column at
/// scales[(p/16)*n + j] (decoded per decode_fp8, sign and NaN included), one f32
/// global scale: w(p, j) = (decode_fp4_e2m1(code) * decode_fp8(E4M3, scale)) *
/// global_scale[0], the seed's order. k need not be a multiple of 16 (the last block
/// is partial). Buffers: x f32[m*k], w u8[ceil(k*n/2)], scales u8[ceil(k/16)*n],
/// global_scale f32[1], out f32[m*n]. Errors as for dequant_matmul_fp8.
Program dequant_matmul_nvfp4(std::uint32_t m, std::uint32_t k, std::uint32_t n);

/// Registry entries for the four ops above.
std::vector<OpInfo> dequant_matmul_ops();

}  // namespace quantc::ir::ops
