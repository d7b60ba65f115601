#include "runtime/io/PackFile.h"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

namespace {

/// The folders `folder` needs created (outermost first); RuntimeError when it, or its
/// nearest existing ancestor, is not a writable folder.
std::vector<std::filesystem::path> folders_to_create(const std::string& folder) {
  namespace fs = std::filesystem;
  std::vector<fs::path> missing;
  fs::path current = fs::path(folder).lexically_normal();
  if (current.empty()) current = ".";
  while (true) {
    struct stat status {};
    if (::stat(current.c_str(), &status) == 0) {
      if (!S_ISDIR(status.st_mode)) {
        throw RuntimeError(fmt::format("--npy-dir '{}': '{}' exists and is not a folder; name a folder", folder,
                                       current.string()));
      }
      if (::access(current.c_str(), W_OK | X_OK) != 0) {
        const int error = errno;
        throw RuntimeError(fmt::format("--npy-dir '{}': folder '{}' is not writable ({})", folder, current.string(),
                                       std::strerror(error)));
      }
      break;
    }
    const int error = errno;
    if (error == ENOTDIR) {
      throw RuntimeError(fmt::format("--npy-dir '{}': a component of '{}' is not a folder", folder, current.string()));
    }
    if (error != ENOENT) {
      throw RuntimeError(fmt::format("--npy-dir '{}': '{}': {}", folder, current.string(), std::strerror(error)));
    }
    missing.push_back(current);
    const fs::path parent = current.parent_path();
    if (parent == current) break;
    current = parent.empty() ? fs::path(".") : parent;  // a relative path's first component is in "."

  }
  return {missing.rbegin(), missing.rend()};
}

/// Removes the folders this run created when it fails (only if still empty).
struct CreatedFolders {
  std::vector<std::filesystem::path> folders;
  bool keep = false;
  ~CreatedFolders() {
    if (keep) return;
    for (auto it = folders.rbegin(); it != folders.rend(); ++it) ::rmdir(it->c_str());
  }
};

}  // namespace

PackResult pack_file(const PackOptions& options) {
  // Every output is checked before the model is read, and nothing is written until
  // every output is staged: a failure leaves every existing file as it was.
  OutputFiles outputs;
  const std::size_t model_output = outputs.add(options.output_path, /*allow_stdout=*/true);
  std::vector<std::filesystem::path> npy_folders;
  if (options.npy_dir) npy_folders = folders_to_create(*options.npy_dir);

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
  const std::vector<std::uint8_t> model_bytes = to_safetensors_bytes(result.tensors, result.metadata);

  CreatedFolders created;
  std::vector<std::size_t> npy_outputs;
  if (options.npy_dir) {
    for (const std::filesystem::path& folder : npy_folders) {
      if (::mkdir(folder.c_str(), 0777) == 0) {
        created.folders.push_back(folder);
      } else if (errno != EEXIST) {
        const int error = errno;
        throw RuntimeError(fmt::format("--npy-dir '{}': cannot create folder '{}': {}", *options.npy_dir,
                                       folder.string(), std::strerror(error)));
      }
    }
    for (const SafetensorsTensorData& tensor : result.tensors) {
      npy_outputs.push_back(outputs.add((std::filesystem::path(*options.npy_dir) / (tensor.name + ".npy")).string()));
    }
  }
  outputs.stage(model_output, std::string_view(reinterpret_cast<const char*>(model_bytes.data()), model_bytes.size()));
  for (std::size_t i = 0; i < npy_outputs.size(); ++i) {
    const SafetensorsTensorData& tensor = result.tensors[i];
    NpyArray array;
    array.shape = tensor.shape;
    array.buffer.element = packed.buffers[i].element;
    array.buffer.bytes = tensor.bytes;
    outputs.stage(npy_outputs[i], to_npy_bytes(array));
  }
  outputs.commit();
  created.keep = true;
  return result;
}

}  // namespace quantc::runtime::pack
