#include "ir/analysis/Structure.h"

#include <fmt/format.h>

#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"

namespace quantc::ir::analysis {
namespace {

class NameCollector : public IRVisitor {
 public:
  std::set<std::string> used, assigned, declared;
  std::size_t size = 0;
  bool has_return = false;

 protected:
  void visit_Var(const Var& node) override {
    ++size;
    used.insert(node.name);
  }
  void visit_Let(const Let& node) override {
    ++size;
    declared.insert(node.name);
    IRVisitor::visit_Let(node);
  }
  void visit_Assign(const Assign& node) override {
    ++size;
    assigned.insert(node.name);
    IRVisitor::visit_Assign(node);
  }
  void visit_Loop(const Loop& node) override {
    ++size;
    declared.insert(node.var);
    IRVisitor::visit_Loop(node);
  }
  void visit_Return(const Return&) override {
    ++size;
    has_return = true;
  }
  // Every other kind only counts itself and recurses.
#define QUANTC_COUNT(name)                                        \
  void visit_##name(const name& node) override {                  \
    ++size;                                                       \
    IRVisitor::visit_##name(node);                                \
  }
  QUANTC_COUNT(Literal)
  QUANTC_COUNT(Load)
  QUANTC_COUNT(Binary)
  QUANTC_COUNT(Unary)
  QUANTC_COUNT(Cast)
  QUANTC_COUNT(Select)
  QUANTC_COUNT(Fma)
  QUANTC_COUNT(BufferLength)
  QUANTC_COUNT(Builtin)
  QUANTC_COUNT(SubgroupShuffle)
  QUANTC_COUNT(SubgroupReduce)
  QUANTC_COUNT(SubgroupBallot)
  QUANTC_COUNT(Lookup)
  QUANTC_COUNT(Store)
  QUANTC_COUNT(If)
  QUANTC_COUNT(Region)
  QUANTC_COUNT(Barrier)
#undef QUANTC_COUNT
};

template <class T>
NameCollector collect(const T& root) {
  NameCollector collector;
  collector.visit(root);
  return collector;
}

class TrapFinder : public IRVisitor {
 public:
  bool trap = false;
  bool subgroup = false;

 protected:
  void visit_Load(const Load& node) override {
    trap = true;
    IRVisitor::visit_Load(node);
  }
  void visit_Binary(const Binary& node) override {
    if (node.op == BinaryOp::Div || node.op == BinaryOp::Rem) {
      const Literal* divisor = node.rhs.as<Literal>();
      if (divisor == nullptr || divisor->is_zero()) trap = true;
    }
    IRVisitor::visit_Binary(node);
  }
  void visit_Lookup(const Lookup& node) override {
    const Literal* index = node.index.as<Literal>();
    if (index == nullptr || index->bits >= node.table.size()) trap = true;
    IRVisitor::visit_Lookup(node);
  }
  void visit_SubgroupShuffle(const SubgroupShuffle& node) override {
    trap = subgroup = true;
    IRVisitor::visit_SubgroupShuffle(node);
  }
  void visit_SubgroupReduce(const SubgroupReduce& node) override {
    trap = subgroup = true;
    IRVisitor::visit_SubgroupReduce(node);
  }
  void visit_SubgroupBallot(const SubgroupBallot& node) override {
    trap = subgroup = true;
    IRVisitor::visit_SubgroupBallot(node);
  }
};

class WritableLoadFinder : public IRVisitor {
 public:
  explicit WritableLoadFinder(const Program& program) : program_(program) {}
  bool found = false;

 protected:
  void visit_Load(const Load& node) override {
    const BufferDecl* buffer = program_.find_buffer(node.buffer);
    if (buffer == nullptr || buffer->is_output()) found = true;
    IRVisitor::visit_Load(node);
  }

 private:
  const Program& program_;
};

class Substituter : public IRMutator {
 public:
  explicit Substituter(const std::map<std::string, Expr>& replacements) : replacements_(replacements) {}

 protected:
  Expr mutate_Var(const Var& node, const Expr& self) override {
    auto found = replacements_.find(node.name);
    return found == replacements_.end() ? self : found->second;
  }

 private:
  const std::map<std::string, Expr>& replacements_;
};

}  // namespace

std::set<std::string> used_variables(const Expr& expr) { return collect(expr).used; }
std::set<std::string> used_variables(const Node& node) { return collect(node).used; }
std::set<std::string> assigned_variables(const Node& node) { return collect(node).assigned; }
std::set<std::string> declared_names(const Node& node) { return collect(node).declared; }

std::set<std::string> all_names(const Program& program) {
  NameCollector collector = collect(program.entry);
  std::set<std::string> names = collector.used;
  names.insert(collector.declared.begin(), collector.declared.end());
  names.insert(collector.assigned.begin(), collector.assigned.end());
  return names;
}

std::string fresh_name(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int suffix = 2; taken.count(name) != 0; ++suffix) name = fmt::format("{}_{}", base, suffix);
  taken.insert(name);
  return name;
}

std::size_t expr_size(const Expr& expr) { return collect(expr).size; }
std::size_t node_size(const Node& node) { return collect(node).size; }

bool structurally_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.type() != b.type()) return false;
  switch (a.kind()) {
    case ExprKind::Literal:
      return a.as<Literal>()->bits == b.as<Literal>()->bits;
    case ExprKind::Var:
      return a.as<Var>()->name == b.as<Var>()->name;
    case ExprKind::Load:
      return a.as<Load>()->buffer == b.as<Load>()->buffer && a.as<Load>()->alignment == b.as<Load>()->alignment &&
             structurally_equal(a.as<Load>()->index, b.as<Load>()->index);
    case ExprKind::Binary: {
      const Binary *x = a.as<Binary>(), *y = b.as<Binary>();
      return x->op == y->op && structurally_equal(x->lhs, y->lhs) && structurally_equal(x->rhs, y->rhs);
    }
    case ExprKind::Unary:
      return a.as<Unary>()->op == b.as<Unary>()->op && structurally_equal(a.as<Unary>()->operand, b.as<Unary>()->operand);
    case ExprKind::Cast:
      return structurally_equal(a.as<Cast>()->value, b.as<Cast>()->value);
    case ExprKind::Bitcast:
      return structurally_equal(a.as<Bitcast>()->value, b.as<Bitcast>()->value);
    case ExprKind::MakeVector: {
      const MakeVector *x = a.as<MakeVector>(), *y = b.as<MakeVector>();
      for (std::size_t i = 0; i < x->lanes.size(); ++i) {
        if (!structurally_equal(x->lanes[i], y->lanes[i])) return false;
      }
      return true;
    }
    case ExprKind::ExtractLane:
      return a.as<ExtractLane>()->lane == b.as<ExtractLane>()->lane &&
             structurally_equal(a.as<ExtractLane>()->vector, b.as<ExtractLane>()->vector);
    case ExprKind::InsertLane: {
      const InsertLane *x = a.as<InsertLane>(), *y = b.as<InsertLane>();
      return x->lane == y->lane && structurally_equal(x->vector, y->vector) && structurally_equal(x->value, y->value);
    }
    case ExprKind::Permute: {
      const Permute *x = a.as<Permute>(), *y = b.as<Permute>();
      return structurally_equal(x->a, y->a) && structurally_equal(x->b, y->b) &&
             structurally_equal(x->selector, y->selector);
    }
    case ExprKind::Select: {
      const Select *x = a.as<Select>(), *y = b.as<Select>();
      return structurally_equal(x->cond, y->cond) && structurally_equal(x->if_true, y->if_true) &&
             structurally_equal(x->if_false, y->if_false);
    }
    case ExprKind::Fma: {
      const Fma *x = a.as<Fma>(), *y = b.as<Fma>();
      return structurally_equal(x->a, y->a) && structurally_equal(x->b, y->b) && structurally_equal(x->c, y->c);
    }
    case ExprKind::BufferLength:
      return a.as<BufferLength>()->buffer == b.as<BufferLength>()->buffer;
    case ExprKind::Builtin:
      return a.as<Builtin>()->builtin == b.as<Builtin>()->builtin && a.as<Builtin>()->axis == b.as<Builtin>()->axis;
    case ExprKind::SubgroupShuffle: {
      const SubgroupShuffle *x = a.as<SubgroupShuffle>(), *y = b.as<SubgroupShuffle>();
      return structurally_equal(x->value, y->value) && structurally_equal(x->lane, y->lane);
    }
    case ExprKind::SubgroupReduce:
      return a.as<SubgroupReduce>()->op == b.as<SubgroupReduce>()->op &&
             structurally_equal(a.as<SubgroupReduce>()->value, b.as<SubgroupReduce>()->value);
    case ExprKind::SubgroupBallot:
      return structurally_equal(a.as<SubgroupBallot>()->cond, b.as<SubgroupBallot>()->cond);
    case ExprKind::Lookup:
      return a.as<Lookup>()->table == b.as<Lookup>()->table &&
             structurally_equal(a.as<Lookup>()->index, b.as<Lookup>()->index);
  }
  return false;
}

bool may_trap(const Expr& expr) {
  TrapFinder finder;
  finder.visit(expr);
  return finder.trap;
}

bool has_subgroup_op(const Expr& expr) {
  TrapFinder finder;
  finder.visit(expr);
  return finder.subgroup;
}

bool loads_writable_buffer(const Expr& expr, const Program& program) {
  WritableLoadFinder finder(program);
  finder.visit(expr);
  return finder.found;
}

bool contains_return(const Node& node) { return collect(node).has_return; }

Expr substitute(const Expr& expr, const std::map<std::string, Expr>& replacements) {
  if (replacements.empty()) return expr;
  return Substituter(replacements).mutate(expr);
}

Node substitute(const Node& node, const std::map<std::string, Expr>& replacements) {
  if (replacements.empty()) return node;
  return Substituter(replacements).mutate(node);
}

}  // namespace quantc::ir::analysis
