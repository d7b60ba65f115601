#include "ir/IR.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "ir/Arithmetic.h"
#include "ir/Program.h"

namespace quantc::ir {

namespace {

/// `handle`, unless its node is deeper than kMaxNestingDepth (IRError).
template <class Handle>
Handle within_depth(Handle handle) {
  if (handle.get()->nesting_depth() > kMaxNestingDepth) throw IRError(nesting_error(handle.get()->nesting_depth()));
  return handle;
}

}  // namespace


std::string_view to_string(BinaryOp op) {
  switch (op) {
#define QUANTC_CASE(name, text) \
  case BinaryOp::name:          \
    return text;
    QUANTC_BINARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "?";
}

std::string_view to_string(UnaryOp op) {
  switch (op) {
#define QUANTC_CASE(name, text) \
  case UnaryOp::name:           \
    return text;
    QUANTC_UNARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "?";
}

std::string_view to_string(SubgroupReduceOp op) {
  switch (op) {
    case SubgroupReduceOp::Add:
      return "add";
    case SubgroupReduceOp::Max:
      return "max";
    case SubgroupReduceOp::Min:
      return "min";
  }
  return "?";
}

std::string_view to_string(BuiltinKind kind) {
  switch (kind) {
    case BuiltinKind::InvocationId:
      return "invocation_id";
    case BuiltinKind::WorkgroupId:
      return "workgroup_id";
    case BuiltinKind::LocalId:
      return "local_id";
    case BuiltinKind::SubgroupLocalId:
      return "subgroup_local_id";
    case BuiltinKind::SubgroupSize:
      return "subgroup_size";
  }
  return "?";
}

std::string_view to_string(ExprKind kind) {
  switch (kind) {
#define QUANTC_CASE(name) \
  case ExprKind::name:    \
    return #name;
    QUANTC_EXPR_NODES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "?";
}

std::string_view to_string(NodeKind kind) {
  switch (kind) {
#define QUANTC_CASE(name) \
  case NodeKind::name:    \
    return #name;
    QUANTC_STMT_NODES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "?";
}

std::string_view to_string(BufferAccess access) {
  switch (access) {
    case BufferAccess::ReadOnly:
      return "read_only";
    case BufferAccess::ReadWrite:
      return "read_write";
    case BufferAccess::WriteOnly:
      return "write_only";
    case BufferAccess::Scratch:
      return "scratch";
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      return true;
    default:
      return false;
  }
}

bool is_commutative(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Mul:
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
      return true;
    default:
      return false;
  }
}

bool is_arithmetic(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Rem:
    case BinaryOp::Min:
    case BinaryOp::Max:
      return true;
    default:
      return false;
  }
}

unsigned natural_alignment(Type type) { return type.bytes(); }

namespace {

/// splitmix64's finaliser: a cheap, well-mixing 64-bit permutation.
std::uint64_t mix(std::uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ull;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebull;
  value ^= value >> 31;
  return value;
}

}  // namespace

std::uint64_t name_hash(const std::string& name) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

std::uint64_t table_hash(const std::vector<std::uint64_t>& table) {
  std::uint64_t hash = table.size();
  for (std::uint64_t entry : table) hash = mix(hash ^ entry);
  return hash;
}

void ExprBase::summarize(std::uint64_t payload, std::uint8_t flags, std::initializer_list<const ExprBase*> operands) {
  const std::uint64_t shape = static_cast<std::uint64_t>(kind) | static_cast<std::uint64_t>(type.element()) << 8 |
                              static_cast<std::uint64_t>(type.lanes()) << 16;
  hash_ = mix(mix(shape) ^ payload);
  size_ = 1;
  flags_ = flags;
  for (const ExprBase* operand : operands) summarize_operand(operand);
}

void ExprBase::summarize_operand(const ExprBase* operand) {
  if (operand == nullptr) return;  // make() rejects undefined operands with a message
  hash_ = mix(hash_ * 31 + operand->hash_);
  size_ = operand->size_ >= 0xffffffffu - size_ ? 0xffffffffu : size_ + operand->size_;
  flags_ |= operand->flags_;
  depth_ = std::max(depth_, operand->depth_ + 1);  // depths are bounded far below overflow
}

void NodeBase::nest(std::initializer_list<const ExprBase*> operands, std::initializer_list<const NodeBase*> bodies) {
  for (const ExprBase* operand : operands) {
    if (operand != nullptr) depth_ = std::max(depth_, operand->nesting_depth() + 1);
  }
  for (const NodeBase* body : bodies) nest_body(body);
}

void NodeBase::nest_body(const NodeBase* body) {
  if (body != nullptr) depth_ = std::max(depth_, body->nesting_depth() + 1);
}

std::string nesting_error(std::uint32_t depth) {
  return fmt::format("IR nested {} levels deep; quantc accepts at most {} (kMaxNestingDepth). Fix: bind "
                     "subexpressions to variables with let, or flatten nested if/for statements",
                     depth, kMaxNestingDepth);
}

bool Binary::divisor_may_trap() const {
  if (op != BinaryOp::Div && op != BinaryOp::Rem) return false;
  const Literal* divisor = rhs.as<Literal>();
  return divisor == nullptr || divisor->is_zero();
}

bool Lookup::index_may_trap() const {
  const Literal* literal = index.as<Literal>();
  return literal == nullptr || literal->bits >= table.size();
}

namespace {

void require_defined(const Expr& expr, std::string_view what) {
  if (!expr.defined()) throw IRError(fmt::format("{}: operand is undefined", what));
}

void require_value_type(Type type, std::string_view what) {
  if (is_storage_only(type.element())) {
    throw IRError(fmt::format("{}: {} is a storage-only type; unpack codes from u32/u8 words instead", what,
                              to_string(type)));
  }
  if (!is_valid_type(type)) {
    throw IRError(fmt::format("{}: {} is not a vector type quantc supports; use 2 or 4 lanes of u32/i32/f32 or 2 "
                              "lanes of f16/bf16",
                              what, to_string(type)));
  }
}

void require_scalar(const Expr& expr, std::string_view what) {
  if (expr.type().is_vector()) {
    throw IRError(fmt::format("{}: expected a scalar, got {}", what, to_string(expr.type())));
  }
}

/// The alignment an access states, checked against its type: the element size for a
/// scalar; between the element size and the natural lanes * element size for a vector.
unsigned checked_alignment(Type type, unsigned alignment, std::string_view what) {
  const unsigned natural = natural_alignment(type);
  if (alignment == 0) return natural;
  const unsigned element = byte_size(type.element());
  if (alignment < element || alignment > natural || !std::has_single_bit(alignment)) {
    throw IRError(fmt::format("{}: alignment {} is invalid for {}; use a power of two from {} to {} bytes", what,
                              alignment, to_string(type), element, natural));
  }
  return alignment;
}

/// A reinterpreting access (`access`: "load" or "store") moves u32 words at their natural
/// alignment; `what` names the node for the message.
void check_reinterpret(Type type, unsigned alignment, bool reinterpret, std::string_view what,
                       std::string_view access) {
  if (!reinterpret) return;
  if (type.element() != ScalarType::U32) {
    throw IRError(fmt::format("{}: a reinterpreting {} {} u32 words (u32, u32x2, u32x4), not {}", what, access,
                              access == "load" ? "reads" : "writes", to_string(type)));
  }
  if (alignment != natural_alignment(type)) {
    throw IRError(fmt::format("{}: a reinterpreting {} {} needs its natural {}-byte alignment, not {}", what,
                              to_string(type), access, natural_alignment(type), alignment));
  }
}

}  // namespace

Expr Literal::make(ScalarType type, std::uint64_t bits) {
  require_value_type(type, "Literal");
  switch (type) {
    case ScalarType::Bool:
      bits = bits ? 1 : 0;
      break;
    case ScalarType::U8:
      bits &= 0xffu;
      break;
    case ScalarType::U16:
    case ScalarType::F16:
    case ScalarType::BF16:
      bits &= 0xffffu;
      break;
    case ScalarType::U32:
    case ScalarType::F32:
      bits &= 0xffffffffu;
      break;
    case ScalarType::I8:
      bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int8_t>(bits)));
      break;
    case ScalarType::I32:
      bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(bits)));
      break;
    default:
      break;
  }
  return within_depth(Expr(std::make_shared<Literal>(type, bits)));
}

Expr Literal::i32(std::int32_t value) {
  return make(ScalarType::I32, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
}

Expr Literal::f32(float value) { return make(ScalarType::F32, std::bit_cast<std::uint32_t>(value)); }

Expr Literal::f64(double value) { return make(ScalarType::F64, std::bit_cast<std::uint64_t>(value)); }

Expr Literal::from_double(ScalarType type, double value) {
  switch (type) {
    case ScalarType::F16:
    case ScalarType::BF16:
      return make(type, arith::round_to_format(value, arith::format_of(type)));
    case ScalarType::F32:
      return f32(static_cast<float>(value));
    case ScalarType::F64:
      return f64(value);
    case ScalarType::Bool:
      return boolean(value != 0);
    default:
      if (is_signed(type)) return make(type, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
      return make(type, static_cast<std::uint64_t>(value));
  }
}

double Literal::as_double() const {
  if (is_float(scalar())) return static_cast<double>(arith::decode(bits, arith::format_of(scalar())));
  return is_signed(scalar()) ? static_cast<double>(static_cast<std::int64_t>(bits)) : static_cast<double>(bits);
}

std::int64_t Literal::as_int64() const {
  if (is_float(scalar())) return static_cast<std::int64_t>(as_double());
  return static_cast<std::int64_t>(bits);
}

bool Literal::is_zero() const { return is_float(scalar()) ? as_double() == 0.0 : bits == 0; }

bool Literal::is_one() const { return is_float(scalar()) ? as_double() == 1.0 : bits == 1; }

Expr Var::make(Type type, std::string name) {
  require_value_type(type, "Var");
  if (name.empty()) throw IRError("Var: empty variable name");
  return within_depth(Expr(std::make_shared<Var>(type, std::move(name))));
}

Expr Load::make(Type type, std::string buffer, Expr index, unsigned alignment, bool reinterpret) {
  require_defined(index, "Load");
  if (index.type() != ScalarType::U32) {
    throw IRError(fmt::format("Load {}: index must be u32, got {}", buffer, to_string(index.type())));
  }
  require_value_type(type, "Load " + buffer);
  alignment = checked_alignment(type, alignment, "Load " + buffer);
  check_reinterpret(type, alignment, reinterpret, "Load " + buffer, "load");
  return within_depth(Expr(std::make_shared<Load>(type, std::move(buffer), std::move(index), alignment, reinterpret)));
}

unsigned elements_accessed(Type type, bool reinterpret, ScalarType buffer_element) {
  if (!reinterpret) return type.lanes();
  const unsigned element_bytes = buffer_element == ScalarType::Bool ? 1 : byte_size(buffer_element);
  return type.bytes() / element_bytes;
}

unsigned Load::elements_read(ScalarType buffer_element) const {
  return elements_accessed(type, reinterpret, buffer_element);
}

unsigned Store::elements_written(ScalarType buffer_element) const {
  return elements_accessed(value.type(), reinterpret, buffer_element);
}

Expr Binary::make(BinaryOp op, Expr lhs, Expr rhs) {
  require_defined(lhs, "Binary");
  require_defined(rhs, "Binary");
  Type type = lhs.type();
  if (type != rhs.type()) {
    throw IRError(fmt::format("Binary '{}': operand types differ ({} vs {}); insert a cast", to_string(op),
                              to_string(type), to_string(rhs.type())));
  }
  if (type.is_vector() && (is_comparison(op) || op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr)) {
    throw IRError(fmt::format("Binary '{}': not defined on vectors ({}); compare extracted lanes", to_string(op),
                              to_string(type)));
  }
  const ScalarType element = type.element();
  switch (op) {
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
      if (element != ScalarType::Bool) {
        throw IRError(fmt::format("Binary '{}': operands must be bool, got {}", to_string(op), to_string(type)));
      }
      break;
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
      if (is_float(element)) {
        throw IRError(fmt::format("Binary '{}': operands must be integers or bool, got {}; bitcast floats to "
                                  "integers first",
                                  to_string(op), to_string(type)));
      }
      break;
    case BinaryOp::Rem:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      if (!is_integer(element)) {
        throw IRError(
            fmt::format("Binary '{}': operands must be integers, got {}", to_string(op), to_string(type)));
      }
      break;
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      break;
    default:
      if (element == ScalarType::Bool) {
        throw IRError(fmt::format("Binary '{}': arithmetic on bool; cast to an integer first", to_string(op)));
      }
      break;
  }
  Type result = is_comparison(op) ? Type(ScalarType::Bool) : type;
  return within_depth(Expr(std::make_shared<Binary>(result, op, std::move(lhs), std::move(rhs))));
}

Expr Unary::make(UnaryOp op, Expr operand) {
  require_defined(operand, "Unary");
  Type type = operand.type();
  if (op != UnaryOp::Not && type.element() == ScalarType::Bool) {
    throw IRError(fmt::format("Unary '{}': operand must be numeric, got bool", to_string(op)));
  }
  if (op == UnaryOp::Not && is_float(type)) {
    throw IRError(fmt::format("Unary 'not': operand must be an integer or bool, got {}", to_string(type)));
  }
  if (op == UnaryOp::Round && type != ScalarType::F32 && type != ScalarType::F64) {
    throw IRError(fmt::format("Unary 'round': operand must be f32 or f64, got {}; convert it first",
                              to_string(type)));
  }
  return within_depth(Expr(std::make_shared<Unary>(type, op, std::move(operand))));
}

Expr Cast::make(Type type, Expr value) {
  require_defined(value, "Cast");
  require_value_type(type, "Cast");
  if (type.lanes() != value.type().lanes()) {
    throw IRError(fmt::format("Cast: {} -> {} changes the lane count; casts convert lane by lane (use Bitcast to "
                              "reinterpret bits)",
                              to_string(value.type()), to_string(type)));
  }
  return within_depth(Expr(std::make_shared<Cast>(type, std::move(value))));
}

Expr Bitcast::make(Type type, Expr value) {
  require_defined(value, "Bitcast");
  require_value_type(type, "Bitcast");
  Type from = value.type();
  if (from.element() == ScalarType::Bool || type.element() == ScalarType::Bool || from.bits() != type.bits()) {
    throw IRError(fmt::format("Bitcast: {} ({} bits) -> {} ({} bits): both types must have the same width and "
                              "neither may be bool",
                              to_string(from), from.bits(), to_string(type), type.bits()));
  }
  return within_depth(Expr(std::make_shared<Bitcast>(type, std::move(value))));
}

Expr Select::make(Expr cond, Expr if_true, Expr if_false) {
  require_defined(cond, "Select");
  require_defined(if_true, "Select");
  require_defined(if_false, "Select");
  if (cond.type() != ScalarType::Bool) {
    throw IRError(fmt::format("Select: condition must be bool, got {}", to_string(cond.type())));
  }
  if (if_true.type() != if_false.type()) {
    throw IRError(fmt::format("Select: branch types differ ({} vs {})", to_string(if_true.type()),
                              to_string(if_false.type())));
  }
  Type type = if_true.type();
  return within_depth(Expr(std::make_shared<Select>(type, std::move(cond), std::move(if_true), std::move(if_false))));
}

Expr Fma::make(Expr a, Expr b, Expr c) {
  require_defined(a, "Fma");
  require_defined(b, "Fma");
  require_defined(c, "Fma");
  Type type = a.type();
  if (!is_float(type) || b.type() != type || c.type() != type) {
    throw IRError(fmt::format("Fma: operands must share one float type, got {}, {}, {}", to_string(a.type()),
                              to_string(b.type()), to_string(c.type())));
  }
  return within_depth(Expr(std::make_shared<Fma>(type, std::move(a), std::move(b), std::move(c))));
}

Expr MakeVector::make(std::vector<Expr> lanes) {
  if (lanes.empty()) throw IRError("MakeVector: no lanes");
  for (const Expr& lane : lanes) require_defined(lane, "MakeVector");
  Type element = lanes.front().type();
  for (const Expr& lane : lanes) {
    require_scalar(lane, "MakeVector");
    if (lane.type() != element) {
      throw IRError(fmt::format("MakeVector: lanes have different types ({} and {})", to_string(element),
                                to_string(lane.type())));
    }
  }
  Type type(element.element(), static_cast<unsigned>(lanes.size()));
  require_value_type(type, "MakeVector");
  return within_depth(Expr(std::make_shared<MakeVector>(type, std::move(lanes))));
}

Expr MakeVector::broadcast(Expr value, unsigned lanes) {
  return make(std::vector<Expr>(lanes, std::move(value)));
}

Expr ExtractLane::make(Expr vector, unsigned lane) {
  require_defined(vector, "ExtractLane");
  Type type = vector.type();
  if (!type.is_vector() || lane >= type.lanes()) {
    throw IRError(fmt::format("ExtractLane: lane {} of {}; the operand must be a vector and the lane below its {} "
                              "lanes",
                              lane, to_string(type), type.lanes()));
  }
  return within_depth(Expr(std::make_shared<ExtractLane>(Type(type.element()), std::move(vector), lane)));
}

Expr InsertLane::make(Expr vector, unsigned lane, Expr value) {
  require_defined(vector, "InsertLane");
  require_defined(value, "InsertLane");
  Type type = vector.type();
  if (!type.is_vector() || lane >= type.lanes()) {
    throw IRError(fmt::format("InsertLane: lane {} of {}; the operand must be a vector and the lane below its {} "
                              "lanes",
                              lane, to_string(type), type.lanes()));
  }
  if (value.type() != Type(type.element())) {
    throw IRError(fmt::format("InsertLane: value is {} but the lanes of {} are {}", to_string(value.type()),
                              to_string(type), to_string(type.element())));
  }
  return within_depth(Expr(std::make_shared<InsertLane>(type, std::move(vector), lane, std::move(value))));
}

Expr Permute::make(Expr a, Expr b, Expr selector) {
  require_defined(a, "Permute");
  require_defined(b, "Permute");
  require_defined(selector, "Permute");
  if (a.type() != ScalarType::U32 || b.type() != ScalarType::U32 || selector.type() != ScalarType::U32) {
    throw IRError(fmt::format("Permute: operands must be u32, got {}, {}, {}", to_string(a.type()),
                              to_string(b.type()), to_string(selector.type())));
  }
  return within_depth(Expr(std::make_shared<Permute>(std::move(a), std::move(b), std::move(selector))));
}

Expr BufferLength::make(std::string buffer) { return within_depth(Expr(std::make_shared<BufferLength>(std::move(buffer)))); }

Expr Builtin::make(BuiltinKind builtin, unsigned axis) {
  bool has_axis = builtin == BuiltinKind::InvocationId || builtin == BuiltinKind::WorkgroupId ||
                  builtin == BuiltinKind::LocalId;
  if (axis > (has_axis ? 2u : 0u)) {
    throw IRError(fmt::format("Builtin {}: axis {} out of range", to_string(builtin), axis));
  }
  return within_depth(Expr(std::make_shared<Builtin>(builtin, axis)));
}

Expr SubgroupShuffle::make(Expr value, Expr lane) {
  require_defined(value, "SubgroupShuffle");
  require_defined(lane, "SubgroupShuffle");
  if (value.type().bits() != 32) {
    throw IRError(fmt::format("SubgroupShuffle: value must be a 32-bit type, got {}", to_string(value.type())));
  }
  if (lane.type() != ScalarType::U32) {
    throw IRError(fmt::format("SubgroupShuffle: lane must be u32, got {}", to_string(lane.type())));
  }
  Type type = value.type();
  return within_depth(Expr(std::make_shared<SubgroupShuffle>(type, std::move(value), std::move(lane))));
}

Expr SubgroupReduce::make(SubgroupReduceOp op, Expr value) {
  require_defined(value, "SubgroupReduce");
  Type type = value.type();
  if (type != ScalarType::F32 && type != ScalarType::U32 && type != ScalarType::I32) {
    throw IRError(
        fmt::format("subgroup_{}: value must be f32, u32 or i32, got {}", to_string(op), to_string(type)));
  }
  return within_depth(Expr(std::make_shared<SubgroupReduce>(type, op, std::move(value))));
}

Expr SubgroupMma::make(ScalarType input, Expr a, Expr b, Expr c) {
  require_defined(a, "SubgroupMma");
  require_defined(b, "SubgroupMma");
  require_defined(c, "SubgroupMma");
  if (input != ScalarType::F16 && input != ScalarType::BF16) {
    throw IRError(fmt::format("subgroup_mma: inputs must be f16 or bf16, got {}", to_string(input)));
  }
  const Type a_type(ScalarType::U32, 4), b_type(ScalarType::U32, 2), c_type(ScalarType::F32, 4);
  if (a.type() != a_type || b.type() != b_type || c.type() != c_type) {
    throw IRError(fmt::format("subgroup_mma: operands must be a: u32x4, b: u32x2, c: f32x4 (the m16n8k16 fragments), "
                              "got {}, {}, {}",
                              to_string(a.type()), to_string(b.type()), to_string(c.type())));
  }
  return within_depth(Expr(std::make_shared<SubgroupMma>(input, std::move(a), std::move(b), std::move(c))));
}

Expr SubgroupLoadMatrix::make(std::string array, Expr index, unsigned matrices, bool transpose) {
  require_defined(index, "SubgroupLoadMatrix " + array);
  if (index.type() != ScalarType::U32) {
    throw IRError(fmt::format("subgroup_load_matrix({}): index must be u32, got {}", array, to_string(index.type())));
  }
  if (matrices != 1 && matrices != 2 && matrices != 4) {
    throw IRError(fmt::format("subgroup_load_matrix({}): {} matrices; ldmatrix loads 1, 2 or 4", array, matrices));
  }
  const Type type(ScalarType::U32, matrices);
  return within_depth(
      Expr(std::make_shared<SubgroupLoadMatrix>(type, std::move(array), std::move(index), matrices, transpose)));
}

Expr SubgroupBallot::make(Expr cond) {
  require_defined(cond, "SubgroupBallot");
  if (cond.type() != ScalarType::Bool) {
    throw IRError(fmt::format("SubgroupBallot: condition must be bool, got {}", to_string(cond.type())));
  }
  return within_depth(Expr(std::make_shared<SubgroupBallot>(std::move(cond))));
}

Expr AtomicAdd::make(std::string buffer, Expr index, Expr value) {
  require_defined(index, "AtomicAdd " + buffer);
  require_defined(value, "AtomicAdd " + buffer);
  if (index.type() != ScalarType::U32) {
    throw IRError(fmt::format("AtomicAdd {}: index must be u32, got {}", buffer, to_string(index.type())));
  }
  if (value.type() != ScalarType::U32 && value.type() != ScalarType::I32) {
    throw IRError(fmt::format("AtomicAdd {}: the value must be u32 or i32 (a wrapping integer add), got {}", buffer,
                              to_string(value.type())));
  }
  const Type type = value.type();
  return within_depth(Expr(std::make_shared<AtomicAdd>(type, std::move(buffer), std::move(index), std::move(value))));
}

Expr Lookup::make(ScalarType type, std::vector<std::uint64_t> table, Expr index) {
  require_defined(index, "Lookup");
  require_value_type(type, "Lookup");
  if (table.empty()) throw IRError("Lookup: empty table");
  if (index.type() != ScalarType::U32) {
    throw IRError(fmt::format("Lookup: index must be u32, got {}", to_string(index.type())));
  }
  for (std::uint64_t& entry : table) entry = Literal::make(type, entry).as<Literal>()->bits;
  return within_depth(Expr(std::make_shared<Lookup>(type, std::move(table), std::move(index))));
}

Node Let::make(std::string name, Expr value) {
  require_defined(value, "Let " + name);
  if (name.empty()) throw IRError("Let: empty variable name");
  return within_depth(Node(std::make_shared<Let>(std::move(name), std::move(value))));
}

Node Assign::make(std::string name, Expr value) {
  require_defined(value, "Assign " + name);
  return within_depth(Node(std::make_shared<Assign>(std::move(name), std::move(value))));
}

Node Store::make(std::string buffer, Expr index, Expr value, unsigned alignment, bool reinterpret) {
  require_defined(index, "Store " + buffer);
  require_defined(value, "Store " + buffer);
  if (index.type() != ScalarType::U32) {
    throw IRError(fmt::format("Store {}: index must be u32, got {}", buffer, to_string(index.type())));
  }
  alignment = checked_alignment(value.type(), alignment, "Store " + buffer);
  check_reinterpret(value.type(), alignment, reinterpret, "Store " + buffer, "store");
  return within_depth(
      Node(std::make_shared<Store>(std::move(buffer), std::move(index), std::move(value), alignment, reinterpret)));
}

Node If::make(Expr cond, Node then_body, Node else_body) {
  require_defined(cond, "If");
  if (cond.type() != ScalarType::Bool) {
    throw IRError(fmt::format("If: condition must be bool, got {}", to_string(cond.type())));
  }
  return within_depth(Node(std::make_shared<If>(std::move(cond), as_block(then_body), as_block(else_body))));
}

Node Loop::make(std::string var, Expr from, Expr to, Node body) {
  require_defined(from, "Loop " + var);
  require_defined(to, "Loop " + var);
  if (from.type() != to.type() || !from.type().is_scalar() || !is_integer(from.type())) {
    throw IRError(fmt::format("Loop {}: bounds must share one integer type, got {} and {}", var,
                              to_string(from.type()), to_string(to.type())));
  }
  return within_depth(Node(std::make_shared<Loop>(std::move(var), std::move(from), std::move(to), as_block(body))));
}

Node Block::make(std::vector<Node> stmts) {
  for (const Node& stmt : stmts) {
    if (!stmt.defined()) throw IRError("Block: undefined statement");
  }
  return within_depth(Node(std::make_shared<Block>(std::move(stmts))));
}

Node Region::make(std::string op_id, Node body) {
  return within_depth(Node(std::make_shared<Region>(std::move(op_id), as_block(body))));
}

Node Fence::make() { return within_depth(Node(std::make_shared<Fence>())); }

Node AsyncCopy::make(std::string array, Expr array_index, std::string buffer, Expr buffer_index, unsigned bytes) {
  require_defined(array_index, "AsyncCopy " + array);
  require_defined(buffer_index, "AsyncCopy " + array);
  if (array_index.type() != ScalarType::U32 || buffer_index.type() != ScalarType::U32) {
    throw IRError(fmt::format("async_copy({}[...], {}[...]): indices must be u32, got {} and {}", array, buffer,
                              to_string(array_index.type()), to_string(buffer_index.type())));
  }
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    throw IRError(fmt::format("async_copy({}[...], {}[...], {}): cp.async copies 4, 8 or 16 bytes", array, buffer, bytes));
  }
  return within_depth(Node(std::make_shared<AsyncCopy>(std::move(array), std::move(array_index), std::move(buffer),
                                                      std::move(buffer_index), bytes)));
}

Node AsyncCommit::make() { return within_depth(Node(std::make_shared<AsyncCommit>())); }

Node AsyncWait::make(unsigned pending) {
  if (pending > 255) throw IRError(fmt::format("async_wait({}): at most 255 groups may stay in flight", pending));
  return within_depth(Node(std::make_shared<AsyncWait>(pending)));
}

Node Barrier::make() { return within_depth(Node(std::make_shared<Barrier>())); }

Node Return::make() { return within_depth(Node(std::make_shared<Return>())); }

Node as_block(const Node& node) {
  if (!node.defined()) return Block::make();
  if (node.kind() == NodeKind::Block) return node;
  return Block::make({node});
}

// --- Program ----------------------------------------------------------------------

std::uint64_t BufferDecl::byte_size() const { return std::uint64_t{count} * ir::byte_size(element); }

ByteRange BufferDecl::readable_range() const {
  return output_byte_range.value_or(ByteRange{0, byte_size()});
}

std::vector<BufferDecl> Program::caller_buffers() const {
  std::vector<BufferDecl> result;
  for (const BufferDecl& buffer : buffers) {
    if (!buffer.is_scratch()) result.push_back(buffer);
  }
  return result;
}

const BufferDecl* Program::find_buffer(std::string_view name) const {
  for (const BufferDecl& buffer : buffers) {
    if (buffer.name == name) return &buffer;
  }
  return nullptr;
}

std::uint64_t SharedDecl::byte_size() const { return std::uint64_t{count} * ir::byte_size(element); }

const SharedDecl* Program::find_shared(std::string_view name) const {
  for (const SharedDecl& array : shared) {
    if (array.name == name) return &array;
  }
  return nullptr;
}

std::uint64_t Program::static_shared_bytes() const {
  std::uint64_t total = 0;
  for (const SharedDecl& array : shared) {
    total = (total + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
    total += array.byte_size();
  }
  return total;
}

}  // namespace quantc::ir
