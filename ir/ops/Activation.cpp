#include "ir/ops/Activation.h"

#include <fmt/format.h>

#include <utility>

namespace quantc::ir::ops {

ParamSpec activation_param() {
  return ParamSpec{"activation", ParamType::Choice,
                   "element type of the activations, the bias and the output: f32, or f16 / bf16 (widened exactly to "
                   "f32, the result rounded once to nearest even)",
                   "\"f32\"", "", {"f32", "f16", "bf16"}};
}

ScalarType activation_from_name(const std::string& name) {
  if (name == "f16") return ScalarType::F16;
  if (name == "bf16") return ScalarType::BF16;
  if (name == "f32") return ScalarType::F32;
  throw OpError(fmt::format("Fix: activation=\"{}\" is not supported; use \"f32\", \"f16\" or \"bf16\".", name));
}

ScalarType activation_of(const OpArgs& args) {
  if (!args.has("activation")) return ScalarType::F32;
  return activation_from_name(args.choice("activation"));
}

OpArgs activated(OpArgs args, const char* activation) {
  args.set("activation", std::string(activation));
  return args;
}

BufferSpec activation_buffer(std::string name, std::string role, std::string count_formula,
                             std::vector<std::string> shape) {
  BufferSpec buffer{std::move(name), std::move(role), ScalarType::F32, std::move(count_formula), std::move(shape)};
  buffer.activation_typed = true;
  return buffer;
}

Expr widen(const Expr& value) {
  if (value.type().element() == ScalarType::F32) return value;
  return cast(value.type().with_element(ScalarType::F32), value);
}

Expr narrow(ScalarType activation, const Expr& value) {
  if (value.type().element() == activation) return value;
  return cast(value.type().with_element(activation), value);
}

Expr HalfWords::element(unsigned i) const {
  const Expr& word = words.at(i / 2);
  if (activation == ScalarType::BF16) {
    // A bf16 is the top half of the f32 with the same value: no conversion instruction.
    return bitcast(ScalarType::F32, i % 2 == 0 ? word << u32(16) : word & u32(0xFFFF0000u));
  }
  return cast(ScalarType::F32, extract_lane(bitcast(Type(activation, 2), word), i % 2));
}

HalfWords load_half_words(Body& body, const BufferRef& x, const Expr& index, unsigned count, const std::string& name) {
  if ((count != 2 && count != 4 && count != 8) || (x.element != ScalarType::F16 && x.element != ScalarType::BF16)) {
    throw OpError(fmt::format("load_half_words: {} elements of a {} buffer; expected 2, 4 or 8 f16/bf16 elements",
                              count, to_string(x.element)));
  }
  HalfWords result;
  result.activation = x.element;
  Expr loaded = body.let(name, x.load_words(index, count / 2));
  if (count == 2) {
    result.words.push_back(loaded);
  } else {
    for (unsigned w = 0; w < count / 2; ++w) result.words.push_back(extract_lane(loaded, w));
  }
  return result;
}

void store_half_pairs(Body& body, const BufferRef& out, const Expr& index, const std::vector<Expr>& values) {
  for (std::size_t i = 0; i + 1 < values.size(); i += 2) {
    Expr pair = narrow(out.element, make_vector({values[i], values[i + 1]}));
    body.store(out, i == 0 ? index : index + double(i), pair);
  }
}

}  // namespace quantc::ir::ops
