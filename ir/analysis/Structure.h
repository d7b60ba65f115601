// Small structural queries and rewrites over the IR that several analyses and passes
// share: which names a subtree declares, reads or assigns, how large it is, whether an
// expression can fail at run time, and substitution of variables.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

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

/// Number of expression nodes in `expr`, and of statement plus expression nodes in `node`.
std::size_t expr_size(const Expr& expr);
std::size_t node_size(const Node& node);

/// True when `a` and `b` denote the same computation (same kinds, types, operators,
/// names and literal bits, recursively).
bool structurally_equal(const Expr& a, const Expr& b);

/// True when evaluating `expr` may raise an interpreter error: any Load (it may be out
/// of bounds), a Div/Rem whose divisor is not a non-zero literal, a Lookup whose index
/// is not a literal within the table. Subgroup operations count as trapping too: they
/// must not be moved to where the subgroup may be partly inactive.
bool may_trap(const Expr& expr);
/// True when `expr` contains a subgroup operation.
bool has_subgroup_op(const Expr& expr);
/// True when `expr` loads from a buffer that `program` declares writable (its value
/// may change between two evaluations).
bool loads_writable_buffer(const Expr& expr, const Program& program);
/// True when `node` contains a Return anywhere.
bool contains_return(const Node& node);

/// `expr`/`node` with every read of a variable in `replacements` replaced.
Expr substitute(const Expr& expr, const std::map<std::string, Expr>& replacements);
Node substitute(const Node& node, const std::map<std::string, Expr>& replacements);

}  // namespace quantc::ir::analysis
