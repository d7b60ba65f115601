// Structural expectations of -O2 on the grouped INT4 linear op (sidecar hoisting) and of the
// pass manager's options.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <tuple>

#include "ir/IRVisitor.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Linear4Bit.h"
#include "lower/PassManager.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

std::set<std::string> loop_names(const Program& program) {
  struct Collector : IRVisitor {
    std::set<std::string> names;
    void visit_Loop(const Loop& node) override {
      names.insert(node.var);
      IRVisitor::visit_Loop(node);
    }
  } collector;
  collector.visit(program.entry);
  return collector.names;
}

Program optimize(Program program, lower::OptimizationLevel level = lower::OptimizationLevel::O2) {
  lower::PassOptions options;
  options.level = level;
  options.verify_each = true;
  return lower::run_passes(std::move(program), options);
}

}  // namespace

TEST_CASE("pipeline O2 hoists sidecars into group loops for aligned groups", "[structure]") {
  Program program = optimize(ops::linear_4bit_affine_grouped(256, 4096, 64));
  std::set<std::string> loops = loop_names(program);
  INFO(print(program));
  CHECK(loops.count("group_idx") == 1);
  CHECK(loops.count("group_chunk") == 1);
  CHECK(loops.count("chunk") == 0);
  std::string text = print(program);
  CHECK(text.find("subgroup_shuffle(packed_word_lane") != std::string::npos);  // packed word broadcast
  // One sidecar index per group, computed once (cse) and read by both loads.
  CHECK(text.find("let common: u32 = ((group_idx * 4096u32) + out_idx)") != std::string::npos);
  CHECK(text.find("scale[common]") != std::string::npos);
  CHECK(text.find("zero_point[common]") != std::string::npos);
  CHECK(text.find("/ 64u32") == std::string::npos);
  CHECK(text.find(">> 6u32") == std::string::npos);
}

TEST_CASE("pipeline O2 leaves one-chunk groups and unaligned groups in per-chunk form", "[structure]") {
  for (auto [in_dim, out_dim, group_size] :
       {std::tuple{72u, 9u, 24u}, std::tuple{64u, 4u, 16u}, std::tuple{96u, 4u, 48u}}) {
    Program program = optimize(ops::linear_4bit_affine_grouped(in_dim, out_dim, group_size));
    std::set<std::string> loops = loop_names(program);
    INFO(print(program));
    CHECK(loops.count("chunk") == 1);
    CHECK(loops.count("group_idx") == 0);
  }
}

TEST_CASE("pipeline O2 turns a one-chunk reduction into straight-line code", "[structure]") {
  // in_dim 32: the chunk loop runs once, so it becomes its body with chunk = 0.
  Program program = optimize(ops::linear_4bit_affine_grouped(32, 8, 32));
  INFO(print(program));
  CHECK(loop_names(program).empty());
  std::string text = print(program);
  CHECK(text.find("chunk") == std::string::npos);
  CHECK(text.find("subgroup_shuffle(packed_word_lane, word_leader_lane)") != std::string::npos);
  CHECK(text.find("x[lane]") != std::string::npos);  // k = 0*32 + lane
}

TEST_CASE("pipeline O0 changes nothing while O1 and O2 verify", "[structure]") {
  Program original = ops::linear_4bit_affine_grouped(256, 20, 64);
  CHECK(print(optimize(original, lower::OptimizationLevel::O0)) == print(original));
  CHECK(verify(optimize(original, lower::OptimizationLevel::O1)).empty());
}

TEST_CASE("pass manager: explicit lists, print-ir-after, time-passes, errors", "[structure]") {
  Program original = ops::linear_4bit(64, 8);
  std::ostringstream log;
  lower::PassOptions options;
  options.passes = lower::parse_pass_list("fold_constants,dce,licm");
  options.print_ir_after = {"fold_constants"};
  options.time_passes = true;
  options.log = &log;
  std::vector<lower::PassTiming> timings;
  lower::run_passes(original, options, &timings);
  REQUIRE(timings.size() == 3);
  CHECK(timings[0].pass == "fold_constants");
  CHECK(timings[0].nodes_before > 0);
  CHECK(log.str().find("; *** IR Dump After fold_constants ***\nprogram \"linear_4bit\"") != std::string::npos);
  CHECK(log.str().find("IR Dump After dce") == std::string::npos);
  CHECK(log.str().find("pass execution timing report") != std::string::npos);
  CHECK_THROWS_WITH(lower::parse_pass_list("fold_constants,nope"),
                    "unknown pass 'nope'; known passes: fold_constants, cse, licm, dce, unroll_loops, hoist_sidecars, "
                    "contract_fma");
  CHECK_THROWS_WITH(lower::parse_optimization_level("-O3"), "unknown optimization level '3'; use -O0, -O1 or -O2");
  CHECK(lower::parse_optimization_level("-O1") == lower::OptimizationLevel::O1);
}
