// ir::SubgroupMma (ir/Mma.h): one warp's m16n8k16 tile D = C + A·B with f16 and bf16
// inputs. The reference interpreter and the emulated `mma.sync.aligned.m16n8k16.row.col`
// (sm_80, sm_90, -O0 and -O2) agree bit for bit, and both agree with an independent f64
// matrix product: exactly where every partial sum is an integer below 2^24, within the
// f32 accumulation bound elsewhere; NaN and infinity propagate. sm_75 is refused by name,
// and a partial warp is an error on the emulator.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/Arithmetic.h"
#include "ir/Mma.h"
#include "ir/Parser.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/ReferenceBackend.h"

using namespace quantc;
using namespace quantc::runtime;

namespace {

/// The whole tile as plain row-major matrices (A 16x16, B 16x8, C 16x8) of values that
/// f16/bf16 represent exactly.
struct Tile {
  float a[16][16], b[16][8], c[16][8];
};

std::uint16_t to_half(ir::ScalarType input, float value) {
  if (input == ir::ScalarType::F16) return ir::arith::convert<ir::arith::Float16>(value).bits;
  return ir::arith::convert<ir::arith::BFloat16>(value).bits;
}

/// The lanes' fragments, written from the PTX ISA's figures for mma.m16n8k16 (g = lane/4,
/// t = lane%4): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..];
/// b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]; c0, c1 = C[g][2t..2t+1], c2, c3 = C[g+8][2t..].
BufferSet fragments(ir::ScalarType input, const Tile& tile) {
  std::vector<std::uint32_t> a(32 * 4), b(32 * 2);
  std::vector<float> c(32 * 4);
  for (unsigned lane = 0; lane < 32; ++lane) {
    const unsigned g = lane / 4, t = lane % 4;
    auto pack = [&](float low, float high) {
      return std::uint32_t{to_half(input, low)} | std::uint32_t{to_half(input, high)} << 16;
    };
    a[lane * 4 + 0] = pack(tile.a[g][2 * t], tile.a[g][2 * t + 1]);
    a[lane * 4 + 1] = pack(tile.a[g + 8][2 * t], tile.a[g + 8][2 * t + 1]);
    a[lane * 4 + 2] = pack(tile.a[g][2 * t + 8], tile.a[g][2 * t + 9]);
    a[lane * 4 + 3] = pack(tile.a[g + 8][2 * t + 8], tile.a[g + 8][2 * t + 9]);
    b[lane * 2 + 0] = pack(tile.b[2 * t][g], tile.b[2 * t + 1][g]);
    b[lane * 2 + 1] = pack(tile.b[2 * t + 8][g], tile.b[2 * t + 9][g]);
    c[lane * 4 + 0] = tile.c[g][2 * t];
    c[lane * 4 + 1] = tile.c[g][2 * t + 1];
    c[lane * 4 + 2] = tile.c[g + 8][2 * t];
    c[lane * 4 + 3] = tile.c[g + 8][2 * t + 1];
  }
  return BufferSet{{"a", HostBuffer::from(ir::ScalarType::U32, a)},
                   {"b", HostBuffer::from(ir::ScalarType::U32, b)},
                   {"c", HostBuffer::from(ir::ScalarType::F32, c)}};
}

/// D[row][column] from the lanes' d fragments (the C layout).
float d_at(const std::vector<float>& d, unsigned row, unsigned column) {
  const unsigned lane = (row % 8) * 4 + column / 2;
  return d[lane * 4 + (row >= 8 ? 2 : 0) + column % 2];
}

ir::Program mma_program(ir::ScalarType input) {
  return ir::parse_program(fmt::format(
      "program \"mma\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 a: read_only u32[128]\nbuffer @1 b: read_only u32[64]\nbuffer @2 c: read_only f32[128]\n"
      "buffer @3 d: read_write f32[128]\n{{\n"
      "  let lane: u32 = invocation_id.x\n"
      "  d[(lane * 4u32)].v4 = subgroup_mma<{}>(a[(lane * 4u32)].v4, b[(lane * 2u32)].v2, c[(lane * 4u32)].v4)\n"
      "}}\n",
      ir::to_string(input)), "mma.qir");
}

/// D from every backend: the interpreter, then the emulator on sm_80 and sm_90, at -O0 and -O2.
std::vector<std::pair<std::string, std::vector<float>>> run_everywhere(ir::ScalarType input, const Tile& tile) {
  const ir::Program program = mma_program(input);
  reference::ReferenceBackend reference_backend;
  emulator::EmulatorBackend emulator_backend;
  std::vector<std::pair<std::string, std::vector<float>>> results;
  for (const char* level : {"O0", "O2"}) {
    CompileOptions options;
    options.passes.level = std::string(level) == "O0" ? lower::OptimizationLevel::O0 : lower::OptimizationLevel::O2;
    {
      BufferSet buffers = fragments(input, tile);
      buffers["d"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(128, -1.0f));
      reference_backend.run(reference_backend.compile(program, options), buffers);
      results.emplace_back(fmt::format("reference -{}", level), buffers.at("d").as<float>());
    }
    for (const char* target : {"sm_80", "sm_90"}) {
      CompileOptions ptx_options = options;
      ptx_options.target = ptx::parse_target(target);
      BufferSet buffers = fragments(input, tile);
      buffers["d"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(128, -1.0f));
      emulator_backend.run(emulator_backend.compile(program, ptx_options), buffers);
      results.emplace_back(fmt::format("emulator {} -{}", target, level), buffers.at("d").as<float>());
    }
  }
  return results;
}

Tile random_tile(ir::ScalarType input, std::uint64_t seed, bool integers) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  std::uniform_int_distribution<int> integer(-8, 8);
  auto value = [&] {
    const float v = integers ? float(integer(engine)) : real(engine);
    // Round to the input format so that the oracle sees what the fragments hold.
    return input == ir::ScalarType::F16 ? ir::arith::convert<float>(ir::arith::convert<ir::arith::Float16>(v))
                                        : ir::arith::convert<float>(ir::arith::convert<ir::arith::BFloat16>(v));
  };
  Tile tile;
  for (auto& row : tile.a) for (float& v : row) v = value();
  for (auto& row : tile.b) for (float& v : row) v = value();
  for (auto& row : tile.c) for (float& v : row) v = integers ? float(integer(engine)) : real(engine);
  return tile;
}

}  // namespace

TEST_CASE("subgroup_mma equals an f64 matrix product on the interpreter and the emulated mma.sync",
          "[backends][mma]") {
  for (ir::ScalarType input : {ir::ScalarType::F16, ir::ScalarType::BF16}) {
    for (bool integers : {true, false}) {
      const Tile tile = random_tile(input, integers ? 7 : 11, integers);
      const auto results = run_everywhere(input, tile);
      for (const auto& [name, d] : results) {
        INFO(ir::to_string(input) << (integers ? " integers " : " reals ") << name);
        CHECK(std::memcmp(d.data(), results.front().second.data(), d.size() * sizeof(float)) == 0);
        for (unsigned row = 0; row < 16; ++row) {
          for (unsigned column = 0; column < 8; ++column) {
            double exact = tile.c[row][column], magnitude = std::fabs(exact);
            for (unsigned k = 0; k < 16; ++k) {
              exact += double(tile.a[row][k]) * double(tile.b[k][column]);
              magnitude += std::fabs(double(tile.a[row][k]) * double(tile.b[k][column]));
            }
            INFO("D[" << row << "][" << column << "]");
            if (integers) {
              CHECK(d_at(d, row, column) == float(exact));  // every partial sum is a small integer
            } else {
              CHECK(std::fabs(d_at(d, row, column) - exact) <= 17 * std::ldexp(1.0, -24) * magnitude);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("subgroup_mma: a NaN or an infinity in A reaches exactly its row of D", "[backends][mma]") {
  Tile tile = random_tile(ir::ScalarType::F16, 3, true);
  tile.a[2][5] = std::numeric_limits<float>::quiet_NaN();
  tile.a[9][0] = std::numeric_limits<float>::infinity();
  for (const auto& [name, d] : run_everywhere(ir::ScalarType::F16, tile)) {
    INFO(name);
    for (unsigned column = 0; column < 8; ++column) {
      CHECK(std::bit_cast<std::uint32_t>(d_at(d, 2, column)) == 0x7fffffffu);  // canonical NaN
      const bool b_zero = tile.b[0][column] == 0.0f;
      if (b_zero) CHECK(std::isnan(d_at(d, 9, column)));  // inf * 0
      else CHECK(std::isinf(d_at(d, 9, column)));
      CHECK(std::isfinite(d_at(d, 3, column)));
    }
  }
}

TEST_CASE("subgroup_mma is refused for sm_75 by name and needs a whole warp", "[backends][mma]") {
  emulator::EmulatorBackend emulator_backend;
  CompileOptions options;
  options.target = ptx::parse_target("sm_75");
  CHECK_THROWS_WITH(emulator_backend.compile(mma_program(ir::ScalarType::F16), options),
                    Catch::Contains("mma") && Catch::Contains("sm_80"));
  // 16 invocations: half a warp executes mma.sync.
  ir::Program half = mma_program(ir::ScalarType::F16);
  half.workgroup_size = {16, 1, 1};
  options.target = ptx::parse_target("sm_80");
  BufferSet buffers = fragments(ir::ScalarType::F16, random_tile(ir::ScalarType::F16, 5, true));
  buffers["d"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(128, 0.0f));
  CHECK_THROWS_WITH(emulator_backend.run(emulator_backend.compile(half, options), buffers),
                    Catch::Contains("needs all 32 threads of the warp"));
}
