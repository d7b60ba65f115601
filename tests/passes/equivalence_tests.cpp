// Every registered op on a grid of shapes: the reference interpreter's outputs before
// and after each pass alone and each pipeline are identical, bit for bit (for the
// configurations that run contract_fma, identical to the contracted original's), except
// that any two NaNs compare equal.
#include <catch2/catch.hpp>

#include <limits>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/ops/Registry.h"
#include "lower/PassManager.h"
#include "lower/passes/Passes.h"
#include "runtime/backends/reference/Interpreter.h"
#include "TestPrograms.h"
#include "tests/passes/RandomProgram.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

runtime::BufferSet run(const Program& program, std::uint64_t seed) {
  runtime::BufferSet buffers = runtime::random_buffers(program, seed);
  runtime::reference::run(program, buffers);
  return buffers;
}

std::vector<lower::PassOptions> configurations() {
  std::vector<lower::PassOptions> result;
  for (const lower::PassInfo& pass : lower::registered_passes()) {
    lower::PassOptions options;
    options.passes = {pass.name};
    options.verify_each = true;
    result.push_back(options);
  }
  for (auto level : {lower::OptimizationLevel::O0, lower::OptimizationLevel::O1, lower::OptimizationLevel::O2}) {
    lower::PassOptions options;
    options.level = level;
    options.verify_each = true;
    result.push_back(options);
  }
  lower::PassOptions uncontracted;
  uncontracted.fp_contract = false;
  uncontracted.verify_each = true;
  result.push_back(uncontracted);
  return result;
}

std::string describe(const lower::PassOptions& options) {
  if (!options.passes.empty()) return "--passes=" + options.passes[0];
  return "-O" + std::to_string(static_cast<int>(options.level)) + (options.fp_contract ? "" : " --fp-contract=off");
}

}  // namespace

TEST_CASE("passes and pipelines preserve every op's results bit for bit", "[equivalence]") {
  std::vector<ops::OpArgs> extra_grouped;
  for (auto [in_dim, out_dim, group_size] :
       {std::tuple{256u, 20u, 64u}, std::tuple{512u, 9u, 128u}, std::tuple{96u, 3u, 64u}, std::tuple{192u, 5u, 96u},
        std::tuple{64u, 3u, 1u}, std::tuple{128u, 17u, 256u}}) {
    ops::OpArgs args;
    args.set("k", in_dim);
    args.set("n", out_dim);
    args.set("group_size", group_size);
    extra_grouped.push_back(args);
  }
  for (const ops::OpInfo& op : ops::OpRegistry::builtin().all()) {
    std::vector<ops::OpArgs> shapes = op.test_shapes;
    if (op.name == "linear_4bit_affine_grouped") shapes.insert(shapes.end(), extra_grouped.begin(), extra_grouped.end());
    for (const ops::OpArgs& args : shapes) {
      Program original = op.build(args);
      runtime::BufferSet uncontracted = run(original, 7);
      runtime::BufferSet contracted = run(lower::contract_fma(original), 7);
      for (const lower::PassOptions& options : configurations()) {
        const runtime::BufferSet& expected = testing::contracts(options) ? contracted : uncontracted;
        Program optimized = lower::run_passes(original, options);
        runtime::BufferSet actual = run(optimized, 7);
        INFO(op.name << " " << describe(options) << "\n" << print(optimized));
        CHECK(testing::output_difference(optimized, expected, actual) == "");
      }
    }
  }
}

TEST_CASE("passes marked idempotent change nothing on their own output, for every op", "[equivalence]") {
  for (const ops::OpInfo& op : ops::OpRegistry::builtin().all()) {
    for (const ops::OpArgs& args : op.test_shapes) {
      Program program = op.build(args);
      std::vector<std::string> failures = testing::idempotence_failures(program);
      INFO(op.name << ": a second run of " << (failures.empty() ? "" : failures.front())
                   << " changed its own output\n" << print(program));
      CHECK(failures.empty());
    }
  }
}

namespace {

/// Runs `program` on the reference interpreter with `inputs` (the rest zero-filled).
runtime::BufferSet run_with(const Program& program, const runtime::BufferSet& inputs) {
  runtime::BufferSet buffers = runtime::allocate_buffers(program);
  for (const auto& [name, buffer] : inputs) buffers[name] = buffer;
  runtime::reference::run(program, buffers);
  return buffers;
}

/// `program` after `pass` alone (or the -O2 pipeline for "O2"), verified after each pass.
Program after(const Program& program, const std::string& pass) {
  lower::PassOptions options;
  options.verify_each = true;
  if (pass != "O2") options.passes = {pass};
  return lower::run_passes(program, options);
}

}  // namespace

TEST_CASE("no pass moves a load of a written buffer above a store or reuses it across one", "[equivalence][memory]") {
  // f32 inputs: numbers, and inf/NaN where a float identity would be wrong.
  std::vector<float> x(64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5f + static_cast<float>(i);
  x[3] = std::numeric_limits<float>::infinity();
  x[5] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> acc(32, 1.0f);
  const runtime::BufferSet inputs = {{"x", runtime::HostBuffer::from(ScalarType::F32, x)},
                                     {"acc", runtime::HostBuffer::from(ScalarType::F32, acc)}};

  SECTION("licm keeps a load of a buffer the loop stores to inside the loop") {
    const Program program = parse_program(R"(program "p" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)
buffer @0 x: read_only f32[64]
buffer @1 acc: read_write f32[32]
{
  let lane: u32 = local_id.x
  for k: u32 in 0u32 .. 4u32 {
    let scale: f32 = x[lane]
    let previous: f32 = acc[lane]
    acc[lane] = (previous + scale)
  }
}
)");
    const runtime::BufferSet expected = run_with(program, inputs);
    CHECK(expected.at("acc").as<float>()[0] == 1.0f + 4 * 0.5f);  // four accumulations, not one
    for (const char* pass : {"licm", "O2"}) {
      INFO(pass);
      const Program optimized = after(program, pass);
      INFO(print(optimized));
      CHECK(run_with(optimized, inputs).at("acc").bytes == expected.at("acc").bytes);
    }
    // The read-only load did move: the test exercises a pass that does hoist.
    CHECK(print(after(program, "licm")).find("  let scale: f32 = x[lane]\n  for k") != std::string::npos);
  }

  SECTION("cse does not merge two loads of a written buffer across a store") {
    const Program program = parse_program(R"(program "p" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)
buffer @0 x: read_only f32[64]
buffer @1 acc: read_write f32[32]
buffer @2 out: read_write f32[32]
{
  let lane: u32 = local_id.x
  let before: f32 = acc[lane]
  acc[lane] = (before + x[lane])
  let after: f32 = acc[lane]
  out[lane] = ((after - before) * x[lane])
}
)");
    const runtime::BufferSet expected = run_with(program, inputs);
    CHECK(expected.at("out").as<float>()[0] == 0.5f * 0.5f);  // (1 + 0.5 - 1) * 0.5, not (1 - 1) * 0.5
    for (const char* pass : {"cse", "O2"}) {
      INFO(pass);
      const Program optimized = after(program, pass);
      INFO(print(optimized));
      CHECK(run_with(optimized, inputs).at("out").bytes == expected.at("out").bytes);
    }
    // The two read-only loads of x[lane] did merge: cse ran and found work.
    const std::string merged = print(after(program, "cse"));
    const std::size_t first = merged.find("x[lane]");
    CHECK(first != std::string::npos);
    CHECK(merged.find("x[lane]", first + 1) == std::string::npos);
  }

  SECTION("fold_constants does not fold float x - x (inf - inf and NaN - NaN are NaN)") {
    const Program program = parse_program(R"(program "p" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)
buffer @0 x: read_only f32[64]
buffer @1 out: read_write f32[32]
{
  let lane: u32 = local_id.x
  let v: f32 = x[lane]
  out[lane] = (v - v)
}
)");
    const runtime::BufferSet expected = run_with(program, inputs);
    const std::vector<std::uint32_t> bits = expected.at("out").as<std::uint32_t>();
    CHECK(bits[0] == 0);            // 0.5 - 0.5
    CHECK(bits[3] == 0x7fffffffu);  // inf - inf: the canonical NaN
    CHECK(bits[5] == 0x7fffffffu);  // NaN - NaN
    for (const char* pass : {"fold_constants", "cse", "O2"}) {
      INFO(pass);
      const Program optimized = after(program, pass);
      INFO(print(optimized));
      CHECK(run_with(optimized, inputs).at("out").bytes == expected.at("out").bytes);
    }
  }
}
