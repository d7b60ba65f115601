// Value-range and divisibility analysis of unsigned integer expressions.
//
// A ValueRange is a fact that holds for every invocation of the launch: the value lies
// in [min, max] and is a multiple of `multiple_of`. Facts come from literals, the launch
// shape (local_id.x < workgroup_size.x, workgroup_id < workgroup_count, lanes < 32),
// loop bounds, `if (v < bound)` guards and interval arithmetic with wrap-around checks
// (an operation that may wrap gives the type's full range). It serves the simplifier
// (comparisons decided by ranges), LICM (loads proven in bounds) and sidecar hoisting
// (`lane < 32` because `lane = local % 32`).
//
// Only unsigned integer types (u8/u16/u32/u64) and bool get ranges; every other
// expression gets the full range of its type (callers check `is_known`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/Program.h"

namespace quantc::ir::analysis {

struct ValueRange {
  std::uint64_t min = 0;
  std::uint64_t max = ~std::uint64_t{0};
  /// Every value is a multiple of this (1 = nothing known; 0 never appears).
  std::uint64_t multiple_of = 1;

  static ValueRange full(Type type);
  static ValueRange constant(std::uint64_t value);
  bool is_constant() const { return min == max; }
  bool operator==(const ValueRange&) const = default;
};

/// Variable facts in scope while walking a program, plus the launch shape. Passes push
/// facts on entering a Let/Loop/If and pop them on leaving (RangeScope does both).
class RangeEnvironment {
 public:
  explicit RangeEnvironment(const Program& program);
  const Program& program() const { return program_; }
  /// The fact for variable `name`, or nullopt when nothing is known.
  std::optional<ValueRange> variable(const std::string& name) const;
  /// Records `range` for `name` until the matching pop().
  void push(const std::string& name, ValueRange range);
  /// Records that `name` (a never-assigned variable) holds `value`: its fact is
  /// range_of(value) under the facts in scope now, computed on the first query that
  /// needs it (most let values are never asked about), until the matching pop().
  void push_value(const std::string& name, Expr value);
  void pop();
  /// How many facts are in scope.
  std::size_t depth() const { return facts_.size(); }
  /// True when `name` is assigned somewhere in the program (its Let value is then not
  /// a fact about later uses).
  bool is_assigned(const std::string& name) const {
    return !assigned_.empty() && std::find(assigned_.begin(), assigned_.end(), name) != assigned_.end();
  }

 private:
  friend class RangeEvaluator;
  struct Fact {
    std::uint64_t hash;  // name_hash(name): lookups compare hashes before names
    std::string name;
    mutable std::optional<ValueRange> range;  // unset until asked for a pushed value
    Expr value;
  };
  /// The fact for `name` among the first `visible` facts.
  std::optional<ValueRange> variable(const std::string& name, std::size_t visible) const;
  /// The index of the fact for `name` among the first `visible` facts.
  std::optional<std::size_t> find(const std::string& name, std::size_t visible) const;
  /// Computes the range of the pushed value at `index` (and of the pushed values it
  /// depends on), without recursing along chains of variables.
  void resolve(std::size_t index) const;
  const Program& program_;
  std::vector<Fact> facts_;
  std::vector<std::string> assigned_;  // few: accumulators and flags
};

/// The range of `expr` given the facts in `environment`. Never fails: anything
/// unknown yields ValueRange::full(type).
ValueRange range_of(const Expr& expr, const RangeEnvironment& environment);

/// True when evaluating `expr` provably cannot fail given `environment`: every load's
/// index is below its buffer's count, every Div/Rem divisor is an unsigned value
/// proven non-zero, every Lookup index is within its table, and it holds no subgroup
/// operation (those must stay where the subgroup runs them).
bool proven_safe(const Expr& expr, const RangeEnvironment& environment);

/// Three-valued comparison outcome from ranges: true/false when the ranges decide
/// `lhs op rhs` for every invocation, nullopt otherwise. `op` must be a comparison on
/// unsigned integers or bool.
std::optional<bool> decide_comparison(BinaryOp op, const ValueRange& lhs, const ValueRange& rhs);

/// Facts a Let/Loop/If contributes to its body, so walkers share one definition:
/// - a Let of a never-assigned variable: range_of(value);
/// - a Loop variable: [from.min, to.max - 1] (nothing when the loop may not run);
/// - the then-body of `if (v < e)`, `if (v <= e)` and conjunctions `a && b`: v's
///   upper bound tightened (v a never-assigned variable).
/// Each returns the (name, range) pairs to push.
std::vector<std::pair<std::string, ValueRange>> let_facts(const Let& let, const RangeEnvironment& environment);
std::vector<std::pair<std::string, ValueRange>> loop_facts(const Loop& loop, const RangeEnvironment& environment);
/// The same facts without building vectors: the range a Let or Loop gives its variable.
std::optional<ValueRange> let_fact(const Let& let, const RangeEnvironment& environment);
std::optional<ValueRange> loop_fact(const Expr& from, const Expr& to, const RangeEnvironment& environment);
std::vector<std::pair<std::string, ValueRange>> guard_facts(const Expr& cond, const RangeEnvironment& environment);

/// RAII: pushes facts into an environment and pops them at scope exit.
class RangeScope {
 public:
  RangeScope(RangeEnvironment& environment, const std::vector<std::pair<std::string, ValueRange>>& facts);
  ~RangeScope();
  RangeScope(const RangeScope&) = delete;
  RangeScope& operator=(const RangeScope&) = delete;

 private:
  RangeEnvironment& environment_;
  std::size_t count_;
};

}  // namespace quantc::ir::analysis

#include "ir/IRMutator.h"

namespace quantc::ir::analysis {

/// An IRMutator that keeps a RangeEnvironment up to date while it walks: Let facts for
/// the rest of their Block, loop-variable facts inside Loop bodies, guard facts inside
/// then-bodies. Passes that want ranges derive from it and read `ranges_`.
///
/// Its Block mutation also splices: a statement mutated into a Block is replaced by
/// that Block's statements (how a pass turns one statement into several; the pass
/// must keep the spliced names unique in the enclosing block).
class RangeTrackingMutator : public IRMutator {
 public:
  explicit RangeTrackingMutator(const Program& program) : ranges_(program) {}

 protected:
  Node mutate_Block(const Block& node, const Node& self) override;
  Node mutate_Loop(const Loop& node, const Node& self) override;
  Node mutate_If(const If& node, const Node& self) override;

  RangeEnvironment ranges_;
};

}  // namespace quantc::ir::analysis
