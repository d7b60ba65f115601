#include "runtime/io/ConvertSupport.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "ir/ops/BufferShape.h"
#include "ir/ops/Spec.h"

namespace quantc::runtime::convert::detail {

std::string dtype_list(std::initializer_list<SafetensorsDtype> dtypes) {
  std::string text;
  std::size_t i = 0;
  for (SafetensorsDtype dtype : dtypes) {
    if (i > 0) text += i + 1 == dtypes.size() ? " or " : ", ";
    text += safetensors_dtype_name(dtype);
    ++i;
  }
  return text;
}

void expect_dtype(const SafetensorsCheckpoint& checkpoint, const SafetensorsTensor& tensor, const std::string& role,
                  std::initializer_list<SafetensorsDtype> dtypes, const std::string& fix) {
  for (SafetensorsDtype dtype : dtypes) {
    if (tensor.dtype == dtype) return;
  }
  throw ConvertError(fmt::format("{}: tensor '{}' ({}) has dtype {}; expected {}{}", checkpoint.label(), tensor.name,
                                 role, safetensors_dtype_name(tensor.dtype), dtype_list(dtypes),
                                 fix.empty() ? "" : ". Fix: " + fix));
}

void expect_shape(const SafetensorsCheckpoint& checkpoint, const SafetensorsTensor& tensor, const std::string& role,
                  const std::vector<std::uint64_t>& expected, const std::string& layout, const std::string& hint) {
  if (tensor.shape == expected) return;
  throw ConvertError(fmt::format("{}: tensor '{}' ({}) has shape {}; expected {} = {}{}", checkpoint.label(),
                                 tensor.name, role, ir::ops::shape_text(tensor.shape), layout,
                                 ir::ops::shape_text(expected), hint.empty() ? "" : " (" + hint + ")"));
}

std::vector<std::uint64_t> expect_rank2(const SafetensorsCheckpoint& checkpoint, const SafetensorsTensor& tensor,
                                        const std::string& role, const std::string& layout) {
  if (tensor.shape.size() != 2) {
    throw ConvertError(fmt::format("{}: tensor '{}' ({}) has shape {}; expected a 2-D {}", checkpoint.label(),
                                   tensor.name, role, ir::ops::shape_text(tensor.shape), layout));
  }
  return tensor.shape;
}

std::uint32_t to_u32(const std::string& what, std::uint64_t value) {
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    throw ConvertError(fmt::format("{} = {} exceeds 2^32-1, the largest dimension quantc's ops take", what, value));
  }
  return static_cast<std::uint32_t>(value);
}

std::vector<float> exact_f32(const SafetensorsCheckpoint& checkpoint, const std::string& name) {
  const SafetensorsTensor& tensor = checkpoint.tensor(name, "scales");
  if (tensor.dtype != SafetensorsDtype::F32 && tensor.dtype != SafetensorsDtype::F16 &&
      tensor.dtype != SafetensorsDtype::BF16) {
    throw RuntimeError(fmt::format("exact_f32: tensor '{}' is not F32/F16/BF16", name));
  }
  return checkpoint.file_of(name).to_f32(name);
}

std::vector<std::uint32_t> words(const SafetensorsTensor& tensor) {
  std::vector<std::uint32_t> values(tensor.bytes.size() / 4);
  if (!values.empty()) std::memcpy(values.data(), tensor.bytes.data(), values.size() * 4);
  return values;
}

std::optional<std::vector<float>> read_bias(const SafetensorsCheckpoint& checkpoint, const std::string& layer,
                                            std::uint32_t out_features, std::vector<std::string>& tensors) {
  const std::string name = layer + ".bias";
  const SafetensorsTensor* bias = checkpoint.find(name);
  if (bias == nullptr) return std::nullopt;
  expect_dtype(checkpoint, *bias, "the layer's bias",
               {SafetensorsDtype::F16, SafetensorsDtype::BF16, SafetensorsDtype::F32});
  if (bias->element_count() != out_features || bias->shape.size() > 1) {
    expect_shape(checkpoint, *bias, "the layer's bias", {out_features}, "[out_features]");
  }
  tensors.push_back(name);
  return exact_f32(checkpoint, name);
}

NamedArray make_array(const std::string& name, ir::ScalarType element, std::vector<std::uint64_t> shape,
                      std::vector<std::uint8_t> bytes) {
  NamedArray array;
  array.name = name;
  array.array.buffer.element = element;
  array.array.buffer.bytes = std::move(bytes);
  array.array.shape = std::move(shape);
  return array;
}

void check_against_op(const ConvertedLayer& layer) {
  const std::string text = layer.spec.dump();
  ir::ops::OpSpec spec;
  ir::Program program;
  try {
    spec = ir::ops::parse_spec(text, "converted spec");
    program = ir::ops::build_program(spec);
  } catch (const ir::ops::OpError& error) {
    throw UnsupportedFormatError(fmt::format("layer '{}' ({}, {} x {}) does not fit {}: {}", layer.layer,
                                             layer.source_type, layer.in_features, layer.out_features,
                                             layer.spec.value("op", "?"), error.what()));
  }
  for (const NamedArray& buffer : layer.buffers) {
    const ir::BufferDecl* decl = program.find_buffer(buffer.name);
    const ir::ops::BufferSpec* buffer_spec = nullptr;
    for (const ir::ops::BufferSpec& candidate : spec.op->buffers) {
      if (candidate.name == buffer.name) buffer_spec = &candidate;
    }
    if (decl == nullptr || buffer_spec == nullptr) {
      throw RuntimeError(fmt::format("converter bug: {} has no buffer '{}'", spec.op->name, buffer.name));
    }
    if (decl->element != buffer.array.buffer.element || decl->count != buffer.array.buffer.count()) {
      throw RuntimeError(fmt::format("converter bug: buffer '{}' is {} x {}, {} declares {} x {}", buffer.name,
                                     buffer.array.buffer.count(), ir::to_string(buffer.array.buffer.element),
                                     spec.op->name, decl->count, ir::to_string(decl->element)));
    }
    const auto shape = ir::ops::logical_shape(*buffer_spec, spec.args);
    const std::vector<std::uint64_t> expected = shape ? *shape : std::vector<std::uint64_t>{decl->count};
    if (buffer.array.shape != expected) {
      throw RuntimeError(fmt::format("converter bug: buffer '{}' has shape {}, {} expects {}", buffer.name,
                                     ir::ops::shape_text(buffer.array.shape), spec.op->name,
                                     ir::ops::shape_text(expected)));
    }
  }
}

}  // namespace quantc::runtime::convert::detail
