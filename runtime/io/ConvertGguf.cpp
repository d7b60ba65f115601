// GGUF tensors to the dequant_matmul ops; the mappings and why they are exact are
// documented at convert_gguf in runtime/io/Convert.h. Compiled with -ffp-contract=off,
// like Gguf.cpp.
#include <fmt/format.h>

#include "ir/ops/BufferShape.h"
#include "runtime/io/ConvertSupport.h"

namespace quantc::runtime::convert {
namespace detail {
namespace {

/// Why a GGUF type has no exact mapping, naming the op feature it needs.
std::string refusal(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
      return "is not quantized; convert maps quantized formats onto ops exactly, and `quantc pack` quantizes "
             "unquantized weights (from safetensors)";
    case GgmlType::Q4_1:
      return "needs a scale-and-min weight mode (w = d*q + m) that dequant_matmul_int4 does not have yet (its "
             "asymmetric mode is (q - z)*s, and z = -m/d is not exact in f32)";
    case GgmlType::Q4_K:
      return "needs a scale-and-min weight mode (w = (d*sc)*q - dmin*m per 32-element sub-block) that "
             "dequant_matmul_int4 does not have yet";
    case GgmlType::Q5_K:
      return "needs 5-bit codes and a scale-and-min weight mode (w = (d*sc)*q - dmin*m) that no op has yet "
             "(dequant_matmul_int4 reads 4-bit codes as (q - z)*s)";
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
      return "needs 5-bit codes, which no op reads yet (dequant_matmul_int4 reads 4-bit, dequant_matmul_int8 8-bit "
             "codes; re-packing 5-bit codes as i8 would double the weight bytes)";
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
      return "needs 2/3-bit codes with per-sub-block scales (and Q2_K a min) that no op reads yet";
    case GgmlType::MXFP4:
      return "needs E2M1 codes with E8M0 (power-of-two) scales per 32 elements; dequant_matmul_nvfp4 takes E4M3 "
             "scales per 16 elements and a global scale";
    default:
      return "has no exact mapping onto quantc's ops (convert maps Q8_0, Q4_0 and Q6_K)";
  }
}

}  // namespace

void plan_gguf(ConvertedLayer& layer, const GgufFile& file, const ConvertOptions& options, bool repack) {
  const std::string& p = options.layer;
  layer = ConvertedLayer();
  layer.layer = p;
  layer.format = CheckpointFormat::Gguf;
  const std::string name = p + ".weight";
  if (!file.contains(name)) {
    std::vector<std::string> near;
    for (const GgufTensor& tensor : file.tensors()) {
      if (tensor.name.starts_with(p) && near.size() < 8) near.push_back(tensor.name);
    }
    throw ConvertError(fmt::format("{}: no tensor '{}' (the layer's weight); {}", file.label(), name,
                                   near.empty() ? "check --layer, e.g. blk.0.attn_q (`quantc convert FILE --list` "
                                                  "lists the layers)"
                                                : fmt::format("the layer has: {}", fmt::join(near, ", "))));
  }
  const GgufTensor& tensor = file.tensor(name);
  layer.tensors.push_back(name);
  if (tensor.ne.size() != 2) {
    throw ConvertError(fmt::format("{}: tensor '{}' has ne = {} ({}-D); a linear layer's weight is 2-D, ne = "
                                   "[in_features, out_features]",
                                   file.label(), name, ir::ops::shape_text(tensor.ne), tensor.ne.size()));
  }
  const std::uint32_t in = to_u32(name + " ne[0] (in_features)", tensor.ne[0]);
  const std::uint32_t out = to_u32(name + " ne[1] (out_features)", tensor.ne[1]);
  layer.in_features = in;
  layer.out_features = out;
  layer.source_type = fmt::format("GGUF {}", ggml_type_name(tensor.type));
  std::string op;
  std::uint32_t block = 0;
  bool asymmetric = false;
  switch (tensor.type) {
    case GgmlType::Q8_0: op = "dequant_matmul_int8", block = 32; break;
    case GgmlType::Q4_0: op = "dequant_matmul_int4", block = 32, asymmetric = true; break;
    case GgmlType::Q6_K: op = "dequant_matmul_int8", block = 16; break;
    default:
      throw UnsupportedFormatError(fmt::format("{}: tensor '{}' is GGUF {}, which {}", file.label(), name,
                                               ggml_type_name(tensor.type), refusal(tensor.type)));
  }
  layer.spec = {{"op", op},      {"m", options.batch},       {"k", in},           {"n", out},
                {"block_size", block}, {"asymmetric", asymmetric}, {"schedule", "auto"}};

  // The bias: an f32/f16/bf16 vector of out_features, when present.
  const std::string bias_name = p + ".bias";
  if (file.contains(bias_name)) {
    const GgufTensor& bias = file.tensor(bias_name);
    if (bias.type != GgmlType::F32 && bias.type != GgmlType::F16 && bias.type != GgmlType::BF16) {
      throw ConvertError(fmt::format("{}: tensor '{}' (the layer's bias) is {}; expected F32, F16 or BF16",
                                     file.label(), bias_name, ggml_type_name(bias.type)));
    }
    if (bias.element_count() != out || bias.ne.size() != 1) {
      throw ConvertError(fmt::format("{}: tensor '{}' (the layer's bias) has ne = {}; expected [{}] (out_features)",
                                     file.label(), bias_name, ir::ops::shape_text(bias.ne), out));
    }
    layer.bias = file.to_f32(bias_name);
    layer.tensors.push_back(bias_name);
  }
  if (repack) {
    const std::uint64_t k = in, n = out;
    const std::uint64_t blocks_per_row = k / block;
    std::vector<float> scales(blocks_per_row * n);
    if (tensor.type == GgmlType::Q8_0) {
      std::vector<std::int8_t> w(k * n);
      for (std::uint64_t j = 0; j < n; ++j) {
        for (std::uint64_t b = 0; b < blocks_per_row; ++b) {
          const auto q = gguf_block<GgmlBlockQ8_0>(tensor.bytes, j * blocks_per_row + b);
          scales[b * n + j] = ggml_fp16_to_f32(q.d);
          for (std::uint64_t i = 0; i < 32; ++i) w[(b * 32 + i) * n + j] = q.qs[i];
        }
      }
      layer.buffers.push_back(make_array("w", ir::ScalarType::I8, {k, n}, w));
      layer.buffers.push_back(make_array("scales", ir::ScalarType::F32, {blocks_per_row, n}, scales));
    } else if (tensor.type == GgmlType::Q4_0) {
      std::vector<std::uint8_t> w((k * n + 1) / 2, 0);
      for (std::uint64_t j = 0; j < n; ++j) {
        for (std::uint64_t b = 0; b < blocks_per_row; ++b) {
          const auto q = gguf_block<GgmlBlockQ4_0>(tensor.bytes, j * blocks_per_row + b);
          scales[b * n + j] = ggml_fp16_to_f32(q.d);
          for (int i = 0; i < 32; ++i) {
            // Element e = p*n + j of the op's W: low nibble of byte e/2 when e is even.
            const std::uint64_t e = (b * 32 + static_cast<std::uint64_t>(i)) * n + j;
            w[e / 2] |= static_cast<std::uint8_t>(q.quant(i) << (e % 2 == 0 ? 0 : 4));
          }
        }
      }
      std::vector<std::uint64_t> w_shape = n % 2 == 0 ? std::vector<std::uint64_t>{k, n / 2}
                                                      : std::vector<std::uint64_t>{w.size()};
      layer.buffers.push_back(make_array("w", ir::ScalarType::U8, w_shape, w));
      layer.buffers.push_back(make_array("scales", ir::ScalarType::F32, {blocks_per_row, n}, scales));
      layer.buffers.push_back(
          make_array("zero_points", ir::ScalarType::F32, {blocks_per_row, n}, std::vector<float>(scales.size(), 8.0f)));
    } else {  // Q6_K: super-blocks of 256 in 16 sub-blocks of 16, one op block per sub-block
      std::vector<std::int8_t> w(k * n);
      const std::uint64_t super_per_row = k / 256;
      for (std::uint64_t j = 0; j < n; ++j) {
        for (std::uint64_t s = 0; s < super_per_row; ++s) {
          const auto q = gguf_block<GgmlBlockQ6_K>(tensor.bytes, j * super_per_row + s);
          const float d = ggml_fp16_to_f32(q.d);
          for (std::uint64_t sub = 0; sub < 16; ++sub) {
            // Exact: d has at most 11 significant bits, |sc| <= 128 at most 8.
            scales[(s * 16 + sub) * n + j] = d * static_cast<float>(q.scales[sub]);
          }
          for (int i = 0; i < 256; ++i) {
            w[(s * 256 + static_cast<std::uint64_t>(i)) * n + j] = static_cast<std::int8_t>(q.quant(i) - 32);
          }
        }
      }
      layer.buffers.push_back(make_array("w", ir::ScalarType::I8, {k, n}, w));
      layer.buffers.push_back(make_array("scales", ir::ScalarType::F32, {blocks_per_row, n}, scales));
    }
  }
  check_against_op(layer);
}

}  // namespace detail

ConvertedLayer convert_gguf(const GgufFile& file, const ConvertOptions& options) {
  ConvertedLayer layer;
  detail::plan_gguf(layer, file, options, /*repack=*/true);
  return layer;
}

}  // namespace quantc::runtime::convert
