// Loop-invariant code motion (see Passes.h). Unlike Halide's LICM this lifts loads,
// which needs two guarantees: the buffer is read-only (the value cannot change inside
// the loop) and evaluating the load earlier cannot fail. The second comes from the range
// analysis (index provably below the buffer's count), or from the load having run
// unconditionally in the first iteration of a loop that provably runs at least once.
// A load under a guard inside the loop never moves above that guard on the second
// ground: the guard may be what keeps it in bounds.
#include <map>

#include "ir/IRVisitor.h"
#include "ir/analysis/Structure.h"
#include "ir/analysis/ValueRange.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;

/// How many times each name is declared in the program: a Let moves to an enclosing
/// scope only when its name is declared once (so it cannot clash there).
class DeclarationCounter : public IRVisitor {
 public:
  std::map<std::string, int> counts;

 protected:
  void visit_Let(const Let& node) override {
    ++counts[node.name];
    IRVisitor::visit_Let(node);
  }
  void visit_Loop(const Loop& node) override {
    ++counts[node.var];
    IRVisitor::visit_Loop(node);
  }
};

class InvariantHoister : public analysis::RangeTrackingMutator {
 public:
  explicit InvariantHoister(const Program& program) : RangeTrackingMutator(program), program_(program) {
    DeclarationCounter counter;
    counter.visit(program.entry);
    declarations_ = counter.counts;
  }

 protected:
  Node mutate_Loop(const Loop& node, const Node& self) override {
    Node result = RangeTrackingMutator::mutate_Loop(node, self);  // inner loops first
    const Loop& loop = *result.as<Loop>();
    variant_ = analysis::declared_names(loop.body);
    std::set<std::string> assigned = analysis::assigned_variables(loop.body);
    variant_.insert(assigned.begin(), assigned.end());
    variant_.insert(loop.var);
    analysis::ValueRange from = analysis::range_of(loop.from, ranges_), to = analysis::range_of(loop.to, ranges_);
    runs_at_least_once_ = !is_signed(loop.from.type()) && from.max < to.min;
    std::vector<Node> hoisted;
    Node body = extract(loop.body, true, hoisted);
    if (hoisted.empty()) return result;
    hoisted.push_back(Loop::make(loop.var, loop.from, loop.to, body));
    return Block::make(std::move(hoisted));  // spliced into the enclosing block
  }

 private:
  bool invariant(const Let& let) const {
    if (declarations_.at(let.name) != 1 || ranges_.is_assigned(let.name)) return false;
    if (analysis::has_subgroup_op(let.value) || analysis::loads_writable_buffer(let.value, program_)) return false;
    for (const std::string& name : analysis::used_variables(let.value)) {
      if (variant_.count(name)) return false;
    }
    return true;
  }

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
          variant_.erase(let->name);
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

  const Program& program_;
  std::map<std::string, int> declarations_;
  std::set<std::string> variant_;
  bool runs_at_least_once_ = false;
};

}  // namespace

ir::Program hoist_loop_invariants(ir::Program program) {
  InvariantHoister hoister(program);
  ir::Node entry = hoister.mutate(program.entry);
  program.entry = entry;
  return program;
}

}  // namespace quantc::lower
