// Read-only traversal of the IR. Override `visit_<Kind>` for the kinds you care about
// and call the base version to keep descending; the defaults visit every child in
// evaluation order (an If's condition before its bodies, a Loop's bounds before its body).
#pragma once

#include "ir/IR.h"

namespace quantc::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit(const Expr& expr);  // no-op for an undefined handle
  void visit(const Node& node);
  void visit(const NodeBase& node);  // for visitors handed a node struct, not a handle

 protected:
#define QUANTC_DECLARE(name) virtual void visit_##name(const name& node);
  QUANTC_EXPR_NODES(QUANTC_DECLARE)
  QUANTC_STMT_NODES(QUANTC_DECLARE)
#undef QUANTC_DECLARE
};

}  // namespace quantc::ir
