// Interpreter-vs-oracle tests: every quantize/dequantize and nf4_gemm op runs through the
// reference interpreter (runtime::reference::run) on generated and edge-case inputs and
// must match the plain-C++ oracles bit for bit (quantizer codes, scales and zero points;
// nf4_gemm outputs, whose f64 accumulation order is fixed).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "Oracles.h"
#include "ir/Arithmetic.h"
#include "ir/ops/Nf4Gemm.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/Registry.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/Interpreter.h"

namespace quantc::tests::quantize_nf4 {
namespace {

using runtime::BufferSet;
using runtime::HostBuffer;

constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const std::vector<std::uint32_t> kGroupSizes = {1, 2, 31, 32, 64, 128};
const std::vector<std::uint32_t> kLengths = {1, 2, 63, 64, 65, 4097};

/// Bitwise float comparison (NaN == NaN, +0 != -0 is not expected here).
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

BufferSet run(const ir::Program& program, BufferSet inputs) {
  BufferSet buffers = runtime::allocate_buffers(program);
  for (auto& [name, buffer] : inputs) buffers[name] = std::move(buffer);
  runtime::reference::run(program, buffers);
  return buffers;
}

Quantized run_quantizer(const std::vector<float>& x, std::uint32_t group_size, int scheme /*0 sym, 1 asym, 2 nf4*/) {
  auto n = static_cast<std::uint32_t>(x.size());
  ir::Program program =
      scheme == 2 ? ir::ops::quantize_nf4(n, group_size) : ir::ops::quantize_int4(n, group_size, scheme == 0);
  BufferSet out = run(program, {{"x", HostBuffer::from(ir::ScalarType::F32, x)}});
  Quantized q{out.at("packed").as<std::uint8_t>(), out.at("scale").as<float>(), {}};
  if (scheme == 1) q.zero_point = out.at("zero_point").as<float>();
  return q;
}

void require_same(const Quantized& actual, const Quantized& expected, const std::string& context) {
  INFO(context);
  REQUIRE(actual.packed.size() == expected.packed.size());
  for (std::size_t i = 0; i < actual.packed.size(); ++i) {
    INFO("byte " << i);
    REQUIRE(int{actual.packed[i]} == int{expected.packed[i]});
  }
  REQUIRE(actual.scale.size() == expected.scale.size());
  for (std::size_t g = 0; g < actual.scale.size(); ++g) {
    INFO("group " << g << " scale " << actual.scale[g] << " expected " << expected.scale[g]);
    REQUIRE(same_bits(actual.scale[g], expected.scale[g]));
  }
  REQUIRE(actual.zero_point.size() == expected.zero_point.size());
  for (std::size_t g = 0; g < actual.zero_point.size(); ++g) {
    INFO("group " << g << " zero_point " << actual.zero_point[g] << " expected " << expected.zero_point[g]);
    REQUIRE(same_bits(actual.zero_point[g], expected.zero_point[g]));
  }
}

Quantized oracle_quantize(const std::vector<float>& x, std::uint32_t group_size, int scheme) {
  return scheme == 2 ? quantize_nf4(x, group_size) : quantize_int4(x, group_size, scheme == 0);
}

std::vector<float> run_dequantizer(const Quantized& q, std::uint32_t n, std::uint32_t group_size, int scheme) {
  ir::Program program =
      scheme == 2 ? ir::ops::dequantize_nf4(n, group_size) : ir::ops::dequantize_int4(n, group_size, scheme == 0);
  BufferSet inputs{{"packed", HostBuffer::from(ir::ScalarType::U8, q.packed)},
                   {"scale", HostBuffer::from(ir::ScalarType::F32, q.scale)}};
  if (scheme == 1) inputs["zero_point"] = HostBuffer::from(ir::ScalarType::F32, q.zero_point);
  return run(program, std::move(inputs)).at("y").as<float>();
}

const char* scheme_name(int scheme) { return scheme == 0 ? "int4 symmetric" : scheme == 1 ? "int4 asymmetric" : "nf4"; }

TEST_CASE("quantizers match the oracles and round-trip through the dequantizers for every group size and length",
          "[ops_quantize_nf4][interpreter][quantize]") {
  for (int scheme : {0, 1, 2}) {
    for (std::uint32_t group_size : kGroupSizes) {
      for (std::uint32_t n : kLengths) {
        std::string context = fmt::format("{} group_size={} n={}", scheme_name(scheme), group_size, n);
        std::vector<float> x = random_floats(n, n * 7 + group_size + scheme, -2.0f, 3.0f);
        Quantized expected = oracle_quantize(x, group_size, scheme);
        Quantized actual = run_quantizer(x, group_size, scheme);
        require_same(actual, expected, context);
        if (n % 2 == 1) REQUIRE((actual.packed.back() >> 4) == 0);  // unused high nibble
        std::vector<float> y = run_dequantizer(actual, n, group_size, scheme);
        std::vector<float> y_oracle = scheme == 2 ? dequantize_nf4(expected, n, group_size)
                                                  : dequantize_int4(expected, n, group_size, scheme == 0);
        for (std::uint32_t i = 0; i < n; ++i) {
          INFO(context << " i=" << i << " x=" << x[i] << " y=" << y[i]);
          REQUIRE(same_bits(y[i], y_oracle[i]));
          float scale = actual.scale[i / group_size];
          if (scheme == 2) {
            unsigned code = code_at(actual.packed, i);
            REQUIRE(code == nearest_nf4_code(x[i] / scale));  // brute force over all 16 codes
          } else if (scheme == 0) {
            REQUIRE(std::fabs(y[i] - x[i]) <= scale / 2 * (1 + 1e-5f) + 4e-7f * std::fabs(x[i]));
          }
        }
      }
    }
  }
}

TEST_CASE("dequantizers match the oracles on random codes and scales", "[ops_quantize_nf4][interpreter][dequantize]") {
  for (int scheme : {0, 1, 2}) {
    for (std::uint32_t group_size : {1u, 31u, 64u}) {
      const std::uint32_t n = 255;
      const std::uint32_t groups = (n + group_size - 1) / group_size;
      Quantized q;
      for (float v : random_floats((n + 1) / 2, 3, 0.0f, 256.0f)) q.packed.push_back(static_cast<std::uint8_t>(v));
      q.packed.back() &= 0x0F;
      q.scale = random_floats(groups, 4, 0.01f, 2.0f);
      if (scheme == 1) {
        for (float v : random_floats(groups, 5, -20.0f, 20.0f)) q.zero_point.push_back(std::nearbyint(v));
      }
      std::vector<float> y = run_dequantizer(q, n, group_size, scheme);
      std::vector<float> expected = scheme == 2 ? dequantize_nf4(q, n, group_size)
                                                : dequantize_int4(q, n, group_size, scheme == 0);
      for (std::uint32_t i = 0; i < n; ++i) {
        INFO(scheme_name(scheme) << " group_size=" << group_size << " i=" << i);
        REQUIRE(same_bits(y[i], expected[i]));
      }
    }
  }
}

TEST_CASE("special values: all-zero and constant groups, NaN and infinities get the documented codes",
          "[ops_quantize_nf4][interpreter][special]") {
  // Four groups of 4: all zeros | constant 2.5 | NaN, +inf, -inf, 1.0 | NaN, NaN, +inf, -inf.
  const std::vector<float> x = {0.0f, 0.0f, -0.0f, 0.0f, 2.5f, 2.5f, 2.5f, 2.5f,
                                kNaN, kInfinity, -kInfinity, 1.0f, kNaN, kNaN, kInfinity, -kInfinity};
  for (int scheme : {0, 1, 2}) {
    INFO(scheme_name(scheme));
    Quantized q = run_quantizer(x, 4, scheme);
    require_same(q, oracle_quantize(x, 4, scheme), scheme_name(scheme));
    for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(code_at(q.packed, i) <= 15);
    std::vector<float> y = run_dequantizer(q, 16, 4, scheme);
    for (std::size_t i = 0; i < 4; ++i) CHECK(y[i] == 0.0f);                     // all-zero group -> exact zeros
    for (std::size_t i = 4; i < 8; ++i) CHECK(std::fabs(y[i] - 2.5f) <= 1e-6f);  // constant group round-trips
    for (std::size_t i = 0; i < 16; ++i) CHECK(std::isfinite(y[i]));            // never NaN or inf out
    // NaN -> the code that dequantizes nearest to zero: exactly zero unless an
    // asymmetric zero point lies outside 0..15 (group 2's only finite value is 1.0).
    if (scheme == 1) {
      CHECK(code_at(q.packed, 8) == static_cast<unsigned>(std::min(std::max(q.zero_point[2], 0.0f), 15.0f)));
      CHECK(code_at(q.packed, 12) == 0);  // group 3 has zero point 0
      CHECK(y[12] == 0.0f);
    } else {
      CHECK(y[8] == 0.0f);
    }
    CHECK(code_at(q.packed, 9) == 15);                                          // +inf -> largest code
    CHECK(code_at(q.packed, 10) == 0);                                          // -inf -> smallest code
    CHECK(std::fabs(y[11] - 1.0f) <= 1e-6f);  // infinities do not enter the scale: 1.0 is the group's absmax
    if (scheme == 0) CHECK(code_at(q.packed, 8) == 8);
    if (scheme == 2) CHECK(code_at(q.packed, 8) == 7);
    CHECK(q.scale[3] == (scheme == 0 ? 1e-12f / 7.0f : scheme == 1 ? 1e-12f / 15.0f : 0.0f));  // no finite element
  }
}

TEST_CASE("nf4_gemm and its transpose match the oracle on odd m and n", "[ops_quantize_nf4][interpreter][nf4_gemm]") {
  for (std::uint32_t m : {1u, 3u}) {
    for (std::uint32_t n : {1u, 3u, 33u}) {
      const std::uint32_t k = 128;
      Nf4Matrix b = random_nf4_matrix(k, n, m * 100 + n);
      HostBuffer bytes = HostBuffer::from(ir::ScalarType::U8, b.bytes);
      bytes.element = ir::ScalarType::U32;  // same little-endian bytes viewed as words
      BufferSet weights{{"b_nf4", bytes}, {"b_scales", HostBuffer::from(ir::ScalarType::F32, b.scales)}};
      for (bool use_f64 : {true, false}) {
        std::vector<float> a = random_floats(std::size_t{m} * k, m + n);
        BufferSet inputs = weights;
        inputs["a"] = HostBuffer::from(ir::ScalarType::F32, a);
        auto accumulation = use_f64 ? ir::ops::Nf4Accumulation::F64 : ir::ops::Nf4Accumulation::F32;
        std::vector<float> c = run(ir::ops::nf4_gemm(m, n, k, accumulation), inputs).at("c").as<float>();
        std::vector<float> expected = nf4_gemm(a, b, m, use_f64);
        for (std::size_t i = 0; i < c.size(); ++i) {
          INFO(fmt::format("nf4_gemm m={} n={} f64={} i={}: {} vs {}", m, n, use_f64, i, c[i], expected[i]));
          REQUIRE(same_bits(c[i], expected[i]));
        }
      }
      std::vector<float> a = random_floats(std::size_t{m} * n, 9 + m + n);
      BufferSet inputs = weights;
      inputs["a"] = HostBuffer::from(ir::ScalarType::F32, a);
      std::vector<float> c = run(ir::ops::nf4_gemm_transpose(m, n, k), inputs).at("c").as<float>();
      std::vector<float> expected = nf4_gemm_transpose(a, b, m);
      for (std::size_t i = 0; i < c.size(); ++i) {
        INFO(fmt::format("transpose m={} n={} i={}: {} vs {}", m, n, i, c[i], expected[i]));
        REQUIRE(same_bits(c[i], expected[i]));
      }
    }
  }
}

TEST_CASE("nf4_gemm on the seed's long-k shapes (Qwen3-4B k = 2560 and 6912, reduced m and n)",
          "[ops_quantize_nf4][interpreter][nf4_gemm]") {
  for (std::uint32_t k : {2560u, 6912u}) {
    const std::uint32_t m = 1, n = 3;
    Nf4Matrix b = random_nf4_matrix(k, n, k);
    HostBuffer bytes = HostBuffer::from(ir::ScalarType::U8, b.bytes);
    bytes.element = ir::ScalarType::U32;
    std::vector<float> a = random_floats(k, k + 1);
    BufferSet inputs{{"a", HostBuffer::from(ir::ScalarType::F32, a)},
                     {"b_nf4", bytes},
                     {"b_scales", HostBuffer::from(ir::ScalarType::F32, b.scales)}};
    std::vector<float> c = run(ir::ops::nf4_gemm(m, n, k), inputs).at("c").as<float>();
    std::vector<float> expected = nf4_gemm(a, b, m);
    for (std::uint32_t i = 0; i < n; ++i) REQUIRE(same_bits(c[i], expected[i]));
  }
}

TEST_CASE("quantize_nf4 -> nf4_gemm composes and approximates the f64 matmul of the original matrix",
          "[ops_quantize_nf4][interpreter][composition]") {
  const std::uint32_t m = 3, n = 33, k = 256;
  // W is B^T with normally distributed entries (what NF4 is designed for): row c of W
  // (k values) is column c of B, so quantize_nf4 over W's rows in groups of 64
  // produces nf4_gemm's column-major blocks.
  std::mt19937_64 engine(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(std::size_t{n} * k);
  for (float& v : w) v = normal(engine);
  std::vector<float> b_row_major(std::size_t{k} * n);
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t r = 0; r < k; ++r) b_row_major[std::size_t{r} * n + c] = w[std::size_t{c} * k + r];
  }
  BufferSet quantized = run(ir::ops::quantize_nf4(n * k, 64), {{"x", HostBuffer::from(ir::ScalarType::F32, w)}});
  HostBuffer packed = quantized.at("packed");
  packed.element = ir::ScalarType::U32;  // u8[n*k/2] and u32[n*k/8] are the same bytes
  std::vector<float> scales = quantized.at("scale").as<float>();
  std::vector<float> a = random_floats(std::size_t{m} * k, 22);
  BufferSet inputs{{"a", HostBuffer::from(ir::ScalarType::F32, a)},
                   {"b_nf4", packed},
                   {"b_scales", quantized.at("scale")}};
  std::vector<float> c = run(ir::ops::nf4_gemm(m, n, k), inputs).at("c").as<float>();
  std::vector<double> exact = matmul_f64(a, b_row_major, m, k, n);

  // The fused result equals the oracle pipeline bit for bit ...
  std::vector<float> pipeline = nf4_gemm(a, quantize_nf4_matrix(b_row_major, k, n), m);
  double worst = 0.0, error_squares = 0.0, exact_squares = 0.0;
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t column = 0; column < n; ++column) {
      std::size_t index = std::size_t{i} * n + column;
      REQUIRE(same_bits(c[index], pipeline[index]));
      // ... and within the hard NF4 bound: each weight is off by at most half the widest
      // gap between NF4 neighbours (0.1519) times its block's scale.
      double bound = 1e-5;
      for (std::uint32_t r = 0; r < k; ++r) {
        bound += std::fabs(double{a[std::size_t{i} * k + r]}) * 0.1520 * scales[(std::size_t{column} * k + r) / 64];
      }
      double error = std::fabs(c[index] - exact[index]);
      INFO("row " << i << " column " << column);
      REQUIRE(error <= bound);
      worst = std::max(worst, error);
      error_squares += error * error;
      exact_squares += exact[index] * exact[index];
    }
  }
  double relative_rms = std::sqrt(error_squares / exact_squares);
  fmt::print("quantize_nf4 -> nf4_gemm ({}x{}x{}, normal weights): max |C - f64 matmul| = {:.4g}, "
             "relative rms error = {:.4g}\n",
             m, n, k, worst, relative_rms);
  CHECK(worst > 0.0);  // quantization is lossy: a zero error would mean the test compared the wrong things
  CHECK(relative_rms < 0.15);
}

TEST_CASE("every registry test shape runs in bounds and subgroup-uniform in the interpreter and matches the oracle",
          "[ops_quantize_nf4][interpreter][registry]") {
  const auto& registry = ir::ops::OpRegistry::builtin();
  for (const char* name :
       {"quantize_int4", "dequantize_int4", "quantize_nf4", "dequantize_nf4", "nf4_gemm", "nf4_gemm_transpose"}) {
    const ir::ops::OpInfo* op = registry.find(name);
    REQUIRE(op != nullptr);
    for (const ir::ops::OpArgs& args : op->test_shapes) {
      ir::Program program = op->build(args);
      INFO(name << " " << program.name);
      BufferSet buffers = runtime::random_buffers(program, 5);
      REQUIRE_NOTHROW(runtime::reference::run(program, buffers));
      std::string op_name = name;
      if (op_name.rfind("quantize", 0) == 0) {
        std::uint32_t group_size = args.u32("group_size");
        int scheme = op_name == "quantize_nf4" ? 2 : args.boolean("symmetric") ? 0 : 1;
        Quantized actual{buffers.at("packed").as<std::uint8_t>(), buffers.at("scale").as<float>(), {}};
        if (scheme == 1) actual.zero_point = buffers.at("zero_point").as<float>();
        require_same(actual, oracle_quantize(buffers.at("x").as<float>(), group_size, scheme), program.name);
      } else if (op_name.rfind("nf4_gemm", 0) == 0) {
        std::uint32_t m = args.u32("m"), n = args.u32("n"), k = args.u32("k");
        Nf4Matrix b{k, n, buffers.at("b_nf4").bytes, buffers.at("b_scales").as<float>(),
                    args.has("quant_type") && args.choice("quant_type") == "fp4"};
        // f16/bf16 activations (ir/ops/Activation.h): a widens exactly, c is the f32 (f64)
        // result rounded once more, so it is within u_h of the f32 oracle's value.
        const ir::ScalarType activation = buffers.at("a").element;
        const bool half = activation != ir::ScalarType::F32;
        auto as_f32 = [&](const HostBuffer& buffer) {
          if (!half) return buffer.as<float>();
          std::vector<float> values;
          for (std::uint16_t bits : buffer.as<std::uint16_t>()) {
            values.push_back(static_cast<float>(ir::arith::decode(bits, ir::arith::format_of(activation))));
          }
          return values;
        };
        std::vector<float> a = as_f32(buffers.at("a"));
        bool transpose = op_name == "nf4_gemm_transpose";
        bool use_f64 = transpose || args.choice("accumulate") == "f64";
        std::vector<float> expected = transpose ? nf4_gemm_transpose(a, b, m) : nf4_gemm(a, b, m, use_f64);
        std::vector<float> c = as_f32(buffers.at("c"));
        REQUIRE(c.size() == expected.size());
        if (half) {
          // u_h * |expected| + eta_h for the final rounding, on the f32 bound of the schedule
          // (the loose one below; the seed's own is 2u|E| + u*T).
          const double u_h = activation == ir::ScalarType::F16 ? 0x1p-11 : 0x1p-8;
          const double eta_h = activation == ir::ScalarType::F16 ? 0x1p-25 : 0x1p-134;
          const std::uint32_t reduction = transpose ? n : k;
          for (std::size_t i = 0; i < c.size(); ++i) {
            const std::uint32_t row = static_cast<std::uint32_t>(i / (transpose ? k : n));
            const std::uint32_t column = static_cast<std::uint32_t>(i % (transpose ? k : n));
            double magnitude = 0;
            for (std::uint32_t j = 0; j < reduction; ++j) {
              magnitude += transpose ? std::fabs(double(a[row * n + j]) * b.at(column, j))
                                     : std::fabs(double(a[row * k + j]) * b.at(j, column));
            }
            const double u = std::ldexp(1.0, -24);
            const double f32_bound = 2 * u * std::fabs(double(expected[i])) + (reduction + 64) * u * magnitude;
            INFO(program.name << " output " << i << ": " << c[i] << " vs " << expected[i]);
            REQUIRE(std::fabs(double(c[i]) - double(expected[i])) <=
                    f32_bound + u_h * (std::fabs(double(expected[i])) + f32_bound) + eta_h);
          }
          continue;
        }
        if (args.has("schedule") && args.choice("schedule") == "fast") {
          // The fast schedule sums in another order: within the bound of
          // tests/reference/nf4_schedule_tests.cpp, here the loose (reduction + 64) * u * T.
          const std::uint32_t reduction = transpose ? n : k;
          for (std::size_t i = 0; i < c.size(); ++i) {
            double magnitude = 0;
            for (std::uint32_t j = 0; j < reduction; ++j) {
              magnitude += transpose ? std::fabs(double(a[j]) * b.at(std::uint32_t(i), j))
                                     : std::fabs(double(a[j]) * b.at(j, std::uint32_t(i)));
            }
            const double u = std::ldexp(1.0, -24);
            INFO(program.name << " output " << i);
            REQUIRE(std::fabs(double(c[i]) - double(expected[i])) <=
                    2 * u * std::fabs(double(expected[i])) + (reduction + 64) * u * magnitude + 1e-30);
          }
          continue;
        }
        for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(same_bits(c[i], expected[i]));
      }
    }
  }
}

}  // namespace
}  // namespace quantc::tests::quantize_nf4
