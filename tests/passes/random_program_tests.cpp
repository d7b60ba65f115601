// Random programs (tests/passes/RandomProgram.h) through every pass and pipeline: the
// reference interpreter's outputs before and after must be identical bit for bit (any
// two NaNs compare equal: passes may move where a NaN gets its canonical bits). The
// inputs include NaNs, infinities, signed zeros and subnormals (random_inputs). On a
// mismatch the failing program, configuration and first differing element are printed.
// QUANTC_RANDOM_PROGRAMS=N changes the number of programs (default 5000).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ir/Printer.h"
#include "lower/PassManager.h"
#include "lower/passes/Passes.h"
#include "runtime/backends/reference/Interpreter.h"
#include "TestPrograms.h"
#include "tests/passes/RandomProgram.h"

using namespace quantc;
using namespace quantc::ir;
using quantc::testing::RandomProgram;

namespace {

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
  lower::PassOptions uncontracted;
  uncontracted.fp_contract = false;
  result.push_back(uncontracted);
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
    const runtime::BufferSet inputs = testing::random_inputs(program, static_cast<std::uint64_t>(seed));
    runtime::BufferSet uncontracted = inputs, contracted = inputs;
    runtime::reference::run(program, uncontracted);
    runtime::reference::run(lower::contract_fma(program), contracted);
    for (const lower::PassOptions& options : options_list) {
      const runtime::BufferSet& expected = testing::contracts(options) ? contracted : uncontracted;
      Program optimized = lower::run_passes(program, options);
      runtime::BufferSet actual = inputs;
      runtime::reference::run(optimized, actual);
      const std::string difference = testing::output_difference(program, expected, actual);
      if (!difference.empty()) {
        FAIL_CHECK("seed " << seed << ", "
                           << (options.passes.empty() ? "pipeline -O" + std::to_string(static_cast<int>(options.level)) +
                                                            (options.fp_contract ? "" : " --fp-contract=off")
                                                      : "--passes=" + options.passes[0])
                           << " changed the results: " << difference << "\n--- before ---\n"
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

TEST_CASE("the random programs carry values through written buffers in loops and use special floats", "[random]") {
  // The equivalence tests above only find what the generator produces: a generator
  // change that stopped loading written buffers inside loops (what LICM and CSE must
  // not hoist or merge across a store) or stopped using NaN/inf would go unnoticed.
  int carried = 0, loads = 0, specials = 0;
  for (int seed = 0; seed < 200; ++seed) {
    RandomProgram generator(static_cast<std::uint64_t>(seed));
    generator.generate();
    carried += generator.coverage().carried_in_loops > 0;
    loads += generator.coverage().written_loads > 0;
    specials += generator.coverage().special_floats > 0;
  }
  INFO("of 200 programs: " << carried << " carry values through memory in loops, " << loads
                           << " load written buffers, " << specials << " use special f32 literals");
  CHECK(carried >= 20);
  CHECK(loads >= 100);
  CHECK(specials >= 20);
  // And the inputs: about one float element in six is special; NaNs among them.
  Program program = RandomProgram(1).generate();
  runtime::BufferSet inputs = testing::random_inputs(program, 1);
  int nans = 0;
  for (float value : inputs.at("in_f").as<float>()) nans += std::isnan(value);
  for (std::uint16_t bits : inputs.at("in_h").as<std::uint16_t>()) nans += testing::both_nan(ScalarType::F16, bits, bits);
  CHECK(nans >= 2);
}
