// The format-independent part of `quantc convert`: opening checkpoints and their
// quantization config, dispatching to a format's converter, listing layers.
#include "runtime/io/Convert.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "ir/ops/BufferShape.h"
#include "runtime/io/ConvertSupport.h"

namespace quantc::runtime::convert {
namespace {

namespace fs = std::filesystem;

bool is_folder(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

/// Fills unset fields of `config` from one JSON object of quantization settings.
void merge_settings(QuantizationConfig& config, const nlohmann::json& settings, const std::string& source) {
  if (!settings.is_object()) return;
  auto text = [&](const char* key, std::optional<std::string>& field) {
    if (!field && settings.contains(key) && settings[key].is_string()) field = settings[key].get<std::string>();
  };
  auto integer = [&](const char* key, std::optional<std::int64_t>& field) {
    if (!field && settings.contains(key) && settings[key].is_number_integer()) field = settings[key].get<std::int64_t>();
  };
  auto boolean = [&](const char* key, std::optional<bool>& field) {
    if (!field && settings.contains(key) && settings[key].is_boolean()) field = settings[key].get<bool>();
  };
  text("quant_method", config.quant_method);
  text("checkpoint_format", config.checkpoint_format);
  integer("bits", config.bits);
  integer("w_bit", config.bits);
  integer("group_size", config.group_size);
  integer("q_group_size", config.group_size);
  boolean("desc_act", config.desc_act);
  boolean("sym", config.sym);
  text("version", config.version);
  config.sources.push_back(source);
}

QuantizationConfig read_config(const std::string& folder) {
  QuantizationConfig config;
  auto read = [&](const std::string& name, bool nested) {
    const fs::path path = fs::path(folder) / name;
    if (!fs::is_regular_file(path)) return;
    std::ifstream file(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(file)), {});
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& error) {
      throw ConvertError(fmt::format("{}: not valid JSON ({}); fix or remove it", path.string(), error.what()));
    }
    if (nested) {
      if (json.is_object() && json.contains("quantization_config")) {
        merge_settings(config, json["quantization_config"], path.string());
      }
    } else {
      merge_settings(config, json, path.string());
    }
  };
  read("config.json", true);
  read("quantize_config.json", false);
  read("quant_config.json", false);
  return config;
}

}  // namespace

std::string format_name(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::Gptq: return "gptq";
    case CheckpointFormat::Awq: return "awq";
    case CheckpointFormat::Bnb: return "bnb";
    case CheckpointFormat::Gguf: return "gguf";
  }
  return "?";
}

CheckpointFormat format_from_name(const std::string& name) {
  for (CheckpointFormat format :
       {CheckpointFormat::Gptq, CheckpointFormat::Awq, CheckpointFormat::Bnb, CheckpointFormat::Gguf}) {
    if (format_name(format) == name) return format;
  }
  throw ConvertError(fmt::format("unknown checkpoint format '{}'; use gptq, awq, bnb or gguf", name));
}

// ---- SafetensorsCheckpoint ------------------------------------------------------------

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
  SafetensorsCheckpoint checkpoint;
  checkpoint.label_ = path;
  std::vector<std::string> paths;
  std::string folder;
  if (is_folder(path)) {
    folder = path;
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.path().extension() == ".safetensors") paths.push_back(entry.path().string());
    }
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) {
      throw ConvertError(fmt::format("{}: the folder holds no .safetensors file; name the checkpoint file or its "
                                     "folder", path));
    }
  } else {
    paths.push_back(path);
    folder = fs::path(path).parent_path().string();
    if (folder.empty()) folder = ".";
  }
  for (const std::string& file_path : paths) {
    checkpoint.files_.push_back(SafetensorsFile::open(file_path));
    const std::size_t file = checkpoint.files_.size() - 1;
    for (const SafetensorsTensor& tensor : checkpoint.files_.back().tensors()) {
      auto [it, inserted] = checkpoint.index_.emplace(tensor.name, file);
      if (!inserted) {
        throw ConvertError(fmt::format("{}: tensor '{}' is in both {} and {}; a sharded checkpoint holds each tensor "
                                       "once",
                                       path, tensor.name, checkpoint.files_[it->second].label(), file_path));
      }
    }
  }
  checkpoint.config_ = read_config(folder);
  return checkpoint;
}

const SafetensorsTensor* SafetensorsCheckpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return nullptr;
  return &files_[it->second].tensor(name);
}

const SafetensorsTensor& SafetensorsCheckpoint::tensor(const std::string& name, const std::string& role) const {
  if (const SafetensorsTensor* tensor = find(name)) return *tensor;
  // The tensors that share the layer prefix (up to the last '.'), to show what is there.
  const std::string prefix = name.substr(0, name.rfind('.') + 1);
  std::vector<std::string> near;
  for (auto it = index_.lower_bound(prefix); it != index_.end() && it->first.starts_with(prefix); ++it) {
    if (near.size() == 8) {
      near.push_back("...");
      break;
    }
    near.push_back(it->first);
  }
  throw ConvertError(fmt::format("{}: no tensor '{}' ({}); {}", label_, name, role,
                                 near.empty() ? "no tensor starts with '" + prefix +
                                                    "': check --layer (`quantc convert CHECKPOINT --list` lists the "
                                                    "layers)"
                                              : fmt::format("the layer has: {}", fmt::join(near, ", "))));
}

const SafetensorsFile& SafetensorsCheckpoint::file_of(const std::string& name) const { return files_.at(index_.at(name)); }

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : index_) names.push_back(name);
  return names;
}

// ---- ConvertedLayer -------------------------------------------------------------------

const NpyArray& ConvertedLayer::buffer(const std::string& name) const {
  for (const NamedArray& array : buffers) {
    if (array.name == name) return array.array;
  }
  throw RuntimeError(fmt::format("converted layer '{}' has no buffer '{}'", layer, name));
}

Bundle ConvertedLayer::bundle() const {
  Bundle result;
  result.spec = spec;
  result.buffers = buffers;
  if (bias) {
    NpyArray array;
    array.buffer = HostBuffer::from(ir::ScalarType::F32, *bias);
    array.shape = {bias->size()};
    result.bias = std::move(array);
  }
  return result;
}

// ---- dispatch ---------------------------------------------------------------------------

bool is_gguf_file(const std::string& path) {
  if (is_folder(path)) return false;
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  return file.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

ConvertedLayer convert_layer(const std::string& path, const ConvertOptions& options) {
  const bool gguf = is_gguf_file(path);
  if (options.format == CheckpointFormat::Gguf) {
    if (!gguf) {
      throw ConvertError(fmt::format("{}: not a GGUF file (no 'GGUF' magic); --format gguf reads .gguf files, "
                                     "--format gptq|awq|bnb read safetensors",
                                     path));
    }
    return convert_gguf(GgufFile::open(path), options);
  }
  if (gguf) {
    throw ConvertError(fmt::format("{}: a GGUF file; convert it with --format gguf", path));
  }
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(path);
  switch (options.format) {
    case CheckpointFormat::Gptq: return convert_gptq(checkpoint, options);
    case CheckpointFormat::Awq: return convert_awq(checkpoint, options);
    case CheckpointFormat::Bnb: return convert_bnb(checkpoint, options);
    case CheckpointFormat::Gguf: break;
  }
  throw ConvertError("unreachable checkpoint format");
}

// ---- listing ----------------------------------------------------------------------------

namespace {

/// A listing entry from a converter run without repacking; a refusal keeps what the
/// converter learnt before it and drops the file label from its message.
template <class Plan>
LayerInfo listed(const std::string& label, const std::string& layer_name, CheckpointFormat format,
                 const std::string& fallback_type, std::uint64_t in_features, std::uint64_t out_features, Plan plan) {
  LayerInfo info{layer_name, format, fallback_type, in_features, out_features, "", ""};
  ConvertOptions options;
  options.format = format;
  options.layer = layer_name;
  ConvertedLayer planned;
  try {
    plan(planned, options);
    info.op = planned.spec.value("op", "");
  } catch (const ConvertError& error) {
    info.refusal = error.what();
    if (info.refusal.starts_with(label + ": ")) info.refusal.erase(0, label.size() + 2);
  }
  if (!planned.source_type.empty()) info.type = planned.source_type;
  if (planned.in_features != 0) info.in_features = planned.in_features;
  if (planned.out_features != 0) info.out_features = planned.out_features;
  return info;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<LayerInfo> list_layers(const std::string& path) {
  std::vector<LayerInfo> layers;
  if (is_gguf_file(path)) {
    const GgufFile file = GgufFile::open(path);
    for (const GgufTensor& tensor : file.tensors()) {
      if (tensor.ne.size() != 2 || !ends_with(tensor.name, ".weight")) continue;
      const std::string layer = tensor.name.substr(0, tensor.name.size() - 7);
      layers.push_back(listed(file.label(), layer, CheckpointFormat::Gguf, std::string(ggml_type_name(tensor.type)),
                              tensor.ne[0], tensor.ne[1], [&](ConvertedLayer& planned, const ConvertOptions& options) {
                                detail::plan_gguf(planned, file, options, /*repack=*/false);
                              }));
    }
    return layers;
  }
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(path);
  std::set<std::string> quantized;  // layers listed as quantized: their .weight is not an unquantized weight
  for (const std::string& name : checkpoint.names()) {
    if (ends_with(name, ".qweight")) {
      const std::string layer = name.substr(0, name.size() - 8);
      const SafetensorsTensor& qweight = *checkpoint.find(name);
      const SafetensorsTensor* scales = checkpoint.find(layer + ".scales");
      // GPTQ packs along in ([in/8, out]), AWQ along out ([in, out/8]); scales are [groups, out].
      bool awq = !checkpoint.contains(layer + ".g_idx") && scales != nullptr && scales->shape.size() == 2 &&
                 qweight.shape.size() == 2 && qweight.shape[1] * 8 == scales->shape[1];
      const CheckpointFormat format = awq ? CheckpointFormat::Awq : CheckpointFormat::Gptq;
      const std::uint64_t out = scales != nullptr && scales->shape.size() == 2 ? scales->shape[1] : 0;
      const std::uint64_t in = qweight.shape.size() == 2 ? (awq ? qweight.shape[0] : qweight.shape[0] * 8) : 0;
      layers.push_back(listed(checkpoint.label(), layer, format, awq ? "AWQ" : "GPTQ", in, out,
                              [&](ConvertedLayer& planned, const ConvertOptions& options) {
                                if (awq) {
                                  detail::plan_awq(planned, checkpoint, options, false);
                                } else {
                                  detail::plan_gptq(planned, checkpoint, options, false);
                                }
                              }));
      quantized.insert(layer);
      continue;
    }
    for (const char* quant_type : {"nf4", "fp4"}) {
      const std::string suffix = std::string(".weight.quant_state.bitsandbytes__") + quant_type;
      if (!ends_with(name, suffix)) continue;
      const std::string layer = name.substr(0, name.size() - suffix.size());
      layers.push_back(listed(checkpoint.label(), layer, CheckpointFormat::Bnb, std::string("bitsandbytes ") + quant_type,
                              0, 0, [&](ConvertedLayer& planned, const ConvertOptions& options) {
                                detail::plan_bnb(planned, checkpoint, options, false);
                              }));
      quantized.insert(layer);
    }
    if (ends_with(name, ".SCB")) {  // bitsandbytes LLM.int8: weight I8 [out, in], SCB f32 [out]
      const std::string layer = name.substr(0, name.size() - 4);
      const SafetensorsTensor* weight = checkpoint.find(layer + ".weight");
      std::uint64_t in = 0, out = 0;
      if (weight != nullptr && weight->shape.size() == 2) {
        out = weight->shape[0];
        in = weight->shape[1];
      }
      LayerInfo info = listed(checkpoint.label(), layer, CheckpointFormat::Bnb, "bitsandbytes int8 (LLM.int8)", in, out,
                              [&](ConvertedLayer& planned, const ConvertOptions& options) {
                                detail::plan_bnb(planned, checkpoint, options, false);
                              });
      layers.push_back(info);
      quantized.insert(layer);
    }
  }
  for (const std::string& name : checkpoint.names()) {
    if (!ends_with(name, ".weight")) continue;
    const std::string layer = name.substr(0, name.size() - 7);
    if (quantized.count(layer)) continue;
    const SafetensorsTensor& tensor = *checkpoint.find(name);
    const bool floating = tensor.dtype == SafetensorsDtype::F32 || tensor.dtype == SafetensorsDtype::F16 ||
                          tensor.dtype == SafetensorsDtype::BF16 || tensor.dtype == SafetensorsDtype::F64;
    if (tensor.shape.size() != 2 || !floating) continue;
    layers.push_back(LayerInfo{layer, std::nullopt, std::string(safetensors_dtype_name(tensor.dtype)), tensor.shape[1],
                               tensor.shape[0], "",
                               fmt::format("not quantized; `quantc pack {} --tensor {} --scheme ...` quantizes it",
                                           checkpoint.file_of(name).label(), name)});
  }
  std::sort(layers.begin(), layers.end(), [](const LayerInfo& a, const LayerInfo& b) { return a.layer < b.layer; });
  return layers;
}

}  // namespace quantc::runtime::convert
