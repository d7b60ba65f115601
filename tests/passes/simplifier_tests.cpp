// Halide-style check(input, expected) tests of the expression simplifier.
#include <catch2/catch.hpp>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "lower/passes/Passes.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

Program context() {
  ProgramBuilder program("context");
  program.input("x", ScalarType::F32, 100);
  program.input("table", ScalarType::U32, 64);
  program.output("out", ScalarType::F32, 256);
  program.launch({256, 1, 1}, {4, 1, 1});
  program.body([](Body&) {});
  return program.build();
}

void check(const Expr& input, const Expr& expected) {
  static const Program program = context();
  Expr result = lower::simplify_expr(input, program);
  INFO("input:    " << print(input));
  INFO("expected: " << print(expected));
  INFO("result:   " << print(result));
  CHECK(print(result) == print(expected));
}

Expr var(const char* name, ScalarType type = ScalarType::U32) { return Var::make(type, name); }

}  // namespace

TEST_CASE("integer literals fold with wrap-around and IR shift semantics", "[simplify]") {
  check(u32(7) + u32(5), u32(12));
  check(u32(0) - u32(1), u32(0xffffffffu));
  check(i32(-7) / i32(2), i32(-3));
  check(i32(-7) % i32(2), i32(-1));
  check(u32(1) << u32(32), u32(0));
  check(i32(-8) >> i32(40), i32(-1));
  check(i32(-8) >> i32(1), i32(-4));
  check(u32(5) / u32(0), u32(5) / u32(0));  // division by zero stays for the interpreter to report
  check(min(i32(-1), i32(3)), i32(-1));
  check(Literal::make(ScalarType::U8, 200) + Literal::make(ScalarType::U8, 100), Literal::make(ScalarType::U8, 44));
}

TEST_CASE("float literals fold exactly as the interpreter computes them (ir/Arithmetic.h)", "[simplify]") {
  check(f32(0.1f) + f32(0.2f), f32(0.1f + 0.2f));
  check(f32(1.0f) / f32(3.0f), f32(1.0f / 3.0f));
  check(f32(1.0f) / f32(0.0f), Literal::make(ScalarType::F32, 0x7f800000u));  // +inf
  Expr nan = Literal::make(ScalarType::F32, 0x7fc00001u);
  check(nan + f32(1.0f), Literal::make(ScalarType::F32, 0x7fffffffu));  // the canonical NaN, as PTX gives
  check(ne(nan, nan), boolean(true));
  check(min(f32(-0.0f), f32(0.0f)), f32(-0.0f));  // -0 orders below +0 (PTX min.f32)
  check(max(nan, f32(2.0f)), f32(2.0f));           // a NaN operand is ignored
  check(-f32(0.0f), f32(-0.0f));
  check(fma(f32(2.0f), f32(3.0f), f32(1.0f)), f32(7.0f));
  check(cast(ScalarType::I32, f32(-3.9f)), i32(-3));
  check(cast(ScalarType::U32, f32(-3.9f)), u32(0));
  check(cast(ScalarType::I32, f32(1e20f)), i32(2147483647));
  check(cast(ScalarType::U32, nan), u32(0));
  check(cast(ScalarType::F32, u32(16777217)), f32(16777216.0f));
  Expr h = Literal::from_double(ScalarType::F16, 1.5);
  check(h + h, Literal::from_double(ScalarType::F16, 3.0));
  // 2049 is not an f16: 2048 + 1 rounds to even (2048); bf16 1 + 2^-8 likewise to 1.
  check(Literal::from_double(ScalarType::F16, 2048) + Literal::from_double(ScalarType::F16, 1),
        Literal::from_double(ScalarType::F16, 2048));
  check(Literal::from_double(ScalarType::BF16, 1) + Literal::from_double(ScalarType::BF16, 1.0 / 256),
        Literal::from_double(ScalarType::BF16, 1));
  check(cast(ScalarType::BF16, f32(1.0f + 3.0f / 256)), Literal::make(ScalarType::BF16, 0x3f82));  // ties to even
}

TEST_CASE("float identities are not applied", "[simplify]") {
  Expr x = var("x", ScalarType::F32);
  check(x * 0.0f, x * 0.0f);
  check(x + 0.0f, x + 0.0f);
  check(x * 1.0f, x * 1.0f);
}

TEST_CASE("integer identities and reassociation", "[simplify]") {
  Expr x = var("x");
  check(x + 0u, x);
  check(0u + x, x);
  check(x * 1u, x);
  check(x * 0u, u32(0));
  check(x & 0xffffffffu, x);
  check(x | 0u, x);
  check((x + 3u) + 4u, x + 7u);
  check((x * 3u) * 4u, x * 12u);
  check(3u + (x + 4u), x + 7u);
  check((x - 3u) + 5u, x - 4294967294u);
  check((x + 5u) - 3u, x + 2u);
  check(x / 32u, x >> 5u);
  check(x % 32u, x & 31u);
  check(i32(7) * var("s", ScalarType::I32), var("s", ScalarType::I32) * i32(7));
  check(var("s", ScalarType::I32) / i32(4), var("s", ScalarType::I32) / i32(4));  // signed: no shift
  check(Load::make(ScalarType::U32, "w", u32(0)) * 0u, Load::make(ScalarType::U32, "w", u32(0)) * 0u);
}

TEST_CASE("select and logic with constant conditions", "[simplify]") {
  Expr x = var("x"), y = var("y");
  check(select(boolean(true), x, y), x);
  check(select(boolean(false), x, y), y);
  check(select(x < y, x, x), x);
  check(logical_and(boolean(true), x < y), x < y);
  check(logical_or(x < y, boolean(true)), boolean(true));
  check(!!(x < y), x < y);
}

TEST_CASE("comparisons decided by ranges of builtins", "[simplify]") {
  check(local_id(0) < 256u, boolean(true));
  check((local_id(0) % 32u) < 32u, boolean(true));
  check((local_id(0) & 31u) >= 32u, boolean(false));
  check(workgroup_id(0) < 4u, boolean(true));
  check(workgroup_id(0) < 3u, workgroup_id(0) < 3u);
  check(invocation_id(0) <= 1023u, boolean(true));
  check(local_id(1), u32(0));
  check((local_id(0) / 32u) / 8u, u32(0));
  check((local_id(0) & 31u) & 63u, local_id(0) & 31u);
  check(min(local_id(0) & 31u, u32(40)), local_id(0) & 31u);
  check(BufferLength::make("x"), u32(100));
  check(subgroup_size(), u32(32));
}

TEST_CASE("select with structurally equal branches drops the condition only when it cannot trap", "[simplify]") {
  Expr x = var("x"), y = var("y");
  check(select(x < y, x + 1u, x + 1u), x + 1u);  // equal trees, different handles
  // table[local_id % 64] is provably in bounds (64 elements): the condition may go.
  check(select(Load::make(ScalarType::U32, "table", local_id(0) % 64u) > 3u, y, y), y);
  // invocation_id reaches 1023: the load may fail, so it stays for the interpreter to report.
  Expr risky = Load::make(ScalarType::U32, "table", invocation_id(0)) > 3u;
  check(select(risky, y, y), select(risky, y, y));
  check(select(x < y, boolean(true), boolean(false)), x < y);
  check(select(x < y, boolean(false), boolean(true)), !(x < y));
}

TEST_CASE("identities left over by other rewrites and operands equal to each other", "[simplify]") {
  Expr x = var("x");
  check((x * 3u) * 0xAAAAAAABu, x);  // 3 * 0xAAAAAAAB wraps to 1: x * 1
  check((x + 5u) - 5u, x);            // x + 0
  check(x - x, u32(0));
  check(x ^ x, u32(0));
  check(x & x, x);
  check(x | x, x);
  check(min(x, x), x);
  check(max(x + 1u, x + 1u), x + 1u);
  check(eq(x, x), boolean(true));
  check(x < x, boolean(false));
  check(x >= x, boolean(true));
  check(u32(0) << x, u32(0));
  check(u32(0) >> x, u32(0));
  // A trapping operand keeps its evaluation.
  Expr load = Load::make(ScalarType::U32, "table", invocation_id(0));
  check(load - load, load - load);
  check(var("f", ScalarType::F32) - var("f", ScalarType::F32), var("f", ScalarType::F32) - var("f", ScalarType::F32));
}

TEST_CASE("comparisons decided by ranges of masks and provably safe loads", "[simplify]") {
  Expr lane = local_id(0) & 31u;
  check((lane & 0xFFFFFFF8u) < 32u, boolean(true));  // x & ~7 keeps x's bound ...
  check((lane & 0xFFFFFFF8u) <= 24u, boolean(true));  // ... rounded down to a multiple of 8
  check((lane & 0xFFFFFFF8u) < 24u, (local_id(0) & 24u) < 24u);  // the masks combine; 24 is possible
  check((lane & 7u) < 8u, boolean(true));
  check((local_id(0) & 0xFFFFFFF0u) >= 241u, boolean(false));  // at most 240
  check((Load::make(ScalarType::U32, "table", local_id(0) & 63u) & 7u) < 8u, boolean(true));
  Expr risky = Load::make(ScalarType::U32, "table", invocation_id(0));
  check((risky & 7u) < 8u, (risky & 7u) < 8u);
}
