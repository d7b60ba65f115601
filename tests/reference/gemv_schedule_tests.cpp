// The fast GEMV schedule of linear_4bit and linear_4bit_affine_grouped
// (ir/ops/QuantizedGemv.h) against a double-precision oracle and against the seed
// program, on the reference interpreter. (The emulator sweep over every op's test shapes
// checks the emitted PTX against the interpreter bit for bit.)
//
// The bound. The fast schedule sums, per group g and column i, D = sum x*q and
// X = sum x in f32 (fma), then acc += s*(D - z*X). Each of D and z*X carries a relative
// error of at most (n_g + 1)*u against sum |x|*q and z*sum |x| (n_g terms, u = 2^-24),
// the subtraction, the fma, the final butterfly (at most 5 levels), the k-subgroups'
// meeting (at most 7 adds) and the bias add at most 16 more roundings of the running
// magnitude. So per output:
//   |fast - exact| <= c * u * (|b| + sum_g s_g * sum_{k in g} |x_k| * (q_k + z_g) * (n_g + 16))
// with c = 2 for safety. A group split into slices applies s*(D_slice - z*X_slice) per
// slice (ir/ops/QuantizedGemv.h): the slices' sums are shorter (n_slice < n_g terms) and
// meet in the same butterfly and meeting, so the same bound holds. The seed's own order obeys the smaller per-term bound of
// linear4bit_tests.cpp, so |fast - seed| is within the sum of both.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "ir/ops/Linear4Bit.h"
#include "ir/ops/QuantizedGemv.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;
using namespace quantc::ir::ops;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
namespace reference = quantc::runtime::reference;

namespace {

struct Inputs {
  std::vector<float> x, scale, bias;
  std::vector<std::uint32_t> packed, zero_point;
};

Inputs random_inputs(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), scales(0.01f, 0.1f);
  Inputs in;
  for (std::uint32_t k = 0; k < in_dim; ++k) in.x.push_back(unit(engine));
  for (std::uint32_t i = 0; i < in_dim / 8 * out_dim; ++i) in.packed.push_back(static_cast<std::uint32_t>(engine()));
  if (group_size != 0) {
    const std::uint32_t groups = (in_dim + group_size - 1) / group_size;
    for (std::uint32_t i = 0; i < groups * out_dim; ++i) {
      in.scale.push_back(scales(engine));
      in.zero_point.push_back(engine() & 0xFu);
    }
  }
  for (std::uint32_t i = 0; i < out_dim; ++i) in.bias.push_back(unit(engine));
  return in;
}

std::vector<float> run(const Program& program, std::uint32_t out_dim, const Inputs& in) {
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = HostBuffer::from(ScalarType::F32, in.x);
  buffers["w"] = HostBuffer::from(ScalarType::U32, in.packed);
  if (!in.scale.empty()) {
    buffers["scale"] = HostBuffer::from(ScalarType::F32, in.scale);
    buffers["zero_point"] = HostBuffer::from(ScalarType::U32, in.zero_point);
  }
  buffers["b"] = HostBuffer::from(ScalarType::F32, in.bias);
  reference::run(program, buffers);
  std::vector<float> out = buffers.at("out").as<float>();
  out.resize(out_dim);
  return out;
}

struct Exact {
  double value = 0;
  double bound = 0;  // the fast schedule's error bound (see the file comment)
};

Exact exact_output(const Inputs& in, std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                   std::uint32_t i) {
  const double u = std::ldexp(1.0, -24);
  const std::uint32_t block = group_size == 0 ? 64 : group_size;  // the schedule's reduction blocks
  Exact result{in.bias[i], 0};
  double magnitude = std::fabs(in.bias[i]);
  for (std::uint32_t first = 0; first < in_dim; first += block) {
    const std::uint32_t last = std::min(first + block, in_dim);
    const std::uint32_t sidecar = (first / block) * out_dim + i;
    const double s = group_size == 0 ? 1.0 : in.scale[sidecar];
    const double z = group_size == 0 ? 0.0 : in.zero_point[sidecar];
    double group_magnitude = 0;
    for (std::uint32_t k = first; k < last; ++k) {
      const double q = (in.packed[(k / 8) * out_dim + i] >> ((k % 8) * 4)) & 0xF;
      result.value += double(in.x[k]) * (q - z) * s;
      group_magnitude += std::fabs(in.x[k]) * (q + z);
    }
    magnitude += s * group_magnitude * double(last - first + 16);
  }
  result.bound = 2 * u * magnitude;
  return result;
}

/// Each output of `program` against the oracle's bound.
void check_against_oracle(const Program& program, const Inputs& in, std::uint32_t in_dim, std::uint32_t out_dim,
                          std::uint32_t group_size) {
  std::vector<float> out = run(program, out_dim, in);
  for (std::uint32_t i = 0; i < out_dim; ++i) {
    Exact exact = exact_output(in, in_dim, out_dim, group_size, i);
    INFO("output " << i << ": " << out[i] << ", exact " << exact.value << ", bound " << exact.bound);
    CHECK(std::fabs(out[i] - exact.value) <= exact.bound);
  }
}

void check_fast_schedule(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size, std::uint32_t seed) {
  Inputs in = random_inputs(in_dim, out_dim, group_size, seed);
  Program fast = group_size == 0 ? linear_4bit(in_dim, out_dim, KernelSchedule::Fast)
                                 : linear_4bit_affine_grouped(in_dim, out_dim, group_size, KernelSchedule::Fast);
  Program seed_program = group_size == 0 ? linear_4bit(in_dim, out_dim, KernelSchedule::Seed)
                                         : linear_4bit_affine_grouped(in_dim, out_dim, group_size, KernelSchedule::Seed);
  REQUIRE(fast.caller_buffers() == seed_program.caller_buffers());  // same files feed either schedule
  std::vector<float> fast_out = run(fast, out_dim, in), seed_out = run(seed_program, out_dim, in);
  for (std::uint32_t i = 0; i < out_dim; ++i) {
    Exact exact = exact_output(in, in_dim, out_dim, group_size, i);
    INFO("output " << i << ": fast " << fast_out[i] << ", seed " << seed_out[i] << ", exact " << exact.value
                   << ", bound " << exact.bound);
    CHECK(std::fabs(fast_out[i] - exact.value) <= exact.bound);
    CHECK(std::fabs(fast_out[i] - seed_out[i]) <= 2 * exact.bound);
  }
}

}  // namespace

TEST_CASE("fast linear_4bit matches a double oracle and the seed within the f32 bound", "[gemv][linear4bit]") {
  // 384x16: 6 blocks of 64 k split in 2 slices each (12 k-lanes at work); 136: a partial block.
  for (auto [in_dim, out_dim] : {std::pair{64u, 16u}, std::pair{136u, 24u}, std::pair{1024u, 64u}, std::pair{8u, 8u},
                                 std::pair{384u, 16u}}) {
    DYNAMIC_SECTION(in_dim << "x" << out_dim) { check_fast_schedule(in_dim, out_dim, 0, 7 + in_dim); }
  }
}

TEST_CASE("fast linear_4bit_affine_grouped matches a double oracle and the seed within the f32 bound",
          "[gemv][linear4bit]") {
  for (auto [in_dim, out_dim, group_size] :
       {std::tuple{256u, 16u, 64u}, std::tuple{72u, 8u, 24u}, std::tuple{200u, 8u, 128u}, std::tuple{1024u, 32u, 128u},
        std::tuple{688u, 16u, 128u}, std::tuple{64u, 8u, 8u}, std::tuple{4096u, 8u, 32u},
        // few groups, so groups are sliced: 3 groups x 4 slices, 2 x 8 (the 200 case also
        // has a partial last group whose later slices read only clamped, zeroed rows)
        std::tuple{384u, 16u, 128u}, std::tuple{256u, 8u, 128u}, std::tuple{2048u, 8u, 256u}}) {
    DYNAMIC_SECTION(in_dim << "x" << out_dim << " group " << group_size) {
      check_fast_schedule(in_dim, out_dim, group_size, 11 + in_dim + group_size);
    }
  }
}

TEST_CASE("every work split of the fast GEMV matches the double oracle", "[gemv][linear4bit]") {
  // Column lanes 1, 2, 4 times k-subgroups 1, 2, 4, 8 (the reduction split across the
  // subgroups of a workgroup, meeting in shared memory), with and without groups, and a
  // partial last group (1000 = 15 groups of 64 and one of 40).
  for (auto [in_dim, out_dim, group_size] : {std::tuple{2048u, 16u, 128u}, std::tuple{1000u, 16u, 64u},
                                             std::tuple{2048u, 16u, 0u}}) {
    Inputs in = random_inputs(in_dim, out_dim, group_size, 3 + in_dim + group_size);
    for (std::uint32_t column_lanes : {1u, 2u, 4u}) {
      for (std::uint32_t k_subgroups : {1u, 2u, 4u, 8u}) {
        GemvSchedule schedule;
        schedule.column_lanes = column_lanes;
        schedule.k_subgroups = k_subgroups;
        NibbleGemv gemv{"linear_4bit_affine_grouped", "split", in_dim, out_dim, group_size, out_dim};
        DYNAMIC_SECTION(in_dim << "x" << out_dim << " group " << group_size << ", " << column_lanes
                               << " column lanes, " << k_subgroups << " k-subgroups") {
          Program program = nibble_gemv(gemv, schedule);
          CHECK(program.workgroup_size[0] == schedule.subgroups_per_workgroup * k_subgroups * 32);
          CHECK((k_subgroups > 1) == !program.shared.empty());
          check_against_oracle(program, in, in_dim, out_dim, group_size);
        }
      }
    }
  }
}

TEST_CASE("the fast GEMV splits K across subgroups only when every k-lane keeps two packed rows", "[gemv][linear4bit]") {
  // Two column lanes (out_dim a multiple of 8, in_dim >= 512): 16 k-lanes per subgroup, so
  // k-subgroups need 32 packed rows each; one column lane (out_dim = 4 mod 8, or a shallow
  // K): 32 k-lanes, 64 rows.
  auto resolved = [](std::uint32_t in_dim, std::uint32_t out_dim) {
    GemvSchedule schedule = resolve_gemv_schedule(NibbleGemv{"g", "g", in_dim, out_dim});
    return std::pair{schedule.column_lanes, schedule.k_subgroups};
  };
  CHECK(resolved(384, 384) == std::pair{1u, 1u});    // 48 rows: 32 k-lanes of 2 rows
  CHECK(resolved(512, 384) == std::pair{2u, 2u});    // 64 rows
  CHECK(resolved(1536, 384) == std::pair{2u, 4u});   // 192 rows
  CHECK(resolved(4096, 4096) == std::pair{2u, 8u});  // 512 rows, capped at 8
  CHECK(resolved(1536, 300) == std::pair{1u, 2u});   // 192 rows, 32 k-lanes
  CHECK(linear_4bit_affine_grouped(4096, 4096, 128, KernelSchedule::Fast).workgroup_size[0] == 512);
  GemvSchedule too_wide;
  too_wide.k_subgroups = 32;  // 2 x 32 x 32 = 2048 invocations
  CHECK(nibble_gemv_unsupported(NibbleGemv{"g", "g", 4096, 16}, too_wide) ==
        "schedule subgroups_per_workgroup=2 k_subgroups=32 exceeds 1024 invocations per workgroup");
}

TEST_CASE("fast affine grouped with zero scales and extreme nibbles is exact on integer data", "[gemv][linear4bit]") {
  // Integer x, power-of-two scales: every partial sum is an exact small integer, so the
  // reordering cannot change the result and fast equals the seed bit for bit.
  const std::uint32_t in_dim = 512, out_dim = 16, group_size = 64;
  Inputs in = random_inputs(in_dim, out_dim, group_size, 5);
  for (std::size_t k = 0; k < in.x.size(); ++k) in.x[k] = static_cast<float>(static_cast<int>(k % 7) - 3);
  for (std::size_t i = 0; i < in.scale.size(); ++i) in.scale[i] = i % 5 == 0 ? 0.0f : 0.5f;
  for (std::size_t i = 0; i < in.packed.size(); ++i) in.packed[i] = i % 3 == 0 ? 0xFFFFFFFFu : in.packed[i];
  for (std::size_t i = 0; i < in.bias.size(); ++i) in.bias[i] = static_cast<float>(i) - 4.0f;
  std::vector<float> fast = run(linear_4bit_affine_grouped(in_dim, out_dim, group_size, KernelSchedule::Fast), out_dim, in);
  std::vector<float> seed = run(linear_4bit_affine_grouped(in_dim, out_dim, group_size, KernelSchedule::Seed), out_dim, in);
  CHECK(fast == seed);
}

TEST_CASE("schedule fast names the shape it cannot run and auto falls back to the seed", "[gemv][linear4bit]") {
  CHECK_THROWS_WITH(linear_4bit(64, 302, KernelSchedule::Fast),
                    Catch::Contains("n=302 is not a multiple of 4 (the columns one subgroup loads)") && Catch::Contains("\"schedule\": \"seed\""));
  CHECK_THROWS_WITH(linear_4bit_affine_grouped(64, 16, 4, KernelSchedule::Fast),
                    Catch::Contains("group_size=4 is not a multiple of 8"));
  CHECK(linear_4bit(64, 302, KernelSchedule::Auto).workgroup_size[0] == 256);           // the seed's launch
  CHECK(linear_4bit(64, 16, KernelSchedule::Auto).workgroup_size[0] == 64);             // the fast launch (8 rows: 1 k-subgroup)
  CHECK(linear_4bit_affine_grouped(64, 16, 4, KernelSchedule::Auto).workgroup_count[0] == 2);  // seed: ceil(16/8)
  // Seed errors still come first for both schedules.
  CHECK_THROWS_WITH(linear_4bit_affine_grouped(12, 16, 4, KernelSchedule::Fast), Catch::Contains("not divisible by 8"));
}

TEST_CASE("a batch of the fast affine GEMV equals each row run alone bit for bit", "[gemv][linear4bit]") {
  // m > 1 with f32 activations (which the tensor cores refuse) runs the batch-1 program once
  // per row of x: row r of out must be exactly what that program gives for row r alone,
  // with and without act-order (x staged in shared memory per row).
  const std::uint32_t in_dim = 1000, out_dim = 16, group_size = 64, m = 3;
  for (bool act_order : {false, true}) {
    DYNAMIC_SECTION("act_order " << act_order) {
      Inputs in = random_inputs(in_dim, out_dim, group_size, 29);
      std::mt19937 engine(31);
      std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
      std::vector<float> x(m * in_dim);
      for (float& value : x) value = unit(engine);
      std::vector<std::uint32_t> perm(in_dim);
      for (std::uint32_t k = 0; k < in_dim; ++k) perm[k] = (k * 7 + 3) % in_dim;  // 7 is coprime to 1000
      auto run_rows = [&](const Program& program, const std::vector<float>& rows) {
        BufferSet buffers = runtime::allocate_buffers(program);
        buffers["x"] = HostBuffer::from(ScalarType::F32, rows);
        if (act_order) buffers["perm"] = HostBuffer::from(ScalarType::U32, perm);
        buffers["w"] = HostBuffer::from(ScalarType::U32, in.packed);
        buffers["scale"] = HostBuffer::from(ScalarType::F32, in.scale);
        buffers["zero_point"] = HostBuffer::from(ScalarType::U32, in.zero_point);
        buffers["b"] = HostBuffer::from(ScalarType::F32, in.bias);
        reference::run(program, buffers);
        return buffers.at("out").as<float>();
      };
      const Program batch = linear_4bit_affine_grouped(in_dim, out_dim, group_size, KernelSchedule::Fast,
                                                       ScalarType::F32, act_order, m);
      REQUIRE(batch.workgroup_count[1] == m);
      REQUIRE(batch.find_shared("w_tile") == nullptr);  // the GEMV, not the tensor cores
      const std::vector<float> out = run_rows(batch, x);
      REQUIRE(out.size() == m * out_dim);
      const Program single = linear_4bit_affine_grouped(in_dim, out_dim, group_size, KernelSchedule::Fast,
                                                        ScalarType::F32, act_order);
      for (std::uint32_t r = 0; r < m; ++r) {
        std::vector<float> row(x.begin() + r * in_dim, x.begin() + (r + 1) * in_dim);
        std::vector<float> alone = run_rows(single, row);
        alone.resize(out_dim);
        INFO("row " << r);
        CHECK(std::vector<float>(out.begin() + r * out_dim, out.begin() + (r + 1) * out_dim) == alone);
        // and the oracle, in the layer's own order, within the bound
        Inputs row_inputs = in;
        row_inputs.x = row;
        if (act_order) {
          for (std::uint32_t k = 0; k < in_dim; ++k) row_inputs.x[k] = row[perm[k]];
        }
        for (std::uint32_t i = 0; i < out_dim; ++i) {
          const Exact exact = exact_output(row_inputs, in_dim, out_dim, group_size, i);
          CHECK(std::fabs(out[r * out_dim + i] - exact.value) <= exact.bound);
        }
      }
    }
  }
}
