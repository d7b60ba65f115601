#include "runtime/io/Bundle.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ir/Arithmetic.h"
#include "ir/ops/Registry.h"

namespace quantc::runtime {

HostBuffer rounded_to_activation(ir::ScalarType activation, const std::vector<float>& values) {
  if (activation == ir::ScalarType::F32) return HostBuffer::from(activation, values);
  if (activation != ir::ScalarType::F16 && activation != ir::ScalarType::BF16) {
    throw RuntimeError(fmt::format("rounded_to_activation: {} is not an activation type (f32, f16, bf16)",
                                   ir::to_string(activation)));
  }
  const ir::arith::FloatFormat format = ir::arith::format_of(activation);
  std::vector<std::uint16_t> bits;
  bits.reserve(values.size());
  for (float value : values) bits.push_back(static_cast<std::uint16_t>(ir::arith::round_to_format(value, format)));
  return HostBuffer::from(activation, bits);
}

void set_activation(Bundle& bundle, ir::ScalarType activation) {
  if (activation == ir::ScalarType::F32) return;
  const std::string op_name = bundle.spec.value("op", "");
  const ir::ops::OpInfo* op = ir::ops::OpRegistry::builtin().find(op_name);
  if (op == nullptr) throw RuntimeError(fmt::format("bundle: spec op '{}' is not a registered op", op_name));
  const bool takes_activation = std::any_of(op->params.begin(), op->params.end(),
                                            [](const ir::ops::ParamSpec& param) { return param.name == "activation"; });
  if (!takes_activation) {
    throw RuntimeError(fmt::format("bundle: {} has no \"activation\" parameter (its activations are not floats)",
                                   op_name));
  }
  bundle.spec["activation"] = ir::to_string(activation);
  for (NamedArray& buffer : bundle.buffers) {
    const auto spec = std::find_if(op->buffers.begin(), op->buffers.end(),
                                   [&](const ir::ops::BufferSpec& candidate) { return candidate.name == buffer.name; });
    if (spec == op->buffers.end() || !spec->activation_typed) continue;
    if (buffer.array.buffer.element != ir::ScalarType::F32) {
      throw RuntimeError(fmt::format("bundle: buffer '{}' holds {}, not the f32 values of a bundle for f32 activations",
                                     buffer.name, ir::to_string(buffer.array.buffer.element)));
    }
    buffer.array.buffer = rounded_to_activation(activation, buffer.array.buffer.as<float>());
  }
}

BundleWriter::BundleWriter(std::string folder, std::string option) : folder_(std::move(folder), std::move(option)) {}

std::vector<std::string> BundleWriter::write(const Bundle& bundle) {
  std::set<std::string> names;
  for (const NamedArray& buffer : bundle.buffers) {
    if (buffer.name == "bias" || buffer.name == "spec" || buffer.name.empty() ||
        buffer.name.find('/') != std::string::npos) {
      throw RuntimeError(fmt::format("bundle: a buffer cannot be named '{}'", buffer.name));
    }
    if (!names.insert(buffer.name).second) {
      throw RuntimeError(fmt::format("bundle: two buffers are named '{}'", buffer.name));
    }
  }
  folder_.create();
  OutputFiles outputs;
  std::vector<std::string> paths;
  std::vector<std::string> contents;
  auto add = [&](const std::string& name, std::string bytes) {
    paths.push_back(folder_.file(name));
    outputs.add(paths.back());
    contents.push_back(std::move(bytes));
  };
  // "op" first, then the parameters in name order: what a reader looks for first.
  nlohmann::ordered_json spec;
  if (bundle.spec.contains("op")) spec["op"] = bundle.spec["op"];
  for (const auto& [key, value] : bundle.spec.items()) {
    if (key != "op") spec[key] = value;
  }
  add(kBundleSpecFile, spec.dump(2) + "\n");
  for (const NamedArray& buffer : bundle.buffers) add(buffer.name + ".npy", to_npy_bytes(buffer.array));
  if (bundle.bias) add("bias.npy", to_npy_bytes(*bundle.bias));
  for (std::size_t i = 0; i < contents.size(); ++i) outputs.stage(i, contents[i]);
  outputs.commit();
  folder_.keep();
  return paths;
}

}  // namespace quantc::runtime
