// Internal to the reference interpreter: the compiled form of a program and the state
// of the workgroup being executed.
//
// Compilation resolves every variable to a register once; a register is one Word per
// invocation of the workgroup (`Machine::reg`). Expression nodes evaluate for a whole
// LaneSpan at a time and return a pointer to their result register, so Vars, literals
// and builtins cost nothing at run time (they return their register directly).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/LaneValues.h"

namespace quantc::runtime::reference::detail {

/// A program buffer as seen by the kernels: the host bytes behind it.
struct BufferView {
  std::string name;
  std::uint8_t* bytes = nullptr;
  std::uint32_t count = 0;  // elements
  ir::ScalarType element = ir::ScalarType::F32;
  unsigned element_size = 4;  // bytes
  bool shared = false;        // a workgroup array (Program::shared), not a global buffer
};

/// Dynamic lane-operation counts: each counter grows by the number of active lanes
/// that executed the operation.
struct Counters {
  std::uint64_t global_loads = 0;
  std::uint64_t global_stores = 0;
  std::uint64_t shared_loads = 0;   // loads from / stores to workgroup arrays
  std::uint64_t shared_stores = 0;
  std::uint64_t subgroup_shuffles = 0;
  std::uint64_t subgroup_reductions = 0;
  std::uint64_t subgroup_ballots = 0;
  std::uint64_t subgroup_mmas = 0;
  std::uint64_t arithmetic_ops = 0;
  std::vector<std::uint64_t> loads_per_buffer;   // indexed like Machine::buffers (arrays included)
  std::vector<std::uint64_t> stores_per_buffer;
};

/// Execution state of the workgroup being run.
struct Machine {
  std::uint32_t lanes = 0;  // invocations per workgroup
  std::array<std::uint32_t, 3> workgroup_size{1, 1, 1};
  std::array<std::uint32_t, 3> workgroup_id{0, 0, 0};
  std::vector<Word> registers;          // register r of lane l at r * lanes + l
  std::vector<std::uint8_t> returned;   // per lane: executed Return
  std::vector<BufferView> buffers;      // in binding order, then the workgroup arrays
  std::vector<std::vector<std::uint8_t>> shared;  // workgroup arrays' storage, zeroed per workgroup
  Counters counters;

  Word* reg(std::uint32_t index) { return registers.data() + std::size_t{index} * lanes; }
  /// "invocation (x, y, z) of workgroup (a, b, c)" for error messages.
  std::string describe_lane(std::uint32_t lane) const;
  /// Throws RuntimeError unless every subgroup that has an active lane in `lanes` has
  /// all 32 lanes active (and inside the workgroup). `op` is the printed IR.
  void require_full_subgroups(const LaneSpan& span, const ir::Expr& op) const;
};

struct ExprNode;
using EvalFn = const Word* (*)(const ExprNode& node, Machine& machine, const LaneSpan& lanes);

/// One compiled expression. `eval` is a kernel specialised for the node's kind, operand
/// types and operator, chosen once at compile time.
struct ExprNode {
  EvalFn eval = nullptr;
  ir::Expr source;                          // for error messages
  std::array<const ExprNode*, 4> operands{};  // evaluated before the node itself
  std::uint32_t result = 0;  // first register written (or, for Var/literal/builtin, read); words_of(type) in all
  std::uint32_t buffer = 0;                 // Load: index into Machine::buffers
  std::vector<Word> table;                  // Lookup: the constant table
  const Word* run(Machine& machine, const LaneSpan& lanes) const { return eval(*this, machine, lanes); }
};

/// Chooses the kernel of `node`; `source` must be set. Throws RuntimeError for an
/// expression kind / type combination the IR does not allow.
EvalFn select_kernel(const ir::Expr& source);

/// Typed helpers for Loop: the loop variable's type decides the comparison.
struct LoopKernels {
  /// Appends to `out` the lanes of `lanes` whose counter < limit.
  void (*filter_less)(const LaneSpan& lanes, const Word* counter, const Word* limit, std::vector<std::uint32_t>& out);
  /// counter += 1 (wrapping) for every lane of `lanes`.
  void (*increment)(const LaneSpan& lanes, Word* counter);
};
LoopKernels loop_kernels(ir::ScalarType type);

/// A LaneSpan over a sorted list of lane indices.
inline LaneSpan span_of(const std::vector<std::uint32_t>& lanes) {
  auto size = static_cast<std::uint32_t>(lanes.size());
  return LaneSpan{lanes.data(), size, size != 0 && lanes.back() == size - 1};
}

}  // namespace quantc::runtime::reference::detail
