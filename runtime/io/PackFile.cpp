#include "runtime/io/PackFile.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/Bundle.h"
#include "runtime/io/Npy.h"

namespace quantc::runtime::pack {
namespace {

/// The safetensors dtype of a packed buffer (the packer writes f32, u8 and u32 only).
SafetensorsDtype safetensors_dtype(ir::ScalarType element) {
  switch (element) {
    case ir::ScalarType::F32: return SafetensorsDtype::F32;
    case ir::ScalarType::F16: return SafetensorsDtype::F16;    // b with --activation f16
    case ir::ScalarType::BF16: return SafetensorsDtype::BF16;  // b with --activation bf16
    case ir::ScalarType::U8: return SafetensorsDtype::U8;
    case ir::ScalarType::U32: return SafetensorsDtype::U32;
    default: throw RuntimeError(fmt::format("pack: no safetensors dtype for a {} buffer", ir::to_string(element)));
  }
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The bias next to a weight named "<prefix>.weight": "<prefix>.bias" when the model has
/// it, checked to be a floating vector of out_dim values.
std::optional<std::vector<float>> read_bias(const SafetensorsFile& model, const std::string& weight_name,
                                            std::uint32_t out_dim, std::string& bias_name) {
  if (!ends_with(weight_name, ".weight")) return std::nullopt;
  bias_name = weight_name.substr(0, weight_name.size() - 7) + ".bias";
  if (!model.contains(bias_name)) return std::nullopt;
  const SafetensorsTensor& bias = model.tensor(bias_name);
  if (bias.shape != std::vector<std::uint64_t>{out_dim}) {
    throw RuntimeError(fmt::format("{}: bias '{}' has shape [{}]; the weight '{}' has out_features = {}, so expected "
                                   "[{}] (check --layout: nn.Linear weights are [out, in], the default)",
                                   model.label(), bias_name, fmt::join(bias.shape, ", "), weight_name, out_dim,
                                   out_dim));
  }
  return model.to_f32(bias_name);  // RuntimeError naming the dtype when it is not floating
}

}  // namespace

std::string weight_layout_name(WeightLayout layout) { return layout == WeightLayout::OutIn ? "out,in" : "in,out"; }

WeightLayout weight_layout_from_name(const std::string& name) {
  if (name == "out,in") return WeightLayout::OutIn;
  if (name == "in,out") return WeightLayout::InOut;
  throw RuntimeError(fmt::format("--layout '{}': use out,in (a PyTorch nn.Linear weight [out_features, in_features], "
                                 "the default) or in,out (the ops' W [in_features, out_features])",
                                 name));
}

LinearWeight linear_weight_from_tensor(const SafetensorsFile& file, const std::string& name, WeightLayout layout) {
  return linear_weight_from_tensor(file, name, layout == WeightLayout::OutIn);
}

LinearWeight linear_weight_from_tensor(const SafetensorsFile& file, const std::string& name, bool transpose) {
  const SafetensorsTensor& tensor = file.tensor(name);
  if (tensor.shape.size() != 2) {
    throw RuntimeError(fmt::format("{}: tensor '{}' has rank {}; a linear weight must be 2-D", file.label(), name,
                                   tensor.shape.size()));
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
  if (tensor.shape[0] > kMax || tensor.shape[1] > kMax) {
    throw RuntimeError(fmt::format("{}: tensor '{}' shape [{}, {}] exceeds 2^32-1 per dimension", file.label(), name,
                                   tensor.shape[0], tensor.shape[1]));
  }
  std::vector<float> values = file.to_f32(name);
  const auto rows = static_cast<std::uint32_t>(tensor.shape[0]), cols = static_cast<std::uint32_t>(tensor.shape[1]);
  LinearWeight weight;
  if (transpose) {  // stored [out_dim, in_dim]: already output-major
    weight.out_dim = rows;
    weight.in_dim = cols;
    weight.values = std::move(values);
    return weight;
  }
  // stored W[in_dim, out_dim]: transpose into output-major
  weight.in_dim = rows;
  weight.out_dim = cols;
  weight.values.resize(values.size());
  for (std::uint32_t k = 0; k < rows; ++k) {
    for (std::uint32_t i = 0; i < cols; ++i) weight.values[std::size_t{i} * rows + k] = values[std::size_t{k} * cols + i];
  }
  return weight;
}

bool is_bundle_output(const std::string& output_path) {
  return output_path != "-" && !ends_with(output_path, ".safetensors");
}

nlohmann::json spec_for(const ir::ops::pack::SchemeOptions& scheme, const LinearWeight& weight, std::uint32_t batch,
                        ir::ScalarType activation) {
  using ir::ops::pack::Scheme;
  nlohmann::json spec = {{"op", ir::ops::pack::op_for_scheme(scheme.scheme)}};
  switch (scheme.scheme) {
    case Scheme::Int4AffineGrouped:
      spec.update({{"k", weight.in_dim}, {"n", weight.out_dim}, {"group_size", scheme.group_size}});
      if (batch != 1) spec["m"] = batch;  // the default, 1, left out
      break;
    case Scheme::Nf4: spec.update({{"m", batch}, {"n", weight.out_dim}, {"k", weight.in_dim}}); break;
    case Scheme::Int4Symmetric: spec.update({{"n", weight.out_dim}, {"k", weight.in_dim}}); break;
  }
  spec["schedule"] = "auto";
  if (activation != ir::ScalarType::F32) spec["activation"] = ir::to_string(activation);  // f32: the default, left out
  return spec;
}

void add_bias_buffer(ir::ops::pack::PackedWeight& packed, const LinearWeight& weight,
                     const std::optional<std::vector<float>>& bias, const ir::ops::pack::SchemeOptions& scheme,
                     ir::ScalarType activation) {
  if (bias && bias->size() != weight.out_dim) {
    throw RuntimeError(fmt::format("bias: {} values given; the weight has out_features = {}, so expected {}",
                                   bias->size(), weight.out_dim, weight.out_dim));
  }
  // linear_4bit_affine_grouped adds a bias buffer `b` (zeros without a bias); the other
  // ops have none, so the bias travels beside their buffers.
  // Its type is the activation's: f16/bf16 round each bias value once (bundle's rounded_to_activation).
  if (scheme.scheme == ir::ops::pack::Scheme::Int4AffineGrouped) {
    const std::vector<float> b = bias ? *bias : std::vector<float>(weight.out_dim, 0.0f);
    HostBuffer values = rounded_to_activation(activation, b);
    packed.buffers.push_back({"b", values.element, {weight.out_dim}, std::move(values.bytes)});
  }
}

ir::ops::pack::PackedWeight pack_layer(const LinearWeight& weight, const std::optional<std::vector<float>>& bias,
                                       const ir::ops::pack::SchemeOptions& scheme, ir::ScalarType activation) {
  ir::ops::pack::PackedWeight packed = ir::ops::pack::pack_weight(weight, scheme);
  add_bias_buffer(packed, weight, bias, scheme, activation);
  return packed;
}

PackResult pack_file(const PackOptions& options) {
  // Every output is checked before the model is read, and nothing is written until
  // every output is staged: a failure leaves every existing file as it was.
  const bool bundle = is_bundle_output(options.output_path);
  if (bundle && options.npy_dir) {
    throw RuntimeError(fmt::format("--npy-dir applies to a .safetensors output; the bundle folder '{}' (-o) already "
                                   "gets one .npy per buffer: drop --npy-dir",
                                   options.output_path));
  }
  OutputFiles outputs;
  std::optional<BundleWriter> writer;
  std::optional<std::size_t> model_output;
  std::optional<OutputFolder> npy_folder;
  if (bundle) {
    writer.emplace(options.output_path, "-o");
  } else {
    model_output = outputs.add(options.output_path, /*allow_stdout=*/true);
    if (options.npy_dir) npy_folder.emplace(*options.npy_dir, "--npy-dir");
  }

  const SafetensorsFile model = SafetensorsFile::open(options.model_path);
  const LinearWeight weight = linear_weight_from_tensor(model, options.tensor, options.layout);
  ir::ops::pack::PackedWeight packed = ir::ops::pack::pack_weight(weight, options);
  std::string bias_name;
  const std::optional<std::vector<float>> bias = read_bias(model, options.tensor, weight.out_dim, bias_name);
  add_bias_buffer(packed, weight, bias, options, options.activation);

  PackResult result;
  result.spec = spec_for(options, weight, options.batch, options.activation);
  result.metadata = std::move(packed.metadata);
  result.metadata["source_tensor"] = options.tensor;
  result.metadata["layout"] = weight_layout_name(options.layout);
  result.metadata["bias"] = bias ? bias_name : "none";
  result.metadata["spec"] = result.spec.dump();
  result.metadata["producer"] = "quantc pack";
  for (const ir::ops::pack::PackedBuffer& buffer : packed.buffers) {
    result.tensors.push_back({buffer.name, safetensors_dtype(buffer.element), buffer.shape, buffer.bytes});
  }
  if (bias) {
    std::vector<std::uint8_t> bytes(bias->size() * 4);
    std::memcpy(bytes.data(), bias->data(), bytes.size());
    result.tensors.push_back({"bias", SafetensorsDtype::F32, {weight.out_dim}, std::move(bytes)});
  }

  if (bundle) {
    Bundle files;
    files.spec = result.spec;
    for (const ir::ops::pack::PackedBuffer& buffer : packed.buffers) {
      files.buffers.push_back({buffer.name, NpyArray{HostBuffer{buffer.element, buffer.bytes}, buffer.shape}});
    }
    if (bias) files.bias = NpyArray{HostBuffer::from(ir::ScalarType::F32, *bias), {weight.out_dim}};
    result.written = writer->write(files);
    return result;
  }

  const std::vector<std::uint8_t> model_bytes = to_safetensors_bytes(result.tensors, result.metadata);
  std::vector<std::size_t> npy_outputs;
  if (npy_folder) {
    npy_folder->create();
    for (const SafetensorsTensorData& tensor : result.tensors) {
      npy_outputs.push_back(outputs.add(npy_folder->file(tensor.name + ".npy")));
    }
  }
  outputs.stage(*model_output, std::string_view(reinterpret_cast<const char*>(model_bytes.data()), model_bytes.size()));
  result.written.push_back(options.output_path);
  for (std::size_t i = 0; i < npy_outputs.size(); ++i) {
    const SafetensorsTensorData& tensor = result.tensors[i];
    NpyArray array;
    array.shape = tensor.shape;
    array.buffer.element = i < packed.buffers.size() ? packed.buffers[i].element : ir::ScalarType::F32;
    array.buffer.bytes = tensor.bytes;
    outputs.stage(npy_outputs[i], to_npy_bytes(array));
    result.written.push_back(npy_folder->file(tensor.name + ".npy"));
  }
  outputs.commit();
  if (npy_folder) npy_folder->keep();
  return result;
}

}  // namespace quantc::runtime::pack
