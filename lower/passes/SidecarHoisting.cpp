// Sidecar hoisting (the contract is in Passes.h).
//
// The per-chunk form of a grouped-quantization kernel reloads the group's scale and
// zero point in every chunk although they change only every C/S chunks. The pass finds
// that shape structurally:
//
//   for c in 0 .. N {                       // S = lanes per chunk, e.g. 32
//     let k = c*S + L                       // L provably in [0, S)
//     ... buffer[f((k / C))] ...            // read-only buffer, C a multiple of S, C > S
//   }
//
// and rewrites it into
//
//   for group_idx in 0 .. ceil(N / q) {     // q = C / S chunks per group
//     let buffer_group = buffer[f(group_idx)]
//     for group_chunk in 0 .. q {           // min(q, N - group_idx*q) when q does not divide N
//       let c = group_idx*q + group_chunk
//       ... buffer_group ...                // and k / C -> group_idx elsewhere
//     }
//   }
//
// because (c*S + L) / (q*S) == c / q whenever L < S. Every lane loads the group's value
// at the same (subgroup-uniform) address instead of lane 0 loading and a shuffle
// broadcasting it: a warp-wide load of one address is a single broadcast transaction
// on NVIDIA hardware, so the shuffle would only add an instruction and a divergent
// `if lane == 0` around the load. A load that sat under a guard inside the loop (the
// `if k < in_dim` of linear_4bit_affine_grouped) is hoisted only when the range
// analysis proves its new index in bounds; an unguarded one is safe anyway, since the
// original loop evaluated the same index in the group's first chunk.
#include <fmt/format.h>

#include <map>

#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/analysis/Structure.h"
#include "ir/analysis/ValueRange.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;
using analysis::ValueRange;

/// `(c*S + L) / C` recognised: the loop's stride S and the group divisor C.
struct GroupDivision {
  std::uint64_t stride = 0;
  std::uint64_t divisor = 0;
  std::uint64_t chunks_per_group() const { return divisor / stride; }
};

/// The most expression nodes a hoisted load may have once the loop's lets are inlined.
constexpr std::uint32_t kMaxHoistedIndexNodes = 4096;

/// Let definitions inside the loop body (never-assigned names declared once).
using Definitions = std::map<std::string, Expr>;

/// The never-assigned lets `body` declares exactly once, by name.
Definitions collect_definitions(const Node& body, const std::set<std::string>& assigned) {
  Definitions definitions;
  std::set<std::string> duplicates;
  analysis::for_each_statement(body, [&](const NodeBase& stmt) {
    if (stmt.kind != NodeKind::Let) return;
    const Let& let = static_cast<const Let&>(stmt);
    if (assigned.count(let.name)) return;
    if (!definitions.emplace(let.name, let.value).second) duplicates.insert(let.name);
  });
  for (const std::string& name : duplicates) definitions.erase(name);
  return definitions;
}

/// Whether `body` holds a u32 division or right shift by a literal: the shape's first
/// requirement, checked before anything that costs more.
bool has_literal_division(const Node& body) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_Binary(const Binary& node) override {
      if ((node.op == BinaryOp::Div || node.op == BinaryOp::Shr) && node.type == ScalarType::U32 &&
          node.rhs.kind() == ExprKind::Literal) {
        found = true;
        return;
      }
      IRVisitor::visit_Binary(node);
    }
  } finder;
  analysis::for_each_statement(body, [&](const NodeBase& stmt) {
    analysis::for_each_operand(stmt, [&](const Expr& expr) {
      if (!finder.found) finder.visit(expr);
    });
  });
  return finder.found;
}

class Matcher {
 public:
  Matcher(const std::string& loop_var, const Definitions& definitions, const analysis::RangeEnvironment& ranges,
          const std::set<std::string>& body_names)
      : loop_var_(loop_var), definitions_(definitions), ranges_(&ranges), body_names_(&body_names) {}
  /// A matcher of the shape alone: the offset's range and independence from the loop
  /// are not checked, so it accepts every loop the full matcher accepts (and more).
  Matcher(const std::string& loop_var, const Definitions& definitions)
      : loop_var_(loop_var), definitions_(definitions) {}

  /// The division `expr` performs on `c*S + L`, when it has the shape.
  std::optional<GroupDivision> match(const Expr& expr) const {
    const Binary* binary = expr.as<Binary>();
    return binary ? match(*binary) : std::nullopt;
  }
  std::optional<GroupDivision> match(const Binary& node) const {
    const Binary* binary = &node;
    if (binary->type != ScalarType::U32) return std::nullopt;
    const Literal* literal = binary->rhs.as<Literal>();
    if (literal == nullptr) return std::nullopt;
    std::uint64_t divisor = 0;
    if (binary->op == BinaryOp::Div) divisor = literal->bits;
    if (binary->op == BinaryOp::Shr && literal->bits < 32) divisor = std::uint64_t{1} << literal->bits;
    if (divisor == 0) return std::nullopt;
    std::optional<std::uint64_t> stride = stride_of(resolve(binary->lhs));
    if (!stride || divisor % *stride != 0 || divisor / *stride < 2) return std::nullopt;
    return GroupDivision{*stride, divisor};
  }

 private:
  Expr resolve(const Expr& expr) const {
    if (const Var* var = expr.as<Var>()) {
      auto found = definitions_.find(var->name);
      if (found != definitions_.end()) return found->second;
    }
    return expr;
  }

  bool is_loop_var(const Expr& expr) const {
    const Var* var = expr.as<Var>();
    return var != nullptr && var->name == loop_var_;
  }

  /// S for `c*S + L`, `L + c*S`, `c*S` or `c` (S = 1), with L provably below S and
  /// independent of the loop.
  std::optional<std::uint64_t> stride_of(const Expr& expr) const {
    if (is_loop_var(expr)) return 1;
    if (std::optional<std::uint64_t> product = scaled(expr)) return product;
    const Binary* sum = expr.as<Binary>();
    if (sum == nullptr || sum->op != BinaryOp::Add) return std::nullopt;
    for (auto [scaled_part, offset] : {std::pair{sum->lhs, sum->rhs}, std::pair{sum->rhs, sum->lhs}}) {
      std::optional<std::uint64_t> stride = is_loop_var(scaled_part) ? std::optional<std::uint64_t>(1) : scaled(scaled_part);
      if (!stride) continue;
      if (ranges_ == nullptr) return stride;  // shape only
      for (const std::string& name : analysis::used_variables(offset)) {
        if (body_names_->count(name)) return std::nullopt;  // the offset must not vary with the loop
      }
      if (analysis::range_of(offset, *ranges_).max < *stride) return stride;
    }
    return std::nullopt;
  }

  std::optional<std::uint64_t> scaled(const Expr& expr) const {
    const Binary* product = expr.as<Binary>();
    if (product == nullptr) return std::nullopt;
    if (product->op == BinaryOp::Mul) {
      if (is_loop_var(product->lhs) && product->rhs.as<Literal>()) return product->rhs.as<Literal>()->bits;
      if (is_loop_var(product->rhs) && product->lhs.as<Literal>()) return product->lhs.as<Literal>()->bits;
    }
    if (product->op == BinaryOp::Shl && is_loop_var(product->lhs) && product->rhs.as<Literal>() &&
        product->rhs.as<Literal>()->bits < 32) {
      return std::uint64_t{1} << product->rhs.as<Literal>()->bits;
    }
    return std::nullopt;
  }

  const std::string& loop_var_;
  const Definitions& definitions_;
  const analysis::RangeEnvironment* ranges_ = nullptr;
  const std::set<std::string>* body_names_ = nullptr;
};

/// Replaces the recognised division by the group variable; with `inline_definitions`,
/// also expands body-local lets (to see a load's index in terms of outer values).
class GroupRewriter : public IRMutator {
 public:
  /// Thrown when inlining would build an expression deeper than kMaxNestingDepth (a long
  /// chain of lets, each defined by the one before): the load being normalised is then
  /// left where it is. Inlining recurses along the chain, so it must stop before the
  /// stack does, not only when the factories refuse the node.
  struct TooDeep {};

  GroupRewriter(const Matcher& matcher, const GroupDivision& division, Expr group, const Definitions& definitions,
                bool inline_definitions)
      : matcher_(matcher), division_(division), group_(std::move(group)), definitions_(definitions),
        inline_(inline_definitions) {}
  using IRMutator::mutate;

  Expr mutate(const Expr& expr) override {
    if (depth_ >= kMaxNestingDepth) throw TooDeep{};
    ++depth_;
    struct Leave {
      std::uint32_t& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    return IRMutator::mutate(expr);
  }

 protected:
  Expr mutate_Binary(const Binary& node, const Expr& self) override {
    std::optional<GroupDivision> found = matcher_.match(node);
    if (found && found->stride == division_.stride && found->divisor == division_.divisor) return group_;
    return IRMutator::mutate_Binary(node, self);
  }
  Expr mutate_Var(const Var& node, const Expr& self) override {
    if (!inline_) return self;
    auto found = definitions_.find(node.name);
    if (found == definitions_.end()) return self;
    // A definition inlines to the same expression wherever it is used: computing it once
    // keeps lets used several times (k2 = k1 + k1, ...) from costing exponential time.
    if (auto done = inlined_.find(node.name); done != inlined_.end()) {
      if (depth_ + done->second.get()->nesting_depth() > kMaxNestingDepth) throw TooDeep{};
      return done->second;
    }
    Expr inlined = mutate(found->second);
    inlined_.emplace(node.name, inlined);
    return inlined;
  }

 private:
  const Matcher& matcher_;
  GroupDivision division_;
  Expr group_;
  const Definitions& definitions_;
  bool inline_;
  std::uint32_t depth_ = 0;                // mutate() calls in progress
  std::map<std::string, Expr> inlined_;    // definitions already inlined, by name
};

/// A read-only load found in the loop body, and whether the body always evaluates it.
struct LoadSite {
  Expr load;
  bool unconditional;
};

class LoadCollector : public IRVisitor {
 public:
  explicit LoadCollector(const Program& program) : program_(program) {}
  std::vector<LoadSite> sites;

  void visit_body(const Node& body) {
    const Block& block = *body.as<Block>();
    for (const Node& stmt : block.stmts) {
      visit(stmt);
      if (analysis::contains_return(stmt)) guarded_ = 1;  // later statements may not run
    }
  }

 protected:
  void visit_Let(const Let& node) override { walk(node.value); }
  void visit_Assign(const Assign& node) override { walk(node.value); }
  void visit_Store(const Store& node) override {
    walk(node.index);
    walk(node.value);
  }
  void visit_If(const If& node) override {
    walk(node.cond);
    ++guarded_;
    visit(node.then_body);
    visit(node.else_body);
    --guarded_;
  }
  void visit_Loop(const Loop& node) override {
    walk(node.from);
    walk(node.to);
    ++guarded_;
    visit(node.body);
    --guarded_;
  }

 private:
  void walk(const Expr& expr) {
    if (const Load* load = expr.as<Load>()) {
      const BufferDecl* buffer = program_.find_buffer(load->buffer);
      if (buffer && !buffer->is_written()) sites.push_back({expr, guarded_ == 0});
    }
    if (const Binary* binary = expr.as<Binary>();
        binary && (binary->op == BinaryOp::LogicalAnd || binary->op == BinaryOp::LogicalOr)) {
      walk(binary->lhs);
      ++guarded_;
      walk(binary->rhs);
      --guarded_;
      return;
    }
    if (expr.defined()) analysis::for_each_child(*expr.get(), [&](const Expr& child) { walk(child); });
  }

  const Program& program_;
  int guarded_ = 0;
};

/// Replaces hoisted loads (compared after inlining and group rewriting) by variables.
class LoadReplacer : public IRMutator {
 public:
  LoadReplacer(const GroupRewriter& normaliser, const std::vector<std::pair<Expr, Expr>>& hoisted)
      : normaliser_(normaliser), hoisted_(hoisted) {}

 protected:
  Expr mutate_Load(const Load& node, const Expr& self) override {
    bool same_buffer = false;  // normalising (inlining the body's lets) costs; most loads are other buffers
    for (const auto& [load, variable] : hoisted_) same_buffer |= load.as<Load>()->buffer == node.buffer;
    if (!same_buffer) return IRMutator::mutate_Load(node, self);
    Expr normal;
    try {
      normal = const_cast<GroupRewriter&>(normaliser_).mutate(self);
    } catch (const GroupRewriter::TooDeep&) {
      return IRMutator::mutate_Load(node, self);  // too deep to have been hoisted
    }
    for (const auto& [load, variable] : hoisted_) {
      if (analysis::structurally_equal(load, normal)) return variable;
    }
    return IRMutator::mutate_Load(node, self);
  }

 private:
  const GroupRewriter& normaliser_;
  const std::vector<std::pair<Expr, Expr>>& hoisted_;
};

class DivisionFinder : public IRVisitor {
 public:
  explicit DivisionFinder(const Matcher& matcher) : matcher_(matcher) {}
  std::optional<GroupDivision> found;

 protected:
  void visit_Binary(const Binary& node) override {
    if (!found) found = matcher_.match(node);
    IRVisitor::visit_Binary(node);
  }

 private:
  const Matcher& matcher_;
};

class SidecarHoister : public analysis::RangeTrackingMutator {
 public:
  explicit SidecarHoister(const Program& program)
      : RangeTrackingMutator(program), program_(program), names_(program.entry),
        assigned_(analysis::assigned_variables(program.entry)) {}

 protected:
  Node mutate_Loop(const Loop& node, const Node& self) override {
    Node result = RangeTrackingMutator::mutate_Loop(node, self);
    const Loop& loop = *result.as<Loop>();
    Node rewritten = rewrite(loop);
    return rewritten.defined() ? rewritten : result;
  }

 private:
  Node rewrite(const Loop& loop) {
    const Literal* from = loop.from.as<Literal>();
    const Literal* to = loop.to.as<Literal>();
    if (loop.from.type() != ScalarType::U32 || !from || !to || from->bits != 0 || to->bits == 0) return Node();
    if (!has_literal_division(loop.body)) return Node();
    Definitions definitions = collect_definitions(loop.body, assigned_);
    std::set<std::string> body_names = analysis::declared_names(loop.body);
    std::set<std::string> body_assigned = analysis::assigned_variables(loop.body);
    body_names.insert(body_assigned.begin(), body_assigned.end());
    body_names.insert(loop.var);
    Matcher matcher(loop.var, definitions, ranges_, body_names);

    DivisionFinder finder(matcher);
    finder.visit(loop.body);
    if (!finder.found) return Node();
    GroupDivision division = *finder.found;
    std::uint64_t chunks = to->bits, per_group = division.chunks_per_group();
    if (chunks * division.stride > 0xffffffffull) return Node();  // c*S must not wrap
    std::uint64_t groups = (chunks + per_group - 1) / per_group;

    analysis::NameSupply names = names_;  // kept only when the rewrite happens
    Expr group = Var::make(ScalarType::U32, names.fresh("group_idx"));
    Expr group_chunk = Var::make(ScalarType::U32, names.fresh("group_chunk"));
    GroupRewriter normaliser(matcher, division, group, definitions, true);

    // Loads whose index, seen through the group, no longer depends on the loop.
    LoadCollector loads(program_);
    loads.visit_body(loop.body);
    std::vector<std::pair<Expr, Expr>> hoisted;  // normalised load -> variable
    std::vector<Node> group_lets;
    analysis::RangeScope group_fact(ranges_, {{group.as<Var>()->name, ValueRange{0, groups - 1, 1}}});
    for (const LoadSite& site : loads.sites) {
      Expr normal;
      try {
        normal = normaliser.mutate(site.load);
      } catch (const GroupRewriter::TooDeep&) {
        continue;  // its index, inlined, would be deeper than the IR allows
      }
      // Inlining shares the nodes of lets used several times; the hoisted index is a tree
      // to everything downstream, so one that would be huge is left in the loop.
      if (normal.get()->subtree_size() > kMaxHoistedIndexNodes) continue;
      std::set<std::string> used = analysis::used_variables(normal);
      if (!used.count(group.as<Var>()->name)) continue;
      bool invariant = true;
      for (const std::string& name : used) invariant &= !body_names.count(name);
      if (!invariant || analysis::has_subgroup_op(normal)) continue;
      bool known = false;
      for (const auto& [load, variable] : hoisted) known |= analysis::structurally_equal(load, normal);
      if (known) continue;
      if (!site.unconditional && !analysis::proven_safe(normal, ranges_)) continue;
      std::string name = names.fresh(normal.as<Load>()->buffer + "_group");
      group_lets.push_back(Let::make(name, normal));
      hoisted.emplace_back(normal, Var::make(normal.type(), name));
    }
    if (hoisted.empty()) return Node();
    names_ = names;

    Node body = LoadReplacer(normaliser, hoisted).mutate(loop.body);
    body = GroupRewriter(matcher, division, group, definitions, false).mutate(body);
    std::vector<Node> chunk_stmts{
        Let::make(loop.var, Binary::make(BinaryOp::Add, Binary::make(BinaryOp::Mul, group, Literal::u32(per_group)),
                                         group_chunk))};
    const Block& original = *body.as<Block>();
    chunk_stmts.insert(chunk_stmts.end(), original.stmts.begin(), original.stmts.end());
    Expr chunk_count = Literal::u32(static_cast<std::uint32_t>(per_group));
    if (chunks % per_group != 0) {
      chunk_count = Binary::make(
          BinaryOp::Min, chunk_count,
          Binary::make(BinaryOp::Sub, Literal::u32(static_cast<std::uint32_t>(chunks)),
                       Binary::make(BinaryOp::Mul, group, Literal::u32(static_cast<std::uint32_t>(per_group)))));
    }
    group_lets.push_back(
        Loop::make(group_chunk.as<Var>()->name, Literal::u32(0), chunk_count, Block::make(std::move(chunk_stmts))));
    return Loop::make(group.as<Var>()->name, Literal::u32(0), Literal::u32(static_cast<std::uint32_t>(groups)),
                      Block::make(std::move(group_lets)));
  }

  const Program& program_;
  analysis::NameSupply names_;
  std::set<std::string> assigned_;
};

/// Whether some loop of the program has the shape (ranges aside): the pass's walk, which
/// keeps value ranges up to date everywhere, is worth it only then.
bool has_candidate_loop(const Program& program) {
  bool found = false;
  analysis::for_each_statement(program.entry, [&](const NodeBase& stmt) {
    if (found || stmt.kind != NodeKind::Loop) return;
    const Loop& loop = static_cast<const Loop&>(stmt);
    const Literal* from = loop.from.as<Literal>();
    const Literal* to = loop.to.as<Literal>();
    if (loop.from.type() != ScalarType::U32 || !from || !to || from->bits != 0 || to->bits == 0) return;
    if (!has_literal_division(loop.body)) return;
    Definitions definitions = collect_definitions(loop.body, {});
    Matcher matcher(loop.var, definitions);
    DivisionFinder finder(matcher);
    finder.visit(loop.body);
    found = finder.found.has_value();
  });
  return found;
}

}  // namespace

ir::Program hoist_sidecars(ir::Program program) {
  if (!has_candidate_loop(program)) return program;
  SidecarHoister hoister(program);
  ir::Node entry = hoister.mutate(program.entry);
  program.entry = entry;
  return program;
}

}  // namespace quantc::lower
