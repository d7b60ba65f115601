// Common-subexpression elimination on pure expressions (see Passes.h).
//
// Pure: no loads from writable buffers (another statement may store between two
// evaluations) and no subgroup operations (their value depends on which lanes run).
// Loads from read-only buffers are pure within a kernel. Only expressions whose
// variables are never assigned are candidates, so an available `let` stays valid for
// its whole scope.
#include <fmt/format.h>

#include <algorithm>

#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Printer.h"
#include "ir/analysis/Structure.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;

bool is_candidate(const Expr& expr, const Program& program, const std::set<std::string>& assigned) {
  if (expr.kind() == ExprKind::Literal || expr.kind() == ExprKind::Var || expr.kind() == ExprKind::Builtin ||
      expr.kind() == ExprKind::BufferLength) {
    return false;
  }
  if (analysis::has_subgroup_op(expr) || analysis::loads_writable_buffer(expr, program)) return false;
  for (const std::string& name : analysis::used_variables(expr)) {
    if (assigned.count(name)) return false;
  }
  return true;
}

/// Counts the candidate subexpressions a statement evaluates unconditionally (not
/// below the right operand of && / ||, whose evaluation may be skipped).
class Occurrences : public IRVisitor {
 public:
  Occurrences(const Program& program, const std::set<std::string>& assigned) : program_(program), assigned_(assigned) {}
  std::vector<std::pair<Expr, int>> counts;  // first occurrence order

 protected:
  void visit_Binary(const Binary& node) override {
    count(node);
    visit(node.lhs);
    if (node.op != BinaryOp::LogicalAnd && node.op != BinaryOp::LogicalOr) visit(node.rhs);
  }
#define QUANTC_COUNT(name)                       \
  void visit_##name(const name& node) override { \
    count(node);                                 \
    IRVisitor::visit_##name(node);               \
  }
  QUANTC_COUNT(Load)
  QUANTC_COUNT(Unary)
  QUANTC_COUNT(Cast)
  QUANTC_COUNT(Select)
  QUANTC_COUNT(Fma)
  QUANTC_COUNT(Lookup)
#undef QUANTC_COUNT

 private:
  template <class T>
  void count(const T& node) {
    // Rebuild a handle for the node: the visitor gives references, counts need handles.
    Expr expr = handle_of(node);
    if (!is_candidate(expr, program_, assigned_)) return;
    for (auto& [seen, n] : counts) {
      if (analysis::structurally_equal(seen, expr)) {
        ++n;
        return;
      }
    }
    counts.emplace_back(expr, 1);
  }
  static Expr handle_of(const Load& node) { return Load::make(node.type, node.buffer, node.index, node.alignment); }
  static Expr handle_of(const Binary& node) { return Binary::make(node.op, node.lhs, node.rhs); }
  static Expr handle_of(const Unary& node) { return Unary::make(node.op, node.operand); }
  static Expr handle_of(const Cast& node) { return Cast::make(node.type, node.value); }
  static Expr handle_of(const Select& node) { return Select::make(node.cond, node.if_true, node.if_false); }
  static Expr handle_of(const Fma& node) { return Fma::make(node.a, node.b, node.c); }
  static Expr handle_of(const Lookup& node) { return Lookup::make(node.scalar(), node.table, node.index); }

  const Program& program_;
  const std::set<std::string>& assigned_;
};

/// Replaces every occurrence of an available expression by its variable.
class Replacer : public IRMutator {
 public:
  explicit Replacer(const std::vector<std::pair<Expr, Expr>>& available) : available_(available) {}
  Expr mutate(const Expr& expr) override {
    if (!expr.defined()) return expr;
    for (auto entry = available_.rbegin(); entry != available_.rend(); ++entry) {
      if (analysis::structurally_equal(entry->first, expr)) return entry->second;
    }
    return IRMutator::mutate(expr);
  }
  using IRMutator::mutate;

 private:
  const std::vector<std::pair<Expr, Expr>>& available_;
};

class Eliminator : public IRMutator {
 public:
  Eliminator(const Program& program)
      : program_(program), assigned_(analysis::assigned_variables(program.entry)), names_(analysis::all_names(program)) {}

 public:
  Expr mutate(const Expr& expr) override { return Replacer(available_).mutate(expr); }
  using IRMutator::mutate;

 protected:

  Node mutate_Block(const Block& node, const Node& self) override {
    std::size_t scope = available_.size();
    std::vector<Node> stmts;
    bool changed = false;
    for (const Node& stmt : node.stmts) {
      for (Node& introduced : bind_repeated(stmt)) {
        stmts.push_back(introduced);
        changed = true;
      }
      Node mutated = mutate(stmt);
      changed |= !mutated.same_as(stmt);
      stmts.push_back(mutated);
      if (const Let* let = mutated.as<Let>(); let && !assigned_.count(let->name) && is_candidate(let->value, program_, assigned_)) {
        available_.emplace_back(let->value, Var::make(let->value.type(), let->name));
      }
    }
    available_.resize(scope);
    return changed ? Block::make(std::move(stmts)) : self;
  }

 private:
  /// New lets for expressions the statement evaluates twice or more: the largest
  /// first, then recounting with it replaced (so its parts are not bound again).
  std::vector<Node> bind_repeated(const Node& stmt) {
    std::vector<Node> lets;
    for (int round = 0; round < 16; ++round) {
      Occurrences occurrences(program_, assigned_);
      switch (stmt.kind()) {
        case NodeKind::Let: occurrences.visit(Replacer(available_).mutate(stmt.as<Let>()->value)); break;
        case NodeKind::Assign: occurrences.visit(Replacer(available_).mutate(stmt.as<Assign>()->value)); break;
        case NodeKind::Store:
          occurrences.visit(Replacer(available_).mutate(stmt.as<Store>()->index));
          occurrences.visit(Replacer(available_).mutate(stmt.as<Store>()->value));
          break;
        case NodeKind::If: occurrences.visit(Replacer(available_).mutate(stmt.as<If>()->cond)); break;
        default: return lets;
      }
      auto repeated = std::find_if(occurrences.counts.begin(), occurrences.counts.end(),
                                   [](const auto& entry) { return entry.second >= 2; });
      if (repeated == occurrences.counts.end()) return lets;
      const Expr& expr = repeated->first;
      std::string name = analysis::fresh_name("common", names_);
      lets.push_back(Let::make(name, expr));
      available_.emplace_back(expr, Var::make(expr.type(), name));
    }
    return lets;
  }

  const Program& program_;
  std::set<std::string> assigned_;
  std::set<std::string> names_;
  std::vector<std::pair<Expr, Expr>> available_;  // expression -> variable holding it
};

}  // namespace

ir::Program eliminate_common_subexpressions(ir::Program program) {
  Eliminator eliminator(program);
  ir::Node entry = eliminator.mutate(program.entry);
  program.entry = entry;
  return program;
}

}  // namespace quantc::lower
