#include "runtime/io/Bundle.h"

#include <fmt/format.h>

#include <set>

namespace quantc::runtime {

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
