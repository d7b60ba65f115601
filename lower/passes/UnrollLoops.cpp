// Loop unrolling for small constant trip counts (see Passes.h). The PTX emitter then
// sees straight-line code with the loop variable folded into addresses.
#include <fmt/format.h>

#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/analysis/Structure.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;

/// The Let and Loop variables `node` declares, with their types.
std::map<std::string, Type> declarations(const Node& node) {
  std::map<std::string, Type> types;
  analysis::for_each_statement(node, [&](const NodeBase& stmt) {
    if (stmt.kind == NodeKind::Let) types[static_cast<const Let&>(stmt).name] = static_cast<const Let&>(stmt).value.type();
    if (stmt.kind == NodeKind::Loop) types[static_cast<const Loop&>(stmt).var] = static_cast<const Loop&>(stmt).from.type();
  });
  return types;
}

class Unroller : public IRMutator {
 public:
  Unroller(const UnrollOptions& options, const Node& root) : options_(options), names_(root) {}

 protected:
  Node mutate_Loop(const Loop& node, const Node& self) override {
    Node result = IRMutator::mutate_Loop(node, self);  // innermost loops first
    const Loop& loop = *result.as<Loop>();
    const Literal* from = loop.from.as<Literal>();
    const Literal* to = loop.to.as<Literal>();
    if (!from || !to) return result;
    bool is_signed_loop = is_signed(loop.from.type());
    std::int64_t first = from->as_int64(), last = to->as_int64();
    if (!is_signed_loop) {
      if (to->bits <= from->bits) return Block::make();  // no iterations
      if (to->bits - from->bits > options_.max_trip_count) return result;
    } else {
      if (last <= first) return Block::make();
      if (static_cast<std::uint64_t>(last - first) > options_.max_trip_count) return result;
    }
    std::uint64_t trips = is_signed_loop ? static_cast<std::uint64_t>(last - first) : to->bits - from->bits;
    if (trips * analysis::node_size(loop.body) > options_.max_unrolled_nodes) return result;
    if (analysis::contains_return(loop.body)) return result;
    const std::map<std::string, Type> types = declarations(loop.body);
    std::vector<Node> stmts;
    for (std::uint64_t i = 0; i < trips; ++i) {
      std::map<std::string, Expr> renames;
      for (const auto& [name, type] : types) {
        renames[name] = Var::make(type, names_.fresh(fmt::format("{}_iteration{}", name, i)));
      }
      Node copy = analysis::rename_variables(loop.body, renames);
      copy = analysis::substitute(copy, {{loop.var, Literal::make(loop.from.type().element(), from->bits + i)}});
      const Block& block = *copy.as<Block>();
      stmts.insert(stmts.end(), block.stmts.begin(), block.stmts.end());
    }
    return Block::make(std::move(stmts));  // spliced into the enclosing block
  }

  Node mutate_Block(const Block& node, const Node& self) override {
    std::vector<Node> stmts;
    bool changed = false;
    for (const Node& stmt : node.stmts) {
      Node mutated = mutate(stmt);
      changed |= !mutated.same_as(stmt);
      if (const Block* spliced = mutated.as<Block>()) {
        stmts.insert(stmts.end(), spliced->stmts.begin(), spliced->stmts.end());
      } else if (mutated.defined()) {
        stmts.push_back(mutated);
      }
    }
    return changed ? Block::make(std::move(stmts)) : self;
  }

 private:
  UnrollOptions options_;
  analysis::NameSupply names_;
};

}  // namespace

ir::Program unroll_loops(ir::Program program, const UnrollOptions& options) {
  program.entry = Unroller(options, program.entry).mutate(program.entry);
  return program;
}

ir::Program unroll_loops(ir::Program program) { return unroll_loops(std::move(program), UnrollOptions{}); }

}  // namespace quantc::lower
