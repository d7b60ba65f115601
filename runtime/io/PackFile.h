// `quantc pack` on files: reads a weight tensor from a safetensors model, packs it with
// the host packer (ir/ops/HostPack.h: the schemes, their layouts and quantizer
// definitions) and writes the op's buffers, atomically, all or nothing, either as a layer
// bundle (runtime/io/Bundle.h: spec.json + one .npy per buffer, what `quantc convert`
// writes and `quantc run SPEC --inputs DIR` reads) or as one safetensors file.
//
// Weight convention: the tensor is a PyTorch nn.Linear weight, [out_features,
// in_features], unless the layout says [in, out] (the ops' W). The layer's bias, when the
// model has `<prefix>.bias` next to `<prefix>.weight`, is exported as bias.npy (bundle) or
// a "bias" tensor (safetensors), and linear_4bit_affine_grouped also gets it as its bias
// buffer `b` (zeros without a bias); the other ops have no bias buffer.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ops/HostPack.h"
#include "runtime/io/Safetensors.h"

namespace quantc::runtime::pack {

using ir::ops::pack::LinearWeight;

/// How a 2-D weight tensor is stored.
enum class WeightLayout {
  OutIn,  // [out_features, in_features]: PyTorch nn.Linear (the default)
  InOut,  // [in_features, out_features]: the ops' W
};
/// "out,in" / "in,out".
std::string weight_layout_name(WeightLayout layout);
/// The layout named "out,in" or "in,out"; RuntimeError naming both otherwise.
WeightLayout weight_layout_from_name(const std::string& name);

/// Reads a 2-D floating tensor (F32/F16/BF16/F64) as a LinearWeight stored in `layout`.
/// Throws RuntimeError naming the tensor for a missing tensor, a rank other than 2,
/// dimensions above 2^32-1 or a non-floating dtype.
LinearWeight linear_weight_from_tensor(const SafetensorsFile& file, const std::string& name, WeightLayout layout);
/// The same with `transpose` = true for [out, in] (WeightLayout::OutIn), false for [in, out].
LinearWeight linear_weight_from_tensor(const SafetensorsFile& file, const std::string& name, bool transpose);

/// The scheme (ir::ops::pack::SchemeOptions) plus where to read and write.
struct PackOptions : ir::ops::pack::SchemeOptions {
  std::string model_path;    // MODEL.safetensors
  std::string tensor;        // tensor name in the model, e.g. encoder.layer.0.attention.self.query.weight
  WeightLayout layout = WeightLayout::OutIn;
  /// A bundle folder, or a file named *.safetensors, or "-" (safetensors on standard
  /// output); see is_bundle_output.
  std::string output_path;
  std::optional<std::string> npy_dir;  // with a safetensors output: also write <buffer>.npy files here
  std::uint32_t batch = 1;             // nf4_gemm's m in the spec
  /// The spec's "activation" (f32, f16, bf16; ir/ops/Activation.h). f16/bf16 add it to the
  /// spec and give linear_4bit_affine_grouped's bias buffer `b` that type (each value
  /// rounded once to nearest even); the weight-side buffers and the f32 `bias` do not change.
  ir::ScalarType activation = ir::ScalarType::F32;
};

/// Whether `output_path` names a bundle folder: everything but "-" and names ending in
/// ".safetensors".
bool is_bundle_output(const std::string& output_path);

/// What pack_file wrote.
struct PackResult {
  /// The op's buffers (named exactly like them) and the bias: as the safetensors output's
  /// tensors, in order.
  std::vector<SafetensorsTensorData> tensors;
  /// {op, scheme, in_dim, out_dim, group_size|block, source_tensor, layout, bias, spec}.
  std::map<std::string, std::string> metadata;
  nlohmann::json spec;              // the op spec (spec.json of a bundle)
  std::vector<std::string> written;  // the files written
};

/// The op spec a packed weight runs with: linear_4bit_affine_grouped {in_dim, out_dim,
/// group_size}, nf4_gemm {m: batch, n, k}, int4_matvec_f32_scaled {rows, cols}, each with
/// "schedule": "auto", and "activation" when `activation` is f16 or bf16.
nlohmann::json spec_for(const ir::ops::pack::SchemeOptions& scheme, const LinearWeight& weight, std::uint32_t batch,
                        ir::ScalarType activation = ir::ScalarType::F32);

/// Adds linear_4bit_affine_grouped's bias buffer `b` to `packed` (other schemes: nothing):
/// `bias` rounded once to `activation`, zeros without one. RuntimeError for a bias whose
/// length is not weight.out_dim.
void add_bias_buffer(ir::ops::pack::PackedWeight& packed, const LinearWeight& weight,
                     const std::optional<std::vector<float>>& bias, const ir::ops::pack::SchemeOptions& scheme,
                     ir::ScalarType activation);

/// The op's buffers for an in-memory weight, as pack_file writes them: pack_weight's,
/// then add_bias_buffer. Throws what those throw.
ir::ops::pack::PackedWeight pack_layer(const LinearWeight& weight, const std::optional<std::vector<float>>& bias,
                                       const ir::ops::pack::SchemeOptions& scheme, ir::ScalarType activation);

/// `quantc pack`: reads options.tensor (and its bias) from options.model_path, packs it and
/// writes the bundle or the safetensors file (+ npy_dir). Every output path is checked
/// before the model is read and all are written together at the end
/// (runtime/io/AtomicFile.h), so a failure writes nothing. Throws
/// ir::ops::pack::PackError for input the scheme cannot pack, RuntimeError for a missing
/// or unsuitable tensor or bias, npy_dir given with a bundle output, and unwritable
/// outputs.
PackResult pack_file(const PackOptions& options);

}  // namespace quantc::runtime::pack
