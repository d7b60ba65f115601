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
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
      return "needs 5-bit codes, which no op reads yet (dequant_matmul_int4 reads 4-bit, dequant_matmul_int8 8-bit "
             "codes); they could be widened to i8 as Q5_K is (dequant_matmul_int8, symmetric for Q5_0, offset for "
             "Q5_1), but quantc's GGUF reader has no Q5_0/Q5_1 block reader yet";
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
      return "needs 2/3-bit codes with per-sub-block scales (and Q2_K a min) that no op reads yet";
    case GgmlType::MXFP4:
      return "needs E2M1 codes with E8M0 (power-of-two) scales per 32 elements; dequant_matmul_nvfp4 takes E4M3 "
             "scales per 16 elements and a global scale";
    default:
      return "has no exact mapping onto quantc's ops (convert maps Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K)";
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
  bool asymmetric = false, offset = false;
  switch (tensor.type) {
    case GgmlType::Q8_0: op = "dequant_matmul_int8", block = 32; break;
    case GgmlType::Q4_0: op = "dequant_matmul_int4", block = 32, asymmetric = true; break;
    case GgmlType::Q4_1: op = "dequant_matmul_int4", block = 32, offset = true; break;
    case GgmlType::Q4_K: op = "dequant_matmul_int4", block = 32, offset = true; break;
    case GgmlType::Q5_K: op = "dequant_matmul_int8", block = 32, offset = true; break;
    case GgmlType::Q6_K: op = "dequant_matmul_int8", block = 16; break;
    default:
      throw UnsupportedFormatError(fmt::format("{}: tensor '{}' is GGUF {}, which {}", file.label(), name,
                                               ggml_type_name(tensor.type), refusal(tensor.type)));
  }
  layer.spec = {{"op", op},      {"m", options.batch},       {"k", in},           {"n", out},
                {"block_size", block}, {"asymmetric", asymmetric}, {"schedule", "auto"}};
  if (offset) layer.spec["offset"] = true;

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
    std::vector<float> scales(blocks_per_row * n), offsets;
    if (offset) offsets.resize(blocks_per_row * n);
    // The op's nibbles: element e = p*n + j of W in the low nibble of byte e/2 when e is even.
    std::vector<std::uint8_t> nibbles;
    auto put_nibble = [&](std::uint64_t p, std::uint64_t j, int code) {
      const std::uint64_t e = p * n + j;
      nibbles[e / 2] |= static_cast<std::uint8_t>(code << (e % 2 == 0 ? 0 : 4));
    };
    auto nibble_buffer = [&] {
      std::vector<std::uint64_t> w_shape = n % 2 == 0 ? std::vector<std::uint64_t>{k, n / 2}
                                                      : std::vector<std::uint64_t>{nibbles.size()};
      return make_array("w", ir::ScalarType::U8, w_shape, nibbles);
    };
    if (tensor.type == GgmlType::Q4_0 || tensor.type == GgmlType::Q4_1 || tensor.type == GgmlType::Q4_K) {
      nibbles.assign((k * n + 1) / 2, 0);
    }
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
      for (std::uint64_t j = 0; j < n; ++j) {
        for (std::uint64_t b = 0; b < blocks_per_row; ++b) {
          const auto q = gguf_block<GgmlBlockQ4_0>(tensor.bytes, j * blocks_per_row + b);
          scales[b * n + j] = ggml_fp16_to_f32(q.d);
          for (int i = 0; i < 32; ++i) put_nibble(b * 32 + static_cast<std::uint64_t>(i), j, q.quant(i));
        }
      }
      layer.buffers.push_back(nibble_buffer());
      layer.buffers.push_back(make_array("scales", ir::ScalarType::F32, {blocks_per_row, n}, scales));
      layer.buffers.push_back(
          make_array("zero_points", ir::ScalarType::F32, {blocks_per_row, n}, std::vector<float>(scales.size(), 8.0f)));
    } else if (tensor.type == GgmlType::Q4_1) {  // w = q * d + m, ggml's own order
      for (std::uint64_t j = 0; j < n; ++j) {
        for (std::uint64_t b = 0; b < blocks_per_row; ++b) {
          const auto q = gguf_block<GgmlBlockQ4_1>(tensor.bytes, j * blocks_per_row + b);
          scales[b * n + j] = ggml_fp16_to_f32(q.d);
          offsets[b * n + j] = ggml_fp16_to_f32(q.m);
          for (int i = 0; i < 32; ++i) put_nibble(b * 32 + static_cast<std::uint64_t>(i), j, q.quant(i));
        }
      }
      layer.buffers.push_back(nibble_buffer());
      layer.buffers.push_back(make_array("scales", ir::ScalarType::F32, {blocks_per_row, n}, scales));
      layer.buffers.push_back(make_array("offsets", ir::ScalarType::F32, {blocks_per_row, n}, offsets));
    } else if (tensor.type == GgmlType::Q4_K || tensor.type == GgmlType::Q5_K) {
      // Super-blocks of 256 in 8 sub-blocks of 32, one op block per sub-block:
      // scale d*sc and offset -(dmin*m), ggml's d1 and -m1, each exact (11 + 6 bits).
      const std::uint64_t super_per_row = k / 256;
      std::vector<std::int8_t> w8;
      if (tensor.type == GgmlType::Q5_K) w8.resize(k * n);
      auto sub_blocks = [&](const auto& q, std::uint64_t s, std::uint64_t j) {
        const float d = ggml_fp16_to_f32(q.d), dmin = ggml_fp16_to_f32(q.dmin);
        for (int sub = 0; sub < 8; ++sub) {
          const GgmlScaleMin sm = q.scale_min(sub);
          const std::uint64_t side = (s * 8 + static_cast<std::uint64_t>(sub)) * n + j;
          scales[side] = d * static_cast<float>(sm.scale);
          offsets[side] = -(dmin * static_cast<float>(sm.min));
        }
      };
      for (std::uint64_t j = 0; j < n; ++j) {
        for (std::uint64_t s = 0; s < super_per_row; ++s) {
          const std::uint64_t index = j * super_per_row + s;
          if (tensor.type == GgmlType::Q4_K) {
            const auto q = gguf_block<GgmlBlockQ4_K>(tensor.bytes, index);
            sub_blocks(q, s, j);
            for (int i = 0; i < 256; ++i) put_nibble(s * 256 + static_cast<std::uint64_t>(i), j, q.quant(i));
          } else {
            const auto q = gguf_block<GgmlBlockQ5_K>(tensor.bytes, index);
            sub_blocks(q, s, j);
            for (int i = 0; i < 256; ++i) {
              w8[(s * 256 + static_cast<std::uint64_t>(i)) * n + j] = static_cast<std::int8_t>(q.quant(i));
            }
          }
        }
      }
      if (tensor.type == GgmlType::Q4_K) {
        layer.buffers.push_back(nibble_buffer());
      } else {
        layer.buffers.push_back(make_array("w", ir::ScalarType::I8, {k, n}, w8));
      }
      layer.buffers.push_back(make_array("scales", ir::ScalarType::F32, {blocks_per_row, n}, scales));
      layer.buffers.push_back(make_array("offsets", ir::ScalarType::F32, {blocks_per_row, n}, offsets));
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
