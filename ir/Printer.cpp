#include "ir/Printer.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>

#include "ir/IRVisitor.h"

namespace quantc::ir {
namespace {

std::string print_float(ScalarType type, double value, std::uint64_t bits) {
  if (std::isnan(value)) return fmt::format("{}(nan {:#x})", to_string(type), bits);
  if (std::isinf(value)) return fmt::format("{}({}inf)", to_string(type), value < 0 ? "-" : "");
  // Shortest text that reads back to the same value of the literal's own precision.
  std::string text = type == ScalarType::F64 ? fmt::format("{}", value) : fmt::format("{}", static_cast<float>(value));
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + std::string(to_string(type));
}

std::string print_literal(const Literal& literal) {
  const ScalarType type = literal.scalar();
  if (type == ScalarType::Bool) return literal.bits ? "true" : "false";
  if (is_float(type)) return print_float(type, literal.as_double(), literal.bits);
  if (is_signed(type)) return fmt::format("{}{}", literal.as_int64(), to_string(type));
  return fmt::format("{}{}", literal.bits, to_string(type));
}

constexpr char kAxisNames[] = "xyz";

/// ".v4" for a vector access and ".align(N)" when it states less than the natural
/// alignment; nothing for a scalar access.
std::string access_suffix(Type type, unsigned alignment) {
  std::string text;
  if (type.is_vector()) text += fmt::format(".v{}", type.lanes());
  if (alignment != natural_alignment(type)) text += fmt::format(".align({})", alignment);
  return text;
}

/// Prints an expression as a tree. Past `limit` characters it stops descending, so a
/// legalized DAG whose tree form is exponentially long still prints in bounded time.
class ExprPrinter : public IRVisitor {
 public:
  explicit ExprPrinter(std::size_t limit = std::string::npos) : limit_(limit) {}
  std::string text;

  void print(const Expr& expr) {
    if (text.size() <= limit_) visit(expr);
  }

 protected:
  void visit_Literal(const Literal& node) override { text += print_literal(node); }
  void visit_Var(const Var& node) override { text += node.name; }
  void visit_Load(const Load& node) override {
    text += node.buffer + "[";
    print(node.index);
    text += "]" + (node.reinterpret ? fmt::format(".as<{}>", to_string(node.type))
                                    : access_suffix(node.type, node.alignment));
  }
  void visit_Binary(const Binary& node) override {
    if (node.op == BinaryOp::Min || node.op == BinaryOp::Max) {
      call(to_string(node.op), {node.lhs, node.rhs});
      return;
    }
    text += "(";
    print(node.lhs);
    text += fmt::format(" {} ", to_string(node.op));
    print(node.rhs);
    text += ")";
  }
  void visit_Unary(const Unary& node) override { call(to_string(node.op), {node.operand}); }
  void visit_Cast(const Cast& node) override {
    call(fmt::format("cast<{}>", to_string(node.type)), {node.value});
  }
  void visit_Bitcast(const Bitcast& node) override {
    call(fmt::format("bitcast<{}>", to_string(node.type)), {node.value});
  }
  void visit_MakeVector(const MakeVector& node) override {
    text += "make_vector(";
    for (std::size_t i = 0; i < node.lanes.size(); ++i) {
      if (i) text += ", ";
      print(node.lanes[i]);
    }
    text += ")";
  }
  void visit_ExtractLane(const ExtractLane& node) override {
    text += "extract_lane(";
    print(node.vector);
    text += fmt::format(", {})", node.lane);
  }
  void visit_InsertLane(const InsertLane& node) override {
    text += "insert_lane(";
    print(node.vector);
    text += fmt::format(", {}, ", node.lane);
    print(node.value);
    text += ")";
  }
  void visit_Permute(const Permute& node) override { call("permute", {node.a, node.b, node.selector}); }
  void visit_Select(const Select& node) override { call("select", {node.cond, node.if_true, node.if_false}); }
  void visit_Fma(const Fma& node) override { call("fma", {node.a, node.b, node.c}); }
  void visit_BufferLength(const BufferLength& node) override { text += fmt::format("len({})", node.buffer); }
  void visit_Builtin(const Builtin& node) override {
    text += to_string(node.builtin);
    if (node.builtin == BuiltinKind::InvocationId || node.builtin == BuiltinKind::WorkgroupId ||
        node.builtin == BuiltinKind::LocalId) {
      text += fmt::format(".{}", kAxisNames[node.axis]);
    }
  }
  void visit_SubgroupShuffle(const SubgroupShuffle& node) override {
    call("subgroup_shuffle", {node.value, node.lane});
  }
  void visit_SubgroupReduce(const SubgroupReduce& node) override {
    call(fmt::format("subgroup_{}", to_string(node.op)), {node.value});
  }
  void visit_SubgroupBallot(const SubgroupBallot& node) override { call("subgroup_ballot", {node.cond}); }
  void visit_SubgroupLoadMatrix(const SubgroupLoadMatrix& node) override {
    text += fmt::format("subgroup_load_matrix<{}{}>({}[", node.matrices, node.transpose ? ", trans" : "", node.array);
    print(node.index);
    text += "])";
  }
  void visit_SubgroupMma(const SubgroupMma& node) override {
    call(fmt::format("subgroup_mma<{}>", to_string(node.input)), {node.a, node.b, node.c});
  }
  void visit_AtomicAdd(const AtomicAdd& node) override {
    text += fmt::format("atomic_add({}[", node.buffer);
    print(node.index);
    text += "], ";
    print(node.value);
    text += ")";
  }
  void visit_Lookup(const Lookup& node) override {
    text += fmt::format("lookup<{}>[", to_string(node.type));
    for (std::size_t i = 0; i < node.table.size(); ++i) {
      if (i) text += ", ";
      text += print_literal(Literal(node.scalar(), node.table[i]));
    }
    text += "](";
    print(node.index);
    text += ")";
  }

 private:
  void call(std::string_view name, std::initializer_list<Expr> args) {
    text += name;
    text += "(";
    bool first = true;
    for (const Expr& arg : args) {
      if (!first) text += ", ";
      first = false;
      print(arg);
    }
    text += ")";
  }

  std::size_t limit_;
};

/// Prints statements, one per line. `header_only` prints a compound statement's first
/// line without its bodies; `expr_limit` bounds each expression's text (ExprPrinter).
class NodePrinter : public IRVisitor {
 public:
  explicit NodePrinter(int indent, bool header_only = false, std::size_t expr_limit = std::string::npos)
      : indent_(indent), header_only_(header_only), expr_limit_(expr_limit) {}
  std::string text;

 protected:
  void visit_Let(const Let& node) override {
    line(fmt::format("let {}: {} = {}", node.name, to_string(node.value.type()), expr(node.value)));
  }
  void visit_Assign(const Assign& node) override { line(fmt::format("{} = {}", node.name, expr(node.value))); }
  void visit_Store(const Store& node) override {
    line(fmt::format("{}[{}]{} = {}", node.buffer, expr(node.index),
                     node.reinterpret ? fmt::format(".as<{}>", to_string(node.value.type()))
                                      : access_suffix(node.value.type(), node.alignment),
                     expr(node.value)));
  }
  void visit_If(const If& node) override {
    line(fmt::format("if {} {{", expr(node.cond)));
    nested(node.then_body);
    if (!node.else_body.as<Block>()->stmts.empty()) {
      line("} else {");
      nested(node.else_body);
    }
    line("}");
  }
  void visit_Loop(const Loop& node) override {
    line(fmt::format("for {}: {} in {} .. {} {{", node.var, to_string(node.from.type()), expr(node.from),
                     expr(node.to)));
    nested(node.body);
    line("}");
  }
  void visit_Region(const Region& node) override {
    line(fmt::format("region \"{}\" {{", node.op_id));
    nested(node.body);
    line("}");
  }
  void visit_Barrier(const Barrier&) override { line("barrier"); }
  void visit_Fence(const Fence&) override { line("fence"); }
  void visit_AsyncCopy(const AsyncCopy& node) override {
    line(fmt::format("async_copy({}[{}], {}[{}], {})", node.array, expr(node.array_index), node.buffer,
                     expr(node.buffer_index), node.bytes));
  }
  void visit_AsyncCommit(const AsyncCommit&) override { line("async_commit"); }
  void visit_AsyncWait(const AsyncWait& node) override { line(fmt::format("async_wait({})", node.pending)); }
  void visit_Return(const Return&) override { line("return"); }

 private:
  void line(const std::string& content) {
    text.append(static_cast<std::size_t>(indent_) * 2, ' ');
    text += content;
    text += '\n';
  }
  void nested(const Node& body) {
    if (header_only_) return;
    ++indent_;
    visit(body);
    --indent_;
  }
  std::string expr(const Expr& value) const {
    if (!value.defined()) return "<undefined>";
    ExprPrinter printer(expr_limit_);
    printer.print(value);
    return printer.text;
  }

  int indent_;
  bool header_only_;
  std::size_t expr_limit_;
};

}  // namespace

std::string print(const Expr& expr) {
  if (!expr.defined()) return "<undefined>";
  ExprPrinter printer;
  printer.visit(expr);
  return printer.text;
}

std::string print(const Node& node, int indent) {
  NodePrinter printer(indent);
  printer.visit(node);
  return printer.text;
}

std::string print_header(const NodeBase& node, std::size_t max_chars) {
  NodePrinter printer(0, /*header_only=*/true, max_chars);
  printer.visit(node);
  std::string text = printer.text.substr(0, printer.text.find('\n'));
  if (text.ends_with(" {")) text.resize(text.size() - 2);
  if (text.size() > max_chars) text = text.substr(0, max_chars >= 4 ? max_chars - 4 : 0) + " ...";
  return text;
}

std::string print_signature(const Program& program) {
  std::string text = fmt::format("program \"{}\" workgroup_size({}, {}, {}) workgroup_count({}, {}, {})\n",
                                 program.name, program.workgroup_size[0], program.workgroup_size[1],
                                 program.workgroup_size[2], program.workgroup_count[0], program.workgroup_count[1],
                                 program.workgroup_count[2]);
  if (program.min_resident_workgroups != 0) {
    text.insert(text.size() - 1, fmt::format(" min_resident_workgroups({})", program.min_resident_workgroups));
  }
  if (program.reserved_shared_bytes != 0) {
    text.insert(text.size() - 1, fmt::format(" reserved_shared_bytes({})", program.reserved_shared_bytes));
  }
  for (const BufferDecl& buffer : program.buffers) {
    text += fmt::format("buffer @{} {}: {} {}[{}]", buffer.binding, buffer.name, to_string(buffer.access),
                        to_string(buffer.element), buffer.count);
    if (buffer.output_byte_range) {
      text += fmt::format(" output_bytes({}, {})", buffer.output_byte_range->begin, buffer.output_byte_range->end);
    }
    text += "\n";
  }
  for (const SharedDecl& array : program.shared) {
    text += fmt::format("shared {}: {}[{}]\n", array.name, to_string(array.element), array.count);
  }
  if (!program.shared.empty()) text += fmt::format("// static shared memory: {} bytes\n", program.static_shared_bytes());
  return text;
}

std::string print(const Program& program) {
  return print_signature(program) + "{\n" + print(program.entry, 1) + "}\n";
}

}  // namespace quantc::ir
