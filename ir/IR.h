// The quantc IR: immutable expression and statement nodes behind cheap handles.
//
// Every node kind is listed once in QUANTC_EXPR_NODES / QUANTC_STMT_NODES so the kind
// enums, the visitor, the mutator and the printer cannot drift apart (Halide's IR.h is
// the model). Nodes are plain structs built through validating `make` factories that
// infer the result type and throw IRError (naming the operands) on ill-typed input.
//
// Semantics (shared by the reference interpreter, the PTX emitter and every pass):
// - Integers wrap modulo 2^bits. Div/Rem are truncating; division by zero is an error
//   in the interpreter. Shl/Shr by >= the bit width give 0 (Shr of a signed negative
//   value gives -1), as PTX's clamped `shl`/`shr` do. Shr is arithmetic for signed types.
// - Floats are IEEE binary16/32/64 with round-to-nearest-even on every operation; Add,
//   Sub and Mul are never contracted into an FMA (only `Fma` fuses). Min/Max return the
//   non-NaN operand when exactly one is NaN (PTX `min.f32`). Ne is true when either
//   operand is NaN; the other comparisons are false then (C++ semantics).
// - Cast: float -> integer rounds toward zero and saturates (NaN -> 0), as `cvt.rzi.sat`
//   does; integer -> float and float -> narrower float round to nearest even; integer
//   -> integer truncates or extends by the source's signedness; x -> bool is `x != 0`.
// - Subgroups are 32 consecutive invocations of a workgroup. SubgroupShuffle reads
//   `value` from lane `lane` (a lane >= 32 reads the invocation's own value, as
//   `shfl.sync.idx` does); SubgroupReduce combines all 32 lanes with a butterfly in the
//   order 16, 8, 4, 2, 1 (`shfl.sync.bfly`), so every lane gets the same bits.
//   SubgroupBallot gives a u32 with bit i set when lane i's condition holds. All three
//   require the whole subgroup to be active (undefined behaviour on hardware otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/Type.h"

namespace quantc::ir {

/// Raised for ill-formed IR: a type mismatch, an undeclared name, an invalid operand.
class IRError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#define QUANTC_EXPR_NODES(X) \
  X(Literal)                 \
  X(Var)                     \
  X(Load)                    \
  X(Binary)                  \
  X(Unary)                   \
  X(Cast)                    \
  X(Select)                  \
  X(Fma)                     \
  X(BufferLength)            \
  X(Builtin)                 \
  X(SubgroupShuffle)         \
  X(SubgroupReduce)          \
  X(SubgroupBallot)          \
  X(Lookup)

#define QUANTC_STMT_NODES(X) \
  X(Let)                     \
  X(Assign)                  \
  X(Store)                   \
  X(If)                      \
  X(Loop)                    \
  X(Block)                   \
  X(Region)                  \
  X(Barrier)                 \
  X(Return)

enum class ExprKind : std::uint8_t {
#define QUANTC_ENUM(name) name,
  QUANTC_EXPR_NODES(QUANTC_ENUM)
#undef QUANTC_ENUM
};

enum class NodeKind : std::uint8_t {
#define QUANTC_ENUM(name) name,
  QUANTC_STMT_NODES(QUANTC_ENUM)
#undef QUANTC_ENUM
};

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

/// Neg: arithmetic negation. Not: bitwise complement on integers, logical not on bool.
/// Abs: absolute value (integers wrap: abs(INT_MIN) == INT_MIN).
enum class UnaryOp : std::uint8_t { Neg, Not, Abs };
enum class SubgroupReduceOp : std::uint8_t { Add, Max, Min };
/// InvocationId = WorkgroupId * workgroup_size + LocalId, per axis (0 = x, 1 = y, 2 = z).
enum class BuiltinKind : std::uint8_t { InvocationId, WorkgroupId, LocalId, SubgroupLocalId, SubgroupSize };

std::string_view to_string(BinaryOp op);  // "+", "min", ...
std::string_view to_string(UnaryOp op);   // "neg", "not", "abs"
std::string_view to_string(SubgroupReduceOp op);  // "add", "max", "min"
std::string_view to_string(BuiltinKind kind);     // "invocation_id", ...
std::string_view to_string(ExprKind kind);
std::string_view to_string(NodeKind kind);
bool is_comparison(BinaryOp op);
bool is_commutative(BinaryOp op);

/// Shared handle to an immutable node (ExprBase or NodeBase). Copying is cheap; the
/// pointee's identity is stable, so passes may key maps on `get()` within one program
/// and tell "unchanged" by `same_as`.
template <class Base>
class NodeHandle {
 public:
  NodeHandle() = default;
  explicit NodeHandle(std::shared_ptr<const Base> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  auto kind() const { return node_->kind; }
  const Base* get() const { return node_.get(); }
  /// The node as kind T, or nullptr when it is another kind (or undefined).
  template <class T>
  const T* as() const {
    return defined() && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  bool same_as(const NodeHandle& other) const { return node_ == other.node_; }

 protected:
  std::shared_ptr<const Base> node_;
};

// ---------------------------------------------------------------------------------
// Expressions

struct ExprBase {
  ExprBase(ExprKind kind, ScalarType type) : kind(kind), type(type) {}
  virtual ~ExprBase() = default;
  const ExprKind kind;
  const ScalarType type;
};

/// Handle to an immutable expression node; every expression has a value type.
class Expr : public NodeHandle<ExprBase> {
 public:
  using NodeHandle::NodeHandle;
  ScalarType type() const { return node_->type; }
};

/// A constant. `bits` holds the value in the type's own encoding: integers zero- or
/// sign-extended to 64 bits, f16/f32/f64 as their IEEE bit patterns, bool as 0/1.
struct Literal : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Literal;
  Literal(ScalarType type, std::uint64_t bits) : ExprBase(kKind, type), bits(bits) {}
  const std::uint64_t bits;
  static Expr make(ScalarType type, std::uint64_t bits);  // canonicalises `bits`
  static Expr u32(std::uint32_t value) { return make(ScalarType::U32, value); }
  static Expr i32(std::int32_t value);
  static Expr u64(std::uint64_t value) { return make(ScalarType::U64, value); }
  static Expr f32(float value);
  static Expr f64(double value);
  static Expr boolean(bool value) { return make(ScalarType::Bool, value ? 1 : 0); }
  /// Any integer or float type from a double (rounded to nearest for floats, truncated
  /// toward zero for integers); convenient for folding and tests.
  static Expr from_double(ScalarType type, double value);
  double as_double() const;        // numeric value (integers exact up to 2^53)
  std::int64_t as_int64() const;   // integers and bool; floats truncate
  bool is_zero() const;            // +0/-0 for floats
  bool is_one() const;
};

/// A variable introduced by Let or Loop; the type is the binding's type.
struct Var : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Var;
  Var(ScalarType type, std::string name) : ExprBase(kKind, type), name(std::move(name)) {}
  const std::string name;
  static Expr make(ScalarType type, std::string name);
};

/// Element `index` (u32, in elements) of buffer `buffer`, whose elements are `type`.
struct Load : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Load;
  Load(ScalarType type, std::string buffer, Expr index)
      : ExprBase(kKind, type), buffer(std::move(buffer)), index(std::move(index)) {}
  const std::string buffer;
  const Expr index;
  static Expr make(ScalarType element, std::string buffer, Expr index);
};

struct Binary : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Binary;
  Binary(ScalarType type, BinaryOp op, Expr lhs, Expr rhs)
      : ExprBase(kKind, type), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  const BinaryOp op;
  const Expr lhs, rhs;
  /// Operands must have the same type (shift amounts too); logical ops need bool;
  /// bitwise ops and Rem need integers (bitwise also accept bool).
  static Expr make(BinaryOp op, Expr lhs, Expr rhs);
};

struct Unary : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Unary;
  Unary(ScalarType type, UnaryOp op, Expr operand) : ExprBase(kKind, type), op(op), operand(std::move(operand)) {}
  const UnaryOp op;
  const Expr operand;
  static Expr make(UnaryOp op, Expr operand);
};

struct Cast : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Cast(ScalarType type, Expr value) : ExprBase(kKind, type), value(std::move(value)) {}
  const Expr value;
  static Expr make(ScalarType type, Expr value);
};

/// `cond ? if_true : if_false`; both branches are evaluated (no short circuit).
struct Select : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Select;
  Select(ScalarType type, Expr cond, Expr if_true, Expr if_false)
      : ExprBase(kKind, type), cond(std::move(cond)), if_true(std::move(if_true)), if_false(std::move(if_false)) {}
  const Expr cond, if_true, if_false;
  static Expr make(Expr cond, Expr if_true, Expr if_false);
};

/// `a * b + c` with a single rounding (floats only).
struct Fma : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Fma;
  Fma(ScalarType type, Expr a, Expr b, Expr c)
      : ExprBase(kKind, type), a(std::move(a)), b(std::move(b)), c(std::move(c)) {}
  const Expr a, b, c;
  static Expr make(Expr a, Expr b, Expr c);
};

/// The element count of a buffer, as u32.
struct BufferLength : ExprBase {
  static constexpr ExprKind kKind = ExprKind::BufferLength;
  explicit BufferLength(std::string buffer) : ExprBase(kKind, ScalarType::U32), buffer(std::move(buffer)) {}
  const std::string buffer;
  static Expr make(std::string buffer);
};

/// Launch coordinates, all u32. `axis` is 0..2 for the id kinds and 0 otherwise.
struct Builtin : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Builtin;
  Builtin(BuiltinKind builtin, unsigned axis) : ExprBase(kKind, ScalarType::U32), builtin(builtin), axis(axis) {}
  const BuiltinKind builtin;
  const unsigned axis;
  static Expr make(BuiltinKind builtin, unsigned axis = 0);
};

struct SubgroupShuffle : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupShuffle;
  SubgroupShuffle(ScalarType type, Expr value, Expr lane)
      : ExprBase(kKind, type), value(std::move(value)), lane(std::move(lane)) {}
  const Expr value, lane;
  /// `value` is any 32-bit type; `lane` is u32.
  static Expr make(Expr value, Expr lane);
};

struct SubgroupReduce : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupReduce;
  SubgroupReduce(ScalarType type, SubgroupReduceOp op, Expr value)
      : ExprBase(kKind, type), op(op), value(std::move(value)) {}
  const SubgroupReduceOp op;
  const Expr value;
  /// `value` is f32, u32 or i32.
  static Expr make(SubgroupReduceOp op, Expr value);
};

struct SubgroupBallot : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupBallot;
  explicit SubgroupBallot(Expr cond) : ExprBase(kKind, ScalarType::U32), cond(std::move(cond)) {}
  const Expr cond;
  static Expr make(Expr cond);
};

/// `table[index]` for a constant table held in the program (not in memory): the PTX
/// emitter lowers it to a `selp` tree, so it suits small register code books such as
/// the 16-entry NF4 table. `table` holds Literal-encoded bits of `type`; `index` is u32
/// and must be < table.size() (an interpreter error otherwise).
struct Lookup : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Lookup;
  Lookup(ScalarType type, std::vector<std::uint64_t> table, Expr index)
      : ExprBase(kKind, type), table(std::move(table)), index(std::move(index)) {}
  const std::vector<std::uint64_t> table;
  const Expr index;
  static Expr make(ScalarType type, std::vector<std::uint64_t> table, Expr index);
};

// ---------------------------------------------------------------------------------
// Statements

struct NodeBase {
  explicit NodeBase(NodeKind kind) : kind(kind) {}
  virtual ~NodeBase() = default;
  const NodeKind kind;
};

/// Handle to an immutable statement node.
class Node : public NodeHandle<NodeBase> {
 public:
  using NodeHandle::NodeHandle;
};

/// Introduces variable `name`, visible to the rest of the enclosing block. A Let inside
/// a loop body is re-evaluated every iteration.
struct Let : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Let;
  Let(std::string name, Expr value) : NodeBase(kKind), name(std::move(name)), value(std::move(value)) {}
  const std::string name;
  const Expr value;
  static Node make(std::string name, Expr value);
};

/// Overwrites a variable introduced by an enclosing Let (same type required).
struct Assign : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Assign;
  Assign(std::string name, Expr value) : NodeBase(kKind), name(std::move(name)), value(std::move(value)) {}
  const std::string name;
  const Expr value;
  static Node make(std::string name, Expr value);
};

/// `buffer[index] = value`; index is u32 in elements, value has the element type.
struct Store : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Store;
  Store(std::string buffer, Expr index, Expr value)
      : NodeBase(kKind), buffer(std::move(buffer)), index(std::move(index)), value(std::move(value)) {}
  const std::string buffer;
  const Expr index, value;
  static Node make(std::string buffer, Expr index, Expr value);
};

/// Both bodies are Blocks (possibly empty). `cond` is bool and may differ per lane.
struct If : NodeBase {
  static constexpr NodeKind kKind = NodeKind::If;
  If(Expr cond, Node then_body, Node else_body)
      : NodeBase(kKind), cond(std::move(cond)), then_body(std::move(then_body)), else_body(std::move(else_body)) {}
  const Expr cond;
  const Node then_body, else_body;
  static Node make(Expr cond, Node then_body, Node else_body = Node());
};

/// `for var in [from, to)` with step 1; `from`/`to` are evaluated once on entry and
/// may differ per lane. The loop variable has their (integer) type.
struct Loop : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Loop;
  Loop(std::string var, Expr from, Expr to, Node body)
      : NodeBase(kKind), var(std::move(var)), from(std::move(from)), to(std::move(to)), body(std::move(body)) {}
  const std::string var;
  const Expr from, to;
  const Node body;
  static Node make(std::string var, Expr from, Expr to, Node body);
};

struct Block : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Block;
  explicit Block(std::vector<Node> stmts) : NodeBase(kKind), stmts(std::move(stmts)) {}
  const std::vector<Node> stmts;
  static Node make(std::vector<Node> stmts = {});
};

/// Provenance: the statements an op constructor emitted, tagged with its id.
struct Region : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Region;
  Region(std::string op_id, Node body) : NodeBase(kKind), op_id(std::move(op_id)), body(std::move(body)) {}
  const std::string op_id;
  const Node body;
  static Node make(std::string op_id, Node body);
};

/// Workgroup-wide execution and memory barrier (`bar.sync 0`).
struct Barrier : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Barrier;
  Barrier() : NodeBase(kKind) {}
  static Node make();
};

/// Ends the invocation (PTX `ret`); it takes no further part in subgroup operations.
struct Return : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Return;
  Return() : NodeBase(kKind) {}
  static Node make();
};

/// Wraps `node` in a Block unless it already is one (undefined -> empty Block).
Node as_block(const Node& node);

}  // namespace quantc::ir
