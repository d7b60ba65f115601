// Accepting a caller's array for an input buffer of an op's program: the one check that
// `quantc run --input/--inputs` (a .npy file, a safetensors tensor) and the Python
// package's Kernel.run (a NumPy array) make, so both accept the same arrays and refuse
// the others with the same messages.
#pragma once

#include <string>

#include "ir/Program.h"
#include "ir/ops/Spec.h"
#include "runtime/io/Npy.h"

namespace quantc::runtime {

/// The names of `program`'s buffers in binding order, ", "-separated (for messages).
std::string buffer_names(const ir::Program& program);

/// The buffer of `program` an input argument labelled `label` ("--input x=x.npy",
/// "argument 'x'") names. Throws RuntimeError prefixed by `label` for a name no buffer
/// has (listing the buffers) and for a scratch buffer (zero-filled by quantc, never an
/// input).
const ir::BufferDecl& input_buffer(const ir::Program& program, const std::string& name, const std::string& label);

/// Returns `array.buffer` ready to bind to `decl`, a buffer of `spec`'s program.
/// Accepted, besides the declared element type and count:
/// - unsigned integer words of another width with the same byte size (packed codes are
///   raw bytes: quantize_nf4's u8 `packed` feeds nf4_gemm's u32 `b_nf4`);
/// - u16 bit patterns for a bf16 buffer (NumPy has no bfloat16).
/// A multi-dimensional array must have the buffer's logical shape (ir/ops/BufferShape.h)
/// up to dimensions of size 1, after converting the last dimension by the byte ratio for
/// raw words; a 1-D array or a scalar of the right count is accepted as it is.
/// Throws RuntimeError, prefixed by `label` ("--input x=x.npy", "argument 'x'") and
/// calling the data `noun` ("file", "array"), for: another element type or count (with
/// the conversion that fixes a float of the wrong width, and the spec's "activation" for
/// activation buffers), and another shape (naming the buffer's shape formula, and
/// whether the array looks transposed or should be flattened).
HostBuffer accept_input_array(const ir::ops::OpSpec& spec, const ir::BufferDecl& decl, NpyArray array,
                              const std::string& label, const std::string& noun = "file");

}  // namespace quantc::runtime
