// Constant folding and algebraic simplification (see Passes.h). Folding follows the
// SEMANTICS block of ir/IR.h exactly; where the host's result could differ from the
// interpreter's bits (f16 arithmetic, NaN payloads, signed zeros in min/max, double
// rounding into f16) the expression is left alone.
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <optional>

#include "ir/Arithmetic.h"
#include "ir/analysis/Structure.h"
#include "ir/analysis/ValueRange.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;
using analysis::may_trap;
using analysis::range_of;
using analysis::ValueRange;

bool is_unsigned_integer(Type type) { return type.is_scalar() && is_integer(type) && !is_signed(type); }

/// ~0 in `type`'s Literal encoding (signed types sign-extend to all 64 bits).
std::uint64_t all_ones(ScalarType type) {
  const unsigned bits = bit_width(type);
  const bool sign_extended = is_integer(type) && is_signed(type);
  return sign_extended || bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

bool is_power_of_two(std::uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

// --- literal evaluation: ir/Arithmetic.h, the interpreter's own definition ----------

/// `a op b` on literals, or nullopt when evaluating it would trap at run time (integer
/// division by zero), which must stay for the interpreter to report.
std::optional<Expr> fold_binary(BinaryOp op, const Literal& a, const Literal& b) {
  std::optional<std::uint64_t> bits = arith::evaluate_binary(op, a.scalar(), a.bits, b.bits);
  if (!bits) return std::nullopt;
  bool boolean = is_comparison(op) || op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr;
  return Literal::make(boolean ? ScalarType::Bool : a.scalar(), *bits);
}

std::optional<Expr> fold_unary(UnaryOp op, const Literal& a) {
  std::optional<std::uint64_t> bits = arith::evaluate_unary(op, a.scalar(), a.bits);
  if (!bits) return std::nullopt;
  return Literal::make(a.scalar(), *bits);
}

Expr fold_cast(ScalarType target, const Literal& a) {
  return Literal::make(target, arith::evaluate_cast(target, a.scalar(), a.bits));
}

// --- the simplifier -------------------------------------------------------------------

class Simplifier : public analysis::RangeTrackingMutator {
 public:
  using RangeTrackingMutator::RangeTrackingMutator;
  using IRMutator::mutate;

  Expr simplify(const Expr& expr) { return mutate(expr); }

 protected:
  Expr mutate_Var(const Var& node, const Expr& self) override {
    for (auto entry = substitutions_.rbegin(); entry != substitutions_.rend(); ++entry) {
      if (entry->first == node.name) return entry->second;
    }
    return self;
  }

  Expr mutate_BufferLength(const BufferLength& node, const Expr& self) override {
    const BufferDecl* buffer = ranges_.program().find_buffer(node.buffer);
    return buffer ? Literal::u32(buffer->count) : self;
  }

  Expr mutate_Builtin(const Builtin& node, const Expr& self) override {
    const Program& program = ranges_.program();
    switch (node.builtin) {
      case BuiltinKind::SubgroupSize:
        return Literal::u32(32);
      case BuiltinKind::LocalId:
        return program.workgroup_size[node.axis] == 1 ? Literal::u32(0) : self;
      case BuiltinKind::WorkgroupId:
        return program.workgroup_count[node.axis] == 1 ? Literal::u32(0) : self;
      default:
        return self;
    }
  }

  Expr mutate_Unary(const Unary& node, const Expr& self) override {
    Expr operand = mutate(node.operand);
    if (const Literal* literal = operand.as<Literal>()) {
      if (auto folded = fold_unary(node.op, *literal)) return *folded;
    }
    if (const Unary* inner = operand.as<Unary>(); inner && inner->op == node.op && !is_float(node.type) &&
                                                  (node.op == UnaryOp::Not || node.op == UnaryOp::Neg)) {
      return inner->operand;
    }
    return operand.same_as(node.operand) ? self : Unary::make(node.op, operand);
  }

  Expr mutate_Cast(const Cast& node, const Expr& self) override {
    Expr value = mutate(node.value);
    if (value.type() == node.type) return value;
    if (const Literal* literal = value.as<Literal>(); literal && node.type.is_scalar()) {
      return fold_cast(node.type.element(), *literal);
    }
    return value.same_as(node.value) ? self : Cast::make(node.type, value);
  }

  Expr mutate_Select(const Select& node, const Expr& self) override {
    Expr cond = mutate(node.cond), if_true = mutate(node.if_true), if_false = mutate(node.if_false);
    if (const Literal* literal = cond.as<Literal>()) return literal->bits ? if_true : if_false;
    // Both branches are evaluated anyway; dropping the condition must not drop a trap.
    if (analysis::structurally_equal(if_true, if_false) && droppable(cond)) return if_true;
    const Literal *t = if_true.as<Literal>(), *f = if_false.as<Literal>();
    if (t && f && t->scalar() == ScalarType::Bool) {
      if (t->bits && !f->bits) return cond;                                 // select(c, true, false)
      if (!t->bits && f->bits) return simplify(Unary::make(UnaryOp::Not, cond));  // select(c, false, true)
    }
    if (cond.same_as(node.cond) && if_true.same_as(node.if_true) && if_false.same_as(node.if_false)) return self;
    return Select::make(cond, if_true, if_false);
  }

  Expr mutate_Fma(const Fma& node, const Expr& self) override {
    Expr a = mutate(node.a), b = mutate(node.b), c = mutate(node.c);
    const Literal *x = a.as<Literal>(), *y = b.as<Literal>(), *z = c.as<Literal>();
    if (x && y && z) {
      return Literal::make(x->scalar(), *arith::evaluate_fma(x->scalar(), x->bits, y->bits, z->bits));
    }
    if (a.same_as(node.a) && b.same_as(node.b) && c.same_as(node.c)) return self;
    return Fma::make(a, b, c);
  }

  Expr mutate_Lookup(const Lookup& node, const Expr& self) override {
    Expr index = mutate(node.index);
    if (const Literal* literal = index.as<Literal>(); literal && literal->bits < node.table.size()) {
      return Literal::make(node.scalar(), node.table[literal->bits]);
    }
    return index.same_as(node.index) ? self : Lookup::make(node.scalar(), node.table, index);
  }

  Expr mutate_Binary(const Binary& node, const Expr& self) override {
    Expr lhs = mutate(node.lhs), rhs = mutate(node.rhs);
    if (Expr simplified = simplify_binary(node.op, lhs, rhs); simplified.defined()) {
      // A rewrite (commuting, div -> shift, ...) may enable further rules.
      for (int step = 0; step < 8; ++step) {
        const Binary* binary = simplified.as<Binary>();
        if (binary == nullptr) break;
        Expr again = simplify_binary(binary->op, binary->lhs, binary->rhs);
        if (!again.defined()) break;
        simplified = again;
      }
      return simplified;
    }
    if (lhs.same_as(node.lhs) && rhs.same_as(node.rhs)) return self;
    return Binary::make(node.op, lhs, rhs);
  }

  Node mutate_Let(const Let& node, const Node& self) override {
    Expr value = mutate(node.value);
    // Constant and copy propagation: uses of a never-assigned name see the value.
    if (!ranges_.is_assigned(node.name)) {
      const Var* alias = value.as<Var>();
      if (value.as<Literal>() || (alias && !ranges_.is_assigned(alias->name))) substitutions_.emplace_back(node.name, value);
    }
    return value.same_as(node.value) ? self : Let::make(node.name, value);
  }

  Node mutate_Loop(const Loop& node, const Node& self) override {
    Node result = RangeTrackingMutator::mutate_Loop(node, self);
    const Loop* loop = result.as<Loop>();
    if (is_unsigned_integer(loop->from.type()) && !analysis::has_subgroup_op(loop->from)) {
      ValueRange from = range_of(loop->from, ranges_), to = range_of(loop->to, ranges_);
      if (to.max <= from.min && !may_trap(loop->from) && !may_trap(loop->to)) return Node();  // never runs
    }
    if (runs_exactly_once(*loop) && droppable(loop->to)) {
      if (std::optional<std::set<std::string>> clashes = splice_clashes(node, *loop)) return splice_once(*loop, *clashes);
    }
    return result;
  }

  Node mutate_Block(const Block& node, const Node& self) override {
    std::size_t substitutions = substitutions_.size();
    blocks_.push_back(&node);
    Node result = RangeTrackingMutator::mutate_Block(node, self);
    blocks_.pop_back();
    substitutions_.resize(substitutions);
    return splice_constant_ifs(result);
  }

 private:
  /// Whether evaluating `expr` may be skipped: it cannot trap, or the ranges prove it safe.
  bool droppable(const Expr& expr) const { return !may_trap(expr) || analysis::proven_safe(expr, ranges_); }

  /// The loop provably runs exactly one iteration for every invocation.
  bool runs_exactly_once(const Loop& loop) const {
    const Literal* from = loop.from.as<Literal>();
    const Literal* to = loop.to.as<Literal>();
    if (from && to) {
      if (is_signed(loop.from.type())) return to->as_int64() - from->as_int64() == 1 && to->as_int64() > from->as_int64();
      return to->bits == from->bits + 1 && to->bits > from->bits;
    }
    if (!is_unsigned_integer(loop.from.type()) || analysis::has_subgroup_op(loop.from)) return false;
    ValueRange a = range_of(loop.from, ranges_);
    if (a.max == ValueRange::full(loop.from.type()).max) return false;  // from + 1 may wrap
    if (const Binary* sum = loop.to.as<Binary>(); sum && sum->op == BinaryOp::Add) {
      const Literal* one = sum->rhs.as<Literal>();
      if (one && one->bits == 1 && analysis::structurally_equal(sum->lhs, loop.from)) return true;  // a .. a+1
    }
    ValueRange b = range_of(loop.to, ranges_);
    return a.is_constant() && b.is_constant() && b.min == a.min + 1;
  }

  /// The names that would clash if the loop variable and the body's top-level lets
  /// joined the enclosing block: those a statement after the loop in that block
  /// declares too. nullopt when the enclosing block is unknown.
  std::optional<std::set<std::string>> splice_clashes(const Loop& original, const Loop& loop) const {
    if (blocks_.empty()) return std::nullopt;
    const std::vector<Node>& siblings = blocks_.back()->stmts;
    std::size_t position = 0;
    while (position < siblings.size() && siblings[position].get() != &original) ++position;
    if (position == siblings.size()) return std::nullopt;
    std::set<std::string> moving{loop.var};
    for (const Node& stmt : loop.body.as<Block>()->stmts) {
      if (const Let* let = stmt.as<Let>()) moving.insert(let->name);
    }
    std::set<std::string> clashes;
    for (std::size_t j = position + 1; j < siblings.size(); ++j) {
      analysis::for_each_statement(siblings[j], [&](const NodeBase& stmt) {
        const std::string* name = stmt.kind == NodeKind::Let    ? &static_cast<const Let&>(stmt).name
                                  : stmt.kind == NodeKind::Loop ? &static_cast<const Loop&>(stmt).var
                                                                : nullptr;
        if (name && moving.count(*name)) clashes.insert(*name);
      });
    }
    return clashes;
  }

  /// `for v in a .. a+1 { body }` -> `let v = a; body` in the enclosing block (spliced
  /// by the Block walk), renaming the variables in `clashes` to fresh names. Every
  /// invocation runs the body once, so the body runs under the same control as the loop
  /// did: subgroup operations in it stay where the whole subgroup runs them, and a Return
  /// in it ends the invocation either way.
  Node splice_once(const Loop& loop, const std::set<std::string>& clashes) {
    std::map<std::string, Expr> renames;
    std::string var = loop.var;
    if (clashes.count(var)) {
      var = names().fresh(var);
      renames[loop.var] = Var::make(loop.from.type(), var);
    }
    for (const Node& stmt : loop.body.as<Block>()->stmts) {
      if (const Let* let = stmt.as<Let>(); let && clashes.count(let->name)) {
        renames[let->name] = Var::make(let->value.type(), names().fresh(let->name));
      }
    }
    const Node body = analysis::rename_variables(loop.body, renames);
    std::vector<Node> stmts{Let::make(var, loop.from)};
    const std::vector<Node>& body_stmts = body.as<Block>()->stmts;
    stmts.insert(stmts.end(), body_stmts.begin(), body_stmts.end());
    return Block::make(std::move(stmts));
  }

  analysis::NameSupply& names() {
    if (!names_) names_.emplace(ranges_.program().entry);
    return *names_;
  }

  /// `if true { A } else { B }` -> A's statements in place (likewise for false), when
  /// A's top-level names do not clash with names declared later in the block.
  static Node splice_constant_ifs(const Node& block_node) {
    const Block& block = *block_node.as<Block>();
    std::vector<Node> stmts;
    bool changed = false;
    for (std::size_t i = 0; i < block.stmts.size(); ++i) {
      const If* branch = block.stmts[i].as<If>();
      const Literal* cond = branch ? branch->cond.as<Literal>() : nullptr;
      if (cond == nullptr) {
        stmts.push_back(block.stmts[i]);
        continue;
      }
      const Block& taken = *(cond->bits ? branch->then_body : branch->else_body).as<Block>();
      std::set<std::string> later;
      for (std::size_t j = i + 1; j < block.stmts.size(); ++j) {
        std::set<std::string> names = analysis::declared_names(block.stmts[j]);
        later.insert(names.begin(), names.end());
      }
      bool clash = false;
      for (const Node& stmt : taken.stmts) {
        if (const Let* let = stmt.as<Let>(); let && later.count(let->name)) clash = true;
      }
      if (clash) {
        stmts.push_back(block.stmts[i]);
        continue;
      }
      changed = true;
      stmts.insert(stmts.end(), taken.stmts.begin(), taken.stmts.end());
    }
    return changed ? Block::make(std::move(stmts)) : block_node;
  }

  /// The simplified `lhs op rhs`, or undefined when no rule applies.
  Expr simplify_binary(BinaryOp op, const Expr& lhs, const Expr& rhs) {
    if (lhs.type().is_vector()) return Expr();
    const ScalarType type = lhs.type().element();
    const Literal* a = lhs.as<Literal>();
    const Literal* b = rhs.as<Literal>();
    if (a && b) {
      if (auto folded = fold_binary(op, *a, *b)) return *folded;
      return Expr();
    }
    if (is_float(type)) return Expr();  // float identities are not bit-exact (x+0 with x=-0, NaN payloads)
    if (a && is_commutative(op)) {      // canonical order: literal on the right
      return Binary::make(op, rhs, lhs);
    }
    if (Expr identity = apply_identity(op, lhs, rhs); identity.defined()) return identity;
    if (Expr same = same_operands(op, lhs, rhs); same.defined()) return same;
    if (Expr chain = reassociate(op, lhs, rhs); chain.defined()) return chain;
    if (Expr decided = decide_by_range(op, lhs, rhs); decided.defined()) return decided;
    return Expr();
  }

  Expr apply_identity(BinaryOp op, const Expr& lhs, const Expr& rhs) {
    const ScalarType type = lhs.type().element();
    const Literal* b = rhs.as<Literal>();
    if (type == ScalarType::Bool && (op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr)) {
      if (!b) return Expr();
      bool absorbing = op == BinaryOp::LogicalAnd ? b->bits == 0 : b->bits == 1;
      if (!absorbing) return lhs;
      return droppable(lhs) ? rhs : Expr();
    }
    if (const Literal* a = lhs.as<Literal>(); a && a->bits == 0 && (op == BinaryOp::Shl || op == BinaryOp::Shr)) {
      return droppable(rhs) ? lhs : Expr();  // 0 << x, 0 >> x
    }
    if (!b) return Expr();
    std::uint64_t ones = all_ones(type);
    bool zero = b->bits == 0, one = b->bits == 1, full = b->bits == ones;
    auto constant = [&](std::uint64_t bits) { return droppable(lhs) ? Literal::make(type, bits) : Expr(); };
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::BitOr:
      case BinaryOp::BitXor:
      case BinaryOp::Shl:
      case BinaryOp::Shr:
        if (zero) return lhs;
        if (op == BinaryOp::BitOr && full) return constant(ones);
        break;
      case BinaryOp::Mul:
        if (one) return lhs;
        if (zero) return constant(0);
        break;
      case BinaryOp::Div:
        if (one) return lhs;
        if (is_unsigned_integer(type) && is_power_of_two(b->bits)) {
          return Binary::make(BinaryOp::Shr, lhs, Literal::make(type, std::countr_zero(b->bits)));
        }
        break;
      case BinaryOp::Rem:
        if (one) return constant(0);
        if (is_unsigned_integer(type) && is_power_of_two(b->bits)) {
          return Binary::make(BinaryOp::BitAnd, lhs, Literal::make(type, b->bits - 1));
        }
        break;
      case BinaryOp::BitAnd:
        if (full) return lhs;
        if (zero) return constant(0);
        break;
      default:
        break;
    }
    return Expr();
  }

  /// `x op x` for integers and bool: x & x, x | x, min/max(x, x) -> x; x - x, x ^ x -> 0;
  /// comparisons of x with itself -> true/false (x evaluated once either way for the
  /// first group; the others drop x, so x must be droppable).
  Expr same_operands(BinaryOp op, const Expr& lhs, const Expr& rhs) {
    if (!analysis::structurally_equal(lhs, rhs)) return Expr();
    const ScalarType type = lhs.type().element();
    switch (op) {
      case BinaryOp::BitAnd:
      case BinaryOp::BitOr:
      case BinaryOp::Min:
      case BinaryOp::Max:
      case BinaryOp::LogicalAnd:
      case BinaryOp::LogicalOr:
        return lhs;
      case BinaryOp::Sub:
      case BinaryOp::BitXor:
        return droppable(lhs) ? Literal::make(type, 0) : Expr();
      case BinaryOp::Eq:
      case BinaryOp::Le:
      case BinaryOp::Ge:
        return droppable(lhs) ? Literal::boolean(true) : Expr();
      case BinaryOp::Ne:
      case BinaryOp::Lt:
      case BinaryOp::Gt:
        return droppable(lhs) ? Literal::boolean(false) : Expr();
      default:
        return Expr();
    }
  }

  /// (x op c1) op c2 -> x op (c1 op c2) for associative integer ops; +/- chains too.
  Expr reassociate(BinaryOp op, const Expr& lhs, const Expr& rhs) {
    const Literal* c2 = rhs.as<Literal>();
    const Binary* inner = lhs.as<Binary>();
    if (!c2 || !inner || !inner->rhs.as<Literal>() || lhs.type() == ScalarType::Bool) return Expr();
    const Literal& c1 = *inner->rhs.as<Literal>();
    auto fold = [&](BinaryOp fold_op, BinaryOp result_op) -> Expr {
      auto folded = fold_binary(fold_op, c1, *c2);
      return folded ? Binary::make(result_op, inner->lhs, *folded) : Expr();
    };
    bool chainable = op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::BitAnd || op == BinaryOp::BitOr ||
                     op == BinaryOp::BitXor;
    if (chainable && inner->op == op) return fold(op, op);
    if (op == BinaryOp::Add && inner->op == BinaryOp::Sub) return fold(BinaryOp::Sub, BinaryOp::Sub);  // x-c1+c2 = x-(c1-c2)
    if (op == BinaryOp::Sub && inner->op == BinaryOp::Add) return fold(BinaryOp::Sub, BinaryOp::Add);  // x+c1-c2 = x+(c1-c2)
    if (op == BinaryOp::Sub && inner->op == BinaryOp::Sub) return fold(BinaryOp::Add, BinaryOp::Sub);
    return Expr();
  }

  Expr decide_by_range(BinaryOp op, const Expr& lhs, const Expr& rhs) {
    if (lhs.type().is_vector()) return Expr();
    const ScalarType type = lhs.type().element();
    if (!is_unsigned_integer(type)) return Expr();
    switch (op) {  // the operators a range can decide; the others need no ranges
      case BinaryOp::Rem:
      case BinaryOp::Div:
      case BinaryOp::Shr:
      case BinaryOp::BitAnd:
      case BinaryOp::Min:
      case BinaryOp::Max:
        break;
      default:
        if (!is_comparison(op)) return Expr();
    }
    // A decided result drops an operand (or both): neither may trap, unless the ranges
    // prove every load in bounds and every divisor non-zero.
    if (!droppable(lhs) || !droppable(rhs)) return Expr();
    ValueRange a = range_of(lhs, ranges_), b = range_of(rhs, ranges_);
    if (is_comparison(op)) {
      if (auto decided = analysis::decide_comparison(op, a, b)) return Literal::boolean(*decided);
      return Expr();
    }
    const Literal* literal = rhs.as<Literal>();
    switch (op) {
      case BinaryOp::Rem:
        if (literal && a.max < literal->bits) return lhs;
        break;
      case BinaryOp::Div:
      case BinaryOp::Shr:
        if (literal && op == BinaryOp::Div && a.max < literal->bits) return Literal::make(type, 0);
        if (literal && op == BinaryOp::Shr && literal->bits < 64 && (a.max >> literal->bits) == 0) {
          return Literal::make(type, 0);
        }
        break;
      case BinaryOp::BitAnd:
        // x & (2^k - 1) with x < 2^k is x.
        if (literal && is_power_of_two(literal->bits + 1) && a.max <= literal->bits) return lhs;
        break;
      case BinaryOp::Min:
        if (a.max <= b.min) return lhs;
        if (b.max <= a.min) return rhs;
        break;
      case BinaryOp::Max:
        if (a.min >= b.max) return lhs;
        if (b.min >= a.max) return rhs;
        break;
      default:
        break;
    }
    return Expr();
  }

  std::vector<std::pair<std::string, Expr>> substitutions_;
  std::vector<const Block*> blocks_;  // the blocks being walked, innermost last
  std::optional<analysis::NameSupply> names_;
};

}  // namespace

ir::Program fold_constants(ir::Program program) {
  Simplifier simplifier(program);
  ir::Node entry = simplifier.mutate(program.entry);
  program.entry = entry;
  return program;
}

ir::Expr simplify_expr(const ir::Expr& expr, const ir::Program& context) {
  Simplifier simplifier(context);
  return simplifier.simplify(expr);
}

}  // namespace quantc::lower
