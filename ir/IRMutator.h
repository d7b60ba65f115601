// Rewriting traversal of the IR (Halide's IRMutator). `mutate` dispatches on the kind;
// the default `mutate_<Kind>` mutates the children and rebuilds the node only when a
// child changed, so an untouched subtree keeps its identity (passes can then tell
// "changed" by `same_as`). Override the kinds a pass rewrites; call the base version
// to recurse.
#pragma once

#include "ir/IR.h"

namespace quantc::ir {

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& expr);  // undefined in, undefined out
  virtual Node mutate(const Node& node);

 protected:
#define QUANTC_DECLARE_EXPR(name) virtual Expr mutate_##name(const name& node, const Expr& self);
#define QUANTC_DECLARE_STMT(name) virtual Node mutate_##name(const name& node, const Node& self);
  QUANTC_EXPR_NODES(QUANTC_DECLARE_EXPR)
  QUANTC_STMT_NODES(QUANTC_DECLARE_STMT)
#undef QUANTC_DECLARE_EXPR
#undef QUANTC_DECLARE_STMT
};

}  // namespace quantc::ir
