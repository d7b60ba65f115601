// The emulator's counters for int4's and NVFP4's column pairs on the tensor cores
// (ir/ops/TensorGemm.h): their weight rows are 16 bytes a column tile, half a 32-byte
// sector, so a workgroup of one column tile reads each sector of W twice (once for each
// tile, in two workgroups' requests), while the two column subgroups of a pair copy both
// halves of each row in one request and read each sector once, whole.
#include <catch2/catch.hpp>

#include <string>

#include "ir/ops/Registry.h"
#include "lower/driver/Compiler.h"
#include "ptx/Target.h"
#include "runtime/backends/emulator/Profile.h"

using namespace quantc;
using namespace quantc::runtime::emulator;

namespace {

/// The `w` buffer's counters of `op` at m x k x n (f16 activations, the fast schedule).
BufferTraffic weight_loads(const std::string& op, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  ir::ops::OpArgs args = ir::ops::OpArgs::dims({{"m", m}, {"k", k}, {"n", n}});
  if (op == "dequant_matmul_int4") args.set("block_size", 64u);
  args.set("activation", std::string("f16"));
  args.set("schedule", std::string("fast"));
  const ir::Program program = ir::ops::OpRegistry::builtin().find(op)->build(args);
  lower::CompileOptions compile;
  compile.target = ptx::parse_target("sm_90");
  const lower::CompiledKernel kernel = lower::compile(program, compile);
  ProfileOptions options;
  options.devices = {"h100_sxm"};
  options.run_ptxas = false;  // counters only
  const KernelProfile profile = profile_program(kernel.program, kernel.ptx, 1, options);
  for (const BufferTraffic& buffer : profile.counters.buffers) {
    if (buffer.name == "w") return buffer;
  }
  FAIL("no buffer w");
  return {};
}

}  // namespace

TEST_CASE("tensor-core int4 and NVFP4 column pairs read each sector of the weights once and whole",
          "[emulator][profile][tensor_gemm]") {
  for (const char* op : {"dequant_matmul_int4", "dequant_matmul_nvfp4"}) {
    const std::uint32_t m = 3, k = 2048;
    INFO(op);
    // n = 256: eight column tiles in pairs; every 32-byte sector of the k x n / 2 bytes once.
    const BufferTraffic paired = weight_loads(op, m, k, 256);
    CHECK(paired.load_sectors == std::uint64_t{k} * 256 / 2 / 32);
    CHECK(paired.load_bytes == std::uint64_t{k} * 256 / 2);
    // m = 16: one column tile a subgroup (no pairs at m > 8); each row's 16 bytes are half
    // a sector, whose other half another workgroup reads.
    const BufferTraffic single = weight_loads(op, 16, k, 256);
    CHECK(single.load_sectors == 2 * paired.load_sectors);
    CHECK(single.load_bytes == paired.load_bytes);
  }
}
