#include "ir/ops/BufferShape.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <string_view>

namespace quantc::ir::ops {
namespace {

/// Recursive descent over one dimension formula. Values are u64; overflow and malformed
/// text throw OpError, an inexact '/' outside ceil() clears `exact`.
class FormulaEvaluator {
 public:
  FormulaEvaluator(const BufferSpec& buffer, std::string_view text, const OpArgs& args)
      : buffer_(buffer), text_(text), args_(args) {}

  std::uint64_t evaluate() {
    std::uint64_t value = sum();
    skip_space();
    if (position_ != text_.size()) fail(fmt::format("unexpected '{}'", text_.substr(position_)));
    return value;
  }
  bool exact() const { return exact_; }

 private:
  std::uint64_t sum() {
    std::uint64_t value = product(/*ceiling=*/false);
    while (true) {
      if (accept('+')) {
        const std::uint64_t rhs = product(false);
        if (value > std::numeric_limits<std::uint64_t>::max() - rhs) fail("overflows 64 bits");
        value += rhs;
      } else if (accept('-')) {
        const std::uint64_t rhs = product(false);
        if (rhs > value) fail("is negative");
        value -= rhs;
      } else {
        return value;
      }
    }
  }

  std::uint64_t product(bool ceiling) {
    std::uint64_t value = factor();
    while (true) {
      if (accept('*')) {
        const std::uint64_t rhs = factor();
        if (rhs != 0 && value > std::numeric_limits<std::uint64_t>::max() / rhs) fail("overflows 64 bits");
        value *= rhs;
      } else if (accept('/')) {
        const std::uint64_t rhs = factor();
        if (rhs == 0) fail("divides by zero");
        if (value % rhs != 0) {
          if (!ceiling) exact_ = false;
          value = value / rhs + (ceiling ? 1 : 0);
        } else {
          value /= rhs;
        }
      } else {
        return value;
      }
    }
  }

  std::uint64_t factor() {
    skip_space();
    if (accept('(')) {
      const std::uint64_t value = sum();
      if (!accept(')')) fail("expects ')'");
      return value;
    }
    if (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
      std::uint64_t value = 0;
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
        const std::uint64_t digit = static_cast<std::uint64_t>(text_[position_++] - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fail("overflows 64 bits");
        value = value * 10 + digit;
      }
      return value;
    }
    const std::size_t start = position_;
    while (position_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[position_])) || text_[position_] == '_')) {
      ++position_;
    }
    const std::string name(text_.substr(start, position_ - start));
    if (name.empty()) fail("expects a number, a parameter or '('");
    if (name == "ceil") {
      if (!accept('(')) fail("expects '(' after ceil");
      const std::uint64_t value = product(/*ceiling=*/true);
      if (!accept(')')) fail("expects ')' closing ceil(");
      return value;
    }
    if (!args_.has(name)) fail(fmt::format("names '{}', which is not a parameter of the spec", name));
    return args_.u32(name);
  }

  bool accept(char c) {
    skip_space();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (position_ < text_.size() && text_[position_] == ' ') ++position_;
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw OpError(fmt::format("buffer '{}': shape formula '{}' {}", buffer_.name, text_, problem));
  }

  const BufferSpec& buffer_;
  std::string_view text_;
  const OpArgs& args_;
  std::size_t position_ = 0;
  bool exact_ = true;
};

}  // namespace

std::optional<std::vector<std::uint64_t>> logical_shape(const BufferSpec& buffer, const OpArgs& args) {
  if (buffer.shape.empty()) return std::nullopt;
  std::vector<std::uint64_t> shape;
  bool exact = true;
  for (const std::string& formula : buffer.shape) {
    FormulaEvaluator evaluator(buffer, formula, args);
    shape.push_back(evaluator.evaluate());
    exact &= evaluator.exact();
  }
  if (!exact) return std::nullopt;
  return shape;
}

std::string shape_formula_text(const BufferSpec& buffer) {
  if (buffer.shape.empty()) return "[" + buffer.count_formula + "]";
  return fmt::format("[{}]", fmt::join(buffer.shape, ", "));
}

std::string shape_text(const std::vector<std::uint64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace quantc::ir::ops
