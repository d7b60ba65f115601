// Packed signed INT4 ops on the reference interpreter against the plain-C++ oracles:
// the seed's fixtures and matrices, odd shapes, extremes and random inputs (whose
// padding nibbles are random too, so a kernel that reads padding fails).
//
// Tolerances: integer results and every f32 result computed in the documented order
// (see ir/ops/Int4Packed.h) must match the oracle bit for bit. The matvec results are
// also compared with a double-precision sequential sum: each term is rounded once
// (product), added at most cols + 5 times (lane partial + butterfly) and scaled once,
// so |result - exact| <= gamma(cols + 7) * sum|w*x*scale| with gamma(n) = n*u/(1-n*u),
// u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.4).
#include <catch2/catch.hpp>

#include <limits>

#include "Oracles.h"
#include "Run.h"
#include "ir/Builder.h"
#include "ir/ops/Int4Packed.h"

using namespace quantc;
using namespace quantc::tests;
using ir::ScalarType;

namespace {
const std::vector<std::vector<int>> kSeedWeights = {
    {1, 2, 3, 4, -1, -2, -3, -4, 5},
    {4, 3, 2, 1, -4, -3, -2, -1, -5},
    {-8, -7, -6, -5, -4, -3, -2, -1, 0},
};
const std::vector<std::vector<int>> kSeedActivations = {
    {1, -1, 2, -2, 3, -3, 4, -4, 5},
    {-5, 4, -4, 3, -3, 2, -2, 1, -1},
};
const std::vector<float> kSeedRowScales = {0.5f, 0.25f, 0.125f};
const std::vector<float> kSeedBatchScales = {0.75f, 0.375f};

/// Words of `rows` rows of `cols` values, every value `value` (padding nibbles random).
std::vector<std::uint32_t> constant_rows(std::mt19937& engine, std::uint32_t rows, std::uint32_t cols, int value) {
  std::vector<std::uint32_t> words = random_words(engine, std::size_t{rows} * ir::ceil_div(cols, 8));
  std::uint32_t nibble = static_cast<std::uint32_t>(value) & 0xFu;
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t c = 0; c < cols; ++c) {
      std::uint32_t& word = words[r * ir::ceil_div(cols, 8) + c / 8];
      word = (word & ~(0xFu << (4 * (c % 8)))) | (nibble << (4 * (c % 8)));
    }
  }
  return words;
}

std::vector<float> run_batched_matvec(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols,
                                      const std::vector<std::uint32_t>& weights, const std::vector<float>& x,
                                      const std::vector<float>& row_scales) {
  ir::Program program = batch == 1 ? ir::ops::int4_matvec_f32_scaled(rows, cols)
                                   : ir::ops::int4_batched_matvec_f32_scaled(batch, rows, cols);
  return run_reference<float>(program, {{"weights", host(ScalarType::U32, weights)},
                                        {"x", host(ScalarType::F32, x)},
                                        {"row_scales", host(ScalarType::F32, row_scales)}});
}

runtime::BufferSet matmul_inputs(const std::vector<std::uint32_t>& weights,
                                 const std::vector<std::uint32_t>& activations, const std::vector<float>& row_scales,
                                 const std::vector<float>& batch_scales) {
  return {{"weights", host(ScalarType::U32, weights)},
          {"activations", host(ScalarType::U32, activations)},
          {"row_scales", host(ScalarType::F32, row_scales)},
          {"batch_scales", host(ScalarType::F32, batch_scales)}};
}

void require_same_bits(const std::vector<float>& actual, const std::vector<float>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": got " << actual[i] << ", oracle " << expected[i]);
    CHECK(same_bits(actual[i], expected[i]));
  }
}

/// Checks a matvec result bit for bit against the ordered oracle and within the
/// derived bound of the exact sum.
void check_matvec(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols,
                  const std::vector<std::uint32_t>& weights, const std::vector<float>& x,
                  const std::vector<float>& row_scales) {
  INFO("m " << batch << " n " << rows << " k " << cols);
  std::vector<float> actual = run_batched_matvec(batch, rows, cols, weights, x, row_scales);
  require_same_bits(actual, int4_batched_matvec(weights, x, row_scales, batch, rows, cols));
  ExactMatvec exact = int4_batched_matvec_exact(weights, x, row_scales, batch, rows, cols);
  const double u = std::ldexp(1.0, -24);
  const double n = cols + 7.0;
  const double gamma = n * u / (1 - n * u);
  for (std::size_t i = 0; i < actual.size(); ++i) {
    CHECK(std::fabs(actual[i] - exact.value[i]) <= gamma * exact.magnitude[i] + 1e-30);
  }
}
}  // namespace

TEST_CASE("int4_dot_i32: seed fixture 0xCDEF_4321 . 0xFEDC_1234 = 40", "[ops_int4_dequant][int4][reference]") {
  std::vector<std::int32_t> out = run_reference<std::int32_t>(
      ir::ops::int4_dot_i32(8),
      {{"lhs", host(ScalarType::U32, std::vector<std::uint32_t>{0xCDEF4321u})},
       {"rhs", host(ScalarType::U32, std::vector<std::uint32_t>{0xFEDC1234u})}});
  CHECK(out == std::vector<std::int32_t>{40});
}

TEST_CASE("int4_dot_f32_scaled: seed fixture with scales 0.5 and 0.25 = 5.0", "[ops_int4_dequant][int4][reference]") {
  std::vector<float> out =
      run_reference<float>(ir::ops::int4_dot_f32_scaled(8),
                           {{"lhs", host(ScalarType::U32, std::vector<std::uint32_t>{0xCDEF4321u})},
                            {"rhs", host(ScalarType::U32, std::vector<std::uint32_t>{0xFEDC1234u})},
                            {"lhs_scale", host(ScalarType::F32, std::vector<float>{0.5f})},
                            {"rhs_scale", host(ScalarType::F32, std::vector<float>{0.25f})}});
  CHECK(out == std::vector<float>{5.0f});
}

TEST_CASE("int4 dot products match the oracle on odd lengths, extremes and padding garbage",
          "[ops_int4_dequant][int4][reference]") {
  std::mt19937 engine(11);
  for (std::uint32_t lane_count : {1u, 7u, 8u, 9u, 255u, 256u, 257u, 300u, 4095u, 4096u}) {
    INFO("k " << lane_count);
    const std::size_t words = ir::ceil_div(lane_count, 8);
    std::vector<std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>> cases = {
        {random_words(engine, words), random_words(engine, words)},
        {constant_rows(engine, 1, lane_count, -8), constant_rows(engine, 1, lane_count, -8)},
        {constant_rows(engine, 1, lane_count, 7), constant_rows(engine, 1, lane_count, -8)},
    };
    for (const auto& [lhs, rhs] : cases) {
      std::int32_t expected = int4_dot(lhs, 0, rhs, 0, lane_count);
      std::vector<std::int32_t> out = run_reference<std::int32_t>(
          ir::ops::int4_dot_i32(lane_count), {{"lhs", host(ScalarType::U32, lhs)}, {"rhs", host(ScalarType::U32, rhs)}});
      CHECK(out == std::vector<std::int32_t>{expected});
      const float lhs_scale = random_floats(engine, 1)[0], rhs_scale = 3.0f;
      std::vector<float> scaled = run_reference<float>(
          ir::ops::int4_dot_f32_scaled(lane_count),
          {{"lhs", host(ScalarType::U32, lhs)},
           {"rhs", host(ScalarType::U32, rhs)},
           {"lhs_scale", host(ScalarType::F32, std::vector<float>{lhs_scale})},
           {"rhs_scale", host(ScalarType::F32, std::vector<float>{rhs_scale})}});
      CHECK(float_bits(scaled[0]) == float_bits(static_cast<float>(expected) * (lhs_scale * rhs_scale)));
    }
  }
  // Known values for the extremes: (-8)(-8) = 64 and 7(-8) = -56 per lane.
  std::vector<std::int32_t> out = run_reference<std::int32_t>(
      ir::ops::int4_dot_i32(4095), {{"lhs", host(ScalarType::U32, constant_rows(engine, 1, 4095, -8))},
                                    {"rhs", host(ScalarType::U32, constant_rows(engine, 1, 4095, 7))}});
  CHECK(out[0] == -56 * 4095);
}

TEST_CASE("int4_matvec_f32_scaled: the seed's fixtures and matrices", "[ops_int4_dequant][int4][reference]") {
  // Seed fixture: rows 1,2,3,4,-1,-2,-3,-4 and its mirror against x = 1 sum to 0.
  std::vector<float> zero = run_batched_matvec(1, 2, 8, {0xCDEF4321u, 0xFEDC1234u}, std::vector<float>(8, 1.0f),
                                               {0.5f, 0.25f});
  CHECK(zero == std::vector<float>{0.0f, 0.0f});
  // Seed matrix with cols = 9: the ninth value spills into a second word.
  const std::vector<float> x = {1.0f, -0.5f, 0.25f, 2.0f, -1.5f, 0.75f, 1.25f, -2.0f, 0.5f};
  std::vector<std::uint32_t> weights = pack_int4_rows(kSeedWeights);
  std::vector<float> out = run_batched_matvec(1, 3, 9, weights, x, kSeedRowScales);
  // Hand-computed: row 0 = 0.5 * (1 - 1 + 0.75 + 8 + 1.5 - 1.5 - 3.75 + 8 + 2.5) = 7.75.
  CHECK(out[0] == 7.75f);
  check_matvec(1, 3, 9, weights, x, kSeedRowScales);
  const std::vector<float> x_batches = {1.0f,  -0.5f, 0.25f,  2.0f,  -1.5f, 0.75f, 1.25f, -2.0f, 0.5f,
                                        -1.0f, 0.5f,  -0.25f, -2.0f, 1.5f,  -0.75f, -1.25f, 2.0f, -0.5f};
  check_matvec(2, 3, 9, weights, x_batches, kSeedRowScales);
  std::vector<float> batched = run_batched_matvec(2, 3, 9, weights, x_batches, kSeedRowScales);
  CHECK(batched[0] == 7.75f);
  CHECK(batched[3] == -7.75f);  // the second batch is the first negated
}

TEST_CASE("int4 matvec and batched matvec: odd shapes, extremes and random inputs",
          "[ops_int4_dequant][int4][reference]") {
  std::mt19937 engine(5);
  struct Shape {
    std::uint32_t batch, rows, cols;
  };
  for (Shape shape : {Shape{1, 1, 1}, Shape{1, 3, 7}, Shape{1, 3, 8}, Shape{1, 3, 9}, Shape{1, 3, 4095},
                      Shape{1, 2, 4096}, Shape{1, 4096, 9}, Shape{1, 9, 257}, Shape{3, 3, 9}, Shape{4, 5, 33},
                      Shape{5, 9, 64}, Shape{9, 2, 17}, Shape{2, 1, 4095}}) {
    const std::size_t words = std::size_t{shape.rows} * ir::ceil_div(shape.cols, 8);
    check_matvec(shape.batch, shape.rows, shape.cols, random_words(engine, words),
                 random_floats(engine, std::size_t{shape.batch} * shape.cols), random_floats(engine, shape.rows));
  }
  for (int extreme : {-8, 7}) {
    INFO("every weight " << extreme);
    const std::uint32_t rows = 3, cols = 4095;
    std::vector<float> out = run_batched_matvec(1, rows, cols, constant_rows(engine, rows, cols, extreme),
                                                std::vector<float>(cols, 1.0f), {1.0f, 0.5f, -2.0f});
    // Integer-valued partial sums stay exact: the result is extreme * cols * scale.
    CHECK(out == std::vector<float>{float(extreme * 4095), float(extreme * 4095) * 0.5f, float(extreme * 4095) * -2.0f});
  }
}

TEST_CASE("int4_batched_matmul_f32_scaled: seed matrices, odd shapes and extremes",
          "[ops_int4_dequant][int4][reference]") {
  std::vector<std::uint32_t> weights = pack_int4_rows(kSeedWeights);
  std::vector<std::uint32_t> activations = pack_int4_rows(kSeedActivations);
  std::vector<float> out = run_reference<float>(ir::ops::int4_batched_matmul_f32_scaled(2, 3, 9),
                                                matmul_inputs(weights, activations, kSeedRowScales, kSeedBatchScales));
  std::vector<float> expected =
      int4_batched_matmul(weights, activations, kSeedRowScales, kSeedBatchScales, 2, 3, 9);
  require_same_bits(out, expected);
  // Hand-computed: w[0] . a[0] = 1-2+6-8-3+6-12+16+25 = 29 -> 29 * 0.5 * 0.75.
  CHECK(out[0] == 29.0f * 0.5f * 0.75f);
  // Seed fixture: zero words give zeros.
  CHECK(run_reference<float>(ir::ops::int4_batched_matmul_f32_scaled(2, 2, 8),
                             matmul_inputs({0, 0}, {0, 0}, {0.5f, 0.25f}, {0.125f, 0.25f})) ==
        std::vector<float>(4, 0.0f));

  std::mt19937 engine(7);
  struct Shape {
    std::uint32_t batch, rows, cols;
  };
  for (Shape shape : {Shape{1, 1, 1}, Shape{2, 3, 7}, Shape{3, 3, 8}, Shape{4, 3, 9}, Shape{5, 3, 4095},
                      Shape{2, 2, 4096}, Shape{2, 4096, 8}, Shape{9, 10, 300}}) {
    INFO("m " << shape.batch << " n " << shape.rows << " k " << shape.cols);
    const std::uint32_t words = ir::ceil_div(shape.cols, 8);
    std::vector<std::uint32_t> w = random_words(engine, std::size_t{shape.rows} * words);
    std::vector<std::uint32_t> a = random_words(engine, std::size_t{shape.batch} * words);
    std::vector<float> row_scales = random_floats(engine, shape.rows), batch_scales = random_floats(engine, shape.batch);
    require_same_bits(run_reference<float>(ir::ops::int4_batched_matmul_f32_scaled(shape.batch, shape.rows, shape.cols),
                                           matmul_inputs(w, a, row_scales, batch_scales)),
                      int4_batched_matmul(w, a, row_scales, batch_scales, shape.batch, shape.rows, shape.cols));
  }
  // Extremes: all -8 against all -8 gives 64 * cols; against all 7, -56 * cols.
  std::vector<std::uint32_t> minus_eight = constant_rows(engine, 2, 4095, -8);
  std::vector<std::uint32_t> mixed = constant_rows(engine, 1, 4095, -8);
  std::vector<std::uint32_t> sevens = constant_rows(engine, 1, 4095, 7);
  mixed.insert(mixed.end(), sevens.begin(), sevens.end());
  CHECK(run_reference<float>(ir::ops::int4_batched_matmul_f32_scaled(2, 2, 4095),
                             matmul_inputs(minus_eight, mixed, {1.0f, 1.0f}, {1.0f, 1.0f})) ==
        std::vector<float>{64.0f * 4095, 64.0f * 4095, -56.0f * 4095, -56.0f * 4095});
}

TEST_CASE("int4_batched_matmul_top1_f32_scaled: seed matrices, ties, NaN and odd shapes",
          "[ops_int4_dequant][int4][reference]") {
  auto run_top1 = [](std::uint32_t batch, std::uint32_t rows, std::uint32_t cols, const std::vector<std::uint32_t>& w,
                     const std::vector<std::uint32_t>& a, const std::vector<float>& row_scales,
                     const std::vector<float>& batch_scales) {
    std::vector<float> out = run_reference<float>(ir::ops::int4_batched_matmul_top1_f32_scaled(batch, rows, cols),
                                                  matmul_inputs(w, a, row_scales, batch_scales));
    require_same_bits(out, int4_batched_matmul_top1(w, a, row_scales, batch_scales, batch, rows, cols));
    return out;
  };
  std::vector<std::uint32_t> weights = pack_int4_rows(kSeedWeights);
  std::vector<std::uint32_t> activations = pack_int4_rows(kSeedActivations);
  std::vector<float> seed = run_top1(2, 3, 9, weights, activations, kSeedRowScales, kSeedBatchScales);
  // Scores batch 0: 29*0.5*0.75, -29*0.25*0.75, ... -> row 0 wins; batch 1 mirrors it.
  CHECK(seed[2] == 0.0f);
  // Seed fixture: all zero scores tie, so row 0 wins each batch.
  CHECK(run_top1(2, 2, 8, {0, 0}, {0, 0}, {0.5f, 0.25f}, {0.125f, 0.25f}) == std::vector<float>{0, 0, 0, 0});

  std::mt19937 engine(3);
  // Ties: rows 5 and 40 hold the same weights and the highest score -> row 5.
  {
    const std::uint32_t rows = 70, cols = 17, words = 3;
    std::vector<std::uint32_t> w = constant_rows(engine, rows, cols, 0);
    std::vector<std::uint32_t> best = constant_rows(engine, 1, cols, 7);
    std::copy(best.begin(), best.end(), w.begin() + 5 * words);
    std::copy(best.begin(), best.end(), w.begin() + 40 * words);
    std::vector<float> out = run_top1(1, rows, cols, w, constant_rows(engine, 1, cols, 1),
                                      std::vector<float>(rows, 1.0f), {1.0f});
    CHECK(out == std::vector<float>{7.0f * 17, 5.0f});
  }
  // NaN: a NaN row scale never wins; all-NaN gives row 0 and NaN.
  {
    const std::uint32_t rows = 40, cols = 8;
    std::vector<std::uint32_t> w = random_words(engine, rows);
    std::vector<std::uint32_t> a = random_words(engine, 2);
    std::vector<float> row_scales = random_floats(engine, rows, 0.5f, 1.0f);
    row_scales[0] = std::numeric_limits<float>::quiet_NaN();
    row_scales[33] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> out = run_top1(2, rows, cols, w, a, row_scales, {1.0f, -1.0f});
    CHECK(out[2] != 0.0f);
    CHECK(out[3] != 0.0f);
    std::vector<float> all_nan =
        run_top1(2, rows, cols, w, a, std::vector<float>(rows, std::numeric_limits<float>::quiet_NaN()), {1.0f, 1.0f});
    CHECK(std::isnan(all_nan[0]));
    CHECK(all_nan[2] == 0.0f);
  }
  struct Shape {
    std::uint32_t batch, rows, cols;
  };
  for (Shape shape : {Shape{1, 1, 1}, Shape{3, 3, 7}, Shape{9, 70, 17}, Shape{2, 4096, 8}, Shape{2, 3, 4095},
                      Shape{1, 33, 4096}}) {
    INFO("m " << shape.batch << " n " << shape.rows << " k " << shape.cols);
    const std::uint32_t words = ir::ceil_div(shape.cols, 8);
    run_top1(shape.batch, shape.rows, shape.cols, random_words(engine, std::size_t{shape.rows} * words),
             random_words(engine, std::size_t{shape.batch} * words), random_floats(engine, shape.rows),
             random_floats(engine, shape.batch));
  }
}
