// The lane kernels of the reference interpreter: one function per (expression kind,
// operator, type) combination, each evaluating its node for a whole LaneSpan. The
// arithmetic follows the semantics at the top of ir/IR.h exactly; the comments below
// say how each rule is realised on the host.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/Printer.h"
#include "runtime/backends/reference/Machine.h"

namespace quantc::runtime::reference::detail {
namespace {

using ir::BinaryOp;
using ir::ScalarType;
using ir::SubgroupReduceOp;
using ir::UnaryOp;

constexpr std::uint32_t kSubgroupSize = 32;

/// Integer arithmetic is done in an unsigned type at least 32 bits wide so that it
/// wraps modulo 2^bits without signed-overflow UB or promotion to int.
template <class T>
using Wide = std::conditional_t<sizeof(T) <= 4, std::uint32_t, std::uint64_t>;

/// f16 arithmetic is done in f32 and rounded back: for +, -, *, / the double rounding
/// is innocuous because 24 >= 2 * 11 + 2 (Figueroa), so results equal native binary16.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, Half>, float, T>;

template <class T>
inline bool is_nan(T value) {
  if constexpr (kIsFloat<T>) {
    return std::isnan(static_cast<Compute<T>>(value));
  } else {
    return false;
  }
}

template <class T>
inline T canonical_nan() {
  return static_cast<T>(std::numeric_limits<float>::quiet_NaN());
}

/// PTX min/max.f32: a NaN operand is ignored (both NaN gives a canonical NaN) and
/// -0.0 orders below +0.0.
template <bool kMin, class T>
inline T float_min_max(T a, T b) {
  using C = Compute<T>;
  C x = static_cast<C>(a), y = static_cast<C>(b);
  if (std::isnan(x)) return std::isnan(y) ? canonical_nan<T>() : b;
  if (std::isnan(y)) return a;
  if (x == y) {  // equal, possibly zeros of different sign
    bool x_negative = std::signbit(x);
    return (kMin ? x_negative : !x_negative) ? a : b;
  }
  return (kMin ? x < y : x > y) ? a : b;
}

template <BinaryOp OP, class T>
constexpr bool binary_allowed() {
  constexpr bool boolean = std::is_same_v<T, bool>;
  constexpr bool integer = !boolean && !kIsFloat<T>;
  switch (OP) {
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr: return boolean;
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor: return !kIsFloat<T>;
    case BinaryOp::Rem:
    case BinaryOp::Shl:
    case BinaryOp::Shr: return integer;
    case BinaryOp::Eq:
    case BinaryOp::Ne: return true;
    default: return !boolean;
  }
}

template <BinaryOp OP, class T>
inline auto apply_binary(T a, T b) {
  using C = Compute<T>;
  if constexpr (OP == BinaryOp::Eq) return static_cast<C>(a) == static_cast<C>(b);
  else if constexpr (OP == BinaryOp::Ne) return static_cast<C>(a) != static_cast<C>(b);  // true for NaN
  else if constexpr (OP == BinaryOp::Lt) return static_cast<C>(a) < static_cast<C>(b);
  else if constexpr (OP == BinaryOp::Le) return static_cast<C>(a) <= static_cast<C>(b);
  else if constexpr (OP == BinaryOp::Gt) return static_cast<C>(a) > static_cast<C>(b);
  else if constexpr (OP == BinaryOp::Ge) return static_cast<C>(a) >= static_cast<C>(b);
  else if constexpr (OP == BinaryOp::LogicalAnd) return a && b;
  else if constexpr (OP == BinaryOp::LogicalOr) return a || b;
  else if constexpr (OP == BinaryOp::BitAnd) return static_cast<T>(a & b);
  else if constexpr (OP == BinaryOp::BitOr) return static_cast<T>(a | b);
  else if constexpr (OP == BinaryOp::BitXor) return static_cast<T>(a ^ b);
  else if constexpr (kIsFloat<T>) {
    // One rounding per operation; -ffp-contract=off keeps the host from fusing.
    if constexpr (OP == BinaryOp::Add) return static_cast<T>(static_cast<C>(a) + static_cast<C>(b));
    else if constexpr (OP == BinaryOp::Sub) return static_cast<T>(static_cast<C>(a) - static_cast<C>(b));
    else if constexpr (OP == BinaryOp::Mul) return static_cast<T>(static_cast<C>(a) * static_cast<C>(b));
    else if constexpr (OP == BinaryOp::Div) return static_cast<T>(static_cast<C>(a) / static_cast<C>(b));
    else if constexpr (OP == BinaryOp::Min) return float_min_max<true>(a, b);
    else if constexpr (OP == BinaryOp::Max) return float_min_max<false>(a, b);
  } else {
    using W = Wide<T>;
    using U = std::make_unsigned_t<T>;
    constexpr unsigned kBits = sizeof(T) * 8;
    if constexpr (OP == BinaryOp::Add) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    else if constexpr (OP == BinaryOp::Sub) return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
    else if constexpr (OP == BinaryOp::Mul) return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    else if constexpr (OP == BinaryOp::Div || OP == BinaryOp::Rem) {
      // The divisor is checked for zero before; the one overflowing quotient
      // (MIN / -1) wraps to MIN with remainder 0, as PTX div.s32 does.
      if constexpr (std::is_signed_v<T>) {
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return OP == BinaryOp::Div ? a : T(0);
      }
      return OP == BinaryOp::Div ? static_cast<T>(a / b) : static_cast<T>(a % b);
    } else if constexpr (OP == BinaryOp::Min) return a < b ? a : b;
    else if constexpr (OP == BinaryOp::Max) return a > b ? a : b;
    else if constexpr (OP == BinaryOp::Shl) {
      // The amount is read as unsigned (a negative amount is huge): clamped like PTX shl.
      U amount = static_cast<U>(b);
      if (amount >= kBits) return T(0);
      return static_cast<T>(static_cast<W>(static_cast<U>(a)) << amount);
    } else if constexpr (OP == BinaryOp::Shr) {
      U amount = static_cast<U>(b);
      if (amount >= kBits) return (std::is_signed_v<T> && a < 0) ? static_cast<T>(-1) : T(0);
      return static_cast<T>(a >> amount);  // arithmetic for signed types (C++20)
    }
  }
}

[[noreturn]] void throw_at(const Machine& machine, std::uint32_t lane, const ir::Expr& source,
                           const std::string& what) {
  throw RuntimeError(fmt::format("{} in `{}` at {}", what, ir::print(source), machine.describe_lane(lane)));
}

template <BinaryOp OP, class T>
const Word* binary_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* lhs = node.operands[0]->run(machine, lanes);
  const Word* rhs = node.operands[1]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  if constexpr ((OP == BinaryOp::Div || OP == BinaryOp::Rem) && !kIsFloat<T>) {
    for_each_lane(lanes, [&](std::uint32_t lane) {
      if (get<T>(rhs[lane]) == T(0)) {
        throw_at(machine, lane, node.source,
                 fmt::format("integer division by zero (dividend {})", +get<T>(lhs[lane])));
      }
    });
  }
  for_each_lane(lanes, [&](std::uint32_t lane) {
    out[lane] = put(apply_binary<OP, T>(get<T>(lhs[lane]), get<T>(rhs[lane])));
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

template <UnaryOp OP, class T>
constexpr bool unary_allowed() {
  if constexpr (std::is_same_v<T, bool>) return OP == UnaryOp::Not;
  else if constexpr (kIsFloat<T>) return OP != UnaryOp::Not;
  else return true;
}

template <UnaryOp OP, class T>
inline T apply_unary(T value) {
  using C = Compute<T>;
  if constexpr (OP == UnaryOp::Not) {
    if constexpr (std::is_same_v<T, bool>) return !value;
    else return static_cast<T>(~value);
  } else if constexpr (kIsFloat<T>) {
    if constexpr (OP == UnaryOp::Neg) return static_cast<T>(-static_cast<C>(value));
    else return static_cast<T>(std::fabs(static_cast<C>(value)));
  } else {
    using W = Wide<T>;
    T negated = static_cast<T>(W(0) - static_cast<W>(value));  // wraps: -MIN == MIN
    if constexpr (OP == UnaryOp::Neg) return negated;
    else if constexpr (std::is_signed_v<T>) return value < 0 ? negated : value;
    else return value;
  }
}

template <UnaryOp OP, class T>
const Word* unary_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* operand = node.operands[0]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) { out[lane] = put(apply_unary<OP, T>(get<T>(operand[lane]))); });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

/// Float -> integer: round toward zero, saturate, NaN -> 0 (PTX cvt.rzi.sat).
template <class To, class From>
inline To saturate_to_integer(From value) {
  double real = static_cast<double>(static_cast<Compute<From>>(value));  // exact
  if (std::isnan(real)) return To(0);
  real = std::trunc(real);
  // Both limits are exact doubles: 0 or -2^(n-1), and 2^n or 2^(n-1).
  constexpr double lowest = static_cast<double>(std::numeric_limits<To>::min());
  const double above_highest = std::ldexp(1.0, std::numeric_limits<To>::digits);
  if (real < lowest) return std::numeric_limits<To>::min();
  if (real >= above_highest) return std::numeric_limits<To>::max();
  return static_cast<To>(real);
}

template <class To, class From>
inline To convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsFloat<From>) return static_cast<Compute<From>>(value) != 0;  // NaN -> true
    else return value != 0;
  } else if constexpr (kIsFloat<From> && !kIsFloat<To>) {
    return saturate_to_integer<To>(value);
  } else if constexpr (std::is_same_v<To, Half> && !kIsFloat<From>) {
    // Integers reach f16 through f32: exact below 2^24, and anything larger overflows
    // f16 (max 65504) to infinity either way, so there is a single effective rounding.
    return static_cast<Half>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(value ? 1 : 0);
  } else {
    // Integer <-> integer: modular (truncate / extend by the source's signedness);
    // to float: round to nearest even; float <-> float: exact or rounded to nearest.
    return static_cast<To>(value);
  }
}

template <class From, class To>
const Word* cast_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* operand = node.operands[0]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) { out[lane] = put(convert<To, From>(get<From>(operand[lane]))); });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

template <class T>
const Word* fma_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* a = node.operands[0]->run(machine, lanes);
  const Word* b = node.operands[1]->run(machine, lanes);
  const Word* c = node.operands[2]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    if constexpr (std::is_same_v<T, Half>) {
      // The exact-then-double-rounded result is correctly rounded to f16 (53 >= 2*11+2).
      out[lane] = put(static_cast<Half>(std::fma(static_cast<double>(get<Half>(a[lane])),
                                                 static_cast<double>(get<Half>(b[lane])),
                                                 static_cast<double>(get<Half>(c[lane])))));
    } else {
      out[lane] = put(static_cast<T>(std::fma(get<T>(a[lane]), get<T>(b[lane]), get<T>(c[lane]))));
    }
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

const Word* select_kernel_impl(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* cond = node.operands[0]->run(machine, lanes);
  const Word* if_true = node.operands[1]->run(machine, lanes);
  const Word* if_false = node.operands[2]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) { out[lane] = get<bool>(cond[lane]) ? if_true[lane] : if_false[lane]; });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

/// Vars, literals, builtins and buffer lengths: the value already sits in the register.
const Word* register_kernel(const ExprNode& node, Machine& machine, const LaneSpan&) {
  return machine.reg(node.result);
}

template <class T>
const Word* load_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* index = node.operands[0]->run(machine, lanes);
  const BufferView& buffer = machine.buffers[node.buffer];
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    std::uint32_t element = get<std::uint32_t>(index[lane]);
    if (element >= buffer.count) {
      throw_at(machine, lane, node.source,
               fmt::format("out-of-bounds load from buffer '{}': index {} >= count {}", buffer.name, element,
                           buffer.count));
    }
    if constexpr (std::is_same_v<T, bool>) {
      out[lane] = put(buffer.bytes[element] != 0);  // any non-zero byte reads as true
    } else {
      T value;
      std::memcpy(&value, buffer.bytes + std::size_t{element} * sizeof(T), sizeof(T));
      out[lane] = put(value);
    }
  });
  machine.counters.global_loads += lanes.size;
  machine.counters.loads_per_buffer[node.buffer] += lanes.size;
  return out;
}

const Word* lookup_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* index = node.operands[0]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const auto size = static_cast<std::uint32_t>(node.table.size());
  for_each_lane(lanes, [&](std::uint32_t lane) {
    std::uint32_t entry = get<std::uint32_t>(index[lane]);
    if (entry >= size) {
      throw_at(machine, lane, node.source,
               fmt::format("lookup index {} out of range for a table of {} entries", entry, size));
    }
    out[lane] = node.table[entry];
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

inline std::uint32_t lane_at(const LaneSpan& lanes, std::uint32_t position) {
  return lanes.dense ? position : lanes.data[position];
}

const Word* shuffle_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* value = node.operands[0]->run(machine, lanes);
  const Word* source_lane = node.operands[1]->run(machine, lanes);
  machine.require_full_subgroups(lanes, node.source);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    std::uint32_t source = get<std::uint32_t>(source_lane[lane]);
    // shfl.sync.idx: a source lane outside the warp reads the caller's own value.
    out[lane] = source < kSubgroupSize ? value[(lane & ~(kSubgroupSize - 1)) + source] : value[lane];
  });
  machine.counters.subgroup_shuffles += lanes.size;
  return out;
}

template <SubgroupReduceOp OP, class T>
const Word* reduce_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* value = node.operands[0]->run(machine, lanes);
  machine.require_full_subgroups(lanes, node.source);
  Word* out = machine.reg(node.result);
  constexpr BinaryOp kCombine = OP == SubgroupReduceOp::Add   ? BinaryOp::Add
                                : OP == SubgroupReduceOp::Max ? BinaryOp::Max
                                                              : BinaryOp::Min;
  for (std::uint32_t position = 0; position < lanes.size; position += kSubgroupSize) {
    const std::uint32_t base = lane_at(lanes, position);  // full subgroups: base..base+31
    T values[kSubgroupSize], exchanged[kSubgroupSize];
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) values[i] = get<T>(value[base + i]);
    // shfl.sync.bfly with offsets 16, 8, 4, 2, 1; each lane combines own op partner's.
    for (std::uint32_t offset = kSubgroupSize / 2; offset != 0; offset /= 2) {
      for (std::uint32_t i = 0; i < kSubgroupSize; ++i) exchanged[i] = apply_binary<kCombine, T>(values[i], values[i ^ offset]);
      std::memcpy(values, exchanged, sizeof(values));
    }
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) out[base + i] = put(values[i]);
  }
  machine.counters.subgroup_reductions += lanes.size;
  return out;
}

const Word* ballot_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* cond = node.operands[0]->run(machine, lanes);
  machine.require_full_subgroups(lanes, node.source);
  Word* out = machine.reg(node.result);
  for (std::uint32_t position = 0; position < lanes.size; position += kSubgroupSize) {
    const std::uint32_t base = lane_at(lanes, position);
    std::uint32_t bits = 0;
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) bits |= std::uint32_t{get<bool>(cond[base + i])} << i;
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) out[base + i] = put(bits);
  }
  machine.counters.subgroup_ballots += lanes.size;
  return out;
}

[[noreturn]] void unsupported(const ir::Expr& source, const std::string& why) {
  throw RuntimeError(fmt::format("reference interpreter: cannot execute `{}`: {}", ir::print(source), why));
}

EvalFn binary_kernel_for(const ir::Binary& binary, const ir::Expr& source) {
  return dispatch_type(binary.lhs.type(), [&]<class T>() -> EvalFn {
    switch (binary.op) {
#define QUANTC_CASE(name, text)                                                   \
  case BinaryOp::name:                                                            \
    if constexpr (binary_allowed<BinaryOp::name, T>()) return &binary_kernel<BinaryOp::name, T>; \
    break;
      QUANTC_BINARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
    }
    unsupported(source, fmt::format("operator '{}' is not defined on {}", ir::to_string(binary.op),
                                    ir::to_string(binary.lhs.type())));
  });
}

EvalFn unary_kernel_for(const ir::Unary& unary, const ir::Expr& source) {
  return dispatch_type(unary.operand.type(), [&]<class T>() -> EvalFn {
    switch (unary.op) {
      case UnaryOp::Neg:
        if constexpr (unary_allowed<UnaryOp::Neg, T>()) return &unary_kernel<UnaryOp::Neg, T>;
        break;
      case UnaryOp::Not:
        if constexpr (unary_allowed<UnaryOp::Not, T>()) return &unary_kernel<UnaryOp::Not, T>;
        break;
      case UnaryOp::Abs:
        if constexpr (unary_allowed<UnaryOp::Abs, T>()) return &unary_kernel<UnaryOp::Abs, T>;
        break;
    }
    unsupported(source, fmt::format("'{}' is not defined on {}", ir::to_string(unary.op),
                                    ir::to_string(unary.operand.type())));
  });
}

EvalFn reduce_kernel_for(const ir::SubgroupReduce& reduce, const ir::Expr& source) {
  return dispatch_type(reduce.value.type(), [&]<class T>() -> EvalFn {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::int32_t>) {
      switch (reduce.op) {
        case SubgroupReduceOp::Add: return &reduce_kernel<SubgroupReduceOp::Add, T>;
        case SubgroupReduceOp::Max: return &reduce_kernel<SubgroupReduceOp::Max, T>;
        case SubgroupReduceOp::Min: return &reduce_kernel<SubgroupReduceOp::Min, T>;
      }
    }
    unsupported(source, "subgroup reductions take f32, u32 or i32");
  });
}

template <class T>
void filter_less(const LaneSpan& lanes, const Word* counter, const Word* limit, std::vector<std::uint32_t>& out) {
  for_each_lane(lanes, [&](std::uint32_t lane) {
    if (get<T>(counter[lane]) < get<T>(limit[lane])) out.push_back(lane);
  });
}

template <class T>
void increment(const LaneSpan& lanes, Word* counter) {
  for_each_lane(lanes, [&](std::uint32_t lane) {
    counter[lane] = put(static_cast<T>(static_cast<Wide<T>>(get<T>(counter[lane])) + 1));
  });
}

}  // namespace

EvalFn select_kernel(const ir::Expr& source) {
  switch (source.kind()) {
    case ir::ExprKind::Literal:
    case ir::ExprKind::Var:
    case ir::ExprKind::Builtin:
    case ir::ExprKind::BufferLength:
      return &register_kernel;
    case ir::ExprKind::Load:
      if (source.as<ir::Load>()->index.type() != ScalarType::U32) unsupported(source, "load indices must be u32");
      return dispatch_type(source.type(), [&]<class T>() -> EvalFn { return &load_kernel<T>; });
    case ir::ExprKind::Binary:
      return binary_kernel_for(*source.as<ir::Binary>(), source);
    case ir::ExprKind::Unary:
      return unary_kernel_for(*source.as<ir::Unary>(), source);
    case ir::ExprKind::Cast:
      return dispatch_type(source.as<ir::Cast>()->value.type(), [&]<class From>() -> EvalFn {
        return dispatch_type(source.type(), [&]<class To>() -> EvalFn { return &cast_kernel<From, To>; });
      });
    case ir::ExprKind::Select:
      return &select_kernel_impl;
    case ir::ExprKind::Fma:
      return dispatch_type(source.type(), [&]<class T>() -> EvalFn {
        if constexpr (kIsFloat<T>) return &fma_kernel<T>;
        unsupported(source, "fma takes floats");
      });
    case ir::ExprKind::SubgroupShuffle:
      if (ir::bit_width(source.type()) != 32) unsupported(source, "subgroup shuffles take 32-bit values");
      return &shuffle_kernel;
    case ir::ExprKind::SubgroupReduce:
      return reduce_kernel_for(*source.as<ir::SubgroupReduce>(), source);
    case ir::ExprKind::SubgroupBallot:
      return &ballot_kernel;
    case ir::ExprKind::Lookup:
      return &lookup_kernel;
  }
  unsupported(source, "unknown expression kind");
}

LoopKernels loop_kernels(ScalarType type) {
  return dispatch_type(type, [&]<class T>() -> LoopKernels {
    if constexpr (!kIsFloat<T> && !std::is_same_v<T, bool>) {
      return LoopKernels{&filter_less<T>, &increment<T>};
    }
    throw RuntimeError(fmt::format("loop bounds must be integers, got {}", ir::to_string(type)));
  });
}

}  // namespace quantc::runtime::reference::detail
