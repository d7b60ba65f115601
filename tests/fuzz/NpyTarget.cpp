// .npy: read_npy on a file holding the input bytes (the reader's only entry point takes a
// path). Every malformed file must be a RuntimeError. An accepted array must be
// consistent (data bytes = elements of the shape × element size) and survive a round
// trip through to_npy_bytes.
#include <algorithm>
#include <string>

#include "runtime/io/Npy.h"
#include "tests/fuzz/FuzzTargets.h"

namespace quantc::fuzz {

Outcome npy_target(const std::uint8_t* data, std::size_t size) {
  static const std::string path = scratch_directory() + "/input.npy";
  static const std::string rewritten = scratch_directory() + "/rewritten.npy";
  write_bytes(path, data, size);
  runtime::NpyArray array;
  try {
    array = runtime::read_npy(path);
  } catch (const runtime::RuntimeError&) {
    return Outcome::Rejected;
  }
  std::uint64_t count = 1;
  for (std::uint64_t dim : array.shape) count *= dim;  // the reader rejects overflowing shapes
  if (array.buffer.bytes.size() != count * ir::byte_size(array.buffer.element)) {
    throw InvariantViolation("read_npy returned a data size that does not match its shape");
  }
  const std::string bytes = runtime::to_npy_bytes(array);
  write_bytes(rewritten, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  const runtime::NpyArray again = runtime::read_npy(rewritten);
  // A 0-d array is written back as 1-D (to_npy_bytes' documented default).
  if (again.buffer.element != array.buffer.element || again.buffer.bytes != array.buffer.bytes ||
      (!array.shape.empty() && again.shape != array.shape)) {
    throw InvariantViolation("a .npy round trip through to_npy_bytes changed the array");
  }
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
