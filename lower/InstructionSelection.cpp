// Instruction selection (see InstructionSelection.h): an IRVisitor that walks the legal
// IR once, in evaluation order, and emits each operation as a ptx::Mnemonic through
// PtxWriter::emit, which checks it against the instruction table and the target.
// Expression visits leave their value in `result_`; lower() caches values per statement.
#include "lower/InstructionSelection.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "ir/IRVisitor.h"
#include "ir/Printer.h"
#include "ir/ScopedTable.h"
#include "ir/analysis/Structure.h"
#include "ir/analysis/ValueRange.h"
#include "lower/KernelMetadata.h"
#include "ptx/PtxWriter.h"

namespace quantc::lower {
namespace {

using ir::BinaryOp;
using ir::ScalarType;
using ir::Type;
using ptx::Compare;
using ptx::Mnemonic;
using ptx::Opcode;
using ptx::RegisterClass;
using ptx::Rounding;
using ptx::StateSpace;
using ptx::ValueType;

constexpr char kFullWarpMask[] = "0xffffffff";
constexpr char kShuffleClamp[] = "0x1f";  // c operand of shfl.sync: clamp 31, no segments

// ---- how IR types live in PTX registers --------------------------------------------

[[noreturn]] void not_lowerable(std::string_view what) {
  throw ir::IRError(fmt::format("instruction selection: {}; legalize the program for its target first "
                                "(lower/Legalize.h)",
                                what));
}

bool is_narrow_integer(ScalarType type) {
  return type == ScalarType::U8 || type == ScalarType::I8 || type == ScalarType::U16;
}

RegisterClass scalar_register_class(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return RegisterClass::Predicate;
    case ScalarType::F16:
    case ScalarType::BF16: return RegisterClass::B16;
    case ScalarType::U64:
    case ScalarType::I64: return RegisterClass::B64;
    case ScalarType::F32: return RegisterClass::F32;
    case ScalarType::F64: return RegisterClass::F64;
    case ScalarType::U8:
    case ScalarType::I8:
    case ScalarType::U16:
    case ScalarType::U32:
    case ScalarType::I32: return RegisterClass::B32;
    default: not_lowerable(fmt::format("{} values cannot be held in a PTX register", ir::to_string(type)));
  }
}

/// The class of each register of a value: one .b32 for packed halves, else the lanes'.
RegisterClass register_class(Type type) {
  return is_packed_half(type) ? RegisterClass::B32 : scalar_register_class(type.element());
}

/// Registers a value occupies: one for scalars and packed halves, one per lane otherwise.
unsigned register_count(Type type) { return is_packed_half(type) ? 1 : type.lanes(); }

/// The integer instruction type of a register holding `type` (narrow types are 32-bit).
ValueType integer_type(ScalarType type) {
  bool wide = bit_width(type) == 64;
  if (ir::is_signed(type)) return wide ? ValueType::S64 : ValueType::S32;
  return wide ? ValueType::U64 : ValueType::U32;
}

ValueType float_type(Type type) {
  switch (type.element()) {
    case ScalarType::F16: return type.lanes() == 2 ? ValueType::F16x2 : ValueType::F16;
    case ScalarType::BF16: return type.lanes() == 2 ? ValueType::BF16x2 : ValueType::BF16;
    case ScalarType::F32: return ValueType::F32;
    case ScalarType::F64: return ValueType::F64;
    default: not_lowerable(fmt::format("{} is not a float type", ir::to_string(type)));
  }
}

/// The instruction type for arithmetic on `type`.
ValueType arithmetic_type(Type type) { return ir::is_float(type) ? float_type(type) : integer_type(type.element()); }

ValueType bits_type(RegisterClass register_class) {
  switch (register_class) {
    case RegisterClass::Predicate: return ValueType::Pred;
    case RegisterClass::B16: return ValueType::B16;
    case RegisterClass::B32:
    case RegisterClass::F32: return ValueType::B32;
    case RegisterClass::B64:
    case RegisterClass::F64: return ValueType::B64;
  }
  return ValueType::B32;
}

/// The type of mov/selp for one register of `type`: f32/f64 keep their type.
ValueType move_type(Type type) {
  RegisterClass register_class_of_lane = register_class(type);
  if (register_class_of_lane == RegisterClass::F32) return ValueType::F32;
  if (register_class_of_lane == RegisterClass::F64) return ValueType::F64;
  return bits_type(register_class_of_lane);
}

/// The ld/st type of one register of a value (a packed half pair is one .b32).
ValueType memory_type(Type type) {
  if (is_packed_half(type)) return ValueType::B32;
  switch (type.element()) {
    case ScalarType::U8: return ValueType::U8;
    case ScalarType::I8: return ValueType::S8;
    case ScalarType::U16: return ValueType::U16;
    case ScalarType::U32: return ValueType::U32;
    case ScalarType::I32: return ValueType::S32;
    case ScalarType::U64: return ValueType::U64;
    case ScalarType::I64: return ValueType::S64;
    case ScalarType::F16:
    case ScalarType::BF16: return ValueType::B16;
    case ScalarType::F32: return ValueType::F32;
    case ScalarType::F64: return ValueType::F64;
    default: not_lowerable(fmt::format("no PTX memory type for {}; bool buffers are legalized to u8", ir::to_string(type)));
  }
}

Compare comparison(BinaryOp op, bool is_float) {
  switch (op) {
    case BinaryOp::Eq: return Compare::Eq;
    case BinaryOp::Ne: return is_float ? Compare::Neu : Compare::Ne;  // IR Ne is true when either operand is NaN
    case BinaryOp::Lt: return Compare::Lt;
    case BinaryOp::Le: return Compare::Le;
    case BinaryOp::Gt: return Compare::Gt;
    case BinaryOp::Ge: return Compare::Ge;
    default: not_lowerable(fmt::format("'{}' is not a comparison", ir::to_string(op)));
  }
}

std::uint64_t type_mask(ScalarType type) {
  unsigned bits = bit_width(type);
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

/// The immediate spelling of literal `bits` of `type`.
std::string immediate_text(ScalarType type, std::uint64_t bits) {
  switch (type) {
    case ScalarType::F32: return ptx::f32_immediate(static_cast<std::uint32_t>(bits));
    case ScalarType::F64: return ptx::f64_immediate(bits);
    case ScalarType::F16:
    case ScalarType::BF16: return fmt::format("0x{:04X}", bits & 0xFFFF);
    case ScalarType::Bool: return bits ? "1" : "0";
    default:
      if (ir::is_signed(type)) return ptx::integer_immediate(static_cast<std::int64_t>(bits));
      return ptx::unsigned_immediate(bits & type_mask(type));
  }
}

std::uint64_t one_bits(ScalarType type) {
  switch (type) {
    case ScalarType::F16: return 0x3C00;
    case ScalarType::BF16: return 0x3F80;
    case ScalarType::F32: return 0x3F800000;
    case ScalarType::F64: return 0x3FF0000000000000;
    default: return 1;
  }
}

/// A lowered value: its registers (or one immediate), with its IR type. `temporary`
/// marks registers written by this expression only, which a Let may adopt.
struct Value {
  Type type;
  std::array<std::string, 4> registers{};
  unsigned count = 1;
  bool temporary = false;
  std::optional<std::uint64_t> constant;  // literal bits when registers[0] is an immediate

  bool immediate() const { return constant.has_value(); }
  const std::string& text() const { return registers[0]; }
  /// "{%r1, %r2}" for a multi-register value, the register otherwise.
  std::string operand() const {
    if (count == 1) return registers[0];
    std::string text = "{";
    for (unsigned i = 0; i < count; ++i) text += (i ? ", " : "") + registers[i];
    return text + "}";
  }
};

/// Byte offsets and addresses of buffer elements already computed, reused while the
/// index register holds the same value: entries are dropped when that register is
/// written, and entries made inside a branch or loop body are forgotten on leaving it.
class AvailableAddresses {
 public:
  using Key = std::pair<std::string, std::string>;  // (buffer, index register)
  /// The key's first half for "index * element_bytes as u64", shared by all buffers
  /// with that element size ('#' cannot start a buffer name).
  static std::string byte_offset_name(unsigned element_bytes) { return fmt::format("#{}", element_bytes); }
  std::optional<std::string> find(const Key& key) const {
    auto found = addresses_.find(key);
    if (found == addresses_.end()) return std::nullopt;
    return found->second;
  }
  void add(const Key& key, std::string address) { addresses_[key] = std::move(address); }
  void forget_register(const std::string& index_register) {
    std::erase_if(addresses_, [&](const auto& entry) { return entry.first.second == index_register; });
  }
  std::map<Key, std::string> snapshot() const { return addresses_; }
  void restore(std::map<Key, std::string> saved) { addresses_ = std::move(saved); }

 private:
  std::map<Key, std::string> addresses_;
};

class Selector : public ir::IRVisitor {
 public:
  Selector(const ir::Program& program, const ptx::Target& target)
      : program_(program), target_(target), writer_(target), ranges_(program) {}

  std::string run() {
    if (!ptx::is_ptx_identifier(program_.name)) {
      throw ir::IRError(fmt::format(
          "lower_to_ptx: program name '{}' is not a valid PTX identifier (letters, digits, '_' and '$', not "
          "starting with a digit); rename the program",
          program_.name));
    }
    ptx::EntrySignature entry{program_.name, {}, program_.workgroup_size, {}, program_.min_resident_workgroups};
    for (const ir::BufferDecl& buffer : program_.buffers) {
      std::string parameter = parameter_name(program_.name, buffer.binding);
      entry.parameter_names.push_back(parameter);
      writer_.comment(fmt::format("buffer @{} {}: {} {}[{}]", buffer.binding, buffer.name,
                                  ir::to_string(buffer.access), ir::to_string(buffer.element), buffer.count));
      std::string generic = writer_.new_register(RegisterClass::B64);
      writer_.emit(Mnemonic::of(Opcode::Ld, ValueType::U64).in(StateSpace::Param), {generic, fmt::format("[{}]", parameter)});
      std::string global = writer_.new_register(RegisterClass::B64);
      writer_.emit(Mnemonic::of(Opcode::Cvta, ValueType::U64).to_global(), {global, generic});
      buffer_addresses_[buffer.name] = global;
    }
    // Workgroup arrays: kernel-scope .shared arrays addressed with 32-bit registers
    // (the .shared window is below 4 GiB), their base taken once with `mov.u32`.
    for (const ir::SharedDecl& array : program_.shared) {
      std::string symbol = fmt::format("{}_shared_{}", program_.name, array.name);
      entry.shared_arrays.push_back({symbol, array.byte_size()});
      writer_.comment(fmt::format("shared {}: {}[{}]", array.name, ir::to_string(array.element), array.count));
      std::string base = writer_.new_register(RegisterClass::B32);
      writer_.emit(Mnemonic::of(Opcode::Mov, ValueType::U32), {base, symbol});
      shared_symbols_[array.name] = symbol;
      shared_bases_[array.name] = base;
    }
    writer_.blank_line();
    visit(program_.entry);
    writer_.emit(Mnemonic::of(Opcode::Ret));
    return writer_.finish(entry, KernelMetadata::of(program_, target_.name()).comment_lines());
  }

 protected:
  // ---- expressions --------------------------------------------------------------

  void visit_Literal(const ir::Literal& node) override {
    const ScalarType type = node.scalar();
    if (type == ScalarType::Bool || is_half(type)) {
      // No predicate or 16-bit float immediates in PTX arithmetic: materialize.
      Value value = fresh(type);
      emit(Mnemonic::of(Opcode::Mov, bits_type(scalar_register_class(type))), {value.text(), immediate_text(type, node.bits)});
      result_ = value;
      return;
    }
    result_ = immediate(type, node.bits);
  }

  void visit_Var(const ir::Var& node) override { result_ = lookup(node.name); }

  void visit_Load(const ir::Load& node) override {
    if (const ir::SharedDecl* array = program_.find_shared(node.buffer)) {
      std::string address = shared_address_of(*array, node.index);
      Value value = fresh(node.type);
      emit(Mnemonic::of(Opcode::Ld, memory_type(node.type)).in(StateSpace::Shared).lanes(value.count),
           {value.operand(), address});
      result_ = value;
      return;
    }
    const ir::BufferDecl& buffer = find_buffer(node.buffer);
    std::string address = global_address(buffer, node.index);
    Value value = fresh(node.type);
    Mnemonic load = Mnemonic::of(Opcode::Ld, memory_type(node.type)).in(StateSpace::Global).lanes(value.count);
    if (buffer.access == ir::BufferAccess::ReadOnly) load.read_only();
    // u8/s8/u16 loads widen into the 32-bit register (zero- or sign-extended).
    emit(load, {value.operand(), address});
    result_ = value;
  }

  void visit_AtomicAdd(const ir::AtomicAdd& node) override {
    // atom without .sem/.scope is .relaxed.gpu (PTX ISA 9.7.13.5): the IR's semantics.
    const ir::BufferDecl& buffer = find_buffer(node.buffer);
    Value index = lower(node.index);
    Value addend = lower(node.value);
    std::string address = element_address(buffer, index);
    Value old = fresh(node.type);
    emit(Mnemonic::of(Opcode::Atom, integer_type(node.type.element())).in(StateSpace::Global).with_mode(ptx::AtomicOp::Add),
         {old.text(), address, addend.text()});
    result_ = old;
  }

  void visit_Binary(const ir::Binary& node) override {
    Type type = node.lhs.type();
    if (auto fused = three_input_logic(node)) {
      result_ = *fused;
      return;
    }
    Value lhs = lower(node.lhs);
    Value rhs = lower(node.rhs);
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
    Type type = node.type;
    Value operand = lower(node.operand);
    if (type.is_vector() && !is_packed_half(type)) not_lowerable(fmt::format("unary on {}", ir::to_string(type)));
    std::string source = in_register(operand);
    Value value = fresh(type);
    if (type == ScalarType::Bool) {  // only Not is valid on bool
      emit(Mnemonic::of(Opcode::Not, ValueType::Pred), {value.text(), source});
    } else if (node.op == ir::UnaryOp::Round) {  // f32/f64 only (Unary::make)
      emit(Mnemonic::of(Opcode::Cvt, float_type(type), float_type(type)).round(Rounding::NearestInt),
           {value.text(), source});
    } else if (ir::is_float(type)) {
      // Sign-bit operations, exact for every input including NaN payloads.
      std::uint64_t sign = std::uint64_t{1} << (bit_width(type.element()) - 1);
      if (type.lanes() == 2) sign |= sign << 16;  // both halves of a packed pair
      ValueType bits = bits_type(register_class(type));
      std::uint64_t all_bits = ptx::bit_width(bits) == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ptx::bit_width(bits)) - 1;
      std::uint64_t mask = node.op == ir::UnaryOp::Neg ? sign : all_bits & ~sign;
      emit(Mnemonic::of(node.op == ir::UnaryOp::Neg ? Opcode::Xor : Opcode::And, bits),
           {value.text(), source, ptx::unsigned_immediate(mask)});
    } else if (node.op == ir::UnaryOp::Abs && !ir::is_signed(type)) {
      result_ = operand;  // |x| == x for unsigned integers
      return;
    } else {
      bool wide = bit_width(type.element()) == 64;
      switch (node.op) {
        case ir::UnaryOp::Neg:
          emit(Mnemonic::of(Opcode::Neg, wide ? ValueType::S64 : ValueType::S32), {value.text(), source});
          break;
        case ir::UnaryOp::Not:
          emit(Mnemonic::of(Opcode::Not, bits_type(register_class(type))), {value.text(), source});
          break;
        case ir::UnaryOp::Abs:
          emit(Mnemonic::of(Opcode::Abs, wide ? ValueType::S64 : ValueType::S32), {value.text(), source});
          break;
        case ir::UnaryOp::Round:  // floats only, selected above
          break;
      }
    }
    result_ = value;
  }

  void visit_Cast(const ir::Cast& node) override {
    Value source = lower(node.value);
    result_ = cast(source, node.type);
  }

  void visit_Bitcast(const ir::Bitcast& node) override {
    Value source = lower(node.value);
    result_ = bitcast(source, node.type);
  }

  void visit_Select(const ir::Select& node) override {
    std::string condition = in_register(lower(node.cond));
    Value if_true = lower(node.if_true);
    Value if_false = lower(node.if_false);
    result_ = select(node.type, condition, if_true, if_false);
  }

  void visit_Fma(const ir::Fma& node) override {
    if (node.type.is_vector() && !is_packed_half(node.type)) not_lowerable(fmt::format("fma on {}", ir::to_string(node.type)));
    std::string a = in_register(lower(node.a));
    Value b = lower(node.b);
    Value c = lower(node.c);
    Value value = fresh(node.type);
    emit(Mnemonic::of(Opcode::Fma, float_type(node.type)).round(Rounding::Nearest), {value.text(), a, b.text(), c.text()});
    result_ = value;
  }

  void visit_MakeVector(const ir::MakeVector& node) override {
    std::vector<Value> lanes;
    for (const ir::Expr& lane : node.lanes) lanes.push_back(lower(lane));
    if (is_packed_half(node.type)) {
      Value value = fresh(node.type);
      bool constant = node.lanes[0].as<ir::Literal>() && node.lanes[1].as<ir::Literal>();
      if (constant) {  // pack at compile time: one mov of the 32-bit pattern
        std::uint64_t bits = (node.lanes[0].as<ir::Literal>()->bits & 0xffff) | ((node.lanes[1].as<ir::Literal>()->bits & 0xffff) << 16);
        emit(Mnemonic::of(Opcode::Mov, ValueType::B32), {value.text(), ptx::unsigned_immediate(bits)});
      } else {
        emit(Mnemonic::of(Opcode::Mov, ValueType::B32),
             {value.text(), fmt::format("{{{}, {}}}", in_register(lanes[0]), in_register(lanes[1]))});
      }
      result_ = value;
      return;
    }
    Value value{node.type, {}, static_cast<unsigned>(lanes.size()), false, std::nullopt};
    for (std::size_t i = 0; i < lanes.size(); ++i) value.registers[i] = in_register(lanes[i]);
    result_ = value;
  }

  void visit_ExtractLane(const ir::ExtractLane& node) override {
    Value vector = lower(node.vector);
    if (is_packed_half(node.vector.type())) {
      auto [low, high] = unpack_halves(vector);
      result_ = Value{node.type, {node.lane == 0 ? low : high}, 1, false, std::nullopt};
      return;
    }
    result_ = Value{node.type, {vector.registers[node.lane]}, 1, false, std::nullopt};
  }

  void visit_InsertLane(const ir::InsertLane& node) override {
    Value vector = lower(node.vector);
    std::string lane = in_register(lower(node.value));
    if (is_packed_half(node.type)) {
      auto [low, high] = unpack_halves(vector);
      Value value = fresh(node.type);
      emit(Mnemonic::of(Opcode::Mov, ValueType::B32),
           {value.text(), fmt::format("{{{}, {}}}", node.lane == 0 ? lane : low, node.lane == 1 ? lane : high)});
      result_ = value;
      return;
    }
    Value value = vector;
    value.temporary = false;
    value.registers[node.lane] = lane;
    result_ = value;
  }

  void visit_Permute(const ir::Permute& node) override {
    std::string a = in_register(lower(node.a));
    std::string b = in_register(lower(node.b));
    Value selector = lower(node.selector);
    Value value = fresh(ScalarType::U32);
    emit(Mnemonic::of(Opcode::Prmt, ValueType::B32), {value.text(), a, b, selector.text()});
    result_ = value;
  }

  void visit_BufferLength(const ir::BufferLength& node) override {
    result_ = immediate(ScalarType::U32, find_buffer(node.buffer).count);
  }

  void visit_Builtin(const ir::Builtin& node) override {
    static constexpr char kAxes[] = "xyz";
    const char axis = kAxes[node.axis < 3 ? node.axis : 0];
    Value value = fresh(ScalarType::U32);
    const Mnemonic move = Mnemonic::of(Opcode::Mov, ValueType::U32);
    switch (node.builtin) {
      case ir::BuiltinKind::LocalId:
        emit(move, {value.text(), fmt::format("%tid.{}", axis)});
        break;
      case ir::BuiltinKind::WorkgroupId:
        emit(move, {value.text(), fmt::format("%ctaid.{}", axis)});
        break;
      case ir::BuiltinKind::InvocationId: {
        std::string cta = writer_.new_register(RegisterClass::B32);
        std::string threads = writer_.new_register(RegisterClass::B32);
        std::string thread = writer_.new_register(RegisterClass::B32);
        emit(move, {cta, fmt::format("%ctaid.{}", axis)});
        emit(move, {threads, fmt::format("%ntid.{}", axis)});
        emit(move, {thread, fmt::format("%tid.{}", axis)});
        emit(Mnemonic::of(Opcode::Mad, ValueType::U32).multiply(ptx::MulMode::Lo), {value.text(), cta, threads, thread});
        break;
      }
      case ir::BuiltinKind::SubgroupLocalId:
        emit(move, {value.text(), "%laneid"});
        break;
      case ir::BuiltinKind::SubgroupSize:
        emit(move, {value.text(), "WARP_SZ"});
        break;
    }
    result_ = value;
  }

  void visit_SubgroupShuffle(const ir::SubgroupShuffle& node) override {
    Value own = lower(node.value);
    std::string value = in_register(own);
    // Below 32: legalization selected the own value for the rest. shfl.sync.idx reads only
    // bits 4..0 of the lane, so a `& m` with m's low 5 bits all set is left to it.
    ir::Expr lane_expr = node.lane;
    if (const auto* masked = lane_expr.as<ir::Binary>(); masked && masked->op == ir::BinaryOp::BitAnd) {
      const auto* mask = masked->rhs.as<ir::Literal>();
      if (mask && (mask->bits & 31u) == 31u) lane_expr = masked->lhs;
    }
    Value lane = lower(lane_expr);
    Value result = fresh(node.type);
    emit(Mnemonic::of(Opcode::Shfl, ValueType::B32).synchronized().with_mode(ptx::ShuffleMode::Index),
         {result.text(), value, lane.text(), kShuffleClamp, kFullWarpMask});
    result_ = result;
  }

  void visit_SubgroupLoadMatrix(const ir::SubgroupLoadMatrix& node) override {
    // ldmatrix.sync.aligned.m8n8.x<n>[.trans].shared.b16 {d...}, [row address] (sm_75+).
    const ir::SharedDecl* array = program_.find_shared(node.array);
    if (array == nullptr) not_lowerable(fmt::format("ldmatrix from '{}', which is not a workgroup array", node.array));
    std::string address = shared_address_of(*array, node.index);
    Value d = fresh(node.type);
    std::string registers = "{";
    for (unsigned i = 0; i < d.count; ++i) registers += (i ? ", " : "") + d.registers[i];
    emit(Mnemonic::of(Opcode::Ldmatrix, ValueType::B16).load_matrix(node.matrices, node.transpose),
         {registers + "}", address});
    result_ = d;
  }

  void visit_SubgroupMma(const ir::SubgroupMma& node) override {
    // mma.sync.aligned.m16n8k16.row.col.f32.<in>.<in>.f32 {d}, {a}, {b}, {c} (sm_80+; the
    // table refuses older targets by name).
    Value a = materialized(lower(node.a));
    Value b = materialized(lower(node.b));
    Value c = materialized(lower(node.c));
    Value d = fresh(node.type);
    const ValueType input = node.input == ScalarType::BF16 ? ValueType::BF16 : ValueType::F16;
    emit(Mnemonic::of(Opcode::Mma, ValueType::F32, input).matrix(ptx::MmaShape::M16n8k16),
         {d.operand(), a.operand(), b.operand(), c.operand()});
    result_ = d;
  }

  void visit_SubgroupReduce(const ir::SubgroupReduce& node) override {
    std::string accumulator = in_register(lower(node.value));
    Mnemonic combine;
    switch (node.op) {
      case ir::SubgroupReduceOp::Add:
        combine = node.type == ScalarType::F32 ? Mnemonic::of(Opcode::Add, ValueType::F32).round(Rounding::Nearest)
                                               : Mnemonic::of(Opcode::Add, integer_type(node.type.element()));
        break;
      case ir::SubgroupReduceOp::Max:
        combine = Mnemonic::of(Opcode::Max, arithmetic_type(node.type));
        break;
      case ir::SubgroupReduceOp::Min:
        combine = Mnemonic::of(Opcode::Min, arithmetic_type(node.type));
        break;
    }
    // Butterfly in the order 16, 8, 4, 2, 1, exactly as the reference interpreter
    // combines lanes, so every lane ends with the same bits.
    RegisterClass lane_class = register_class(node.type);
    for (int offset : {16, 8, 4, 2, 1}) {
      std::string partner = writer_.new_register(lane_class);
      emit(Mnemonic::of(Opcode::Shfl, ValueType::B32).synchronized().with_mode(ptx::ShuffleMode::Butterfly),
           {partner, accumulator, std::to_string(offset), kShuffleClamp, kFullWarpMask});
      std::string combined = writer_.new_register(lane_class);
      emit(combine, {combined, accumulator, partner});
      accumulator = combined;
    }
    result_ = Value{node.type, {accumulator}, 1, true, std::nullopt};
  }

  void visit_SubgroupBallot(const ir::SubgroupBallot& node) override {
    std::string condition = in_register(lower(node.cond));
    Value value = fresh(ScalarType::U32);
    emit(Mnemonic::of(Opcode::Vote, ValueType::B32).synchronized().with_mode(ptx::VoteMode::Ballot),
         {value.text(), condition, kFullWarpMask});
    result_ = value;
  }

  void visit_Lookup(const ir::Lookup&) override { not_lowerable("a Lookup table remains"); }

  // ---- statements ---------------------------------------------------------------

  void visit_Let(const ir::Let& node) override {
    begin_statement(node);
    Value value = lower(node.value);
    Value variable = value;
    if (!value.temporary || value.immediate()) {
      variable = fresh(value.type);
      move(variable, value);
    }
    variable.temporary = false;
    variables_.declare(node.name, variable);
    // Its range, for the addresses below (dropped at the end of the enclosing block).
    if (!ranges_.is_assigned(node.name)) ranges_.push_value(node.name, node.value);
    // A never-assigned `x + c` of a never-assigned x: global_address looks through it (CSE
    // binds an index used by two buffers' loads this way).
    offset_lets_.erase(node.name);
    if (const auto* sum = node.value.as<ir::Binary>(); sum && sum->op == ir::BinaryOp::Add &&
                                                        sum->rhs.as<ir::Literal>() && !ranges_.is_assigned(node.name)) {
      if (const auto* x = sum->lhs.as<ir::Var>(); x && !ranges_.is_assigned(x->name)) {
        offset_lets_.emplace(node.name, node.value);
      }
    }
  }

  void visit_Assign(const ir::Assign& node) override {
    begin_statement(node);
    Value value = lower(node.value);
    const Value& variable = lookup(node.name);
    move(variable, value);
    for (unsigned i = 0; i < variable.count; ++i) addresses_.forget_register(variable.registers[i]);
  }

  void visit_Store(const ir::Store& node) override {
    begin_statement(node);
    if (const ir::SharedDecl* array = program_.find_shared(node.buffer)) {
      std::string address = shared_address_of(*array, node.index);
      Value value = lower(node.value);
      Value source = materialized(value);
      emit(Mnemonic::of(Opcode::St, memory_type(value.type)).in(StateSpace::Shared).lanes(source.count),
           {address, source.operand()});
      return;
    }
    const ir::BufferDecl& buffer = find_buffer(node.buffer);
    if (buffer.access == ir::BufferAccess::ReadOnly) {
      not_lowerable(fmt::format("a store to read-only buffer '{}'", buffer.name));
    }
    std::string address = global_address(buffer, node.index);
    Value value = lower(node.value);
    Value source = materialized(value);
    emit(Mnemonic::of(Opcode::St, memory_type(value.type)).in(StateSpace::Global).lanes(source.count),
         {address, source.operand()});
  }

  void visit_AsyncCopy(const ir::AsyncCopy& node) override {
    begin_statement(node);
    const ir::SharedDecl* array = program_.find_shared(node.array);
    if (array == nullptr) not_lowerable(fmt::format("async_copy to '{}', which is not a workgroup array", node.array));
    const ir::BufferDecl& buffer = find_buffer(node.buffer);
    std::string source = global_address(buffer, node.buffer_index);
    std::string destination = shared_address_of(*array, node.array_index);
    // .cg (L2 only) for whole 16-byte chunks, as Marlin streams its weights; .ca otherwise.
    emit(Mnemonic::of(Opcode::CpAsync).async_copy(node.bytes == 16), {destination, source, std::to_string(node.bytes)});
  }

  void visit_AsyncCommit(const ir::AsyncCommit& node) override {
    begin_statement(node);
    emit(Mnemonic::of(Opcode::CpAsyncCommit), {});
  }

  void visit_AsyncWait(const ir::AsyncWait& node) override {
    begin_statement(node);
    emit(Mnemonic::of(Opcode::CpAsyncWait), {std::to_string(node.pending)});
  }

  void visit_If(const ir::If& node) override {
    begin_statement(node);
    std::string condition = in_register(lower(node.cond));
    const auto* else_block = node.else_body.as<ir::Block>();
    bool has_else = else_block != nullptr && !else_block->stmts.empty();
    std::string else_label = has_else ? writer_.new_label("else") : "";
    std::string end_label = writer_.new_label("end_if");
    writer_.emit_guarded(condition, true, Mnemonic::of(Opcode::Bra), {has_else ? else_label : end_label});
    auto before = addresses_.snapshot();
    {
      ir::analysis::RangeScope guarded(ranges_, ir::analysis::guard_facts(node.cond, ranges_));
      nested(node.then_body);
    }
    addresses_.restore(before);
    if (has_else) {
      writer_.emit(Mnemonic::of(Opcode::Bra), {end_label});
      writer_.label(else_label);
      writer_.comment("else", depth_);
      nested(node.else_body);
      addresses_.restore(before);
    }
    writer_.label(end_label);
  }

  void visit_Loop(const ir::Loop& node) override {
    begin_statement(node);
    Type type = node.from.type();
    ValueType counter_type = integer_type(type.element());
    // Both bounds are evaluated once, on entry, per lane.
    Value from = lower(node.from);
    Value counter = fresh(type);
    emit(Mnemonic::of(Opcode::Mov, move_type(type)), {counter.text(), from.text()});
    Value to = lower(node.to);
    std::string end = to.immediate() ? to.text() : copy_of(to);
    std::string head = writer_.new_label("loop");
    std::string exit = writer_.new_label("end_loop");
    std::string done = writer_.new_register(RegisterClass::Predicate);
    // Addresses keyed on a register the body writes are stale from the second iteration.
    for (const std::string& name : ir::analysis::assigned_variables(node.body)) {
      if (const Value* variable = variables_.lookup(name)) {
        for (unsigned i = 0; i < variable->count; ++i) addresses_.forget_register(variable->registers[i]);
      }
    }
    auto before = addresses_.snapshot();
    writer_.label(head);
    emit(Mnemonic::of(Opcode::Setp, counter_type).compare_with(Compare::Ge), {done, counter.text(), end});
    writer_.emit_guarded(done, false, Mnemonic::of(Opcode::Bra), {exit});
    {
      ir::ScopedTable<Value>::Scope scope(variables_);
      Value loop_variable = counter;
      loop_variable.temporary = false;
      variables_.declare(node.var, loop_variable);
      ir::analysis::RangeScope in_loop(ranges_, ir::analysis::loop_facts(node, ranges_));
      nested(node.body);
    }
    addresses_.restore(before);
    // counter < end <= max of the type, so the increment never leaves the type's range.
    emit(Mnemonic::of(Opcode::Add, counter_type), {counter.text(), counter.text(), "1"});
    writer_.emit(Mnemonic::of(Opcode::Bra), {head});
    writer_.label(exit);
  }

  void visit_Block(const ir::Block& node) override {
    ir::ScopedTable<Value>::Scope scope(variables_);
    const std::size_t facts = ranges_.depth();
    for (const ir::Node& stmt : node.stmts) visit(stmt);
    while (ranges_.depth() > facts) ranges_.pop();
  }

  void visit_Region(const ir::Region& node) override {
    writer_.comment(fmt::format("region \"{}\"", node.op_id), depth_);
    nested(node.body);
    writer_.comment(fmt::format("end region \"{}\"", node.op_id), depth_);
  }

  void visit_Barrier(const ir::Barrier& node) override {
    begin_statement(node);
    emit(Mnemonic::of(Opcode::Bar).synchronized(), {"0"});
  }

  void visit_Fence(const ir::Fence& node) override {
    begin_statement(node);
    emit(Mnemonic::of(Opcode::Fence).ordered(ptx::MemoryOrder::AcqRel, ptx::MemoryScope::Gpu));
  }

  void visit_Return(const ir::Return& node) override {
    begin_statement(node);
    emit(Mnemonic::of(Opcode::Ret));
  }

 private:
  void emit(const Mnemonic& mnemonic, const std::vector<std::string>& operands = {}) { writer_.emit(mnemonic, operands); }

  /// The value of `expr`, evaluated once per statement: a structurally equal tree seen
  /// again in the same statement (legalization's expansions reuse operands; `x != x`
  /// under both sides of an `||`) reads the same registers. Sound because selection
  /// evaluates every operand of a statement unconditionally and nothing is assigned
  /// within one statement.
  Value lower(const ir::Expr& expr) {
    if (auto found = values_.find(expr.get()); found != values_.end()) {
      Value shared = found->second;
      shared.temporary = false;
      return shared;
    }
    visit(expr);
    values_[expr.get()] = result_;
    return result_;
  }

  /// A new statement: comment it and forget the previous statement's values (variables
  /// may have changed since).
  void begin_statement(const ir::NodeBase& node) {
    values_.clear();
    unpacked_.clear();
    constexpr std::size_t kCommentLimit = 160;  // legalized expansions (select trees) print long
    writer_.comment(ir::print_header(node, kCommentLimit), depth_);
  }

  Value fresh(Type type) {
    Value value{type, {}, register_count(type), true, std::nullopt};
    for (unsigned i = 0; i < value.count; ++i) value.registers[i] = writer_.new_register(register_class(type));
    return value;
  }

  static Value immediate(ScalarType type, std::uint64_t bits) {
    return Value{type, {immediate_text(type, bits)}, 1, false, bits};
  }

  /// `value` in a register (an immediate is moved into a fresh one).
  std::string in_register(const Value& value) { return materialized(value).text(); }

  Value materialized(const Value& value) {
    if (!value.immediate()) return value;
    Value result = fresh(value.type);
    emit(Mnemonic::of(Opcode::Mov, move_type(value.type)), {result.text(), value.text()});
    return result;
  }

  /// Copies every register of `source` into `target`'s.
  void move(const Value& target, const Value& source) {
    for (unsigned i = 0; i < target.count; ++i) {
      emit(Mnemonic::of(Opcode::Mov, move_type(target.type)), {target.registers[i], source.registers[i]});
    }
  }

  /// A fresh register holding `value`'s current value (a loop bound must not change
  /// when the body assigns the variable it came from).
  std::string copy_of(const Value& value) {
    if (value.temporary) return value.text();
    Value copy = fresh(value.type);
    move(copy, value);
    return copy.text();
  }

  /// The two halves of a packed f16x2/bf16x2 register, unpacked once per statement.
  std::pair<std::string, std::string> unpack_halves(const Value& packed) {
    std::string source = in_register(packed);
    if (auto found = unpacked_.find(source); found != unpacked_.end()) return found->second;
    std::string low = writer_.new_register(RegisterClass::B16), high = writer_.new_register(RegisterClass::B16);
    emit(Mnemonic::of(Opcode::Mov, ValueType::B32), {fmt::format("{{{}, {}}}", low, high), source});
    return unpacked_[source] = {low, high};
  }

  Value compare(BinaryOp op, const Value& lhs, const Value& rhs) {
    Type type = lhs.type;
    if (is_half(type.element())) not_lowerable("a 16-bit float comparison (compared in f32 after legalization)");
    Value value = fresh(ScalarType::Bool);
    emit(Mnemonic::of(Opcode::Setp, arithmetic_type(type)).compare_with(comparison(op, ir::is_float(type))),
         {value.text(), in_register(lhs), rhs.text()});
    return value;
  }

  Value boolean_compare(BinaryOp op, const Value& lhs, const Value& rhs) {
    Value differ = fresh(ScalarType::Bool);
    emit(Mnemonic::of(Opcode::Xor, ValueType::Pred), {differ.text(), in_register(lhs), in_register(rhs)});
    if (op == BinaryOp::Ne) return differ;
    Value equal = fresh(ScalarType::Bool);
    emit(Mnemonic::of(Opcode::Not, ValueType::Pred), {equal.text(), differ.text()});
    return equal;
  }

  Value boolean_logic(BinaryOp op, const Value& lhs, const Value& rhs) {
    Opcode opcode;
    switch (op) {
      case BinaryOp::LogicalAnd:
      case BinaryOp::BitAnd: opcode = Opcode::And; break;
      case BinaryOp::LogicalOr:
      case BinaryOp::BitOr: opcode = Opcode::Or; break;
      case BinaryOp::BitXor: opcode = Opcode::Xor; break;
      default: not_lowerable(fmt::format("'{}' on bool operands", ir::to_string(op)));
    }
    Value value = fresh(ScalarType::Bool);
    emit(Mnemonic::of(opcode, ValueType::Pred), {value.text(), in_register(lhs), in_register(rhs)});
    return value;
  }

  Value shift(BinaryOp op, const Value& lhs, const Value& rhs) {
    ScalarType type = lhs.type.element();
    bool wide = bit_width(type) == 64;
    unsigned register_bits = wide ? 64 : 32;
    std::string amount;
    if (rhs.immediate()) {
      // The IR amount is unsigned in the type's width; PTX clamps at the register width.
      std::uint64_t bits = *rhs.constant & type_mask(type);
      amount = std::to_string(std::min<std::uint64_t>(bits, register_bits));
    } else if (wide) {
      // shl.b64/shr.b64 take a u32 amount: clamp before truncating so 2^32 stays >= 64.
      std::string clamped = writer_.new_register(RegisterClass::B64);
      emit(Mnemonic::of(Opcode::Min, ValueType::U64), {clamped, rhs.text(), "64"});
      amount = writer_.new_register(RegisterClass::B32);
      emit(Mnemonic::of(Opcode::Cvt, ValueType::U32, ValueType::U64), {amount, clamped});
    } else {
      amount = rhs.text();  // narrow amounts are normalized, so >= width stays >= width
    }
    Value value = fresh(type);
    Mnemonic mnemonic = op == BinaryOp::Shl ? Mnemonic::of(Opcode::Shl, wide ? ValueType::B64 : ValueType::B32)
                                            : Mnemonic::of(Opcode::Shr, integer_type(type));
    emit(mnemonic, {value.text(), in_register(lhs), amount});
    return value;
  }

  static std::optional<std::uint8_t> logic_table(BinaryOp op, std::uint8_t a, std::uint8_t b) {
    switch (op) {
      case BinaryOp::BitAnd: return static_cast<std::uint8_t>(a & b);
      case BinaryOp::BitOr: return static_cast<std::uint8_t>(a | b);
      case BinaryOp::BitXor: return static_cast<std::uint8_t>(a ^ b);
      default: return std::nullopt;
    }
  }

  /// A tree of two or more and/or/xor/not nodes on 32-bit integers over at most three
  /// distinct leaves (structurally equal subtrees are one leaf) as one lop3.b32, whose
  /// immediate is the tree evaluated on the leaves' canonical patterns a = 0xF0, b = 0xCC,
  /// c = 0xAA (PTX ISA, "lop3"): a bit select `y ^ ((x ^ y) & mask)` is one instruction.
  /// Where the whole tree has more leaves, the node and one logic operand are fused,
  /// `(a op1 b) op2 c`, and the operands are lowered the same way (a chain of n ors takes
  /// n / 2 instructions). ptxas fuses such trees itself; selecting lop3 here makes
  /// quantc's instruction counts match what runs.
  std::optional<Value> three_input_logic(const ir::Binary& node) {
    const Type type = node.type;
    if ((type != ScalarType::U32 && type != ScalarType::I32) || !logic_table(node.op, 0, 0)) return std::nullopt;
    constexpr std::array<std::uint8_t, 3> kPatterns = {0xF0, 0xCC, 0xAA};
    auto logic_node = [&](const ir::Expr& expr) {
      if (expr.type() != type) return false;
      if (const ir::Binary* binary = expr.as<ir::Binary>()) return logic_table(binary->op, 0, 0).has_value();
      const ir::Unary* unary = expr.as<ir::Unary>();
      return unary != nullptr && unary->op == ir::UnaryOp::Not;
    };
    std::vector<ir::Expr> leaves;  // in the order their operands are lowered
    int logic_nodes = 0;
    // Walks `expr` down `levels` logic nodes (a logic child before its sibling); false past
    // three distinct leaves.
    std::function<bool(const ir::Expr&, int)> collect = [&](const ir::Expr& expr, int levels) {
      if (levels > 0 && logic_node(expr)) {
        ++logic_nodes;
        if (const ir::Unary* unary = expr.as<ir::Unary>()) return collect(unary->operand, levels - 1);
        const ir::Binary* binary = expr.as<ir::Binary>();
        const bool lhs_first = logic_node(binary->lhs) || !logic_node(binary->rhs);
        return collect(lhs_first ? binary->lhs : binary->rhs, levels - 1) &&
               collect(lhs_first ? binary->rhs : binary->lhs, levels - 1);
      }
      for (const ir::Expr& leaf : leaves) {
        if (ir::analysis::structurally_equal(leaf, expr)) return true;
      }
      leaves.push_back(expr);
      return leaves.size() <= kPatterns.size();
    };
    auto fits = [&](int levels) {
      leaves.clear();
      logic_nodes = 0;
      const bool lhs_first = logic_node(node.lhs) || !logic_node(node.rhs);
      const bool fit = collect(lhs_first ? node.lhs : node.rhs, levels) &&
                       collect(lhs_first ? node.rhs : node.lhs, levels == 1 ? 0 : levels);
      return fit && logic_nodes > 0;
    };
    if (!fits(std::numeric_limits<int>::max()) && !fits(1)) return std::nullopt;
    // lop3's first operand is a register: a constant there trades places with the first
    // leaf that is not one.
    auto variable = std::find_if(leaves.begin(), leaves.end(), [](const ir::Expr& leaf) { return !leaf.as<ir::Literal>(); });
    if (variable != leaves.end()) std::iter_swap(leaves.begin(), variable);
    std::function<std::uint8_t(const ir::Expr&)> evaluate = [&](const ir::Expr& expr) -> std::uint8_t {
      for (std::size_t i = 0; i < leaves.size(); ++i) {
        if (ir::analysis::structurally_equal(leaves[i], expr)) return kPatterns[i];
      }
      if (const ir::Unary* unary = expr.as<ir::Unary>()) return static_cast<std::uint8_t>(~evaluate(unary->operand));
      const ir::Binary& binary = *expr.as<ir::Binary>();  // collect expanded only these
      return *logic_table(binary.op, evaluate(binary.lhs), evaluate(binary.rhs));
    };
    const std::uint8_t table = *logic_table(node.op, evaluate(node.lhs), evaluate(node.rhs));
    std::array<std::string, 3> operands = {"0", "0", "0"};  // unused inputs: the table ignores them
    for (std::size_t i = 0; i < leaves.size(); ++i) operands[i] = lower(leaves[i]).text();
    operands[0] = in_register(lower(leaves[0]));
    Value value = fresh(type);
    emit(Mnemonic::of(Opcode::Lop3, ValueType::B32), {value.text(), operands[0], operands[1], operands[2], std::to_string(table)});
    return value;
  }

  Value arithmetic(BinaryOp op, const Value& lhs, const Value& rhs) {
    Type type = lhs.type;
    if (type.is_vector() && !is_packed_half(type)) not_lowerable(fmt::format("'{}' on {}", ir::to_string(op), ir::to_string(type)));
    const bool is_float = ir::is_float(type);
    const ValueType instruction_type = arithmetic_type(type);
    Mnemonic mnemonic;
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul: {
        Opcode opcode = op == BinaryOp::Add ? Opcode::Add : op == BinaryOp::Sub ? Opcode::Sub : Opcode::Mul;
        mnemonic = Mnemonic::of(opcode, instruction_type);
        // .rn: never contracted into an fma, so results match the interpreter bit for bit.
        if (is_float) mnemonic.round(Rounding::Nearest);
        else if (op == BinaryOp::Mul) mnemonic.multiply(ptx::MulMode::Lo);
        break;
      }
      case BinaryOp::Div:
        mnemonic = Mnemonic::of(Opcode::Div, instruction_type);
        if (is_float) mnemonic.round(Rounding::Nearest);
        break;
      case BinaryOp::Rem: mnemonic = Mnemonic::of(Opcode::Rem, instruction_type); break;
      case BinaryOp::Min: mnemonic = Mnemonic::of(Opcode::Min, instruction_type); break;
      case BinaryOp::Max: mnemonic = Mnemonic::of(Opcode::Max, instruction_type); break;
      case BinaryOp::BitAnd: mnemonic = Mnemonic::of(Opcode::And, bits_type(register_class(type))); break;
      case BinaryOp::BitOr: mnemonic = Mnemonic::of(Opcode::Or, bits_type(register_class(type))); break;
      case BinaryOp::BitXor: mnemonic = Mnemonic::of(Opcode::Xor, bits_type(register_class(type))); break;
      default: not_lowerable(fmt::format("binary '{}' on {}", ir::to_string(op), ir::to_string(type)));
    }
    Value value = fresh(type);
    // 16-bit float operands have no immediate form: both in registers.
    std::string second = is_half(type.element()) ? in_register(rhs) : rhs.text();
    emit(mnemonic, {value.text(), in_register(lhs), second});
    return value;
  }

  Value select(Type type, const std::string& condition, const Value& if_true, const Value& if_false) {
    if (type == ScalarType::Bool) {
      // (c && t) || (!c && f) on predicates.
      std::string not_condition = writer_.new_register(RegisterClass::Predicate);
      emit(Mnemonic::of(Opcode::Not, ValueType::Pred), {not_condition, condition});
      std::string take_true = writer_.new_register(RegisterClass::Predicate);
      emit(Mnemonic::of(Opcode::And, ValueType::Pred), {take_true, condition, in_register(if_true)});
      std::string take_false = writer_.new_register(RegisterClass::Predicate);
      emit(Mnemonic::of(Opcode::And, ValueType::Pred), {take_false, not_condition, in_register(if_false)});
      Value value = fresh(type);
      emit(Mnemonic::of(Opcode::Or, ValueType::Pred), {value.text(), take_true, take_false});
      return value;
    }
    Value value = fresh(type);
    for (unsigned i = 0; i < value.count; ++i) {
      emit(Mnemonic::of(Opcode::Selp, move_type(type)), {value.registers[i], if_true.registers[i], if_false.registers[i], condition});
    }
    return value;
  }

  Value cast(const Value& source, Type target) {
    Type from = source.type;
    if (from == target) return source;
    if (target.is_vector()) {
      if (!is_packed_half(target) || from.element() != ScalarType::F32) {
        not_lowerable(fmt::format("a cast from {} to {}", ir::to_string(from), ir::to_string(target)));
      }
      // cvt.rn.f16x2.f32 d, a, b puts a in the upper half: lane 1 first.
      Value value = fresh(target);
      emit(Mnemonic::of(Opcode::Cvt, float_type(target), ValueType::F32).round(Rounding::Nearest),
           {value.text(), source.registers[1], source.registers[0]});
      return value;
    }
    const ScalarType to = target.element(), from_scalar = from.element();
    if (from_scalar == ScalarType::Bool) {
      return select(target, source.text(), immediate_or_register(to, one_bits(to)), immediate_or_register(to, 0));
    }
    std::string value_text = in_register(source);
    if (to == ScalarType::Bool) {
      Value value = fresh(ScalarType::Bool);
      if (is_half(from_scalar)) {
        std::string wide = writer_.new_register(RegisterClass::F32);
        emit(Mnemonic::of(Opcode::Cvt, ValueType::F32, float_type(from_scalar)), {wide, value_text});
        emit(Mnemonic::of(Opcode::Setp, ValueType::F32).compare_with(Compare::Neu), {value.text(), wide, ptx::f32_immediate(0)});
      } else if (ir::is_float(from_scalar)) {
        // x -> bool is x != 0, and NaN != 0 holds.
        emit(Mnemonic::of(Opcode::Setp, float_type(from_scalar)).compare_with(Compare::Neu),
             {value.text(), value_text, immediate_text(from_scalar, 0)});
      } else {
        emit(Mnemonic::of(Opcode::Setp, integer_type(from_scalar)).compare_with(Compare::Ne), {value.text(), value_text, "0"});
      }
      return value;
    }
    if (ir::is_float(from_scalar) && ir::is_float(to)) {
      Value value = fresh(target);
      Mnemonic convert = Mnemonic::of(Opcode::Cvt, float_type(to), float_type(from_scalar));
      if (bit_width(to) < bit_width(from_scalar)) convert.round(Rounding::Nearest);
      emit(convert, {value.text(), value_text});
      return value;
    }
    if (ir::is_float(to)) {  // integer -> float, round to nearest even
      Value value = fresh(target);
      emit(Mnemonic::of(Opcode::Cvt, float_type(to), integer_type(from_scalar)).round(Rounding::Nearest),
           {value.text(), value_text});
      return value;
    }
    if (ir::is_float(from_scalar)) return float_to_integer(value_text, from_scalar, to);
    return integer_to_integer(Value{from, {value_text}, 1, source.temporary, std::nullopt}, to);
  }

  Value immediate_or_register(ScalarType type, std::uint64_t bits) {
    Value value = immediate(type, bits);
    return is_half(type) ? materialized(value) : value;
  }

  /// Rounds toward zero and saturates; NaN gives 0 (PTX cvt float -> integer clamps
  /// to the destination range). Narrow targets convert to s32 and clamp to their range.
  Value float_to_integer(const std::string& source, ScalarType from, ScalarType target) {
    Value value = fresh(target);
    if (!is_narrow_integer(target)) {
      emit(Mnemonic::of(Opcode::Cvt, integer_type(target), float_type(from)).round(Rounding::ZeroInt), {value.text(), source});
      return value;
    }
    emit(Mnemonic::of(Opcode::Cvt, ValueType::S32, float_type(from)).round(Rounding::ZeroInt), {value.text(), source});
    std::int64_t low = target == ScalarType::I8 ? -128 : 0;
    std::int64_t high = target == ScalarType::I8 ? 127 : target == ScalarType::U8 ? 255 : 65535;
    emit(Mnemonic::of(Opcode::Max, ValueType::S32), {value.text(), value.text(), ptx::integer_immediate(low)});
    emit(Mnemonic::of(Opcode::Min, ValueType::S32), {value.text(), value.text(), ptx::integer_immediate(high)});
    return value;
  }

  /// Truncates or extends by the source's signedness (sources are normalized, so a
  /// 32-bit register already holds the source extended to 32 bits).
  Value integer_to_integer(const Value& source, ScalarType target) {
    RegisterClass from_class = scalar_register_class(source.type.element());
    RegisterClass to_class = scalar_register_class(target);
    if (from_class == RegisterClass::B64 && to_class == RegisterClass::B64) {
      return Value{target, {source.text()}, 1, source.temporary, std::nullopt};
    }
    if (from_class == RegisterClass::B32 && to_class == RegisterClass::B64) {
      Value value = fresh(target);
      bool is_signed = ir::is_signed(source.type.element());
      emit(Mnemonic::of(Opcode::Cvt, is_signed ? ValueType::S64 : ValueType::U64, is_signed ? ValueType::S32 : ValueType::U32),
           {value.text(), source.text()});
      return value;
    }
    std::string word = source.text();
    if (from_class == RegisterClass::B64) {
      word = writer_.new_register(RegisterClass::B32);
      emit(Mnemonic::of(Opcode::Cvt, ValueType::U32, ValueType::U64), {word, source.text()});
    }
    if (!is_narrow_integer(target)) {
      return Value{target, {word}, 1, source.temporary || from_class == RegisterClass::B64, std::nullopt};
    }
    // Re-establish the narrow type's normalized form: zero- or sign-extended from its width.
    Value value = fresh(target);
    switch (target) {
      case ScalarType::U8:
        emit(Mnemonic::of(Opcode::And, ValueType::B32), {value.text(), word, "255"});
        break;
      case ScalarType::U16:
        emit(Mnemonic::of(Opcode::And, ValueType::B32), {value.text(), word, "65535"});
        break;
      default:  // i8
        emit(Mnemonic::of(Opcode::Bfe, ValueType::S32), {value.text(), word, "0", "8"});
        break;
    }
    return value;
  }

  /// The same bits as `target`: registers are reused where the register classes agree,
  /// moved (mov.b32/.b64) between integer and float registers, packed or unpacked with
  /// mov.b64 {lo, hi} when the register counts differ, and zero-extended/truncated
  /// between a 16-bit float register and the 32-bit register of a u16.
  Value bitcast(const Value& source, Type target) {
    Value from = materialized(source);
    Value value{target, {}, register_count(target), true, std::nullopt};
    const RegisterClass from_class = register_class(from.type), to_class = register_class(target);
    if (from.count == value.count) {
      for (unsigned i = 0; i < value.count; ++i) {
        if (from_class == to_class) {
          value.registers[i] = from.registers[i];
          value.temporary = from.temporary;
        } else if (from_class == RegisterClass::B16 || to_class == RegisterClass::B16) {
          value.registers[i] = writer_.new_register(to_class);
          bool widen = to_class != RegisterClass::B16;
          emit(Mnemonic::of(Opcode::Cvt, widen ? ValueType::U32 : ValueType::U16, widen ? ValueType::U16 : ValueType::U32),
               {value.registers[i], from.registers[i]});
        } else {
          value.registers[i] = writer_.new_register(to_class);
          emit(Mnemonic::of(Opcode::Mov, bits_type(to_class)), {value.registers[i], from.registers[i]});
        }
      }
      return value;
    }
    // 64 bits as two 32-bit lanes or back: through .b32/.b64 registers.
    if (from.count == 2 && value.count == 1) {
      std::string low = as_bits32(from.registers[0], from_class), high = as_bits32(from.registers[1], from_class);
      std::string packed = writer_.new_register(RegisterClass::B64);
      emit(Mnemonic::of(Opcode::Mov, ValueType::B64), {packed, fmt::format("{{{}, {}}}", low, high)});
      value.registers[0] = to_class == RegisterClass::B64 ? packed : writer_.new_register(to_class);
      if (to_class != RegisterClass::B64) emit(Mnemonic::of(Opcode::Mov, ValueType::B64), {value.registers[0], packed});
      return value;
    }
    if (from.count == 1 && value.count == 2) {
      std::string packed = from.registers[0];
      if (from_class != RegisterClass::B64) {
        packed = writer_.new_register(RegisterClass::B64);
        emit(Mnemonic::of(Opcode::Mov, ValueType::B64), {packed, from.registers[0]});
      }
      std::string low = writer_.new_register(RegisterClass::B32), high = writer_.new_register(RegisterClass::B32);
      emit(Mnemonic::of(Opcode::Mov, ValueType::B64), {fmt::format("{{{}, {}}}", low, high), packed});
      for (unsigned i = 0; i < 2; ++i) {
        const std::string& word = i == 0 ? low : high;
        if (to_class == RegisterClass::B32) {
          value.registers[i] = word;
        } else {
          value.registers[i] = writer_.new_register(to_class);
          emit(Mnemonic::of(Opcode::Mov, ValueType::B32), {value.registers[i], word});
        }
      }
      return value;
    }
    not_lowerable(fmt::format("a bitcast from {} to {}", ir::to_string(from.type), ir::to_string(target)));
  }

  std::string as_bits32(const std::string& register_name, RegisterClass register_class_of_it) {
    if (register_class_of_it == RegisterClass::B32) return register_name;
    std::string bits = writer_.new_register(RegisterClass::B32);
    emit(Mnemonic::of(Opcode::Mov, ValueType::B32), {bits, register_name});
    return bits;
  }

  /// A global address operand: a 64-bit register plus an immediate byte offset.
  struct GlobalAddress {
    std::string base;
    std::uint64_t offset = 0;  // below 2^31 (PTX's immediate address offsets are s32)
    std::string text() const { return offset == 0 ? fmt::format("[{}]", base) : fmt::format("[{}+{}]", base, offset); }
  };
  static constexpr std::uint64_t kMaxAddressOffset = (std::uint64_t{1} << 31) - 1;

  /// The buffer's base plus the offset for a constant index, else a byte offset
  /// (cvt.u64.u32 for bytes, mul.wide.u32 otherwise, shared by every buffer of that
  /// element size) + add.s64; both reused while the index register keeps its value
  /// (AvailableAddresses).
  GlobalAddress element_location(const ir::BufferDecl& buffer, const Value& index) {
    const std::string& base = buffer_addresses_.at(buffer.name);
    unsigned element_bytes = ir::byte_size(buffer.element);
    if (index.immediate()) {
      std::uint64_t offset = *index.constant * element_bytes;
      if (offset <= kMaxAddressOffset) return {base, offset};
    }
    std::string index_register = in_register(index);
    AvailableAddresses::Key key{buffer.name, index_register};
    if (auto known = addresses_.find(key)) return {*known};
    AvailableAddresses::Key offset_key{AvailableAddresses::byte_offset_name(element_bytes), index_register};
    std::string byte_offset;
    if (auto known = addresses_.find(offset_key)) {
      byte_offset = *known;
    } else {
      byte_offset = writer_.new_register(RegisterClass::B64);
      if (element_bytes == 1) {
        emit(Mnemonic::of(Opcode::Cvt, ValueType::U64, ValueType::U32), {byte_offset, index_register});
      } else {
        emit(Mnemonic::of(Opcode::Mul, ValueType::U32).multiply(ptx::MulMode::Wide),
             {byte_offset, index_register, std::to_string(element_bytes)});
      }
      addresses_.add(offset_key, byte_offset);
    }
    std::string address = writer_.new_register(RegisterClass::B64);
    emit(Mnemonic::of(Opcode::Add, ValueType::S64), {address, base, byte_offset});
    addresses_.add(key, address);
    return {address};
  }

  /// element_location as the address operand text, "[reg]" or "[reg+offset]".
  std::string element_address(const ir::BufferDecl& buffer, const Value& index) {
    return element_location(buffer, index).text();
  }

  /// `index` as `x + c` (c a u32 literal, x no literal) whose sum the value ranges prove
  /// free of wrap-around and whose c * element_bytes fits an immediate address offset.
  struct ConstantOffset {
    const ir::Expr* base = nullptr;  // x
    std::uint64_t bytes = 0;         // c * element_bytes
  };
  std::optional<ConstantOffset> constant_offset(const ir::Expr& index, unsigned element_bytes) {
    const auto* sum = index.as<ir::Binary>();
    const auto* constant = sum && sum->op == ir::BinaryOp::Add ? sum->rhs.as<ir::Literal>() : nullptr;
    if (!constant || constant->scalar() != ir::ScalarType::U32 || sum->lhs.as<ir::Literal>()) return std::nullopt;
    const std::uint64_t bytes = constant->bits * element_bytes;
    if (bytes > kMaxAddressOffset || ir::analysis::range_of(sum->lhs, ranges_).max + constant->bits > 0xFFFFFFFFu) {
      return std::nullopt;
    }
    return ConstantOffset{&sum->lhs, bytes};
  }

  /// The address of global `buffer`'s element `index`: for `index = x + c` (constant_offset;
  /// or a let bound to it, offset_lets_), x's address plus the immediate c * element size
  /// ("[%rd+imm]": the rows of a batch share one 64-bit address instead of a cvt/mul.wide
  /// and add.s64 each); else element_address.
  std::string global_address(const ir::BufferDecl& buffer, const ir::Expr& index) {
    const ir::Expr* looked = &index;
    bool through_let = false;
    if (const auto* var = index.as<ir::Var>()) {
      if (auto bound = offset_lets_.find(var->name); bound != offset_lets_.end()) looked = &bound->second;
      through_let = looked != &index;
    }
    std::optional<ConstantOffset> split = constant_offset(*looked, ir::byte_size(buffer.element));
    // Through a let only for a read-only buffer (sidecars sharing a group's index) and onto
    // an address already in a register. Elsewhere a longer-lived address register cost
    // ptxas registers: a split-K scratch access of dequant_matmul_nvfp4 at 4096x11008
    // went from 40 to 47 registers, one CTA fewer per SM and a second wave.
    if (through_let && split &&
        (buffer.is_written() || !addresses_.find({buffer.name, in_register(lower(*split->base))}))) {
      split.reset();
    }
    if (split) {
      GlobalAddress address = element_location(buffer, lower(*split->base));
      address.offset += split->bytes;
      if (address.offset <= kMaxAddressOffset) return address.text();
    }
    return element_address(buffer, lower(index));
  }

  /// The address of shared `array`'s element `index`: for `index = x + c` (constant_offset),
  /// x's address plus the immediate c * element size ("[%r+imm]": the rows a lane reads at
  /// fixed distances share one address register instead of an index, shift and add each);
  /// else shared_address.
  std::string shared_address_of(const ir::SharedDecl& array, const ir::Expr& index) {
    if (std::optional<ConstantOffset> split = constant_offset(index, ir::byte_size(array.element))) {
      std::string address = shared_address(array, lower(*split->base));
      if (split->bytes == 0) return address;
      address.pop_back();  // "[base" + "+offset]"; the base is a register (x is no literal)
      return fmt::format("{}+{}]", address, split->bytes);
    }
    return shared_address(array, lower(index));
  }

  /// "[symbol+offset]" for a constant index, else "[base + index * element_bytes]" in a
  /// 32-bit register (shl.b32 + add.u32), reused while the index register keeps its
  /// value like a global address.
  std::string shared_address(const ir::SharedDecl& array, const Value& index) {
    const unsigned element_bytes = ir::byte_size(array.element);
    if (index.immediate()) {
      const std::uint64_t offset = *index.constant * element_bytes;
      const std::string& symbol = shared_symbols_.at(array.name);
      return offset == 0 ? fmt::format("[{}]", symbol) : fmt::format("[{}+{}]", symbol, offset);
    }
    std::string index_register = in_register(index);
    AvailableAddresses::Key key{array.name, index_register};
    if (auto known = addresses_.find(key)) return fmt::format("[{}]", *known);
    std::string byte_offset = index_register;
    if (element_bytes > 1) {
      AvailableAddresses::Key offset_key{fmt::format("$shared{}", element_bytes), index_register};
      if (auto known = addresses_.find(offset_key)) {
        byte_offset = *known;
      } else {
        unsigned shift = 0;
        while ((1u << shift) < element_bytes) ++shift;
        byte_offset = writer_.new_register(RegisterClass::B32);
        emit(Mnemonic::of(Opcode::Shl, ValueType::B32), {byte_offset, index_register, std::to_string(shift)});
        addresses_.add(offset_key, byte_offset);
      }
    }
    std::string address = writer_.new_register(RegisterClass::B32);
    emit(Mnemonic::of(Opcode::Add, ValueType::U32), {address, shared_bases_.at(array.name), byte_offset});
    addresses_.add(key, address);
    return fmt::format("[{}]", address);
  }

  const ir::BufferDecl& find_buffer(const std::string& name) const {
    const ir::BufferDecl* buffer = program_.find_buffer(name);
    if (buffer == nullptr) throw ir::IRError(fmt::format("lower_to_ptx: undeclared buffer '{}'", name));
    return *buffer;
  }

  const Value& lookup(const std::string& name) const {
    if (const Value* variable = variables_.lookup(name)) return *variable;
    throw ir::IRError(fmt::format("lower_to_ptx: undeclared variable '{}'", name));
  }

  void nested(const ir::Node& body) {
    ++depth_;
    visit(body);
    --depth_;
  }

  const ir::Program& program_;
  const ptx::Target& target_;
  ptx::PtxWriter writer_;
  std::map<std::string, std::string> buffer_addresses_;
  std::map<std::string, std::string> shared_symbols_;  // workgroup array -> .shared symbol
  std::map<std::string, std::string> shared_bases_;    // workgroup array -> its address in a .b32 register
  ir::ScopedTable<Value> variables_;
  struct StructuralHash {
    std::size_t operator()(const ir::ExprBase* expr) const { return expr->structural_hash(); }
  };
  struct StructuralEqual {
    bool operator()(const ir::ExprBase* a, const ir::ExprBase* b) const {
      return ir::analysis::structurally_equal(a, b);
    }
  };
  std::unordered_map<const ir::ExprBase*, Value, StructuralHash, StructuralEqual> values_;                         // this statement's
  std::unordered_map<std::string, std::pair<std::string, std::string>> unpacked_;  // this statement's
  AvailableAddresses addresses_;
  ir::analysis::RangeEnvironment ranges_;  // facts of the Lets, loops and guards in scope
  std::unordered_map<std::string, ir::Expr> offset_lets_;  // let name -> its `x + c` (visit_Let)
  Value result_;
  int depth_ = 0;
};

}  // namespace

std::string select_instructions(const ir::Program& program, const ptx::Target& target) {
  Selector selector(program, target);
  return selector.run();
}

}  // namespace quantc::lower
