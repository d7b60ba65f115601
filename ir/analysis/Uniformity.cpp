#include "ir/analysis/Uniformity.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ir/IRVisitor.h"
#include "ir/Printer.h"

namespace quantc::ir::analysis {

namespace {
}

/// One walk over the program with the variable shapes of the previous iteration.
class UniformityWalker : public IRVisitor {
 public:
  UniformityWalker(const Uniformity& analysis, bool record) : analysis_(analysis), record_(record) {}

  std::map<std::string, Uniformity::Shape> shapes;  // shapes found by this walk
  std::vector<DivergentSubgroupOp> divergent_ops;

 protected:
  using Shape = Uniformity::Shape;

  void visit_Let(const Let& node) override {
    check_subgroup_ops(node.value);
    bind(node.name, shape_of(node.value));
  }
  void visit_Assign(const Assign& node) override {
    check_subgroup_ops(node.value);
    bind(node.name, control_.empty() ? shape_of(node.value) : Shape::Divergent);
  }
  void visit_Store(const Store& node) override {
    check_subgroup_ops(node.index);
    check_subgroup_ops(node.value);
  }
  void visit_AsyncCopy(const AsyncCopy& node) override {
    check_subgroup_ops(node.array_index);
    check_subgroup_ops(node.buffer_index);
  }
  void visit_If(const If& node) override {
    check_subgroup_ops(node.cond);
    bool divergent = shape_of(node.cond) != Shape::Uniform;
    if (divergent) control_.push_back({Reason::IfCondition, &node});
    visit(node.then_body);
    visit(node.else_body);
    if (divergent) control_.pop_back();
  }
  void visit_Loop(const Loop& node) override {
    check_subgroup_ops(node.from);
    check_subgroup_ops(node.to);
    bool divergent = shape_of(node.from) != Shape::Uniform || shape_of(node.to) != Shape::Uniform;
    bind(node.var, divergent ? Shape::Divergent : Shape::Uniform);
    if (divergent) control_.push_back({Reason::LoopBounds, &node});
    // A lane that returned in an earlier iteration makes the whole body divergent.
    std::size_t exits_before = divergent_exits_;
    visit(node.body);
    if (divergent_exits_ > exits_before && !loop_reason_pushed_.count(&node)) {
      loop_reason_pushed_.insert(&node);
      control_.push_back({Reason::ReturnInLoop, &node});
      visit(node.body);  // revisit the body under divergent control
      control_.pop_back();
    }
    if (divergent) control_.pop_back();
  }
  void visit_Return(const Return&) override {
    if (control_.empty()) return;
    // Lanes that did not return continue alone: everything after is divergent.
    ++divergent_exits_;
    control_.insert(control_.begin(), {Reason::EarlierReturn, nullptr});
  }

 private:
  /// The expression's shape, its variables seen through this walk's bindings so far as
  /// well as the previous walk's: a chain of lets then settles in one walk, not one
  /// walk per link.
  Shape shape_of(const Expr& expr) const { return analysis_.shape_of(expr, &shapes); }

  void bind(const std::string& name, Shape shape) {
    auto [entry, inserted] = shapes.emplace(name, shape);
    if (!inserted && entry->second != shape) entry->second = Shape::Divergent;
  }

  void check_subgroup_ops(const Expr& expr) {
    if (!record_ || control_.empty() || !expr.defined()) return;
    struct Finder : IRVisitor {
      std::vector<Expr> found;
      void visit_SubgroupShuffle(const SubgroupShuffle& node) override {
        found.push_back(SubgroupShuffle::make(node.value, node.lane));
        IRVisitor::visit_SubgroupShuffle(node);
      }
      void visit_SubgroupReduce(const SubgroupReduce& node) override {
        found.push_back(SubgroupReduce::make(node.op, node.value));
        IRVisitor::visit_SubgroupReduce(node);
      }
      void visit_SubgroupBallot(const SubgroupBallot& node) override {
        found.push_back(SubgroupBallot::make(node.cond));
        IRVisitor::visit_SubgroupBallot(node);
      }
      void visit_SubgroupLoadMatrix(const SubgroupLoadMatrix& node) override {
        found.push_back(SubgroupLoadMatrix::make(node.array, node.index, node.matrices, node.transpose));
        IRVisitor::visit_SubgroupLoadMatrix(node);
      }
      void visit_SubgroupMma(const SubgroupMma& node) override {
        found.push_back(SubgroupMma::make(node.input, node.a, node.b, node.c));
        IRVisitor::visit_SubgroupMma(node);
      }
    } finder;
    finder.visit(expr);
    for (const Expr& op : finder.found) divergent_ops.push_back({print(op), describe(control_.back())});
  }

  const Uniformity& analysis_;
  bool record_;
  /// Why control is divergent, kept as the statement that made it so and formatted only
  /// when a divergent subgroup operation is reported (walks repeat to a fixed point).
  struct Reason {
    enum Kind { IfCondition, LoopBounds, ReturnInLoop, EarlierReturn } kind;
    const NodeBase* node;
  };
  static std::string describe(const Reason& reason) {
    switch (reason.kind) {
      case Reason::IfCondition:
        return fmt::format("it sits under `if {}` whose condition is not subgroup-uniform",
                           print(static_cast<const If*>(reason.node)->cond));
      case Reason::LoopBounds: {
        const Loop& loop = *static_cast<const Loop*>(reason.node);
        return fmt::format("it sits in loop `{}` whose bounds {} .. {} are not subgroup-uniform", loop.var,
                           print(loop.from), print(loop.to));
      }
      case Reason::ReturnInLoop:
        return fmt::format("a lane may have returned early in loop `{}`", static_cast<const Loop*>(reason.node)->var);
      case Reason::EarlierReturn:
        break;
    }
    return "a lane may have returned earlier under divergent control";
  }
  std::vector<Reason> control_;  // innermost last
  std::size_t divergent_exits_ = 0;
  std::set<const Loop*> loop_reason_pushed_;
};

Uniformity::Uniformity(const Program& program) : workgroup_size_(program.workgroup_size) {
  for (const BufferDecl& buffer : program.buffers) {
    if (!buffer.is_written()) read_only_.insert(buffer.name);
  }
  if (!program.entry.defined()) return;
  // Greatest fixed point: start with every variable uniform, demote until stable. Shapes
  // only ever demote, so this terminates; when it has not settled after kMaxWalks (a
  // pathological program: assignments chained backwards through loops), every variable
  // is taken as divergent, which is sound (it can only refuse, never accept, a subgroup
  // operation) where stopping early would not be.
  constexpr int kMaxWalks = 64;
  bool settled = false;
  for (int iteration = 0; iteration < kMaxWalks && !settled; ++iteration) {
    UniformityWalker walker(*this, false);
    walker.visit(program.entry);
    settled = walker.shapes == shapes_;
    shapes_ = std::move(walker.shapes);
  }
  if (!settled) {
    for (auto& [name, shape] : shapes_) shape = Shape::Divergent;
  }
  UniformityWalker recorder(*this, true);
  recorder.visit(program.entry);
  divergent_ops_ = recorder.divergent_ops;
}

bool Uniformity::is_uniform(const Expr& expr) const { return shape_of(expr) == Shape::Uniform; }

bool Uniformity::is_uniform_variable(const std::string& name) const {
  auto found = shapes_.find(name);
  return found == shapes_.end() || found->second == Shape::Uniform;
}

namespace {

bool is_multiple_of_subgroup(const Expr& expr) {
  const Literal* literal = expr.as<Literal>();
  return literal != nullptr && literal->bits % kSubgroupSize == 0;
}

}  // namespace

Uniformity::Shape Uniformity::shape_of(const Expr& expr, const std::map<std::string, Shape>* walk) const {
  auto shape_of = [&](const Expr& operand) { return this->shape_of(operand, walk); };
  auto all_uniform = [&](std::initializer_list<Expr> operands) {
    for (const Expr& operand : operands) {
      if (shape_of(operand) != Shape::Uniform) return Shape::Divergent;
    }
    return Shape::Uniform;
  };
  switch (expr.kind()) {
    case ExprKind::Literal:
    case ExprKind::BufferLength:
    case ExprKind::SubgroupReduce:
    case ExprKind::SubgroupBallot:
      return Shape::Uniform;
    case ExprKind::Var: {
      const std::string& name = expr.as<Var>()->name;
      auto found = shapes_.find(name);
      Shape shape = found == shapes_.end() ? Shape::Uniform : found->second;
      if (walk != nullptr) {
        // The weaker of the two (Uniform > LaneBlocked > Divergent): both are at or
        // above the fixed point, so their meet is too.
        if (auto bound = walk->find(name); bound != walk->end()) shape = std::max(shape, bound->second);
      }
      return shape;
    }
    case ExprKind::Builtin: {
      const Builtin& node = *expr.as<Builtin>();
      const auto [x, y, z] = workgroup_size_;
      switch (node.builtin) {
        case BuiltinKind::WorkgroupId:
        case BuiltinKind::SubgroupSize:
          return Shape::Uniform;
        case BuiltinKind::SubgroupLocalId:
          return Shape::LaneBlocked;
        case BuiltinKind::LocalId:
        case BuiltinKind::InvocationId: {
          // Subgroups are 32 consecutive invocations of the linearised workgroup.
          bool rows_hold_whole_subgroups = x % kSubgroupSize == 0;
          if (node.axis == 0) {
            if (x == 1) return Shape::Uniform;
            if (rows_hold_whole_subgroups) return Shape::LaneBlocked;
            if (node.builtin == BuiltinKind::LocalId && y == 1 && z == 1) return Shape::LaneBlocked;
            return Shape::Divergent;
          }
          if (node.axis == 1) return rows_hold_whole_subgroups ? Shape::Uniform : Shape::Divergent;
          return (x * y) % kSubgroupSize == 0 ? Shape::Uniform : Shape::Divergent;
        }
      }
      return Shape::Divergent;
    }
    case ExprKind::Load: {
      const Load& node = *expr.as<Load>();
      if (!read_only_.count(node.buffer)) return Shape::Divergent;
      return all_uniform({node.index});
    }
    case ExprKind::Binary: {
      const Binary& node = *expr.as<Binary>();
      Shape lhs = shape_of(node.lhs), rhs = shape_of(node.rhs);
      if (lhs == Shape::Uniform && rhs == Shape::Uniform) return Shape::Uniform;
      const Literal* literal = node.rhs.as<Literal>();
      if (lhs == Shape::LaneBlocked && literal != nullptr) {
        // 32*q + lane with q uniform: dividing by / masking to multiples of 32 drops the lane.
        if (node.op == BinaryOp::Div && literal->bits % kSubgroupSize == 0 && literal->bits != 0) return Shape::Uniform;
        if (node.op == BinaryOp::Shr && literal->bits >= 5) return Shape::Uniform;
        if (node.op == BinaryOp::BitAnd && literal->bits % kSubgroupSize == 0) return Shape::Uniform;
      }
      if (node.op == BinaryOp::Add) {
        auto uniform_multiple = [&](const Expr& operand) {
          if (is_multiple_of_subgroup(operand)) return true;
          const Binary* product = operand.as<Binary>();
          return product != nullptr && product->op == BinaryOp::Mul && shape_of(operand) == Shape::Uniform &&
                 (is_multiple_of_subgroup(product->lhs) || is_multiple_of_subgroup(product->rhs));
        };
        if (lhs == Shape::LaneBlocked && rhs == Shape::Uniform && uniform_multiple(node.rhs)) return Shape::LaneBlocked;
        if (rhs == Shape::LaneBlocked && lhs == Shape::Uniform && uniform_multiple(node.lhs)) return Shape::LaneBlocked;
      }
      return Shape::Divergent;
    }
    case ExprKind::Unary:
      return all_uniform({expr.as<Unary>()->operand});
    case ExprKind::Cast:
      return all_uniform({expr.as<Cast>()->value});
    case ExprKind::Bitcast:
      return all_uniform({expr.as<Bitcast>()->value});
    case ExprKind::MakeVector: {
      for (const Expr& lane : expr.as<MakeVector>()->lanes) {
        if (shape_of(lane) != Shape::Uniform) return Shape::Divergent;
      }
      return Shape::Uniform;
    }
    case ExprKind::ExtractLane:
      return all_uniform({expr.as<ExtractLane>()->vector});
    case ExprKind::InsertLane:
      return all_uniform({expr.as<InsertLane>()->vector, expr.as<InsertLane>()->value});
    case ExprKind::Permute: {
      const Permute& node = *expr.as<Permute>();
      return all_uniform({node.a, node.b, node.selector});
    }
    case ExprKind::Select: {
      const Select& node = *expr.as<Select>();
      return all_uniform({node.cond, node.if_true, node.if_false});
    }
    case ExprKind::Fma: {
      const Fma& node = *expr.as<Fma>();
      return all_uniform({node.a, node.b, node.c});
    }
    case ExprKind::SubgroupShuffle:
      return all_uniform({expr.as<SubgroupShuffle>()->lane});
    case ExprKind::Lookup:
      return all_uniform({expr.as<Lookup>()->index});
    case ExprKind::AtomicAdd:
      return Shape::Divergent;  // each invocation sees another old value
    case ExprKind::SubgroupMma:
    case ExprKind::SubgroupLoadMatrix:
      return Shape::Divergent;  // each invocation holds other elements of the tile
  }
  return Shape::Divergent;
}

}  // namespace quantc::ir::analysis
