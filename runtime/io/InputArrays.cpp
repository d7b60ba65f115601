#include "runtime/io/InputArrays.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "ir/ops/BufferShape.h"

namespace quantc::runtime {
namespace {

bool is_unsigned_integer(ir::ScalarType type) { return ir::is_integer(type) && !ir::is_signed(type); }

/// The fix for a float array of the wrong width: convert it, or (for the activations of a
/// linear/matmul op) build the kernel for the file's type with the spec's "activation".
std::string float_type_fix(ir::ScalarType expected, ir::ScalarType given, const std::string& noun) {
  if (!ir::is_float(expected) || !ir::is_float(given) || expected == given) return "";
  const char* conversion = expected == ir::ScalarType::F16    ? "numpy: a.astype(numpy.float16)"
                           : expected == ir::ScalarType::BF16 ? "numpy + ml_dtypes: a.astype(ml_dtypes.bfloat16), or "
                                                                "the bf16 bit patterns as uint16"
                           : expected == ir::ScalarType::F32  ? "numpy: a.astype(numpy.float32)"
                                                              : "numpy: a.astype(numpy.float64)";
  std::string fix = fmt::format("; convert the {} to {} ({})", noun, ir::to_string(expected), conversion);
  if (given == ir::ScalarType::F32 || given == ir::ScalarType::F16 || given == ir::ScalarType::BF16) {
    fix += fmt::format(", or, if this is an op's activation buffer, set \"activation\": \"{}\" in the spec",
                       ir::to_string(given));
  }
  return fix;
}

/// Checks a multi-dimensional input array against the buffer's logical shape: equal up to
/// dimensions of size 1 (a 1-D file or a scalar of the right count is accepted as it is).
/// `element` is the array's element type: when it differs from the buffer's (raw unsigned
/// words), the array's last dimension is converted by the byte ratio first.
void check_input_shape(const ir::ops::OpSpec& spec, const ir::BufferDecl& decl, std::vector<std::uint64_t> shape,
                       ir::ScalarType element, const std::string& label, const std::string& noun) {
  if (shape.size() <= 1) return;
  const ir::ops::BufferSpec* buffer = nullptr;
  for (const ir::ops::BufferSpec& candidate : spec.op->buffers) {
    if (candidate.name == decl.name) buffer = &candidate;
  }
  if (buffer == nullptr) return;  // a buffer the registry does not describe: counts were checked
  const std::optional<std::vector<std::uint64_t>> logical = ir::ops::logical_shape(*buffer, spec.args);
  const std::vector<std::uint64_t> expected = logical ? *logical : std::vector<std::uint64_t>{decl.count};
  const std::vector<std::uint64_t> given = shape;
  const std::uint64_t file_bytes = ir::byte_size(element), buffer_bytes = ir::byte_size(decl.element);
  if (file_bytes != buffer_bytes) {
    const std::uint64_t last_bytes = shape.back() * file_bytes;
    shape.back() = last_bytes % buffer_bytes == 0 ? last_bytes / buffer_bytes : 0;
  }
  // Dimensions of size 1 do not change the element order: [1, in_dim] is [in_dim].
  auto squeezed = [](std::vector<std::uint64_t> dims) {
    std::erase(dims, std::uint64_t{1});
    return dims;
  };
  if (squeezed(shape) == squeezed(expected)) return;
  const std::string formula = ir::ops::shape_formula_text(*buffer);
  std::string expectation =
      fmt::format("buffer '{}' of {} has the logical shape {} = {} (row-major, last index fastest{})", decl.name,
                  spec.op->name, formula, ir::ops::shape_text(expected),
                  file_bytes != buffer_bytes ? fmt::format(", in {} elements", ir::to_string(decl.element)) : "");
  std::string cause;
  std::vector<std::uint64_t> reversed(expected.rbegin(), expected.rend());
  if (shape.size() == 2 && expected.size() == 2 && shape == reversed && shape != expected) {
    std::vector<std::string> formulas(buffer->shape.rbegin(), buffer->shape.rend());
    cause = fmt::format("looks transposed: [{}] given, {} expected; transpose the array (numpy: a.T.copy()), or save "
                        "it flattened to 1-D if its element order already is the op's",
                        fmt::join(formulas, ", "), formula);
  } else if (expected.size() == 1) {
    cause = "the buffer is 1-D: save the array flattened (numpy: a.ravel())";
  } else {
    cause = fmt::format("same element count, other dimensions: the {} holds another layout (`quantc ops` lists every "
            "buffer's shape)",
                        noun);
  }
  throw RuntimeError(fmt::format("{}: {}; the {}'s shape is {}: {}", label, expectation, noun, ir::ops::shape_text(given),
                                 cause));
}

}  // namespace

std::string buffer_names(const ir::Program& program) {
  std::string names;
  for (const ir::BufferDecl& decl : program.buffers) names += (names.empty() ? "" : ", ") + decl.name;
  return names;
}

const ir::BufferDecl& input_buffer(const ir::Program& program, const std::string& name, const std::string& label) {
  const ir::BufferDecl* decl = program.find_buffer(name);
  if (decl == nullptr) {
    throw RuntimeError(fmt::format("{}: the program has no buffer named '{}'; its buffers are: {}", label, name,
                                   buffer_names(program)));
  }
  if (decl->is_scratch()) {
    throw RuntimeError(fmt::format("{}: buffer '{}' is the kernel's scratch memory (zero-filled by quantc, cleared "
                                   "again by every launch), not an input; drop {}",
                                   label, name, label));
  }
  return *decl;
}

HostBuffer accept_input_array(const ir::ops::OpSpec& spec, const ir::BufferDecl& decl, NpyArray array,
                              const std::string& label, const std::string& noun) {
  const ir::ScalarType given_element = array.buffer.element;
  if (is_unsigned_integer(array.buffer.element) && is_unsigned_integer(decl.element) &&
      array.buffer.bytes.size() == decl.byte_size()) {
    array.buffer.element = decl.element;
  }
  if (array.buffer.element == ir::ScalarType::U16 && decl.element == ir::ScalarType::BF16 &&
      array.buffer.bytes.size() == decl.byte_size()) {
    array.buffer.element = decl.element;
  }
  if (array.buffer.element != decl.element || array.buffer.count() != decl.count) {
    throw RuntimeError(fmt::format("{}: buffer '{}' expects {} x {}, the {} holds {} x {}{}", label, decl.name, decl.count,
                                   ir::to_string(decl.element), noun, array.buffer.count(),
                                   ir::to_string(array.buffer.element),
                                   float_type_fix(decl.element, array.buffer.element, noun)));
  }
  check_input_shape(spec, decl, array.shape, given_element, label, noun);
  return std::move(array.buffer);
}

}  // namespace quantc::runtime
