#include "ir/IRVisitor.h"

namespace quantc::ir {

void IRVisitor::visit(const Expr& expr) {
  if (!expr.defined()) return;
  switch (expr.kind()) {
#define QUANTC_CASE(name)                  \
  case ExprKind::name:                     \
    visit_##name(*expr.as<name>());        \
    return;
    QUANTC_EXPR_NODES(QUANTC_CASE)
#undef QUANTC_CASE
  }
}

void IRVisitor::visit(const Node& node) {
  if (node.defined()) visit(*node.get());
}

void IRVisitor::visit(const NodeBase& node) {
  switch (node.kind) {
#define QUANTC_CASE(name)                         \
  case NodeKind::name:                            \
    visit_##name(static_cast<const name&>(node)); \
    return;
    QUANTC_STMT_NODES(QUANTC_CASE)
#undef QUANTC_CASE
  }
}

void IRVisitor::visit_Literal(const Literal&) {}
void IRVisitor::visit_Var(const Var&) {}
void IRVisitor::visit_Load(const Load& node) { visit(node.index); }
void IRVisitor::visit_Binary(const Binary& node) {
  visit(node.lhs);
  visit(node.rhs);
}
void IRVisitor::visit_Unary(const Unary& node) { visit(node.operand); }
void IRVisitor::visit_Cast(const Cast& node) { visit(node.value); }
void IRVisitor::visit_Bitcast(const Bitcast& node) { visit(node.value); }
void IRVisitor::visit_Select(const Select& node) {
  visit(node.cond);
  visit(node.if_true);
  visit(node.if_false);
}
void IRVisitor::visit_Fma(const Fma& node) {
  visit(node.a);
  visit(node.b);
  visit(node.c);
}
void IRVisitor::visit_MakeVector(const MakeVector& node) {
  for (const Expr& lane : node.lanes) visit(lane);
}
void IRVisitor::visit_ExtractLane(const ExtractLane& node) { visit(node.vector); }
void IRVisitor::visit_InsertLane(const InsertLane& node) {
  visit(node.vector);
  visit(node.value);
}
void IRVisitor::visit_Permute(const Permute& node) {
  visit(node.a);
  visit(node.b);
  visit(node.selector);
}
void IRVisitor::visit_BufferLength(const BufferLength&) {}
void IRVisitor::visit_Builtin(const Builtin&) {}
void IRVisitor::visit_SubgroupShuffle(const SubgroupShuffle& node) {
  visit(node.value);
  visit(node.lane);
}
void IRVisitor::visit_SubgroupReduce(const SubgroupReduce& node) { visit(node.value); }
void IRVisitor::visit_SubgroupBallot(const SubgroupBallot& node) { visit(node.cond); }
void IRVisitor::visit_SubgroupLoadMatrix(const SubgroupLoadMatrix& node) { visit(node.index); }
void IRVisitor::visit_SubgroupMma(const SubgroupMma& node) {
  visit(node.a);
  visit(node.b);
  visit(node.c);
}
void IRVisitor::visit_Lookup(const Lookup& node) { visit(node.index); }
void IRVisitor::visit_AtomicAdd(const AtomicAdd& node) {
  visit(node.index);
  visit(node.value);
}

void IRVisitor::visit_Let(const Let& node) { visit(node.value); }
void IRVisitor::visit_Assign(const Assign& node) { visit(node.value); }
void IRVisitor::visit_Store(const Store& node) {
  visit(node.index);
  visit(node.value);
}
void IRVisitor::visit_If(const If& node) {
  visit(node.cond);
  visit(node.then_body);
  visit(node.else_body);
}
void IRVisitor::visit_Loop(const Loop& node) {
  visit(node.from);
  visit(node.to);
  visit(node.body);
}
void IRVisitor::visit_Block(const Block& node) {
  for (const Node& stmt : node.stmts) visit(stmt);
}
void IRVisitor::visit_Region(const Region& node) { visit(node.body); }
void IRVisitor::visit_Barrier(const Barrier&) {}
void IRVisitor::visit_Fence(const Fence&) {}
void IRVisitor::visit_AsyncCopy(const AsyncCopy& node) {
  visit(node.array_index);
  visit(node.buffer_index);
}
void IRVisitor::visit_AsyncCommit(const AsyncCommit&) {}
void IRVisitor::visit_AsyncWait(const AsyncWait&) {}
void IRVisitor::visit_Return(const Return&) {}

}  // namespace quantc::ir
