// A seeded random program generator shared by the pass tests (interpreter before and
// after every pass) and the emulator tests (emulated PTX on every target against the
// interpreter). Programs are well typed, never fail at run time (indices are reduced
// modulo the buffer size, vector indices are aligned, divisors are non-zero literals),
// are free of data races (every invocation stores only to its own slots and loads the
// written buffers only there, so any execution order gives the same bytes) and put
// subgroup operations only under uniform control (conditions and loop bounds built from
// workgroup_id, literals and uniform variables). They mix u32, f32, f16 and bf16 scalars
// with f16x2/bf16x2 packed values and u32/f32 vectors of 2 and 4 lanes: loads and stores
// (aligned and under-aligned), lane-wise arithmetic, fma, casts, bitcasts, lane
// extraction/insertion, byte permutes. The outputs are read_write and read back: values
// travel through memory (a store, then loads later in the block or in later iterations
// of a loop, read-modify-write inside loops), which a pass that hoists or merges loads
// across stores gets wrong. Float literals and inputs (random_inputs) include NaNs, ±inf,
// ±0 and subnormals.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "runtime/Buffers.h"

namespace quantc::testing {

using namespace quantc::ir;

class RandomProgram {
 public:
  explicit RandomProgram(std::uint64_t seed) : random_(seed) {}

  /// What generate() produced, so a test can check the generator still reaches it.
  struct Coverage {
    int carried_in_loops = 0;   // read-modify-writes of a written buffer inside a loop
    int written_loads = 0;      // loads of a buffer the program stores to
    int special_floats = 0;     // NaN, ±inf, subnormal or largest-finite f32 literals
  };
  const Coverage& coverage() const { return coverage_; }

  Program generate() {
    ProgramBuilder program("random");
    in_f_ = program.input("in_f", ScalarType::F32, 64);
    in_u_ = program.input("in_u", ScalarType::U32, 64);
    in_h_ = program.input("in_h", ScalarType::F16, 64);
    in_b_ = program.input("in_b", ScalarType::BF16, 64);
    // 128 invocations, each owning 4 u32/f32 slots and 2 f16/bf16 slots.
    out_f_ = program.output("out_f", ScalarType::F32, 512);
    out_u_ = program.output("out_u", ScalarType::U32, 512);
    out_h_ = program.output("out_h", ScalarType::F16, 256);
    out_b_ = program.output("out_b", ScalarType::BF16, 256);
    program.launch({64, 1, 1}, {2, 1, 1});
    program.body([&](Body& body) {
      invocation_ = body.let("inv", invocation_id(0));
      lane_ = body.let("lane", local_id(0) % 32u);
      slot_ = body.let("slot", invocation_ * 4u);
      half_slot_ = body.let("half_slot", invocation_ * 2u);
      accumulator_u_ = body.let("acc_u", u32(0));
      accumulator_f_ = body.let("acc_f", f32(0.0f));
      statements(body, 0, true, 3 + pick(6));
      body.store(out_u_, slot_, accumulator_u_);
      body.store(out_f_, slot_, accumulator_f_);
    });
    return program.build();
  }

 private:
  std::uint32_t pick(std::uint32_t n) { return static_cast<std::uint32_t>(random_() % n); }
  bool chance(int percent) { return pick(100) < static_cast<std::uint32_t>(percent); }

  void statements(Body& body, int depth, bool uniform, int count) {
    std::size_t scope_u = uniform_u_.size(), scope_any_u = any_u_.size(), scope_f = any_f_.size();
    for (int i = 0; i < count; ++i) statement(body, depth, uniform);
    uniform_u_.resize(scope_u);
    any_u_.resize(scope_any_u);
    any_f_.resize(scope_f);
  }

  void statement(Body& body, int depth, bool uniform) {
    if (loop_depth_ > 0 && chance(25)) return carried_statement(body);
    if (chance(20)) return vector_statement(body);
    switch (pick(depth < 3 ? 9 : 6)) {
      case 0: {
        bool make_uniform = chance(50);
        Expr value = u32_expr(3, make_uniform);
        Expr var = body.let(name(), value);
        (make_uniform ? uniform_u_ : any_u_).push_back(var);
        break;
      }
      case 1:
        any_f_.push_back(body.let(name(), f32_expr(3)));
        break;
      case 2:
        body.assign(accumulator_u_, accumulator_u_ ^ u32_expr(3, false));
        break;
      case 3:
        body.assign(accumulator_f_, accumulator_f_ + f32_expr(2));
        break;
      case 4:
        if (uniform && !returned_) subgroup_statement(body);
        else body.store(out_u_, slot_ + 1u, u32_expr(2, false));
        break;
      case 5:
        body.store(out_f_, slot_ + u32_expr(1, false) % 4u, f32_expr(2));
        break;
      case 6: {
        bool uniform_cond = chance(50);
        Expr cond = bool_expr(2, uniform_cond);
        bool inner_uniform = uniform && uniform_cond;
        auto then_builder = [&](Body& then) { statements(then, depth + 1, inner_uniform, 1 + pick(3)); };
        if (chance(50)) {
          body.if_then(cond, then_builder);
        } else {
          body.if_then_else(cond, then_builder,
                            [&](Body& otherwise) { statements(otherwise, depth + 1, inner_uniform, 1 + pick(3)); });
        }
        break;
      }
      case 7: {
        Expr to = chance(70) ? u32(pick(6)) : (u32_expr(1, true) % 5u);
        std::uint32_t from = pick(2);
        body.loop(name(), u32(from), max(to, u32(from)), [&](Body& loop, Expr var) {
          uniform_u_.push_back(var);
          ++loop_depth_;
          statements(loop, depth + 1, uniform, 1 + pick(3));
          --loop_depth_;
          uniform_u_.pop_back();
        });
        break;
      }
      case 8:
        // Never inside a loop: the next iteration would run the loop's earlier subgroup
        // operations with the returned lanes missing (the verifier rejects that).
        if (depth > 0 && chance(30) && !uniform && loop_depth_ == 0) {
          body.return_();
          returned_ = true;
        } else {
          body.store(out_u_, slot_ + 2u, u32_expr(2, false) + accumulator_u_);
        }
        break;
    }
  }

  /// Inside a loop: a read-modify-write of one of this invocation's slots, so the value
  /// an iteration loads is the one the previous iteration stored.
  void carried_statement(Body& body) {
    ++coverage_.carried_in_loops;
    ++coverage_.written_loads;
    switch (pick(4)) {
      case 0: {
        Expr at = slot_ + u32(pick(4));
        body.store(out_u_, at, out_u_[at] * u32(3 + 2 * pick(4)) + u32_expr(1, false));
        break;
      }
      case 1: {
        Expr at = slot_ + u32(pick(4));
        body.store(out_f_, at, fma(out_f_[at], f32(0.5f), f32_expr(1)));
        break;
      }
      case 2: {
        // A store, then a load of the same slot in the same iteration.
        Expr at = slot_ + u32(pick(4));
        body.store(out_u_, at, u32_expr(1, false) ^ u32(pick(1000)));
        any_u_.push_back(body.let(name(), out_u_[at] + accumulator_u_));
        break;
      }
      default: {
        ScalarType type = chance(50) ? ScalarType::F16 : ScalarType::BF16;
        const BufferRef& buffer = type == ScalarType::F16 ? out_h_ : out_b_;
        Expr at = half_slot_ + u32(pick(2));
        body.store(buffer, at, buffer[at] + half_expr(type, 1));
        break;
      }
    }
  }

  /// A store of a 16-bit or vector value to this invocation's slots: halves (some as
  /// packed pairs) and u32/f32 vectors, aligned or declared under-aligned.
  void vector_statement(Body& body) {
    switch (pick(6)) {
      case 0: body.store(out_h_, half_slot_ + u32(pick(2)), half_expr(ScalarType::F16, 2)); break;
      case 1: body.store(out_b_, half_slot_ + u32(pick(2)), half_expr(ScalarType::BF16, 2)); break;
      case 2: body.store(out_h_, half_slot_, pair_expr(ScalarType::F16, 2), chance(30) ? 2 : 0); break;
      case 3: body.store(out_b_, half_slot_, pair_expr(ScalarType::BF16, 2), chance(30) ? 2 : 0); break;
      case 4: {
        unsigned lanes = chance(50) ? 4 : 2;
        body.store(out_u_, slot_, vector_expr(ScalarType::U32, lanes, 2), chance(25) ? 4 : 0);
        break;
      }
      default: {
        unsigned lanes = chance(50) ? 4 : 2;
        body.store(out_f_, slot_, vector_expr(ScalarType::F32, lanes, 2), chance(25) ? 4 : 0);
        break;
      }
    }
  }

  void subgroup_statement(Body& body) {
    switch (pick(3)) {
      case 0:
        any_f_.push_back(body.let(name(), subgroup_add(f32_expr(2))));
        break;
      case 1:
        any_u_.push_back(body.let(name(), subgroup_shuffle(u32_expr(2, false), u32_expr(1, false) % 40u)));
        break;
      default:
        uniform_u_.push_back(body.let(name(), subgroup_ballot(bool_expr(1, false))));
        break;
    }
  }

  Expr u32_leaf(bool uniform) {
    int choice = static_cast<int>(pick(uniform ? 4 : 8));
    switch (choice) {
      case 0: {
        static constexpr std::uint32_t kSpecial[] = {0, 1, 2, 3, 7, 8, 31, 32, 33, 63, 64, 255, 0x80000000u, 0xffffffffu};
        return chance(70) ? u32(kSpecial[pick(std::size(kSpecial))]) : u32(static_cast<std::uint32_t>(random_()));
      }
      case 1:
        return workgroup_id(0);
      case 2:
        if (!uniform_u_.empty()) return uniform_u_[pick(static_cast<std::uint32_t>(uniform_u_.size()))];
        return u32(pick(100));
      case 3:
        return in_u_[u32_leaf(true) % 64u];
      case 4:
        return chance(50) ? invocation_ : lane_;
      case 5:
        if (!any_u_.empty()) return any_u_[pick(static_cast<std::uint32_t>(any_u_.size()))];
        return local_id(0);
      case 6:
        ++coverage_.written_loads;
        return out_u_[slot_ + u32(pick(4))];  // what this invocation stored there, or 0
      default:
        return chance(50) ? accumulator_u_ : in_u_[invocation_ % 64u];
    }
  }

  Expr u32_expr(int depth, bool uniform) {
    if (depth == 0 || chance(25)) return u32_leaf(uniform);
    Expr a = u32_expr(depth - 1, uniform), b = u32_expr(depth - 1, uniform);
    switch (pick(16)) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * b;
      case 3: return a & b;
      case 4: return a | b;
      case 5: return a ^ b;
      case 6: return a << (b % 40u);
      case 7: return a >> (b % 40u);
      case 8: return a / u32(1 + pick(70));
      case 9: return a % u32(1 + pick(70));
      case 10: return min(a, b);
      case 11: return max(a, b);
      case 12: return select(bool_expr(depth - 1, uniform), a, b);
      case 13: return uniform ? a + u32(pick(9)) : cast(ScalarType::U32, f32_expr(depth - 1));
      case 14: return (a + u32(pick(5))) + u32(pick(5));
      case 15:
        if (uniform) return a * u32(1u << pick(6)) + b % 32u;
        switch (pick(4)) {
          case 0: return permute(a, b, chance(50) ? u32(random_() & 0xffff) : b);
          case 1: return bitcast(ScalarType::U32, pair_expr(chance(50) ? ScalarType::F16 : ScalarType::BF16, depth - 1));
          case 2: return extract_lane(vector_expr(ScalarType::U32, chance(50) ? 4 : 2, depth - 1), pick(2));
          default: return cast(ScalarType::U32, half_expr(chance(50) ? ScalarType::F16 : ScalarType::BF16, depth - 1));
        }
      default: return a * u32(1u << pick(6)) + b % 32u;
    }
  }

  /// Special 16-bit values: zeros, one, a subnormal, the largest finite, inf, NaN.
  Expr half_literal(ScalarType type) {
    static constexpr std::uint16_t kF16[] = {0x0000, 0x8000, 0x3c00, 0x0001, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x3555};
    static constexpr std::uint16_t kBF16[] = {0x0000, 0x8000, 0x3f80, 0x0001, 0x7f7f, 0x7f80, 0xff80, 0x7fc0, 0x3eab};
    return Literal::make(type, type == ScalarType::F16 ? kF16[pick(9)] : kBF16[pick(9)]);
  }

  Expr half_expr(ScalarType type, int depth) {
    const BufferRef& input = type == ScalarType::F16 ? in_h_ : in_b_;
    if (depth <= 0 || chance(25)) {
      switch (pick(6)) {
        case 0: return half_literal(type);
        case 1: return input[u32_leaf(false) % 64u];
        case 2: return cast(type, f32_expr(1));
        case 3: return extract_lane(pair_expr(type, 0), pick(2));
        case 4:
          ++coverage_.written_loads;
          return (type == ScalarType::F16 ? out_h_ : out_b_)[half_slot_ + u32(pick(2))];
        default: return input[invocation_ % 64u];
      }
    }
    Expr a = half_expr(type, depth - 1), b = half_expr(type, depth - 1);
    switch (pick(12)) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * b;
      case 3: return a / b;
      case 4: return min(a, b);
      case 5: return max(a, b);
      case 6: return fma(a, b, half_expr(type, depth - 1));
      case 7: return -a;
      case 8: return abs(a);
      case 9: return select(bool_expr(depth - 1, false), a, b);
      case 10: return cast(type, half_expr(type == ScalarType::F16 ? ScalarType::BF16 : ScalarType::F16, depth - 1));
      default: return bitcast(type, cast(ScalarType::U16, u32_expr(depth - 1, false)));
    }
  }

  /// An f16x2 or bf16x2 value.
  Expr pair_expr(ScalarType type, int depth) {
    const BufferRef& input = type == ScalarType::F16 ? in_h_ : in_b_;
    Type pair(type, 2);
    if (depth <= 0 || chance(25)) {
      switch (pick(4)) {
        case 0: return input.load((u32_leaf(false) % 32u) * 2u, 2);
        case 1: return input.load(invocation_ % 63u, 2, 2);  // under-aligned: two 16-bit loads
        case 2: return make_vector({half_expr(type, 0), half_expr(type, 0)});
        default: return bitcast(pair, u32_leaf(false));
      }
    }
    Expr a = pair_expr(type, depth - 1), b = pair_expr(type, depth - 1);
    switch (pick(10)) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * b;
      case 3: return min(a, b);
      case 4: return max(a, b);
      case 5: return fma(a, b, pair_expr(type, depth - 1));
      case 6: return chance(50) ? -a : abs(a);
      case 7: return insert_lane(a, pick(2), half_expr(type, depth - 1));
      case 8: return cast(pair, vector_expr(ScalarType::F32, 2, depth - 1));
      default: return select(bool_expr(depth - 1, false), a, b / b);
    }
  }

  /// A u32 or f32 vector of `lanes` lanes.
  Expr vector_expr(ScalarType element, unsigned lanes, int depth) {
    const BufferRef& input = element == ScalarType::U32 ? in_u_ : in_f_;
    Type type(element, lanes);
    if (depth <= 0 || chance(25)) {
      switch (pick(4)) {
        case 0: return input.load((u32_leaf(false) % (64u / lanes)) * double(lanes), lanes);
        case 1: return input.load((invocation_ % 60u), lanes, byte_size(element));  // under-aligned
        case 2: {
          std::vector<Expr> values;
          for (unsigned i = 0; i < lanes; ++i) values.push_back(element == ScalarType::U32 ? u32_leaf(false) : f32_expr(0));
          return make_vector(values);
        }
        default:
          return bitcast(type, vector_expr(element == ScalarType::U32 ? ScalarType::F32 : ScalarType::U32, lanes, 0));
      }
    }
    Expr a = vector_expr(element, lanes, depth - 1), b = vector_expr(element, lanes, depth - 1);
    switch (pick(7)) {
      case 0: return a + b;
      case 1: return a * b;
      case 2: return min(a, b);
      case 3: return element == ScalarType::U32 ? (a ^ b) : fma(a, b, a);
      case 4: return select(bool_expr(depth - 1, false), a, b);
      case 5: return insert_lane(a, pick(lanes), element == ScalarType::U32 ? u32_expr(depth - 1, false) : f32_expr(depth - 1));
      default:
        if (lanes == 2 && element == ScalarType::F32) return cast(type, pair_expr(chance(50) ? ScalarType::F16 : ScalarType::BF16, depth - 1));
        return a - b;
    }
  }

  Expr f32_expr(int depth) {
    if (depth == 0 || chance(25)) {
      switch (pick(7)) {
        case 0: {
          static constexpr float kSpecial[] = {0.0f, -0.0f, 1.0f, -1.5f, 0.1f, 1e30f, 3.0f,
                                               std::numeric_limits<float>::infinity(),
                                               -std::numeric_limits<float>::infinity(),
                                               std::numeric_limits<float>::quiet_NaN(),
                                               std::numeric_limits<float>::denorm_min(),
                                               -1e-40f,  // subnormal
                                               std::numeric_limits<float>::max()};
          std::uint32_t choice = pick(std::size(kSpecial));
          if (choice >= 7) ++coverage_.special_floats;
          return f32(kSpecial[choice]);
        }
        case 6:
          ++coverage_.written_loads;
          return out_f_[slot_ + u32(pick(4))];
        case 1: return in_f_[u32_leaf(false) % 64u];
        case 2: return any_f_.empty() ? accumulator_f_ : any_f_[pick(static_cast<std::uint32_t>(any_f_.size()))];
        case 3: return cast(ScalarType::F32, u32_leaf(false));
        case 4: return chance(50) ? cast(ScalarType::F32, half_expr(chance(50) ? ScalarType::F16 : ScalarType::BF16, 1))
                                  : extract_lane(vector_expr(ScalarType::F32, chance(50) ? 4 : 2, 0), pick(2));
        default: return in_f_[invocation_ % 64u];
      }
    }
    Expr a = f32_expr(depth - 1), b = f32_expr(depth - 1);
    switch (pick(9)) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * b;
      case 3: return min(a, b);
      case 4: return max(a, b);
      case 5: return fma(a, b, f32_expr(depth - 1));
      case 6: return select(bool_expr(depth - 1, false), a, b);
      case 7: return a * 1.0f + 0.0f;
      default: return -a;
    }
  }

  Expr bool_expr(int depth, bool uniform) {
    if (!uniform && chance(30)) {
      // Every float comparison: with NaN operands the ordered ones are false, != true.
      Expr a = f32_expr(depth), b = f32_expr(depth);
      switch (pick(5)) {
        case 0: return a < b;
        case 1: return a >= b;
        case 2: return eq(a, b);
        case 3: return ne(a, b);
        default: return ne(a, a);  // true exactly for NaN
      }
    }
    Expr a = u32_expr(depth, uniform), b = u32_expr(depth, uniform);
    switch (pick(6)) {
      case 0: return a < b;
      case 1: return a <= b;
      case 2: return eq(a, b);
      case 3: return ne(a, b);
      case 4: return logical_and(a > b, a < u32(1000));
      default: return a >= b;
    }
  }

  std::string name() { return "v" + std::to_string(counter_++); }

  std::mt19937_64 random_;
  BufferRef in_f_, in_u_, in_h_, in_b_, out_f_, out_u_, out_h_, out_b_;
  Expr invocation_, lane_, slot_, half_slot_, accumulator_u_, accumulator_f_;
  std::vector<Expr> uniform_u_, any_u_, any_f_;
  Coverage coverage_;
  bool returned_ = false;
  int loop_depth_ = 0;  // loops around the statement being generated
  int counter_ = 0;
};

/// runtime::random_buffers (floats in [-1, 1)) with about one float input element in
/// six replaced by a special value: quiet and signalling NaNs (both signs, payloads),
/// ±inf, ±0, subnormals, the largest finite. Deterministic in `seed`.
inline runtime::BufferSet random_inputs(const Program& program, std::uint64_t seed) {
  runtime::BufferSet buffers = runtime::random_buffers(program, seed);
  static constexpr std::uint32_t kF32[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa5a5a5u, 0x7f800000u,
                                           0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu,
                                           0x00400000u, 0x7f7fffffu};
  static constexpr std::uint16_t kF16[] = {0x7e00, 0xfe00, 0x7c01, 0x7d55, 0x7c00, 0xfc00,
                                           0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff};
  static constexpr std::uint16_t kBF16[] = {0x7fc0, 0xffc0, 0x7f81, 0x7fa5, 0x7f80, 0xff80,
                                            0x0000, 0x8000, 0x0001, 0x807f, 0x7f7f};
  std::mt19937_64 random(seed ^ 0x5eed5eedull);
  for (const BufferDecl& decl : program.buffers) {
    if (decl.is_output()) continue;
    runtime::HostBuffer& buffer = buffers.at(decl.name);
    for (std::size_t i = 0; i < buffer.count(); ++i) {
      if (random() % 6 != 0) continue;
      switch (decl.element) {
        case ScalarType::F32: std::memcpy(buffer.bytes.data() + 4 * i, &kF32[random() % std::size(kF32)], 4); break;
        case ScalarType::F16: std::memcpy(buffer.bytes.data() + 2 * i, &kF16[random() % std::size(kF16)], 2); break;
        case ScalarType::BF16: std::memcpy(buffer.bytes.data() + 2 * i, &kBF16[random() % std::size(kBF16)], 2); break;
        default: break;
      }
    }
  }
  return buffers;
}

/// Whether two element bit patterns of a float type are both NaN (any sign or payload).
inline bool both_nan(ScalarType type, std::uint64_t a, std::uint64_t b) {
  auto is_nan = [type](std::uint64_t bits) {
    switch (type) {
      case ScalarType::F16: return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
      case ScalarType::BF16: return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0;
      case ScalarType::F32: return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
      case ScalarType::F64:
        return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits & 0x000fffffffffffffull) != 0;
      default: return false;
    }
  };
  return is_nan(a) && is_nan(b);
}

/// "" when every output of `program` holds the same elements in `expected` and
/// `actual`, bit for bit except that any two NaNs of a float element type are equal
/// (NaN payloads are not compared); otherwise a description of the first difference.
inline std::string output_difference(const Program& program, const runtime::BufferSet& expected,
                                     const runtime::BufferSet& actual) {
  for (const BufferDecl& decl : program.buffers) {
    if (!decl.is_output()) continue;
    const std::vector<std::uint8_t>& want = expected.at(decl.name).bytes;
    const std::vector<std::uint8_t>& got = actual.at(decl.name).bytes;
    if (want.size() != got.size()) return "buffer '" + decl.name + "' changed size";
    const unsigned size = byte_size(decl.element);
    for (std::size_t offset = 0; offset + size <= want.size(); offset += size) {
      std::uint64_t a = 0, b = 0;
      std::memcpy(&a, want.data() + offset, size);
      std::memcpy(&b, got.data() + offset, size);
      if (a == b || both_nan(decl.element, a, b)) continue;
      char text[160];
      std::snprintf(text, sizeof text, "element %zu: expected 0x%llx, got 0x%llx", offset / size,
                    static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
      return "buffer '" + decl.name + "' " + text;
    }
  }
  return "";
}

}  // namespace quantc::testing
