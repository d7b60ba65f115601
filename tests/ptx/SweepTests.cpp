// The sweep configurations the op sweeps run (testing::sweep_configurations): every target
// at -O0/-O1/-O2 by default; one level per target, in turn, under QUANTC_SWEEP_ONE_LEVEL=1
// (the sanitizer job), which must still cover every target and every level.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/ScopedEnvironment.h"
#include "tests/ptx/PtxTestSupport.h"

using namespace quantc;
using quantc_test::ScopedEnvironment;

TEST_CASE("sweep configurations: every target at every level or one level per target in turn", "[ptx][sweep]") {
  ScopedEnvironment targets("QUANTC_SWEEP_TARGETS", "sm_75,sm_80,sm_90");
  {
    ScopedEnvironment all_levels("QUANTC_SWEEP_ONE_LEVEL", "0");
    const std::vector<testing::SweepConfiguration> full = testing::sweep_configurations();
    REQUIRE(full.size() == 9);
    std::set<std::pair<std::string, int>> pairs;
    for (const auto& [target, level] : full) pairs.insert({target.name(), static_cast<int>(level)});
    CHECK(pairs.size() == 9);
  }
  ScopedEnvironment one_level("QUANTC_SWEEP_ONE_LEVEL", "1");
  const std::vector<testing::SweepConfiguration> diagonal = testing::sweep_configurations();
  REQUIRE(diagonal.size() == 3);
  CHECK(diagonal[0].target.name() == "sm_75");
  CHECK(diagonal[0].level == lower::OptimizationLevel::O0);
  CHECK(diagonal[1].target.name() == "sm_80");
  CHECK(diagonal[1].level == lower::OptimizationLevel::O1);
  CHECK(diagonal[2].target.name() == "sm_90");
  CHECK(diagonal[2].level == lower::OptimizationLevel::O2);
}
