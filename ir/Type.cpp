#include "ir/Type.h"

#include <fmt/format.h>

#include <stdexcept>

namespace quantc::ir {

std::string_view to_string(ScalarType type) {
  switch (type) {
#define QUANTC_CASE(name, text, bits) \
  case ScalarType::name:              \
    return text;
    QUANTC_SCALAR_TYPES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "<invalid type>";
}

std::optional<ScalarType> parse_scalar_type(std::string_view text) {
#define QUANTC_CASE(name, printed, bits) \
  if (text == printed) return ScalarType::name;
  QUANTC_SCALAR_TYPES(QUANTC_CASE)
#undef QUANTC_CASE
  return std::nullopt;
}

unsigned byte_size(ScalarType type) {
  if (is_storage_only(type)) {
    throw std::invalid_argument(fmt::format(
        "{} is a sub-byte storage type and cannot be a buffer element; store packed codes in u32 or u8 words",
        to_string(type)));
  }
  return type == ScalarType::Bool ? 1 : bit_width(type) / 8;
}

std::string to_string(Type type) {
  if (type.is_scalar()) return std::string(to_string(type.element()));
  return fmt::format("{}x{}", to_string(type.element()), type.lanes());
}

bool is_valid_type(Type type) {
  if (is_storage_only(type.element())) return false;
  if (type.is_scalar()) return true;
  switch (type.element()) {
    case ScalarType::U32:
    case ScalarType::I32:
    case ScalarType::F32:
      return type.lanes() == 2 || type.lanes() == 4;
    case ScalarType::F16:
    case ScalarType::BF16:
      return type.lanes() == 2;
    default:
      return false;
  }
}

std::optional<Type> parse_type(std::string_view text) {
  if (auto scalar = parse_scalar_type(text)) return Type(*scalar);
  std::size_t x = text.rfind('x');
  if (x == std::string_view::npos || x + 2 != text.size()) return std::nullopt;
  auto element = parse_scalar_type(text.substr(0, x));
  char lanes = text[x + 1];
  if (!element || (lanes != '2' && lanes != '4')) return std::nullopt;
  Type type(*element, static_cast<unsigned>(lanes - '0'));
  if (!is_valid_type(type)) return std::nullopt;
  return type;
}

}  // namespace quantc::ir
