// The quantc IR: immutable expression and statement nodes behind cheap handles.
//
// Every node kind is listed once in QUANTC_EXPR_NODES / QUANTC_STMT_NODES so the kind
// enums, the visitor, the mutator and the printer cannot drift apart (Halide's IR.h is
// the model). Nodes are plain structs built through validating `make` factories that
// infer the result type and throw IRError (naming the operands) on ill-typed input.
//
// Semantics (shared by the reference interpreter, the PTX emitter and every pass; the
// scalar arithmetic has one definition, ir/Arithmetic.h):
// - Integers wrap modulo 2^bits. Div/Rem are truncating; division by zero is an error
//   in the interpreter. Shl/Shr by >= the bit width give 0 (Shr of a signed negative
//   value gives -1), as PTX's clamped `shl`/`shr` do. Shr is arithmetic for signed types.
// - Floats are IEEE binary16 (f16), bfloat16 (bf16), binary32 and binary64 with
//   round-to-nearest-even on every operation, as PTX's `add.rn.f16x2` or
//   `fma.rn.bf16x2` define them; Add, Sub and Mul are never contracted into an FMA
//   (only `Fma` fuses, with one rounding). The -O2 pipeline's first pass,
//   lower::contract_fma, rewrites f32/f64 `a*b + c` into Fma (--fp-contract=off
//   keeps them apart), so an optimized program's rounding is that of its rewritten IR. A NaN result is the format's canonical NaN
//   (0x7fff, 0x7fffffff, ...); Neg and Abs flip or clear the sign bit only; Round (f32
//   and f64 scalars) is the nearest integral value, ties to even (cvt.rni). Min/Max
//   return the non-NaN operand when exactly one is NaN (PTX `min.f32`) and order -0
//   below +0. Ne is true when either operand is NaN; the other comparisons are false then.
// - Cast: float -> integer rounds toward zero and saturates (NaN -> 0), as `cvt.rzi.sat`
//   does; integer -> float and float -> narrower float round to nearest even; integer
//   -> integer truncates or extends by the source's signedness; x -> bool is `x != 0`.
//   Bitcast reinterprets the bits of a value as another type of the same width.
// - Vectors (ir/Type.h) hold 2 or 4 lanes; lane 0 is the lowest address in memory and
//   the low bits of a packed register. Arithmetic, Cast, Select and Fma on vectors act
//   lane by lane with the scalar rules (a Select's condition is one bool for all lanes).
//   A vector Load/Store reads/writes `lanes` consecutive elements starting at `index`
//   (in elements); `alignment` (bytes) is what the program guarantees about the byte
//   address, which the verifier must be able to prove (buffers start 256-byte aligned).
// - Subgroups are 32 consecutive invocations of a workgroup. SubgroupShuffle reads
//   `value` from lane `lane` (a lane >= 32 reads the invocation's own value, as
//   `shfl.sync.idx` does); SubgroupReduce combines all 32 lanes with a butterfly in the
//   order 16, 8, 4, 2, 1 (`shfl.sync.bfly`), so every lane gets the same bits.
//   SubgroupBallot gives a u32 with bit i set when lane i's condition holds. All three
//   require the whole subgroup to be active (undefined behaviour on hardware otherwise).
// - Memory is shared by the whole grid, and invocations of different workgroups run in
//   no defined order. AtomicAdd is the one expression with a side effect: it adds to a
//   u32/i32 buffer element indivisibly at device scope and yields the element's old
//   value (relaxed ordering, PTX `atom.relaxed.gpu.global.add`); it may only be the whole
//   value of a Let. Fence orders the invocation's global accesses before it ahead of
//   those after it for every observer in the grid (`fence.acq_rel.gpu`, PTX ISA memory
//   consistency model): a store, a Fence, then an AtomicAdd another workgroup reads and
//   follows with its own Fence makes the store visible to that workgroup's later loads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/Operators.h"
#include "ir/Type.h"

namespace quantc::ir {

/// Raised for ill-formed IR: a type mismatch, an undeclared name, an invalid operand.
class IRError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The deepest IR quantc builds: the most nodes (statements and expressions, the Blocks
/// of If/Loop/Region bodies included) on one path from a statement down to a leaf
/// expression. Every node records its depth when made and every `make` factory refuses
/// a deeper node (IRError, see nesting_error), so the parser, the builder and every pass
/// are held to it, and every recursive walker (printer, verifier, passes, interpreter,
/// emitter, even the destructor chain) can rely on it: their stack use is bounded by it
/// times their deepest frame. Shipped ops reach about 30 levels; a nested `if` costs two
/// (If and its Block), a binary operator one. 256, as clang's default -fbracket-depth:
/// ample for generated kernels, and shallow enough that a program at the limit goes
/// through every walker within an 8 MiB stack even under AddressSanitizer, whose frames
/// are several times larger (the parser's reach about 10 KiB a level there).
inline constexpr std::uint32_t kMaxNestingDepth = 256;

/// The message for a node `depth` levels deep (> kMaxNestingDepth): what is too deep
/// and how to fix it.
std::string nesting_error(std::uint32_t depth);

#define QUANTC_EXPR_NODES(X) \
  X(Literal)                 \
  X(Var)                     \
  X(Load)                    \
  X(Binary)                  \
  X(Unary)                   \
  X(Cast)                    \
  X(Bitcast)                 \
  X(Select)                  \
  X(Fma)                     \
  X(MakeVector)              \
  X(ExtractLane)             \
  X(InsertLane)              \
  X(Permute)                 \
  X(BufferLength)            \
  X(Builtin)                 \
  X(SubgroupShuffle)         \
  X(SubgroupReduce)          \
  X(SubgroupBallot)          \
  X(SubgroupMma)             \
  X(SubgroupLoadMatrix)      \
  X(Lookup)                  \
  X(AtomicAdd)

#define QUANTC_STMT_NODES(X) \
  X(Let)                     \
  X(Assign)                  \
  X(Store)                   \
  X(If)                      \
  X(Loop)                    \
  X(Block)                   \
  X(Region)                  \
  X(Barrier)                 \
  X(Fence)                   \
  X(AsyncCopy)               \
  X(AsyncCommit)             \
  X(AsyncWait)               \
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

/// Invocations per subgroup (a PTX warp); every subgroup operation spans all of them.
inline constexpr std::uint32_t kSubgroupSize = 32;

enum class SubgroupReduceOp : std::uint8_t { Add, Max, Min };
/// InvocationId = WorkgroupId * workgroup_size + LocalId, per axis (0 = x, 1 = y, 2 = z).
enum class BuiltinKind : std::uint8_t { InvocationId, WorkgroupId, LocalId, SubgroupLocalId, SubgroupSize };

std::string_view to_string(SubgroupReduceOp op);  // "add", "max", "min"
std::string_view to_string(BuiltinKind kind);     // "invocation_id", ...
std::string_view to_string(ExprKind kind);
std::string_view to_string(NodeKind kind);

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

/// Hashes used by the expression nodes' structural hashes.
std::uint64_t name_hash(const std::string& name);
std::uint64_t table_hash(const std::vector<std::uint64_t>& table);

/// Every expression node also carries facts about the whole subtree it roots, computed
/// once by its constructor from its operands' facts, so that passes read them in O(1)
/// instead of walking the subtree again: a structural hash (equal for structurally
/// equal trees, see analysis::structurally_equal), the number of expression nodes, and
/// whether the subtree may trap (analysis::may_trap), holds a subgroup operation or
/// holds a load.
struct ExprBase {
  ExprBase(ExprKind kind, Type type) : kind(kind), type(type) {}
  virtual ~ExprBase() = default;
  const ExprKind kind;
  const Type type;

  std::uint64_t structural_hash() const { return hash_; }
  std::uint32_t subtree_size() const { return size_; }
  bool subtree_may_trap() const { return (flags_ & kMayTrap) != 0; }
  bool subtree_has_subgroup_op() const { return (flags_ & kHasSubgroupOp) != 0; }
  bool subtree_has_load() const { return (flags_ & kHasLoad) != 0; }
  /// The subtree writes memory (an AtomicAdd): it must run exactly where and as often
  /// as the program says, so passes never duplicate, merge, move or drop it.
  bool subtree_has_side_effect() const { return (flags_ & kHasSideEffect) != 0; }
  /// Nodes on the longest path from this one to a leaf (1 for a leaf).
  std::uint32_t nesting_depth() const { return depth_; }

 protected:
  enum : std::uint8_t { kMayTrap = 1, kHasSubgroupOp = 2, kHasLoad = 4, kHasSideEffect = 8 };
  /// Combines the node's own `payload` (operator, literal bits, name hash, ...) and
  /// `flags` with its operands' facts; each constructor calls it once.
  void summarize(std::uint64_t payload, std::uint8_t flags, std::initializer_list<const ExprBase*> operands = {});
  void summarize_operand(const ExprBase* operand);

 private:
  std::uint64_t hash_ = 0;
  std::uint32_t size_ = 1;
  std::uint32_t depth_ = 1;
  std::uint8_t flags_ = 0;
};

/// Handle to an immutable expression node; every expression has a value type.
class Expr : public NodeHandle<ExprBase> {
 public:
  using NodeHandle::NodeHandle;
  Type type() const { return node_->type; }
};

/// A scalar constant. `bits` holds the value in the type's own encoding: integers zero-
/// or sign-extended to 64 bits, f16/bf16/f32/f64 as their IEEE bit patterns, bool as 0/1.
/// (A vector constant is a MakeVector of literals.)
struct Literal : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Literal;
  Literal(ScalarType type, std::uint64_t bits) : ExprBase(kKind, type), bits(bits) { summarize(bits, 0); }
  const std::uint64_t bits;
  ScalarType scalar() const { return type.element(); }
  static Expr make(ScalarType type, std::uint64_t bits);  // canonicalises `bits`
  static Expr u32(std::uint32_t value) { return make(ScalarType::U32, value); }
  static Expr i32(std::int32_t value);
  static Expr u64(std::uint64_t value) { return make(ScalarType::U64, value); }
  static Expr f32(float value);
  static Expr f64(double value);
  static Expr boolean(bool value) { return make(ScalarType::Bool, value ? 1 : 0); }
  /// Any integer or float type from a double (rounded to nearest even for floats,
  /// truncated toward zero for integers); convenient for folding and tests.
  static Expr from_double(ScalarType type, double value);
  double as_double() const;        // numeric value (integers exact up to 2^53)
  std::int64_t as_int64() const;   // integers and bool; floats truncate
  bool is_zero() const;            // +0/-0 for floats
  bool is_one() const;
};

/// A variable introduced by Let or Loop; the type is the binding's type.
struct Var : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Var;
  Var(Type type, std::string name) : ExprBase(kKind, type), name(std::move(name)) { summarize(name_hash(this->name), 0); }
  const std::string name;
  static Expr make(Type type, std::string name);
};

/// `type.lanes()` consecutive elements of buffer `buffer` starting at element `index`
/// (u32, in elements); `type.element()` is the buffer's element type. `alignment` is the
/// byte alignment the program guarantees for the access: the element size for a scalar,
/// at least the element size and at most lanes * element size for a vector (0 in make
/// means the natural lanes * element size). PTX needs natural alignment for .v2/.v4
/// accesses; legalization splits an under-aligned vector access.
///
/// A reinterpreting load (`reinterpret`, text `w[i].as<u32x4>`) reads a buffer or workgroup
/// array of 8- or 16-bit elements (u8, i8, u16, f16, bf16) as little-endian u32 words: `type` is u32,
/// u32x2 or u32x4, and the load reads the 4 * lanes bytes starting at element `index`
/// (the index still counts the buffer's elements: bytes, or 2-byte halves), lane 0 from
/// the lowest four. Its alignment is always the natural 4 * lanes bytes, which the
/// verifier must prove (`index` times the element size a multiple of 4 * lanes, buffers
/// start 256-byte aligned); every byte of the span must lie in the buffer (the
/// interpreter reports an out-of-bounds load otherwise, and analysis::proven_safe asks
/// for the whole span). It lets 16-byte `ld.global.v4.u32` stream u8/i8 weights and
/// f16/bf16 activations while the buffer keeps the element type its users pass.
/// Buffer elements an access of `type` touches in a buffer of `buffer_element`s: the
/// lanes, or for a reinterpreting access (Load, Store) its 4 * lanes bytes.
unsigned elements_accessed(Type type, bool reinterpret, ScalarType buffer_element);

struct Load : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Load;
  Load(Type type, std::string buffer, Expr index, unsigned alignment, bool reinterpret)
      : ExprBase(kKind, type),
        buffer(std::move(buffer)),
        index(std::move(index)),
        alignment(alignment),
        reinterpret(reinterpret) {
    summarize(name_hash(this->buffer) ^ alignment ^ (reinterpret ? 0x9e3779b97f4a7c15ull : 0), kMayTrap | kHasLoad,
              {this->index.get()});
  }
  const std::string buffer;
  const Expr index;
  const unsigned alignment;  // bytes
  const bool reinterpret;    // u32 words read from an 8- or 16-bit buffer (see above)
  /// Buffer elements the load reads, for a buffer of `buffer_element`s: the lanes, or
  /// for a reinterpreting load the 4 * lanes bytes.
  unsigned elements_read(ScalarType buffer_element) const;
  static Expr make(Type type, std::string buffer, Expr index, unsigned alignment = 0, bool reinterpret = false);
};

struct Binary : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Binary;
  Binary(Type type, BinaryOp op, Expr lhs, Expr rhs)
      : ExprBase(kKind, type), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {
    summarize(static_cast<std::uint64_t>(op), divisor_may_trap() ? kMayTrap : 0, {this->lhs.get(), this->rhs.get()});
  }
  const BinaryOp op;
  const Expr lhs, rhs;
  /// A Div/Rem whose divisor is not a non-zero literal (it may divide by zero).
  bool divisor_may_trap() const;
  /// Operands must have the same type (shift amounts too); logical ops need bool;
  /// bitwise ops and Rem need integers (bitwise also accept bool). On vectors only the
  /// arithmetic, bitwise and shift operators are defined (lane by lane), not comparisons.
  static Expr make(BinaryOp op, Expr lhs, Expr rhs);
};

struct Unary : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Unary;
  Unary(Type type, UnaryOp op, Expr operand) : ExprBase(kKind, type), op(op), operand(std::move(operand)) {
    summarize(static_cast<std::uint64_t>(op), 0, {this->operand.get()});
  }
  const UnaryOp op;
  const Expr operand;
  static Expr make(UnaryOp op, Expr operand);
};

/// Value conversion (see the semantics above); on vectors lane by lane, so the lane
/// counts must match (f32x2 -> f16x2 is PTX's cvt.rn.f16x2.f32).
struct Cast : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Cast(Type type, Expr value) : ExprBase(kKind, type), value(std::move(value)) { summarize(0, 0, {this->value.get()}); }
  const Expr value;
  static Expr make(Type type, Expr value);
};

/// The bits of `value` read as `type` (same total width, neither bool): u32 <-> f32,
/// u32 <-> f16x2, u32x2 <-> u64, f16 <-> u16, ...
struct Bitcast : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Bitcast;
  Bitcast(Type type, Expr value) : ExprBase(kKind, type), value(std::move(value)) { summarize(0, 0, {this->value.get()}); }
  const Expr value;
  static Expr make(Type type, Expr value);
};

/// `cond ? if_true : if_false`; both branches are evaluated (no short circuit). `cond`
/// is a scalar bool; the branches may be vectors.
struct Select : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Select;
  Select(Type type, Expr cond, Expr if_true, Expr if_false)
      : ExprBase(kKind, type), cond(std::move(cond)), if_true(std::move(if_true)), if_false(std::move(if_false)) {
    summarize(0, 0, {this->cond.get(), this->if_true.get(), this->if_false.get()});
  }
  const Expr cond, if_true, if_false;
  static Expr make(Expr cond, Expr if_true, Expr if_false);
};

/// `a * b + c` with a single rounding (floats and float vectors).
struct Fma : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Fma;
  Fma(Type type, Expr a, Expr b, Expr c)
      : ExprBase(kKind, type), a(std::move(a)), b(std::move(b)), c(std::move(c)) {
    summarize(0, 0, {this->a.get(), this->b.get(), this->c.get()});
  }
  const Expr a, b, c;
  static Expr make(Expr a, Expr b, Expr c);
};

/// A vector from its lanes, lane 0 first: 2 or 4 scalars of one type forming a valid
/// vector type (ir/Type.h).
struct MakeVector : ExprBase {
  static constexpr ExprKind kKind = ExprKind::MakeVector;
  MakeVector(Type type, std::vector<Expr> lanes) : ExprBase(kKind, type), lanes(std::move(lanes)) {
    summarize(this->lanes.size(), 0);
    for (const Expr& lane : this->lanes) summarize_operand(lane.get());
  }
  const std::vector<Expr> lanes;
  static Expr make(std::vector<Expr> lanes);
  /// `value` in every lane of a `lanes`-lane vector.
  static Expr broadcast(Expr value, unsigned lanes);
};

/// Lane `lane` (a constant < lanes) of a vector.
struct ExtractLane : ExprBase {
  static constexpr ExprKind kKind = ExprKind::ExtractLane;
  ExtractLane(Type type, Expr vector, unsigned lane) : ExprBase(kKind, type), vector(std::move(vector)), lane(lane) {
    summarize(lane, 0, {this->vector.get()});
  }
  const Expr vector;
  const unsigned lane;
  static Expr make(Expr vector, unsigned lane);
};

/// `vector` with lane `lane` (a constant < lanes) replaced by the scalar `value`.
struct InsertLane : ExprBase {
  static constexpr ExprKind kKind = ExprKind::InsertLane;
  InsertLane(Type type, Expr vector, unsigned lane, Expr value)
      : ExprBase(kKind, type), vector(std::move(vector)), lane(lane), value(std::move(value)) {
    summarize(lane, 0, {this->vector.get(), this->value.get()});
  }
  const Expr vector;
  const unsigned lane;
  const Expr value;
  static Expr make(Expr vector, unsigned lane, Expr value);
};

/// PTX `prmt.b32` (default mode, PTX ISA 9.7.8.7): byte i of the u32 result is byte
/// `selector[4i+2 : 4i]` of the 8-byte value {b : a} (a is bytes 0..3, b bytes 4..7),
/// replaced by 0x00 or 0xff (that byte's sign) when bit 4i+3 of `selector` is set.
/// All three operands are u32.
struct Permute : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Permute;
  Permute(Expr a, Expr b, Expr selector)
      : ExprBase(kKind, ScalarType::U32), a(std::move(a)), b(std::move(b)), selector(std::move(selector)) {
    summarize(0, 0, {this->a.get(), this->b.get(), this->selector.get()});
  }
  const Expr a, b, selector;
  static Expr make(Expr a, Expr b, Expr selector);
};

/// The element count of a buffer, as u32.
struct BufferLength : ExprBase {
  static constexpr ExprKind kKind = ExprKind::BufferLength;
  explicit BufferLength(std::string buffer) : ExprBase(kKind, ScalarType::U32), buffer(std::move(buffer)) {
    summarize(name_hash(this->buffer), 0);
  }
  const std::string buffer;
  static Expr make(std::string buffer);
};

/// Launch coordinates, all u32. `axis` is 0..2 for the id kinds and 0 otherwise.
struct Builtin : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Builtin;
  Builtin(BuiltinKind builtin, unsigned axis) : ExprBase(kKind, ScalarType::U32), builtin(builtin), axis(axis) {
    summarize(static_cast<std::uint64_t>(builtin) * 4 + axis, 0);
  }
  const BuiltinKind builtin;
  const unsigned axis;
  static Expr make(BuiltinKind builtin, unsigned axis = 0);
};

struct SubgroupShuffle : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupShuffle;
  SubgroupShuffle(Type type, Expr value, Expr lane)
      : ExprBase(kKind, type), value(std::move(value)), lane(std::move(lane)) {
    summarize(0, kMayTrap | kHasSubgroupOp, {this->value.get(), this->lane.get()});
  }
  const Expr value, lane;
  /// `value` is any 32-bit type (f16x2 included); `lane` is u32.
  static Expr make(Expr value, Expr lane);
};

struct SubgroupReduce : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupReduce;
  SubgroupReduce(Type type, SubgroupReduceOp op, Expr value)
      : ExprBase(kKind, type), op(op), value(std::move(value)) {
    summarize(static_cast<std::uint64_t>(op), kMayTrap | kHasSubgroupOp, {this->value.get()});
  }
  const SubgroupReduceOp op;
  const Expr value;
  /// `value` is f32, u32 or i32.
  static Expr make(SubgroupReduceOp op, Expr value);
};

struct SubgroupBallot : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupBallot;
  explicit SubgroupBallot(Expr cond) : ExprBase(kKind, ScalarType::U32), cond(std::move(cond)) {
    summarize(0, kMayTrap | kHasSubgroupOp, {this->cond.get()});
  }
  const Expr cond;
  static Expr make(Expr cond);
};

/// The subgroup's 16x8 tile D = C + A·B of the tensor cores' m16n8k16 shape (ir/Mma.h
/// defines which invocation holds which element and what the sum computes): `a` is u32x4,
/// this invocation's 8 elements of the 16x16 A (two `input` values per word, low half
/// first), `b` u32x2, its 4 elements of the 16x8 B, `c` f32x4, its 4 elements of the 16x8
/// C; the result is f32x4, its 4 elements of D. `input` is F16 or BF16. Like every subgroup
/// operation it needs the whole subgroup active. PTX: mma.sync.aligned.m16n8k16.row.col
/// (sm_80+).
struct SubgroupMma : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupMma;
  SubgroupMma(ScalarType input, Expr a, Expr b, Expr c)
      : ExprBase(kKind, Type(ScalarType::F32, 4)), input(input), a(std::move(a)), b(std::move(b)), c(std::move(c)) {
    summarize(static_cast<std::uint64_t>(input), kMayTrap | kHasSubgroupOp,
              {this->a.get(), this->b.get(), this->c.get()});
  }
  const ScalarType input;
  const Expr a, b, c;
  static Expr make(ScalarType input, Expr a, Expr b, Expr c);
};

/// Loads `matrices` (1, 2 or 4) 8x8 matrices of 16-bit elements from workgroup array
/// `array` across the subgroup, in the fragment layout mma reads (ir/Mma.h,
/// load_matrix_source): invocation 8i + r gives in `index` (u32, in the array's elements)
/// where row r of matrix i starts: 16 contiguous bytes, 16-byte aligned (the verifier must
/// prove it), read as eight 16-bit elements whatever the array's 16- or 32-bit element
/// type (a 32-bit array holds raw pairs, e.g. packed codes); invocations 8 * matrices and
/// up give an index that is not used.
/// The result is u32 (one matrix), u32x2 or u32x4: word i holds two elements of matrix i,
/// low half first; `transpose` takes them down a column instead of along a row. Needs the
/// whole subgroup active. PTX: ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 (sm_75+).
struct SubgroupLoadMatrix : ExprBase {
  static constexpr ExprKind kKind = ExprKind::SubgroupLoadMatrix;
  SubgroupLoadMatrix(Type type, std::string array, Expr index, unsigned matrices, bool transpose)
      : ExprBase(kKind, type), array(std::move(array)), index(std::move(index)), matrices(matrices),
        transpose(transpose) {
    summarize(name_hash(this->array) ^ (matrices << 1) ^ (transpose ? 1 : 0), kMayTrap | kHasSubgroupOp | kHasLoad,
              {this->index.get()});
  }
  const std::string array;
  const Expr index;
  const unsigned matrices;
  const bool transpose;
  static Expr make(std::string array, Expr index, unsigned matrices, bool transpose = false);
};

/// `table[index]` for a constant table held in the program (not in memory): legalization
/// expands it into a Select tree on the index bits, so it suits small register code
/// books such as the 16-entry NF4 table. `table` holds Literal-encoded bits of the
/// scalar `type`; `index` is u32 and must be < table.size() (an interpreter error otherwise).
struct Lookup : ExprBase {
  static constexpr ExprKind kKind = ExprKind::Lookup;
  Lookup(ScalarType type, std::vector<std::uint64_t> table, Expr index)
      : ExprBase(kKind, type), table(std::move(table)), index(std::move(index)) {
    summarize(table_hash(this->table), index_may_trap() ? kMayTrap : 0, {this->index.get()});
  }
  const std::vector<std::uint64_t> table;
  const Expr index;
  ScalarType scalar() const { return type.element(); }
  /// The index is not a literal within the table.
  bool index_may_trap() const;
  static Expr make(ScalarType type, std::vector<std::uint64_t> table, Expr index);
};

/// `buffer[index] += value` as one indivisible read-modify-write at device scope,
/// yielding the element's value before the add (PTX `atom.global.add.u32`, relaxed
/// ordering: order it against other accesses with Fence). `buffer` is a written
/// global buffer of u32 or i32 elements (wrapping add), `value` has that type, `index`
/// is u32 in elements. It must be the whole value of a Let (the verifier checks), so
/// that its side effect happens exactly once where the Let stands.
struct AtomicAdd : ExprBase {
  static constexpr ExprKind kKind = ExprKind::AtomicAdd;
  AtomicAdd(Type type, std::string buffer, Expr index, Expr value)
      : ExprBase(kKind, type), buffer(std::move(buffer)), index(std::move(index)), value(std::move(value)) {
    summarize(name_hash(this->buffer) ^ 0xa70a1c, kMayTrap | kHasLoad | kHasSideEffect,
              {this->index.get(), this->value.get()});
  }
  const std::string buffer;
  const Expr index, value;
  static Expr make(std::string buffer, Expr index, Expr value);
};

// ---------------------------------------------------------------------------------
// Statements

struct NodeBase {
  explicit NodeBase(NodeKind kind) : kind(kind) {}
  virtual ~NodeBase() = default;
  const NodeKind kind;
  /// Nodes (statements and expressions) on the longest path from this statement to a
  /// leaf expression (1 for Barrier and Return).
  std::uint32_t nesting_depth() const { return depth_; }

 protected:
  /// Sets the depth from the node's operands; each constructor calls it once.
  void nest(std::initializer_list<const ExprBase*> operands, std::initializer_list<const NodeBase*> bodies = {});
  void nest_body(const NodeBase* body);

 private:
  std::uint32_t depth_ = 1;
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
  Let(std::string name, Expr value) : NodeBase(kKind), name(std::move(name)), value(std::move(value)) {
    nest({this->value.get()});
  }
  const std::string name;
  const Expr value;
  static Node make(std::string name, Expr value);
};

/// Overwrites a variable introduced by an enclosing Let (same type required).
struct Assign : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Assign;
  Assign(std::string name, Expr value) : NodeBase(kKind), name(std::move(name)), value(std::move(value)) {
    nest({this->value.get()});
  }
  const std::string name;
  const Expr value;
  static Node make(std::string name, Expr value);
};

/// `buffer[index .. index + lanes) = value`; index is u32 in elements, value has the
/// element type (or a vector of it); `alignment` as for Load (0 in make: natural).
///
/// A reinterpreting store (`reinterpret`, text `w[i].as<u32> = v`) is the mirror of a
/// reinterpreting Load: `value` is u32, u32x2 or u32x4 and its 4 * lanes bytes, lane 0's
/// little-endian word first, overwrite the buffer's 8- or 16-bit elements from element
/// `index` (the index still counts the buffer's elements). Its alignment is the natural
/// 4 * lanes bytes, which the verifier must prove; every byte of the span must lie in the
/// buffer. It lets one `st.global.u32` write four packed u8 bytes (a quantizer's eight
/// 4-bit codes) while the buffer keeps the element type its users read.
struct Store : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Store;
  Store(std::string buffer, Expr index, Expr value, unsigned alignment, bool reinterpret)
      : NodeBase(kKind), buffer(std::move(buffer)), index(std::move(index)), value(std::move(value)),
        alignment(alignment), reinterpret(reinterpret) {
    nest({this->index.get(), this->value.get()});
  }
  const std::string buffer;
  const Expr index, value;
  const unsigned alignment;  // bytes
  const bool reinterpret;    // u32 words written over an 8- or 16-bit buffer (see above)
  /// Buffer elements the store writes, for a buffer of `buffer_element`s: the lanes, or
  /// for a reinterpreting store the 4 * lanes bytes.
  unsigned elements_written(ScalarType buffer_element) const;
  static Node make(std::string buffer, Expr index, Expr value, unsigned alignment = 0, bool reinterpret = false);
};

/// Both bodies are Blocks (possibly empty). `cond` is bool and may differ per lane.
struct If : NodeBase {
  static constexpr NodeKind kKind = NodeKind::If;
  If(Expr cond, Node then_body, Node else_body)
      : NodeBase(kKind), cond(std::move(cond)), then_body(std::move(then_body)), else_body(std::move(else_body)) {
    nest({this->cond.get()}, {this->then_body.get(), this->else_body.get()});
  }
  const Expr cond;
  const Node then_body, else_body;
  static Node make(Expr cond, Node then_body, Node else_body = Node());
};

/// `for var in [from, to)` with step 1; `from`/`to` are evaluated once on entry and
/// may differ per lane. The loop variable has their (integer) type.
struct Loop : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Loop;
  Loop(std::string var, Expr from, Expr to, Node body)
      : NodeBase(kKind), var(std::move(var)), from(std::move(from)), to(std::move(to)), body(std::move(body)) {
    nest({this->from.get(), this->to.get()}, {this->body.get()});
  }
  const std::string var;
  const Expr from, to;
  const Node body;
  static Node make(std::string var, Expr from, Expr to, Node body);
};

struct Block : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Block;
  explicit Block(std::vector<Node> stmts) : NodeBase(kKind), stmts(std::move(stmts)) {
    for (const Node& stmt : this->stmts) nest_body(stmt.get());
  }
  const std::vector<Node> stmts;
  static Node make(std::vector<Node> stmts = {});
};

/// Provenance: the statements an op constructor emitted, tagged with its id.
struct Region : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Region;
  Region(std::string op_id, Node body) : NodeBase(kKind), op_id(std::move(op_id)), body(std::move(body)) {
    nest({}, {this->body.get()});
  }
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

/// Device-scope memory fence (PTX `fence.acq_rel.gpu`): this invocation's global loads
/// and stores before it are ordered before those after it, as observed by any
/// invocation of the grid that synchronizes with it (through an AtomicAdd and its own
/// Fence). Executes nothing else; no workgroup barrier.
struct Fence : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Fence;
  Fence() : NodeBase(kKind) {}
  static Node make();
};

/// Starts an asynchronous copy of `bytes` (4, 8 or 16) bytes from global buffer `buffer`
/// at element `buffer_index` to workgroup array `array` at element `array_index` (each
/// index in its own side's elements, which may differ in type: the bytes move as they are;
/// both addresses aligned to `bytes`, which the verifier must prove). The
/// copy belongs to the invocation's open group, which AsyncCommit closes; the data is in
/// the array only after an AsyncWait that covers its group, and visible to the other
/// invocations only after a Barrier that follows it. Reading the destination (or writing
/// the source) before then is a race: the reference interpreter copies at once, the
/// emulator at the wait, so such a program does not give the same bits on both. PTX
/// cp.async.{ca,cg}.shared.global (sm_80+; .cg for 16 bytes: L2 only, as Marlin streams).
struct AsyncCopy : NodeBase {
  static constexpr NodeKind kKind = NodeKind::AsyncCopy;
  AsyncCopy(std::string array, Expr array_index, std::string buffer, Expr buffer_index, unsigned bytes)
      : NodeBase(kKind), array(std::move(array)), array_index(std::move(array_index)), buffer(std::move(buffer)),
        buffer_index(std::move(buffer_index)), bytes(bytes) {
    nest({this->array_index.get(), this->buffer_index.get()});
  }
  const std::string array;
  const Expr array_index;
  const std::string buffer;
  const Expr buffer_index;
  const unsigned bytes;
  static Node make(std::string array, Expr array_index, std::string buffer, Expr buffer_index, unsigned bytes);
};

/// Closes the invocation's open group of AsyncCopy (PTX cp.async.commit_group).
struct AsyncCommit : NodeBase {
  static constexpr NodeKind kKind = NodeKind::AsyncCommit;
  AsyncCommit() : NodeBase(kKind) {}
  static Node make();
};

/// Waits until at most `pending` of the invocation's most recently committed groups are
/// still in flight: every older group's copies are in the array (PTX cp.async.wait_group).
struct AsyncWait : NodeBase {
  static constexpr NodeKind kKind = NodeKind::AsyncWait;
  explicit AsyncWait(unsigned pending) : NodeBase(kKind), pending(pending) {}
  const unsigned pending;
  static Node make(unsigned pending);
};

/// Ends the invocation (PTX `ret`); it takes no further part in subgroup operations.
struct Return : NodeBase {
  static constexpr NodeKind kKind = NodeKind::Return;
  Return() : NodeBase(kKind) {}
  static Node make();
};

/// Wraps `node` in a Block unless it already is one (undefined -> empty Block).
Node as_block(const Node& node);

/// The alignment a memory access of `type` states: `alignment`, or the natural
/// lanes * element size when `alignment` is 0.
unsigned natural_alignment(Type type);

}  // namespace quantc::ir
