// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the lingua franca for kernel
// inputs and outputs: `quantc run --input x=x.npy --output out=out.npy`.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//
// The header is a Python dict literal, read by a small parser (no regular expressions,
// no recursion, linear time, any header size the format allows: 64 KiB in version 1,
// 4 GiB in versions 2 and 3). It accepts what numpy.save writes and what NumPy reads
// back with ast.literal_eval, and rejects what NumPy rejects, and more:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// exactly the three keys, each once (a repeated key is an error, where Python would
// keep the last one), in any order, single- or double-quoted, an optional trailing
// comma, whitespace anywhere between tokens; 'descr' a string, 'fortran_order' True or
// False, 'shape' a tuple of non-negative decimal integers ((), (5,), (2, 3), (2, 3,);
// not (5) or (64,,)); nothing but whitespace after the closing brace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Buffers.h"

namespace quantc::runtime {

struct NpyArray {
  HostBuffer buffer;                 // little-endian elements, C (row-major) order
  std::vector<std::uint64_t> shape;  // () for a scalar
};

/// The header dict of a .npy file.
struct NpyHeader {
  std::string descr;                 // e.g. "<f4"
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;  // () for a scalar
};

/// Parses the header text (the bytes after the header-length field, padding and the
/// final newline included). Throws RuntimeError "malformed .npy header: ..." naming the
/// problem and its byte offset. The entry point of the .npy header fuzz target.
NpyHeader parse_npy_header(std::string_view header);

/// Parses a whole .npy file held in memory; `label` names it in messages. Supports
/// little-endian (or byte-order-free) bool, u8, i8, u16, u32, i32, u64, i64, f16 ('<f2'),
/// bf16, f32 and f64 arrays in C order (or any order when at most 1-D). bf16: NumPy has
/// no bfloat16 of its own; numpy.save of an ml_dtypes.bfloat16 array writes the
/// descriptor '<V2' (a 2-byte void type), which is read as bf16 (load such a file in
/// NumPy with `numpy.load(f).view(ml_dtypes.bfloat16)`). Raw bf16 bit patterns saved as
/// uint16 ('<u2') parse as u16; `quantc run --input` accepts them for a bf16 buffer of
/// the same byte size. Throws RuntimeError
/// naming the file and the problem: bad magic, unsupported version, truncated or
/// malformed header, unsupported dtype (e.g. big-endian or object arrays), Fortran
/// order, data shorter or longer than the shape needs (with both byte counts).
NpyArray parse_npy(std::string_view file, const std::string& label);

/// Reads `path` (parse_npy; also a missing file, a folder, an unreadable file).
NpyArray read_npy(const std::string& path);

/// Serialises `array` as .npy bytes: version 1.0, or 2.0 when the header needs more
/// than 64 KiB. An empty shape means 1-D (count,). bf16 arrays are written with
/// ml_dtypes' descriptor '<V2', so numpy + ml_dtypes users read them with
/// `numpy.load(f).view(ml_dtypes.bfloat16)`. Throws RuntimeError when the shape's
/// element count is not the buffer's.
std::string to_npy_bytes(const NpyArray& array);

/// The NumPy dtype string for `element` ("<f4", "|u1", "<f2", bf16 "<V2", ...); throws
/// RuntimeError for sub-byte types.
std::string npy_dtype(ir::ScalarType element);

}  // namespace quantc::runtime
