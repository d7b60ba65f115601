#include "ir/analysis/Structure.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"

namespace quantc::ir::analysis {
namespace {

class VariableCollector : public IRVisitor {
 public:
  explicit VariableCollector(std::set<std::string>& used) : used_(used) {}

 protected:
  void visit_Var(const Var& node) override { used_.insert(node.name); }

 private:
  std::set<std::string>& used_;
};

class WritableLoadFinder : public IRVisitor {
 public:
  explicit WritableLoadFinder(const Program& program) : program_(program) {}
  bool found = false;

 protected:
  void visit_Load(const Load& node) override {
    const BufferDecl* buffer = program_.find_buffer(node.buffer);
    if (buffer == nullptr || buffer->is_written()) found = true;
    IRVisitor::visit_Load(node);
  }
  void visit_AtomicAdd(const AtomicAdd& node) override {
    found = true;  // it reads (and writes) a written buffer
    IRVisitor::visit_AtomicAdd(node);
  }
  void visit_SubgroupLoadMatrix(const SubgroupLoadMatrix& node) override {
    found = true;  // workgroup arrays are written by the workgroup's stores
    IRVisitor::visit_SubgroupLoadMatrix(node);
  }

 private:
  const Program& program_;
};

class Substituter : public IRMutator {
 public:
  explicit Substituter(const std::map<std::string, Expr>& replacements) : replacements_(replacements) {}

 protected:
  const std::map<std::string, Expr>& replacements() const { return replacements_; }

  Expr mutate_Var(const Var& node, const Expr& self) override {
    auto found = replacements_.find(node.name);
    return found == replacements_.end() ? self : found->second;
  }

 private:
  const std::map<std::string, Expr>& replacements_;
};

/// Substituter that also renames the declarations and assignments of the variables it
/// replaces (each replacement a Var).
class Renamer : public Substituter {
 public:
  using Substituter::Substituter;

 protected:
  Node mutate_Let(const Let& node, const Node& self) override {
    Expr value = mutate(node.value);
    const std::string& name = renamed(node.name);
    return value.same_as(node.value) && &name == &node.name ? self : Let::make(name, value);
  }
  Node mutate_Assign(const Assign& node, const Node& self) override {
    Expr value = mutate(node.value);
    const std::string& name = renamed(node.name);
    return value.same_as(node.value) && &name == &node.name ? self : Assign::make(name, value);
  }
  Node mutate_Loop(const Loop& node, const Node& self) override {
    Expr from = mutate(node.from), to = mutate(node.to);
    Node body = mutate(node.body);
    const std::string& var = renamed(node.var);
    if (&var == &node.var && from.same_as(node.from) && to.same_as(node.to) && body.same_as(node.body)) return self;
    return Loop::make(var, from, to, body);
  }

 private:
  const std::string& renamed(const std::string& name) const {
    auto found = replacements().find(name);
    return found == replacements().end() ? name : found->second.as<Var>()->name;
  }
};

}  // namespace

std::set<std::string> used_variables(const Expr& expr) {
  std::set<std::string> used;
  VariableCollector(used).visit(expr);
  return used;
}

std::set<std::string> used_variables(const Node& node) {
  std::set<std::string> used;
  VariableCollector collector(used);
  collector.visit(node);
  return used;
}

std::set<std::string> assigned_variables(const Node& node) {
  std::set<std::string> assigned;
  for_each_statement(node, [&](const NodeBase& stmt) {
    if (stmt.kind == NodeKind::Assign) assigned.insert(static_cast<const Assign&>(stmt).name);
  });
  return assigned;
}

std::set<std::string> declared_names(const Node& node) {
  std::set<std::string> declared;
  for_each_statement(node, [&](const NodeBase& stmt) {
    if (stmt.kind == NodeKind::Let) declared.insert(static_cast<const Let&>(stmt).name);
    if (stmt.kind == NodeKind::Loop) declared.insert(static_cast<const Loop&>(stmt).var);
  });
  return declared;
}

std::set<std::string> all_names(const Program& program) {
  std::set<std::string> names = used_variables(program.entry);
  for_each_statement(program.entry, [&](const NodeBase& stmt) {
    if (stmt.kind == NodeKind::Let) names.insert(static_cast<const Let&>(stmt).name);
    if (stmt.kind == NodeKind::Loop) names.insert(static_cast<const Loop&>(stmt).var);
    if (stmt.kind == NodeKind::Assign) names.insert(static_cast<const Assign&>(stmt).name);
  });
  return names;
}

std::string fresh_name(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int suffix = 2; taken.count(name) != 0; ++suffix) name = fmt::format("{}_{}", base, suffix);
  taken.insert(name);
  return name;
}

NameSupply::NameSupply(Node root) : root_(std::move(root)) {}

std::string NameSupply::fresh(const std::string& base) {
  if (!collected_) {
    // Every name a Var reads is declared by a Let or Loop of the program (verified
    // input), so the declarations are all the names there are.
    for_each_statement(root_, [&](const NodeBase& stmt) {
      if (stmt.kind == NodeKind::Let) program_names_.push_back(static_cast<const Let&>(stmt).name);
      if (stmt.kind == NodeKind::Loop) program_names_.push_back(static_cast<const Loop&>(stmt).var);
    });
    std::sort(program_names_.begin(), program_names_.end());
    collected_ = true;
  }
  std::string name = base;
  for (int suffix = 2; taken(name); ++suffix) name = fmt::format("{}_{}", base, suffix);
  handed_out_.push_back(name);
  return name;
}

bool NameSupply::taken(std::string_view name) const {
  if (std::binary_search(program_names_.begin(), program_names_.end(), name)) return true;
  return std::find(handed_out_.begin(), handed_out_.end(), name) != handed_out_.end();
}

std::size_t expr_size(const Expr& expr) { return expr.defined() ? expr.get()->subtree_size() : 0; }

std::size_t node_size(const Node& node) {
  std::size_t size = 0;
  for_each_statement(node, [&](const NodeBase& stmt) {
    if (stmt.kind != NodeKind::Block) ++size;  // a Block only groups statements
    for_each_operand(stmt, [&](const Expr& expr) { size += expr_size(expr); });
  });
  return size;
}

bool structurally_equal(const Expr& a, const Expr& b) { return structurally_equal(a.get(), b.get()); }

bool structurally_equal(const ExprBase* a, const ExprBase* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr || a->structural_hash() != b->structural_hash() ||
      a->subtree_size() != b->subtree_size() || a->kind != b->kind || a->type != b->type) {
    return false;
  }
  auto same = [](const Expr& x, const Expr& y) { return structurally_equal(x.get(), y.get()); };
  switch (a->kind) {
    case ExprKind::Literal:
      return static_cast<const Literal*>(a)->bits == static_cast<const Literal*>(b)->bits;
    case ExprKind::Var:
      return static_cast<const Var*>(a)->name == static_cast<const Var*>(b)->name;
    case ExprKind::Load: {
      auto *x = static_cast<const Load*>(a), *y = static_cast<const Load*>(b);
      return x->buffer == y->buffer && x->alignment == y->alignment && x->reinterpret == y->reinterpret &&
             same(x->index, y->index);
    }
    case ExprKind::Binary: {
      auto *x = static_cast<const Binary*>(a), *y = static_cast<const Binary*>(b);
      return x->op == y->op && same(x->lhs, y->lhs) && same(x->rhs, y->rhs);
    }
    case ExprKind::Unary: {
      auto *x = static_cast<const Unary*>(a), *y = static_cast<const Unary*>(b);
      return x->op == y->op && same(x->operand, y->operand);
    }
    case ExprKind::Cast:
      return same(static_cast<const Cast*>(a)->value, static_cast<const Cast*>(b)->value);
    case ExprKind::Bitcast:
      return same(static_cast<const Bitcast*>(a)->value, static_cast<const Bitcast*>(b)->value);
    case ExprKind::MakeVector: {
      auto *x = static_cast<const MakeVector*>(a), *y = static_cast<const MakeVector*>(b);
      if (x->lanes.size() != y->lanes.size()) return false;
      for (std::size_t i = 0; i < x->lanes.size(); ++i) {
        if (!same(x->lanes[i], y->lanes[i])) return false;
      }
      return true;
    }
    case ExprKind::ExtractLane: {
      auto *x = static_cast<const ExtractLane*>(a), *y = static_cast<const ExtractLane*>(b);
      return x->lane == y->lane && same(x->vector, y->vector);
    }
    case ExprKind::InsertLane: {
      auto *x = static_cast<const InsertLane*>(a), *y = static_cast<const InsertLane*>(b);
      return x->lane == y->lane && same(x->vector, y->vector) && same(x->value, y->value);
    }
    case ExprKind::Permute: {
      auto *x = static_cast<const Permute*>(a), *y = static_cast<const Permute*>(b);
      return same(x->a, y->a) && same(x->b, y->b) && same(x->selector, y->selector);
    }
    case ExprKind::Select: {
      auto *x = static_cast<const Select*>(a), *y = static_cast<const Select*>(b);
      return same(x->cond, y->cond) && same(x->if_true, y->if_true) && same(x->if_false, y->if_false);
    }
    case ExprKind::Fma: {
      auto *x = static_cast<const Fma*>(a), *y = static_cast<const Fma*>(b);
      return same(x->a, y->a) && same(x->b, y->b) && same(x->c, y->c);
    }
    case ExprKind::BufferLength:
      return static_cast<const BufferLength*>(a)->buffer == static_cast<const BufferLength*>(b)->buffer;
    case ExprKind::Builtin: {
      auto *x = static_cast<const Builtin*>(a), *y = static_cast<const Builtin*>(b);
      return x->builtin == y->builtin && x->axis == y->axis;
    }
    case ExprKind::SubgroupShuffle: {
      auto *x = static_cast<const SubgroupShuffle*>(a), *y = static_cast<const SubgroupShuffle*>(b);
      return same(x->value, y->value) && same(x->lane, y->lane);
    }
    case ExprKind::SubgroupReduce: {
      auto *x = static_cast<const SubgroupReduce*>(a), *y = static_cast<const SubgroupReduce*>(b);
      return x->op == y->op && same(x->value, y->value);
    }
    case ExprKind::SubgroupBallot:
      return same(static_cast<const SubgroupBallot*>(a)->cond, static_cast<const SubgroupBallot*>(b)->cond);
    case ExprKind::SubgroupLoadMatrix: {
      auto *x = static_cast<const SubgroupLoadMatrix*>(a), *y = static_cast<const SubgroupLoadMatrix*>(b);
      return x->array == y->array && x->matrices == y->matrices && x->transpose == y->transpose &&
             same(x->index, y->index);
    }
    case ExprKind::SubgroupMma: {
      auto *x = static_cast<const SubgroupMma*>(a), *y = static_cast<const SubgroupMma*>(b);
      return x->input == y->input && same(x->a, y->a) && same(x->b, y->b) && same(x->c, y->c);
    }
    case ExprKind::Lookup: {
      auto *x = static_cast<const Lookup*>(a), *y = static_cast<const Lookup*>(b);
      return x->table == y->table && same(x->index, y->index);
    }
    case ExprKind::AtomicAdd:
      return false;  // two atomics are two side effects, never one value
  }
  return false;
}

bool may_trap(const Expr& expr) { return expr.defined() && expr.get()->subtree_may_trap(); }

bool has_subgroup_op(const Expr& expr) { return expr.defined() && expr.get()->subtree_has_subgroup_op(); }

bool has_side_effect(const Expr& expr) { return expr.defined() && expr.get()->subtree_has_side_effect(); }

bool loads_writable_buffer(const Expr& expr, const Program& program) {
  if (!expr.defined() || !expr.get()->subtree_has_load()) return false;
  WritableLoadFinder finder(program);
  finder.visit(expr);
  return finder.found;
}

bool contains_return(const Node& node) {
  bool found = false;
  for_each_statement(node, [&](const NodeBase& stmt) { found |= stmt.kind == NodeKind::Return; });
  return found;
}

Expr substitute(const Expr& expr, const std::map<std::string, Expr>& replacements) {
  if (replacements.empty()) return expr;
  return Substituter(replacements).mutate(expr);
}

Node substitute(const Node& node, const std::map<std::string, Expr>& replacements) {
  if (replacements.empty()) return node;
  return Substituter(replacements).mutate(node);
}

Node rename_variables(const Node& node, const std::map<std::string, Expr>& renames) {
  if (renames.empty()) return node;
  return Renamer(renames).mutate(node);
}

}  // namespace quantc::ir::analysis
