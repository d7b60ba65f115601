// bitsandbytes 4-bit (as transformers saves a Linear4bit) to nf4_gemm; the format and why
// the mapping is exact are documented at convert_bnb in runtime/io/Convert.h. Compiled with
// -ffp-contract=off: the double-quantized absmax is bnb's product, rounded, then its sum,
// rounded; a fused multiply-add would change the last bit.
#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstring>

#include "ir/ops/BufferShape.h"
#include "ir/ops/Quantize.h"
#include "runtime/io/ConvertSupport.h"

namespace quantc::runtime::convert {
namespace detail {
namespace {

constexpr const char* kOp = "nf4_gemm";
constexpr std::uint32_t kNf4GemmBlock = 64;  // nf4_gemm's fixed block (ir/ops/Nf4Gemm.h)

std::vector<float> f32_values(const SafetensorsTensor& tensor) {
  std::vector<float> values(tensor.bytes.size() / 4);
  if (!values.empty()) std::memcpy(values.data(), tensor.bytes.data(), values.size() * 4);
  return values;
}

/// A required integer field of the quant state JSON.
std::uint64_t state_uint(const nlohmann::json& state, const char* key, const std::string& where) {
  if (!state.contains(key) || !state[key].is_number_integer() || state[key].get<std::int64_t>() <= 0) {
    throw ConvertError(fmt::format("{}: the quant state has no positive integer \"{}\" (found {}); bitsandbytes' "
                                   "QuantState.as_dict writes one",
                                   where, key, state.contains(key) ? state[key].dump() : "nothing"));
  }
  return state[key].get<std::uint64_t>();
}

}  // namespace

void plan_bnb(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
              bool repack) {
  const std::string& p = options.layer;
  layer = ConvertedLayer();
  layer.layer = p;
  layer.format = CheckpointFormat::Bnb;
  if (checkpoint.contains(p + ".SCB")) {
    throw UnsupportedFormatError(fmt::format(
        "{}: layer '{}' is bitsandbytes LLM.int8 ('{}.SCB'): its weight is q * SCB / 127 per output row, which no "
        "f32 scale reproduces exactly in dequant_matmul_int8 (it multiplies q by one rounded scale), and its outlier "
        "decomposition runs on activations; quantize with load_in_4bit (NF4, blocksize 64) instead",
        checkpoint.label(), p, p));
  }
  const std::string state_prefix = p + ".weight.quant_state.bitsandbytes__";
  const bool fp4 = checkpoint.contains(state_prefix + "fp4") && !checkpoint.contains(state_prefix + "nf4");
  const std::string quant_type = fp4 ? "fp4" : "nf4";
  const SafetensorsTensor& state_tensor =
      checkpoint.tensor(state_prefix + quant_type, "bitsandbytes quant state, U8 JSON bytes");
  expect_dtype(checkpoint, state_tensor, "bitsandbytes quant state", {SafetensorsDtype::U8});
  const std::string where = fmt::format("{}: tensor '{}'", checkpoint.label(), state_tensor.name);
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(
        std::string(reinterpret_cast<const char*>(state_tensor.bytes.data()), state_tensor.bytes.size()));
  } catch (const nlohmann::json::exception& error) {
    throw ConvertError(fmt::format("{}: the quant state is not JSON ({}); bitsandbytes' pack_dict_to_tensor writes "
                                   "json.dumps of the QuantState",
                                   where, error.what()));
  }
  if (!state.is_object()) throw ConvertError(where + ": the quant state is not a JSON object");
  layer.tensors.push_back(state_tensor.name);
  if (state.contains("quant_type") && state["quant_type"] != quant_type) {
    throw ConvertError(fmt::format("{}: quant_type {} contradicts the tensor name (__{})", where,
                                   state["quant_type"].dump(), quant_type));
  }
  if (!state.contains("shape") || !state["shape"].is_array() || state["shape"].size() != 2 ||
      !state["shape"][0].is_number_unsigned() || !state["shape"][1].is_number_unsigned()) {
    throw ConvertError(fmt::format("{}: the quant state's \"shape\" is {}; expected the linear weight's [out, in]",
                                   where, state.contains("shape") ? state["shape"].dump() : "missing"));
  }
  const std::uint32_t out = to_u32("bitsandbytes shape[0] (out_features)", state["shape"][0].get<std::uint64_t>());
  const std::uint32_t in = to_u32("bitsandbytes shape[1] (in_features)", state["shape"][1].get<std::uint64_t>());
  layer.in_features = in;
  layer.out_features = out;
  const bool nested = state.contains("nested_blocksize") || checkpoint.contains(p + ".weight.nested_absmax");
  layer.source_type = fmt::format("bitsandbytes {}{}{}", fp4 ? "FP4" : "NF4",
                                  state.contains("blocksize") ? ", blocksize " + state["blocksize"].dump() : "",
                                  nested ? ", double-quantized" : "");
  const std::uint64_t blocksize = state_uint(state, "blocksize", where);
  if (blocksize % kNf4GemmBlock != 0) {
    throw UnsupportedFormatError(fmt::format(
        "{}: layer '{}' is bitsandbytes {} with blocksize {}: {} takes one scale per 64 rows, and a block of {} "
        "cannot share one; quantize with a blocksize that is a multiple of 64 (bitsandbytes' default is 64)",
        checkpoint.label(), p, fp4 ? "FP4" : "NF4", blocksize, kOp, blocksize));
  }
  if (in % kNf4GemmBlock != 0) {
    throw UnsupportedFormatError(fmt::format(
        "{}: layer '{}' has in_features = {}, not a multiple of 64: bitsandbytes' blocks of 64 then run across "
        "output rows, and {} needs each block inside one output column (k a multiple of 64)",
        checkpoint.label(), p, in, kOp));
  }
  const std::uint64_t count = std::uint64_t{out} * in;
  const std::uint64_t blocks = (count + blocksize - 1) / blocksize;

  const std::string codes_what = fmt::format("bitsandbytes packed {} codes", fp4 ? "FP4" : "NF4");
  const SafetensorsTensor& weight = checkpoint.tensor(p + ".weight", codes_what + ", U8");
  expect_dtype(checkpoint, weight, codes_what, {SafetensorsDtype::U8},
               "quantize with quant_storage=torch.uint8 (bnb_4bit_quant_storage), the default");
  if (!(weight.shape == std::vector<std::uint64_t>{(count + 1) / 2, 1} ||
        weight.shape == std::vector<std::uint64_t>{(count + 1) / 2})) {
    expect_shape(checkpoint, weight, codes_what, {(count + 1) / 2, 1}, "[ceil(out*in/2), 1]",
                 fmt::format("the quant state's shape is [{}, {}]", out, in));
  }
  const SafetensorsTensor& quant_map = checkpoint.tensor(p + ".weight.quant_map", "bitsandbytes code book, F32 [16]");
  expect_dtype(checkpoint, quant_map, "bitsandbytes code book", {SafetensorsDtype::F32});
  expect_shape(checkpoint, quant_map, "bitsandbytes code book", {16}, "[16]");
  const std::vector<float> code_book = f32_values(quant_map);
  const std::array<float, 16>& table = fp4 ? ir::ops::kBnbFp4Table : ir::ops::kNf4Table;
  for (std::size_t i = 0; i < 16; ++i) {
    if (std::bit_cast<std::uint32_t>(code_book[i]) != std::bit_cast<std::uint32_t>(table[i])) {
      throw UnsupportedFormatError(fmt::format(
          "{}: '{}' entry {} is {:.9g}, not {}'s {:.9g}: a custom code book needs a code-book input that {} does not "
          "have (its NF4 and FP4 tables are built in); quantize with bitsandbytes' {} table",
          checkpoint.label(), quant_map.name, i, code_book[i], fp4 ? "FP4" : "NF4", table[i], kOp,
          fp4 ? "FP4" : "NF4"));
    }
  }
  const SafetensorsTensor& absmax = checkpoint.tensor(p + ".weight.absmax", "bitsandbytes block absmax");
  layer.tensors.insert(layer.tensors.end(), {weight.name, quant_map.name, absmax.name});

  std::vector<float> scales;
  if (!nested) {
    expect_dtype(checkpoint, absmax, "bitsandbytes block absmax", {SafetensorsDtype::F32},
                 "a U8 absmax is double-quantized and needs the nested_* entries of the quant state");
    expect_shape(checkpoint, absmax, "bitsandbytes block absmax", {blocks}, "[ceil(out*in/blocksize)]");
    if (repack) scales = f32_values(absmax);
  } else {
    const std::uint64_t nested_blocksize = state_uint(state, "nested_blocksize", where);
    if (!state.contains("nested_offset") || !state["nested_offset"].is_number()) {
      throw ConvertError(fmt::format("{}: a double-quantized quant state needs a number \"nested_offset\" (found {})",
                                     where, state.contains("nested_offset") ? state["nested_offset"].dump() : "none"));
    }
    if (state.contains("nested_dtype") && state["nested_dtype"] != "float32") {
      throw ConvertError(fmt::format("{}: nested_dtype {} is not \"float32\", the only dtype bitsandbytes' "
                                     "dequantize_blockwise of absmax produces",
                                     where, state["nested_dtype"].dump()));
    }
    // bnb's QuantState.from_dict: offset = torch.tensor(float(nested_offset)), i.e. the
    // JSON number rounded to f32.
    const float offset = static_cast<float>(state["nested_offset"].get<double>());
    expect_dtype(checkpoint, absmax, "bitsandbytes double-quantized absmax codes", {SafetensorsDtype::U8});
    expect_shape(checkpoint, absmax, "bitsandbytes double-quantized absmax codes", {blocks},
                 "[ceil(out*in/blocksize)]");
    const SafetensorsTensor& nested_absmax =
        checkpoint.tensor(p + ".weight.nested_absmax", "bitsandbytes absmax of the absmax blocks, F32");
    expect_dtype(checkpoint, nested_absmax, "bitsandbytes nested absmax", {SafetensorsDtype::F32});
    const std::uint64_t nested_blocks = (blocks + nested_blocksize - 1) / nested_blocksize;
    expect_shape(checkpoint, nested_absmax, "bitsandbytes nested absmax", {nested_blocks},
                 "[ceil(blocks/nested_blocksize)]");
    const SafetensorsTensor& nested_map =
        checkpoint.tensor(p + ".weight.nested_quant_map", "bitsandbytes absmax code book, F32 [256]");
    expect_dtype(checkpoint, nested_map, "bitsandbytes nested code book", {SafetensorsDtype::F32});
    expect_shape(checkpoint, nested_map, "bitsandbytes nested code book", {256}, "[256]");
    layer.tensors.insert(layer.tensors.end(), {nested_absmax.name, nested_map.name});
    layer.source_type += fmt::format(" (nested blocksize {})", nested_blocksize);
    if (repack) {
      const std::vector<float> nested_scale = f32_values(nested_absmax);
      const std::vector<float> nested_code = f32_values(nested_map);
      scales.resize(blocks);
      for (std::uint64_t i = 0; i < blocks; ++i) {
        // dequantize_blockwise (csrc kDequantizeBlockwise, General8bit): code[q] * absmax, in f32;
        // then dequantize_4bit's absmax += offset, in f32.
        const float product = nested_code[absmax.bytes[i]] * nested_scale[i / nested_blocksize];
        scales[i] = product + offset;
      }
    }
  }

  layer.spec = {{"op", kOp}, {"m", options.batch}, {"n", out}, {"k", in}, {"schedule", "auto"}};
  if (fp4) layer.spec["quant_type"] = "fp4";
  layer.bias = read_bias(checkpoint, p, out, layer.tensors);
  if (repack) {
    // bnb puts element 2i in the high nibble of byte i; nf4_gemm reads row 2t of a block
    // from the low nibble of byte t. The blocks coincide (in % 64 == 0), so only the
    // nibbles swap.
    std::vector<std::uint8_t> codes(weight.bytes.begin(), weight.bytes.begin() + static_cast<long>(count / 2));
    for (std::uint8_t& byte : codes) byte = static_cast<std::uint8_t>((byte << 4) | (byte >> 4));
    layer.buffers.push_back(make_array("b_nf4", ir::ScalarType::U32, {out, in / 8}, std::move(codes)));
    // bnb's blocks of B elements (a multiple of 64) of the flattened [out, in] weight
    // cover whole 64-element runs of its rows (in % 64 == 0), so each 64-row block of
    // nf4_gemm lies in one bnb block: b_scales[i] = absmax[i * 64 / B], lossless (every
    // weight stays bnb's code * absmax, bit for bit).
    std::vector<float> block_scales(count / kNf4GemmBlock);
    for (std::uint64_t i = 0; i < block_scales.size(); ++i) block_scales[i] = scales[i * kNf4GemmBlock / blocksize];
    layer.buffers.push_back(make_array("b_scales", ir::ScalarType::F32, {out, in / kNf4GemmBlock}, block_scales));
  }
  check_against_op(layer);
}

}  // namespace detail

ConvertedLayer convert_bnb(const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options) {
  ConvertedLayer layer;
  detail::plan_bnb(layer, checkpoint, options, /*repack=*/true);
  return layer;
}

}  // namespace quantc::runtime::convert
