// .npy: parse_npy on the input bytes (read_npy's parser, without the file I/O). Every
// malformed file must be a RuntimeError. An accepted array must be
// consistent (data bytes = elements of the shape × element size) and survive a round
// trip through to_npy_bytes.
#include <algorithm>
#include <string>
#include <string_view>

#include "runtime/io/Npy.h"
#include "tests/fuzz/FuzzTargets.h"

namespace quantc::fuzz {

Outcome npy_target(const std::uint8_t* data, std::size_t size) {
  runtime::NpyArray array;
  try {
    array = runtime::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "input.npy");
  } catch (const runtime::RuntimeError&) {
    return Outcome::Rejected;
  }
  std::uint64_t count = 1;
  for (std::uint64_t dim : array.shape) count *= dim;  // the reader rejects overflowing shapes
  if (array.buffer.bytes.size() != count * ir::byte_size(array.buffer.element)) {
    throw InvariantViolation("parse_npy returned a data size that does not match its shape");
  }
  const std::string bytes = runtime::to_npy_bytes(array);
  const runtime::NpyArray again = runtime::parse_npy(bytes, "rewritten.npy");
  // A 0-d array is written back as 1-D (to_npy_bytes' documented default).
  if (again.buffer.element != array.buffer.element || again.buffer.bytes != array.buffer.bytes ||
      (!array.shape.empty() && again.shape != array.shape)) {
    throw InvariantViolation("a .npy round trip through to_npy_bytes changed the array");
  }
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
