// Loop-invariant code motion (see Passes.h). Unlike Halide's LICM this lifts loads,
// which needs two guarantees: the buffer is read-only (the value cannot change inside
// the loop) and evaluating the load earlier cannot fail. The second comes from the range
// analysis (index provably below the buffer's count), or from the load having run
// unconditionally in the first iteration of a loop that provably runs at least once.
// A load under a guard inside the loop never moves above that guard on the second
// ground: the guard may be what keeps it in bounds.
#include <algorithm>
#include <string_view>
#include <vector>

#include "ir/IRVisitor.h"
#include "ir/analysis/Structure.h"
#include "ir/analysis/ValueRange.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;

/// Names as views into the program's nodes (which outlive the pass): the sets here are
/// small, so a scan beats hashing and allocating strings.
using Names = std::vector<std::string_view>;

bool contains(const Names& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// True when `expr` reads a variable in `names`.
bool reads_any(const Expr& expr, const Names& names) {
  struct Finder : IRVisitor {
    explicit Finder(const Names& names) : names(names) {}
    const Names& names;
    bool found = false;
    void visit_Var(const Var& node) override { found = found || contains(names, node.name); }
  } finder(names);
  finder.visit(expr);
  return finder.found;
}

/// Which lets may move out of a loop, ranges aside: a name declared once in the program
/// (so it cannot clash where it lands), never assigned, no subgroup operation or load
/// from a writable buffer, and no read of a variable the loop body declares or assigns.
class Invariance {
 public:
  explicit Invariance(const Program& program) : program_(program) {
    analysis::for_each_statement(program.entry, [&](const NodeBase& stmt) {
      if (stmt.kind == NodeKind::Let) declared_.push_back(static_cast<const Let&>(stmt).name);
      if (stmt.kind == NodeKind::Loop) declared_.push_back(static_cast<const Loop&>(stmt).var);
      if (stmt.kind == NodeKind::Assign) assigned_.push_back(static_cast<const Assign&>(stmt).name);
    });
    std::sort(declared_.begin(), declared_.end());
  }

  /// The names a loop's iterations may change: its variable and everything its body
  /// declares or assigns.
  static Names variant_names(const Loop& loop) {
    Names variant{loop.var};
    analysis::for_each_statement(loop.body, [&](const NodeBase& stmt) {
      if (stmt.kind == NodeKind::Let) variant.push_back(static_cast<const Let&>(stmt).name);
      if (stmt.kind == NodeKind::Loop) variant.push_back(static_cast<const Loop&>(stmt).var);
      if (stmt.kind == NodeKind::Assign) variant.push_back(static_cast<const Assign&>(stmt).name);
    });
    return variant;
  }

  bool invariant(const Let& let, const Names& variant) const {
    auto [first, last] = std::equal_range(declared_.begin(), declared_.end(), std::string_view(let.name));
    if (last - first != 1 || contains(assigned_, let.name)) return false;
    if (analysis::has_subgroup_op(let.value) || analysis::loads_writable_buffer(let.value, program_)) return false;
    return !reads_any(let.value, variant);
  }

  /// Whether some loop holds a let that is invariant as the program stands (at its body's
  /// top level or in the body's ifs, where the pass looks). A let that becomes invariant
  /// only once another moves depends on that one, which is found first; so when nothing
  /// is found, the pass has nothing to do and its range-tracking walk can be skipped.
  bool any_candidate(const Node& root) const {
    bool found = false;
    analysis::for_each_statement(root, [&](const NodeBase& stmt) {
      if (found || stmt.kind != NodeKind::Loop) return;
      const Loop& loop = static_cast<const Loop&>(stmt);
      found = candidate_in(loop.body, variant_names(loop));
    });
    return found;
  }

 private:
  bool candidate_in(const Node& block, const Names& variant) const {
    for (const Node& stmt : block.as<Block>()->stmts) {
      if (const Let* let = stmt.as<Let>(); let && invariant(*let, variant)) return true;
      if (const If* branch = stmt.as<If>()) {
        if (candidate_in(branch->then_body, variant) || candidate_in(branch->else_body, variant)) return true;
      }
    }
    return false;
  }

  const Program& program_;
  Names declared_;  // sorted, with repeats
  Names assigned_;
};

class InvariantHoister : public analysis::RangeTrackingMutator {
 public:
  InvariantHoister(const Program& program, const Invariance& invariance)
      : RangeTrackingMutator(program), invariance_(invariance) {}

 protected:
  Node mutate_Loop(const Loop& node, const Node& self) override {
    Node result = RangeTrackingMutator::mutate_Loop(node, self);  // inner loops first
    const Loop& loop = *result.as<Loop>();
    // Nothing to hoist without a let at the body's top level or in its ifs.
    bool has_let = false;
    for (const Node& stmt : loop.body.as<Block>()->stmts) has_let |= stmt.kind() == NodeKind::Let || stmt.kind() == NodeKind::If;
    if (!has_let) return result;
    variant_ = Invariance::variant_names(loop);
    analysis::ValueRange from = analysis::range_of(loop.from, ranges_), to = analysis::range_of(loop.to, ranges_);
    runs_at_least_once_ = !is_signed(loop.from.type()) && from.max < to.min;
    std::vector<Node> hoisted;
    Node body = extract(loop.body, true, hoisted);
    if (hoisted.empty()) return result;
    hoisted.push_back(Loop::make(loop.var, loop.from, loop.to, body));
    return Block::make(std::move(hoisted));  // spliced into the enclosing block
  }

 private:
  bool invariant(const Let& let) const { return invariance_.invariant(let, variant_); }

  /// `block` without the lets that move, which are appended to `hoisted` in order.
  /// `unconditional`: the block runs in every iteration (the loop body itself).
  Node extract(const Node& block_node, bool unconditional, std::vector<Node>& hoisted) {
    const Block& block = *block_node.as<Block>();
    std::vector<Node> kept;
    bool changed = false;
    bool may_have_returned = false;
    for (const Node& stmt : block.stmts) {
      if (const Let* let = stmt.as<Let>(); let && invariant(*let)) {
        bool safe = !analysis::may_trap(let->value) || analysis::proven_safe(let->value, ranges_) ||
                    (unconditional && !may_have_returned && runs_at_least_once_);
        if (safe) {
          hoisted.push_back(stmt);
          variant_.erase(std::find(variant_.begin(), variant_.end(), std::string_view(let->name)));
          changed = true;
          continue;
        }
      }
      if (const If* branch = stmt.as<If>()) {
        Node then_body = extract(branch->then_body, false, hoisted);
        Node else_body = extract(branch->else_body, false, hoisted);
        if (!then_body.same_as(branch->then_body) || !else_body.same_as(branch->else_body)) {
          kept.push_back(If::make(branch->cond, then_body, else_body));
          changed = true;
        } else {
          kept.push_back(stmt);
        }
      } else {
        kept.push_back(stmt);
      }
      may_have_returned |= analysis::contains_return(stmt);
    }
    return changed ? Block::make(std::move(kept)) : block_node;
  }

  const Invariance& invariance_;
  Names variant_;
  bool runs_at_least_once_ = false;
};

}  // namespace

ir::Program hoist_loop_invariants(ir::Program program) {
  Invariance invariance(program);
  if (!invariance.any_candidate(program.entry)) return program;
  InvariantHoister hoister(program, invariance);
  ir::Node entry = hoister.mutate(program.entry);
  program.entry = entry;
  return program;
}

}  // namespace quantc::lower
