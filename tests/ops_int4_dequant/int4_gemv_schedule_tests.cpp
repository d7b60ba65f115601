// The fast schedule of int4_matvec_f32_scaled and int4_batched_matvec_f32_scaled
// (ir/ops/Int4Packed.h, "schedule": "fast") on the reference interpreter: against a
// plain-C++ oracle of its documented order (bit for bit), a double-precision sum (within
// the derived bound), the seed program (within the sum of both bounds; equal where every
// partial sum is exact), and its OpError cases. (The emulator sweep over every op's test
// shapes checks the emitted PTX against the interpreter bit for bit.)
//
// The bounds (u = 2^-24, gamma(n) = n*u/(1-n*u), Higham 2nd ed. eq. 3.4; magnitude =
// |row_scale| * sum_c |w[c]*x[c]|):
//  - fast: a lane adds 32*ceil(cols/(1024k)) terms by fma (one rounding each, from
//    +0.0; k the k-subgroups), the butterfly adds 5 roundings on the way to its
//    k-subgroup's sum, the meeting k - 1 and the row scale one: with
//    m = 32*ceil(cols/(1024k)) + k - 1, |fast - exact| <= gamma(m + 6) * magnitude;
//  - seed: a lane adds n = 8*ceil(cols/256) rounded products (2 roundings for the first,
//    one per further term), then 5 butterfly roundings and the scale:
//    |seed - exact| <= gamma(n + 7) * magnitude;
//  - so |fast - seed| <= (gamma(m + 6) + gamma(n + 7)) * magnitude.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>

#include "Oracles.h"
#include "Run.h"
#include "ir/Builder.h"
#include "ir/ops/Int4Packed.h"

using namespace quantc;
using namespace quantc::tests;
using ir::ScalarType;
using ir::ops::KernelSchedule;

namespace {

double gamma(double n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

struct Inputs {
  std::uint32_t batch = 1, rows = 0, cols = 0;
  std::vector<std::uint32_t> weights;
  std::vector<float> x, row_scales;
};

Inputs random_inputs(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), scales(-0.1f, 0.1f);
  Inputs in{batch, rows, cols, {}, {}, {}};
  for (std::uint32_t i = 0; i < rows * (cols / 8); ++i) in.weights.push_back(static_cast<std::uint32_t>(engine()));
  for (std::uint32_t i = 0; i < batch * cols; ++i) in.x.push_back(unit(engine) * std::ldexp(1.0f, int(engine() % 9) - 4));
  for (std::uint32_t r = 0; r < rows; ++r) in.row_scales.push_back(scales(engine));
  return in;
}

ir::Program build(const Inputs& in, KernelSchedule schedule) {
  return in.batch == 1 ? ir::ops::int4_matvec_f32_scaled(in.rows, in.cols, schedule)
                       : ir::ops::int4_batched_matvec_f32_scaled(in.batch, in.rows, in.cols, schedule);
}

std::vector<float> run(const Inputs& in, KernelSchedule schedule) {
  return run_reference<float>(build(in, schedule), {{"weights", host(ScalarType::U32, in.weights)},
                                                    {"x", host(ScalarType::F32, in.x)},
                                                    {"row_scales", host(ScalarType::F32, in.row_scales)}});
}

/// The fast schedule's documented order: k = int4_row_gemv_k_subgroups(cols) k-subgroups;
/// lane l of k-subgroup ks adds, for spans ks, ks+k, ... (128 words each), words l, l+32,
/// l+64, l+96 of the span that lie in the row (8 columns each, increasing) with fma from
/// +0.0 (a word past the row adds fma(0, q, acc) = acc: acc is never -0.0); butterfly
/// xor 16..1 per k-subgroup; k-subgroup 0's total plus k-subgroups 1, 2, ... in order;
/// times the scale.
std::vector<float> fast_order_oracle(const Inputs& in) {
  std::vector<float> out(std::size_t{in.batch} * in.rows);
  const std::uint32_t words = in.cols / 8, spans = ir::ceil_div(words, 128);
  const std::uint32_t k_subgroups = ir::ops::int4_row_gemv_k_subgroups(in.cols);
  for (std::uint32_t b = 0; b < in.batch; ++b) {
    for (std::uint32_t r = 0; r < in.rows; ++r) {
      std::vector<int> w = unpack_int4_row(in.weights, r, in.cols);
      float total = 0.0f;
      for (std::uint32_t ks = 0; ks < k_subgroups; ++ks) {
        std::array<float, 32> lanes{};
        for (std::uint32_t lane = 0; lane < 32; ++lane) {
          float acc = 0.0f;
          for (std::uint32_t span = ks; span < spans; span += k_subgroups) {
            for (std::uint32_t j = 0; j < 4; ++j) {
              const std::uint32_t word = span * 128 + j * 32 + lane;
              if (word >= words) continue;
              for (std::uint32_t c = word * 8; c < word * 8 + 8; ++c) {
                acc = std::fma(in.x[std::size_t{b} * in.cols + c], static_cast<float>(w[c]), acc);
              }
            }
          }
          lanes[lane] = acc;
        }
        for (std::uint32_t mask = 16; mask >= 1; mask /= 2) {
          std::array<float, 32> next{};
          for (std::uint32_t lane = 0; lane < 32; ++lane) next[lane] = lanes[lane] + lanes[lane ^ mask];
          lanes = next;
        }
        total = ks == 0 ? lanes[0] : total + lanes[0];
      }
      out[std::size_t{b} * in.rows + r] = in.row_scales[r] * total;
    }
  }
  return out;
}

void check_fast_schedule(const Inputs& in) {
  INFO("m " << in.batch << " n " << in.rows << " k " << in.cols);
  const ir::Program fast = build(in, KernelSchedule::Fast), seed = build(in, KernelSchedule::Seed);
  REQUIRE(fast.caller_buffers() == seed.caller_buffers());  // the same files feed either schedule
  REQUIRE(build(in, KernelSchedule::Auto).workgroup_size == fast.workgroup_size);
  const std::vector<float> fast_out = run(in, KernelSchedule::Fast), seed_out = run(in, KernelSchedule::Seed);
  const std::vector<float> ordered = fast_order_oracle(in);
  const ExactMatvec exact = int4_batched_matvec_exact(in.weights, in.x, in.row_scales, in.batch, in.rows, in.cols);
  const std::uint32_t k_subgroups = ir::ops::int4_row_gemv_k_subgroups(in.cols);
  const double fast_gamma = gamma(32.0 * ir::ceil_div(in.cols, 1024 * k_subgroups) + k_subgroups - 1 + 6);
  const double seed_gamma = gamma(8.0 * ir::ceil_div(in.cols, 256) + 7);
  REQUIRE(fast_out.size() == exact.value.size());
  for (std::size_t i = 0; i < fast_out.size(); ++i) {
    INFO("output " << i << ": fast " << fast_out[i] << ", seed " << seed_out[i] << ", exact " << exact.value[i]
                   << ", magnitude " << exact.magnitude[i]);
    CHECK(same_bits(fast_out[i], ordered[i]));
    CHECK(std::fabs(fast_out[i] - exact.value[i]) <= fast_gamma * exact.magnitude[i]);
    CHECK(std::fabs(seed_out[i] - exact.value[i]) <= seed_gamma * exact.magnitude[i]);
    CHECK(std::fabs(double(fast_out[i]) - seed_out[i]) <= (fast_gamma + seed_gamma) * exact.magnitude[i]);
  }
}

}  // namespace

TEST_CASE("fast int4_matvec_f32_scaled: documented order, double oracle and the seed within the bound",
          "[gemv][int4][reference]") {
  for (auto [rows, cols] : {std::pair{8u, 64u}, std::pair{5u, 1056u}, std::pair{4u, 32u}, std::pair{13u, 2048u},
                            std::pair{7u, 96u}, std::pair{1u, 4096u}, std::pair{6u, 1024u + 4 * 32},
                            // k-subgroups 2 and 4 with partial last spans; 19 rows: 5 row
                            // groups in workgroups of 2, the last workgroup's second redoing
                            // the fifth and storing nothing
                            std::pair{19u, 1536u + 32}, std::pair{9u, 4096u + 3 * 1024 + 96}}) {
    DYNAMIC_SECTION(rows << "x" << cols) { check_fast_schedule(random_inputs(1, rows, cols, 3 + rows * cols)); }
  }
}

TEST_CASE("fast int4_batched_matvec_f32_scaled: documented order, double oracle and the seed within the bound",
          "[gemv][int4][reference]") {
  for (auto [batch, rows, cols] : {std::tuple{1u, 4u, 64u}, std::tuple{3u, 6u, 1056u}, std::tuple{2u, 8u, 320u},
                                   std::tuple{5u, 9u, 96u}, std::tuple{4u, 3u, 32u},
                                   std::tuple{3u, 5u, 5120u + 64}}) {
    DYNAMIC_SECTION(batch << "x" << rows << "x" << cols) {
      check_fast_schedule(random_inputs(batch, rows, cols, 17 + batch * rows * cols));
    }
  }
}

TEST_CASE("fast int4 matvec on edge cases: extreme nibbles, zero and negative scales, huge and tiny x",
          "[gemv][int4][reference]") {
  Inputs in = random_inputs(2, 10, 1088, 99);
  for (std::size_t i = 0; i < in.weights.size(); ++i) {
    const std::uint32_t patterns[] = {0x88888888u, 0x77777777u, 0x00000000u, 0xFFFFFFFFu, 0x8F7F0F1Fu};
    if (i % 3 != 0) in.weights[i] = patterns[i % 5];
  }
  in.row_scales[0] = 0.0f;
  in.row_scales[1] = -1.0f;
  in.row_scales[2] = 1e10f;
  for (std::size_t c = 0; c < in.x.size(); c += 7) in.x[c] = c % 2 ? 1e20f : -1e-30f;
  for (std::size_t c = 3; c < in.x.size(); c += 11) in.x[c] = 0.0f;
  check_fast_schedule(in);
}

TEST_CASE("fast int4 matvec equals the seed bit for bit when every partial sum is exact", "[gemv][int4][reference]") {
  // Small integer x and nibbles: every lane partial, butterfly sum and product is an exact
  // integer below 2^24, so any order gives the same f32; the scale then rounds once alike.
  for (std::uint32_t batch : {1u, 3u}) {
    Inputs in = random_inputs(batch, 12, 2080, 5 + batch);
    for (std::size_t c = 0; c < in.x.size(); ++c) in.x[c] = static_cast<float>(static_cast<int>(c % 9) - 4);
    const std::vector<float> fast = run(in, KernelSchedule::Fast), seed = run(in, KernelSchedule::Seed);
    const ExactMatvec exact = int4_batched_matvec_exact(in.weights, in.x, in.row_scales, in.batch, in.rows, in.cols);
    REQUIRE(fast.size() == seed.size());
    for (std::size_t i = 0; i < fast.size(); ++i) {
      INFO("m " << batch << " output " << i);
      CHECK(same_bits(fast[i], seed[i]));
      CHECK(double(fast[i]) == double(static_cast<float>(exact.value[i])));
    }
  }
}

TEST_CASE("schedule fast names the int4 matvec shape it cannot run and auto falls back to the seed",
          "[gemv][int4]") {
  using ir::ops::int4_batched_matvec_f32_scaled;
  using ir::ops::int4_matvec_f32_scaled;
  CHECK_THROWS_WITH(int4_matvec_f32_scaled(8, 100, KernelSchedule::Fast),
                    Catch::Contains("int4_matvec_f32_scaled has no fast schedule") &&
                        Catch::Contains("k=100 is not a multiple of 32") &&
                        Catch::Contains("\"schedule\": \"seed\""));
  CHECK_THROWS_WITH(int4_batched_matvec_f32_scaled(2, 8, 264, KernelSchedule::Fast),
                    Catch::Contains("k=264 is not a multiple of 32"));
  // Within the seed's grid limit (ceil(200000/4) = 50000) but not the fast tile's.
  CHECK_THROWS_WITH(int4_batched_matvec_f32_scaled(200000, 4, 32, KernelSchedule::Fast),
                    Catch::Contains("m=200000 needs ceil(m/2)=100000 workgroups along y"));
  CHECK(int4_batched_matvec_f32_scaled(200000, 4, 32, KernelSchedule::Auto).workgroup_count[1] == 50000);  // seed
  CHECK(int4_matvec_f32_scaled(8, 100, KernelSchedule::Auto).workgroup_size[0] == 256);  // the seed's launch
  CHECK(int4_matvec_f32_scaled(8, 128, KernelSchedule::Auto).workgroup_size[0] == 128);  // the fast launch
  // The seed's errors come first for every schedule.
  CHECK_THROWS_WITH(int4_matvec_f32_scaled(0, 100, KernelSchedule::Fast), Catch::Contains("n=0"));
  CHECK_THROWS_WITH(int4_batched_matvec_f32_scaled(300000, 1, 32, KernelSchedule::Fast),
                    Catch::Contains("65535") && Catch::Contains("split the batch"));
}
