// Small structural queries and rewrites over the IR that several analyses and passes
// share: which names a subtree declares, reads or assigns, how large it is, whether an
// expression can fail at run time, and substitution of variables.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Program.h"

namespace quantc::ir::analysis {

/// Names of the variables `expr` reads.
std::set<std::string> used_variables(const Expr& expr);
/// Names of the variables read anywhere in `node` (including its nested statements).
std::set<std::string> used_variables(const Node& node);
/// Names assigned (Assign) anywhere in `node`.
std::set<std::string> assigned_variables(const Node& node);
/// Names declared (Let and Loop variables) anywhere in `node`.
std::set<std::string> declared_names(const Node& node);
/// Every variable name a program declares, reads or assigns (for fresh-name choice).
std::set<std::string> all_names(const Program& program);
/// `base` if not in `taken`, else base_2, base_3, ...; the result is added to `taken`.
std::string fresh_name(const std::string& base, std::set<std::string>& taken);

/// Fresh names for new variables of a program, as fresh_name gives them, without a walk
/// of the whole program when no name is needed: the program's names are collected on
/// the first request only. Names it hands out are taken for later requests.
class NameSupply {
 public:
  explicit NameSupply(Node root);
  std::string fresh(const std::string& base);

 private:
  bool taken(std::string_view name) const;
  Node root_;  // keeps the names below alive
  bool collected_ = false;
  std::vector<std::string_view> program_names_;  // sorted
  std::vector<std::string> handed_out_;
};

/// Number of expression nodes in `expr`, and of statement (Blocks not counted) plus
/// expression nodes in `node`.
std::size_t expr_size(const Expr& expr);
std::size_t node_size(const Node& node);

/// True when `a` and `b` denote the same computation (same kinds, types, operators,
/// names and literal bits, recursively). Different structural hashes or sizes (cached
/// in the nodes) answer false at once.
bool structurally_equal(const Expr& a, const Expr& b);
bool structurally_equal(const ExprBase* a, const ExprBase* b);

/// True when evaluating `expr` may raise an interpreter error: any Load (it may be out
/// of bounds), a Div/Rem whose divisor is not a non-zero literal, a Lookup whose index
/// is not a literal within the table. Subgroup operations count as trapping too: they
/// must not be moved to where the subgroup may be partly inactive.
bool may_trap(const Expr& expr);
/// True when `expr` contains a subgroup operation.
bool has_subgroup_op(const Expr& expr);
/// Whether `expr` holds an AtomicAdd (memory it writes): it must not be removed,
/// duplicated, merged or moved.
bool has_side_effect(const Expr& expr);
/// True when `expr` loads from a buffer that `program` declares writable, or from a
/// workgroup array (its value may change between two evaluations).
bool loads_writable_buffer(const Expr& expr, const Program& program);
/// True when `node` contains a Return anywhere.
bool contains_return(const Node& node);

/// Calls `visit(const NodeBase&)` on `node` and every statement nested in it, in program
/// order. Declarations, assignments and returns are statements, so walks that look for
/// them need not enter expressions.
template <class Visit>
void for_each_statement(const Node& node, Visit&& visit) {
  if (!node.defined()) return;
  visit(*node.get());
  switch (node.kind()) {
    case NodeKind::If:
      for_each_statement(node.as<If>()->then_body, visit);
      for_each_statement(node.as<If>()->else_body, visit);
      break;
    case NodeKind::Loop:
      for_each_statement(node.as<Loop>()->body, visit);
      break;
    case NodeKind::Block:
      for (const Node& stmt : node.as<Block>()->stmts) for_each_statement(stmt, visit);
      break;
    case NodeKind::Region:
      for_each_statement(node.as<Region>()->body, visit);
      break;
    default:
      break;
  }
}

/// Calls `visit(const Expr&)` on each expression a statement evaluates itself, in
/// evaluation order (not those of the statements nested in it).
template <class Visit>
void for_each_operand(const NodeBase& node, Visit&& visit) {
  switch (node.kind) {
    case NodeKind::Let: visit(static_cast<const Let&>(node).value); break;
    case NodeKind::Assign: visit(static_cast<const Assign&>(node).value); break;
    case NodeKind::Store:
      visit(static_cast<const Store&>(node).index);
      visit(static_cast<const Store&>(node).value);
      break;
    case NodeKind::If: visit(static_cast<const If&>(node).cond); break;
    case NodeKind::AsyncCopy:
      visit(static_cast<const AsyncCopy&>(node).array_index);
      visit(static_cast<const AsyncCopy&>(node).buffer_index);
      break;
    case NodeKind::Loop:
      visit(static_cast<const Loop&>(node).from);
      visit(static_cast<const Loop&>(node).to);
      break;
    default:
      break;
  }
}

/// Calls `visit(const Expr&)` on each operand of an expression node, in evaluation order.
template <class Visit>
void for_each_child(const ExprBase& expr, Visit&& visit) {
  switch (expr.kind) {
    case ExprKind::Literal:
    case ExprKind::Var:
    case ExprKind::BufferLength:
    case ExprKind::Builtin:
      break;
    case ExprKind::Load: visit(static_cast<const Load&>(expr).index); break;
    case ExprKind::Binary:
      visit(static_cast<const Binary&>(expr).lhs);
      visit(static_cast<const Binary&>(expr).rhs);
      break;
    case ExprKind::Unary: visit(static_cast<const Unary&>(expr).operand); break;
    case ExprKind::Cast: visit(static_cast<const Cast&>(expr).value); break;
    case ExprKind::Bitcast: visit(static_cast<const Bitcast&>(expr).value); break;
    case ExprKind::Select:
      visit(static_cast<const Select&>(expr).cond);
      visit(static_cast<const Select&>(expr).if_true);
      visit(static_cast<const Select&>(expr).if_false);
      break;
    case ExprKind::Fma:
      visit(static_cast<const Fma&>(expr).a);
      visit(static_cast<const Fma&>(expr).b);
      visit(static_cast<const Fma&>(expr).c);
      break;
    case ExprKind::MakeVector:
      for (const Expr& lane : static_cast<const MakeVector&>(expr).lanes) visit(lane);
      break;
    case ExprKind::ExtractLane: visit(static_cast<const ExtractLane&>(expr).vector); break;
    case ExprKind::InsertLane:
      visit(static_cast<const InsertLane&>(expr).vector);
      visit(static_cast<const InsertLane&>(expr).value);
      break;
    case ExprKind::Permute:
      visit(static_cast<const Permute&>(expr).a);
      visit(static_cast<const Permute&>(expr).b);
      visit(static_cast<const Permute&>(expr).selector);
      break;
    case ExprKind::SubgroupShuffle:
      visit(static_cast<const SubgroupShuffle&>(expr).value);
      visit(static_cast<const SubgroupShuffle&>(expr).lane);
      break;
    case ExprKind::SubgroupReduce: visit(static_cast<const SubgroupReduce&>(expr).value); break;
    case ExprKind::SubgroupBallot: visit(static_cast<const SubgroupBallot&>(expr).cond); break;
    case ExprKind::SubgroupLoadMatrix: visit(static_cast<const SubgroupLoadMatrix&>(expr).index); break;
    case ExprKind::SubgroupMma:
      visit(static_cast<const SubgroupMma&>(expr).a);
      visit(static_cast<const SubgroupMma&>(expr).b);
      visit(static_cast<const SubgroupMma&>(expr).c);
      break;
    case ExprKind::Lookup: visit(static_cast<const Lookup&>(expr).index); break;
    case ExprKind::AtomicAdd:
      visit(static_cast<const AtomicAdd&>(expr).index);
      visit(static_cast<const AtomicAdd&>(expr).value);
      break;
  }
}

/// `expr`/`node` with every read of a variable in `replacements` replaced.
Expr substitute(const Expr& expr, const std::map<std::string, Expr>& replacements);
Node substitute(const Node& node, const std::map<std::string, Expr>& replacements);
/// `node` with the variables in `renames` (each mapped to a Var of the new name) renamed
/// wherever they occur: reads, Let declarations, Assign targets and Loop variables.
Node rename_variables(const Node& node, const std::map<std::string, Expr>& renames);

}  // namespace quantc::ir::analysis
