// ptxas acceptance: every registered op at every test shape, and every shipped spec
// (examples/specs, the f16/bf16 activation specs included) as `quantc emit` compiles it,
// assembles for every supported target (sm_75 .. sm_120) with zero errors and zero spill
// bytes. Skips with a WARN when ptxas is absent, unless QUANTC_REQUIRE_PTXAS=1.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/ops/Registry.h"
#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "ptx/Ptxas.h"
#include "tests/ptx/PtxTestSupport.h"

using namespace quantc;
namespace fs = std::filesystem;

TEST_CASE("every registered op assembles with ptxas, no spills", "[ptxas]") {
  if (!testing::ptxas_or_skip()) return;
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    REQUIRE_FALSE(op.test_shapes.empty());
    for (const ir::ops::OpArgs& args : op.test_shapes) {
      ir::Program program = testing::program_for_test(op, args);
      for (const ptx::Target& target : testing::sweep_targets()) {
        testing::require_assembles(testing::emit_for_test(program, target), target, testing::spec_stem(op, args));
      }
    }
  }
}

TEST_CASE("every shipped spec assembles with ptxas on every supported target, no spills", "[ptxas]") {
  if (!testing::ptxas_or_skip()) return;
  std::size_t specs = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(QUANTC_SOURCE_DIR) / "examples" / "specs")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    const std::string name = entry.path().filename().string();
    const ir::Program program = ir::ops::build_program(ir::ops::parse_spec(text.str(), name));
    for (const ptx::Target& target : ptx::supported_targets()) {
      // The default pipeline (-O2), as `quantc emit` and `quantc check` compile a spec.
      testing::require_assembles(lower::compile(program, {target}).ptx, target, name);
    }
    ++specs;
  }
  CHECK(specs >= 21);
}

TEST_CASE("run_ptxas reports failure and the log for invalid PTX", "[ptxas]") {
  if (!testing::ptxas_or_skip()) return;
  ptx::PtxasResult result = ptx::run_ptxas(".version 7.0\n.target sm_80\n.address_size 64\nthis is not ptx\n",
                                           ptx::Target{80});
  CHECK_FALSE(result.success);
  CHECK(result.log.find("error") != std::string::npos);
  CHECK(result.command.find("--gpu-name sm_80") != std::string::npos);
}

TEST_CASE("parse_ptxas_log reads registers and spill bytes", "[ptxas][parse]") {
  ptx::PtxasResult result;
  ptx::parse_ptxas_log(
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers, 384 bytes cmem[0]\n",
      result);
  CHECK(result.registers == 40);
  CHECK(result.spill_store_bytes == 12);
  CHECK(result.spill_load_bytes == 16);
  CHECK(result.spill_bytes() == 28);
}
