// Host-side buffers that every backend (reference interpreter, PTX emulator, CUDA)
// reads inputs from and writes outputs to, keyed by the program's buffer names.
// Bytes are little-endian element encodings, exactly what the device would hold.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/Program.h"

namespace quantc::runtime {

/// Raised for a buffer that does not match the program's declaration, or for a
/// failure while executing a kernel (out-of-bounds access, divergent subgroup op...).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A backend that cannot run on this machine (no CUDA driver, no device): the message
/// says why and what to use instead. Code that tries every backend of the registry
/// (runtime/backends/Registry.h) catches this one to skip a backend.
class BackendUnavailable : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

struct HostBuffer {
  ir::ScalarType element = ir::ScalarType::F32;
  std::vector<std::uint8_t> bytes;

  std::size_t count() const { return bytes.size() / ir::byte_size(element); }
  template <class T>
  static HostBuffer from(ir::ScalarType element, const std::vector<T>& values) {
    HostBuffer buffer{element, std::vector<std::uint8_t>(values.size() * sizeof(T))};
    if (!values.empty()) std::memcpy(buffer.bytes.data(), values.data(), buffer.bytes.size());
    return buffer;
  }
  /// The contents reinterpreted as T (sizeof(T) must divide the byte size).
  template <class T>
  std::vector<T> as() const {
    std::vector<T> values(bytes.size() / sizeof(T));
    if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
  }
};

using BufferSet = std::map<std::string, HostBuffer>;

/// One zero-filled buffer per declaration, sized count * byte_size(element).
BufferSet allocate_buffers(const ir::Program& program);

/// Deterministic pseudo-random contents for every read-only buffer (outputs are
/// zeroed): floats uniform in [-1, 1), u32/i32 words uniform over all bits except
/// buffers named like zero points ("zero_point*", "zp*"), which get 0..15, and u32
/// buffers named "perm" (an index permutation, linear_4bit_affine_grouped's act_order),
/// which get a random permutation of 0 .. count-1 so that every gather stays in bounds.
BufferSet random_buffers(const ir::Program& program, std::uint64_t seed);

/// Elements a caller reads back: the readable range (output byte range, else the whole
/// buffer) of every written buffer, in elements. The per-output denominator of counters.
std::uint64_t output_element_count(const ir::Program& program);

/// Element `index` of `buffer` converted to double (exact for all types but 64-bit
/// integers above 2^53). Throws RuntimeError when `index` is out of range.
double element_as_double(const HostBuffer& buffer, std::size_t index);

/// Checks that `buffers` holds every declared buffer with the declared element type
/// and exactly the declared byte size; throws RuntimeError naming the first mismatch
/// (buffer, expected and given) otherwise.
void check_buffers(const ir::Program& program, const BufferSet& buffers);

}  // namespace quantc::runtime
