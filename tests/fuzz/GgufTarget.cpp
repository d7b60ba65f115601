// gguf: GgufFile::parse on the raw bytes (open() maps a file and calls the same
// validation). Every malformed file must be a RuntimeError; AddressSanitizer turns any
// read outside the input into a crash. An accepted file must be consistent: every tensor's
// bytes are its byte_size(), lie at an aligned offset inside the input and dequantize
// (when its type can be) to element_count() values; every metadata value renders.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/Gguf.h"
#include "tests/fuzz/FuzzTargets.h"

namespace quantc::fuzz {

Outcome gguf_target(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  std::optional<runtime::GgufFile> parsed;
  try {
    parsed.emplace(runtime::GgufFile::parse(bytes, "fuzz.gguf"));
  } catch (const runtime::RuntimeError&) {
    return Outcome::Rejected;
  }
  // Outside the try: an accepted file must not make any of these throw.
  const runtime::GgufFile& file = *parsed;
  if (file.version() != 2 && file.version() != 3) throw InvariantViolation("accepted GGUF version other than 2 or 3");
  for (const runtime::GgufKeyValue& entry : file.metadata()) {
    if (file.find(entry.key) != &entry.value) throw InvariantViolation("find() misses metadata key " + entry.key);
    (void)entry.value.to_string(4);
  }
  for (const runtime::GgufTensor& tensor : file.tensors()) {
    if (tensor.bytes.size() != tensor.byte_size() || tensor.offset % file.alignment() != 0 ||
        tensor.file_offset != file.data_offset() + tensor.offset ||
        tensor.file_offset + tensor.bytes.size() > size ||
        (!tensor.bytes.empty() && std::memcmp(tensor.bytes.data(), data + tensor.file_offset, tensor.bytes.size()) != 0)) {
      throw InvariantViolation("tensor " + tensor.name + " has bytes inconsistent with its offset, type and ne");
    }
    if (runtime::ggml_type_dequantizable(tensor.type) && file.to_f32(tensor.name).size() != tensor.element_count()) {
      throw InvariantViolation("to_f32 returned the wrong element count for " + tensor.name);
    }
  }
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
