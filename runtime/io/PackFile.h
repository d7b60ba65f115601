// `quantc pack` on files: reads a weight tensor from a safetensors model, packs it with
// the host packer (ir/ops/HostPack.h: the schemes, their layouts and quantizer
// definitions) and writes the op's buffers as safetensors (and optionally .npy) files,
// atomically, all or nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ops/HostPack.h"
#include "runtime/io/Safetensors.h"

namespace quantc::runtime::pack {

using ir::ops::pack::LinearWeight;

/// Reads a 2-D floating tensor (F32/F16/BF16/F64) as a LinearWeight. Without
/// `transpose` the tensor is taken as W[in_dim, out_dim] (the ops' math orientation);
/// with `transpose` as [out_dim, in_dim] (PyTorch nn.Linear: [out_features,
/// in_features]). Throws RuntimeError naming the tensor for a missing tensor, a rank
/// other than 2, dimensions above 2^32-1 or a non-floating dtype.
LinearWeight linear_weight_from_tensor(const SafetensorsFile& file, const std::string& name, bool transpose);

/// The scheme (ir::ops::pack::SchemeOptions) plus where to read and write.
struct PackOptions : ir::ops::pack::SchemeOptions {
  std::string model_path;    // MODEL.safetensors
  std::string tensor;        // tensor name in the model
  bool transpose = false;    // read [out_dim, in_dim] (PyTorch nn.Linear)
  std::string output_path;   // OUT.safetensors
  std::optional<std::string> npy_dir;  // also write <buffer>.npy files here
};

/// The packed buffers as safetensors tensors named exactly like the op's buffers, with
/// __metadata__ {op, scheme, in_dim, out_dim, group_size|block, source tensor,
/// transposed}.
struct PackResult {
  std::vector<SafetensorsTensorData> tensors;
  std::map<std::string, std::string> metadata;
};

/// `quantc pack`: reads options.tensor from options.model_path, packs it, writes
/// options.output_path ("-": standard output) and one .npy per buffer into npy_dir
/// (created if needed). Every output path is checked before the model is read and all
/// are written together at the end (runtime/io/AtomicFile.h), so a failure writes
/// nothing. Returns what was written. Throws ir::ops::pack::PackError for input the
/// scheme cannot pack, RuntimeError for a missing or unsuitable tensor and for
/// unwritable outputs.
PackResult pack_file(const PackOptions& options);

}  // namespace quantc::runtime::pack
