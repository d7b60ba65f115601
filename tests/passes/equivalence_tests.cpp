// Every registered op on a grid of shapes: the reference interpreter's outputs before
// and after each pass alone and each pipeline are identical, bit for bit (for the
// configurations that run contract_fma, identical to the contracted original's), except
// that any two NaNs compare equal.
#include <catch2/catch.hpp>

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
    args.set("in_dim", in_dim);
    args.set("out_dim", out_dim);
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
