// A seeded random program generator feeding every pass and pipeline: the reference
// interpreter's outputs before and after must be identical bit for bit. Programs are
// well typed, never fail at run time (indices are reduced modulo the buffer size,
// divisors are non-zero literals) and put subgroup operations only under uniform control
// (conditions and loop bounds built from workgroup_id, literals and uniform variables).
// On a mismatch the failing program and configuration are printed.
// QUANTC_RANDOM_PROGRAMS=N changes the number of programs (default 5000).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "lower/PassManager.h"
#include "runtime/backends/reference/Interpreter.h"
#include "TestPrograms.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

class RandomProgram {
 public:
  explicit RandomProgram(std::uint64_t seed) : random_(seed) {}

  Program generate() {
    ProgramBuilder program("random");
    in_f_ = program.input("in_f", ScalarType::F32, 64);
    in_u_ = program.input("in_u", ScalarType::U32, 64);
    out_f_ = program.output("out_f", ScalarType::F32, 128);
    out_u_ = program.output("out_u", ScalarType::U32, 128);
    program.launch({64, 1, 1}, {2, 1, 1});
    program.body([&](Body& body) {
      invocation_ = body.let("inv", invocation_id(0));
      lane_ = body.let("lane", local_id(0) % 32u);
      accumulator_u_ = body.let("acc_u", u32(0));
      accumulator_f_ = body.let("acc_f", f32(0.0f));
      statements(body, 0, true, 3 + pick(6));
      body.store(out_u_, invocation_, accumulator_u_);
      body.store(out_f_, invocation_, accumulator_f_);
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
        else body.store(out_u_, invocation_, u32_expr(2, false));
        break;
      case 5:
        body.store(out_f_, (invocation_ + u32_expr(1, false)) % 128u, f32_expr(2));
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
          body.store(out_u_, invocation_, u32_expr(2, false) + accumulator_u_);
        }
        break;
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
    int choice = static_cast<int>(pick(uniform ? 4 : 7));
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
      default: return a * u32(1u << pick(6)) + b % 32u;
    }
  }

  Expr f32_expr(int depth) {
    if (depth == 0 || chance(25)) {
      switch (pick(5)) {
        case 0: {
          static constexpr float kSpecial[] = {0.0f, -0.0f, 1.0f, -1.5f, 0.1f, 1e30f, 3.0f};
          return f32(kSpecial[pick(std::size(kSpecial))]);
        }
        case 1: return in_f_[u32_leaf(false) % 64u];
        case 2: return any_f_.empty() ? accumulator_f_ : any_f_[pick(static_cast<std::uint32_t>(any_f_.size()))];
        case 3: return cast(ScalarType::F32, u32_leaf(false));
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
    if (!uniform && chance(30)) return f32_expr(depth) < f32_expr(depth);
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
  BufferRef in_f_, in_u_, out_f_, out_u_;
  Expr invocation_, lane_, accumulator_u_, accumulator_f_;
  std::vector<Expr> uniform_u_, any_u_, any_f_;
  bool returned_ = false;
  int loop_depth_ = 0;  // loops around the statement being generated
  int counter_ = 0;
};

std::vector<lower::PassOptions> configurations() {
  std::vector<lower::PassOptions> result;
  for (const lower::PassInfo& pass : lower::registered_passes()) {
    lower::PassOptions options;
    options.passes = {pass.name};
    result.push_back(options);
  }
  for (auto level : {lower::OptimizationLevel::O1, lower::OptimizationLevel::O2}) {
    lower::PassOptions options;
    options.level = level;
    result.push_back(options);
  }
  for (lower::PassOptions& options : result) options.verify_each = true;
  return result;
}

}  // namespace

TEST_CASE("random programs keep their results through every pass and pipeline", "[random]") {
  int programs = 5000;
  if (const char* count = std::getenv("QUANTC_RANDOM_PROGRAMS")) programs = std::atoi(count);
  std::vector<lower::PassOptions> options_list = configurations();
  int checked = 0;
  for (int seed = 0; seed < programs; ++seed) {
    Program program = RandomProgram(static_cast<std::uint64_t>(seed)).generate();
    runtime::BufferSet expected = runtime::random_buffers(program, static_cast<std::uint64_t>(seed));
    runtime::BufferSet inputs = expected;
    runtime::reference::run(program, expected);
    for (const lower::PassOptions& options : options_list) {
      Program optimized = lower::run_passes(program, options);
      runtime::BufferSet actual = inputs;
      runtime::reference::run(optimized, actual);
      bool same = true;
      for (const auto& [name, buffer] : expected) same &= actual.at(name).bytes == buffer.bytes;
      if (!same) {
        FAIL_CHECK("seed " << seed << ", "
                           << (options.passes.empty() ? "pipeline -O" + std::to_string(static_cast<int>(options.level))
                                                      : "--passes=" + options.passes[0])
                           << " changed the results\n--- before ---\n"
                           << print(program) << "--- after ---\n"
                           << print(optimized));
        return;
      }
      ++checked;
    }
  }
  CHECK(checked == programs * static_cast<int>(options_list.size()));
}

TEST_CASE("passes marked idempotent change nothing on their own output, for random programs", "[random]") {
  // The pass manager skips an idempotent pass on its own output; a pass that found more
  // to do there would make -O2 stop early.
  int programs = 1000;
  if (const char* count = std::getenv("QUANTC_RANDOM_PROGRAMS")) programs = std::min(programs, std::atoi(count));
  for (int seed = 0; seed < programs; ++seed) {
    Program program = RandomProgram(static_cast<std::uint64_t>(seed)).generate();
    std::vector<std::string> failures = testing::idempotence_failures(program);
    if (!failures.empty()) {
      FAIL_CHECK("seed " << seed << ": a second " << failures.front() << " changed its own output\n" << print(program));
      return;
    }
  }
}
