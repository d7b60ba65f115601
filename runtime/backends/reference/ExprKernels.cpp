// The lane kernels of the reference interpreter: one function per (expression kind,
// operator, type) combination, each evaluating its node for a whole LaneSpan. What
// each operator computes is ir/Arithmetic.h's one definition (the constant folder uses
// the same); this file only moves values between registers, lanes and vector lanes.
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "ir/Mma.h"
#include "ir/Printer.h"
#include "runtime/backends/reference/Machine.h"

namespace quantc::runtime::reference::detail {
namespace {

namespace arith = ir::arith;
using ir::BinaryOp;
using ir::ScalarType;
using ir::kSubgroupSize;
using ir::SubgroupReduceOp;
using ir::UnaryOp;


[[noreturn]] void throw_at(const Machine& machine, std::uint32_t lane, const ir::Expr& source,
                           const std::string& what) {
  throw RuntimeError(fmt::format("{} in `{}` at {}", what, ir::print(source), machine.describe_lane(lane)));
}

template <class T>
std::string describe_value(T value) {
  if constexpr (arith::kIsHalf<T>) return fmt::format("{}", static_cast<double>(arith::exact_value(value)));
  else return fmt::format("{}", +value);
}

/// Integer division and remainder trap on a zero divisor (the IR's only run-time
/// arithmetic error); `divisor` is checked before the operation runs.
template <BinaryOp OP, class T>
void check_divisor(const Machine& machine, std::uint32_t lane, const ExprNode& node, T dividend, T divisor) {
  if constexpr ((OP == BinaryOp::Div || OP == BinaryOp::Rem) && arith::kIsInteger<T>) {
    if (divisor == T(0)) {
      throw_at(machine, lane, node.source, fmt::format("integer division by zero (dividend {})", describe_value(dividend)));
    }
  }
}

template <BinaryOp OP, class T>
const Word* binary_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* lhs = node.operands[0]->run(machine, lanes);
  const Word* rhs = node.operands[1]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    T a = get<T>(lhs[lane]), b = get<T>(rhs[lane]);
    check_divisor<OP>(machine, lane, node, a, b);
    out[lane] = put(arith::binary<OP, T>(a, b));
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

/// The same operator on every lane of a vector.
template <BinaryOp OP, class T>
const Word* vector_binary_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* lhs = node.operands[0]->run(machine, lanes);
  const Word* rhs = node.operands[1]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const unsigned count = node.source.type().lanes(), words = words_of(node.source.type());
  for_each_lane(lanes, [&](std::uint32_t lane) {
    VectorValue a = VectorValue::read(lhs, machine.lanes, lane, words);
    VectorValue b = VectorValue::read(rhs, machine.lanes, lane, words);
    VectorValue result;
    for (unsigned i = 0; i < count; ++i) {
      check_divisor<OP>(machine, lane, node, a.lane<T>(i), b.lane<T>(i));
      result.set_lane<T>(i, arith::binary<OP, T>(a.lane<T>(i), b.lane<T>(i)));
    }
    result.write(out, machine.lanes, lane, words);
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

template <UnaryOp OP, class T>
const Word* unary_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* operand = node.operands[0]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const ir::Type type = node.source.type();
  if (type.is_scalar()) {
    for_each_lane(lanes, [&](std::uint32_t lane) { out[lane] = put(arith::unary<OP, T>(get<T>(operand[lane]))); });
  } else {
    const unsigned words = words_of(type);
    for_each_lane(lanes, [&](std::uint32_t lane) {
      VectorValue value = VectorValue::read(operand, machine.lanes, lane, words);
      for (unsigned i = 0; i < type.lanes(); ++i) value.set_lane<T>(i, arith::unary<OP, T>(value.lane<T>(i)));
      value.write(out, machine.lanes, lane, words);
    });
  }
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

template <class From, class To>
const Word* cast_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* operand = node.operands[0]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const ir::Type type = node.source.type();
  if (type.is_scalar()) {
    for_each_lane(lanes, [&](std::uint32_t lane) { out[lane] = put(arith::convert<To, From>(get<From>(operand[lane]))); });
  } else {
    const ir::Type from = node.source.as<ir::Cast>()->value.type();
    const unsigned from_words = words_of(from), to_words = words_of(type);
    for_each_lane(lanes, [&](std::uint32_t lane) {
      VectorValue value = VectorValue::read(operand, machine.lanes, lane, from_words);
      VectorValue result;
      for (unsigned i = 0; i < type.lanes(); ++i) result.set_lane<To>(i, arith::convert<To, From>(value.lane<From>(i)));
      result.write(out, machine.lanes, lane, to_words);
    });
  }
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

/// Reinterprets the bits: the Words already hold them (for 16-bit scalars the upper
/// bytes are don't-care, so a narrow source is masked to its width).
const Word* bitcast_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* operand = node.operands[0]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const ir::Type type = node.source.type();
  const unsigned bits = type.bits(), words = words_of(type);
  const Word mask = bits >= 64 ? ~Word{0} : (Word{1} << bits) - 1;
  for_each_lane(lanes, [&](std::uint32_t lane) {
    for (unsigned w = 0; w < words; ++w) out[w * machine.lanes + lane] = operand[w * machine.lanes + lane] & (words > 1 ? ~Word{0} : mask);
  });
  return out;
}

template <class T>
const Word* fma_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* a = node.operands[0]->run(machine, lanes);
  const Word* b = node.operands[1]->run(machine, lanes);
  const Word* c = node.operands[2]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const ir::Type type = node.source.type();
  if (type.is_scalar()) {
    for_each_lane(lanes, [&](std::uint32_t lane) {
      out[lane] = put(arith::fma(get<T>(a[lane]), get<T>(b[lane]), get<T>(c[lane])));
    });
  } else {
    const unsigned words = words_of(type);
    for_each_lane(lanes, [&](std::uint32_t lane) {
      VectorValue x = VectorValue::read(a, machine.lanes, lane, words), y = VectorValue::read(b, machine.lanes, lane, words),
                  z = VectorValue::read(c, machine.lanes, lane, words), result;
      for (unsigned i = 0; i < type.lanes(); ++i) result.set_lane<T>(i, arith::fma(x.lane<T>(i), y.lane<T>(i), z.lane<T>(i)));
      result.write(out, machine.lanes, lane, words);
    });
  }
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

const Word* select_kernel_impl(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* cond = node.operands[0]->run(machine, lanes);
  const Word* if_true = node.operands[1]->run(machine, lanes);
  const Word* if_false = node.operands[2]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  const unsigned words = words_of(node.source.type());
  for_each_lane(lanes, [&](std::uint32_t lane) {
    const Word* chosen = get<bool>(cond[lane]) ? if_true : if_false;
    for (unsigned w = 0; w < words; ++w) out[w * machine.lanes + lane] = chosen[w * machine.lanes + lane];
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

template <class T>
const Word* make_vector_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const ir::Type type = node.source.type();
  const unsigned words = words_of(type);
  Word* out = machine.reg(node.result);
  const Word* values[4] = {};
  for (unsigned i = 0; i < type.lanes(); ++i) values[i] = node.operands[i]->run(machine, lanes);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    VectorValue result;
    for (unsigned i = 0; i < type.lanes(); ++i) result.set_lane<T>(i, get<T>(values[i][lane]));
    result.write(out, machine.lanes, lane, words);
  });
  return out;
}

template <class T>
const Word* extract_lane_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* vector = node.operands[0]->run(machine, lanes);
  const ir::ExtractLane& extract = *node.source.as<ir::ExtractLane>();
  const unsigned words = words_of(extract.vector.type());
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    out[lane] = put(VectorValue::read(vector, machine.lanes, lane, words).lane<T>(extract.lane));
  });
  return out;
}

template <class T>
const Word* insert_lane_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* vector = node.operands[0]->run(machine, lanes);
  const Word* value = node.operands[1]->run(machine, lanes);
  const ir::InsertLane& insert = *node.source.as<ir::InsertLane>();
  const unsigned words = words_of(insert.type);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    VectorValue result = VectorValue::read(vector, machine.lanes, lane, words);
    result.set_lane<T>(insert.lane, get<T>(value[lane]));
    result.write(out, machine.lanes, lane, words);
  });
  return out;
}

/// prmt.b32 default mode (ir::Permute): byte i of the result is byte sel[4i+2:4i] of
/// {b : a}, or that byte's sign replicated when sel bit 4i+3 is set.
const Word* permute_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* a = node.operands[0]->run(machine, lanes);
  const Word* b = node.operands[1]->run(machine, lanes);
  const Word* selector = node.operands[2]->run(machine, lanes);
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    const std::uint64_t source = (std::uint64_t{get<std::uint32_t>(b[lane])} << 32) | get<std::uint32_t>(a[lane]);
    const std::uint32_t control = get<std::uint32_t>(selector[lane]);
    std::uint32_t result = 0;
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned nibble = (control >> (4 * i)) & 0xf;
      std::uint32_t byte = static_cast<std::uint32_t>(source >> (8 * (nibble & 7))) & 0xff;
      if (nibble & 8) byte = (byte & 0x80) ? 0xff : 0x00;
      result |= byte << (8 * i);
    }
    out[lane] = put(result);
  });
  machine.counters.arithmetic_ops += lanes.size;
  return out;
}

/// Vars, literals, builtins and buffer lengths: the value already sits in the register.
const Word* register_kernel(const ExprNode& node, Machine& machine, const LaneSpan&) {
  return machine.reg(node.result);
}

/// AtomicAdd: lane by lane in lane order, each an indivisible add on the host (the
/// interpreter's workgroups run on several host threads), yielding the old element.
template <class T>
const Word* atomic_add_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* index = node.operands[0]->run(machine, lanes);
  const Word* value = node.operands[1]->run(machine, lanes);
  const BufferView& buffer = machine.buffers[node.buffer];
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    std::uint32_t element = get<std::uint32_t>(index[lane]);
    if (element >= buffer.count) {
      throw_at(machine, lane, node.source,
               fmt::format("out-of-bounds atomic add on buffer '{}': index {} >= count {}", buffer.name, element,
                           buffer.count));
    }
    // Buffers are allocated by std::vector<std::uint8_t> (operator new: 16-byte aligned).
    auto* word = reinterpret_cast<T*>(buffer.bytes + std::size_t{element} * sizeof(T));
    out[lane] = put(std::atomic_ref<T>(*word).fetch_add(get<T>(value[lane]), std::memory_order_relaxed));
  });
  machine.counters.global_loads += lanes.size;
  machine.counters.global_stores += lanes.size;
  machine.counters.loads_per_buffer[node.buffer] += lanes.size;
  machine.counters.stores_per_buffer[node.buffer] += lanes.size;
  return out;
}

template <class T>
const Word* load_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* index = node.operands[0]->run(machine, lanes);
  const BufferView& buffer = machine.buffers[node.buffer];
  const ir::Type type = node.source.type();
  const unsigned count = type.lanes(), words = words_of(type);
  // Buffer elements read: the lanes, or a reinterpreting load's 4 * lanes bytes of an 8- or 16-bit buffer.
  const bool reinterpret = node.source.as<ir::Load>()->reinterpret;
  const unsigned span = reinterpret ? count * unsigned(sizeof(T)) / buffer.element_size : count;
  Word* out = machine.reg(node.result);
  for_each_lane(lanes, [&](std::uint32_t lane) {
    std::uint32_t element = get<std::uint32_t>(index[lane]);
    if (std::uint64_t{element} + span > buffer.count) {
      throw_at(machine, lane, node.source,
               span == 1 ? fmt::format("out-of-bounds load from buffer '{}': index {} >= count {}", buffer.name,
                                       element, buffer.count)
                         : fmt::format("out-of-bounds load of {} elements from buffer '{}': index {} + {} > count {}",
                                       span, buffer.name, element, span, buffer.count));
    }
    const std::uint8_t* source = buffer.bytes + std::size_t{element} * buffer.element_size;
    if constexpr (std::is_same_v<T, bool>) {
      out[lane] = put(*source != 0);  // any non-zero byte reads as true
    } else if (count == 1) {
      T value;
      std::memcpy(&value, source, sizeof(T));
      out[lane] = put(value);
    } else {
      VectorValue value;
      std::memcpy(value.words, source, count * sizeof(T));
      value.write(out, machine.lanes, lane, words);
    }
  });
  (buffer.shared ? machine.counters.shared_loads : machine.counters.global_loads) += lanes.size;
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
      for (std::uint32_t i = 0; i < kSubgroupSize; ++i) exchanged[i] = arith::binary<kCombine, T>(values[i], values[i ^ offset]);
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

/// ir::SubgroupLoadMatrix: each full subgroup's rows distributed as ldmatrix does
/// (ir::mma::load_matrix_source); a row that leaves the array is an error.
const Word* load_matrix_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* index = node.operands[0]->run(machine, lanes);
  machine.require_full_subgroups(lanes, node.source);
  const auto& load = *node.source.as<ir::SubgroupLoadMatrix>();
  const BufferView& array = machine.buffers[node.buffer];
  const unsigned words = words_of(node.source.type());
  Word* out = machine.reg(node.result);
  for (std::uint32_t position = 0; position < lanes.size; position += kSubgroupSize) {
    const std::uint32_t base = lane_at(lanes, position);  // full subgroups: base..base+31
    // Row starts in bytes: 16 bytes a row, whatever the array's element size.
    const std::uint64_t element_bytes = array.element_size;
    const std::uint64_t row_elements = 2 * ir::mma::kMatrixRowElements / element_bytes;
    std::uint64_t rows[kSubgroupSize] = {};
    for (std::uint32_t r = 0; r < ir::mma::kMatrixRows * load.matrices; ++r) {
      const auto row = get<std::uint32_t>(index[base + r]);
      if (std::uint64_t{row} + row_elements > array.count) {
        throw_at(machine, base + r, node.source,
                 fmt::format("out-of-bounds ldmatrix row of workgroup array '{}': index {} + {} > count {}", array.name,
                             row, row_elements, array.count));
      }
      rows[r] = row * element_bytes;
    }
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) {
      VectorValue value;
      for (unsigned m = 0; m < load.matrices; ++m) {
        std::uint32_t word = 0;
        for (unsigned half = 0; half < 2; ++half) {
          const auto [row_lane, element] = ir::mma::load_matrix_source(i, m, half, load.transpose);
          std::uint16_t bits;
          std::memcpy(&bits, array.bytes + rows[row_lane] + std::size_t{element} * 2, 2);
          word |= std::uint32_t{bits} << (16 * half);
        }
        value.set_lane<std::uint32_t>(m, word);
      }
      value.write(out, machine.lanes, base + i, words);
    }
  }
  machine.counters.shared_loads += lanes.size;
  return out;
}

/// ir::SubgroupMma: each full subgroup's fragments through the one definition (ir/Mma.h).
const Word* mma_kernel(const ExprNode& node, Machine& machine, const LaneSpan& lanes) {
  const Word* a = node.operands[0]->run(machine, lanes);
  const Word* b = node.operands[1]->run(machine, lanes);
  const Word* c = node.operands[2]->run(machine, lanes);
  machine.require_full_subgroups(lanes, node.source);
  Word* out = machine.reg(node.result);
  const ScalarType input = node.source.as<ir::SubgroupMma>()->input;
  for (std::uint32_t position = 0; position < lanes.size; position += kSubgroupSize) {
    const std::uint32_t base = lane_at(lanes, position);  // full subgroups: base..base+31
    ir::mma::AFragments a_fragments;
    ir::mma::BFragments b_fragments;
    ir::mma::CFragments c_fragments;
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) {
      const VectorValue a_value = VectorValue::read(a, machine.lanes, base + i, 2);
      const VectorValue b_value = VectorValue::read(b, machine.lanes, base + i, 1);
      const VectorValue c_value = VectorValue::read(c, machine.lanes, base + i, 2);
      for (unsigned w = 0; w < ir::mma::kAWords; ++w) a_fragments[i][w] = a_value.lane<std::uint32_t>(w);
      for (unsigned w = 0; w < ir::mma::kBWords; ++w) b_fragments[i][w] = b_value.lane<std::uint32_t>(w);
      for (unsigned e = 0; e < ir::mma::kCElements; ++e) c_fragments[i][e] = c_value.lane<std::uint32_t>(e);
    }
    const ir::mma::CFragments d = ir::mma::multiply_accumulate(input, a_fragments, b_fragments, c_fragments);
    for (std::uint32_t i = 0; i < kSubgroupSize; ++i) {
      VectorValue d_value;
      for (unsigned e = 0; e < ir::mma::kCElements; ++e) d_value.set_lane<std::uint32_t>(e, d[i][e]);
      d_value.write(out, machine.lanes, base + i, 2);
    }
  }
  machine.counters.subgroup_mmas += lanes.size;
  return out;
}

[[noreturn]] void unsupported(const ir::Expr& source, const std::string& why) {
  throw RuntimeError(fmt::format("reference interpreter: cannot execute `{}`: {}", ir::print(source), why));
}

EvalFn binary_kernel_for(const ir::Binary& binary, const ir::Expr& source) {
  const ir::Type type = binary.lhs.type();
  return arith::dispatch_scalar(type.element(), [&]<class T>() -> EvalFn {
    switch (binary.op) {
#define QUANTC_CASE(name, text)                                                             \
  case BinaryOp::name:                                                                      \
    if constexpr (arith::binary_defined<BinaryOp::name, T>()) {                             \
      if constexpr (std::is_same_v<decltype(arith::binary<BinaryOp::name, T>(T{}, T{})), T>) { \
        if (type.is_vector()) return &vector_binary_kernel<BinaryOp::name, T>;              \
      }                                                                                     \
      return &binary_kernel<BinaryOp::name, T>;                                             \
    }                                                                                       \
    break;
      QUANTC_BINARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
    }
    unsupported(source, fmt::format("operator '{}' is not defined on {}", ir::to_string(binary.op), ir::to_string(type)));
  });
}

EvalFn unary_kernel_for(const ir::Unary& unary, const ir::Expr& source) {
  return arith::dispatch_scalar(unary.operand.type().element(), [&]<class T>() -> EvalFn {
    switch (unary.op) {
#define QUANTC_CASE(name, text)                                                          \
  case UnaryOp::name:                                                                    \
    if constexpr (arith::unary_defined<UnaryOp::name, T>()) return &unary_kernel<UnaryOp::name, T>; \
    break;
      QUANTC_UNARY_OPS(QUANTC_CASE)
#undef QUANTC_CASE
    }
    unsupported(source, fmt::format("'{}' is not defined on {}", ir::to_string(unary.op),
                                    ir::to_string(unary.operand.type())));
  });
}

EvalFn reduce_kernel_for(const ir::SubgroupReduce& reduce, const ir::Expr& source) {
  return arith::dispatch_scalar(reduce.value.type().element(), [&]<class T>() -> EvalFn {
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
    counter[lane] = put(arith::binary<BinaryOp::Add, T>(get<T>(counter[lane]), T(1)));
  });
}

}  // namespace

EvalFn select_kernel(const ir::Expr& source) {
  const ScalarType element = source.type().element();
  switch (source.kind()) {
    case ir::ExprKind::Literal:
    case ir::ExprKind::Var:
    case ir::ExprKind::Builtin:
    case ir::ExprKind::BufferLength:
      return &register_kernel;
    case ir::ExprKind::Load:
      if (source.as<ir::Load>()->index.type() != ScalarType::U32) unsupported(source, "load indices must be u32");
      return arith::dispatch_scalar(element, [&]<class T>() -> EvalFn { return &load_kernel<T>; });
    case ir::ExprKind::Binary:
      return binary_kernel_for(*source.as<ir::Binary>(), source);
    case ir::ExprKind::Unary:
      return unary_kernel_for(*source.as<ir::Unary>(), source);
    case ir::ExprKind::Cast:
      return arith::dispatch_scalar(source.as<ir::Cast>()->value.type().element(), [&]<class From>() -> EvalFn {
        return arith::dispatch_scalar(element, [&]<class To>() -> EvalFn { return &cast_kernel<From, To>; });
      });
    case ir::ExprKind::Bitcast:
      return &bitcast_kernel;
    case ir::ExprKind::Select:
      return &select_kernel_impl;
    case ir::ExprKind::Fma:
      return arith::dispatch_scalar(element, [&]<class T>() -> EvalFn {
        if constexpr (arith::kIsFloat<T>) return &fma_kernel<T>;
        unsupported(source, "fma takes floats");
      });
    case ir::ExprKind::MakeVector:
      return arith::dispatch_scalar(element, [&]<class T>() -> EvalFn { return &make_vector_kernel<T>; });
    case ir::ExprKind::ExtractLane:
      return arith::dispatch_scalar(element, [&]<class T>() -> EvalFn { return &extract_lane_kernel<T>; });
    case ir::ExprKind::InsertLane:
      return arith::dispatch_scalar(element, [&]<class T>() -> EvalFn { return &insert_lane_kernel<T>; });
    case ir::ExprKind::Permute:
      return &permute_kernel;
    case ir::ExprKind::SubgroupShuffle:
      if (source.type().bits() != 32) unsupported(source, "subgroup shuffles take 32-bit values");
      return &shuffle_kernel;
    case ir::ExprKind::SubgroupReduce:
      return reduce_kernel_for(*source.as<ir::SubgroupReduce>(), source);
    case ir::ExprKind::SubgroupBallot:
      return &ballot_kernel;
    case ir::ExprKind::SubgroupMma:
      return &mma_kernel;
    case ir::ExprKind::SubgroupLoadMatrix:
      return &load_matrix_kernel;
    case ir::ExprKind::Lookup:
      return &lookup_kernel;
    case ir::ExprKind::AtomicAdd:
      if (element == ScalarType::U32) return &atomic_add_kernel<std::uint32_t>;
      if (element == ScalarType::I32) return &atomic_add_kernel<std::int32_t>;
      unsupported(source, "atomic adds take u32 or i32");
  }
  unsupported(source, "unknown expression kind");
}

LoopKernels loop_kernels(ScalarType type) {
  return arith::dispatch_scalar(type, [&]<class T>() -> LoopKernels {
    if constexpr (arith::kIsInteger<T>) {
      return LoopKernels{&filter_less<T>, &increment<T>};
    }
    throw RuntimeError(fmt::format("loop bounds must be integers, got {}", ir::to_string(type)));
  });
}

}  // namespace quantc::runtime::reference::detail
