// GPTQ (AutoGPTQ, GPTQModel) and AWQ (AutoAWQ GEMM) checkpoints to
// linear_4bit_affine_grouped; the formats and why the mapping is exact are documented at
// convert_gptq and convert_awq in runtime/io/Convert.h.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "ir/ops/BufferShape.h"
#include "runtime/io/ConvertSupport.h"

namespace quantc::runtime::convert {
namespace detail {
namespace {

constexpr const char* kOp = "linear_4bit_affine_grouped";

/// AutoAWQ's nibble order (awq/utils/packing_utils.py): nibble i of a packed word holds
/// column 8c + kAwqOrder[i]; column 8c + j is in nibble kAwqReverseOrder[j].
constexpr std::array<int, 8> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};
constexpr std::array<int, 8> kAwqReverseOrder = {0, 4, 1, 5, 2, 6, 3, 7};
static_assert([] {
  for (int j = 0; j < 8; ++j) {
    if (kAwqOrder[static_cast<std::size_t>(kAwqReverseOrder[static_cast<std::size_t>(j)])] != j) return false;
  }
  return true;
}());

/// The config's quant_method must not name another format.
void check_quant_method(const SafetensorsCheckpoint& checkpoint, const std::string& expected, const char* format) {
  const auto& method = checkpoint.config().quant_method;
  if (!method || *method == expected) return;
  std::string hint = *method == "awq" ? "--format awq" : *method == "gptq" ? "--format gptq"
                     : *method == "bitsandbytes" ? "--format bnb" : "the format it names";
  throw ConvertError(fmt::format("{}: the checkpoint's config ({}) says quant_method \"{}\", not \"{}\"; convert it "
                                 "with {} instead of --format {}",
                                 checkpoint.label(), fmt::join(checkpoint.config().sources, ", "), *method, expected,
                                 hint, format));
}

void check_config_bits(const SafetensorsCheckpoint& checkpoint, const char* format) {
  const auto& bits = checkpoint.config().bits;
  if (bits && *bits != 4) {
    throw UnsupportedFormatError(fmt::format(
        "{}: the checkpoint's config says {} bits = {}; {}-bit codes need an unpacking that {} does not have (it reads "
        "4-bit nibbles only); quantize with bits=4",
        checkpoint.label(), format, *bits, *bits, kOp));
  }
}

/// The affine op's spec; "m" only for a batch (its default is 1).
nlohmann::json affine_spec(std::uint32_t in, std::uint32_t out, std::uint32_t group_size, std::uint32_t batch) {
  nlohmann::json spec = {{"op", kOp}, {"k", in}, {"n", out}, {"group_size", group_size}, {"schedule", "auto"}};
  if (batch != 1) spec["m"] = batch;
  return spec;
}

/// The buffers both formats share once the codes are in GPTQ's layout.
void add_affine_buffers(ConvertedLayer& layer, std::vector<std::uint32_t> w, std::vector<float> scale,
                        std::vector<std::uint32_t> zero_point, std::uint32_t groups) {
  const std::uint64_t in = layer.in_features, out = layer.out_features;
  layer.buffers.push_back(make_array("w", ir::ScalarType::U32, {in / 8, out}, w));
  layer.buffers.push_back(make_array("scale", ir::ScalarType::F32, {groups, out}, scale));
  layer.buffers.push_back(make_array("zero_point", ir::ScalarType::U32, {groups, out}, zero_point));
  const std::vector<float> b = layer.bias ? *layer.bias : std::vector<float>(layer.out_features, 0.0f);
  layer.buffers.push_back(make_array("b", ir::ScalarType::F32, {out}, b));
}

/// The config's group_size (-1: one group), checked against the scales' group count.
std::optional<std::uint32_t> config_group_size(const SafetensorsCheckpoint& checkpoint, std::uint32_t in,
                                               std::uint32_t groups, const std::string& scales_name) {
  const auto& configured = checkpoint.config().group_size;
  if (!configured) return std::nullopt;
  if (*configured != -1 && *configured <= 0) {
    throw ConvertError(fmt::format("{}: the config's group_size = {} is neither -1 nor positive; fix {}",
                                   checkpoint.label(), *configured, fmt::join(checkpoint.config().sources, ", ")));
  }
  const std::uint64_t group_size = *configured == -1 ? in : static_cast<std::uint64_t>(*configured);
  if ((in + group_size - 1) / group_size != groups) {
    throw ConvertError(fmt::format("{}: the config's group_size = {} gives ceil({}/{}) = {} groups, but '{}' has {} "
                                   "rows; the config does not describe this layer",
                                   checkpoint.label(), *configured, in, group_size, (in + group_size - 1) / group_size,
                                   scales_name, groups));
  }
  return static_cast<std::uint32_t>(group_size);
}

/// GPTQ v1 qzeros read as GPTQModel does: plus 1 in every nibble as one 32-bit addition
/// with carries (convert_gptq_v1_to_v2_format_module).
std::uint32_t v1_zeros_with_carry(std::uint32_t stored) { return stored + 0x11111111u; }
/// GPTQ v1 qzeros read as AutoGPTQ does: (nibble + 1) & 15 per nibble.
std::uint32_t v1_zeros_per_nibble(std::uint32_t stored) {
  std::uint32_t word = 0;
  for (int i = 0; i < 8; ++i) word |= (((stored >> (4 * i)) + 1) & 0xFu) << (4 * i);
  return word;
}

std::string nibbles_text(std::uint32_t word) {
  std::vector<unsigned> values;
  for (int i = 0; i < 8; ++i) values.push_back((word >> (4 * i)) & 0xFu);
  return fmt::format("[{}]", fmt::join(values, ", "));
}

/// ConvertError unless every group of `group_of` holds group_size input features and the
/// last one the rest, which GPTQ's g_idx always does, act-order or not
/// (auto_gptq/quantization/gptq.py: g_idx = (arange(in) // group_size)[invperm], a
/// permutation of the trivial map): only then are the groups, sorted, the contiguous runs
/// k / group_size the op reads. `source` says where group_size came from.
void check_group_sizes(const SafetensorsCheckpoint& checkpoint, const std::string& g_idx_name,
                       const std::vector<std::int64_t>& group_of, std::uint32_t groups, std::uint32_t group_size,
                       const std::string& source) {
  const std::uint64_t in = group_of.size();
  std::vector<std::uint64_t> count(groups, 0);
  for (std::int64_t g : group_of) ++count[static_cast<std::size_t>(g)];
  for (std::uint32_t g = 0; g < groups; ++g) {
    const std::uint64_t first = std::uint64_t{g} * group_size;
    const std::uint64_t expected = first < in ? std::min<std::uint64_t>(group_size, in - first) : 0;
    if (count[g] == expected) continue;
    std::uint64_t example = 0;  // an input feature of the group, to name one
    while (example < in && group_of[example] != static_cast<std::int64_t>(g)) ++example;
    throw ConvertError(fmt::format(
        "{}: '{}' is not a GPTQ group map: group {} holds {} input features{}, but GPTQ groups hold group_size = {} "
        "each ({}), the last one the rest of in_features = {}, so group {} should hold {}. An act-order g_idx "
        "permutes k / group_size, which keeps every group's size; a group of another size is no contiguous run of "
        "the sorted rows {} reads",
        checkpoint.label(), g_idx_name, g, count[g],
        count[g] == 0 ? std::string() : fmt::format(" (e.g. input feature {})", example), group_size, source, in, g,
        expected, kOp));
  }
}

/// The input features in (group, index) order: perm[j] is the j-th feature of the stable
/// sort of 0 .. in-1 by group_of, a counting sort as ExLlama's make_sequential does it
/// (exllamav2_ext/cuda/q_matrix.cu), so that group g's features, in checkpoint order,
/// land on rows g*group_size .. of the sorted order (check_group_sizes first).
std::vector<std::uint32_t> sorted_by_group(const std::vector<std::int64_t>& group_of, std::uint32_t groups) {
  std::vector<std::uint64_t> first(std::size_t{groups} + 1, 0);  // counts, then each group's first sorted row
  for (std::int64_t g : group_of) ++first[static_cast<std::size_t>(g) + 1];
  for (std::uint32_t g = 0; g < groups; ++g) first[std::size_t{g} + 1] += first[g];
  std::vector<std::uint32_t> perm(group_of.size());
  for (std::size_t k = 0; k < group_of.size(); ++k) {
    perm[first[static_cast<std::size_t>(group_of[k])]++] = static_cast<std::uint32_t>(k);
  }
  return perm;
}

/// qweight [in/8, out] with its rows (input features) reordered: row j of the result is
/// row perm[j] of `packed`, nibble by nibble (nibble j%8 of word (j/8, n) is nibble
/// perm[j]%8 of word (perm[j]/8, n)).
std::vector<std::uint32_t> permute_packed_rows(const std::vector<std::uint32_t>& packed,
                                               const std::vector<std::uint32_t>& perm, std::uint32_t out) {
  std::vector<std::uint32_t> result(packed.size(), 0);
  for (std::size_t j = 0; j < perm.size(); ++j) {
    const std::uint32_t source = perm[j];
    const std::uint32_t* from = packed.data() + std::size_t{source / 8} * out;
    std::uint32_t* to = result.data() + (j / 8) * out;
    const unsigned from_shift = 4 * (source % 8), to_shift = 4 * (j % 8);
    for (std::uint32_t n = 0; n < out; ++n) to[n] |= ((from[n] >> from_shift) & 0xFu) << to_shift;
  }
  return result;
}

/// Starts `layer` for `options.layer` in `format` after the checks every GPTQ and AWQ plan
/// makes first: the checkpoint's quant_method (`method`) and its bits (`label`
/// names the format in the errors).
void begin_plan(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
                CheckpointFormat format, const char* method, const char* label) {
  layer = ConvertedLayer();
  layer.layer = options.layer;
  layer.format = format;
  check_quant_method(checkpoint, method, method);
  check_config_bits(checkpoint, label);
}

}  // namespace

void plan_gptq(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
               bool repack) {
  const std::string& p = options.layer;
  begin_plan(layer, checkpoint, options, CheckpointFormat::Gptq, "gptq", "GPTQ");
  const std::string pack_fix = "GPTQ packs 32-bit words; re-save with GPTQModel's pack_dtype=torch.int32";
  const SafetensorsTensor& qweight = checkpoint.tensor(p + ".qweight", "GPTQ packed codes, I32 [in/8, out]");
  expect_dtype(checkpoint, qweight, "GPTQ packed codes", {SafetensorsDtype::I32, SafetensorsDtype::U32}, pack_fix);
  expect_rank2(checkpoint, qweight, "GPTQ packed codes", "[in/8, out]");
  const SafetensorsTensor& scales = checkpoint.tensor(p + ".scales", "GPTQ group scales, F16 [groups, out]");
  expect_dtype(checkpoint, scales, "GPTQ group scales",
               {SafetensorsDtype::F16, SafetensorsDtype::BF16, SafetensorsDtype::F32});
  expect_rank2(checkpoint, scales, "GPTQ group scales", "[groups, out]");
  const SafetensorsTensor& qzeros = checkpoint.tensor(p + ".qzeros", "GPTQ packed zero points, I32 [groups, out/8]");
  expect_dtype(checkpoint, qzeros, "GPTQ packed zero points", {SafetensorsDtype::I32, SafetensorsDtype::U32},
               pack_fix);
  layer.tensors = {qweight.name, qzeros.name, scales.name};

  const std::uint32_t out = to_u32(scales.name + " columns (out_features)", scales.shape[1]);
  const std::uint32_t groups = to_u32(scales.name + " rows (groups)", scales.shape[0]);
  if (qweight.shape[1] != out) {
    const bool awq = qweight.shape[1] * 8 == out;
    throw ConvertError(fmt::format(
        "{}: tensor '{}' (GPTQ packed codes) has shape {}; GPTQ's layout is [in/8, out] with out = {} (the columns of "
        "'{}'){}",
        checkpoint.label(), qweight.name, ir::ops::shape_text(qweight.shape), out, scales.name,
        awq ? "; [in, out/8] is AutoAWQ's GEMM layout: convert with --format awq" : ""));
  }
  const SafetensorsTensor* g_idx = checkpoint.find(p + ".g_idx");
  std::uint64_t in = qweight.shape[0] * 8;
  if (g_idx != nullptr) {
    expect_dtype(checkpoint, *g_idx, "GPTQ input-feature group index", {SafetensorsDtype::I32, SafetensorsDtype::I64});
    if (g_idx->shape.size() != 1) {
      expect_shape(checkpoint, *g_idx, "GPTQ input-feature group index", {in}, "[in]");
    }
    in = g_idx->shape[0];
    layer.tensors.push_back(g_idx->name);
    if (in == 0 || (qweight.shape[0] * 32) % in != 0 || qweight.shape[0] * 8 != in) {
      const std::uint64_t bits = in == 0 ? 0 : qweight.shape[0] * 32 / in;
      if (in != 0 && (qweight.shape[0] * 32) % in == 0 && bits != 4) {
        throw UnsupportedFormatError(fmt::format(
            "{}: layer '{}' is GPTQ {}-bit ('{}' has {} rows for in_features = {}, the length of '{}'); {}-bit codes "
            "need an unpacking that {} does not have (it reads 4-bit nibbles only); quantize with bits=4",
            checkpoint.label(), p, bits, qweight.name, qweight.shape[0], in, g_idx->name, bits, kOp));
      }
      throw ConvertError(fmt::format("{}: '{}' has {} rows, which does not pack in_features = {} (the length of '{}') "
                                     "in 32-bit words of 4-bit codes; expected in/8 = {} rows. Or '{}' has the wrong "
                                     "length: it holds one group per input feature, and {} rows of 4-bit codes are {} "
                                     "input features, not {}",
                                     checkpoint.label(), qweight.name, qweight.shape[0], in, g_idx->name, in / 8,
                                     g_idx->name, qweight.shape[0], qweight.shape[0] * 8, in));
    }
  }
  const std::uint32_t in_features = to_u32(qweight.name + " rows * 8 (in_features)", in);
  layer.in_features = in_features;
  layer.out_features = out;
  if (out % 8 != 0) {
    throw ConvertError(fmt::format("{}: out_features = {} (the columns of '{}') is not a multiple of 8, so GPTQ's "
                                   "qzeros [groups, out/8] cannot hold them; the checkpoint is malformed",
                                   checkpoint.label(), out, scales.name));
  }
  expect_shape(checkpoint, qzeros, "GPTQ packed zero points", {groups, out / 8}, "[groups, out/8]");

  // The group size: the config's, else g_idx's first group, else in/groups.
  std::optional<std::uint32_t> group_size = config_group_size(checkpoint, in_features, groups, scales.name);
  std::vector<std::int64_t> group_of;
  if (g_idx != nullptr) {
    group_of.resize(in_features);
    for (std::uint32_t k = 0; k < in_features; ++k) {
      if (g_idx->dtype == SafetensorsDtype::I32) {
        std::int32_t value;
        std::memcpy(&value, g_idx->bytes.data() + 4 * std::size_t{k}, 4);
        group_of[k] = value;
      } else {
        std::memcpy(&group_of[k], g_idx->bytes.data() + 8 * std::size_t{k}, 8);
      }
      if (group_of[k] < 0 || group_of[k] >= static_cast<std::int64_t>(groups)) {
        throw ConvertError(fmt::format(
            "{}: '{}' is not a group map of this layer: g_idx[{}] = {} (the group of input feature {}), but '{}' has "
            "{} rows, so groups are 0 .. {}; the g_idx does not belong to these scales",
            checkpoint.label(), g_idx->name, k, group_of[k], k, scales.name, groups,
            static_cast<std::int64_t>(groups) - 1));
      }
    }
    const bool group_size_from_config = group_size.has_value();
    if (!group_size) {
      // GPTQ gives every group group_size input features (act-order ones too), the last
      // one possibly fewer: group 0's size is the group size.
      group_size = static_cast<std::uint32_t>(std::max<std::ptrdiff_t>(
          std::count(group_of.begin(), group_of.end(), std::int64_t{0}), 1));
    }
    check_group_sizes(checkpoint, g_idx->name, group_of, groups, *group_size,
                      group_size_from_config ? "the config's" : "the size of group 0");
  }
  if (!group_size) {
    if (in_features % groups != 0) {
      throw ConvertError(fmt::format("{}: the group size of layer '{}' is unknown: {} groups do not divide in_features "
                                     "= {}, and there is no g_idx or config group_size; put the checkpoint's "
                                     "quantize_config.json next to it",
                                     checkpoint.label(), p, groups, in_features));
    }
    group_size = in_features / groups;
  }
  if ((std::uint64_t{in_features} + *group_size - 1) / *group_size != groups) {
    throw ConvertError(fmt::format("{}: group_size = {} gives ceil({}/{}) groups, but '{}' has {} rows",
                                   checkpoint.label(), *group_size, in_features, *group_size, scales.name, groups));
  }
  // Act-order (desc_act=True): g_idx scatters each group over k. GPTQ still gives every
  // group exactly group_size input features (the last one the rest), so sorting the input
  // features by group makes the groups contiguous runs of k / group_size, which the op
  // reads through its perm buffer (ir/ops/Linear4Bit.h, "act_order").
  std::vector<std::uint32_t> perm;
  bool act_order = false;
  for (std::uint32_t k = 0; k < group_of.size() && !act_order; ++k) {
    act_order = group_of[k] != static_cast<std::int64_t>(k / *group_size);
  }
  if (act_order) perm = sorted_by_group(group_of, groups);

  // The qzeros convention.
  const std::optional<std::string>& configured = checkpoint.config().checkpoint_format;
  if (options.checkpoint_format && configured && *options.checkpoint_format != *configured) {
    throw ConvertError(fmt::format("{}: --checkpoint-format {} contradicts the config's checkpoint_format \"{}\" ({}); "
                                   "drop the flag or fix the config",
                                   checkpoint.label(), *options.checkpoint_format, *configured,
                                   fmt::join(checkpoint.config().sources, ", ")));
  }
  const std::string convention = options.checkpoint_format.value_or(configured.value_or("gptq"));
  if (convention != "gptq" && convention != "gptq_v2") {
    throw UnsupportedFormatError(fmt::format(
        "{}: checkpoint_format \"{}\" is a kernel-specific repacking of GPTQ that {} does not read; re-save the "
        "checkpoint in the \"gptq\" or \"gptq_v2\" format",
        checkpoint.label(), convention, kOp));
  }
  const bool v2 = convention == "gptq_v2";
  const std::vector<std::uint32_t> zero_words = words(qzeros);
  std::vector<std::uint32_t> zero_point;
  if (repack) zero_point.resize(std::size_t{groups} * out);
  for (std::uint32_t g = 0; g < groups; ++g) {
    for (std::uint32_t c = 0; c < out / 8; ++c) {
      const std::uint32_t stored = zero_words[std::size_t{g} * (out / 8) + c];
      std::uint32_t word = stored;
      if (!v2) {
        word = v1_zeros_with_carry(stored);
        if (word != v1_zeros_per_nibble(stored)) {
          throw ConvertError(fmt::format(
              "{}: '{}' word [{}, {}] = 0x{:08x} holds a GPTQ v1 zero point of 0 (stored as nibble 15): AutoGPTQ reads "
              "the word nibble by nibble as zero points {} and GPTQModel, adding with carries, as {}; they disagree, "
              "so this v1 checkpoint's zero points are ambiguous. Fix: load it with GPTQModel and save it with "
              "checkpoint_format=\"gptq_v2\", then convert with --checkpoint-format gptq_v2",
              checkpoint.label(), qzeros.name, g, c, stored, nibbles_text(v1_zeros_per_nibble(stored)),
              nibbles_text(word)));
        }
      }
      if (repack) {
        for (std::uint32_t j = 0; j < 8; ++j) {
          zero_point[std::size_t{g} * out + 8 * c + j] = (word >> (4 * j)) & 0xFu;
        }
      }
    }
  }

  layer.source_type =
      fmt::format("GPTQ {} 4-bit, group_size {}{}", v2 ? "v2" : "v1", *group_size, act_order ? ", act-order" : "");
  layer.spec = affine_spec(in_features, out, *group_size, options.batch);
  if (act_order) layer.spec["act_order"] = true;
  layer.bias = read_bias(checkpoint, p, out, layer.tensors);
  if (repack) {
    std::vector<std::uint32_t> w = words(qweight);
    if (act_order) {
      w = permute_packed_rows(w, perm, out);
      layer.buffers.push_back(make_array("perm", ir::ScalarType::U32, {in_features}, perm));
    }
    add_affine_buffers(layer, std::move(w), exact_f32(checkpoint, scales.name), std::move(zero_point), groups);
  }
  check_against_op(layer);
}

void plan_awq(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
              bool repack) {
  const std::string& p = options.layer;
  begin_plan(layer, checkpoint, options, CheckpointFormat::Awq, "awq", "AWQ");
  if (const auto& version = checkpoint.config().version; version) {
    std::string lowered = *version;
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lowered != "gemm") {
      throw UnsupportedFormatError(fmt::format(
          "{}: the checkpoint's config says AutoAWQ version \"{}\": that layout (qweight packed for AutoAWQ's {} "
          "kernel) is not the GEMM layout this converter repacks into {}; re-save with version=\"gemm\"",
          checkpoint.label(), *version, *version, kOp));
    }
  }
  if (checkpoint.contains(p + ".g_idx")) {
    throw ConvertError(fmt::format("{}: layer '{}' has '{}.g_idx', which AutoAWQ never writes: this is a GPTQ "
                                   "checkpoint; convert it with --format gptq",
                                   checkpoint.label(), p, p));
  }
  const SafetensorsTensor& qweight = checkpoint.tensor(p + ".qweight", "AWQ packed codes, I32 [in, out/8]");
  expect_dtype(checkpoint, qweight, "AWQ packed codes", {SafetensorsDtype::I32, SafetensorsDtype::U32});
  expect_rank2(checkpoint, qweight, "AWQ packed codes", "[in, out/8]");
  const SafetensorsTensor& scales = checkpoint.tensor(p + ".scales", "AWQ group scales, F16 [groups, out]");
  expect_dtype(checkpoint, scales, "AWQ group scales",
               {SafetensorsDtype::F16, SafetensorsDtype::BF16, SafetensorsDtype::F32});
  expect_rank2(checkpoint, scales, "AWQ group scales", "[groups, out]");
  const SafetensorsTensor& qzeros = checkpoint.tensor(p + ".qzeros", "AWQ packed zero points, I32 [groups, out/8]");
  expect_dtype(checkpoint, qzeros, "AWQ packed zero points", {SafetensorsDtype::I32, SafetensorsDtype::U32});
  layer.tensors = {qweight.name, qzeros.name, scales.name};

  const std::uint32_t out = to_u32(scales.name + " columns (out_features)", scales.shape[1]);
  const std::uint32_t groups = to_u32(scales.name + " rows (groups)", scales.shape[0]);
  const std::uint32_t in = to_u32(qweight.name + " rows (in_features)", qweight.shape[0]);
  layer.in_features = in;
  layer.out_features = out;
  if (qweight.shape[1] * 8 != out) {
    throw ConvertError(fmt::format(
        "{}: tensor '{}' (AWQ packed codes) has shape {}; AutoAWQ's GEMM layout is [in, out/8] with out = {} (the "
        "columns of '{}'){}",
        checkpoint.label(), qweight.name, ir::ops::shape_text(qweight.shape), out, scales.name,
        qweight.shape[1] == out ? "; [in/8, out] is GPTQ's layout: convert with --format gptq" : ""));
  }
  expect_shape(checkpoint, qzeros, "AWQ packed zero points", {groups, out / 8}, "[groups, out/8]");
  if (in % 8 != 0) {
    throw UnsupportedFormatError(fmt::format(
        "{}: layer '{}' has in_features = {}, not a multiple of 8: {} packs 8 input features per u32 word and has no "
        "padded last word",
        checkpoint.label(), p, in, kOp));
  }
  std::optional<std::uint32_t> group_size = config_group_size(checkpoint, in, groups, scales.name);
  if (!group_size) {
    if (groups == 0 || in % groups != 0) {
      throw ConvertError(fmt::format("{}: {} groups ('{}' rows) do not divide in_features = {}; AutoAWQ requires "
                                     "in_features % group_size == 0",
                                     checkpoint.label(), groups, scales.name, in));
    }
    group_size = in / groups;
  }

  layer.source_type = fmt::format("AWQ GEMM 4-bit, group_size {}", *group_size);
  layer.spec = affine_spec(in, out, *group_size, options.batch);
  layer.bias = read_bias(checkpoint, p, out, layer.tensors);
  if (repack) {
    const std::vector<std::uint32_t> packed = words(qweight);
    const std::vector<std::uint32_t> packed_zeros = words(qzeros);
    const std::uint32_t words_per_row = out / 8;
    std::vector<std::uint32_t> w(std::size_t{in / 8} * out, 0);
    for (std::uint32_t k = 0; k < in; ++k) {
      for (std::uint32_t c = 0; c < words_per_row; ++c) {
        const std::uint32_t word = packed[std::size_t{k} * words_per_row + c];
        for (std::uint32_t j = 0; j < 8; ++j) {
          const std::uint32_t q = (word >> (4 * kAwqReverseOrder[j])) & 0xFu;
          w[std::size_t{k / 8} * out + 8 * c + j] |= q << (4 * (k % 8));
        }
      }
    }
    std::vector<std::uint32_t> zero_point(std::size_t{groups} * out);
    for (std::uint32_t g = 0; g < groups; ++g) {
      for (std::uint32_t c = 0; c < words_per_row; ++c) {
        const std::uint32_t word = packed_zeros[std::size_t{g} * words_per_row + c];
        for (std::uint32_t j = 0; j < 8; ++j) {
          zero_point[std::size_t{g} * out + 8 * c + j] = (word >> (4 * kAwqReverseOrder[j])) & 0xFu;
        }
      }
    }
    add_affine_buffers(layer, std::move(w), exact_f32(checkpoint, scales.name), std::move(zero_point), groups);
  }
  check_against_op(layer);
}

}  // namespace detail

ConvertedLayer convert_gptq(const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options) {
  ConvertedLayer layer;
  detail::plan_gptq(layer, checkpoint, options, /*repack=*/true);
  return layer;
}

ConvertedLayer convert_awq(const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options) {
  ConvertedLayer layer;
  detail::plan_awq(layer, checkpoint, options, /*repack=*/true);
  return layer;
}

}  // namespace quantc::runtime::convert
