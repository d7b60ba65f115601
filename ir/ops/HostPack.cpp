#include "ir/ops/HostPack.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/ops/Quantize.h"

namespace quantc::ir::ops::pack {
namespace {

constexpr float kRelativeEpsilon = 1.0f / 1048576.0f;  // 2^-20, ir/ops/Quantize.h

bool is_finite(float value) { return std::fabs(value) < std::numeric_limits<float>::infinity(); }

float clamp_float(float value, float low, float high) { return std::min(std::max(value, low), high); }

void check_nonempty(const LinearWeight& weight, const char* scheme) {
  if (weight.in_dim == 0 || weight.out_dim == 0 ||
      weight.values.size() != std::size_t{weight.in_dim} * weight.out_dim) {
    throw PackError(fmt::format("pack {}: weight is {}x{} with {} values; need a non-empty [out_dim][in_dim] matrix",
                                scheme, weight.out_dim, weight.in_dim, weight.values.size()));
  }
}

std::span<const float> row_span(const LinearWeight& weight, std::uint32_t i, std::uint32_t begin, std::uint32_t end) {
  return std::span<const float>(weight.values.data() + std::size_t{i} * weight.in_dim + begin, end - begin);
}

template <class T>
std::vector<std::uint8_t> to_bytes(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace

float round_half_even(float value) {
  // The default floating-point environment rounds to nearest even; nearbyint honours it.
  return std::nearbyint(value);
}

// ---- scalar quantizers ------------------------------------------------------------

AffineParams affine_int4_params(std::span<const float> group) {
  float low = std::numeric_limits<float>::infinity(), high = -std::numeric_limits<float>::infinity();
  for (float value : group) {
    if (!is_finite(value)) continue;
    low = std::min(low, value);
    high = std::max(high, value);
  }
  if (high < low) low = high = 0.0f;  // no finite value: treat the group as zeros
  const float epsilon = std::max(kQuantizeEpsilon, std::max(std::fabs(low), std::fabs(high)) * kRelativeEpsilon);
  const float range = std::min(std::max(high - low, epsilon), std::numeric_limits<float>::max());
  AffineParams params;
  params.scale = range / 15.0f;
  params.zero_point = round_half_even(-low / params.scale);
  return params;
}

std::uint32_t affine_int4_code(float value, const AffineParams& params) {
  if (std::isnan(value)) return static_cast<std::uint32_t>(clamp_float(params.zero_point, 0.0f, 15.0f));
  const float rounded = round_half_even(value / params.scale);
  return static_cast<std::uint32_t>(clamp_float(rounded + params.zero_point, 0.0f, 15.0f));
}

namespace {
/// Computed once: the thresholds decide every NF4 code the packer writes.
const std::array<float, 15>& nf4_thresholds() {
  static const std::array<float, 15> thresholds = ir::ops::nf4_thresholds();
  return thresholds;
}
}  // namespace

float nf4_block_scale(std::span<const float> block) {
  float absmax = 0.0f;
  for (float value : block) {
    if (is_finite(value)) absmax = std::max(absmax, std::fabs(value));
  }
  return absmax;
}

std::uint32_t nf4_code(float value, float scale) {
  if (std::isnan(value)) return 7;
  const float normalized = value / (scale > 0.0f ? scale : 1.0f);
  std::uint32_t code = 0;
  for (float threshold : nf4_thresholds()) code += normalized > threshold ? 1 : 0;
  return code;
}

float symmetric_int4_scale(std::span<const float> row) {
  return std::max(nf4_block_scale(row), kQuantizeEpsilon) / 7.0f;
}

std::int32_t symmetric_int4_code(float value, float scale) {
  if (std::isnan(value)) return 0;
  return static_cast<std::int32_t>(clamp_float(round_half_even(value / scale), -8.0f, 7.0f));
}

// ---- packers ----------------------------------------------------------------------

PackedAffineGrouped pack_int4_affine_grouped(const LinearWeight& weight, std::uint32_t group_size) {
  check_nonempty(weight, "int4-affine-grouped");
  if (group_size == 0) throw PackError("pack int4-affine-grouped: --group-size 0 is invalid; use e.g. 32, 64 or 128");
  if (weight.in_dim % 8 != 0) {
    throw PackError(fmt::format("pack int4-affine-grouped: in_dim={} is not divisible by 8 (eight k per packed "
                                "word); check --layout (nn.Linear weights are [out, in], the default)",
                                weight.in_dim));
  }
  PackedAffineGrouped packed;
  packed.in_dim = weight.in_dim;
  packed.out_dim = weight.out_dim;
  packed.group_size = group_size;
  // ceil(in_dim / group_size) without the overflow of in_dim + group_size - 1 (a
  // group_size near 2^32 is one short group, not zero groups).
  packed.group_count = weight.in_dim / group_size + (weight.in_dim % group_size != 0 ? 1 : 0);
  const std::size_t out_dim = weight.out_dim;
  packed.w.assign(std::size_t{weight.in_dim / 8} * out_dim, 0);
  packed.scale.assign(std::size_t{packed.group_count} * out_dim, 0.0f);
  packed.zero_point.assign(std::size_t{packed.group_count} * out_dim, 0);
  for (std::uint32_t i = 0; i < weight.out_dim; ++i) {
    for (std::uint32_t g = 0; g < packed.group_count; ++g) {
      const std::uint64_t first = std::uint64_t{g} * group_size;
      const auto begin = static_cast<std::uint32_t>(first);  // g < group_count, so first < in_dim
      const auto end = static_cast<std::uint32_t>(std::min<std::uint64_t>(weight.in_dim, first + group_size));
      AffineParams params = affine_int4_params(row_span(weight, i, begin, end));
      if (params.zero_point < 0.0f || params.zero_point > 15.0f) {
        params.zero_point = clamp_float(params.zero_point, 0.0f, 15.0f);
        ++packed.clamped_zero_groups;
      }
      packed.scale[g * out_dim + i] = params.scale;
      packed.zero_point[g * out_dim + i] = static_cast<std::uint32_t>(params.zero_point);
      for (std::uint32_t k = begin; k < end; ++k) {
        packed.w[(k / 8) * out_dim + i] |= affine_int4_code(weight.at(k, i), params) << (4 * (k % 8));
      }
    }
  }
  return packed;
}

LinearWeight dequantize(const PackedAffineGrouped& packed) {
  LinearWeight weight{packed.in_dim, packed.out_dim, std::vector<float>(std::size_t{packed.in_dim} * packed.out_dim)};
  const std::size_t out_dim = packed.out_dim;
  for (std::uint32_t i = 0; i < packed.out_dim; ++i) {
    for (std::uint32_t k = 0; k < packed.in_dim; ++k) {
      const std::size_t sidecar = (k / packed.group_size) * out_dim + i;
      const std::uint32_t code = (packed.w[(k / 8) * out_dim + i] >> (4 * (k % 8))) & 0xFu;
      weight.values[i * std::size_t{packed.in_dim} + k] =
          (static_cast<float>(code) - static_cast<float>(packed.zero_point[sidecar])) * packed.scale[sidecar];
    }
  }
  return weight;
}

PackedNf4 pack_nf4(const LinearWeight& weight, std::uint32_t block) {
  check_nonempty(weight, "nf4");
  if (block == 0 || block % 2 != 0) {
    throw PackError(fmt::format("pack nf4: --block {} is invalid; use an even block size (nf4_gemm uses 64)", block));
  }
  if (weight.in_dim % block != 0) {
    throw PackError(fmt::format("pack nf4: in_dim={} is not a multiple of --block {} (nf4_gemm needs k % 64 == 0); "
                                "check --layout (nn.Linear weights are [out, in], the default)",
                                weight.in_dim, block));
  }
  PackedNf4 packed;
  packed.in_dim = weight.in_dim;
  packed.out_dim = weight.out_dim;
  packed.block = block;
  const std::uint32_t blocks_per_column = weight.in_dim / block;
  packed.scales.assign(std::size_t{blocks_per_column} * weight.out_dim, 0.0f);
  packed.data.assign(packed.scales.size() * (block / 2), 0);
  for (std::uint32_t column = 0; column < weight.out_dim; ++column) {
    for (std::uint32_t b = 0; b < blocks_per_column; ++b) {
      const std::size_t index = std::size_t{column} * blocks_per_column + b;
      const std::span<const float> values = row_span(weight, column, b * block, (b + 1) * block);
      const float scale = nf4_block_scale(values);
      packed.scales[index] = scale;
      for (std::uint32_t e = 0; e < block; ++e) {
        packed.data[index * (block / 2) + e / 2] |= static_cast<std::uint8_t>(nf4_code(values[e], scale) << (4 * (e % 2)));
      }
    }
  }
  return packed;
}

LinearWeight dequantize(const PackedNf4& packed) {
  LinearWeight weight{packed.in_dim, packed.out_dim, std::vector<float>(std::size_t{packed.in_dim} * packed.out_dim)};
  const std::uint32_t blocks_per_column = packed.in_dim / packed.block;
  for (std::uint32_t column = 0; column < packed.out_dim; ++column) {
    for (std::uint32_t k = 0; k < packed.in_dim; ++k) {
      const std::size_t index = std::size_t{column} * blocks_per_column + k / packed.block;
      const std::uint32_t e = k % packed.block;
      const std::uint32_t code = (packed.data[index * (packed.block / 2) + e / 2] >> (4 * (e % 2))) & 0xFu;
      weight.values[std::size_t{column} * packed.in_dim + k] = ir::ops::kNf4Table[code] * packed.scales[index];
    }
  }
  return weight;
}

PackedInt4Symmetric pack_int4_symmetric(const LinearWeight& weight) {
  check_nonempty(weight, "int4-symmetric");
  PackedInt4Symmetric packed;
  packed.in_dim = weight.in_dim;
  packed.out_dim = weight.out_dim;
  packed.words_per_row = (weight.in_dim + 7) / 8;
  packed.w.assign(std::size_t{packed.words_per_row} * weight.out_dim, 0);
  packed.row_scales.resize(weight.out_dim);
  for (std::uint32_t row = 0; row < weight.out_dim; ++row) {
    const std::span<const float> values = row_span(weight, row, 0, weight.in_dim);
    const float scale = symmetric_int4_scale(values);
    packed.row_scales[row] = scale;
    for (std::uint32_t c = 0; c < weight.in_dim; ++c) {
      const auto nibble = static_cast<std::uint32_t>(symmetric_int4_code(values[c], scale)) & 0xFu;
      packed.w[std::size_t{row} * packed.words_per_row + c / 8] |= nibble << (4 * (c % 8));
    }
  }
  return packed;
}

LinearWeight dequantize(const PackedInt4Symmetric& packed) {
  LinearWeight weight{packed.in_dim, packed.out_dim, std::vector<float>(std::size_t{packed.in_dim} * packed.out_dim)};
  for (std::uint32_t row = 0; row < packed.out_dim; ++row) {
    for (std::uint32_t c = 0; c < packed.in_dim; ++c) {
      const std::uint32_t nibble = (packed.w[std::size_t{row} * packed.words_per_row + c / 8] >> (4 * (c % 8))) & 0xFu;
      const std::int32_t code = static_cast<std::int32_t>(nibble) - (nibble >= 8 ? 16 : 0);
      weight.values[std::size_t{row} * packed.in_dim + c] = static_cast<float>(code) * packed.row_scales[row];
    }
  }
  return weight;
}

// ---- one weight, one scheme: the op's buffers ----------------------------------------

Scheme scheme_from_name(const std::string& name) {
  if (name == "int4-affine-grouped") return Scheme::Int4AffineGrouped;
  if (name == "nf4") return Scheme::Nf4;
  if (name == "int4-symmetric") return Scheme::Int4Symmetric;
  throw PackError(fmt::format("unknown --scheme '{}'; use int4-affine-grouped, nf4 or int4-symmetric", name));
}

std::string scheme_name(Scheme scheme) {
  switch (scheme) {
    case Scheme::Int4AffineGrouped: return "int4-affine-grouped";
    case Scheme::Nf4: return "nf4";
    case Scheme::Int4Symmetric: return "int4-symmetric";
  }
  return "";
}

std::string op_for_scheme(Scheme scheme) {
  switch (scheme) {
    case Scheme::Int4AffineGrouped: return "linear_4bit_affine_grouped";
    case Scheme::Nf4: return "nf4_gemm";
    case Scheme::Int4Symmetric: return "int4_matvec_f32_scaled";
  }
  return "";
}

PackedWeight pack_weight(const LinearWeight& weight, const SchemeOptions& options) {
  PackedWeight result;
  const std::uint64_t in_dim = weight.in_dim, out_dim = weight.out_dim;
  result.metadata = {{"op", op_for_scheme(options.scheme)},
                     {"scheme", scheme_name(options.scheme)},
                     {"k", std::to_string(in_dim)},
                     {"n", std::to_string(out_dim)}};
  switch (options.scheme) {
    case Scheme::Int4AffineGrouped: {
      PackedAffineGrouped packed = pack_int4_affine_grouped(weight, options.group_size);
      result.metadata["group_size"] = std::to_string(options.group_size);
      result.metadata["clamped_zero_groups"] = std::to_string(packed.clamped_zero_groups);
      result.buffers = {{"w", ScalarType::U32, {in_dim / 8, out_dim}, to_bytes(packed.w)},
                        {"scale", ScalarType::F32, {packed.group_count, out_dim}, to_bytes(packed.scale)},
                        {"zero_point", ScalarType::U32, {packed.group_count, out_dim}, to_bytes(packed.zero_point)}};
      break;
    }
    case Scheme::Nf4: {
      if (options.block != kNf4GemmBlock) {
        throw PackError(fmt::format("pack nf4: --block {} is not nf4_gemm's block: nf4_gemm reads one scale per {} "
                                    "consecutive k (fixed); use --block {}",
                                    options.block, kNf4GemmBlock, kNf4GemmBlock));
      }
      PackedNf4 packed = pack_nf4(weight, options.block);
      result.metadata["block"] = std::to_string(options.block);
      const std::uint64_t blocks = in_dim / options.block;
      if (in_dim % 8 != 0) {
        throw PackError(fmt::format("pack nf4: in_dim={} is not divisible by 8 (nf4_gemm reads b_nf4 as u32 words)",
                                    in_dim));
      }
      // nf4_gemm declares b_nf4 as u32[n * k/8]; the bytes are the same (little-endian).
      result.buffers = {{"b_nf4", ScalarType::U32, {out_dim, in_dim / 8}, packed.data},
                        {"b_scales", ScalarType::F32, {out_dim, blocks}, to_bytes(packed.scales)}};
      break;
    }
    case Scheme::Int4Symmetric: {
      PackedInt4Symmetric packed = pack_int4_symmetric(weight);
      result.buffers = {{"weights", ScalarType::U32, {out_dim, packed.words_per_row}, to_bytes(packed.w)},
                        {"row_scales", ScalarType::F32, {out_dim}, to_bytes(packed.row_scales)}};
      break;
    }
  }
  return result;
}

}  // namespace quantc::ir::ops::pack
