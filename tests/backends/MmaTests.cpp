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
#include <cstdlib>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/Arithmetic.h"
#include "ir/Mma.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "lower/LowerToPtx.h"
#include "ptx/Ptxas.h"
#include "RunOn.h"
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

namespace {

/// The verifier's problems (or the parse error) for `body` in a one-subgroup program with
/// the declarations `declarations`, "no error" when there are none.
std::string verify_problems(const std::string& declarations, const std::string& body) {
  try {
    const ir::Program program = ir::parse_program(
        "program \"p\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n" + declarations +
            "{\n  let lane: u32 = invocation_id.x\n" + body + "\n}\n",
        "p.qir");
    std::string all;
    for (const std::string& problem : ir::verify(program)) all += problem + "\n";
    return all.empty() ? std::string("no error") : all;
  } catch (const std::exception& error) {
    return std::string(error.what());
  }
}

/// A in a 16x16 and B in a 16x8 workgroup array (row-major f16), the fragments by
/// subgroup_load_matrix: A as four 8x8 matrices (rows 0-7 / 8-15 by columns 0-7 / 8-15,
/// matrix i's row r named by invocation 8i + r), B as two transposed ones (k rows 0-7 and
/// 8-15); then one subgroup_mma. ldmatrix's layout composed with mma's must give A·B.
/// With `b_words` B's rows are staged as 32-bit words (u32[64], two elements a word, as
/// the 4-bit GEMM stages packed codes): ldmatrix reads the same 16 bytes a row.
ir::Program staged_mma_program(ir::ScalarType input, bool b_words = false) {
  return ir::parse_program(fmt::format(
      "program \"staged_mma\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 a_rows: read_only {0}[256]\nbuffer @1 b_rows: read_only {1}\nbuffer @2 c: read_only f32[128]\n"
      "buffer @3 d: read_write f32[128]\nshared a_tile: {0}[256]\nshared b_tile: {1}\n{{\n"
      "  let lane: u32 = invocation_id.x\n"
      "  for i: u32 in 0u32 .. 8u32 {{\n"
      "    a_tile[((i * 32u32) + lane)] = a_rows[((i * 32u32) + lane)]\n"
      "  }}\n"
      "  for i: u32 in 0u32 .. {2}u32 {{\n"
      "    b_tile[((i * 32u32) + lane)] = b_rows[((i * 32u32) + lane)]\n"
      "  }}\n"
      "  barrier\n"
      "  let matrix: u32 = (lane / 8u32)\n"
      "  let a_row: u32 = ((((matrix & 1u32) * 8u32) + (lane % 8u32)) * 16u32)\n"
      "  let a: u32x4 = subgroup_load_matrix<4>(a_tile[(a_row + ((matrix / 2u32) * 8u32))])\n"
      "  let b: u32x2 = subgroup_load_matrix<2, trans>(b_tile[((lane % 16u32) * {3}u32)])\n"
      "  d[(lane * 4u32)].v4 = subgroup_mma<{0}>(a, b, c[(lane * 4u32)].v4)\n"
      "}}\n",
      ir::to_string(input), b_words ? std::string("u32[64]") : fmt::format("{}[128]", ir::to_string(input)),
      b_words ? 2 : 4, b_words ? 4 : 8),
      "staged_mma.qir");
}

}  // namespace

TEST_CASE("subgroup_load_matrix stages A and B for subgroup_mma: the composition is the matrix product",
          "[backends][mma][ldmatrix]") {
  const bool b_words = GENERATE(false, true);
  for (ir::ScalarType input : {ir::ScalarType::F16, ir::ScalarType::BF16}) {
    const Tile tile = random_tile(input, 23, true);
    std::vector<std::uint16_t> a_rows(256), b_rows(128);
    for (unsigned i = 0; i < 16; ++i) {
      for (unsigned k = 0; k < 16; ++k) a_rows[i * 16 + k] = to_half(input, tile.a[i][k]);
    }
    for (unsigned k = 0; k < 16; ++k) {
      for (unsigned n = 0; n < 8; ++n) b_rows[k * 8 + n] = to_half(input, tile.b[k][n]);
    }
    const ir::Program program = staged_mma_program(input, b_words);
    reference::ReferenceBackend reference_backend;
    emulator::EmulatorBackend emulator_backend;
    std::vector<std::pair<std::string, std::vector<float>>> results;
    for (int backend = 0; backend < 3; ++backend) {
      BufferSet buffers = fragments(input, tile);  // c as fragments
      buffers["a_rows"] = HostBuffer::from(input, a_rows);
      if (b_words) {
        std::vector<std::uint32_t> words(64);
        for (unsigned w = 0; w < 64; ++w) words[w] = std::uint32_t{b_rows[2 * w]} | std::uint32_t{b_rows[2 * w + 1]} << 16;
        buffers["b_rows"] = HostBuffer::from(ir::ScalarType::U32, words);
      } else {
        buffers["b_rows"] = HostBuffer::from(input, b_rows);
      }
      buffers.erase("a");
      buffers.erase("b");
      buffers["d"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(128, -1.0f));
      CompileOptions options;
      if (backend == 0) {
        reference_backend.run(reference_backend.compile(program, options), buffers);
      } else {
        options.target = ptx::parse_target(backend == 1 ? "sm_80" : "sm_90");
        emulator_backend.run(emulator_backend.compile(program, options), buffers);
      }
      results.emplace_back(backend == 0 ? "reference" : backend == 1 ? "emulator sm_80" : "emulator sm_90",
                           buffers.at("d").as<float>());
    }
    for (const auto& [name, d] : results) {
      INFO(ir::to_string(input) << " " << name << (b_words ? " B as u32 words" : ""));
      CHECK(d == results.front().second);
      for (unsigned row = 0; row < 16; ++row) {
        for (unsigned column = 0; column < 8; ++column) {
          double exact = tile.c[row][column];
          for (unsigned k = 0; k < 16; ++k) exact += double(tile.a[row][k]) * double(tile.b[k][column]);
          INFO("D[" << row << "][" << column << "]");
          CHECK(d_at(d, row, column) == float(exact));
        }
      }
    }
  }
}

TEST_CASE("subgroup_load_matrix: the verifier wants a 16- or 32-bit workgroup array and 16-byte aligned rows",
          "[backends][mma][ldmatrix]") {
  auto problems = [](const std::string& body) {
    return verify_problems(
        "buffer @0 out: read_write u32[32]\nshared halves: f16[256]\nshared words: f32[64]\nshared bytes: u8[512]\n",
        body);
  };
  CHECK(problems("  out[lane] = subgroup_load_matrix<1>(halves[(lane * 8u32)])") == "no error");
  CHECK_THAT(problems("  out[lane] = subgroup_load_matrix<1>(halves[(lane * 4u32)])"),
             Catch::Contains("ldmatrix row of 'halves'") && Catch::Contains("multiple of 4 (8 bytes)"));
  CHECK(problems("  out[lane] = subgroup_load_matrix<1>(words[(lane * 4u32)])") == "no error");
  CHECK_THAT(problems("  out[lane] = subgroup_load_matrix<1>(words[(lane * 2u32)])"),
             Catch::Contains("ldmatrix row of 'words'") && Catch::Contains("multiple of 2 (8 bytes)"));
  CHECK_THAT(problems("  out[lane] = subgroup_load_matrix<1>(bytes[(lane * 16u32)])"),
             Catch::Contains("16- or 32-bit workgroup array") && Catch::Contains("'bytes' holds u8"));
  CHECK_THAT(problems("  out[lane] = subgroup_load_matrix<1>(out[lane])"),
             Catch::Contains("not declared as one (ldmatrix reads shared memory"));
  CHECK_THAT(problems("  out[lane] = subgroup_load_matrix<3>(halves[0u32])"), Catch::Contains("1, 2 or 4 matrices"));
}


namespace {

/// A and B staged by async_copy (16 bytes = 8 halves per copy), one group, then
/// async_wait(0), a barrier, ldmatrix and mma: the Marlin-style pipeline's building blocks.
ir::Program async_staged_mma_program() {
  return ir::parse_program(
      "program \"async_staged_mma\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 a_rows: read_only f16[256]\nbuffer @1 b_rows: read_only f16[128]\nbuffer @2 c: read_only f32[128]\n"
      "buffer @3 d: read_write f32[128]\nshared a_tile: f16[256]\nshared b_tile: f16[128]\n{\n"
      "  let lane: u32 = invocation_id.x\n"
      "  async_copy(a_tile[(lane * 8u32)], a_rows[(lane * 8u32)], 16)\n"
      "  if (lane < 16u32) {\n"
      "    async_copy(b_tile[(lane * 8u32)], b_rows[(lane * 8u32)], 16)\n"
      "  }\n"
      "  async_commit\n"
      "  async_wait(0)\n"
      "  barrier\n"
      "  let matrix: u32 = (lane / 8u32)\n"
      "  let a_row: u32 = ((((matrix & 1u32) * 8u32) + (lane % 8u32)) * 16u32)\n"
      "  let a: u32x4 = subgroup_load_matrix<4>(a_tile[(a_row + ((matrix / 2u32) * 8u32))])\n"
      "  let b: u32x2 = subgroup_load_matrix<2, trans>(b_tile[((lane % 16u32) * 8u32)])\n"
      "  d[(lane * 4u32)].v4 = subgroup_mma<f16>(a, b, c[(lane * 4u32)].v4)\n"
      "}\n",
      "async_staged_mma.qir");
}

/// Two groups in flight: chunk 0 to `first`, chunk 1 to `second`; async_wait(1) lands only
/// the first group, async_wait(0) the second. `early` reads `second` after async_wait(1).
ir::Program two_stage_program(bool early) {
  return ir::parse_program(fmt::format(
      "program \"two_stage\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 x: read_only u32[256]\nbuffer @1 out: read_write u32[256]\n"
      "shared first: u32[128]\nshared second: u32[128]\n{{\n"
      "  let lane: u32 = invocation_id.x\n"
      "  async_copy(first[(lane * 4u32)], x[(lane * 4u32)], 16)\n"
      "  async_commit\n"
      "  async_copy(second[(lane * 4u32)], x[((lane * 4u32) + 128u32)], 16)\n"
      "  async_commit\n"
      "  async_wait(1)\n"
      "  barrier\n"
      "  out[(lane * 4u32)].v4 = first[(lane * 4u32)].v4\n"
      "{}"
      "  out[((lane * 4u32) + 128u32)].v4 = second[(lane * 4u32)].v4\n"
      "}}\n",
      early ? "" : "  async_wait(0)\n  barrier\n"),
      "two_stage.qir");
}

std::vector<std::uint32_t> run_two_stage(bool early, bool emulated, const std::vector<std::uint32_t>& x) {
  const ir::Program program = two_stage_program(early);
  BufferSet buffers{{"x", HostBuffer::from(ir::ScalarType::U32, x)},
                    {"out", HostBuffer::from(ir::ScalarType::U32, std::vector<std::uint32_t>(256, 7))}};
  tests::run_on(program, buffers, emulated ? "sm_80" : nullptr);
  return buffers.at("out").as<std::uint32_t>();
}

}  // namespace

TEST_CASE("async_copy stages the tile for ldmatrix and mma: the product, on the interpreter and emulated sm_80/sm_90",
          "[backends][mma][async]") {
  const Tile tile = random_tile(ir::ScalarType::F16, 29, true);
  std::vector<std::uint16_t> a_rows(256), b_rows(128);
  for (unsigned i = 0; i < 16; ++i)
    for (unsigned k = 0; k < 16; ++k) a_rows[i * 16 + k] = to_half(ir::ScalarType::F16, tile.a[i][k]);
  for (unsigned k = 0; k < 16; ++k)
    for (unsigned n = 0; n < 8; ++n) b_rows[k * 8 + n] = to_half(ir::ScalarType::F16, tile.b[k][n]);
  const ir::Program program = async_staged_mma_program();
  for (const char* backend_name : {"reference", "sm_80", "sm_90"}) {
    BufferSet buffers = fragments(ir::ScalarType::F16, tile);
    buffers.erase("a");
    buffers.erase("b");
    buffers["a_rows"] = HostBuffer::from(ir::ScalarType::F16, a_rows);
    buffers["b_rows"] = HostBuffer::from(ir::ScalarType::F16, b_rows);
    buffers["d"] = HostBuffer::from(ir::ScalarType::F32, std::vector<float>(128, -1.0f));
    tests::run_on(program, buffers, backend_name);
    const std::vector<float> d = buffers.at("d").as<float>();
    for (unsigned row = 0; row < 16; ++row) {
      for (unsigned column = 0; column < 8; ++column) {
        double exact = tile.c[row][column];
        for (unsigned k = 0; k < 16; ++k) exact += double(tile.a[row][k]) * double(tile.b[k][column]);
        INFO(backend_name << " D[" << row << "][" << column << "]");
        CHECK(d_at(d, row, column) == float(exact));
      }
    }
  }
}

TEST_CASE("async_wait(n) lands all but the n newest groups, and an early read is a race the emulator exposes",
          "[backends][async]") {
  std::vector<std::uint32_t> x(256);
  for (std::uint32_t i = 0; i < 256; ++i) x[i] = 1000 + i;
  // Waited for: both backends read the copied data.
  CHECK(run_two_stage(false, false, x) == x);
  CHECK(run_two_stage(false, true, x) == x);
  // Read after async_wait(1): the first group has landed on both; the second is still in
  // flight on the emulator (which copies at the wait covering it), so it reads the zeroed
  // shared memory, while the interpreter (which copies at once) reads the data.
  const std::vector<std::uint32_t> reference = run_two_stage(true, false, x);
  const std::vector<std::uint32_t> emulated = run_two_stage(true, true, x);
  CHECK(reference == x);
  CHECK(std::vector<std::uint32_t>(emulated.begin(), emulated.begin() + 128) ==
        std::vector<std::uint32_t>(x.begin(), x.begin() + 128));
  CHECK(std::vector<std::uint32_t>(emulated.begin() + 128, emulated.end()) == std::vector<std::uint32_t>(128, 0));
}

TEST_CASE("async_copy: the verifier wants a workgroup array, a global buffer, one element type and aligned indices",
          "[backends][async]") {
  auto problems = [](const std::string& body) {
    return verify_problems("buffer @0 x: read_only f16[512]\nbuffer @1 out: read_write f32[32]\nshared tile: f16[256]\n",
                           body);
  };
  CHECK(problems("  async_copy(tile[(lane * 8u32)], x[(lane * 8u32)], 16)") == "no error");
  CHECK_THAT(problems("  async_copy(tile[(lane * 4u32)], x[(lane * 8u32)], 16)"),
             Catch::Contains("async_copy to 'tile'") && Catch::Contains("multiple of 4 (8 bytes)"));
  CHECK_THAT(problems("  async_copy(tile[(lane * 8u32)], x[(lane * 2u32)], 16)"),
             Catch::Contains("async_copy from 'x'") && Catch::Contains("multiple of 2 (4 bytes)"));
  CHECK_THAT(problems("  async_copy(out[lane], x[lane], 4)"), Catch::Contains("not declared as one"));
  CHECK_THAT(problems("  async_copy(tile[lane], tile[lane], 4)"), Catch::Contains("as a global buffer"));
  CHECK_THAT(problems("  async_copy(tile[lane], x[lane], 12)"), Catch::Contains("4, 8 or 16 bytes, not 12"));
}

TEST_CASE("the mma, ldmatrix and cp.async programs' PTX assembles with ptxas for sm_80 and sm_90", "[backends][mma][ptxas]") {
  if (!ptx::ptxas_available()) {
    const char* require = std::getenv("QUANTC_REQUIRE_PTXAS");
    if (require != nullptr && std::string(require) == "1") FAIL("ptxas not found and QUANTC_REQUIRE_PTXAS=1");
    WARN("ptxas not found: the mma PTX is not assembled");
    return;
  }
  for (const ir::Program& program : {mma_program(ir::ScalarType::F16), mma_program(ir::ScalarType::BF16),
                                     staged_mma_program(ir::ScalarType::F16), staged_mma_program(ir::ScalarType::BF16),
                                     async_staged_mma_program(), two_stage_program(false)}) {
    for (const char* name : {"sm_80", "sm_90"}) {
      const ptx::Target target = ptx::parse_target(name);
      const std::string text = lower::lower_to_ptx(program, target);
      const ptx::PtxasResult result = ptx::run_ptxas(text, target);
      INFO(program.name << " " << name << "\n" << result.log);
      CHECK(result.success);
      CHECK(result.spill_bytes() == 0);
    }
  }
}
