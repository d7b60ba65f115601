// Host-side packing: quantizes a real f32 weight matrix into exactly the buffers a
// quantc op reads. Pure functions on float arrays, beside the ops whose layouts they
// write; reading model files and writing the packed files (`quantc pack`) is
// runtime/io/PackFile.h. Three schemes, one per op family:
//
//   int4-affine-grouped -> linear_4bit_affine_grouped (ir/ops/Linear4Bit.h):
//       w u32[in_dim/8 * out_dim], scale f32[group_count * out_dim],
//       zero_point u32[group_count * out_dim]
//   nf4                 -> nf4_gemm (ir/ops/Nf4Gemm.h, aprender-gpu 0.31.2 nf4_gemm):
//       b_nf4 u32[out_dim * in_dim/8] (the bytes below as little-endian words),
//       b_scales f32[out_dim * in_dim/block]
//   int4-symmetric      -> int4_matvec_f32_scaled (ir/ops/Int4Packed.h, vyre-libs 0.6.2 quant):
//       weights u32[out_dim * ceil(in_dim/8)], row_scales f32[out_dim]
//
// Orientation. Every op computes out = x @ W with W[in_dim, out_dim]: in_dim (k) is the
// reduction axis, out_dim (i, n, rows) indexes outputs. A PyTorch nn.Linear weight is
// stored [out_features, in_features], so its in_dim is axis 1; runtime/io/PackFile.h
// reads that layout by default (`quantc pack --layout out,in`; `--layout in,out` for a
// tensor stored as the ops' W). Internally a LinearWeight is held output-major
// ([out_dim][in_dim], k fastest), which is the PyTorch layout, because all three schemes
// group along k within one output.
//
// Quantizer definitions are those of the device quantize ops in ir/ops/Quantize.h
// (quantize_int4, quantize_nf4), computed in f32 with the same operation order, so the host packer and
// the device quantize ops produce identical codes and scales (tests/pack/ checks this):
//   round    = round half to even (IEEE roundTiesToEven, PTX cvt.rni).
//   affine   = per group of `group_size` consecutive k of one output, over the finite
//              values: eps = max(1e-12, 2^-20 * max(|min|, |max|)),
//              scale = min(max(max - min, eps), FLT_MAX) / 15, zero = round(-min/scale),
//              q = clamp(round(v/scale) + zero, 0, 15); NaN -> the zero code,
//              +inf -> 15, -inf -> 0.
//   nf4      = per block: scale = absmax of the finite values; code = number of the 15
//              NF4 thresholds (largest f32 <= each midpoint of the NF4 table) that
//              v / scale exceeds (v / 1 when absmax is 0): the nearest NF4 value, ties
//              to the lower code; NaN -> 7 (zero).
//   symmetric= per output row: scale = max(absmax, 1e-12) / 7,
//              q = clamp(round(v/scale), -8, 7) stored as a two's complement nibble;
//              NaN -> 0.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/Type.h"

namespace quantc::ir::ops::pack {

/// Invalid packer input (an empty weight, a bad group or block size, dimensions the
/// scheme cannot pack, an unknown scheme name); the message names the value and the fix.
class PackError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A linear layer weight, output-major: values[i * in_dim + k] multiplies x[k] into
/// out[i] (PyTorch nn.Linear layout, k fastest).
struct LinearWeight {
  std::uint32_t in_dim = 0;
  std::uint32_t out_dim = 0;
  std::vector<float> values;

  float at(std::uint32_t k, std::uint32_t i) const { return values[std::size_t{i} * in_dim + k]; }
};

/// Round half to even in f32 (std::nearbyint under the default rounding mode).
float round_half_even(float value);

// ---- scalar quantizers (shared by the packers, the tests and examples/minilm) ----

struct AffineParams {
  float scale = 0;       // f32, > 0
  float zero_point = 0;  // f32 integer value, round(-min/scale); may leave 0..15
};
/// Affine INT4 parameters of one group (definition in the file comment).
AffineParams affine_int4_params(std::span<const float> group);
/// The code 0..15 of `value` under `params` (zero point used as given).
std::uint32_t affine_int4_code(float value, const AffineParams& params);

/// The NF4 code book and its 15 decision thresholds are the device ops' own
/// (ir::ops::kNf4Table, ir::ops::nf4_thresholds in ir/ops/Quantize.h): one table, so the
/// host packer and the kernels cannot disagree on the format.
/// NF4 scale of one block: absmax of its finite values (0 for an all-zero block).
float nf4_block_scale(std::span<const float> block);
/// The NF4 code 0..15 of `value` in a block with `scale`.
std::uint32_t nf4_code(float value, float scale);

/// Symmetric INT4 scale of one row: max(absmax of finite values, 1e-12) / 7.
float symmetric_int4_scale(std::span<const float> row);
/// The signed code -8..7 of `value` under `scale`.
std::int32_t symmetric_int4_code(float value, float scale);

// ---- packers -------------------------------------------------------------------

/// linear_4bit_affine_grouped's buffers. group_count = ceil(in_dim / group_size); the
/// last group may be short. Weight (k, i) is nibble k%8 (bits 4*(k%8)..+3) of word
/// (k/8)*out_dim + i; scale and zero_point are indexed g*out_dim + i (output fastest).
/// zero_point is stored as u32 0..15: a group whose values are all positive or all
/// negative has round(-min/scale) outside 0..15 under quantize_int4's definition; the packer
/// clamps it and encodes that group's codes with the clamped zero point (saturating),
/// and counts such groups in clamped_zero_groups.
struct PackedAffineGrouped {
  std::uint32_t in_dim = 0, out_dim = 0, group_size = 0, group_count = 0;
  std::vector<std::uint32_t> w;
  std::vector<float> scale;
  std::vector<std::uint32_t> zero_point;
  std::uint64_t clamped_zero_groups = 0;
};
/// Errors (PackError): group_size == 0, in_dim % 8 != 0 (the op packs 8 k per word),
/// an empty weight.
PackedAffineGrouped pack_int4_affine_grouped(const LinearWeight& weight, std::uint32_t group_size);
/// The dequantized weight (q - zero_point) * scale, output-major like LinearWeight.
LinearWeight dequantize(const PackedAffineGrouped& packed);

/// nf4_gemm's B buffers for B[k = in_dim, n = out_dim]: blocks of `block` consecutive k
/// per column, column-major block order: b_scales[col * (k/block) + block_index] and
/// bytes b_nf4[(col * (k/block) + block_index) * block/2 + byte], element 2*byte in the
/// low nibble. nf4_gemm fixes block = 64.
struct PackedNf4 {
  std::uint32_t in_dim = 0, out_dim = 0, block = 0;
  std::vector<std::uint8_t> data;
  std::vector<float> scales;
};
/// Errors (PackError): block == 0 or odd, in_dim % block != 0 (naming both and the
/// fix), an empty weight.
PackedNf4 pack_nf4(const LinearWeight& weight, std::uint32_t block = 64);
LinearWeight dequantize(const PackedNf4& packed);

/// int4_matvec_f32_scaled's buffers (rows = out_dim, cols = in_dim): row r takes
/// words_per_row = ceil(cols/8) words, value c in word r*words_per_row + c/8 at bits
/// 4*(c%8)..+3 as a two's complement nibble, zero-padded; row_scales[r].
struct PackedInt4Symmetric {
  std::uint32_t in_dim = 0, out_dim = 0, words_per_row = 0;
  std::vector<std::uint32_t> w;
  std::vector<float> row_scales;
};
/// Errors (PackError): an empty weight.
PackedInt4Symmetric pack_int4_symmetric(const LinearWeight& weight);
LinearWeight dequantize(const PackedInt4Symmetric& packed);

// ---- one weight, one scheme: the op's buffers ----------------------------------------

enum class Scheme { Int4AffineGrouped, Nf4, Int4Symmetric };
/// "int4-affine-grouped", "nf4", "int4-symmetric"; throws PackError listing them.
Scheme scheme_from_name(const std::string& name);
std::string scheme_name(Scheme scheme);
/// The op whose buffers a scheme produces.
std::string op_for_scheme(Scheme scheme);

struct SchemeOptions {
  Scheme scheme = Scheme::Int4AffineGrouped;
  std::uint32_t group_size = 64;  // int4-affine-grouped
  std::uint32_t block = 64;       // nf4
};

/// One packed buffer, named and typed exactly like the op's buffer; `shape` is the
/// logical shape (row-major), `bytes` the little-endian element bytes.
struct PackedBuffer {
  std::string name;
  ScalarType element = ScalarType::U32;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint8_t> bytes;
};

/// The op's buffers plus metadata {op, scheme, in_dim, out_dim, group_size and
/// clamped_zero_groups | block}.
struct PackedWeight {
  std::vector<PackedBuffer> buffers;
  std::map<std::string, std::string> metadata;
};
/// nf4_gemm's block: one scale per 64 consecutive k of a column, fixed by the op.
inline constexpr std::uint32_t kNf4GemmBlock = 64;

/// Packs `weight` with options.scheme. Errors (PackError) as the scheme's packer, plus
/// for nf4 a block other than kNf4GemmBlock and in_dim % 8 != 0 (nf4_gemm reads b_nf4 as
/// u32 words).
PackedWeight pack_weight(const LinearWeight& weight, const SchemeOptions& options);

}  // namespace quantc::ir::ops::pack
