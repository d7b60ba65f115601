// Tests that need no interpreter: the constructors' errors and registry entries, the
// NF4 threshold construction against brute force, the oracles' round-trip bounds, the
// seed's parity contract on its Qwen3-4B shapes, and the f32-accumulation error.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "Oracles.h"
#include "ir/Verifier.h"
#include "ir/ops/Nf4Gemm.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/Registry.h"
#include "ir/ops/Spec.h"

namespace quantc::tests::quantize_nf4 {
namespace {

using ir::ops::OpError;
using Catch::Matchers::Contains;

const std::vector<std::uint32_t> kGroupSizes = {1, 2, 31, 32, 64, 128};
const std::vector<std::uint32_t> kLengths = {1, 2, 63, 64, 65, 4097};

float ulp(float value) {
  float magnitude = std::fabs(value);
  return std::nextafter(magnitude, std::numeric_limits<float>::infinity()) - magnitude;
}

TEST_CASE("NF4 table matches the seed's NF4_LOOKUP exactly", "[ops_quantize_nf4][nf4]") {
  for (unsigned code = 0; code < 16; ++code) {
    INFO("code " << code);
    CHECK(double{ir::ops::kNf4Table[code]} == kSeedNf4Lookup[code]);  // every entry is an exact f32
  }
}

TEST_CASE("NF4 thresholds pick the nearest code, ties to the lower, for floats at and around each midpoint",
          "[ops_quantize_nf4][nf4]") {
  const auto thresholds = ir::ops::nf4_thresholds();
  auto threshold_code = [&](float x) {
    unsigned code = 0;
    for (float t : thresholds) code += x > t ? 1 : 0;
    return code;
  };
  for (unsigned i = 0; i < 15; ++i) {
    double midpoint = (kSeedNf4Lookup[i] + kSeedNf4Lookup[i + 1]) / 2.0;
    float probe = static_cast<float>(midpoint);
    for (int step = 0; step < 4; ++step) probe = std::nextafter(probe, -2.0f);
    for (int step = 0; step < 9; ++step, probe = std::nextafter(probe, 2.0f)) {
      INFO("midpoint " << i << " probe " << probe);
      CHECK(threshold_code(probe) == nearest_nf4_code(probe));
    }
  }
  for (float x : random_floats(20000, 7, -1.0f, 1.0f)) REQUIRE(threshold_code(x) == nearest_nf4_code(x));
  CHECK(threshold_code(-1.0f) == 0);
  CHECK(threshold_code(0.0f) == 7);
  CHECK(threshold_code(1.0f) == 15);
}

TEST_CASE("INT4 oracle round trip is within scale/2 for every group size and length", "[ops_quantize_nf4][int4]") {
  for (bool symmetric : {true, false}) {
    for (std::uint32_t group_size : kGroupSizes) {
      for (std::uint32_t n : kLengths) {
        std::vector<float> x = random_floats(n, n * 131 + group_size, -3.0f, 2.0f);
        Quantized q = quantize_int4(x, group_size, symmetric);
        std::vector<float> y = dequantize_int4(q, n, group_size, symmetric);
        for (std::uint32_t i = 0; i < n; ++i) {
          float scale = q.scale[i / group_size];
          float bound = scale / 2 * (1 + 1e-5f) + 2 * ulp(x[i]);
          if (!symmetric) {
            float unclamped = std::nearbyint(x[i] / scale) + q.zero_point[i / group_size];
            if (unclamped < 0.0f || unclamped > 15.0f) bound = scale * (1 + 1e-5f) + 2 * ulp(x[i]);
          }
          INFO(fmt::format("symmetric={} group_size={} n={} i={} x={} y={} scale={}", symmetric, group_size, n, i,
                           x[i], y[i], scale));
          REQUIRE(std::fabs(y[i] - x[i]) <= bound);
        }
      }
    }
  }
}

TEST_CASE("NF4 oracle codes are the brute-force nearest and round trips stay within the widest half gap",
          "[ops_quantize_nf4][nf4]") {
  for (std::uint32_t group_size : kGroupSizes) {
    for (std::uint32_t n : kLengths) {
      std::vector<float> x = random_floats(n, n * 17 + group_size);
      Quantized q = quantize_nf4(x, group_size);
      std::vector<float> y = dequantize_nf4(q, n, group_size);
      for (std::uint32_t i = 0; i < n; ++i) {
        float scale = q.scale[i / group_size];
        float normalized = x[i] / scale;
        unsigned code = code_at(q.packed, i);
        for (unsigned other = 0; other < 16; ++other) {
          REQUIRE(std::fabs(double{normalized} - kSeedNf4Lookup[code]) <=
                  std::fabs(double{normalized} - kSeedNf4Lookup[other]));
        }
        REQUIRE(std::fabs(y[i] - x[i]) <= scale * 0.152f + 2 * ulp(x[i]));
      }
    }
  }
}

TEST_CASE("quantizer constructors reject bad parameters with the value and the fix", "[ops_quantize_nf4][errors]") {
  CHECK_THROWS_WITH(ir::ops::quantize_int4(0, 32, true), Contains("n=0") && Contains("Fix"));
  CHECK_THROWS_WITH(ir::ops::quantize_int4(64, 0, false), Contains("group_size=0"));
  CHECK_THROWS_WITH(ir::ops::dequantize_int4(64, 0, true), Contains("group_size=0"));
  CHECK_THROWS_WITH(ir::ops::quantize_nf4(0, 64), Contains("n=0"));
  CHECK_THROWS_WITH(ir::ops::dequantize_nf4(10, 0), Contains("group_size=0"));
  CHECK_THROWS_WITH(ir::ops::quantize_nf4(4294967000u, 1024), Contains("overflows u32"));
  CHECK_THROWS_AS(ir::ops::quantize_int4(0, 1, true), OpError);
}

TEST_CASE("nf4_gemm constructors reject bad shapes with the value and the fix", "[ops_quantize_nf4][errors]") {
  CHECK_THROWS_WITH(ir::ops::nf4_gemm(1, 1, 100), Contains("k=100") && Contains("multiple of 64") && Contains("128"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm_transpose(1, 1, 65), Contains("k=65"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm(0, 1, 64), Contains("m=0"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm(1, 0, 64), Contains("n=0"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm(1, 1, 0), Contains("k=0"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm(70000, 1, 64), Contains("m=70000") && Contains("65535"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm(65535, 65540, 64), Contains("overflows u32"));
  CHECK_THROWS_WITH(ir::ops::nf4_gemm_transpose(65535, 65540, 64), Contains("overflows u32"));
}

TEST_CASE("registry lists the quantize and nf4_gemm ops and every test shape builds a verified program",
          "[ops_quantize_nf4][registry]") {
  const auto& registry = ir::ops::OpRegistry::builtin();
  for (const char* name :
       {"quantize_int4", "dequantize_int4", "quantize_nf4", "dequantize_nf4", "nf4_gemm", "nf4_gemm_transpose"}) {
    const ir::ops::OpInfo* op = registry.find(name);
    REQUIRE(op != nullptr);
    CHECK(!op->test_shapes.empty());
    for (const auto& args : op->test_shapes) {
      ir::Program program = op->build(args);
      CHECK(ir::verify(program).empty());
    }
  }
  ir::ops::OpArgs bad;
  bad.set("m", 1u);
  bad.set("n", 1u);
  bad.set("k", 64u);
  bad.set("accumulate", std::string("f16"));
  CHECK_THROWS_WITH(registry.find("nf4_gemm")->build(bad), Contains("accumulate=\"f16\""));
}

TEST_CASE("quantizer launch: one subgroup per pair of groups, asymmetric adds a zero_point buffer",
          "[ops_quantize_nf4][launch]") {
  ir::Program program = ir::ops::quantize_int4(4097, 31, false);  // 133 groups -> 67 pairs -> 9 workgroups
  CHECK(program.workgroup_size == std::array<std::uint32_t, 3>{256, 1, 1});
  CHECK(program.workgroup_count == std::array<std::uint32_t, 3>{9, 1, 1});
  REQUIRE(program.buffers.size() == 4);
  CHECK(program.buffers[1].element == ir::ScalarType::U8);
  CHECK(program.buffers[1].count == 2049);
  CHECK(program.buffers[3].name == "zero_point");
  CHECK(ir::ops::quantize_int4(10, 4, true).buffers.size() == 3);
}

TEST_CASE("nf4_gemm parity contract C-NF4-003 on the seed's Qwen3-4B shapes (oracle, m = 1)",
          "[ops_quantize_nf4][nf4_gemm]") {
  struct Shape {
    std::uint32_t m, n, k;
  };
  for (Shape shape : {Shape{1, 2560, 2560}, Shape{1, 640, 2560}, Shape{1, 6912, 2560}, Shape{1, 2560, 6912}}) {
    Nf4Matrix b = random_nf4_matrix(shape.k, shape.n, shape.n + shape.k);
    std::vector<float> a = random_floats(std::size_t{shape.m} * shape.k, shape.k);
    std::vector<float> dense(std::size_t{shape.k} * shape.n);
    for (std::uint32_t r = 0; r < shape.k; ++r) {
      for (std::uint32_t c = 0; c < shape.n; ++c) dense[std::size_t{r} * shape.n + c] = b.at(r, c);
    }
    std::vector<float> fused = nf4_gemm(a, b, shape.m);
    std::vector<float> naive = naive_gemm_f32(a, dense, shape.m, shape.k, shape.n);
    float worst = 0.0f;
    for (std::size_t i = 0; i < fused.size(); ++i) worst = std::max(worst, std::fabs(fused[i] - naive[i]));
    fmt::print("nf4_gemm parity {}x{}x{}: max |fused - naive f32| = {:.3g}\n", shape.m, shape.n, shape.k, worst);
    CHECK(worst <= 1e-3f);
  }
}

TEST_CASE("nf4_gemm f32 accumulation error on k = 11008", "[ops_quantize_nf4][nf4_gemm]") {
  const std::uint32_t k = 11008, n = 64;
  Nf4Matrix b = quantize_nf4_matrix(random_floats(std::size_t{k} * n, 11), k, n);
  std::vector<float> a = random_floats(k, 12);
  std::vector<float> f64 = nf4_gemm(a, b, 1, true);
  std::vector<float> f32 = nf4_gemm(a, b, 1, false);
  std::vector<double> exact(n, 0.0), magnitude(n, 0.0);
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t r = 0; r < k; ++r) {
      exact[c] += double{a[r]} * double{b.at(r, c)};
      magnitude[c] += std::fabs(double{a[r]} * double{b.at(r, c)});
    }
  }
  double worst32 = 0, worst64 = 0, worst_relative = 0, typical = 0;
  for (std::uint32_t c = 0; c < n; ++c) {
    worst32 = std::max(worst32, std::fabs(f32[c] - exact[c]));
    worst64 = std::max(worst64, std::fabs(f64[c] - exact[c]));
    worst_relative = std::max(worst_relative, std::fabs(f32[c] - exact[c]) / magnitude[c]);
    typical += std::fabs(exact[c]) / n;
  }
  fmt::print("nf4_gemm k=11008: max |f32 acc - exact| = {:.3g}, max |f64 acc - exact| = {:.3g}, "
             "max f32 error / sum|terms| = {:.3g}, mean |C| = {:.3g}\n",
             worst32, worst64, worst_relative, typical);
  for (std::uint32_t c = 0; c < n; ++c) {
    CHECK(std::fabs(f64[c] - exact[c]) <= ulp(static_cast<float>(exact[c])) / 2);  // one f32 rounding
  }
  CHECK(worst32 > worst64);       // f32 accumulation loses bits on long k ...
  CHECK(worst_relative < 1e-6);   // ... but stays far below the 1e-3 parity tolerance
}

}  // namespace
}  // namespace quantc::tests::quantize_nf4

namespace quantc::tests::quantize_nf4 {
namespace {

TEST_CASE("examples/specs for the quantize and nf4_gemm ops parse and build", "[ops_quantize_nf4][specs]") {
  for (const char* op :
       {"quantize_int4", "dequantize_int4", "quantize_nf4", "dequantize_nf4", "nf4_gemm", "nf4_gemm_transpose"}) {
    std::string path = fmt::format("{}/examples/specs/{}.json", QUANTC_SOURCE_DIR, op);
    std::ifstream file(path);
    REQUIRE(file.good());
    std::stringstream text;
    text << file.rdbuf();
    ir::ops::OpSpec spec = ir::ops::parse_spec(text.str(), path);
    CHECK(spec.op->name == op);
    ir::Program program = ir::ops::build_program(spec);
    CHECK(ir::verify(program).empty());
  }
}

}  // namespace
}  // namespace quantc::tests::quantize_nf4
