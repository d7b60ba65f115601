// Fused dequantize + matmul: `out[i, j] = sum_p x[i, p] * dequant(W[p, j])` with the
// weights kept quantized in memory. Semantics and layouts follow RLX's CPU thunks
// `dequant_matmul_{int8,int4,fp8,nvfp4}` (RLX `rlx_cpu/thunk.rs`, no released version).
//
// Shapes (every op): x A[m*k] is [m, k] row-major (k fastest); the logical weight W is
// [k, n] row-major (n fastest): element (p, j) has linear index p*n + j; out A[m*n] is
// [m, n] row-major (n fastest). A is the activation type, the spec parameter
// "activation": "f32" (default) | "f16" | "bf16" (ir/ops/Activation.h): f16/bf16 x
// values widen exactly to f32, the f32 computation below runs unchanged on them (both
// schedules), and each output is rounded once to A when it is stored (round to nearest
// even; |y| >= 65520 gives +-inf in f16). Sidecars and scales stay f32 (nvfp4: u8
// codes). Block sidecars are [ceil(k/block_size), n] (n fastest): the entry for (p, j)
// is at (p/block_size)*n + j. A partial last block is allowed.
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
//
// Fast schedule ("schedule": "fast"; "auto", the default, takes it where it can run,
// else the seed program above; "seed" always the seed). The batch-1 GEMV (m == 1) a GPU
// engineer writes for N-contiguous packed weights; it declares the seed's buffers (names,
// element types, counts, binding order), so the same inputs feed both, plus, when it
// splits K across workgroups, two scratch buffers after them (`partials` f32
// [splits * n], `arrivals` u32[ceil(n / warp columns)]; ir::BufferAccess::Scratch: the
// runtime provides them zeroed and every launch leaves them zeroed).
//  - Work split: a subgroup (warp) owns the 32-byte sector of every weight row that
//    holds its columns (int8, fp8: 32 columns; int4, nvfp4: 64). Lanes l = 8*k_lane + c:
//    column lane c reads the 4-byte word c of each row's sector with one reinterpreting
//    u32 load (ir::Load::reinterpret; `w` stays u8/i8), so a warp request is 4 whole
//    sectors of 4 rows (100% sector efficiency), and a lane holds 4 (int8, fp8) or 8
//    (int4, nvfp4) column sums. 4 k-lanes split the reduction into chunks taken
//    round-robin: int8/int4 32 rows (a slice of a bigger block, which then folds its own
//    sums with the block's sidecars, or whole blocks of <= 32 rows), nvfp4 two 16-row
//    scale blocks, fp8 32 rows; halved to 16 rows where, at 32, every k-lane of the split
//    below has one chunk and twice the splits stay within kSplitKTargetWorkgroups
//    (4096 x 4096: int8, int4, nvfp4), or where the split below leaves fewer workgroups
//    than the GPU's 132 SMs and 16-row chunks split K across more of them (1536 x 384)
//    or, for int4 and nvfp4, add k-subgroups (384 x 384). A workgroup holds k_subgroups such subgroups on the same
//    columns (up to 4 while each k-lane keeps two chunks; fp8 up to 2), whose sums meet
//    in shared memory in k-subgroup order (ir/ops/SplitK.h). Where the sector columns still
//    give fewer than kSplitKTargetWorkgroups workgroups, K is also split across `splits`
//    workgroups (SplitK.h: the fewest powers of two reaching it while each k-lane keeps
//    two chunks): global k-lane j of splits * k_subgroups * 4 does chunks j, j +
//    splits*k_subgroups*4, ... Inside a chunk a lane issues the loads of a batch of
//    rows (up to 32: the largest divisor of the chunk, or of the chunk in whole blocks),
//    with the x values and the batch's blocks' sidecars, before any use: one wait per
//    batch. The chunk size and k_subgroups are the fastest of a sweep on an H200
//    (bench/results/gpu-nvidia-h200.md, "Splitting K across the subgroups of a
//    workgroup": chunks of 16, 32, 64 rows x 1, 2, 4 k-subgroups, with 16-byte lanes):
//    int4 1.3-2.0x and int8 1.5x faster than whole 64-row blocks in one-warp workgroups
//    at the Llama shapes. One word per lane (rather than the sweep's 16 bytes: 16-32
//    sums, 128-254 registers) is the H100 model's choice (bench/results/kernels.md).
//  - Decoding (exact in f32, shared definitions below): int8 by XOR 0x80 + prmt under the
//    0x4B exponent byte minus 2^23 + 128; int4 by OR 0x4B000000 minus 2^23; FP8 by moving
//    the code's bits into an f32 pattern (prmt, arithmetic shift, mask) and one exact
//    power-of-two multiply, E4M3 NaN codes flagged per byte and forced into the column's
//    sum at the end, E5M2 exponent 31 mapped to inf/NaN per element; NVFP4 by a prmt code
//    book of twice the E2M1 magnitudes (four codes per prmt) and the sign bit XOR-ed in.
//    Per element: one fma into the lane's per-column partial sum.
//  - Block factoring: per block and column, D = sum x*q and (asymmetric, offset) X = sum x
//    in f32 fma; then acc = fma(s, fma(-z, X, D), acc) (int8/int4; symmetric: z = 0) or,
//    in the offset mode, acc = fma(o, X, fma(s, D, acc)) (o / s is not exact, so the
//    offset cannot be folded into D before the scale); acc = fma(scale/2, D2, acc)
//    with D2 = sum x * (2*e2m1) (nvfp4: the block scale decoded once per block and
//    column; halving it is exact); fp8 accumulates sum x*w and multiplies by the column
//    scale once; nvfp4 multiplies by the global scale once.
//  - The k-lanes' sums meet by a shuffle-xor butterfly (8, 16), then the
//    k-subgroups' in shared memory: deterministic, no float atomics; with split-K,
//    k-subgroup 0's k-lane 0 partial sums go to `partials` and the last
//    workgroup of the column's unit adds them in split order (SplitK.h); k-lane 0 of the
//    finishing workgroup stores its columns with 16-byte vector stores.
//  - PTX's cvt.rn.f16x2.e4m3x2 (sm_89+) decodes two E4M3 codes per instruction but
//    yields f16; with f32 activations each value then needs a cvt.f32.f16 on the
//    conversion pipe (16 results/clock/SM on sm_90 against 64 for the integer/fp32 pipes
//    the bit decode uses), which costs more than the three integer instructions it
//    replaces, so the bit decode is used. f16 activations do not change this: the
//    products still run in f32 (ir/ops/Activation.h), so the weights are needed as f32.
// Floating-point order and the bound against the seed: the seed adds x*w per k in order;
// the fast schedule forms per-chunk f32 fma sums, folds them per block, sums the 4
// k-lanes by the butterfly and the splits in order. With u = 2^-24 and per-term
// magnitudes T_p = |x_p| * (|q_p| + |z_b|) * |s_b| (offset mode: |x_p| * (|q_p| * |s_b| +
// |o_b|); fp8, nvfp4: |x_p * w_p| times their scales), the longest chain of f32 roundings
// of one output is L = n_c + ceil(chunks / (4 * k_subgroups * splits)) + 6 +
// (k_subgroups - 1) + splits (n_c the rows of one chunk's sum; 6 for the zero-point
// (offset) and block fmas, the 2 butterfly levels, the final scale and one spare; the
// k-subgroups' adds; the splits' adds), so
// |fast - exact| <= 2 * u * L * sum_p T_p; the seed's k ordered adds give
// |seed - exact| <= 2 * u * (k + 2) * sum_p T_p, and |fast - seed| is within the sum, as
// asserted in
// tests/reference/dequant_fast_tests.cpp. Where every partial sum is an exact small
// integer multiple of a power of two (integer x, power-of-two scales) both are exact and
// agree bit for bit.
// f16/bf16 activations: the bounds above are of the f32 value y each schedule computes;
// the stored output adds at most u_h*|y| + eta_h (u_h = 2^-11 for f16, 2^-8 for bf16;
// eta_h = 2^-25, 2^-134), so |fast - seed| <= (the sum above) + u_h*(|fast| + |seed|) +
// 2*eta_h (tests/reference/activation_tests.cpp). The fast schedule reads 4 x values per
// reinterpreting u32x2 load (the f32 program's f32x4), widens each once per lane (f16:
// cvt.f32.f16; bf16: shl/and), and stores 4 columns as two f16x2/bf16x2 pairs.
// Batches (m > 1) of dequant_matmul_int4, dequant_matmul_fp8 and dequant_matmul_nvfp4 with
// f16 or bf16 activations: "fast" is the tensor-core GEMM of ir/ops/TensorGemm.h (sm_80+; its own
// bound and requirements, named in the OpError); "auto" keeps the seed there, because op
// constructors do not know the target and the seed runs on every one.
// Fast errors (OpError, after the seed's own checks): m != 1 ("the batch-1 GEMV"; int8);
// n not a multiple of 4 (int8, fp8) or 8 (int4, nvfp4), the columns of one lane's
// 4-byte row load. k needs no multiple: rows past k read code 0 and x 0; n needs no
// multiple of a subgroup's columns: the last subgroup's lanes past n reload valid columns
// and skip their stores.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/IR.h"
#include "ir/Program.h"
#include "ir/ops/QuantizedGemv.h"
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

// Word decoders of the fast schedule: a u32 `word` of packed codes (byte / nibble i of
// the word is the code of column i of the word) to exact f32 values, without Lookup.

/// The four signed bytes (i8, -128..127) of `word` as f32: XOR 0x80 per byte, prmt each
/// byte under 0x4B (bitcast(0x4B0000xx) = 2^23 + q + 128), subtract 2^23 + 128.
std::vector<Expr> decode_int8_word(const Expr& word);
/// The eight unsigned nibbles (low first) of `word` as f32: bitcast(0x4B000000 | q) - 2^23.
std::vector<Expr> decode_uint4_word(const Expr& word);
/// FP8 byte `index` (0..3) of `word` as f32, equal to decode_fp8 for every code except
/// E4M3's NaN codes (0x7F, 0xFF), which give -+480 here: find them with
/// fp8_e4m3_nan_bytes. The code moves into an f32 bit pattern (prmt to the top byte,
/// arithmetic shift by 4 (E4M3) / 3 (E5M2), mask 0x87F00000 / 0x8FE00000: the sign, the
/// exponent field = the code's exponent, its mantissa on top), times 2^120 / 2^112,
/// exact for normal and subnormal codes alike; E5M2 exponent 31 becomes inf / NaN.
/// `scale_exponent` in [-8, 8] folds an exact power of two into that multiply: the value
/// times 2^scale_exponent (every E4M3/E5M2 value times it stays a normal f32).
Expr decode_fp8_byte(Fp8Format format, const Expr& word, unsigned index, int scale_exponent = 0);
/// Bit 7 of byte i is set when byte i of `word` is an E4M3 NaN code (low 7 bits all ones).
Expr fp8_e4m3_nan_bytes(const Expr& word);
/// The eight E2M1 nibbles (low first) of `word` as f32 values *twice* decode_fp4_e2m1's
/// (0, 1, 2, 3, 4, 6, 8, 12 and their negations), exactly, except that code 8 (-0.0)
/// gives +0.0 (a sum started at +0.0 cannot tell them apart): prmt code books of
/// 128 + 2|v| and of its XOR with 128 - 2|v| (four codes per prmt), a per-byte select
/// by the sign bits (prmt sign replication, one lop3), then prmt under 0x4B minus 2^23 + 128.
std::vector<Expr> decode_fp4_e2m1_word_x2(const Expr& word);

/// How dequant_matmul_int8/int4 turn a code q into a weight with its block's f32 sidecars
/// (s = scales[b*n + j], b = p / block_size; the spec parameters in brackets):
/// - Symmetric (the default): w = f32(q) * s.
/// - ZeroPoint ("asymmetric": true, the seed's): w = (f32(q) - z) * s, z = zero_points[b*n + j].
/// - Offset ("offset": true): w = f32(q) * s + o, o = offsets[b*n + j], the product
///   rounded before the add as built (-O2's contract_fma fuses the two into fma(q, s, o)
///   unless --fp-contract=off; the two agree whenever q * s is exact in f32, e.g. every s
///   of at most 24 - 8 significant bits for int8, 24 - 4 for int4). This is the block
///   affine of llama.cpp's "scale and min" formats, which the asymmetric mode cannot hold
///   exactly (z = -o/s is not an f32 in general): ggml's block_q4_1 (ggml-common.h;
///   dequantize_row_q4_1 in ggml/src/ggml-quants.c computes q*d + m, d and m f16) gives
///   s = d, o = m; block_q4_K (dequantize_row_q4_K: per 32-element sub-block j of a
///   256-element super-block, d1 = d * sc_j, m1 = dmin * m_j with 6-bit sc_j, m_j from
///   get_scale_min_k4, then d1 * q - m1) gives block_size 32, s = d1, o = -m1; block_q5_K
///   (dequantize_row_q5_K, 5-bit q) the same on dequant_matmul_int8. There every product
///   (f16 d times a 6-bit scale times a 4/5-bit code) is exact in f32, so w is ggml's f32
///   value bit for bit (runtime/io/Convert.h, convert_gguf).
/// "asymmetric" and "offset" are exclusive (OpError).
enum class BlockAffineMode : std::uint8_t { Symmetric, ZeroPoint, Offset };
/// "symmetric", "asymmetric", "offset".
std::string_view to_string(BlockAffineMode mode);
/// The op id of dequant_matmul_int4's regions (the seed's, which every schedule keeps).
inline constexpr char kDequantMatmulInt4Id[] = "rlx::dequant_matmul_int4";
/// The op ids of dequant_matmul_fp8's and dequant_matmul_nvfp4's regions.
inline constexpr char kDequantMatmulFp8Id[] = "rlx::dequant_matmul_fp8";
inline constexpr char kDequantMatmulNvfp4Id[] = "rlx::dequant_matmul_nvfp4";

/// The second per-block sidecar buffer of a mode: "zero_points" (ZeroPoint), "offsets"
/// (Offset), nullptr (Symmetric).
const char* second_sidecar(BlockAffineMode mode);

/// INT8 block-quantized weights: w(p, j) = (f32(q) - z) * s, where q = W[p*n + j] (i8,
/// -128..127), s = scales[b*n + j], z = zero_points[b*n + j] (asymmetric) or absent
/// (symmetric: w = f32(q) * s, the same value as with z = 0), b = p / block_size; or
/// w(p, j) = f32(q) * s + offsets[b*n + j] (BlockAffineMode::Offset).
/// Buffers (bindings in order; A = the activation type): x A[m*k], w i8[k*n],
/// scales f32[ceil(k/block_size)*n], zero_points f32[ceil(k/block_size)*n] (only when
/// asymmetric) or offsets f32[ceil(k/block_size)*n] (only with the offset mode),
/// out A[m*n].
/// Loads of w are byte loads that widen to 32 bits (PTX has no 8-bit registers).
/// Errors (OpError): m, k, n or block_size 0; a buffer count (m*k, k*n, m*n,
/// ceil(k/block_size)*n) over 2^32-1; ceil(m/4) over 65535 (CUDA grid y).
Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, ScalarType activation = ScalarType::F32);

/// INT4 block-quantized weights, two unsigned nibbles per byte: element e = p*n + j is
/// the low nibble (bits 0..3) of byte w[e/2] when e is even, the high nibble when odd.
/// Codes are unsigned 0..15 as in the seed: symmetric means z = 0 (no implicit offset
/// of 8). w(p, j) = (f32(code) - z) * s with the int8 op's sidecars, or
/// f32(code) * s + o in the offset mode (BlockAffineMode).
/// Buffers: x A[m*k], w u8[ceil(k*n/2)], scales and (asymmetric) zero_points or (offset)
/// offsets f32[ceil(k/block_size)*n], out A[m*n]. Errors as for dequant_matmul_int8.
Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, ScalarType activation = ScalarType::F32);

/// The same ops with the weight mode spelled out (the bool overloads are Symmetric /
/// ZeroPoint).
Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           BlockAffineMode mode, KernelSchedule schedule = KernelSchedule::Seed,
                           ScalarType activation = ScalarType::F32);
Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           BlockAffineMode mode, KernelSchedule schedule = KernelSchedule::Seed,
                           ScalarType activation = ScalarType::F32);

/// FP8 weights with one f32 scale per output column: the seed's `acc += x * w * s`,
/// i.e. product = (x[i, p] * decode_fp8(W[p*n + j])) * scales[j]. NaN codes (and
/// E5M2 infinities times 0) give NaN outputs. Buffers: x A[m*k], w u8[k*n],
/// scales f32[n], out A[m*n]. Errors (OpError): m, k or n 0; a count over 2^32-1;
/// ceil(m/4) over 65535.
Program dequant_matmul_fp8(std::uint32_t m, std::uint32_t k, std::uint32_t n, Fp8Format format,
                          ScalarType activation = ScalarType::F32);

/// NVFP4: E2M1 nibbles packed as dequant_matmul_int4 (element p*n + j, low nibble
/// first), one FP8-E4M3 scale byte per 16 consecutive p per column at
/// scales[(p/16)*n + j] (decoded per decode_fp8, sign and NaN included), one f32
/// global scale: w(p, j) = (decode_fp4_e2m1(code) * decode_fp8(E4M3, scale)) *
/// global_scale[0], the seed's order. k need not be a multiple of 16 (the last block
/// is partial). Buffers: x A[m*k], w u8[ceil(k*n/2)], scales u8[ceil(k/16)*n],
/// global_scale f32[1], out A[m*n]. Errors as for dequant_matmul_fp8.
Program dequant_matmul_nvfp4(std::uint32_t m, std::uint32_t k, std::uint32_t n,
                            ScalarType activation = ScalarType::F32);

/// The ops with a schedule (see "Fast schedule" above); the overloads without one build
/// the seed program. Fast throws OpError naming the value and the fix where it cannot
/// run; Auto falls back to the seed. Every activation type runs on both schedules.
Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, KernelSchedule schedule, ScalarType activation = ScalarType::F32);
Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, KernelSchedule schedule, ScalarType activation = ScalarType::F32);
Program dequant_matmul_fp8(std::uint32_t m, std::uint32_t k, std::uint32_t n, Fp8Format format,
                          KernelSchedule schedule, ScalarType activation = ScalarType::F32);
Program dequant_matmul_nvfp4(std::uint32_t m, std::uint32_t k, std::uint32_t n, KernelSchedule schedule,
                            ScalarType activation = ScalarType::F32);

/// Registry entries for the four ops above.
std::vector<OpInfo> dequant_matmul_ops();

}  // namespace quantc::ir::ops
