#include "ir/IRMutator.h"

namespace quantc::ir {

Expr IRMutator::mutate(const Expr& expr) {
  if (!expr.defined()) return expr;
  switch (expr.kind()) {
#define QUANTC_CASE(name) \
  case ExprKind::name:    \
    return mutate_##name(*expr.as<name>(), expr);
    QUANTC_EXPR_NODES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return expr;
}

Node IRMutator::mutate(const Node& node) {
  if (!node.defined()) return node;
  switch (node.kind()) {
#define QUANTC_CASE(name) \
  case NodeKind::name:    \
    return mutate_##name(*node.as<name>(), node);
    QUANTC_STMT_NODES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return node;
}

Expr IRMutator::mutate_Literal(const Literal&, const Expr& self) { return self; }
Expr IRMutator::mutate_Var(const Var&, const Expr& self) { return self; }
Expr IRMutator::mutate_BufferLength(const BufferLength&, const Expr& self) { return self; }
Expr IRMutator::mutate_Builtin(const Builtin&, const Expr& self) { return self; }

Expr IRMutator::mutate_Load(const Load& node, const Expr& self) {
  Expr index = mutate(node.index);
  return index.same_as(node.index) ? self : Load::make(node.type, node.buffer, index, node.alignment, node.reinterpret);
}

Expr IRMutator::mutate_Binary(const Binary& node, const Expr& self) {
  Expr lhs = mutate(node.lhs);
  Expr rhs = mutate(node.rhs);
  return lhs.same_as(node.lhs) && rhs.same_as(node.rhs) ? self : Binary::make(node.op, lhs, rhs);
}

Expr IRMutator::mutate_Unary(const Unary& node, const Expr& self) {
  Expr operand = mutate(node.operand);
  return operand.same_as(node.operand) ? self : Unary::make(node.op, operand);
}

Expr IRMutator::mutate_Cast(const Cast& node, const Expr& self) {
  Expr value = mutate(node.value);
  return value.same_as(node.value) ? self : Cast::make(node.type, value);
}

Expr IRMutator::mutate_Bitcast(const Bitcast& node, const Expr& self) {
  Expr value = mutate(node.value);
  return value.same_as(node.value) ? self : Bitcast::make(node.type, value);
}

Expr IRMutator::mutate_Select(const Select& node, const Expr& self) {
  Expr cond = mutate(node.cond);
  Expr if_true = mutate(node.if_true);
  Expr if_false = mutate(node.if_false);
  if (cond.same_as(node.cond) && if_true.same_as(node.if_true) && if_false.same_as(node.if_false)) return self;
  return Select::make(cond, if_true, if_false);
}

Expr IRMutator::mutate_Fma(const Fma& node, const Expr& self) {
  Expr a = mutate(node.a);
  Expr b = mutate(node.b);
  Expr c = mutate(node.c);
  if (a.same_as(node.a) && b.same_as(node.b) && c.same_as(node.c)) return self;
  return Fma::make(a, b, c);
}

Expr IRMutator::mutate_MakeVector(const MakeVector& node, const Expr& self) {
  std::vector<Expr> lanes;
  lanes.reserve(node.lanes.size());
  bool changed = false;
  for (const Expr& lane : node.lanes) {
    lanes.push_back(mutate(lane));
    changed |= !lanes.back().same_as(lane);
  }
  return changed ? MakeVector::make(std::move(lanes)) : self;
}

Expr IRMutator::mutate_ExtractLane(const ExtractLane& node, const Expr& self) {
  Expr vector = mutate(node.vector);
  return vector.same_as(node.vector) ? self : ExtractLane::make(vector, node.lane);
}

Expr IRMutator::mutate_InsertLane(const InsertLane& node, const Expr& self) {
  Expr vector = mutate(node.vector);
  Expr value = mutate(node.value);
  return vector.same_as(node.vector) && value.same_as(node.value) ? self : InsertLane::make(vector, node.lane, value);
}

Expr IRMutator::mutate_Permute(const Permute& node, const Expr& self) {
  Expr a = mutate(node.a);
  Expr b = mutate(node.b);
  Expr selector = mutate(node.selector);
  if (a.same_as(node.a) && b.same_as(node.b) && selector.same_as(node.selector)) return self;
  return Permute::make(a, b, selector);
}

Expr IRMutator::mutate_SubgroupShuffle(const SubgroupShuffle& node, const Expr& self) {
  Expr value = mutate(node.value);
  Expr lane = mutate(node.lane);
  return value.same_as(node.value) && lane.same_as(node.lane) ? self : SubgroupShuffle::make(value, lane);
}

Expr IRMutator::mutate_SubgroupReduce(const SubgroupReduce& node, const Expr& self) {
  Expr value = mutate(node.value);
  return value.same_as(node.value) ? self : SubgroupReduce::make(node.op, value);
}

Expr IRMutator::mutate_SubgroupBallot(const SubgroupBallot& node, const Expr& self) {
  Expr cond = mutate(node.cond);
  return cond.same_as(node.cond) ? self : SubgroupBallot::make(cond);
}

Expr IRMutator::mutate_SubgroupLoadMatrix(const SubgroupLoadMatrix& node, const Expr& self) {
  Expr index = mutate(node.index);
  return index.same_as(node.index) ? self : SubgroupLoadMatrix::make(node.array, index, node.matrices, node.transpose);
}

Expr IRMutator::mutate_SubgroupMma(const SubgroupMma& node, const Expr& self) {
  Expr a = mutate(node.a);
  Expr b = mutate(node.b);
  Expr c = mutate(node.c);
  return a.same_as(node.a) && b.same_as(node.b) && c.same_as(node.c) ? self : SubgroupMma::make(node.input, a, b, c);
}

Expr IRMutator::mutate_Lookup(const Lookup& node, const Expr& self) {
  Expr index = mutate(node.index);
  return index.same_as(node.index) ? self : Lookup::make(node.scalar(), node.table, index);
}

Expr IRMutator::mutate_AtomicAdd(const AtomicAdd& node, const Expr& self) {
  Expr index = mutate(node.index);
  Expr value = mutate(node.value);
  if (index.same_as(node.index) && value.same_as(node.value)) return self;
  return AtomicAdd::make(node.buffer, index, value);
}

Node IRMutator::mutate_Let(const Let& node, const Node& self) {
  Expr value = mutate(node.value);
  return value.same_as(node.value) ? self : Let::make(node.name, value);
}

Node IRMutator::mutate_Assign(const Assign& node, const Node& self) {
  Expr value = mutate(node.value);
  return value.same_as(node.value) ? self : Assign::make(node.name, value);
}

Node IRMutator::mutate_Store(const Store& node, const Node& self) {
  Expr index = mutate(node.index);
  Expr value = mutate(node.value);
  if (index.same_as(node.index) && value.same_as(node.value)) return self;
  return Store::make(node.buffer, index, value, node.alignment, node.reinterpret);
}

Node IRMutator::mutate_If(const If& node, const Node& self) {
  Expr cond = mutate(node.cond);
  Node then_body = mutate(node.then_body);
  Node else_body = mutate(node.else_body);
  if (cond.same_as(node.cond) && then_body.same_as(node.then_body) && else_body.same_as(node.else_body)) {
    return self;
  }
  return If::make(cond, then_body, else_body);
}

Node IRMutator::mutate_Loop(const Loop& node, const Node& self) {
  Expr from = mutate(node.from);
  Expr to = mutate(node.to);
  Node body = mutate(node.body);
  if (from.same_as(node.from) && to.same_as(node.to) && body.same_as(node.body)) return self;
  return Loop::make(node.var, from, to, body);
}

Node IRMutator::mutate_Block(const Block& node, const Node& self) {
  std::vector<Node> stmts;
  stmts.reserve(node.stmts.size());
  bool changed = false;
  for (const Node& stmt : node.stmts) {
    Node mutated = mutate(stmt);
    changed |= !mutated.same_as(stmt);
    // A mutator deletes a statement by returning an undefined Node.
    if (mutated.defined()) stmts.push_back(mutated);
  }
  return changed ? Block::make(std::move(stmts)) : self;
}

Node IRMutator::mutate_Region(const Region& node, const Node& self) {
  Node body = mutate(node.body);
  return body.same_as(node.body) ? self : Region::make(node.op_id, body);
}

Node IRMutator::mutate_Barrier(const Barrier&, const Node& self) { return self; }
Node IRMutator::mutate_Fence(const Fence&, const Node& self) { return self; }
Node IRMutator::mutate_AsyncCopy(const AsyncCopy& node, const Node& self) {
  Expr array_index = mutate(node.array_index);
  Expr buffer_index = mutate(node.buffer_index);
  if (array_index.same_as(node.array_index) && buffer_index.same_as(node.buffer_index)) return self;
  return AsyncCopy::make(node.array, array_index, node.buffer, buffer_index, node.bytes);
}
Node IRMutator::mutate_AsyncCommit(const AsyncCommit&, const Node& self) { return self; }
Node IRMutator::mutate_AsyncWait(const AsyncWait&, const Node& self) { return self; }
Node IRMutator::mutate_Return(const Return&, const Node& self) { return self; }

}  // namespace quantc::ir
