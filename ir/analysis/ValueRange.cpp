#include "ir/analysis/ValueRange.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "ir/IRVisitor.h"
#include "ir/analysis/Structure.h"

namespace quantc::ir::analysis {
namespace {

using Wide = unsigned __int128;

bool has_range(ScalarType type) {
  return type == ScalarType::Bool || (is_integer(type) && !is_signed(type));
}

bool has_range(Type type) { return type.is_scalar() && has_range(type.element()); }

std::uint64_t type_max(ScalarType type) {
  if (type == ScalarType::Bool) return 1;
  unsigned bits = bit_width(type);
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

/// `multiple_of` capped so products never overflow; 2^32 stands for "a multiple of
/// everything we care about" (the literal 0).
constexpr std::uint64_t kHugeMultiple = std::uint64_t{1} << 32;

std::uint64_t cap_multiple(Wide value) { return value == 0 || value > kHugeMultiple ? kHugeMultiple : static_cast<std::uint64_t>(value); }

ValueRange make_range(Wide min, Wide max, std::uint64_t multiple_of, ScalarType type) {
  if (max > type_max(type) || min > max) return ValueRange::full(type);
  return ValueRange{static_cast<std::uint64_t>(min), static_cast<std::uint64_t>(max), std::max<std::uint64_t>(multiple_of, 1)};
}

std::uint64_t low_bit(std::uint64_t value) { return value == 0 ? kHugeMultiple : value & (~value + 1); }

ValueRange binary_range(const Binary& node, const ValueRange& a, const ValueRange& b) {
  ScalarType type = node.type.element();
  switch (node.op) {
    case BinaryOp::Add:
      return make_range(Wide{a.min} + b.min, Wide{a.max} + b.max, std::gcd(a.multiple_of, b.multiple_of), type);
    case BinaryOp::Sub:
      if (a.min < b.max) return ValueRange::full(type);
      return make_range(a.min - b.max, a.max - b.min, std::gcd(a.multiple_of, b.multiple_of), type);
    case BinaryOp::Mul:
      return make_range(Wide{a.min} * b.min, Wide{a.max} * b.max, cap_multiple(Wide{a.multiple_of} * b.multiple_of), type);
    case BinaryOp::Div: {
      if (b.min == 0) return ValueRange::full(type);
      std::uint64_t multiple = 1;
      if (b.is_constant() && a.multiple_of % b.min == 0) multiple = a.multiple_of / b.min;
      return make_range(a.min / b.max, a.max / b.min, multiple, type);
    }
    case BinaryOp::Rem:
      if (b.min == 0) return ValueRange::full(type);
      if (a.max < b.min) return a;
      return make_range(0, b.max - 1, b.is_constant() ? std::gcd(a.multiple_of, b.min) : 1, type);
    case BinaryOp::Min:
      return make_range(std::min(a.min, b.min), std::min(a.max, b.max), std::gcd(a.multiple_of, b.multiple_of), type);
    case BinaryOp::Max:
      return make_range(std::max(a.min, b.min), std::max(a.max, b.max), std::gcd(a.multiple_of, b.multiple_of), type);
    case BinaryOp::BitAnd: {
      // Every bit below the lowest bit either operand's multiple guarantees is clear.
      std::uint64_t multiple = std::max(low_bit(a.multiple_of), low_bit(b.multiple_of));
      if (multiple > type_max(type)) return ValueRange::constant(0);
      // x & m never exceeds x nor m.
      std::uint64_t low = 0, high = std::min(a.max, b.max);
      for (auto [value, mask] : {std::pair{a, b}, std::pair{b, a}}) {
        if (!mask.is_constant()) continue;
        const std::uint64_t cleared = ~mask.min & type_max(type);
        if ((cleared & (cleared + 1)) == 0) {
          // A mask clearing only low bits (x & ~7): x rounded down to a multiple of
          // cleared + 1, which is monotone, so the bounds are the bounds' images.
          low = std::max(low, value.min & mask.min);
          high = std::min(high, value.max & mask.min);
        } else if ((mask.min & (mask.min + 1)) == 0 && value.max <= mask.min) {
          return value;  // x & (2^k - 1) with x < 2^k is x
        }
      }
      high -= high % multiple;  // the largest multiple of `multiple` not above `high`
      return make_range(low, high, multiple, type);
    }
    case BinaryOp::BitOr:
    case BinaryOp::BitXor: {
      // Neither sets a bit above the highest bit of the larger operand.
      std::uint64_t high = std::max(a.max, b.max);
      std::uint64_t bound = high >= (std::uint64_t{1} << 63) ? type_max(type) : std::bit_ceil(high + 1) - 1;
      return make_range(node.op == BinaryOp::BitOr ? std::max(a.min, b.min) : 0, bound, 1, type);
    }
    case BinaryOp::Shl:
      if (!b.is_constant() || b.min >= bit_width(type)) return ValueRange::full(type);
      return make_range(Wide{a.min} << b.min, Wide{a.max} << b.min, cap_multiple(Wide{a.multiple_of} << b.min), type);
    case BinaryOp::Shr: {
      if (b.min >= bit_width(type)) return ValueRange::constant(0);
      std::uint64_t multiple = 1;
      if (b.is_constant() && a.multiple_of % (std::uint64_t{1} << b.min) == 0) multiple = a.multiple_of >> b.min;
      std::uint64_t low = b.max >= bit_width(type) ? 0 : a.min >> b.max;
      return make_range(low, a.max >> b.min, multiple, type);
    }
    default:
      break;
  }
  if (is_comparison(node.op) || node.op == BinaryOp::LogicalAnd || node.op == BinaryOp::LogicalOr) {
    if (is_comparison(node.op) && has_range(node.lhs.type())) {
      if (std::optional<bool> decided = decide_comparison(node.op, a, b)) return ValueRange::constant(*decided);
    }
    return ValueRange{0, 1, 1};
  }
  return ValueRange::full(type);
}

}  // namespace

class RangeEvaluator {
 public:
  /// Evaluates with the first `visible` facts of `environment`.
  RangeEvaluator(const RangeEnvironment& environment, std::size_t visible)
      : environment_(environment), visible_(visible) {}

  ValueRange evaluate(const Expr& expr) {
    if (!has_range(expr.type())) return ValueRange::full(expr.type());
    const ScalarType type = expr.type().element();
    const Program& program = environment_.program();
    switch (expr.kind()) {
      case ExprKind::Literal:
        return ValueRange::constant(expr.as<Literal>()->bits);
      case ExprKind::Var:
        return environment_.variable(expr.as<Var>()->name, visible_).value_or(ValueRange::full(type));
      case ExprKind::Binary: {
        const Binary& node = *expr.as<Binary>();
        if (!has_range(node.lhs.type())) return is_comparison(node.op) ? ValueRange{0, 1, 1} : ValueRange::full(type);
        return binary_range(node, evaluate(node.lhs), evaluate(node.rhs));
      }
      case ExprKind::Select: {
        const Select& node = *expr.as<Select>();
        ValueRange cond = evaluate(node.cond);
        ValueRange if_true = evaluate(node.if_true), if_false = evaluate(node.if_false);
        if (cond.is_constant()) return cond.min ? if_true : if_false;
        return ValueRange{std::min(if_true.min, if_false.min), std::max(if_true.max, if_false.max),
                          std::gcd(if_true.multiple_of, if_false.multiple_of)};
      }
      case ExprKind::Cast: {
        const Expr& value = expr.as<Cast>()->value;
        if (type == ScalarType::Bool) return ValueRange{0, 1, 1};
        if (has_range(value.type())) {
          ValueRange source = evaluate(value);
          if (source.max <= type_max(type)) return source;
        }
        return ValueRange::full(type);
      }
      case ExprKind::BufferLength: {
        const BufferDecl* buffer = program.find_buffer(expr.as<BufferLength>()->buffer);
        return buffer ? ValueRange::constant(buffer->count) : ValueRange::full(type);
      }
      case ExprKind::Builtin:
        return builtin_range(*expr.as<Builtin>(), program);
      case ExprKind::SubgroupShuffle:
        return evaluate(expr.as<SubgroupShuffle>()->value);
      case ExprKind::SubgroupReduce: {
        const SubgroupReduce& node = *expr.as<SubgroupReduce>();
        return node.op == SubgroupReduceOp::Add ? ValueRange::full(type) : evaluate(node.value);
      }
      case ExprKind::Lookup: {
        const Lookup& node = *expr.as<Lookup>();
        auto [low, high] = std::minmax_element(node.table.begin(), node.table.end());
        return ValueRange{*low, *high, 1};
      }
      default:
        return ValueRange::full(type);
    }
  }

 private:
  static ValueRange builtin_range(const Builtin& node, const Program& program) {
    std::uint64_t size = program.workgroup_size[node.axis], count = program.workgroup_count[node.axis];
    switch (node.builtin) {
      case BuiltinKind::LocalId:
        return ValueRange{0, size - 1, 1};
      case BuiltinKind::WorkgroupId:
        return ValueRange{0, count - 1, 1};
      case BuiltinKind::InvocationId:
        return ValueRange{0, size * count - 1, 1};
      case BuiltinKind::SubgroupLocalId:
        return ValueRange{0, 31, 1};
      case BuiltinKind::SubgroupSize:
        return ValueRange::constant(32);
    }
    return ValueRange::full(ScalarType::U32);
  }

  const RangeEnvironment& environment_;
  std::size_t visible_;
};

namespace {

class AssignFinder {
 public:
  static std::set<std::string> find(const Program& program) {
    return program.entry.defined() ? assigned_variables(program.entry) : std::set<std::string>{};
  }
};

}  // namespace

ValueRange ValueRange::full(Type type) {
  return ValueRange{0, has_range(type) ? type_max(type.element()) : ~std::uint64_t{0}, 1};
}

ValueRange ValueRange::constant(std::uint64_t value) { return ValueRange{value, value, value == 0 ? kHugeMultiple : value}; }

RangeEnvironment::RangeEnvironment(const Program& program)
    : program_(program) {
  std::set<std::string> assigned = AssignFinder::find(program);
  assigned_.assign(assigned.begin(), assigned.end());
  facts_.reserve(16);
}

std::optional<ValueRange> RangeEnvironment::variable(const std::string& name) const {
  return variable(name, facts_.size());
}

std::optional<ValueRange> RangeEnvironment::variable(const std::string& name, std::size_t visible) const {
  const std::optional<std::size_t> index = find(name, visible);
  if (!index) return std::nullopt;
  // A pushed value's range depends only on the facts below it, which cannot change
  // while it is in scope: compute it once.
  if (!facts_[*index].range) resolve(*index);
  return facts_[*index].range;
}

std::optional<std::size_t> RangeEnvironment::find(const std::string& name, std::size_t visible) const {
  const std::uint64_t hash = name_hash(name);
  for (std::size_t i = visible; i-- > 0;) {
    if (facts_[i].hash == hash && facts_[i].name == name) return i;
  }
  return std::nullopt;
}

void RangeEnvironment::resolve(std::size_t index) const {
  // Evaluating a value looks up its variables, whose values may be pushed values not yet
  // evaluated, and so on down a chain of lets (`let a2 = a1 + 1`, ...) as long as the
  // program. Instead of recursing down the chain, gather the pending values it reaches
  // and evaluate them lowest first: each evaluation then finds its variables computed,
  // so the recursion is that of one expression (bounded by kMaxNestingDepth).
  std::vector<std::size_t> pending{index};
  std::set<std::size_t> seen{index};
  for (std::size_t next = 0; next < pending.size(); ++next) {
    const Fact& fact = facts_[pending[next]];
    if (!has_range(fact.value.type())) continue;  // evaluated without looking at variables
    for (const std::string& name : used_variables(fact.value)) {
      const std::optional<std::size_t> dependency = find(name, pending[next]);
      if (dependency && !facts_[*dependency].range && seen.insert(*dependency).second) {
        pending.push_back(*dependency);
      }
    }
  }
  std::sort(pending.begin(), pending.end());
  for (std::size_t i : pending) facts_[i].range = RangeEvaluator(*this, i).evaluate(facts_[i].value);
}

void RangeEnvironment::push(const std::string& name, ValueRange range) {
  facts_.push_back(Fact{name_hash(name), name, range, Expr()});
}

void RangeEnvironment::push_value(const std::string& name, Expr value) {
  facts_.push_back(Fact{name_hash(name), name, std::nullopt, std::move(value)});
}
void RangeEnvironment::pop() { facts_.pop_back(); }

ValueRange range_of(const Expr& expr, const RangeEnvironment& environment) {
  return RangeEvaluator(environment, environment.depth()).evaluate(expr);
}

bool proven_safe(const Expr& expr, const RangeEnvironment& environment) {
  struct Checker : IRVisitor {
    explicit Checker(const RangeEnvironment& environment) : environment(environment) {}
    const RangeEnvironment& environment;
    bool safe = true;
    void visit_Load(const Load& node) override {
      const BufferDecl* buffer = environment.program().find_buffer(node.buffer);
      // A reinterpreting load reads a span of bytes, all of which must be in the buffer.
      const std::uint64_t tail = node.reinterpret && buffer != nullptr ? node.elements_read(buffer->element) - 1 : 0;
      if (buffer == nullptr || range_of(node.index, environment).max + tail >= buffer->count) safe = false;
      IRVisitor::visit_Load(node);
    }
    void visit_Binary(const Binary& node) override {
      if (node.op == BinaryOp::Div || node.op == BinaryOp::Rem) {
        if (!has_range(node.type) || node.type == ScalarType::Bool || range_of(node.rhs, environment).min == 0) safe = false;
      }
      IRVisitor::visit_Binary(node);
    }
    void visit_Lookup(const Lookup& node) override {
      if (range_of(node.index, environment).max >= node.table.size()) safe = false;
      IRVisitor::visit_Lookup(node);
    }
    void visit_SubgroupShuffle(const SubgroupShuffle&) override { safe = false; }
    void visit_SubgroupReduce(const SubgroupReduce&) override { safe = false; }
    void visit_SubgroupBallot(const SubgroupBallot&) override { safe = false; }
    void visit_SubgroupMma(const SubgroupMma&) override { safe = false; }
    void visit_SubgroupLoadMatrix(const SubgroupLoadMatrix&) override { safe = false; }
  } checker(environment);
  checker.visit(expr);
  return checker.safe;
}

std::optional<bool> decide_comparison(BinaryOp op, const ValueRange& a, const ValueRange& b) {
  switch (op) {
    case BinaryOp::Lt:
      if (a.max < b.min) return true;
      if (a.min >= b.max) return false;
      break;
    case BinaryOp::Le:
      if (a.max <= b.min) return true;
      if (a.min > b.max) return false;
      break;
    case BinaryOp::Gt:
      return decide_comparison(BinaryOp::Lt, b, a);
    case BinaryOp::Ge:
      return decide_comparison(BinaryOp::Le, b, a);
    case BinaryOp::Eq:
      if (a.is_constant() && b.is_constant() && a.min == b.min) return true;
      if (a.max < b.min || b.max < a.min) return false;
      break;
    case BinaryOp::Ne:
      if (std::optional<bool> equal = decide_comparison(BinaryOp::Eq, a, b)) return !*equal;
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<ValueRange> let_fact(const Let& let, const RangeEnvironment& environment) {
  if (!has_range(let.value.type()) || environment.is_assigned(let.name)) return std::nullopt;
  return range_of(let.value, environment);
}

std::optional<ValueRange> loop_fact(const Expr& from_expr, const Expr& to_expr, const RangeEnvironment& environment) {
  if (!has_range(from_expr.type())) return std::nullopt;
  ValueRange from = range_of(from_expr, environment), to = range_of(to_expr, environment);
  if (to.max == 0) return std::nullopt;  // the body never runs; no fact needed
  return ValueRange{from.min, std::max(from.min, to.max - 1), 1};
}

std::vector<std::pair<std::string, ValueRange>> let_facts(const Let& let, const RangeEnvironment& environment) {
  if (std::optional<ValueRange> range = let_fact(let, environment)) return {{let.name, *range}};
  return {};
}

std::vector<std::pair<std::string, ValueRange>> loop_facts(const Loop& loop, const RangeEnvironment& environment) {
  if (std::optional<ValueRange> range = loop_fact(loop.from, loop.to, environment)) return {{loop.var, *range}};
  return {};
}

std::vector<std::pair<std::string, ValueRange>> guard_facts(const Expr& cond, const RangeEnvironment& environment) {
  const Binary* binary = cond.as<Binary>();
  if (binary == nullptr) return {};
  if (binary->op == BinaryOp::LogicalAnd) {
    auto facts = guard_facts(binary->lhs, environment);
    auto more = guard_facts(binary->rhs, environment);
    facts.insert(facts.end(), more.begin(), more.end());
    return facts;
  }
  const Var* var = binary->lhs.as<Var>();
  if (var == nullptr || environment.is_assigned(var->name) || !has_range(var->type) || var->type == ScalarType::Bool) {
    return {};
  }
  if (binary->op != BinaryOp::Lt && binary->op != BinaryOp::Le) return {};
  ValueRange current = environment.variable(var->name).value_or(ValueRange::full(var->type));
  ValueRange bound = range_of(binary->rhs, environment);
  std::uint64_t limit = bound.max;
  if (binary->op == BinaryOp::Lt) {
    if (limit == 0) return {};  // the then-body never runs
    limit -= 1;
  }
  if (limit >= current.max) return {};
  if (limit < current.min) return {};
  current.max = limit;
  return {{var->name, current}};
}

RangeScope::RangeScope(RangeEnvironment& environment, const std::vector<std::pair<std::string, ValueRange>>& facts)
    : environment_(environment), count_(facts.size()) {
  for (const auto& [name, range] : facts) environment_.push(name, range);
}

RangeScope::~RangeScope() {
  for (std::size_t i = 0; i < count_; ++i) environment_.pop();
}

}  // namespace quantc::ir::analysis

namespace quantc::ir::analysis {

Node RangeTrackingMutator::mutate_Block(const Block& node, const Node& self) {
  std::vector<Node> stmts;
  stmts.reserve(node.stmts.size());
  bool changed = false;
  std::size_t pushed = 0;
  auto push_facts = [&](const Node& stmt) {
    if (const Let* let = stmt.as<Let>(); let && has_range(let->value.type()) && !ranges_.is_assigned(let->name)) {
      ranges_.push_value(let->name, let->value);  // let_fact, computed when first needed
      ++pushed;
    }
  };
  for (const Node& stmt : node.stmts) {
    Node mutated = mutate(stmt);
    changed |= !mutated.same_as(stmt);
    if (!mutated.defined()) continue;
    if (const Block* spliced = mutated.as<Block>()) {
      for (const Node& inner : spliced->stmts) {
        stmts.push_back(inner);
        push_facts(inner);
      }
    } else {
      stmts.push_back(mutated);
      push_facts(mutated);
    }
  }
  for (std::size_t i = 0; i < pushed; ++i) ranges_.pop();
  return changed ? Block::make(std::move(stmts)) : self;
}

Node RangeTrackingMutator::mutate_Loop(const Loop& node, const Node& self) {
  Expr from = mutate(node.from);
  Expr to = mutate(node.to);
  std::optional<ValueRange> fact = loop_fact(from, to, ranges_);
  if (fact) ranges_.push(node.var, *fact);
  Node body = mutate(node.body);
  if (fact) ranges_.pop();
  if (from.same_as(node.from) && to.same_as(node.to) && body.same_as(node.body)) return self;
  return Loop::make(node.var, from, to, body);
}

Node RangeTrackingMutator::mutate_If(const If& node, const Node& self) {
  Expr cond = mutate(node.cond);
  Node then_body;
  {
    RangeScope scope(ranges_, guard_facts(cond, ranges_));
    then_body = mutate(node.then_body);
  }
  Node else_body = mutate(node.else_body);
  if (cond.same_as(node.cond) && then_body.same_as(node.then_body) && else_body.same_as(node.else_body)) return self;
  return If::make(cond, then_body, else_body);
}

}  // namespace quantc::ir::analysis
