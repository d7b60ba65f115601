// The value-range and uniformity analyses, and the verifier's uniformity check.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "ir/analysis/Uniformity.h"
#include "ir/analysis/ValueRange.h"
#include "ir/ops/Registry.h"

using namespace quantc;
using namespace quantc::ir;

namespace {
Program launch_only(std::array<std::uint32_t, 3> size, std::array<std::uint32_t, 3> count) {
  ProgramBuilder program("launch");
  program.input("x", ScalarType::F32, 64);
  program.output("out", ScalarType::F32, 64);
  program.launch(size, count);
  program.body([](Body&) {});
  return program.build();
}
}  // namespace

TEST_CASE("value ranges of launch builtins and arithmetic", "[analysis]") {
  Program program = launch_only({256, 1, 1}, {10, 1, 1});
  analysis::RangeEnvironment environment(program);
  auto range = [&](const Expr& expr) { return analysis::range_of(expr, environment); };
  CHECK(range(local_id(0)) == analysis::ValueRange{0, 255, 1});
  CHECK(range(workgroup_id(0)) == analysis::ValueRange{0, 9, 1});
  CHECK(range(invocation_id(0)).max == 2559);
  CHECK(range(local_id(0) % 32u).max == 31);
  CHECK(range(local_id(0) / 32u).max == 7);
  CHECK(range(workgroup_id(0) * 8u + local_id(0) / 32u).max == 79);
  CHECK(range(workgroup_id(0) * 32u).multiple_of == 32);
  CHECK(range(local_id(0) & 0xFFFFFFF8u).multiple_of == 8);
  // x & ~(2^k - 1) rounds x down: bounds are the bounds' images (255 -> 248, 31 -> 24).
  CHECK(range(local_id(0) & 0xFFFFFFF8u) == analysis::ValueRange{0, 248, 8});
  CHECK(range((local_id(0) % 32u) & 0xFFFFFFF8u) == analysis::ValueRange{0, 24, 8});
  CHECK(range((local_id(0) + 9u) & 0xFFFFFFF8u) == analysis::ValueRange{8, 264, 8});
  CHECK(range(local_id(0) & 7u) == analysis::ValueRange{0, 7, 1});
  CHECK(range((local_id(0) % 32u) & 0x30u).max == 16);  // never above the mask, a multiple of 16
  CHECK(range(local_id(0) - 1u) == analysis::ValueRange::full(ScalarType::U32));  // may wrap
  CHECK(range(u32(0xffffffffu) * local_id(0)) == analysis::ValueRange::full(ScalarType::U32));
  // x % m is x only while x < m: at x == m it wraps to 0, below the dividend's minimum.
  CHECK(range(local_id(0) % 256u) == analysis::ValueRange{0, 255, 1});
  CHECK(range((local_id(0) + 1u) % 256u) == analysis::ValueRange{0, 255, 1});
  environment.push("lane", analysis::ValueRange{0, 31, 1});
  CHECK(range(Var::make(ScalarType::U32, "lane") + 1u).max == 32);
}

TEST_CASE("guards and loop bounds give facts", "[analysis]") {
  Program program = launch_only({256, 1, 1}, {10, 1, 1});
  analysis::RangeEnvironment environment(program);
  Expr v = Var::make(ScalarType::U32, "v");
  environment.push("v", analysis::ValueRange{0, 1000, 1});
  auto facts = analysis::guard_facts(logical_and(v < 20u, local_id(0) < 3u), environment);
  REQUIRE(facts.size() == 1);
  CHECK(facts[0].second.max == 19);
  Loop loop("k", u32(2), u32(9), Block::make());
  auto loop_facts = analysis::loop_facts(loop, environment);
  REQUIRE(loop_facts.size() == 1);
  CHECK(loop_facts[0].second == analysis::ValueRange{2, 8, 1});
}

TEST_CASE("uniformity of expressions", "[analysis]") {
  Program wide = launch_only({256, 1, 1}, {4, 1, 1});
  analysis::Uniformity uniformity(wide);
  CHECK(uniformity.is_uniform(workgroup_id(0) * 8u + local_id(0) / 32u));
  CHECK(uniformity.is_uniform(local_id(0) >> 5u));
  CHECK(uniformity.is_uniform(invocation_id(0) / 64u));
  CHECK_FALSE(uniformity.is_uniform(local_id(0) / 16u));
  CHECK_FALSE(uniformity.is_uniform(local_id(0) % 32u));
  CHECK(uniformity.is_uniform(Load::make(ScalarType::F32, "x", workgroup_id(0))));
  CHECK_FALSE(uniformity.is_uniform(Load::make(ScalarType::F32, "out", workgroup_id(0))));  // writable
  CHECK_FALSE(uniformity.is_uniform(Load::make(ScalarType::F32, "x", local_id(0))));
  CHECK(uniformity.is_uniform(subgroup_add(Load::make(ScalarType::F32, "x", local_id(0) % 64u))));
  CHECK(uniformity.is_uniform(subgroup_shuffle(local_id(0), u32(0))));
  CHECK(uniformity.is_uniform(local_id(1)));
  Program odd = launch_only({48, 2, 1}, {1, 1, 1});  // subgroups straddle rows
  analysis::Uniformity odd_uniformity(odd);
  CHECK_FALSE(odd_uniformity.is_uniform(local_id(0) / 32u));
  CHECK_FALSE(odd_uniformity.is_uniform(local_id(1)));
}

TEST_CASE("variables: uniform lets, divergent assignments, loop-carried values", "[analysis]") {
  ProgramBuilder builder("vars");
  BufferRef x = builder.input("x", ScalarType::F32, 64);
  BufferRef out = builder.output("out", ScalarType::F32, 64);
  builder.launch({64, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr warp = body.let("warp", local_id(0) / 32u);
    Expr counter = body.let("counter", u32(0));
    Expr mixed = body.let("mixed", u32(0));
    body.loop("k", u32(0), u32(4), [&](Body& loop, Expr k) {
      loop.assign(counter, counter + k);
      loop.if_then(local_id(0) < 3u, [&](Body& then) { then.assign(mixed, u32(1)); });
    });
    body.store(out, local_id(0), x[warp] + cast(ScalarType::F32, counter + mixed));
  });
  Program program = builder.build();
  analysis::Uniformity uniformity(program);
  CHECK(uniformity.is_uniform_variable("warp"));
  CHECK(uniformity.is_uniform_variable("counter"));
  CHECK(uniformity.is_uniform_variable("k"));
  CHECK_FALSE(uniformity.is_uniform_variable("mixed"));
}

TEST_CASE("every registered op passes the verifier's uniformity check", "[analysis]") {
  for (const ops::OpInfo& op : ops::OpRegistry::builtin().all()) {
    for (const ops::OpArgs& args : op.test_shapes) {
      Program program = op.build(args);
      analysis::Uniformity uniformity(program);
      CHECK(uniformity.divergent_subgroup_ops().empty());
      CHECK(verify(program).empty());
    }
  }
}

TEST_CASE("the verifier rejects subgroup operations under divergent control, naming op and reason", "[analysis]") {
  const char* text = R"(program "p" workgroup_size(64, 1, 1) workgroup_count(1, 1, 1)
buffer @0 x: read_only f32[64]
buffer @1 out: read_write f32[64]
{
  let lane: u32 = (local_id.x % 32u32)
  if (lane < 16u32) {
    out[local_id.x] = subgroup_add(x[lane])
  }
  for k: u32 in 0u32 .. lane {
    out[k] = subgroup_shuffle(x[k], 0u32)
  }
  if (lane == 3u32) {
    return
  }
  let total: u32 = subgroup_ballot(true)
}
)";
  Program program = parse_program(text);
  std::vector<std::string> problems = verify(program);
  REQUIRE(problems.size() == 3);
  CHECK(problems[0] ==
        "subgroup operation `subgroup_add(x[lane])` may run with part of the subgroup inactive: it sits under `if "
        "(lane < 16u32)` whose condition is not subgroup-uniform; move it out of the divergent control flow or make "
        "the condition subgroup-uniform");
  CHECK(problems[1].find("`subgroup_shuffle(x[k], 0u32)`") != std::string::npos);
  CHECK(problems[1].find("loop `k` whose bounds 0u32 .. lane are not subgroup-uniform") != std::string::npos);
  CHECK(problems[2].find("`subgroup_ballot(true)`") != std::string::npos);
  CHECK(problems[2].find("a lane may have returned earlier") != std::string::npos);
}

TEST_CASE("uniformity settles along chains of any length and never gives up optimistically", "[analysis]") {
  // A lane-dependent value passed down 200 lets: the analysis once learnt one link per
  // walk and stopped after 64 walks with the last links still taken as uniform, so the
  // verifier accepted a shuffle under a divergent `if`.
  auto chain = [](int links, const std::string& first) {
    std::string text = "program \"p\" workgroup_size(64, 1, 1) workgroup_count(1, 1, 1)\n"
                       "buffer @0 x: read_only f32[64]\nbuffer @1 out: read_write f32[64]\n{\n"
                       "  let a0: u32 = " + first + "\n";
    for (int i = 1; i <= links; ++i) text += fmt::format("  let a{}: u32 = (a{} + 1u32)\n", i, i - 1);
    text += fmt::format("  if (a{} < 16u32) {{\n    out[0u32] = subgroup_shuffle(x[0u32], 0u32)\n  }}\n}}\n", links);
    return parse_program(text);
  };
  for (int links : {1, 63, 64, 65, 200}) {
    INFO(links << " links");
    const Program divergent = chain(links, "local_id.x");
    analysis::Uniformity uniformity(divergent);
    CHECK_FALSE(uniformity.is_uniform_variable(fmt::format("a{}", links)));
    const std::vector<std::string> problems = verify(divergent);
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::Contains("subgroup_shuffle") && Catch::Contains("not subgroup-uniform"));
    // The same chain from a uniform value is accepted.
    CHECK(verify(chain(links, "workgroup_id.x")).empty());
  }

  // Assignments chained backwards through a loop demote one link per walk: 100 links do
  // not settle within the walk limit, and then every variable is taken as divergent.
  std::string text = "program \"p\" workgroup_size(64, 1, 1) workgroup_count(1, 1, 1)\n"
                     "buffer @0 x: read_only f32[64]\nbuffer @1 out: read_write f32[64]\n{\n";
  for (int i = 0; i <= 100; ++i) text += fmt::format("  let b{}: u32 = 0u32\n", i);
  text += "  for k: u32 in 0u32 .. 4u32 {\n";
  for (int i = 0; i < 100; ++i) text += fmt::format("    b{} = b{}\n", i, i + 1);
  text += "    b100 = local_id.x\n  }\n  if (b0 < 16u32) {\n    out[0u32] = subgroup_shuffle(x[0u32], 0u32)\n  }\n}\n";
  const std::vector<std::string> problems = verify(parse_program(text));
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("subgroup_shuffle"));
}
