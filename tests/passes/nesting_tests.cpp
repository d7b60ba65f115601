// Deeply nested and very long programs: the nesting limit (ir::kMaxNestingDepth) is
// enforced with one message by the parser and by every node factory, and a program at
// the limit goes through every recursive walker -- printer, parser, verifier, each pass,
// the -O2 pipeline, legalization + instruction selection, the reference interpreter --
// on a stack a fraction of the usual 8 MiB, so the limit leaves a wide margin.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <pthread.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Registry.h"
#include "lower/InstructionSelection.h"
#include "lower/Legalize.h"
#include "lower/PassManager.h"
#include "ptx/Target.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

/// Runs `work` on a thread with a `stack_bytes` stack; returns the exception message it
/// threw ("" when none). A stack overflow crashes the test binary, which ctest reports.
std::string on_stack(std::size_t stack_bytes, const std::function<void()>& work) {
  struct Job {
    const std::function<void()>* work;
    std::string error;
  } job{&work, {}};
  pthread_attr_t attributes;
  REQUIRE(pthread_attr_init(&attributes) == 0);
  REQUIRE(pthread_attr_setstacksize(&attributes, stack_bytes) == 0);
  pthread_t thread;
  auto body = [](void* argument) -> void* {
    Job& job = *static_cast<Job*>(argument);
    try {
      (*job.work)();
    } catch (const std::exception& error) {
      job.error = error.what();
      if (job.error.empty()) job.error = "exception";
    }
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attributes, body, &job) == 0);
  REQUIRE(pthread_join(thread, nullptr) == 0);
  pthread_attr_destroy(&attributes);
  return job.error;
}

/// The stack the at-limit programs must fit in. The default (2 MiB, a quarter of the usual
/// 8 MiB main-thread stack) pins a 4x margin; QUANTC_NESTING_STACK_KIB overrides it to
/// measure the real need of a build (e.g. under AddressSanitizer).
std::size_t test_stack_bytes() {
  if (const char* text = std::getenv("QUANTC_NESTING_STACK_KIB"); text && *text) {
    return std::strtoull(text, nullptr, 10) * 1024;
  }
#if defined(__SANITIZE_ADDRESS__)
  return std::size_t{8} << 20;  // ASan's frames are several times larger: the plain 8 MiB
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return std::size_t{8} << 20;
#endif
#endif
  return std::size_t{2} << 20;
}

constexpr const char* kHeader =
    "program \"deep\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
    "buffer @0 x: read_only u32[8]\n"
    "buffer @1 f: read_only f32[8]\n"
    "buffer @2 out: read_write u32[8]\n"
    "buffer @3 fout: read_write f32[8]\n";

std::string repeat(const std::string& text, std::size_t count) {
  std::string result;
  result.reserve(text.size() * count);
  for (std::size_t i = 0; i < count; ++i) result += text;
  return result;
}

/// `{ out[0u32] = <expr> }` where the expression has `operators` nested operators.
std::string nested_sum(std::size_t operators) {
  return std::string(kHeader) + "{\n  out[0u32] = " + repeat("(", operators) + "x[1u32]" +
         repeat(" + 1u32)", operators) + "\n}\n";
}

/// `if` statements nested `count` deep around one store.
std::string nested_ifs(std::size_t count) {
  std::string text = std::string(kHeader) + "{\n  let v: u32 = x[0u32]\n";
  for (std::size_t i = 0; i < count; ++i) text += "  if (v < " + std::to_string(1000000 - i) + "u32) {\n";
  text += "  out[(v & 7u32)] = (v + 1u32)\n";
  text += repeat("  }\n", count);
  return text + "}\n";
}

/// One-iteration loops nested `count` deep around an accumulation.
std::string nested_loops(std::size_t count) {
  std::string text = std::string(kHeader) + "{\n  let acc: u32 = 0u32\n";
  for (std::size_t i = 0; i < count; ++i) {
    text += "  for i" + std::to_string(i) + ": u32 in 0u32 .. 1u32 {\n";
  }
  text += "  acc = (acc + 1u32)\n";
  text += repeat("  }\n", count);
  return text + "  out[0u32] = acc\n}\n";
}

/// `open` `count` times, `leaf`, `close` `count` times: nested calls such as not(not(...)).
std::string nested_calls(const std::string& open, const std::string& leaf, const std::string& close, std::size_t count,
                         const std::string& target) {
  return std::string(kHeader) + "{\n  " + target + " = " + repeat(open, count) + leaf + repeat(close, count) + "\n}\n";
}

/// An f32 multiply-add chain (contract_fma's input) `count` operators deep.
std::string nested_multiply_adds(std::size_t pairs) {
  return std::string(kHeader) + "{\n  let a: f32 = f[0u32]\n  fout[0u32] = " + repeat("((", pairs) + "f[1u32]" +
         repeat(" * a) + 0.5f32)", pairs) + "\n}\n";
}

/// Statement depth plus expression depth: `ifs` nested ifs around an expression
/// `operators` deep.
std::string ifs_around_expression(std::size_t ifs, std::size_t operators) {
  std::string text = std::string(kHeader) + "{\n  let v: u32 = x[0u32]\n";
  for (std::size_t i = 0; i < ifs; ++i) text += "  if (v < " + std::to_string(1000000 - i) + "u32) {\n";
  text += "  out[1u32] = " + repeat("(", operators) + "v" + repeat(" * 3u32)", operators) + "\n";
  text += repeat("  }\n", ifs);
  return text + "}\n";
}

/// The depth of the deepest node of `program` (its entry's depth).
std::uint32_t depth_of(const Program& program) { return program.entry.get()->nesting_depth(); }

/// Everything that walks a program recursively, on `program`: printer + parser round
/// trip, verifier, each pass alone, the -O2 pipeline, legalization and instruction
/// selection for two targets, the reference interpreter.
void walk_everything(const Program& program) {
  const std::string printed = print(program);
  const Program reparsed = parse_program(printed, "printed");
  if (print(reparsed) != printed) throw std::runtime_error("print/parse round trip changed the program");
  verify_or_throw(reparsed, VerifyOptions{});
  for (const lower::PassInfo& pass : lower::registered_passes()) {
    lower::PassOptions options;
    options.passes = {pass.name};
    options.verify_each = true;
    lower::run_passes(program, options);
  }
  lower::PassOptions o2;
  o2.verify_each = true;
  const Program optimized = lower::run_passes(program, o2);
  for (const char* target : {"sm_75", "sm_90"}) {
    const ptx::Target parsed = ptx::parse_target(target);
    lower::select_instructions(lower::legalize(program, parsed), parsed);
    lower::select_instructions(lower::legalize(optimized, parsed), parsed);
  }
  runtime::BufferSet buffers = runtime::random_buffers(program, 1);
  runtime::reference::run(program, buffers);
  runtime::BufferSet optimized_buffers = runtime::random_buffers(optimized, 1);
  runtime::reference::run(optimized, optimized_buffers);
}

struct DeepCase {
  std::string name;
  std::function<std::string(std::size_t)> text;  // the program at a size parameter
  std::size_t at_limit;                          // the parameter that reaches kMaxNestingDepth exactly
};

/// Each shape, with the size that makes its entry exactly kMaxNestingDepth deep.
/// (Entry Block 1 + Store 1 + operators + Load 1 + Literal 1 for a sum; an `if` costs
/// its If and its Block.)
std::vector<DeepCase> deep_cases() {
  const std::size_t d = kMaxNestingDepth;
  return {
      {"nested sum", nested_sum, d - 4},
      {"nested ifs", nested_ifs, (d - 4) / 2},
      {"nested loops", nested_loops, (d - 4) / 2},
      {"nested not", [](std::size_t n) { return nested_calls("not(", "x[1u32]", ")", n, "out[0u32]"); }, d - 4},
      {"nested neg", [](std::size_t n) { return nested_calls("neg(", "f[1u32]", ")", n, "fout[0u32]"); }, d - 4},
      {"nested min", [](std::size_t n) { return nested_calls("min(", "x[1u32]", ", 7u32)", n, "out[0u32]"); }, d - 4},
      // The innermost select's condition (a comparison of a load) is one level deeper than its value.
      {"nested select",
       [](std::size_t n) { return nested_calls("select((x[0u32] < 4u32), ", "x[1u32]", ", 7u32)", n, "out[0u32]"); },
       d - 5},
      {"nested fma",
       [](std::size_t n) { return nested_calls("fma(f[0u32], f[1u32], ", "1.0f32", ")", n, "fout[0u32]"); }, d - 4},
      {"nested multiply-add", nested_multiply_adds, (d - 4) / 2},
      // d/4 ifs (d/2 + 1 levels with their Blocks and the entry), a store, then the expression.
      {"ifs around an expression", [=](std::size_t n) { return ifs_around_expression(d / 4, n); }, d / 2 - 3},
  };
}

}  // namespace

TEST_CASE("nesting beyond kMaxNestingDepth is a parse error naming the depth and the fix", "[nesting]") {
  for (const DeepCase& shape : deep_cases()) {
    DYNAMIC_SECTION(shape.name) {
      // One level over the limit, and far over (where the parser used to overflow its stack).
      for (std::size_t size : {shape.at_limit + 1, shape.at_limit * 60}) {
        const std::string text = shape.text(size);
        try {
          parse_program(text, "deep.qir");
          FAIL("parsed a program over the nesting limit");
        } catch (const ParseError& error) {
          CHECK_THAT(error.what(), Catch::StartsWith("deep.qir:") &&
                                       Catch::Contains(fmt::format("IR nested {} levels deep; quantc accepts at most {}",
                                                                   kMaxNestingDepth + 1, kMaxNestingDepth)) &&
                                       Catch::Contains("Fix: bind subexpressions to variables with let"));
        }
      }
    }
  }
}

TEST_CASE("a program exactly kMaxNestingDepth deep goes through every walker on a quarter of an 8 MiB stack",
          "[nesting]") {
  const std::size_t stack = test_stack_bytes();
  for (const DeepCase& shape : deep_cases()) {
    DYNAMIC_SECTION(shape.name) {
      const std::string text = shape.text(shape.at_limit);
      Program program;
      REQUIRE(on_stack(stack, [&] { program = parse_program(text, "deep.qir"); }) == "");
      REQUIRE(depth_of(program) == kMaxNestingDepth);
      INFO("stack: " << stack / 1024 << " KiB");
      CHECK(on_stack(stack, [&] { walk_everything(program); }) == "");
      // Destroying the deepest tree recurses through the node destructors too.
      CHECK(on_stack(stack, [&] { Program dropped = std::move(program); }) == "");
    }
  }
}

TEST_CASE("the node factories refuse a node deeper than kMaxNestingDepth", "[nesting]") {
  const std::string expected =
      fmt::format("IR nested {} levels deep; quantc accepts at most {}", kMaxNestingDepth + 1, kMaxNestingDepth);
  Expr expr = Var::make(ScalarType::U32, "v");
  for (std::uint32_t depth = 1; depth < kMaxNestingDepth; ++depth) expr = expr + Literal::u32(1);
  CHECK(expr.get()->nesting_depth() == kMaxNestingDepth);
  CHECK_THROWS_WITH(expr + Literal::u32(1), Catch::Contains(expected));
  CHECK_THROWS_WITH(Unary::make(UnaryOp::Not, expr), Catch::Contains(expected));
  CHECK_THROWS_WITH(Let::make("w", expr), Catch::Contains(expected));
  CHECK_THROWS_WITH(Store::make("out", Literal::u32(0), expr), Catch::Contains(expected));
  CHECK_THROWS_WITH(Select::make(Literal::boolean(true), expr, expr), Catch::Contains(expected));

  Node node = Store::make("out", Literal::u32(0), Literal::u32(1));  // depth 2
  Expr cond = Literal::boolean(true);
  std::uint32_t ifs = 0;
  while (node.get()->nesting_depth() + 2 <= kMaxNestingDepth) {
    node = If::make(cond, node);  // If + its Block
    ++ifs;
  }
  CHECK(ifs == (kMaxNestingDepth - 2) / 2);
  const std::uint32_t depth = node.get()->nesting_depth();
  INFO("depth " << depth);
  if (depth + 1 <= kMaxNestingDepth) node = Block::make({node});
  CHECK(node.get()->nesting_depth() == kMaxNestingDepth);
  CHECK_THROWS_WITH(Block::make({node}), Catch::Contains(expected));
  CHECK_THROWS_AS(Loop::make("i", Literal::u32(0), Literal::u32(1), node), IRError);
  CHECK_THROWS_AS(Region::make("op", node), IRError);

  // The builder reports it as build() does any other ill-formed program.
  ProgramBuilder builder("deep");
  BufferRef x = builder.input("x", ScalarType::U32, 8);
  BufferRef out = builder.output("out", ScalarType::U32, 8);
  builder.launch({32, 1, 1}, {1, 1, 1});
  CHECK_THROWS_WITH(builder.body([&](Body& body) {
    Expr sum = x[Literal::u32(0)];
    for (std::uint32_t i = 0; i < kMaxNestingDepth; ++i) sum = sum + Literal::u32(1);
    body.store(out, Literal::u32(0), sum);
  }),
                    Catch::Contains(expected));
}

TEST_CASE("every shipped op is far shallower than kMaxNestingDepth at every stage", "[nesting]") {
  std::uint32_t deepest = 0;
  std::string where;
  for (const ops::OpInfo& op : ops::OpRegistry::builtin().all()) {
    for (const ops::OpArgs& args : op.test_shapes) {
      const Program built = op.build(args);
      const Program optimized = lower::run_passes(built, {});
      for (const Program* program : {&built, &optimized}) {
        const Program legalized = lower::legalize(*program, ptx::parse_target("sm_75"));
        for (const Program* stage : {program, &legalized}) {
          if (depth_of(*stage) > deepest) {
            deepest = depth_of(*stage);
            where = op.name;
          }
        }
      }
    }
  }
  INFO("deepest: " << deepest << " levels (" << where << ")");
  CHECK(deepest > 5);
  CHECK(deepest * 4 <= kMaxNestingDepth);  // room for larger generated kernels
}

TEST_CASE("long flat programs of many statements or let bindings go through every walker", "[nesting]") {
  SECTION("a chain of lets, each using the one before, indexing a store and a load") {
    // The value-range analysis once resolved each let through the one before it
    // recursively, one chain link deep on the stack per let (about 5,000 links filled
    // this 2 MiB stack), and the uniformity analysis settled one link per walk.
    const std::size_t count = 30000;
    std::string text = std::string(kHeader) + "{\n  let a0: u32 = local_id.x\n";
    for (std::size_t i = 1; i < count; ++i) {
      text += fmt::format("  let a{}: u32 = (a{} + 1u32)\n", i, i - 1);
    }
    text += fmt::format("  if (a{0} < 8u32) {{\n    out[a{0}] = 1u32\n  }}\n", count - 1);
    text += fmt::format("  for i: u32 in 0u32 .. 4u32 {{\n    out[i] = x[(a{} & 7u32)]\n  }}\n", count - 1);
    text += "}\n";
    Program program;
    REQUIRE(on_stack(test_stack_bytes(), [&] { program = parse_program(text, "lets.qir"); }) == "");
    CHECK(on_stack(test_stack_bytes(), [&] { walk_everything(program); }) == "");
  }
  SECTION("a chain of lets inside a loop that sidecar hoisting inlines into a load's index") {
    // hoist_sidecars inlines the loop's lets into load indices: it once recursed down the
    // whole chain. A chain too deep to inline leaves the load in the loop.
    std::string text = std::string(kHeader) + "{\n  let acc: f32 = 0.0f32\n  for c: u32 in 0u32 .. 16u32 {\n"
                       "    let k0: u32 = (c / 4u32)\n";
    for (std::size_t i = 1; i < 30000; ++i) text += fmt::format("    let k{}: u32 = (k{} + 0u32)\n", i, i - 1);
    text += "    acc = (acc + (f[(c & 7u32)] * f[(k29999 & 7u32)]))\n  }\n  fout[0u32] = acc\n}\n";
    Program program;
    REQUIRE(on_stack(test_stack_bytes(), [&] { program = parse_program(text, "chain.qir"); }) == "");
    CHECK(on_stack(test_stack_bytes(), [&] { walk_everything(program); }) == "");
  }
  SECTION("lets that each use the one before twice") {
    // Inlined naively, k60 is a tree of 2^60 nodes.
    std::string text = std::string(kHeader) + "{\n  let acc: f32 = 0.0f32\n  for c: u32 in 0u32 .. 16u32 {\n"
                       "    let k0: u32 = (c / 4u32)\n";
    for (int i = 1; i <= 60; ++i) text += fmt::format("    let k{}: u32 = (k{} + k{})\n", i, i - 1, i - 1);
    text += "    acc = (acc + (f[(c & 7u32)] * f[(k60 & 7u32)]))\n  }\n  fout[0u32] = acc\n}\n";
    Program program;
    REQUIRE(on_stack(test_stack_bytes(), [&] { program = parse_program(text, "doubling.qir"); }) == "");
    CHECK(on_stack(test_stack_bytes(), [&] { walk_everything(program); }) == "");
  }
  SECTION("a block of stores") {
    const std::size_t count = 100000;
    std::string text = std::string(kHeader) + "{\n";
    for (std::size_t i = 0; i < count; ++i) text += fmt::format("  out[{}u32] = {}u32\n", i % 8, i);
    text += "}\n";
    Program program;
    REQUIRE(on_stack(test_stack_bytes(), [&] { program = parse_program(text, "stores.qir"); }) == "");
    CHECK(on_stack(test_stack_bytes(), [&] { walk_everything(program); }) == "");
  }
}
