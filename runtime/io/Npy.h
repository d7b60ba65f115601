// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the lingua franca for kernel
// inputs and outputs: `quantc run --input x=x.npy --output out=out.npy`.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Buffers.h"

namespace quantc::runtime {

struct NpyArray {
  HostBuffer buffer;                 // little-endian elements, C (row-major) order
  std::vector<std::uint64_t> shape;  // () for a scalar
};

/// Reads `path`. Supports little-endian (or byte-order-free) bool, u8, i8, u16, u32,
/// i32, u64, i64, f16, f32 and f64 arrays in C order (or any order when 1-D).
/// Throws RuntimeError naming the file and the problem: missing file, bad magic,
/// truncated data, unsupported dtype (e.g. big-endian or object arrays), Fortran order.
NpyArray read_npy(const std::string& path);

/// Serialises `array` as .npy v1.0 bytes (shape defaults to 1-D when empty and the
/// buffer is not a scalar).
std::string to_npy_bytes(const NpyArray& array);

/// The NumPy dtype string for `element` ("<f4", "|u1", ...); throws RuntimeError for
/// sub-byte types.
std::string npy_dtype(ir::ScalarType element);

}  // namespace quantc::runtime
