// Random programs (tests/passes/RandomProgram.h) through every pass and pipeline: the
// reference interpreter's outputs before and after must be identical bit for bit. On a
// mismatch the failing program and configuration are printed.
// QUANTC_RANDOM_PROGRAMS=N changes the number of programs (default 5000).
#include <catch2/catch.hpp>

#include <algorithm>
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
    const runtime::BufferSet inputs = runtime::random_buffers(program, static_cast<std::uint64_t>(seed));
    runtime::BufferSet uncontracted = inputs, contracted = inputs;
    runtime::reference::run(program, uncontracted);
    runtime::reference::run(lower::contract_fma(program), contracted);
    for (const lower::PassOptions& options : options_list) {
      const runtime::BufferSet& expected = testing::contracts(options) ? contracted : uncontracted;
      Program optimized = lower::run_passes(program, options);
      runtime::BufferSet actual = inputs;
      runtime::reference::run(optimized, actual);
      bool same = true;
      for (const auto& [name, buffer] : expected) same &= actual.at(name).bytes == buffer.bytes;
      if (!same) {
        FAIL_CHECK("seed " << seed << ", "
                           << (options.passes.empty() ? "pipeline -O" + std::to_string(static_cast<int>(options.level)) +
                                                            (options.fp_contract ? "" : " --fp-contract=off")
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
