// Dead-code elimination (see Passes.h). A variable nobody reads is dead together with
// its Let and every Assign to it; dropping its value drops at most a load that the
// program never used (as every compiler does), never a store, an atomic (its Let stays)
// or a subgroup operation feeding a live value.
#include <string_view>
#include <unordered_set>

#include "ir/IRVisitor.h"

#include "ir/IRMutator.h"
#include "ir/analysis/Structure.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;

/// The names of the variables read anywhere under `node`; the views point into the
/// tree's Var nodes, so they are valid while `node` is.
std::unordered_set<std::string_view> read_variables(const Node& node) {
  struct Reads : IRVisitor {
    std::unordered_set<std::string_view> names;
    void visit_Var(const Var& var) override { names.insert(var.name); }
  } reads;
  reads.visit(node);
  return std::move(reads.names);
}

class DeadCodeRemover : public IRMutator {
 public:
  explicit DeadCodeRemover(std::unordered_set<std::string_view> read) : read_(std::move(read)) {}

 protected:
  // A Let whose value has a side effect (an AtomicAdd) stays even when nobody reads it.
  Node mutate_Let(const Let& node, const Node& self) override {
    return read_.count(node.name) || analysis::has_side_effect(node.value) ? self : Node();
  }
  Node mutate_Assign(const Assign& node, const Node& self) override { return read_.count(node.name) ? self : Node(); }

  Node mutate_If(const If& node, const Node& self) override {
    Node result = IRMutator::mutate_If(node, self);
    const If& branch = *result.as<If>();
    bool then_empty = branch.then_body.as<Block>()->stmts.empty();
    bool else_empty = branch.else_body.as<Block>()->stmts.empty();
    if (then_empty && else_empty) return Node();
    if (then_empty) return If::make(Unary::make(UnaryOp::Not, branch.cond), branch.else_body, Node());
    return result;
  }

  Node mutate_Loop(const Loop& node, const Node& self) override {
    Node result = IRMutator::mutate_Loop(node, self);
    if (result.as<Loop>()->body.as<Block>()->stmts.empty()) return Node();
    return result;
  }

  Node mutate_Region(const Region& node, const Node& self) override {
    Node result = IRMutator::mutate_Region(node, self);
    return result.as<Region>()->body.as<Block>()->stmts.empty() ? Node() : result;
  }

  Node mutate_Block(const Block& node, const Node& self) override {
    Node result = IRMutator::mutate_Block(node, self);
    const Block& block = *result.as<Block>();
    for (std::size_t i = 0; i < block.stmts.size(); ++i) {
      if (block.stmts[i].kind() == NodeKind::Return && i + 1 < block.stmts.size()) {
        return Block::make(std::vector<Node>(block.stmts.begin(), block.stmts.begin() + static_cast<long>(i) + 1));
      }
    }
    return result;
  }

 private:
  std::unordered_set<std::string_view> read_;
};

}  // namespace

ir::Program eliminate_dead_code(ir::Program program) {
  // Removing one dead variable can make others dead: iterate to a fixed point.
  for (int round = 0; round < 16; ++round) {
    Node entry = DeadCodeRemover(read_variables(program.entry)).mutate(program.entry);
    if (entry.same_as(program.entry)) break;
    program.entry = entry;
  }
  return program;
}

}  // namespace quantc::lower
