// A small embedded language for writing IR by hand (op constructors, tests, examples).
//
//   ProgramBuilder program("scale_by_two");
//   BufferRef x = program.input("x", ScalarType::F32, n);
//   BufferRef y = program.output("y", ScalarType::F32, n);
//   program.launch({256, 1, 1}, {ceil_div(n, 256), 1, 1});
//   program.body([&](Body& body) {
//     Expr i = body.let("i", invocation_id(0));
//     body.if_then(i < n, [&](Body& then) { then.store(y, i, x[i] * 2.0f); });
//   });
//   Program p = program.build();   // runs the verifier
//
// Arithmetic operators accept a C++ number on either side and turn it into a literal
// of the other operand's type. Comparisons are the functions eq/ne and the operators
// < <= > >= (== is left to handle identity, as in Halide).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/Program.h"
#include "ir/Verifier.h"

namespace quantc::ir {

/// Ceiling division for dimension arithmetic; `divisor` must be > 0.
constexpr std::uint32_t ceil_div(std::uint32_t value, std::uint32_t divisor) {
  return value / divisor + (value % divisor != 0 ? 1 : 0);
}

/// A literal of `type` holding `value` (see Literal::from_double).
Expr literal(ScalarType type, double value);
Expr u32(std::uint32_t value);
Expr i32(std::int32_t value);
Expr f32(float value);
Expr f64(double value);
Expr boolean(bool value);

Expr invocation_id(unsigned axis);
Expr workgroup_id(unsigned axis);
Expr local_id(unsigned axis);
Expr subgroup_local_id();
Expr subgroup_size();

/// `value` as a literal of `type`'s element, broadcast to every lane of a vector type.
Expr literal_like(Type type, double value);

Expr cast(Type type, Expr value);
Expr bitcast(Type type, Expr value);
/// A vector from 2 or 4 scalars (lane 0 first), or one scalar in every lane.
Expr make_vector(std::vector<Expr> lanes);
Expr broadcast(Expr value, unsigned lanes);
Expr extract_lane(Expr vector, unsigned lane);
Expr insert_lane(Expr vector, unsigned lane, Expr value);
/// PTX prmt.b32 (see ir::Permute).
Expr permute(Expr a, Expr b, Expr selector);
Expr select(Expr cond, Expr if_true, Expr if_false);
Expr fma(Expr a, Expr b, Expr c);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr abs(Expr value);
/// The nearest integral value of an f32/f64, ties to even (Unary round, cvt.rni).
Expr round_even(Expr value);
Expr subgroup_shuffle(Expr value, Expr lane);
Expr subgroup_add(Expr value);
Expr subgroup_max(Expr value);
Expr subgroup_min(Expr value);
Expr subgroup_ballot(Expr cond);
/// The subgroup's m16n8k16 tile D = C + A·B (ir::SubgroupMma, ir/Mma.h): `a` u32x4, `b`
/// u32x2, `c` f32x4 fragments; `input` F16 or BF16.
Expr subgroup_mma(ScalarType input, Expr a, Expr b, Expr c);

// Binary operators. `double` operands become literals of the Expr operand's type
// (broadcast for vectors).
#define QUANTC_DECLARE_OPERATOR(symbol)           \
  Expr operator symbol(Expr lhs, Expr rhs);       \
  Expr operator symbol(Expr lhs, double rhs);     \
  Expr operator symbol(double lhs, Expr rhs);
QUANTC_DECLARE_OPERATOR(+)
QUANTC_DECLARE_OPERATOR(-)
QUANTC_DECLARE_OPERATOR(*)
QUANTC_DECLARE_OPERATOR(/)
QUANTC_DECLARE_OPERATOR(%)
QUANTC_DECLARE_OPERATOR(&)
QUANTC_DECLARE_OPERATOR(|)
QUANTC_DECLARE_OPERATOR(^)
QUANTC_DECLARE_OPERATOR(<<)
QUANTC_DECLARE_OPERATOR(>>)
QUANTC_DECLARE_OPERATOR(<)
QUANTC_DECLARE_OPERATOR(<=)
QUANTC_DECLARE_OPERATOR(>)
QUANTC_DECLARE_OPERATOR(>=)
#undef QUANTC_DECLARE_OPERATOR
Expr operator-(Expr value);
Expr operator!(Expr value);  // logical not (bool) / bitwise complement (integers)

/// A declared buffer; `buffer[index]` is a Load of its element type.
struct BufferRef {
  std::string name;
  ScalarType element = ScalarType::F32;
  Expr operator[](Expr index) const;
  Expr operator[](std::uint32_t index) const;
  /// `lanes` consecutive elements from `index` as one vector value; `alignment` in
  /// bytes (0: the natural lanes * element size), which the verifier must prove.
  Expr load(Expr index, unsigned lanes, unsigned alignment = 0) const;
  /// A reinterpreting load (ir::Load): `lanes` (1, 2, 4) little-endian u32 words from an
  /// 8- or 16-bit buffer or workgroup array (u8, i8, u16, f16, bf16) at element `index`, whose byte offset
  /// the verifier must prove a multiple of 4 * lanes.
  Expr load_words(Expr index, unsigned lanes) const;
};

/// ldmatrix: `matrices` (1, 2, 4) 8x8 tiles of 16-bit elements of the workgroup array
/// `array` (16- or 32-bit elements, rows of 16 bytes), this
/// invocation's row start at `index` (ir::SubgroupLoadMatrix).
Expr subgroup_load_matrix(const BufferRef& array, Expr index, unsigned matrices, bool transpose = false);

/// Collects the statements of one block.
class Body {
 public:
  using Builder = std::function<void(Body&)>;
  using LoopBuilder = std::function<void(Body&, Expr)>;

  /// Binds `name` to `value`; returns the variable.
  Expr let(const std::string& name, Expr value);
  /// `variable` must be a Var returned by `let`.
  void assign(const Expr& variable, Expr value);
  /// `value` (a scalar or vector of the element type) at `index`; `alignment` as for load.
  void store(const BufferRef& buffer, Expr index, Expr value, unsigned alignment = 0);
  /// A reinterpreting store (ir::Store): `value` (u32, u32x2, u32x4) as little-endian
  /// words over an 8- or 16-bit buffer from element `index`, whose byte offset the
  /// verifier must prove a multiple of 4 * lanes.
  void store_words(const BufferRef& buffer, Expr index, Expr value);
  void if_then(Expr cond, const Builder& then_builder);
  void if_then_else(Expr cond, const Builder& then_builder, const Builder& else_builder);
  /// `for var in [from, to)`; the loop body receives the loop variable.
  void loop(const std::string& var, Expr from, Expr to, const LoopBuilder& body_builder);
  void region(const std::string& op_id, const Builder& body_builder);
  void barrier();
  /// A device-scope fence (ir::Fence).
  void fence();
  /// cp.async of `bytes` (4, 8, 16) from `buffer`[buffer_index] to workgroup array
  /// `array`[array_index] (ir::AsyncCopy); async_commit closes the group, async_wait(n)
  /// waits until at most n committed groups are in flight.
  void async_copy(const BufferRef& array, Expr array_index, const BufferRef& buffer, Expr buffer_index, unsigned bytes);
  void async_commit();
  void async_wait(unsigned pending);
  /// Binds `name` to the old value of an atomic `buffer[index] += value` (ir::AtomicAdd;
  /// u32/i32 buffers); returns the variable. The add happens even if `name` is unused.
  Expr atomic_add(const std::string& name, const BufferRef& buffer, Expr index, Expr value);
  void return_();
  void append(Node stmt);

  Node build() const { return Block::make(stmts_); }

 private:
  std::vector<Node> stmts_;
};

/// Builds a Program: buffers get bindings 0, 1, 2, ... in declaration order.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name);
  BufferRef input(const std::string& name, ScalarType element, std::uint32_t count);
  BufferRef output(const std::string& name, ScalarType element, std::uint32_t count,
                   BufferAccess access = BufferAccess::ReadWrite);
  /// A workgroup array (Program::shared, PTX `.shared`): `count` elements per
  /// workgroup, no binding; load and store it like a buffer, a barrier between writers
  /// and readers.
  BufferRef shared(const std::string& name, ScalarType element, std::uint32_t count);
  /// Scratch device memory (BufferAccess::Scratch): a kernel parameter that is neither
  /// input nor output, zero-filled by the caller once and left zeroed by every launch.
  BufferRef scratch(const std::string& name, ScalarType element, std::uint32_t count);
  /// Declares the logical part of the output buffer named `name`.
  void set_output_byte_range(const std::string& name, ByteRange range);
  void launch(std::array<std::uint32_t, 3> workgroup_size, std::array<std::uint32_t, 3> workgroup_count);
  /// Asks for `workgroups` resident per SM at once (Program::min_resident_workgroups; 0:
  /// no request). build() rejects more than kMaxResidentInvocations threads.
  void min_resident_workgroups(std::uint32_t workgroups) { program_.min_resident_workgroups = workgroups; }
  /// Reserves `bytes` of shared memory a workgroup at launch (Program::reserved_shared_bytes;
  /// 0: none). build() rejects more than kMaxStaticSharedBytes with the declared arrays.
  void reserved_shared_bytes(std::uint32_t bytes) { program_.reserved_shared_bytes = bytes; }
  /// The grid's workgroups, invocations per workgroup and `.shared` bytes declared so far.
  std::uint64_t workgroups() const {
    return program_.workgroups();
  }
  std::uint32_t invocations_per_workgroup() const { return program_.invocations_per_workgroup(); }
  std::uint64_t static_shared_bytes() const { return program_.static_shared_bytes(); }
  void body(const Body::Builder& builder);
  /// Verifies and returns the program; throws IRError listing every problem.
  Program build(const VerifyOptions& options = {}) const;

 private:
  Program program_;
  Body body_;
};

}  // namespace quantc::ir
