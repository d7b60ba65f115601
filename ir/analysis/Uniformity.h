// Subgroup-uniformity analysis: which values are identical across the 32 lanes of a
// subgroup, and which statements every lane of a subgroup reaches together.
//
// Uniform: literals, len(), workgroup_id, subgroup_size, subgroup reductions and
// ballots, shuffles from a uniform lane, loads from read-only buffers at uniform
// indices, operations on uniform operands, and variables whose Let and every Assign
// give uniform values under uniform control. "Lane-blocked" values (32*q + lane with q
// uniform: local_id.x when subgroups tile the x axis, invocation_id.x when
// workgroup_size.x is a multiple of 32, subgroup_local_id) become uniform when divided
// by, shifted right past, or masked to, a multiple of 32, so `local / 32` is uniform.
// Control is uniform when every enclosing If condition and Loop bound is uniform and no
// lane may have left early through a Return under divergent control.
//
// The analysis is optimistic (all variables uniform) and iterates to the greatest fixed
// point, as divergence analyses do, so loop-carried uniform values are recognised.
#pragma once

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/Program.h"

namespace quantc::ir::analysis {

/// A subgroup operation found under control flow not proven subgroup-uniform.
struct DivergentSubgroupOp {
  std::string op;      // the operation as printed, e.g. "subgroup_shuffle(v, 0u32)"
  std::string reason;  // e.g. "it sits under `if (lane == 0u32)` whose condition depends on local_id.x"
};

class Uniformity {
 public:
  /// Analyses `program` (which must outlive this object only during construction).
  explicit Uniformity(const Program& program);

  /// Whether `expr`, evaluated where the analysed variables are in scope, is the same on
  /// every lane of a subgroup.
  bool is_uniform(const Expr& expr) const;
  /// Whether every binding and assignment of `name` in the program is uniform.
  bool is_uniform_variable(const std::string& name) const;
  /// Subgroup operations under control flow the analysis cannot prove uniform.
  const std::vector<DivergentSubgroupOp>& divergent_subgroup_ops() const { return divergent_ops_; }

 private:
  friend class UniformityWalker;
  enum class Shape : std::uint8_t { Uniform, LaneBlocked, Divergent };  // weaker as the value grows
  /// `walk`, when given, holds the shapes the walk in progress has bound so far.
  Shape shape_of(const Expr& expr, const std::map<std::string, Shape>* walk = nullptr) const;

  std::array<std::uint32_t, 3> workgroup_size_;
  std::map<std::string, Shape> shapes_;  // variables' shapes; absent = uniform
  std::set<std::string> read_only_;      // buffers declared read-only
  std::vector<DivergentSubgroupOp> divergent_ops_;
};

}  // namespace quantc::ir::analysis
