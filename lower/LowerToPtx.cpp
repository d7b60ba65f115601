// IR -> PTX lowering: an IRVisitor that walks the structured IR once, in evaluation
// order, and drives ptx::PtxWriter. Expression visits leave their value in `result_`.
//
// Value representation (PTX has no 8-bit arithmetic registers, tinygrad's legalization):
// - bool lives in a predicate; it is stored to memory as one byte (selp 1/0).
// - u8/i8/u16/u32/i32 live in .b32 registers, always kept *normalized*: zero-extended
//   for unsigned, sign-extended for signed. Operations that can leave the narrow range
//   (add, sub, mul, div, neg, not, shl, abs) re-normalize with and/bfe, so 32-bit
//   compares, min/max, shifts and casts give the narrow type's results.
// - u64/i64 live in .b64, f16 in .b16, f32 in .f32, f64 in .f64.
// Float Add/Sub/Mul use the `.rn` forms, which PTX forbids from being contracted into
// an FMA, so results are bit-identical to the reference interpreter (ir/IR.h).
#include "lower/LowerToPtx.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "ir/IRVisitor.h"
#include "ir/Printer.h"
#include "ir/ScopedTable.h"
#include "ir/Verifier.h"
#include "ptx/PtxWriter.h"

namespace quantc::lower {

namespace {

using ir::BinaryOp;
using ir::ScalarType;
using ptx::RegisterClass;

constexpr char kFullWarpMask[] = "0xffffffff";
constexpr char kShuffleClamp[] = "0x1f";  // c operand of shfl.sync: clamp 31, no segments
constexpr ptx::PtxVersion kWarpSyncVersion{6, 0};  // shfl.sync / vote.sync (PTX ISA 6.0)

/// The scalar type of a value; vector values are not handled by this lowering.
ScalarType scalar_of(ir::Type type) {
  if (type.is_vector()) {
    throw ir::IRError(fmt::format("lower_to_ptx: vector type {} cannot be lowered", ir::to_string(type)));
  }
  return type.element();
}

RegisterClass register_class_of(ScalarType type) {
  switch (type) {
    case ScalarType::Bool:
      return RegisterClass::Predicate;
    case ScalarType::F16:
      return RegisterClass::B16;
    case ScalarType::U64:
    case ScalarType::I64:
      return RegisterClass::B64;
    case ScalarType::F32:
      return RegisterClass::F32;
    case ScalarType::F64:
      return RegisterClass::F64;
    case ScalarType::U8:
    case ScalarType::I8:
    case ScalarType::U16:
    case ScalarType::U32:
    case ScalarType::I32:
      return RegisterClass::B32;
    default:
      throw ir::IRError(fmt::format("lower_to_ptx: values of type {} cannot be held in a PTX register",
                                    ir::to_string(type)));
  }
}

bool is_narrow_integer(ScalarType type) {
  return type == ScalarType::U8 || type == ScalarType::I8 || type == ScalarType::U16;
}

/// Integer instruction type of the register holding `type`: u32/s32/u64/s64.
std::string integer_suffix(ScalarType type) {
  bool wide = register_class_of(type) == RegisterClass::B64;
  return fmt::format("{}{}", ir::is_signed(type) ? "s" : "u", wide ? 64 : 32);
}

/// Instruction type for arithmetic on `type`: integer_suffix or f16/f32/f64.
std::string arithmetic_suffix(ScalarType type) {
  if (ir::is_float(type)) return std::string(ir::to_string(type));
  return integer_suffix(type);
}

/// Untyped bit type of the register class ("b16", "b32", "b64"; "pred" for bool).
std::string bits_suffix(ScalarType type) {
  switch (register_class_of(type)) {
    case RegisterClass::Predicate:
      return "pred";
    case RegisterClass::B16:
      return "b16";
    case RegisterClass::B32:
    case RegisterClass::F32:
      return "b32";
    case RegisterClass::B64:
    case RegisterClass::F64:
      return "b64";
  }
  return "b32";
}

/// Type for mov/selp: f32/f64 keep their float type, the rest their bit type.
std::string move_suffix(ScalarType type) {
  if (type == ScalarType::F32 || type == ScalarType::F64) return std::string(ir::to_string(type));
  return bits_suffix(type);
}

/// Type of a global load/store of one element (bool is one byte).
std::string memory_suffix(ScalarType type) {
  switch (type) {
    case ScalarType::Bool:
    case ScalarType::U8:
      return "u8";
    case ScalarType::I8:
      return "s8";
    case ScalarType::U16:
      return "u16";
    case ScalarType::U32:
      return "u32";
    case ScalarType::I32:
      return "s32";
    case ScalarType::U64:
      return "u64";
    case ScalarType::I64:
      return "s64";
    case ScalarType::F16:
      return "b16";
    case ScalarType::F32:
      return "f32";
    case ScalarType::F64:
      return "f64";
    default:
      throw ir::IRError(fmt::format("lower_to_ptx: no PTX memory type for {}", ir::to_string(type)));
  }
}

std::string comparison_name(BinaryOp op, bool is_float) {
  switch (op) {
    case BinaryOp::Eq:
      return "eq";
    case BinaryOp::Ne:
      return is_float ? "neu" : "ne";  // IR Ne is true when either operand is NaN
    case BinaryOp::Lt:
      return "lt";
    case BinaryOp::Le:
      return "le";
    case BinaryOp::Gt:
      return "gt";
    case BinaryOp::Ge:
      return "ge";
    default:
      throw ir::IRError(fmt::format("lower_to_ptx: '{}' is not a comparison", ir::to_string(op)));
  }
}

std::uint64_t type_mask(ScalarType type) {
  unsigned bits = ir::bit_width(type);
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

/// A lowered value: a register or an immediate, with its IR type. `temporary` marks a
/// register written by this expression only, which a Let may adopt without a copy.
struct Operand {
  std::string text;
  ScalarType type = ScalarType::U32;
  bool temporary = false;
  std::optional<std::uint64_t> constant;  // literal bits when `text` is an immediate
  bool immediate() const { return constant.has_value(); }
};

/// The immediate spelling of literal `bits` of `type` for a b16/b32/b64/f32/f64 operand.
std::string immediate_text(ScalarType type, std::uint64_t bits) {
  switch (type) {
    case ScalarType::F32:
      return ptx::f32_immediate(static_cast<std::uint32_t>(bits));
    case ScalarType::F64:
      return ptx::f64_immediate(bits);
    case ScalarType::F16:
      return fmt::format("0x{:04X}", bits & 0xFFFF);
    case ScalarType::Bool:
      return bits ? "1" : "0";
    default:
      if (ir::is_signed(type)) return ptx::integer_immediate(static_cast<std::int64_t>(bits));
      return ptx::unsigned_immediate(bits & type_mask(type));
  }
}

struct Variable {
  std::string register_name;
  ScalarType type;
};

class PtxLowering : public ir::IRVisitor {
 public:
  PtxLowering(const ir::Program& program, const ptx::Target& target) : program_(program), writer_(target) {}

  std::string run(const ptx::Target& target) {
    if (!ptx::is_ptx_identifier(program_.name)) {
      throw ir::IRError(fmt::format(
          "lower_to_ptx: program name '{}' is not a valid PTX identifier (letters, digits, '_' and '$', not "
          "starting with a digit); rename the program",
          program_.name));
    }
    ptx::EntrySignature entry{program_.name, {}, program_.workgroup_size};
    for (const ir::BufferDecl& buffer : program_.buffers) {
      std::string parameter = fmt::format("{}_param_{}", program_.name, buffer.binding);
      entry.parameter_names.push_back(parameter);
      writer_.comment(fmt::format("buffer @{} {}: {} {}[{}]", buffer.binding, buffer.name,
                                  ir::to_string(buffer.access), ir::to_string(buffer.element), buffer.count));
      std::string generic = writer_.new_register(RegisterClass::B64);
      writer_.instruction("ld.param.u64", {generic, fmt::format("[{}]", parameter)});
      std::string global = writer_.new_register(RegisterClass::B64);
      writer_.instruction("cvta.to.global.u64", {global, generic});
      buffer_addresses_[buffer.name] = global;
    }
    writer_.blank_line();
    visit(program_.entry);
    writer_.instruction("ret");
    return writer_.finish(entry, fmt::format("Generated by quantc from program \"{}\" for {}", program_.name,
                                             target.name()));
  }

 protected:
  // ---- expressions --------------------------------------------------------------

  void visit_Literal(const ir::Literal& node) override {
    if (scalar_of(node.type) == ScalarType::Bool || scalar_of(node.type) == ScalarType::F16) {
      // No predicate or f16 immediates in PTX arithmetic: materialize in a register.
      Operand value = fresh(scalar_of(node.type));
      writer_.instruction(fmt::format("mov.{}", bits_suffix(scalar_of(node.type))), {value.text, immediate_text(scalar_of(node.type), node.bits)});
      result_ = value;
      return;
    }
    result_ = Operand{immediate_text(scalar_of(node.type), node.bits), scalar_of(node.type), false, node.bits};
  }

  void visit_Var(const ir::Var& node) override {
    const Variable& variable = lookup(node.name);
    result_ = Operand{variable.register_name, variable.type, false, std::nullopt};
  }

  void visit_Load(const ir::Load& node) override {
    const ir::BufferDecl& buffer = find_buffer(node.buffer);
    Operand index = lower(node.index);
    std::string address = element_address(buffer, index);
    std::string opcode = buffer.access == ir::BufferAccess::ReadOnly ? "ld.global.nc" : "ld.global";
    if (scalar_of(node.type) == ScalarType::Bool) {
      std::string byte = writer_.new_register(RegisterClass::B32);
      writer_.instruction(opcode + ".u8", {byte, address});
      Operand value = fresh(ScalarType::Bool);
      writer_.instruction("setp.ne.u32", {value.text, byte, "0"});
      result_ = value;
      return;
    }
    Operand value = fresh(scalar_of(node.type));
    // u8/s8/u16 loads widen into the 32-bit register (zero- or sign-extended).
    writer_.instruction(fmt::format("{}.{}", opcode, memory_suffix(scalar_of(node.type))), {value.text, address});
    result_ = value;
  }

  void visit_Binary(const ir::Binary& node) override {
    ScalarType type = scalar_of(node.lhs.type());
    Operand lhs = lower(node.lhs);
    Operand rhs = lower(node.rhs);
    if (ir::is_comparison(node.op)) {
      result_ = type == ScalarType::Bool ? boolean_compare(node.op, lhs, rhs) : compare(node.op, lhs, rhs);
    } else if (type == ScalarType::Bool) {
      result_ = boolean_logic(node.op, lhs, rhs);
    } else if (node.op == BinaryOp::Shl || node.op == BinaryOp::Shr) {
      result_ = shift(node.op, lhs, rhs);
    } else {
      result_ = arithmetic(node.op, lhs, rhs);
    }
  }

  void visit_Unary(const ir::Unary& node) override {
    ScalarType type = scalar_of(node.type);
    Operand operand = lower(node.operand);
    std::string source = in_register(operand);
    if (type == ScalarType::Bool) {  // only Not is valid on bool
      Operand value = fresh(type);
      writer_.instruction("not.pred", {value.text, source});
      result_ = value;
      return;
    }
    if (ir::is_float(type)) {
      // Sign-bit operations, exact for every input including NaN payloads.
      std::uint64_t sign = std::uint64_t{1} << (ir::bit_width(type) - 1);
      Operand value = fresh(type);
      if (node.op == ir::UnaryOp::Neg) {
        writer_.instruction(fmt::format("xor.{}", bits_suffix(type)), {value.text, source, ptx::unsigned_immediate(sign)});
      } else {
        writer_.instruction(fmt::format("and.{}", bits_suffix(type)),
                            {value.text, source, ptx::unsigned_immediate(sign - 1)});
      }
      result_ = value;
      return;
    }
    if (node.op == ir::UnaryOp::Abs && !ir::is_signed(type)) {
      result_ = operand;  // |x| == x for unsigned integers
      return;
    }
    Operand value = fresh(type);
    bool wide = register_class_of(type) == RegisterClass::B64;
    switch (node.op) {
      case ir::UnaryOp::Neg:
        writer_.instruction(wide ? "neg.s64" : "neg.s32", {value.text, source});
        break;
      case ir::UnaryOp::Not:
        writer_.instruction(fmt::format("not.{}", bits_suffix(type)), {value.text, source});
        break;
      case ir::UnaryOp::Abs:
        writer_.instruction(wide ? "abs.s64" : "abs.s32", {value.text, source});
        break;
    }
    normalize(value.text, type);
    result_ = value;
  }

  void visit_Cast(const ir::Cast& node) override {
    Operand source = lower(node.value);
    result_ = cast(source, scalar_of(node.type));
  }

  void visit_Select(const ir::Select& node) override {
    std::string condition = in_register(lower(node.cond));
    Operand if_true = lower(node.if_true);
    Operand if_false = lower(node.if_false);
    result_ = select(scalar_of(node.type), condition, if_true, if_false);
  }

  void visit_Fma(const ir::Fma& node) override {
    std::string a = in_register(lower(node.a));
    Operand b = lower(node.b);
    Operand c = lower(node.c);
    Operand value = fresh(scalar_of(node.type));
    writer_.instruction(fmt::format("fma.rn.{}", ir::to_string(scalar_of(node.type))), {value.text, a, b.text, c.text});
    result_ = value;
  }

  void visit_BufferLength(const ir::BufferLength& node) override {
    std::uint32_t count = find_buffer(node.buffer).count;
    result_ = Operand{ptx::unsigned_immediate(count), ScalarType::U32, false, count};
  }

  void visit_Builtin(const ir::Builtin& node) override {
    static constexpr char kAxes[] = "xyz";
    const char axis = kAxes[node.axis < 3 ? node.axis : 0];
    Operand value = fresh(ScalarType::U32);
    switch (node.builtin) {
      case ir::BuiltinKind::LocalId:
        writer_.instruction("mov.u32", {value.text, fmt::format("%tid.{}", axis)});
        break;
      case ir::BuiltinKind::WorkgroupId:
        writer_.instruction("mov.u32", {value.text, fmt::format("%ctaid.{}", axis)});
        break;
      case ir::BuiltinKind::InvocationId: {
        std::string cta = writer_.new_register(RegisterClass::B32);
        std::string threads = writer_.new_register(RegisterClass::B32);
        std::string thread = writer_.new_register(RegisterClass::B32);
        writer_.instruction("mov.u32", {cta, fmt::format("%ctaid.{}", axis)});
        writer_.instruction("mov.u32", {threads, fmt::format("%ntid.{}", axis)});
        writer_.instruction("mov.u32", {thread, fmt::format("%tid.{}", axis)});
        writer_.instruction("mad.lo.u32", {value.text, cta, threads, thread});
        break;
      }
      case ir::BuiltinKind::SubgroupLocalId:
        writer_.instruction("mov.u32", {value.text, "%laneid"});
        break;
      case ir::BuiltinKind::SubgroupSize:
        writer_.instruction("mov.u32", {value.text, "WARP_SZ"});
        break;
    }
    result_ = value;
  }

  void visit_SubgroupShuffle(const ir::SubgroupShuffle& node) override {
    Operand own = lower(node.value);
    std::string value = in_register(own);
    Operand lane = lower(node.lane);
    if (lane.immediate() && *lane.constant >= 32) {
      result_ = Operand{value, scalar_of(node.type), own.temporary || own.immediate(), std::nullopt};  // IR: lane >= 32 reads its own value
      return;
    }
    writer_.require_version(kWarpSyncVersion, "shfl.sync");
    Operand shuffled = fresh(scalar_of(node.type));
    writer_.instruction("shfl.sync.idx.b32", {shuffled.text, value, lane.text, kShuffleClamp, kFullWarpMask});
    if (lane.immediate()) {
      result_ = shuffled;
      return;
    }
    // shfl.sync.idx uses only the lane's low 5 bits; the IR says a lane >= 32 reads
    // the invocation's own value, so select it explicitly.
    std::string in_range = writer_.new_register(RegisterClass::Predicate);
    writer_.instruction("setp.lt.u32", {in_range, lane.text, "32"});
    Operand value_out = fresh(scalar_of(node.type));
    writer_.instruction(fmt::format("selp.{}", move_suffix(scalar_of(node.type))), {value_out.text, shuffled.text, value, in_range});
    result_ = value_out;
  }

  void visit_SubgroupReduce(const ir::SubgroupReduce& node) override {
    writer_.require_version(kWarpSyncVersion, "shfl.sync");
    std::string accumulator = in_register(lower(node.value));
    std::string opcode;
    switch (node.op) {
      case ir::SubgroupReduceOp::Add:
        opcode = scalar_of(node.type) == ScalarType::F32 ? "add.rn.f32" : fmt::format("add.{}", integer_suffix(scalar_of(node.type)));
        break;
      case ir::SubgroupReduceOp::Max:
        opcode = fmt::format("max.{}", arithmetic_suffix(scalar_of(node.type)));
        break;
      case ir::SubgroupReduceOp::Min:
        opcode = fmt::format("min.{}", arithmetic_suffix(scalar_of(node.type)));
        break;
    }
    // Butterfly in the order 16, 8, 4, 2, 1, exactly as the reference interpreter
    // combines lanes, so every lane ends with the same bits.
    for (int offset : {16, 8, 4, 2, 1}) {
      std::string partner = writer_.new_register(register_class_of(scalar_of(node.type)));
      writer_.instruction("shfl.sync.bfly.b32", {partner, accumulator, std::to_string(offset), kShuffleClamp,
                                                 kFullWarpMask});
      std::string combined = writer_.new_register(register_class_of(scalar_of(node.type)));
      writer_.instruction(opcode, {combined, accumulator, partner});
      accumulator = combined;
    }
    result_ = Operand{accumulator, scalar_of(node.type), true, std::nullopt};
  }

  void visit_SubgroupBallot(const ir::SubgroupBallot& node) override {
    writer_.require_version(kWarpSyncVersion, "vote.sync");
    std::string condition = in_register(lower(node.cond));
    Operand value = fresh(ScalarType::U32);
    writer_.instruction("vote.sync.ballot.b32", {value.text, condition, kFullWarpMask});
    result_ = value;
  }

  void visit_Lookup(const ir::Lookup& node) override {
    Operand index = lower(node.index);
    if (index.immediate()) {
      if (*index.constant >= node.table.size()) {
        throw ir::IRError(fmt::format("lower_to_ptx: lookup index {} is out of range for a table of {} entries",
                                      *index.constant, node.table.size()));
      }
      result_ = lower(ir::Literal::make(scalar_of(node.type), node.table[*index.constant]));
      return;
    }
    if (node.table.size() == 1) {  // a one-entry table is its entry
      result_ = lower(ir::Literal::make(scalar_of(node.type), node.table.front()));
      return;
    }
    // A bool table selects 1/0 words and tests the result.
    ScalarType entry_type = scalar_of(node.type) == ScalarType::Bool ? ScalarType::U32 : scalar_of(node.type);
    std::vector<std::string> level;
    std::size_t padded = 1;
    while (padded < node.table.size()) padded *= 2;
    for (std::size_t i = 0; i < padded; ++i) {
      // Pad to a power of two with the last entry; in-range indices never reach it.
      level.push_back(immediate_text(entry_type, node.table[std::min(i, node.table.size() - 1)]));
    }
    // One level of selp per index bit, lowest bit first: 16 entries = 4 levels, 15 selp.
    for (unsigned bit = 0; level.size() > 1; ++bit) {
      std::string masked = writer_.new_register(RegisterClass::B32);
      writer_.instruction("and.b32", {masked, index.text, ptx::unsigned_immediate(std::uint64_t{1} << bit)});
      std::string bit_set = writer_.new_register(RegisterClass::Predicate);
      writer_.instruction("setp.ne.u32", {bit_set, masked, "0"});
      std::vector<std::string> next;
      for (std::size_t i = 0; i < level.size(); i += 2) {
        std::string chosen = writer_.new_register(register_class_of(entry_type));
        writer_.instruction(fmt::format("selp.{}", move_suffix(entry_type)), {chosen, level[i + 1], level[i], bit_set});
        next.push_back(chosen);
      }
      level = std::move(next);
    }
    Operand value{level.front(), entry_type, true, std::nullopt};
    if (scalar_of(node.type) == ScalarType::Bool) {
      Operand truth = fresh(ScalarType::Bool);
      writer_.instruction("setp.ne.u32", {truth.text, value.text, "0"});
      value = truth;
    }
    result_ = value;
  }

  // ---- statements ---------------------------------------------------------------

  void visit_Let(const ir::Let& node) override {
    comment_statement(node);
    Operand value = lower(node.value);
    std::string register_name;
    if (value.temporary && !value.immediate()) {
      register_name = value.text;  // the expression's own register becomes the variable
    } else {
      register_name = writer_.new_register(register_class_of(value.type));
      writer_.instruction(fmt::format("mov.{}", move_suffix(value.type)), {register_name, value.text});
    }
    variables_.declare(node.name, Variable{register_name, value.type});
  }

  void visit_Assign(const ir::Assign& node) override {
    comment_statement(node);
    Operand value = lower(node.value);
    const Variable& variable = lookup(node.name);
    writer_.instruction(fmt::format("mov.{}", move_suffix(variable.type)), {variable.register_name, value.text});
  }

  void visit_Store(const ir::Store& node) override {
    comment_statement(node);
    const ir::BufferDecl& buffer = find_buffer(node.buffer);
    if (buffer.access == ir::BufferAccess::ReadOnly) {
      throw ir::IRError(fmt::format("lower_to_ptx: store to read-only buffer '{}'", buffer.name));
    }
    Operand index = lower(node.index);
    Operand value = lower(node.value);
    std::string address = element_address(buffer, index);
    std::string source;
    if (value.type == ScalarType::Bool) {
      source = writer_.new_register(RegisterClass::B32);
      writer_.instruction("selp.u32", {source, "1", "0", value.text});
    } else {
      source = in_register(value);
    }
    writer_.instruction(fmt::format("st.global.{}", memory_suffix(value.type)), {address, source});
  }

  void visit_If(const ir::If& node) override {
    comment_statement(node);
    std::string condition = in_register(lower(node.cond));
    const auto* else_block = node.else_body.as<ir::Block>();
    bool has_else = else_block != nullptr && !else_block->stmts.empty();
    std::string else_label = has_else ? writer_.new_label("else") : "";
    std::string end_label = writer_.new_label("end_if");
    writer_.predicated(condition, true, "bra", {has_else ? else_label : end_label});
    nested(node.then_body);
    if (has_else) {
      writer_.instruction("bra", {end_label});
      writer_.label(else_label);
      writer_.comment("else", depth_);
      nested(node.else_body);
    }
    writer_.label(end_label);
  }

  void visit_Loop(const ir::Loop& node) override {
    comment_statement(node);
    ScalarType type = scalar_of(node.from.type());
    // Both bounds are evaluated once, on entry, per lane.
    Operand from = lower(node.from);
    std::string counter = writer_.new_register(register_class_of(type));
    writer_.instruction(fmt::format("mov.{}", move_suffix(type)), {counter, from.text});
    Operand to = lower(node.to);
    std::string end = to.immediate() ? to.text : materialize_copy(to);
    std::string head = writer_.new_label("loop");
    std::string exit = writer_.new_label("end_loop");
    std::string done = writer_.new_register(RegisterClass::Predicate);
    writer_.label(head);
    writer_.instruction(fmt::format("setp.ge.{}", integer_suffix(type)), {done, counter, end});
    writer_.predicated(done, false, "bra", {exit});
    {
      ir::ScopedTable<Variable>::Scope scope(variables_);
      variables_.declare(node.var, Variable{counter, type});
      nested(node.body);
    }
    // counter < end <= max of the type, so the increment never leaves the type's range.
    writer_.instruction(fmt::format("add.{}", integer_suffix(type)), {counter, counter, "1"});
    writer_.instruction("bra", {head});
    writer_.label(exit);
  }

  void visit_Block(const ir::Block& node) override {
    ir::ScopedTable<Variable>::Scope scope(variables_);
    for (const ir::Node& stmt : node.stmts) visit(stmt);
  }

  void visit_Region(const ir::Region& node) override {
    writer_.comment(fmt::format("region \"{}\"", node.op_id), depth_);
    nested(node.body);
    writer_.comment(fmt::format("end region \"{}\"", node.op_id), depth_);
  }

  void visit_Barrier(const ir::Barrier& node) override {
    comment_statement(node);
    writer_.instruction("bar.sync", {"0"});
  }

  void visit_Return(const ir::Return& node) override {
    comment_statement(node);
    writer_.instruction("ret");
  }

 private:
  Operand lower(const ir::Expr& expr) {
    visit(expr);
    return result_;
  }

  Operand fresh(ScalarType type) {
    return Operand{writer_.new_register(register_class_of(type)), type, true, std::nullopt};
  }

  /// `operand` in a register (immediates are moved into a fresh one).
  Operand materialize(const Operand& operand, ScalarType type) {
    if (!operand.immediate()) return operand;
    Operand value = fresh(type);
    writer_.instruction(fmt::format("mov.{}", move_suffix(type)), {value.text, operand.text});
    return value;
  }

  std::string in_register(const Operand& operand) { return materialize(operand, operand.type).text; }

  /// A fresh register holding `operand`'s current value (a loop bound must not change
  /// when the body assigns the variable it came from).
  std::string materialize_copy(const Operand& operand) {
    if (operand.temporary) return operand.text;
    std::string copy = writer_.new_register(register_class_of(operand.type));
    writer_.instruction(fmt::format("mov.{}", move_suffix(operand.type)), {copy, operand.text});
    return copy;
  }

  /// Re-establishes the normalized form of a narrow integer after 32-bit arithmetic.
  void normalize(const std::string& register_name, ScalarType type) {
    switch (type) {
      case ScalarType::U8:
        writer_.instruction("and.b32", {register_name, register_name, "255"});
        break;
      case ScalarType::U16:
        writer_.instruction("and.b32", {register_name, register_name, "65535"});
        break;
      case ScalarType::I8:
        writer_.instruction("bfe.s32", {register_name, register_name, "0", "8"});
        break;
      default:
        break;
    }
  }

  Operand compare(BinaryOp op, const Operand& lhs, const Operand& rhs) {
    ScalarType type = lhs.type;
    Operand value = fresh(ScalarType::Bool);
    writer_.instruction(fmt::format("setp.{}.{}", comparison_name(op, ir::is_float(type)), arithmetic_suffix(type)),
                        {value.text, in_register(lhs), rhs.text});
    return value;
  }

  Operand boolean_compare(BinaryOp op, const Operand& lhs, const Operand& rhs) {
    Operand differ = fresh(ScalarType::Bool);
    writer_.instruction("xor.pred", {differ.text, lhs.text, rhs.text});
    if (op == BinaryOp::Ne) return differ;
    Operand equal = fresh(ScalarType::Bool);
    writer_.instruction("not.pred", {equal.text, differ.text});
    return equal;
  }

  Operand boolean_logic(BinaryOp op, const Operand& lhs, const Operand& rhs) {
    std::string opcode;
    switch (op) {
      case BinaryOp::LogicalAnd:
      case BinaryOp::BitAnd:
        opcode = "and.pred";
        break;
      case BinaryOp::LogicalOr:
      case BinaryOp::BitOr:
        opcode = "or.pred";
        break;
      case BinaryOp::BitXor:
        opcode = "xor.pred";
        break;
      default:
        throw ir::IRError(fmt::format("lower_to_ptx: '{}' on bool operands cannot be lowered", ir::to_string(op)));
    }
    Operand value = fresh(ScalarType::Bool);
    writer_.instruction(opcode, {value.text, lhs.text, rhs.text});
    return value;
  }

  Operand shift(BinaryOp op, const Operand& lhs, const Operand& rhs) {
    ScalarType type = lhs.type;
    bool wide = register_class_of(type) == RegisterClass::B64;
    unsigned register_bits = wide ? 64 : 32;
    std::string amount;
    if (rhs.immediate()) {
      // The IR amount is unsigned in the type's width; PTX clamps at the register width.
      std::uint64_t bits = *rhs.constant & type_mask(type);
      amount = std::to_string(std::min<std::uint64_t>(bits, register_bits));
    } else if (wide) {
      // shl.b64/shr.b64 take a u32 amount: clamp before truncating so 2^32 stays >= 64.
      std::string clamped = writer_.new_register(RegisterClass::B64);
      writer_.instruction("min.u64", {clamped, rhs.text, "64"});
      amount = writer_.new_register(RegisterClass::B32);
      writer_.instruction("cvt.u32.u64", {amount, clamped});
    } else {
      amount = rhs.text;  // narrow amounts are normalized, so >= width stays >= width
    }
    Operand value = fresh(type);
    std::string opcode = op == BinaryOp::Shl ? fmt::format("shl.b{}", register_bits)
                                             : fmt::format("shr.{}", integer_suffix(type));
    writer_.instruction(opcode, {value.text, in_register(lhs), amount});
    if (op == BinaryOp::Shl) normalize(value.text, type);
    return value;
  }

  /// f16 operations PTX lacks on every target (div; min/max before sm_80) run in f32:
  /// f16 -> f32 is exact and f32 has more than 2*11+2 bits, so rounding the f32 result
  /// to f16 once gives the correctly rounded f16 result.
  Operand through_f32(const std::string& opcode, const Operand& lhs, const Operand& rhs) {
    std::string a = writer_.new_register(RegisterClass::F32);
    std::string b = writer_.new_register(RegisterClass::F32);
    writer_.instruction("cvt.f32.f16", {a, lhs.text});
    writer_.instruction("cvt.f32.f16", {b, rhs.text});
    std::string wide = writer_.new_register(RegisterClass::F32);
    writer_.instruction(opcode, {wide, a, b});
    Operand value = fresh(ScalarType::F16);
    writer_.instruction("cvt.rn.f16.f32", {value.text, wide});
    return value;
  }

  Operand arithmetic(BinaryOp op, const Operand& lhs, const Operand& rhs) {
    ScalarType type = lhs.type;
    bool is_float = ir::is_float(type);
    std::string suffix = arithmetic_suffix(type);
    std::string opcode;
    bool renormalize = false;
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
        opcode = fmt::format("{}.{}{}", op == BinaryOp::Add ? "add" : "sub", is_float ? "rn." : "", suffix);
        renormalize = true;
        break;
      case BinaryOp::Mul:
        opcode = is_float ? fmt::format("mul.rn.{}", suffix) : fmt::format("mul.lo.{}", suffix);
        renormalize = true;
        break;
      case BinaryOp::Div:
        if (type == ScalarType::F16) return through_f32("div.rn.f32", lhs, rhs);
        opcode = is_float ? fmt::format("div.rn.{}", suffix) : fmt::format("div.{}", suffix);
        renormalize = true;  // i8: -128 / -1 == 128 wraps to -128
        break;
      case BinaryOp::Rem:
        opcode = fmt::format("rem.{}", suffix);
        break;
      case BinaryOp::Min:
      case BinaryOp::Max: {
        std::string name = op == BinaryOp::Min ? "min" : "max";
        if (type == ScalarType::F16) return through_f32(name + ".f32", lhs, rhs);
        opcode = fmt::format("{}.{}", name, suffix);
        break;
      }
      case BinaryOp::BitAnd:
        opcode = fmt::format("and.{}", bits_suffix(type));
        break;
      case BinaryOp::BitOr:
        opcode = fmt::format("or.{}", bits_suffix(type));
        break;
      case BinaryOp::BitXor:
        opcode = fmt::format("xor.{}", bits_suffix(type));
        break;
      default:
        throw ir::IRError(fmt::format("lower_to_ptx: binary '{}' on {} cannot be lowered", ir::to_string(op),
                                      ir::to_string(type)));
    }
    Operand value = fresh(type);
    writer_.instruction(opcode, {value.text, in_register(lhs), rhs.text});
    if (renormalize) normalize(value.text, type);
    return value;
  }

  Operand select(ScalarType type, const std::string& condition, const Operand& if_true, const Operand& if_false) {
    if (type == ScalarType::Bool) {
      // (c && t) || (!c && f) on predicates.
      std::string not_condition = writer_.new_register(RegisterClass::Predicate);
      writer_.instruction("not.pred", {not_condition, condition});
      std::string take_true = writer_.new_register(RegisterClass::Predicate);
      writer_.instruction("and.pred", {take_true, condition, if_true.text});
      std::string take_false = writer_.new_register(RegisterClass::Predicate);
      writer_.instruction("and.pred", {take_false, not_condition, if_false.text});
      Operand value = fresh(type);
      writer_.instruction("or.pred", {value.text, take_true, take_false});
      return value;
    }
    Operand value = fresh(type);
    writer_.instruction(fmt::format("selp.{}", move_suffix(type)), {value.text, if_true.text, if_false.text, condition});
    return value;
  }

  Operand cast(const Operand& source, ScalarType target) {
    ScalarType from = source.type;
    if (from == target) return source;
    if (from == ScalarType::Bool) {
      return select(target, source.text, Operand{immediate_text(target, one_bits(target)), target, false, 1},
                    Operand{immediate_text(target, 0), target, false, 0});
    }
    std::string value_text = in_register(source);
    if (target == ScalarType::Bool) {
      Operand value = fresh(ScalarType::Bool);
      if (from == ScalarType::F16) {
        std::string wide = writer_.new_register(RegisterClass::F32);
        writer_.instruction("cvt.f32.f16", {wide, value_text});
        writer_.instruction("setp.neu.f32", {value.text, wide, ptx::f32_immediate(0)});
      } else if (ir::is_float(from)) {
        // x -> bool is x != 0, and NaN != 0 holds.
        writer_.instruction(fmt::format("setp.neu.{}", ir::to_string(from)),
                            {value.text, value_text, immediate_text(from, 0)});
      } else {
        writer_.instruction(fmt::format("setp.ne.{}", integer_suffix(from)), {value.text, value_text, "0"});
      }
      return value;
    }
    if (ir::is_float(from) && ir::is_float(target)) {
      Operand value = fresh(target);
      bool narrowing = ir::bit_width(target) < ir::bit_width(from);
      writer_.instruction(fmt::format("cvt{}.{}.{}", narrowing ? ".rn" : "", ir::to_string(target), ir::to_string(from)),
                          {value.text, value_text});
      return value;
    }
    if (ir::is_float(target)) {  // integer -> float, round to nearest even
      Operand value = fresh(target);
      writer_.instruction(fmt::format("cvt.rn.{}.{}", ir::to_string(target), integer_suffix(from)),
                          {value.text, value_text});
      return value;
    }
    if (ir::is_float(from)) return float_to_integer(value_text, from, target);
    return integer_to_integer(Operand{value_text, from, source.temporary, std::nullopt}, target);
  }

  static std::uint64_t one_bits(ScalarType type) {
    switch (type) {
      case ScalarType::F16:
        return 0x3C00;
      case ScalarType::F32:
        return 0x3F800000;
      case ScalarType::F64:
        return 0x3FF0000000000000;
      default:
        return 1;
    }
  }

  /// Rounds toward zero and saturates; NaN gives 0 (PTX cvt float -> integer clamps
  /// to the destination range). Narrow targets convert to s32 and clamp to their range.
  Operand float_to_integer(const std::string& source, ScalarType from, ScalarType target) {
    Operand value = fresh(target);
    if (!is_narrow_integer(target)) {
      writer_.instruction(fmt::format("cvt.rzi.{}.{}", integer_suffix(target), ir::to_string(from)),
                          {value.text, source});
      return value;
    }
    writer_.instruction(fmt::format("cvt.rzi.s32.{}", ir::to_string(from)), {value.text, source});
    std::int64_t low = target == ScalarType::I8 ? -128 : 0;
    std::int64_t high = target == ScalarType::I8 ? 127 : target == ScalarType::U8 ? 255 : 65535;
    writer_.instruction("max.s32", {value.text, value.text, ptx::integer_immediate(low)});
    writer_.instruction("min.s32", {value.text, value.text, ptx::integer_immediate(high)});
    return value;
  }

  /// Truncates or extends by the source's signedness (sources are normalized, so a
  /// 32-bit register already holds the source extended to 32 bits).
  Operand integer_to_integer(const Operand& source, ScalarType target) {
    RegisterClass from_class = register_class_of(source.type);
    RegisterClass to_class = register_class_of(target);
    if (from_class == RegisterClass::B64 && to_class == RegisterClass::B64) {
      return Operand{source.text, target, source.temporary, std::nullopt};
    }
    if (from_class == RegisterClass::B32 && to_class == RegisterClass::B64) {
      Operand value = fresh(target);
      writer_.instruction(ir::is_signed(source.type) ? "cvt.s64.s32" : "cvt.u64.u32", {value.text, source.text});
      return value;
    }
    std::string word = source.text;
    if (from_class == RegisterClass::B64) {
      word = writer_.new_register(RegisterClass::B32);
      writer_.instruction("cvt.u32.u64", {word, source.text});
    }
    if (!is_narrow_integer(target)) {
      return Operand{word, target, source.temporary || from_class == RegisterClass::B64, std::nullopt};
    }
    Operand value = fresh(target);
    writer_.instruction("mov.b32", {value.text, word});
    normalize(value.text, target);
    return value;
  }

  /// "[base+offset]" for a constant index, else mul.wide.u32 + add.s64.
  std::string element_address(const ir::BufferDecl& buffer, const Operand& index) {
    const std::string& base = buffer_addresses_.at(buffer.name);
    unsigned element_bytes = ir::byte_size(buffer.element);
    if (index.immediate()) {
      std::uint64_t offset = *index.constant * element_bytes;
      if (offset == 0) return fmt::format("[{}]", base);
      if (offset < (std::uint64_t{1} << 31)) return fmt::format("[{}+{}]", base, offset);
    }
    std::string byte_offset = writer_.new_register(RegisterClass::B64);
    writer_.instruction("mul.wide.u32", {byte_offset, in_register(index), std::to_string(element_bytes)});
    std::string address = writer_.new_register(RegisterClass::B64);
    writer_.instruction("add.s64", {address, base, byte_offset});
    return fmt::format("[{}]", address);
  }

  const ir::BufferDecl& find_buffer(const std::string& name) const {
    const ir::BufferDecl* buffer = program_.find_buffer(name);
    if (buffer == nullptr) throw ir::IRError(fmt::format("lower_to_ptx: undeclared buffer '{}'", name));
    return *buffer;
  }

  const Variable& lookup(const std::string& name) const {
    if (const Variable* variable = variables_.lookup(name)) return *variable;
    throw ir::IRError(fmt::format("lower_to_ptx: undeclared variable '{}'", name));
  }

  /// One comment line naming the IR statement: the first line of its printed form.
  void comment_statement(const ir::NodeBase& node) {
    writer_.comment(ir::print_header(node), depth_);
  }

  void nested(const ir::Node& body) {
    ++depth_;
    visit(body);
    --depth_;
  }

  const ir::Program& program_;
  ptx::PtxWriter writer_;
  std::map<std::string, std::string> buffer_addresses_;
  ir::ScopedTable<Variable> variables_;
  Operand result_;
  int depth_ = 0;
};

}  // namespace

std::string lower_to_ptx(const ir::Program& program, const ptx::Target& target) {
  ir::verify_or_throw(program);
  ptx::parse_target(target.name());  // std::invalid_argument listing the supported targets
  PtxLowering lowering(program, target);
  return lowering.run(target);
}

}  // namespace quantc::lower
