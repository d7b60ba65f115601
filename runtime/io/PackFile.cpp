#include "runtime/io/PackFile.h"

#include <fmt/format.h>

#include <filesystem>
#include <limits>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/Npy.h"

namespace quantc::runtime::pack {
namespace {

/// The safetensors dtype of a packed buffer (the packer writes f32, u8 and u32 only).
SafetensorsDtype safetensors_dtype(ir::ScalarType element) {
  switch (element) {
    case ir::ScalarType::F32: return SafetensorsDtype::F32;
    case ir::ScalarType::U8: return SafetensorsDtype::U8;
    case ir::ScalarType::U32: return SafetensorsDtype::U32;
    default: throw RuntimeError(fmt::format("pack: no safetensors dtype for a {} buffer", ir::to_string(element)));
  }
}

}  // namespace

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

PackResult pack_file(const PackOptions& options) {
  const SafetensorsFile model = SafetensorsFile::open(options.model_path);
  const LinearWeight weight = linear_weight_from_tensor(model, options.tensor, options.transpose);
  ir::ops::pack::PackedWeight packed = ir::ops::pack::pack_weight(weight, options);
  PackResult result;
  result.metadata = std::move(packed.metadata);
  result.metadata["source_tensor"] = options.tensor;
  result.metadata["transposed"] = options.transpose ? "true" : "false";
  result.metadata["producer"] = "quantc pack";
  for (ir::ops::pack::PackedBuffer& buffer : packed.buffers) {
    result.tensors.push_back({buffer.name, safetensors_dtype(buffer.element), buffer.shape, std::move(buffer.bytes)});
  }
  write_safetensors(options.output_path, result.tensors, result.metadata);
  if (options.npy_dir) {
    std::filesystem::create_directories(*options.npy_dir);
    for (std::size_t i = 0; i < result.tensors.size(); ++i) {
      const SafetensorsTensorData& tensor = result.tensors[i];
      NpyArray array;
      array.shape = tensor.shape;
      array.buffer.element = packed.buffers[i].element;
      array.buffer.bytes = tensor.bytes;
      const std::string path = (std::filesystem::path(*options.npy_dir) / (tensor.name + ".npy")).string();
      write_file_atomically(path, to_npy_bytes(array));
    }
  }
  return result;
}

}  // namespace quantc::runtime::pack
