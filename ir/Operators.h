// The IR's operators, shared by the expression nodes (ir/IR.h) and the one definition
// of their arithmetic (ir/Arithmetic.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace quantc::ir {

// (enumerator, printed symbol or name). Comparisons and logical ops yield bool.
#define QUANTC_BINARY_OPS(X) \
  X(Add, "+")                \
  X(Sub, "-")                \
  X(Mul, "*")                \
  X(Div, "/")                \
  X(Rem, "%")                \
  X(Min, "min")              \
  X(Max, "max")              \
  X(BitAnd, "&")             \
  X(BitOr, "|")              \
  X(BitXor, "^")             \
  X(Shl, "<<")               \
  X(Shr, ">>")               \
  X(Eq, "==")                \
  X(Ne, "!=")                \
  X(Lt, "<")                 \
  X(Le, "<=")                \
  X(Gt, ">")                 \
  X(Ge, ">=")                \
  X(LogicalAnd, "&&")        \
  X(LogicalOr, "||")

enum class BinaryOp : std::uint8_t {
#define QUANTC_ENUM(name, text) name,
  QUANTC_BINARY_OPS(QUANTC_ENUM)
#undef QUANTC_ENUM
};

// (enumerator, printed name). Neg: arithmetic negation. Not: bitwise complement on
// integers, logical not on bool. Abs: absolute value (integers wrap: abs(MIN) == MIN).
#define QUANTC_UNARY_OPS(X) \
  X(Neg, "neg")             \
  X(Not, "not")             \
  X(Abs, "abs")              \
  X(Round, "round")

enum class UnaryOp : std::uint8_t {
#define QUANTC_ENUM(name, text) name,
  QUANTC_UNARY_OPS(QUANTC_ENUM)
#undef QUANTC_ENUM
};

std::string_view to_string(BinaryOp op);  // "+", "min", ...
std::string_view to_string(UnaryOp op);   // "neg", "not", "abs"
bool is_comparison(BinaryOp op);
bool is_commutative(BinaryOp op);
/// Add, Sub, Mul, Div, Rem, Min, Max: the operators that compute a number.
bool is_arithmetic(BinaryOp op);

}  // namespace quantc::ir
