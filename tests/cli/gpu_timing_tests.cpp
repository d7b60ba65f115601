// `quantc run --backend cuda --time N` on the emulated CUDA driver (tests/cuda/emulated_driver):
// the timing line bench/gpu/run.sh reads, and the errors for backends that cannot time.
#include <regex>

#include "CliHarness.h"

using namespace quantc_cli_test;

namespace {
const std::string kEmulatedDriver = std::string("QUANTC_CUDA_DRIVER=") + QUANTC_EMULATED_CUDA_DRIVER + " ";
}

TEST_CASE("run --time times a spec's kernel on the cuda backend and still checks it", "[cli][timing]") {
  const Result result = run_quantc("run " + spec_path("linear_4bit.json") +
                                       " --backend cuda --random-inputs 1 --compare reference --time 3 --warmup 1",
                                   kEmulatedDriver);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("compare cuda vs reference: out:"));
  std::smatch match;
  const std::regex line(R"(time linear_4bit: median ([0-9.]+) us, min ([0-9.]+) us over 3 launches after 1 warm-up)");
  REQUIRE(std::regex_search(result.output, match, line));
  CHECK(std::stod(match[1]) >= std::stod(match[2]));
  CHECK(std::stod(match[2]) > 0);
}

TEST_CASE("run --time times a PTX module launched with explicit arguments", "[cli][timing]") {
  const fs::path dir = scratch_dir();
  const std::string ptx = dir / "copy.ptx";
  write_text(ptx, R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry copy(.param .u64 src, .param .u64 dst) {
  .reg .b64 %rd<4>;
  .reg .b32 %r<4>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd1, %rd1, %rd3;
  add.s64 %rd2, %rd2, %rd3;
  ld.global.u32 %r2, [%rd1];
  st.global.u32 [%rd2], %r2;
  ret;
}
)");
  const Result result = run_quantc("run " + ptx + " --backend cuda --grid 1 --block 32 --arg src:u32:32 --arg dst:u32:32 "
                                   "--time 2 --warmup 0",
                                   kEmulatedDriver);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("time copy: median") && Catch::Contains("over 2 launches after 0 warm-up"));
}

TEST_CASE("run --time is refused before any work on backends that do not time kernels", "[cli][timing]") {
  const fs::path dir = scratch_dir();
  const std::string out = write_text(dir / "kept_by_time.npy", "old");
  for (const char* backend : {"reference", "emulator"}) {
    const Result result = run_quantc("run " + spec_path("linear_4bit.json") + " --random-inputs 1 --time 5 --backend " +
                                     backend + " --output out=" + out);
    INFO(result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::Contains(std::string("backend '") + backend + "' does not time kernels") &&
                                  Catch::Contains("--backend cuda") && Catch::Contains("quantc profile"));
    CHECK(read_text(out) == "old");
  }
  CHECK_THAT(run_quantc("run " + spec_path("linear_4bit.json") + " --random-inputs 1 --warmup 3").output,
             Catch::Contains("--warmup requires --time"));
  CHECK(run_quantc("run " + spec_path("linear_4bit.json") + " --backend cuda --time 0", kEmulatedDriver).exit_code != 0);
}
