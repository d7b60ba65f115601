// Host-side packing: quantizes a real f32 weight matrix into exactly the buffers a
// quantc op reads (`quantc pack`). Three schemes, one per op family:
//
//   int4-affine-grouped -> linear_4bit_affine_grouped (ir/ops/Linear4Bit.h):
//       w u32[in_dim/8 * out_dim], scale f32[group_count * out_dim],
//       zero_point u32[group_count * out_dim]
//   nf4                 -> nf4_gemm (issue 6 section 2, aprender-gpu nf4_gemm seed):
//       b_nf4 u32[out_dim * in_dim/8] (the bytes below as little-endian words),
//       b_scales f32[out_dim * in_dim/block]
//   int4-symmetric      -> int4_matvec_f32_scaled (issue 5 section 1, vyre quant_int4):
//       weights u32[out_dim * ceil(in_dim/8)], row_scales f32[out_dim]
//
// Orientation. Every op computes out = x @ W with W[in_dim, out_dim]: in_dim (k) is the
// reduction axis, out_dim (i, n, rows) indexes outputs. A PyTorch nn.Linear weight is
// stored [out_features, in_features], so its in_dim is axis 1 and it must be read with
// transpose = true (`quantc pack --transpose`). Internally a LinearWeight is held
// output-major ([out_dim][in_dim], k fastest), which is the PyTorch layout, because all
// three schemes group along k within one output.
//
// Quantizer definitions are those of issue 6 / ir/ops/Quantize.h (quantize_int4,
// quantize_nf4), computed in f32 with the same operation order, so the host packer and
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
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/Safetensors.h"

namespace quantc::runtime::pack {

/// A linear layer weight, output-major: values[i * in_dim + k] multiplies x[k] into
/// out[i] (PyTorch nn.Linear layout, k fastest).
struct LinearWeight {
  std::uint32_t in_dim = 0;
  std::uint32_t out_dim = 0;
  std::vector<float> values;

  float at(std::uint32_t k, std::uint32_t i) const { return values[std::size_t{i} * in_dim + k]; }
};

/// Reads a 2-D floating tensor (F32/F16/BF16/F64) as a LinearWeight. Without
/// `transpose` the tensor is taken as W[in_dim, out_dim] (the ops' math orientation);
/// with `transpose` as [out_dim, in_dim] (PyTorch nn.Linear: [out_features,
/// in_features]). Throws RuntimeError naming the tensor for a missing tensor, a rank
/// other than 2, dimensions above 2^32-1 or a non-floating dtype.
LinearWeight linear_weight_from_tensor(const SafetensorsFile& file, const std::string& name, bool transpose);

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
/// negative has round(-min/scale) outside 0..15 under issue 6's definition; the packer
/// clamps it and encodes that group's codes with the clamped zero point (saturating),
/// and counts such groups in clamped_zero_groups.
struct PackedAffineGrouped {
  std::uint32_t in_dim = 0, out_dim = 0, group_size = 0, group_count = 0;
  std::vector<std::uint32_t> w;
  std::vector<float> scale;
  std::vector<std::uint32_t> zero_point;
  std::uint64_t clamped_zero_groups = 0;
};
/// Errors (RuntimeError): group_size == 0, in_dim % 8 != 0 (the op packs 8 k per word),
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
/// Errors (RuntimeError): block == 0 or odd, in_dim % block != 0 (naming both and the
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
/// Errors (RuntimeError): an empty weight.
PackedInt4Symmetric pack_int4_symmetric(const LinearWeight& weight);
LinearWeight dequantize(const PackedInt4Symmetric& packed);

// ---- the `quantc pack` entry point -----------------------------------------------

enum class Scheme { Int4AffineGrouped, Nf4, Int4Symmetric };
/// "int4-affine-grouped", "nf4", "int4-symmetric"; throws RuntimeError listing them.
Scheme scheme_from_name(const std::string& name);
std::string scheme_name(Scheme scheme);
/// The op whose buffers a scheme produces.
std::string op_for_scheme(Scheme scheme);

struct PackOptions {
  std::string model_path;    // MODEL.safetensors
  std::string tensor;        // tensor name in the model
  Scheme scheme = Scheme::Int4AffineGrouped;
  std::uint32_t group_size = 64;  // int4-affine-grouped
  std::uint32_t block = 64;       // nf4
  bool transpose = false;         // read [out_dim, in_dim] (PyTorch nn.Linear)
  std::string output_path;        // OUT.safetensors
  std::optional<std::string> npy_dir;  // also write <buffer>.npy files here
};

/// The packed buffers as safetensors tensors named exactly like the op's buffers, with
/// __metadata__ {op, scheme, in_dim, out_dim, group_size|block, source tensor,
/// transposed}.
struct PackResult {
  std::vector<SafetensorsTensorData> tensors;
  std::map<std::string, std::string> metadata;
};
PackResult pack_weight(const LinearWeight& weight, const PackOptions& options);

/// `quantc pack`: reads options.tensor from options.model_path, packs it, writes
/// options.output_path (and one .npy per buffer into npy_dir, created if needed).
/// Returns what was written. Throws RuntimeError for every input problem above and
/// for unwritable outputs.
PackResult pack_file(const PackOptions& options);

}  // namespace quantc::runtime::pack
