// A kernel: its buffers (the kernel parameters, in binding order), its launch shape and
// its entry statement.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace quantc::ir {

enum class BufferAccess : std::uint8_t { ReadOnly, ReadWrite, WriteOnly };
std::string_view to_string(BufferAccess access);  // "read_only", "read_write", "write_only"

/// Half-open byte range [begin, end) of an output buffer that holds the logical
/// result; the rest is launch padding that callers should not read.
struct ByteRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool operator==(const ByteRange&) const = default;
};

/// One kernel parameter: a typed device buffer of `count` elements of `element`.
/// `count` is in elements, never bytes; byte size = count * byte_size(element).
struct BufferDecl {
  std::string name;
  std::uint32_t binding = 0;  // parameter position; bindings are 0, 1, 2, ... in order
  BufferAccess access = BufferAccess::ReadOnly;
  ScalarType element = ScalarType::F32;
  std::uint32_t count = 0;
  std::optional<ByteRange> output_byte_range;  // only meaningful for written buffers

  std::uint64_t byte_size() const;
  bool is_output() const { return access != BufferAccess::ReadOnly; }
  /// The bytes a caller should read back: output_byte_range, else the whole buffer.
  ByteRange readable_range() const;
  bool operator==(const BufferDecl&) const = default;
};

struct Program {
  std::string name;
  std::vector<BufferDecl> buffers;
  std::array<std::uint32_t, 3> workgroup_size{1, 1, 1};   // invocations per workgroup (CTA)
  std::array<std::uint32_t, 3> workgroup_count{1, 1, 1};  // workgroups in the grid
  Node entry;                                             // a Block

  /// The buffer named `name`, or nullptr.
  const BufferDecl* find_buffer(std::string_view name) const;
  std::uint32_t invocations_per_workgroup() const {
    return workgroup_size[0] * workgroup_size[1] * workgroup_size[2];
  }
};

}  // namespace quantc::ir
