// Compiles IR into the interpreter's statement and lane-kernel trees. This is a
// translation (each IR node yields one compiled node and the scope of names matters),
// so it is a recursive switch rather than an IRVisitor, whose callbacks return nothing.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "ir/Printer.h"
#include "ir/ScopedTable.h"
#include "runtime/backends/reference/Compiled.h"

namespace quantc::runtime::reference::detail {
namespace {

using Lanes = std::vector<std::uint32_t>;

void drop_returned(const Machine& machine, Lanes& active) {
  std::erase_if(active, [&](std::uint32_t lane) { return machine.returned[lane] != 0; });
}

class BlockStmt : public StmtNode {
 public:
  std::vector<std::unique_ptr<StmtNode>> stmts;
  void exec(Machine& machine, Lanes& active) const override {
    for (const auto& stmt : stmts) {
      if (active.empty()) return;
      stmt->exec(machine, active);
    }
  }
};

/// Let and Assign: copy the value into the variable's register(s) for the active lanes.
class BindStmt : public StmtNode {
 public:
  std::uint32_t reg = 0;
  unsigned words = 1;
  const ExprNode* value = nullptr;
  void exec(Machine& machine, Lanes& active) const override {
    const LaneSpan lanes = span_of(active);
    const Word* source = value->run(machine, lanes);
    Word* target = machine.reg(reg);
    if (source == target) return;
    for (unsigned w = 0; w < words; ++w) {
      const std::size_t offset = std::size_t{w} * machine.lanes;
      for_each_lane(lanes, [&](std::uint32_t lane) { target[offset + lane] = source[offset + lane]; });
    }
  }
};

class StoreStmt : public StmtNode {
 public:
  std::uint32_t buffer = 0;
  unsigned lanes_per_store = 1;  // buffer elements written: vector lanes, or a reinterpreting store's bytes / element
  unsigned words = 1;
  const ExprNode* index = nullptr;
  const ExprNode* value = nullptr;
  ir::Node source;
  void exec(Machine& machine, Lanes& active) const override {
    const LaneSpan lanes = span_of(active);
    const Word* indices = index->run(machine, lanes);
    const Word* values = value->run(machine, lanes);
    const BufferView& view = machine.buffers[buffer];
    for_each_lane(lanes, [&](std::uint32_t lane) {
      const auto element = get<std::uint32_t>(indices[lane]);
      if (std::uint64_t{element} + lanes_per_store > view.count) {
        std::string statement = ir::print(source);
        while (!statement.empty() && statement.back() == '\n') statement.pop_back();
        throw RuntimeError(fmt::format(
            "out-of-bounds store to buffer '{}': index {}{} >= count {} in `{}` at {}", view.name, element,
            lanes_per_store > 1 ? fmt::format(" + {} elements", lanes_per_store - 1) : std::string(), view.count,
            statement, machine.describe_lane(lane)));
      }
      // Little-endian host: the value's bytes are the low bytes of its Word(s).
      VectorValue value = VectorValue::read(values, machine.lanes, lane, words);
      std::memcpy(view.bytes + std::size_t{element} * view.element_size, value.words,
                  std::size_t{view.element_size} * lanes_per_store);
    });
    (view.shared ? machine.counters.shared_stores : machine.counters.global_stores) += lanes.size;
    machine.counters.stores_per_buffer[buffer] += lanes.size;
  }
};

class IfStmt : public StmtNode {
 public:
  const ExprNode* cond = nullptr;
  std::unique_ptr<StmtNode> then_body, else_body;
  mutable Lanes then_lanes, else_lanes;  // scratch; an If is never re-entered while running
  void exec(Machine& machine, Lanes& active) const override {
    const LaneSpan lanes = span_of(active);
    const Word* values = cond->run(machine, lanes);
    then_lanes.clear();
    else_lanes.clear();
    for_each_lane(lanes, [&](std::uint32_t lane) { (get<bool>(values[lane]) ? then_lanes : else_lanes).push_back(lane); });
    if (!then_lanes.empty()) then_body->exec(machine, then_lanes);
    if (!else_lanes.empty() && else_body) else_body->exec(machine, else_lanes);
    if (may_return) drop_returned(machine, active);
  }
};

class LoopStmt : public StmtNode {
 public:
  std::uint32_t counter = 0;  // the loop variable's register
  std::uint32_t limit = 0;    // `to`, captured on entry
  const ExprNode* from = nullptr;
  const ExprNode* to = nullptr;
  std::unique_ptr<StmtNode> body;
  LoopKernels kernels{};
  mutable Lanes iterating, next;
  void exec(Machine& machine, Lanes& active) const override {
    const LaneSpan lanes = span_of(active);
    const Word* first = from->run(machine, lanes);
    const Word* last = to->run(machine, lanes);
    Word* counters = machine.reg(counter);
    Word* limits = machine.reg(limit);
    for_each_lane(lanes, [&](std::uint32_t lane) {
      counters[lane] = first[lane];
      limits[lane] = last[lane];
    });
    iterating.clear();
    kernels.filter_less(lanes, counters, limits, iterating);
    while (!iterating.empty()) {
      body->exec(machine, iterating);
      const LaneSpan still = span_of(iterating);
      kernels.increment(still, counters);
      next.clear();
      kernels.filter_less(still, counters, limits, next);
      iterating.swap(next);
    }
    if (may_return) drop_returned(machine, active);
  }
};

class BarrierStmt : public StmtNode {
 public:
  void exec(Machine& machine, Lanes& active) const override {
    if (active.size() == machine.lanes) return;  // lockstep: everyone is already here
    std::vector<bool> present(machine.lanes, false);
    for (std::uint32_t lane : active) present[lane] = true;
    std::uint32_t first_missing = 0;
    while (present[first_missing]) ++first_missing;
    throw RuntimeError(fmt::format(
        "barrier reached by {} of the {} invocations of workgroup ({}, {}, {}); the others (first: {}) are masked "
        "off by control flow or returned. A barrier must be reached by the whole workgroup: move it out of "
        "divergent control flow",
        active.size(), machine.lanes, machine.workgroup_id[0], machine.workgroup_id[1], machine.workgroup_id[2],
        machine.describe_lane(first_missing)));
  }
};

/// Orders this workgroup's memory accesses against other workgroups', which may run on
/// other host threads: a sequentially consistent fence (stronger than PTX's acq_rel).
class FenceStmt : public StmtNode {
 public:
  void exec(Machine&, Lanes&) const override { std::atomic_thread_fence(std::memory_order_seq_cst); }
};

/// ir::AsyncCopy, copied at once (one legal schedule of an asynchronous copy; the
/// emulator copies at the wait, so a program that reads early differs between the two).
class AsyncCopyStmt : public StmtNode {
 public:
  std::uint32_t array = 0, buffer = 0;
  const ExprNode* array_index = nullptr;
  const ExprNode* buffer_index = nullptr;
  unsigned bytes = 0;
  ir::Node source;
  void exec(Machine& machine, Lanes& active) const override {
    const LaneSpan lanes = span_of(active);
    const Word* to = array_index->run(machine, lanes);
    const Word* from = buffer_index->run(machine, lanes);
    const BufferView& destination = machine.buffers[array];
    const BufferView& origin = machine.buffers[buffer];
    for_each_lane(lanes, [&](std::uint32_t lane) {
      const auto to_element = get<std::uint32_t>(to[lane]);
      const auto from_element = get<std::uint32_t>(from[lane]);
      for (const auto& [view, element] : {std::pair{&destination, to_element}, std::pair{&origin, from_element}}) {
        const std::uint32_t elements = bytes / view->element_size;  // each side in its own elements
        if (std::uint64_t{element} + elements > view->count) {
          std::string statement = ir::print(source);
          while (!statement.empty() && statement.back() == '\n') statement.pop_back();
          throw RuntimeError(fmt::format("out-of-bounds async_copy of {} elements at '{}' index {} (count {}) in `{}` at {}",
                                         elements, view->name, element, view->count, statement,
                                         machine.describe_lane(lane)));
        }
      }
      std::memcpy(destination.bytes + std::size_t{to_element} * destination.element_size,
                  origin.bytes + std::size_t{from_element} * origin.element_size, bytes);
    });
    machine.counters.global_loads += lanes.size;
    machine.counters.shared_stores += lanes.size;
  }
};

/// AsyncCommit and AsyncWait: nothing left to wait for once AsyncCopyStmt has copied.
class NoOpStmt : public StmtNode {
 public:
  void exec(Machine&, Lanes&) const override {}
};

class ReturnStmt : public StmtNode {
 public:
  ReturnStmt() { may_return = true; }
  void exec(Machine& machine, Lanes& active) const override {
    for (std::uint32_t lane : active) machine.returned[lane] = 1;
    active.clear();
  }
};

class Compiler {
 public:
  Compiler(const ir::Program& program, const std::vector<BufferView>& buffers) : program_(program), buffers_(buffers) {}

  CompiledProgram run() {
    compiled_.entry = compile_stmt(program_.entry);
    compiled_.register_count = next_register_;
    return std::move(compiled_);
  }

 private:
  struct Binding {
    std::uint32_t reg;
    ir::Type type;
  };

  /// The first of `words` consecutive registers (a 128-bit vector takes two).
  std::uint32_t new_register(unsigned words = 1) {
    std::uint32_t first = next_register_;
    next_register_ += words;
    return first;
  }

  std::uint32_t buffer_index(const std::string& name, const ir::Expr* expr, const ir::Node* node) const {
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].name == name) return static_cast<std::uint32_t>(i);
    }
    std::string where = expr ? ir::print(*expr) : ir::print(*node);
    while (!where.empty() && where.back() == '\n') where.pop_back();
    throw RuntimeError(fmt::format("`{}` uses buffer '{}', which program '{}' does not declare; declare it", where,
                                   name, program_.name));
  }

  const Binding& lookup(const std::string& name, const ir::Expr* use) const {
    if (const Binding* binding = bindings_.lookup(name)) return *binding;
    throw RuntimeError(fmt::format("variable '{}' is used{} without a binding in scope; bind it with let first",
                                   name, use ? fmt::format(" in `{}`", ir::print(*use)) : std::string()));
  }

  std::uint32_t constant_register(Word value) {
    std::uint32_t reg = new_register();
    compiled_.constants.emplace_back(reg, value);
    return reg;
  }

  const ExprNode* compile_expr(const ir::Expr& expr) {
    auto node = std::make_unique<ExprNode>();
    node->source = expr;
    node->eval = select_kernel(expr);
    using ir::ExprKind;
    switch (expr.kind()) {
      case ExprKind::Literal:
        // Literal bits are zero/sign-extended or IEEE patterns: the low bytes are the value.
        node->result = constant_register(expr.as<ir::Literal>()->bits);
        break;
      case ExprKind::Var: {
        const Binding& binding = lookup(expr.as<ir::Var>()->name, &expr);
        node->result = binding.reg;
        break;
      }
      case ExprKind::BufferLength: {
        std::uint32_t index = buffer_index(expr.as<ir::BufferLength>()->buffer, &expr, nullptr);
        node->result = constant_register(put<std::uint32_t>(buffers_[index].count));
        break;
      }
      case ExprKind::Builtin: {
        const auto* builtin = expr.as<ir::Builtin>();
        node->result = builtin_register(builtin->builtin, builtin->axis);
        break;
      }
      case ExprKind::Load: {
        const auto* load = expr.as<ir::Load>();
        node->buffer = buffer_index(load->buffer, &expr, nullptr);
        node->operands[0] = compile_expr(load->index);
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::Binary:
        node->operands = {compile_expr(expr.as<ir::Binary>()->lhs), compile_expr(expr.as<ir::Binary>()->rhs)};
        node->result = new_register(words_of(expr.type()));
        break;
      case ExprKind::Unary:
        node->operands[0] = compile_expr(expr.as<ir::Unary>()->operand);
        node->result = new_register(words_of(expr.type()));
        break;
      case ExprKind::Cast:
        node->operands[0] = compile_expr(expr.as<ir::Cast>()->value);
        node->result = new_register(words_of(expr.type()));
        break;
      case ExprKind::Bitcast:
        node->operands[0] = compile_expr(expr.as<ir::Bitcast>()->value);
        node->result = new_register(words_of(expr.type()));
        break;
      case ExprKind::Select: {
        const auto* select = expr.as<ir::Select>();
        node->operands = {compile_expr(select->cond), compile_expr(select->if_true), compile_expr(select->if_false)};
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::Fma: {
        const auto* fma = expr.as<ir::Fma>();
        node->operands = {compile_expr(fma->a), compile_expr(fma->b), compile_expr(fma->c)};
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::MakeVector: {
        const auto* make = expr.as<ir::MakeVector>();
        for (std::size_t i = 0; i < make->lanes.size(); ++i) node->operands[i] = compile_expr(make->lanes[i]);
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::ExtractLane:
        node->operands[0] = compile_expr(expr.as<ir::ExtractLane>()->vector);
        node->result = new_register();
        break;
      case ExprKind::InsertLane: {
        const auto* insert = expr.as<ir::InsertLane>();
        node->operands = {compile_expr(insert->vector), compile_expr(insert->value)};
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::Permute: {
        const auto* permute = expr.as<ir::Permute>();
        node->operands = {compile_expr(permute->a), compile_expr(permute->b), compile_expr(permute->selector)};
        node->result = new_register();
        break;
      }
      case ExprKind::SubgroupShuffle: {
        const auto* shuffle = expr.as<ir::SubgroupShuffle>();
        node->operands = {compile_expr(shuffle->value), compile_expr(shuffle->lane)};
        node->result = new_register();
        break;
      }
      case ExprKind::SubgroupReduce:
        node->operands[0] = compile_expr(expr.as<ir::SubgroupReduce>()->value);
        node->result = new_register();
        break;
      case ExprKind::SubgroupBallot:
        node->operands[0] = compile_expr(expr.as<ir::SubgroupBallot>()->cond);
        node->result = new_register();
        break;
      case ExprKind::SubgroupLoadMatrix: {
        const auto* load = expr.as<ir::SubgroupLoadMatrix>();
        node->buffer = buffer_index(load->array, &expr, nullptr);
        node->operands[0] = compile_expr(load->index);
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::SubgroupMma: {
        const auto* mma = expr.as<ir::SubgroupMma>();
        node->operands = {compile_expr(mma->a), compile_expr(mma->b), compile_expr(mma->c)};
        node->result = new_register(words_of(expr.type()));
        break;
      }
      case ExprKind::AtomicAdd: {
        const auto* atomic = expr.as<ir::AtomicAdd>();
        node->buffer = buffer_index(atomic->buffer, &expr, nullptr);
        node->operands = {compile_expr(atomic->index), compile_expr(atomic->value)};
        node->result = new_register();
        break;
      }
      case ExprKind::Lookup: {
        const auto* lookup_node = expr.as<ir::Lookup>();
        node->table.assign(lookup_node->table.begin(), lookup_node->table.end());
        node->operands[0] = compile_expr(lookup_node->index);
        node->result = new_register();
        break;
      }
    }
    compiled_.expressions.push_back(std::move(node));
    return compiled_.expressions.back().get();
  }

  std::uint32_t builtin_register(ir::BuiltinKind kind, unsigned axis) {
    for (const auto& existing : compiled_.builtins) {
      if (existing.kind == kind && existing.axis == axis) return existing.reg;
    }
    std::uint32_t reg = new_register();
    compiled_.builtins.push_back({reg, kind, axis});
    return reg;
  }

  std::unique_ptr<StmtNode> compile_block(const ir::Node& node) {
    auto block = std::make_unique<BlockStmt>();
    if (!node.defined()) return block;
    {
      ir::ScopedTable<Binding>::Scope scope(bindings_);
      if (const auto* ir_block = node.as<ir::Block>()) {
        for (const ir::Node& stmt : ir_block->stmts) block->stmts.push_back(compile_stmt(stmt));
      } else {
        block->stmts.push_back(compile_stmt(node));
      }
    }
    for (const auto& stmt : block->stmts) block->may_return |= stmt->may_return;
    return block;
  }

  std::unique_ptr<StmtNode> compile_stmt(const ir::Node& node) {
    using ir::NodeKind;
    switch (node.kind()) {
      case NodeKind::Block:
        return compile_block(node);
      case NodeKind::Region:
        return compile_block(node.as<ir::Region>()->body);
      case NodeKind::Let: {
        const auto* let = node.as<ir::Let>();
        auto stmt = std::make_unique<BindStmt>();
        stmt->value = compile_expr(let->value);  // before the name comes into scope
        stmt->words = words_of(let->value.type());
        stmt->reg = new_register(stmt->words);
        bindings_.declare(let->name, Binding{stmt->reg, let->value.type()});
        return stmt;
      }
      case NodeKind::Assign: {
        const auto* assign = node.as<ir::Assign>();
        auto stmt = std::make_unique<BindStmt>();
        stmt->value = compile_expr(assign->value);
        stmt->words = words_of(assign->value.type());
        stmt->reg = lookup(assign->name, nullptr).reg;
        return stmt;
      }
      case NodeKind::Store: {
        const auto* store = node.as<ir::Store>();
        auto stmt = std::make_unique<StoreStmt>();
        stmt->buffer = buffer_index(store->buffer, nullptr, &node);
        stmt->index = compile_expr(store->index);
        stmt->value = compile_expr(store->value);
        stmt->lanes_per_store = store->elements_written(buffers_[stmt->buffer].element);
        stmt->words = words_of(store->value.type());
        stmt->source = node;
        return stmt;
      }
      case NodeKind::If: {
        const auto* if_node = node.as<ir::If>();
        auto stmt = std::make_unique<IfStmt>();
        stmt->cond = compile_expr(if_node->cond);
        stmt->then_body = compile_block(if_node->then_body);
        if (if_node->else_body.defined()) stmt->else_body = compile_block(if_node->else_body);
        stmt->may_return = stmt->then_body->may_return || (stmt->else_body && stmt->else_body->may_return);
        return stmt;
      }
      case NodeKind::Loop: {
        const auto* loop = node.as<ir::Loop>();
        auto stmt = std::make_unique<LoopStmt>();
        stmt->from = compile_expr(loop->from);
        stmt->to = compile_expr(loop->to);
        stmt->kernels = loop_kernels(loop->from.type().element());
        stmt->counter = new_register();
        stmt->limit = new_register();
        {
          ir::ScopedTable<Binding>::Scope scope(bindings_);
          bindings_.declare(loop->var, Binding{stmt->counter, loop->from.type()});
          stmt->body = compile_block(loop->body);
        }
        stmt->may_return = stmt->body->may_return;
        return stmt;
      }
      case NodeKind::Barrier:
        return std::make_unique<BarrierStmt>();
      case NodeKind::Fence:
        return std::make_unique<FenceStmt>();
      case NodeKind::AsyncCopy: {
        const auto* copy = node.as<ir::AsyncCopy>();
        auto stmt = std::make_unique<AsyncCopyStmt>();
        stmt->array = buffer_index(copy->array, nullptr, &node);
        stmt->buffer = buffer_index(copy->buffer, nullptr, &node);
        stmt->array_index = compile_expr(copy->array_index);
        stmt->buffer_index = compile_expr(copy->buffer_index);
        stmt->bytes = copy->bytes;
        stmt->source = node;
        return stmt;
      }
      case NodeKind::AsyncCommit:
      case NodeKind::AsyncWait:
        return std::make_unique<NoOpStmt>();
      case NodeKind::Return:
        return std::make_unique<ReturnStmt>();
    }
    throw RuntimeError("reference interpreter: unknown statement kind");
  }

  const ir::Program& program_;
  const std::vector<BufferView>& buffers_;
  CompiledProgram compiled_;
  ir::ScopedTable<Binding> bindings_;
  std::uint32_t next_register_ = 0;
};

}  // namespace

CompiledProgram compile(const ir::Program& program, const std::vector<BufferView>& buffers) {
  return Compiler(program, buffers).run();
}

}  // namespace quantc::runtime::reference::detail
