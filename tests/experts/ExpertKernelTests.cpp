// The expert batch-1 baselines of bench/experts/ on the PTX emulator: each kernel at a
// small shape and at odd shapes (outputs not a multiple of a CTA's columns, a partial
// last group/block, an odd column count) agrees with the reference interpreter within the
// bound stated in bench/experts/ExpertKernels.h, and shapes the kernels do not cover are
// refused with a message naming the value.
//
// nvcc policy, as the emulator's nvcc tests (tests/emulator/NvccSupport.h): skipped with a
// visible warning where nvcc is missing, failed instead when QUANTC_REQUIRE_NVCC=1 or
// QUANTC_REQUIRE_PTXAS=1 (CI sets both: it installs the whole toolkit).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "ExpertKernels.h"

using namespace quantc;
using namespace quantc::bench;

namespace {

bool nvcc_available() {
  if (std::filesystem::exists(QUANTC_EXPERT_NVCC)) return true;
  for (const char* variable : {"QUANTC_REQUIRE_NVCC", "QUANTC_REQUIRE_PTXAS"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::string(value) == "1") {
      FAIL("nvcc not found at " QUANTC_EXPERT_NVCC " and " << variable << "=1: the expert kernels need nvcc");
    }
  }
  WARN("SKIPPED: nvcc not found at " QUANTC_EXPERT_NVCC "; the expert kernels are compiled with nvcc -ptx "
       "(QUANTC_REQUIRE_NVCC=1 fails instead)");
  return false;
}

/// Runs the expert kernel on random buffers (two seeds) and checks the interpreter bound;
/// returns the last run for further checks.
KernelRun check(const std::string& op, const ir::ops::OpArgs& args) {
  KernelRun run;
  for (std::uint64_t seed : {1u, 7u}) {
    ExpertOptions options;
    options.seed = seed;
    options.resources = false;  // ptxas is exercised by kernels_bench; keep the test fast
    INFO(op << " " << case_label(op, args) << " seed " << seed);
    REQUIRE_NOTHROW(run = run_expert(op, args, options));
    CHECK(run.accuracy.passed());
    CHECK(run.accuracy.outputs > 0);
  }
  return run;
}

ir::ops::OpArgs affine(std::uint32_t in, std::uint32_t out, std::uint32_t group) {
  return ir::ops::OpArgs::dims({{"k", in}, {"n", out}, {"group_size", group}});
}

ir::ops::OpArgs nf4(std::uint32_t n, std::uint32_t k, const char* accumulate) {
  ir::ops::OpArgs args = ir::ops::OpArgs::dims({{"m", 1}, {"n", n}, {"k", k}});
  args.set("accumulate", std::string(accumulate));
  args.set("schedule", std::string("seed"));  // the f64 expert sums as the seed does (auto picks fast at m == 1)
  return args;
}

ir::ops::OpArgs dequant(std::uint32_t k, std::uint32_t n, std::uint32_t block, bool asymmetric) {
  ir::ops::OpArgs args = ir::ops::OpArgs::dims({{"m", 1}, {"k", k}, {"n", n}, {"block_size", block}});
  args.set("asymmetric", asymmetric);
  return args;
}

}  // namespace

TEST_CASE("expert linear_4bit_affine_grouped matches the interpreter within the f32 bound", "[experts]") {
  if (!nvcc_available()) return;
  const KernelRun run = check("linear_4bit_affine_grouped", affine(256, 64, 64));
  CHECK(run.entry == "linear_4bit_affine_grouped_expert");
  // 16-byte weight loads: 4 words (4 columns x 8 k) per lane per load.
  CHECK(run.counters.global_load_requests < 256 / 8 * 64 / 4);
  // out_dim 20: not a multiple of the CTA's columns; in_dim 80 with groups of 32: a partial
  // last group (16 k); 72 / 24: three whole groups, three words each.
  check("linear_4bit_affine_grouped", affine(80, 20, 32));
  check("linear_4bit_affine_grouped", affine(72, 12, 24));
}

TEST_CASE("expert nf4_gemm at m = 1 matches the interpreter: f64 (default) and f32 accumulation", "[experts]") {
  if (!nvcc_available()) return;
  const KernelRun f64 = check("nf4_gemm", nf4(64, 256, "f64"));
  CHECK(f64.entry == "nf4_gemv_expert_f64");
  // f64 accumulation of exact products, rounded once: bit-identical to the reference in
  // practice (the bound allows one f32 rounding apart).
  CHECK(f64.accuracy.bit_identical + 2 >= f64.accuracy.outputs);
  const KernelRun f32 = check("nf4_gemm", nf4(64, 256, "f32"));
  CHECK(f32.entry == "nf4_gemv_expert_f32");
  // An odd column count (the last column pair has one column), one block per column, and
  // a k of 6 blocks.
  check("nf4_gemm", nf4(33, 64, "f64"));
  check("nf4_gemm", nf4(5, 384, "f32"));
  // Against the fast schedule: within the widened f64 bound (34 u M for its f32 partial sums).
  for (const char* accumulate : {"f64", "f32"}) {
    ir::ops::OpArgs fast = nf4(64, 256, accumulate);
    fast.set("schedule", std::string("fast"));
    check("nf4_gemm", fast);
  }
}

TEST_CASE("expert dequant_matmul_int4 at m = 1 matches the interpreter: asymmetric and symmetric", "[experts]") {
  if (!nvcc_available()) return;
  const KernelRun asymmetric = check("dequant_matmul_int4", dequant(256, 128, 64, true));
  CHECK(asymmetric.entry == "dequant_matmul_int4_expert_asymmetric");
  const KernelRun symmetric = check("dequant_matmul_int4", dequant(256, 128, 64, false));
  CHECK(symmetric.entry == "dequant_matmul_int4_expert_symmetric");
  // n = 96: half of the last CTA's columns are past n; k = 20 with blocks of 8: a partial
  // last block; block_size 5 straddles the row slots' ranges.
  check("dequant_matmul_int4", dequant(20, 96, 8, true));
  check("dequant_matmul_int4", dequant(77, 32, 5, false));
}

TEST_CASE("expert launch plans fill 132 SMs at 4096x4096 where the layout allows it", "[experts]") {
  const auto plan = [](const std::string& op) {
    const ir::ops::OpArgs args = batch1_args(op, 4096, 4096);
    return plan_expert_launch(op, args, ir::ops::OpRegistry::builtin().find(op)->build(args)).launch;
  };
  for (const std::string op : {"linear_4bit_affine_grouped", "nf4_gemm"}) {
    INFO(op);
    const runtime::PtxLaunch launch = plan(op);
    CHECK(launch.grid[0] >= 132);
    CHECK(launch.block[0] >= 128);
    CHECK(launch.block[0] % 32 == 0);
  }
  // n fastest, 64 nibble columns per 32-byte sector: whole-sector rows allow n/64 CTAs.
  const runtime::PtxLaunch dequant_launch = plan("dequant_matmul_int4");
  CHECK(dequant_launch.grid[0] == 4096 / 64);
  CHECK(dequant_launch.block[0] == 256);
}

TEST_CASE("expert kernels refuse shapes they do not cover, naming the value", "[experts]") {
  const auto message = [](const std::string& op, const ir::ops::OpArgs& args) -> std::string {
    const ir::Program program = ir::ops::OpRegistry::builtin().find(op)->build(args);
    try {
      plan_expert_launch(op, args, program);
    } catch (const ExpertError& error) {
      return error.what();
    }
    return "";
  };
  CHECK_THAT(message("linear_4bit_affine_grouped", affine(8, 4, 4)), Catch::Contains("group_size=4"));
  CHECK_THAT(message("linear_4bit_affine_grouped", affine(64, 9, 32)), Catch::Contains("out_dim=9"));
  CHECK_THAT(message("dequant_matmul_int4", dequant(64, 40, 8, true)), Catch::Contains("n=40"));
  ir::ops::OpArgs batch2 = dequant(64, 64, 8, true);
  batch2.set("m", std::uint32_t{2});
  CHECK_THAT(message("dequant_matmul_int4", batch2), Catch::Contains("m=2"));
  CHECK_THROWS_WITH(batch1_args("linear_4bit", 64, 64), Catch::Contains("no expert kernel for op \"linear_4bit\""));
}
