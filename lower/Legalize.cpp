// Legalization (see Legalize.h). An IRMutator that rewrites bottom-up: every mutate_*
// first legalizes the operands, then hands them to one builder per operation kind
// (binary, unary, cast, fma), which returns an expression built only of legal parts.
// The builders are called recursively on the pieces they create, never on operands
// that are already legal, so each subtree is legalized once.
//
// Expansions reuse an operand handle several times (e.g. `s` in TwoSum); the
// instruction selector evaluates a handle once per statement, so no work is repeated.
#include "lower/Legalize.h"

#include <fmt/format.h>

#include <bit>
#include <set>

#include "ir/Builder.h"
#include "ir/analysis/Structure.h"
#include "ir/analysis/ValueRange.h"
#include "ptx/InstructionTable.h"

namespace quantc::lower {
namespace {

using namespace ir;
using ptx::Opcode;
using ptx::ValueType;

/// The PTX instruction type of an IR float type (scalar or packed).
ValueType ptx_float_type(Type type) {
  switch (type.element()) {
    case ScalarType::F16: return type.lanes() == 2 ? ValueType::F16x2 : ValueType::F16;
    case ScalarType::BF16: return type.lanes() == 2 ? ValueType::BF16x2 : ValueType::BF16;
    case ScalarType::F32: return ValueType::F32;
    case ScalarType::F64: return ValueType::F64;
    default: return ValueType::None;
  }
}

bool is_narrow_integer(Type type) {
  return type.is_scalar() &&
         (type.element() == ScalarType::U8 || type.element() == ScalarType::I8 || type.element() == ScalarType::U16);
}

/// Whether `target` has the instruction form `mnemonic` (the instruction table decides).
bool has(const ptx::Target& target, const ptx::Mnemonic& mnemonic) {
  try {
    return ptx::target_supports(target, ptx::find_form(mnemonic));
  } catch (const ptx::PtxSyntaxError&) {
    return false;
  }
}

std::optional<Opcode> arithmetic_opcode(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return Opcode::Add;
    case BinaryOp::Sub: return Opcode::Sub;
    case BinaryOp::Mul: return Opcode::Mul;
    case BinaryOp::Min: return Opcode::Min;
    case BinaryOp::Max: return Opcode::Max;
    default: return std::nullopt;  // no half-precision div/rem; comparisons are widened
  }
}

class Legalizer : public analysis::RangeTrackingMutator {
 public:
  Legalizer(const Program& program, const ptx::Target& target)
      : RangeTrackingMutator(program), target_(target), names_(analysis::all_names(program)) {}

  using IRMutator::mutate;

 protected:
  // ---- memory -------------------------------------------------------------------------

  Expr mutate_Load(const Load& node, const Expr& self) override {
    Expr index = mutate(node.index);
    if (node.type == ScalarType::Bool) {  // bool in memory is one byte, 0 or 1
      return ne(Load::make(ScalarType::U8, node.buffer, index), literal(ScalarType::U8, 0));
    }
    const unsigned element_bytes = byte_size(node.type.element());
    if (node.type.is_vector() && node.alignment < natural_alignment(node.type)) {
      const unsigned piece = node.alignment / element_bytes;  // lanes per aligned access
      std::vector<Expr> lanes;
      for (unsigned first = 0; first < node.type.lanes(); first += piece) {
        Expr at = first == 0 ? index : Binary::make(BinaryOp::Add, index, u32(first));
        Expr part = Load::make(node.type.with_lanes(piece), node.buffer, at, node.alignment);
        for (unsigned lane = 0; lane < piece; ++lane) lanes.push_back(piece == 1 ? part : ExtractLane::make(part, lane));
      }
      return MakeVector::make(std::move(lanes));
    }
    return index.same_as(node.index) ? self : Load::make(node.type, node.buffer, index, node.alignment, node.reinterpret);
  }

  Node mutate_Store(const Store& node, const Node& self) override {
    Expr index = mutate(node.index);
    Expr value = mutate(node.value);
    Type type = node.value.type();
    if (type == ScalarType::Bool) {
      return Store::make(node.buffer, index,
                         Select::make(value, literal(ScalarType::U8, 1), literal(ScalarType::U8, 0)));
    }
    const unsigned element_bytes = byte_size(type.element());
    if (type.is_vector() && node.alignment < natural_alignment(type)) {
      // let value = ...; then one aligned store per piece, lanes taken from the value.
      std::string name = analysis::fresh_name("store_value", names_);
      Expr whole = Var::make(type, name);
      std::vector<Node> stmts{Let::make(name, value)};
      const unsigned piece = node.alignment / element_bytes;
      for (unsigned first = 0; first < type.lanes(); first += piece) {
        Expr at = first == 0 ? index : Binary::make(BinaryOp::Add, index, u32(first));
        std::vector<Expr> lanes;
        for (unsigned lane = 0; lane < piece; ++lane) lanes.push_back(ExtractLane::make(whole, first + lane));
        Expr part = piece == 1 ? lanes.front() : MakeVector::make(std::move(lanes));
        stmts.push_back(Store::make(node.buffer, at, part, node.alignment));
      }
      return Block::make(std::move(stmts));
    }
    if (index.same_as(node.index) && value.same_as(node.value)) return self;
    return Store::make(node.buffer, index, value, node.alignment, node.reinterpret);
  }

  // ---- operations ------------------------------------------------------------------------

  Expr mutate_Binary(const Binary& node, const Expr& self) override {
    Expr lhs = mutate(node.lhs), rhs = mutate(node.rhs);
    Expr legal = binary(node.op, lhs, rhs);
    return legal.defined() ? legal : (lhs.same_as(node.lhs) && rhs.same_as(node.rhs) ? self : Binary::make(node.op, lhs, rhs));
  }

  Expr mutate_Unary(const Unary& node, const Expr& self) override {
    Expr operand = mutate(node.operand);
    Expr legal = unary(node.op, operand);
    return legal.defined() ? legal : (operand.same_as(node.operand) ? self : Unary::make(node.op, operand));
  }

  Expr mutate_Cast(const Cast& node, const Expr& self) override {
    Expr value = mutate(node.value);
    Expr legal = cast(node.type, value);
    return legal.defined() ? legal : (value.same_as(node.value) ? self : Cast::make(node.type, value));
  }

  Expr mutate_Fma(const Fma& node, const Expr& self) override {
    Expr a = mutate(node.a), b = mutate(node.b), c = mutate(node.c);
    Expr legal = fma(a, b, c);
    if (legal.defined()) return legal;
    if (a.same_as(node.a) && b.same_as(node.b) && c.same_as(node.c)) return self;
    return Fma::make(a, b, c);
  }

  /// shfl.sync.idx reads lane `lane & 31`; the IR says a lane >= 32 reads the
  /// invocation's own value, which takes a select unless the value ranges prove the
  /// lane below 32 (then it is a plain shuffle) or at least 32 (then no shuffle at all).
  Expr mutate_SubgroupShuffle(const SubgroupShuffle& node, const Expr& self) override {
    Expr value = mutate(node.value), lane = mutate(node.lane);
    analysis::ValueRange range = analysis::range_of(lane, ranges_);
    if (range.min >= 32 && !analysis::has_subgroup_op(lane)) return value;
    Expr shuffled = value.same_as(node.value) && lane.same_as(node.lane) ? self : SubgroupShuffle::make(value, lane);
    if (range.max < 32) return shuffled;
    return Select::make(Binary::make(BinaryOp::Lt, lane, u32(32)), shuffled, value);
  }

  Expr mutate_Lookup(const Lookup& node, const Expr&) override {
    // A Select tree on the index bits, lowest bit first, padded to a power of two with
    // the last entry (in-range indices never reach the padding). Equal neighbours need
    // no select (FP8's two subnormal-exponent entries, the padding).
    Expr index = mutate(node.index);
    std::vector<Expr> level;
    std::size_t padded = std::bit_ceil(node.table.size());
    for (std::size_t i = 0; i < padded; ++i) {
      level.push_back(Literal::make(node.scalar(), node.table[std::min(i, node.table.size() - 1)]));
    }
    for (std::uint32_t bit = 0; level.size() > 1; ++bit) {
      Expr bit_set = ne(Binary::make(BinaryOp::BitAnd, index, u32(1u << bit)), u32(0));
      std::vector<Expr> next;
      for (std::size_t i = 0; i < level.size(); i += 2) {
        bool same = analysis::structurally_equal(level[i + 1], level[i]);
        next.push_back(same ? level[i] : Select::make(bit_set, level[i + 1], level[i]));
      }
      level = std::move(next);
    }
    return level.front();
  }

 private:
  // ---- the builders: legal operands in, a legal expression out (undefined: keep) ------------

  Expr binary(BinaryOp op, const Expr& a, const Expr& b) {
    Type type = a.type();
    if (type.is_vector()) {
      if (is_packed_half(type) && packed_half_binary_is_native(op, type)) return Expr();
      if (is_packed_half(type) && type.element() == ScalarType::BF16) {
        if (Expr as_fma = bf16_arithmetic_as_fma(op, a, b); as_fma.defined()) return as_fma;
      }
      return lane_by_lane(type, [&](unsigned lane) { return binary_or_keep(op, ExtractLane::make(a, lane), ExtractLane::make(b, lane)); });
    }
    if (is_narrow_integer(type) && (op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
                                    op == BinaryOp::Div || op == BinaryOp::Shl)) {
      Type wide = is_signed(type) ? ScalarType::I32 : ScalarType::U32;
      return Cast::make(type, Binary::make(op, Cast::make(wide, a), Cast::make(wide, b)));
    }
    if (!is_half(type)) return Expr();
    if (is_comparison(op)) return Binary::make(op, to_f32(a), to_f32(b));  // exact
    std::optional<Opcode> opcode = arithmetic_opcode(op);
    if (opcode && has(target_, ptx::Mnemonic::of(*opcode, ptx_float_type(type)))) return Expr();
    if (type.element() == ScalarType::BF16) {
      if (Expr as_fma = bf16_arithmetic_as_fma(op, a, b); as_fma.defined()) return as_fma;
    }
    // Through f32: exact for min/max, correctly rounded for add/sub/mul/div (24 >= 2p + 2).
    return from_f32(Binary::make(op, to_f32(a), to_f32(b)), type.element());
  }

  Expr binary_or_keep(BinaryOp op, const Expr& a, const Expr& b) {
    Expr legal = binary(op, a, b);
    return legal.defined() ? legal : Binary::make(op, a, b);
  }

  bool packed_half_binary_is_native(BinaryOp op, Type type) {
    std::optional<Opcode> opcode = arithmetic_opcode(op);
    return opcode && has(target_, ptx::Mnemonic::of(*opcode, ptx_float_type(type)));
  }

  /// bf16 add/sub/mul as one fma.rn.bf16 (sm_80 has fma but not add/sub/mul): a + b =
  /// fma(a, 1, b), a - b = fma(b, -1, a), a * b = fma(a, b, -0); each rounds once and
  /// keeps the sign of zero results. Undefined when the target has no bf16 fma.
  Expr bf16_arithmetic_as_fma(BinaryOp op, const Expr& a, const Expr& b) {
    Type type = a.type();
    if (!has(target_, ptx::Mnemonic::of(Opcode::Fma, ptx_float_type(type)))) return Expr();
    auto constant = [&](double value) { return literal_like(type, value); };
    switch (op) {
      case BinaryOp::Add: return Fma::make(a, constant(1.0), b);
      case BinaryOp::Sub: return Fma::make(b, constant(-1.0), a);
      case BinaryOp::Mul: return Fma::make(a, b, constant(-0.0));
      default: return Expr();
    }
  }

  Expr unary(UnaryOp op, const Expr& a) {
    Type type = a.type();
    if (is_half(type) || (is_float(type) && type.is_scalar())) return Expr();  // sign-bit operations
    if (type.is_vector()) {
      return lane_by_lane(type, [&](unsigned lane) {
        Expr value = ExtractLane::make(a, lane);
        Expr legal = unary(op, value);
        return legal.defined() ? legal : Unary::make(op, value);
      });
    }
    if (is_narrow_integer(type)) {  // neg/not/abs may leave the narrow range: 32 bits, then truncate
      Type wide = is_signed(type) ? ScalarType::I32 : ScalarType::U32;
      return Cast::make(type, Unary::make(op, Cast::make(wide, a)));
    }
    return Expr();
  }

  Expr cast(Type to, const Expr& value) {
    Type from = value.type();
    if (from == to) return value;
    if (to.is_vector()) {
      bool packs_halves = is_packed_half(to) && from.element() == ScalarType::F32;
      if (packs_halves &&
          has(target_, ptx::Mnemonic::of(Opcode::Cvt, ptx_float_type(to), ValueType::F32).round(ptx::Rounding::Nearest))) {
        return Expr();  // cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32
      }
      return lane_by_lane(to, [&](unsigned lane) { return cast_or_keep(to.element(), ExtractLane::make(value, lane)); });
    }
    const ScalarType source = from.element(), target = to.element();
    if (target == ScalarType::BF16) return to_bf16(value);
    if (source == ScalarType::BF16) {
      if (target == ScalarType::F32) return to_f32(value);
      if (target == ScalarType::Bool) return ne(to_f32(value), f32(0.0f));
      return cast_or_keep(target, to_f32(value));  // bf16 -> f32 is exact
    }
    return Expr();
  }

  Expr cast_or_keep(Type to, const Expr& value) {
    Expr legal = cast(to, value);
    return legal.defined() ? legal : Cast::make(to, value);
  }

  Expr fma(const Expr& a, const Expr& b, const Expr& c) {
    Type type = a.type();
    if (is_half(type) && has(target_, ptx::Mnemonic::of(Opcode::Fma, ptx_float_type(type)).round(ptx::Rounding::Nearest))) {
      return Expr();
    }
    if (type.is_vector()) {
      return lane_by_lane(type, [&](unsigned lane) {
        Expr x = ExtractLane::make(a, lane), y = ExtractLane::make(b, lane), z = ExtractLane::make(c, lane);
        Expr legal = fma(x, y, z);
        return legal.defined() ? legal : Fma::make(x, y, z);
      });
    }
    if (type != ScalarType::BF16) return Expr();
    // bf16 without fma.bf16 (sm_75): the exact product (16 significant bits) in f64, the
    // sum rounded to odd, then one rounding to bf16.
    Expr product = Binary::make(BinaryOp::Mul, Cast::make(ScalarType::F64, to_f32(a)), Cast::make(ScalarType::F64, to_f32(b)));
    return to_bf16(sum_round_to_odd(product, Cast::make(ScalarType::F64, to_f32(c))));
  }

  // ---- bf16 conversions ----------------------------------------------------------------

  /// bf16 -> f32 (exact, NaN payloads kept): cvt.f32.bf16 where the target has it, else
  /// the bf16 bits as the high half of the f32 pattern (what ptxas makes of the cvt).
  Expr to_f32(const Expr& value) {
    if (value.type() == ScalarType::F32) return value;
    if (value.type() != ScalarType::BF16) return Cast::make(ScalarType::F32, value);  // f16 -> f32 is native
    if (has(target_, ptx::Mnemonic::of(Opcode::Cvt, ValueType::F32, ValueType::BF16))) {
      return Cast::make(ScalarType::F32, value);
    }
    return Bitcast::make(
        ScalarType::F32,
        Binary::make(BinaryOp::Shl, Cast::make(ScalarType::U32, Bitcast::make(ScalarType::U16, value)), u32(16)));
  }

  /// f32 -> f16/bf16 rounded to nearest even.
  Expr from_f32(const Expr& value, ScalarType target) {
    if (target == ScalarType::BF16) return to_bf16(value);
    return Cast::make(target, value);
  }

  /// Any scalar -> bf16, rounded to nearest even (one rounding).
  Expr to_bf16(const Expr& value) {
    const ScalarType source = value.type().element();
    if (source == ScalarType::BF16) return value;
    if (source == ScalarType::Bool) {
      return Select::make(value, Literal::from_double(ScalarType::BF16, 1.0), Literal::from_double(ScalarType::BF16, 0.0));
    }
    ValueType from = source == ScalarType::F32   ? ValueType::F32
                     : source == ScalarType::F64 ? ValueType::F64
                     : source == ScalarType::F16 ? ValueType::F16
                                                 : ValueType::None;
    if (from == ValueType::None && is_integer(source)) {
      from = is_signed(source) ? (bit_width(source) == 64 ? ValueType::S64 : ValueType::S32)
                               : (bit_width(source) == 64 ? ValueType::U64 : ValueType::U32);
    }
    if (from != ValueType::None &&
        has(target_, ptx::Mnemonic::of(Opcode::Cvt, ValueType::BF16, from).round(ptx::Rounding::Nearest))) {
      return Cast::make(ScalarType::BF16, value);
    }
    if (source == ScalarType::F32) return f32_to_bf16_bits(value);
    if (source == ScalarType::F16) return to_bf16(Cast::make(ScalarType::F32, value));  // f16 -> f32 is exact
    if (source == ScalarType::F64) return to_bf16(round_to_odd_f32(value));
    if (bit_width(source) <= 32) return to_bf16(round_to_odd_f32(Cast::make(ScalarType::F64, value)));  // exact in f64
    // 64-bit integers: high and low halves are exact in f64; their sum rounded to odd.
    Type high_type = is_signed(source) ? ScalarType::I32 : ScalarType::U32;
    Expr high = Binary::make(BinaryOp::Mul,
                             Cast::make(ScalarType::F64, Cast::make(high_type, Binary::make(BinaryOp::Shr, value, literal(source, 32)))),
                             f64(4294967296.0));
    Expr low = Cast::make(ScalarType::F64, Cast::make(ScalarType::U32, value));
    return to_bf16(round_to_odd_f32(sum_round_to_odd(high, low)));
  }

  /// f32 -> bf16 with integer arithmetic (targets without cvt.rn.bf16.f32): the upper
  /// half of the pattern rounded to nearest even; NaN gives the canonical 0x7fff.
  Expr f32_to_bf16_bits(const Expr& value) {
    Expr bits = Bitcast::make(ScalarType::U32, value);
    Expr odd = Binary::make(BinaryOp::BitAnd, Binary::make(BinaryOp::Shr, bits, u32(16)), u32(1));
    Expr rounded = Binary::make(BinaryOp::Shr, Binary::make(BinaryOp::Add, Binary::make(BinaryOp::Add, bits, u32(0x7fff)), odd), u32(16));
    Expr chosen = Select::make(ne(value, value), u32(0x7fff), rounded);
    return Bitcast::make(ScalarType::BF16, Cast::make(ScalarType::U16, chosen));
  }

  /// f64 -> f32 rounded to odd: the correctly rounded f32 when exact or odd, else its
  /// neighbour toward the f64 value. Rounding that to bf16 rounds the f64 value once.
  Expr round_to_odd_f32(const Expr& value) {
    Expr nearest = Cast::make(ScalarType::F32, value);
    Expr back = Cast::make(ScalarType::F64, nearest);
    Expr bits = Bitcast::make(ScalarType::U32, nearest);
    Expr odd = ne(Binary::make(BinaryOp::BitAnd, bits, u32(1)), u32(0));
    Expr keep = logical_or(logical_or(eq(back, value), odd), ne(value, value));
    Expr away_from_zero = Binary::make(BinaryOp::Gt, Unary::make(UnaryOp::Abs, value), Unary::make(UnaryOp::Abs, back));
    Expr neighbour = Bitcast::make(ScalarType::F32, Binary::make(BinaryOp::Add, bits, Select::make(away_from_zero, u32(1), u32(0xffffffffu))));
    return Select::make(keep, nearest, neighbour);
  }

  /// a + b (f64) rounded to odd, from TwoSum's exact error (Knuth): finite operands
  /// only change when the sum is inexact and even; infinities and NaN pass through.
  Expr sum_round_to_odd(const Expr& a, const Expr& b) {
    Expr sum = Binary::make(BinaryOp::Add, a, b);
    Expr b_virtual = Binary::make(BinaryOp::Sub, sum, a);
    Expr a_virtual = Binary::make(BinaryOp::Sub, sum, b_virtual);
    Expr error = Binary::make(BinaryOp::Add, Binary::make(BinaryOp::Sub, a, a_virtual), Binary::make(BinaryOp::Sub, b, b_virtual));
    Expr bits = Bitcast::make(ScalarType::U64, sum);
    Expr even = eq(Binary::make(BinaryOp::BitAnd, bits, literal(ScalarType::U64, 1)), literal(ScalarType::U64, 0));
    Expr finite = eq(Binary::make(BinaryOp::Sub, sum, sum), f64(0.0));
    Expr adjust = logical_and(logical_and(finite, ne(error, f64(0.0))), even);
    // One step toward the exact sum: up in magnitude when the error has the sum's sign.
    Expr outward = eq(Binary::make(BinaryOp::Gt, error, f64(0.0)), Binary::make(BinaryOp::Gt, sum, f64(0.0)));
    Expr step = Select::make(outward, literal(ScalarType::U64, 1), Literal::make(ScalarType::U64, ~std::uint64_t{0}));
    Expr neighbour = Bitcast::make(ScalarType::F64, Binary::make(BinaryOp::Add, bits, step));
    return Select::make(adjust, neighbour, sum);
  }

  template <class Lane>
  Expr lane_by_lane(Type type, Lane&& lane) {
    std::vector<Expr> lanes;
    for (unsigned i = 0; i < type.lanes(); ++i) lanes.push_back(lane(i));
    return MakeVector::make(std::move(lanes));
  }

  const ptx::Target& target_;
  std::set<std::string> names_;
};

}  // namespace

ir::Program legalize(ir::Program program, const ptx::Target& target) {
  Legalizer legalizer(program, target);
  program.entry = legalizer.mutate(program.entry);
  for (ir::BufferDecl& buffer : program.buffers) {
    if (buffer.element == ir::ScalarType::Bool) buffer.element = ir::ScalarType::U8;  // read/written as 0/1 bytes
  }
  return program;
}

}  // namespace quantc::lower
