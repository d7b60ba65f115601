// safetensors files (https://github.com/huggingface/safetensors, format section of its
// README): an 8-byte little-endian u64 header length N, N bytes of UTF-8 JSON, then the
// data section. The JSON is an object mapping tensor names to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// (offsets in bytes relative to the start of the data section, end exclusive) plus an
// optional "__metadata__" object of string -> string. Tensor data is little-endian and
// row-major (last index fastest).
//
// The reader is strict, because the file comes from the internet: every malformed or
// truncated file is a RuntimeError naming the file, the tensor (when there is one) and
// the problem, never an out-of-bounds read. It checks
//   - the file holds at least 8 bytes and N <= file size - 8 (and N <= 100,000,000, the
//     reference implementation's limit); the header is a JSON object without duplicate
//     keys;
//   - every entry has exactly dtype, shape and data_offsets; dtype is one of the names
//     below; shape and offsets are non-negative integers;
//   - the element count (product of the shape) times the dtype size does not overflow
//     u64 and equals end - begin; begin <= end <= data section size;
//   - sorted by offset, the tensors are non-overlapping and contiguous: they tile the
//     data section [0, data size) exactly, as the reference implementation requires.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Buffers.h"

namespace quantc::runtime {

/// The element types of the safetensors format (its `Dtype` enum).
enum class SafetensorsDtype { Bool, U8, I8, F8E5M2, F8E4M3, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64 };

/// Bytes per element of `dtype` (1, 2, 4 or 8).
std::uint64_t safetensors_dtype_size(SafetensorsDtype dtype);
/// The dtype's name in the header ("F32", "BF16", "F8_E4M3", ...).
std::string_view safetensors_dtype_name(SafetensorsDtype dtype);
/// The dtype named `name`; throws RuntimeError listing the known names otherwise.
SafetensorsDtype safetensors_dtype_from_name(std::string_view name);

/// One tensor of an opened file. `bytes` points into the file's mapping and stays valid
/// while the SafetensorsFile that returned it is alive.
struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<std::uint64_t> shape;  // () for a scalar
  std::uint64_t begin = 0, end = 0;  // byte offsets in the data section, end exclusive
  std::span<const std::uint8_t> bytes;

  std::uint64_t element_count() const;
};

/// A parsed, validated safetensors file. Cheap to move; the data is memory-mapped (open)
/// or owned (parse), never copied on access.
class SafetensorsFile {
 public:
  /// Maps `path` read-only and validates it (rules in the file comment). Throws
  /// RuntimeError naming the path for a missing/unreadable file and every format error.
  static SafetensorsFile open(const std::string& path);
  /// Validates an in-memory file; `label` names it in error messages. Used by the fuzz
  /// target and by tests.
  static SafetensorsFile parse(std::vector<std::uint8_t> bytes, const std::string& label);

  /// Tensors in data-offset order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  /// The "__metadata__" entries (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The tensor called `name`; throws RuntimeError naming the file and the tensor, with a
  /// hint listing a few present names, when it is absent.
  const SafetensorsTensor& tensor(const std::string& name) const;
  bool contains(const std::string& name) const;
  const std::string& label() const { return label_; }

  /// The tensor's values converted to f32 (F32 copied, F16/BF16 widened exactly, F64
  /// rounded to nearest). Throws RuntimeError for any other dtype.
  std::vector<float> to_f32(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  void validate(std::span<const std::uint8_t> file);

  std::string label_;
  std::shared_ptr<const void> storage_;  // the mapping or the owned bytes
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, std::size_t> index_;
};

/// A tensor to write: `bytes` must hold exactly element_count(shape) * dtype size bytes,
/// little-endian, row-major.
struct SafetensorsTensorData {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint8_t> bytes;
};

/// The file bytes for `tensors` (stored in the given order, contiguously) and
/// `metadata`; the header is padded with spaces to a multiple of 8 bytes so the data
/// section is 8-byte aligned. Throws RuntimeError for an empty or duplicate name, the
/// name "__metadata__", or a byte size that does not match the shape and dtype.
std::vector<std::uint8_t> to_safetensors_bytes(const std::vector<SafetensorsTensorData>& tensors,
                                               const std::map<std::string, std::string>& metadata = {});

/// Writes to_safetensors_bytes(...) to `path`; throws RuntimeError when the file cannot
/// be written.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensorData>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace quantc::runtime
