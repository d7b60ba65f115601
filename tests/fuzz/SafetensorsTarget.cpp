// safetensors: SafetensorsFile::parse on the raw bytes (open() maps a file and calls the
// same validation). Every malformed file must be a RuntimeError; AddressSanitizer turns
// any read outside the input into a crash. An accepted file must survive a round trip
// through the writer: same tensors, dtypes, shapes, bytes and metadata.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/io/Safetensors.h"
#include "tests/fuzz/FuzzTargets.h"

namespace quantc::fuzz {

Outcome safetensors_target(const std::uint8_t* data, std::size_t size) {
  using runtime::SafetensorsDtype;
  std::vector<runtime::SafetensorsTensorData> tensors;
  std::map<std::string, std::string> metadata;
  try {
    auto file = runtime::SafetensorsFile::parse(std::vector<std::uint8_t>(data, data + size), "fuzz.safetensors");
    for (const auto& tensor : file.tensors()) {
      const auto dtype = tensor.dtype;
      if (dtype == SafetensorsDtype::F32 || dtype == SafetensorsDtype::F16 || dtype == SafetensorsDtype::BF16 ||
          dtype == SafetensorsDtype::F64) {
        if (file.to_f32(tensor.name).size() != tensor.element_count()) {
          throw InvariantViolation("to_f32 returned the wrong element count for " + tensor.name);
        }
      }
      tensors.push_back({tensor.name, tensor.dtype, tensor.shape, {tensor.bytes.begin(), tensor.bytes.end()}});
    }
    metadata = file.metadata();
  } catch (const runtime::RuntimeError&) {
    return Outcome::Rejected;
  }
  // The writer refuses empty names, which the format (and so the reader) allows.
  for (const auto& tensor : tensors) {
    if (tensor.name.empty()) return Outcome::Accepted;
  }
  const auto again = runtime::SafetensorsFile::parse(runtime::to_safetensors_bytes(tensors, metadata), "rewritten");
  if (again.tensors().size() != tensors.size() || again.metadata() != metadata) {
    throw InvariantViolation("safetensors round trip changed the tensor list or the metadata");
  }
  for (const auto& tensor : tensors) {
    const auto& copy = again.tensor(tensor.name);
    if (copy.dtype != tensor.dtype || copy.shape != tensor.shape ||
        !std::equal(copy.bytes.begin(), copy.bytes.end(), tensor.bytes.begin(), tensor.bytes.end())) {
      throw InvariantViolation("safetensors round trip changed tensor " + tensor.name);
    }
  }
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
