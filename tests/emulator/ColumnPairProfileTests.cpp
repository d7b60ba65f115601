// The emulator's counters for int4's and NVFP4's column pairs on the tensor cores
// (ir/ops/TensorGemm.h): their weight rows are 16 bytes a column tile, half a 32-byte
// sector, so a workgroup of one column tile reads each sector of W twice (once for each
// tile, in two workgroups' requests), while the two column subgroups of a pair copy both
// halves of each row in one request and read each sector once, whole.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>

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
  const std::uint32_t k = 2048, n = 256;  // eight column tiles
  const std::uint64_t weight_bytes = std::uint64_t{k} * n / 2;
  // Pairs at m <= 8, and above FormatTraits::paired_above_m: int4 from m = 33, NVFP4 at
  // every m. Every 32-byte sector of the k x n / 2 bytes once a row tile (m = 40: two).
  for (const auto& [op, m, row_tiles] :
       {std::tuple{"dequant_matmul_int4", 3u, 1u}, std::tuple{"dequant_matmul_int4", 40u, 2u},
        std::tuple{"dequant_matmul_nvfp4", 3u, 1u}, std::tuple{"dequant_matmul_nvfp4", 16u, 1u}}) {
    INFO(op << " at m = " << m);
    const BufferTraffic paired = weight_loads(op, m, k, n);
    CHECK(paired.load_bytes == row_tiles * weight_bytes);
    CHECK(paired.load_sectors == paired.load_bytes / 32);
  }
  // Int4 at m = 9..32 keeps one column tile a subgroup: each row's 16 bytes are half a
  // sector, whose other half another workgroup reads.
  const BufferTraffic unpaired = weight_loads("dequant_matmul_int4", 16, k, n);
  CHECK(unpaired.load_bytes == weight_bytes);
  CHECK(unpaired.load_sectors == weight_bytes / 16);
}
