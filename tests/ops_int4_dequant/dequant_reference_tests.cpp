// Dequant-matmul ops on the reference interpreter against the oracles transcribed from
// the RLX seed (with the FP8 decoder replaced by the standard's, see Oracles.h).
//
// Tolerance: none. The kernels add x[i, p] * w(p, j) for p = 0..k-1 in order with the
// seed's rounding of w and of the product (ir/ops/DequantMatmul.h), exactly the seed's
// loops, so every output must match the oracle bit for bit (NaN matches any NaN).
#include <catch2/catch.hpp>

#include <limits>

#include "Oracles.h"
#include "Run.h"
#include "ir/Builder.h"
#include "ir/ops/DequantMatmul.h"

using namespace quantc;
using namespace quantc::tests;
using ir::ScalarType;
using ir::ops::Fp8Format;

namespace {
struct Shape {
  std::uint32_t m, k, n, block_size;
};
// Partial row tiles (m % 4 != 0), n past one 128-column workgroup, partial k blocks,
// block_size 1 and block_size > k.
const Shape kShapes[] = {{1, 1, 1, 1},   {1, 8, 4, 4},    {3, 20, 9, 8},  {5, 64, 33, 32}, {4, 7, 130, 3},
                         {6, 17, 1, 16}, {2, 9, 7, 100},  {8, 33, 129, 1}, {1, 4096, 2, 128}, {3, 5, 4096, 2}};

void require_same_bits(const std::vector<float>& actual, const std::vector<float>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": got " << actual[i] << ", oracle " << expected[i]);
    CHECK(same_bits(actual[i], expected[i]));
  }
}

/// Random FP8 codes that are never NaN in `format` (NaN propagation is tested apart).
std::vector<std::uint8_t> finite_fp8_codes(std::mt19937& engine, std::size_t count, bool e5m2) {
  std::vector<std::uint8_t> codes = random_bytes<std::uint8_t>(engine, count);
  for (auto& code : codes) {
    bool special = e5m2 ? ((code >> 2) & 0x1F) == 0x1F : (code & 0x7F) == 0x7F;
    if (special) code &= 0xBF;  // clear the top exponent bit
  }
  return codes;
}
}  // namespace

TEST_CASE("dequant_matmul_int8 matches the seed loop bit for bit", "[ops_int4_dequant][dequant][reference]") {
  std::mt19937 engine(21);
  for (const Shape& shape : kShapes) {
    for (bool asymmetric : {false, true}) {
      INFO("m " << shape.m << " k " << shape.k << " n " << shape.n << " block " << shape.block_size << " asymmetric "
                << asymmetric);
      const std::size_t sidecars = std::size_t{ir::ceil_div(shape.k, shape.block_size)} * shape.n;
      std::vector<float> x = random_floats(engine, std::size_t{shape.m} * shape.k);
      std::vector<std::int8_t> w = random_bytes<std::int8_t>(engine, std::size_t{shape.k} * shape.n);
      std::vector<float> scales = random_floats(engine, sidecars, 0.001f, 0.1f);
      std::vector<float> zero_points = random_floats(engine, sidecars, -8.0f, 8.0f);
      runtime::BufferSet inputs = {{"x", host(ScalarType::F32, x)},
                                   {"w", host(ScalarType::I8, w)},
                                   {"scales", host(ScalarType::F32, scales)}};
      if (asymmetric) inputs["zero_points"] = host(ScalarType::F32, zero_points);
      require_same_bits(
          run_reference<float>(
              ir::ops::dequant_matmul_int8(shape.m, shape.k, shape.n, shape.block_size, asymmetric), inputs),
          dequant_matmul_int8(x, w, scales, zero_points, shape.m, shape.k, shape.n, shape.block_size, asymmetric));
    }
  }
}

TEST_CASE("dequant_matmul_int8: extremes -128 and 127 give known sums", "[ops_int4_dequant][dequant][reference]") {
  const std::uint32_t m = 3, k = 40, n = 5;
  std::vector<std::int8_t> w(k * n);
  for (std::uint32_t p = 0; p < k; ++p) {
    for (std::uint32_t j = 0; j < n; ++j) w[p * n + j] = j % 2 == 0 ? -128 : 127;
  }
  std::vector<float> out = run_reference<float>(
      ir::ops::dequant_matmul_int8(m, k, n, 16, false),
      {{"x", host(ScalarType::F32, std::vector<float>(m * k, 1.0f))},
       {"w", host(ScalarType::I8, w)},
       {"scales", host(ScalarType::F32, std::vector<float>(3 * n, 0.5f))}});
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) CHECK(out[i * n + j] == (j % 2 == 0 ? -64.0f * k : 63.5f * k));
  }
}

TEST_CASE("dequant_matmul_int4 matches the seed loop bit for bit (odd k*n included)",
          "[ops_int4_dequant][dequant][reference]") {
  std::mt19937 engine(22);
  for (const Shape& shape : kShapes) {
    for (bool asymmetric : {false, true}) {
      INFO("m " << shape.m << " k " << shape.k << " n " << shape.n << " block " << shape.block_size << " asymmetric "
                << asymmetric);
      const std::size_t sidecars = std::size_t{ir::ceil_div(shape.k, shape.block_size)} * shape.n;
      std::vector<float> x = random_floats(engine, std::size_t{shape.m} * shape.k);
      std::vector<std::uint8_t> w = random_bytes<std::uint8_t>(engine, (std::size_t{shape.k} * shape.n + 1) / 2);
      std::vector<float> scales = random_floats(engine, sidecars, 0.001f, 0.1f);
      std::vector<float> zero_points = random_floats(engine, sidecars, 0.0f, 15.0f);
      runtime::BufferSet inputs = {{"x", host(ScalarType::F32, x)},
                                   {"w", host(ScalarType::U8, w)},
                                   {"scales", host(ScalarType::F32, scales)}};
      if (asymmetric) inputs["zero_points"] = host(ScalarType::F32, zero_points);
      require_same_bits(
          run_reference<float>(
              ir::ops::dequant_matmul_int4(shape.m, shape.k, shape.n, shape.block_size, asymmetric), inputs),
          dequant_matmul_int4(x, w, scales, zero_points, shape.m, shape.k, shape.n, shape.block_size, asymmetric));
    }
  }
}

TEST_CASE("dequant_matmul_int8 and int4 in the offset mode match the seed loop with q*s + o bit for bit",
          "[ops_int4_dequant][dequant][reference][offset]") {
  std::mt19937 engine(23);
  for (const Shape& shape : kShapes) {
    INFO("m " << shape.m << " k " << shape.k << " n " << shape.n << " block " << shape.block_size);
    const std::size_t sidecars = std::size_t{ir::ceil_div(shape.k, shape.block_size)} * shape.n;
    std::vector<float> x = random_floats(engine, std::size_t{shape.m} * shape.k);
    std::vector<float> scales = random_floats(engine, sidecars, -0.1f, 0.1f);  // Q4_K's d may be negative
    std::vector<float> offsets = random_floats(engine, sidecars, -1.0f, 1.0f);
    std::vector<std::int8_t> w8 = random_bytes<std::int8_t>(engine, std::size_t{shape.k} * shape.n);
    std::vector<std::uint8_t> w4 = random_bytes<std::uint8_t>(engine, (std::size_t{shape.k} * shape.n + 1) / 2);
    using ir::ops::BlockAffineMode;
    require_same_bits(
        run_reference<float>(ir::ops::dequant_matmul_int8(shape.m, shape.k, shape.n, shape.block_size,
                                                          BlockAffineMode::Offset),
                             {{"x", host(ScalarType::F32, x)},
                              {"w", host(ScalarType::I8, w8)},
                              {"scales", host(ScalarType::F32, scales)},
                              {"offsets", host(ScalarType::F32, offsets)}}),
        dequant_matmul_int8_offset(x, w8, scales, offsets, shape.m, shape.k, shape.n, shape.block_size));
    require_same_bits(
        run_reference<float>(ir::ops::dequant_matmul_int4(shape.m, shape.k, shape.n, shape.block_size,
                                                          BlockAffineMode::Offset),
                             {{"x", host(ScalarType::F32, x)},
                              {"w", host(ScalarType::U8, w4)},
                              {"scales", host(ScalarType::F32, scales)},
                              {"offsets", host(ScalarType::F32, offsets)}}),
        dequant_matmul_int4_offset(x, w4, scales, offsets, shape.m, shape.k, shape.n, shape.block_size));
  }
}

TEST_CASE("dequant_matmul_int4 offset mode: one-hot x reads back q*s + o, each weight as ggml forms it",
          "[ops_int4_dequant][dequant][reference][offset]") {
  // k = 2, n = 16, one block: column j has code j (p = 0) and 15 - j (p = 1); x = (1, 0)
  // and (0, 1) give the weights themselves. s = 3/16 and o = -2.5 (a Q4_K sub-block with
  // d * sc = 3/16, dmin * m = 2.5): every w = q * 3/16 - 2.5 is exact.
  std::vector<std::uint8_t> w(16);
  for (std::uint32_t j = 0; j < 16; ++j) {
    const std::uint32_t first = j, second = 15 - j;  // elements j and 16 + j
    w[j / 2] |= static_cast<std::uint8_t>(first << (4 * (j % 2)));
    w[8 + j / 2] |= static_cast<std::uint8_t>(second << (4 * (j % 2)));
  }
  const ir::Program program = ir::ops::dequant_matmul_int4(2, 2, 16, 2, ir::ops::BlockAffineMode::Offset);
  std::vector<float> out =
      run_reference<float>(program, {{"x", host(ScalarType::F32, std::vector<float>{1, 0, 0, 1})},
                                     {"w", host(ScalarType::U8, w)},
                                     {"scales", host(ScalarType::F32, std::vector<float>(16, 0.1875f))},
                                     {"offsets", host(ScalarType::F32, std::vector<float>(16, -2.5f))}});
  for (std::uint32_t j = 0; j < 16; ++j) {
    CHECK(out[j] == static_cast<float>(j) * 0.1875f - 2.5f);
    CHECK(out[16 + j] == static_cast<float>(15 - j) * 0.1875f - 2.5f);
  }
}

TEST_CASE("dequant_matmul_int4: nibble order is low nibble first along p*n + j",
          "[ops_int4_dequant][dequant][reference]") {
  // k = 1, n = 4: bytes 0x21, 0x43 hold codes 1, 2, 3, 4 for columns 0..3.
  std::vector<float> out = run_reference<float>(
      ir::ops::dequant_matmul_int4(1, 1, 4, 1, false),
      {{"x", host(ScalarType::F32, std::vector<float>{1.0f})},
       {"w", host(ScalarType::U8, std::vector<std::uint8_t>{0x21, 0x43})},
       {"scales", host(ScalarType::F32, std::vector<float>(4, 1.0f))}});
  CHECK(out == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("dequant_matmul_fp8 decodes all 256 codes of both formats per the standard",
          "[ops_int4_dequant][dequant][fp8]") {
  std::vector<std::uint8_t> codes(256);
  for (unsigned code = 0; code < 256; ++code) codes[code] = static_cast<std::uint8_t>(code);
  for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    // m = k = 1, x = 1, scale = 1: out[j] = 0 + (1 * decode(j)) * 1 = decode(j) (-0 becomes +0).
    std::vector<float> out =
        run_reference<float>(ir::ops::dequant_matmul_fp8(1, 1, 256, format),
                             {{"x", host(ScalarType::F32, std::vector<float>{1.0f})},
                              {"w", host(ScalarType::U8, codes)},
                              {"scales", host(ScalarType::F32, std::vector<float>(256, 1.0f))}});
    for (unsigned code = 0; code < 256; ++code) {
      INFO(ir::ops::to_string(format) << " code 0x" << std::hex << code);
      float expected = format == Fp8Format::E4M3 ? fp8_e4m3_spec(code) : fp8_e5m2_spec(code);
      CHECK(same_bits(out[code], expected + 0.0f));
    }
  }
}

TEST_CASE("dequant_matmul_fp8 matches the seed loop (standard decoder) bit for bit",
          "[ops_int4_dequant][dequant][reference]") {
  std::mt19937 engine(23);
  for (const Shape& shape : kShapes) {
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
      const bool e5m2 = format == Fp8Format::E5M2;
      INFO("m " << shape.m << " k " << shape.k << " n " << shape.n << " " << ir::ops::to_string(format));
      std::vector<float> x = random_floats(engine, std::size_t{shape.m} * shape.k);
      std::vector<std::uint8_t> w = finite_fp8_codes(engine, std::size_t{shape.k} * shape.n, e5m2);
      std::vector<float> scales = random_floats(engine, shape.n, 0.001f, 0.1f);
      require_same_bits(run_reference<float>(ir::ops::dequant_matmul_fp8(shape.m, shape.k, shape.n, format),
                                             {{"x", host(ScalarType::F32, x)},
                                              {"w", host(ScalarType::U8, w)},
                                              {"scales", host(ScalarType::F32, scales)}}),
                        dequant_matmul_fp8(x, w, scales, shape.m, shape.k, shape.n, e5m2));
    }
  }
}

TEST_CASE("NaN inputs propagate as NaN", "[ops_int4_dequant][dequant][reference]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::uint32_t m = 3, k = 6, n = 5;
  std::mt19937 engine(24);
  std::vector<float> x = random_floats(engine, m * k);
  x[1 * k + 2] = nan;  // row 1 of out is all NaN
  SECTION("fp8 NaN code in column 3 (E4M3 0x7F) and NaN activation") {
    std::vector<std::uint8_t> w = finite_fp8_codes(engine, k * n, false);
    w[4 * n + 3] = 0x7F;
    std::vector<float> out = run_reference<float>(ir::ops::dequant_matmul_fp8(m, k, n, Fp8Format::E4M3),
                                                  {{"x", host(ScalarType::F32, x)},
                                                   {"w", host(ScalarType::U8, w)},
                                                   {"scales", host(ScalarType::F32, std::vector<float>(n, 1.0f))}});
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) CHECK(std::isnan(out[i * n + j]) == (i == 1 || j == 3));
    }
  }
  SECTION("int8 NaN scale in column 0, block 1") {
    std::vector<float> scales(2 * n, 0.5f);
    scales[1 * n + 0] = nan;
    std::vector<float> out =
        run_reference<float>(ir::ops::dequant_matmul_int8(m, k, n, 4, false),
                             {{"x", host(ScalarType::F32, x)},
                              {"w", host(ScalarType::I8, random_bytes<std::int8_t>(engine, k * n))},
                              {"scales", host(ScalarType::F32, scales)}});
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) CHECK(std::isnan(out[i * n + j]) == (i == 1 || j == 0));
    }
  }
  SECTION("nvfp4 NaN global scale") {
    std::vector<float> out = run_reference<float>(
        ir::ops::dequant_matmul_nvfp4(m, k, n),
        {{"x", host(ScalarType::F32, x)},
         {"w", host(ScalarType::U8, random_bytes<std::uint8_t>(engine, (k * n + 1) / 2))},
         {"scales", host(ScalarType::U8, std::vector<std::uint8_t>(n, 0x38))},
         {"global_scale", host(ScalarType::F32, std::vector<float>{nan})}});
    for (float value : out) CHECK(std::isnan(value));
  }
}

TEST_CASE("dequant_matmul_nvfp4 decodes all 16 E2M1 codes and all 256 E4M3 scales",
          "[ops_int4_dequant][dequant][fp4]") {
  // m = k = 1, n = 16: element j is code j (low nibble first); scale 0x38 = 1.0, global 1.
  std::vector<std::uint8_t> nibbles(8);
  for (unsigned j = 0; j < 16; ++j) nibbles[j / 2] |= static_cast<std::uint8_t>(j << (4 * (j % 2)));
  std::vector<float> codes = run_reference<float>(
      ir::ops::dequant_matmul_nvfp4(1, 1, 16),
      {{"x", host(ScalarType::F32, std::vector<float>{1.0f})},
       {"w", host(ScalarType::U8, nibbles)},
       {"scales", host(ScalarType::U8, std::vector<std::uint8_t>(16, 0x38))},
       {"global_scale", host(ScalarType::F32, std::vector<float>{1.0f})}});
  for (unsigned j = 0; j < 16; ++j) {
    INFO("code " << j);
    CHECK(same_bits(codes[j], fp4_e2m1_spec(j) + 0.0f));
  }
  // n = 256: every weight is E2M1 code 2 (1.0) and column j's block scale is code j.
  std::vector<std::uint8_t> scale_codes(256);
  for (unsigned j = 0; j < 256; ++j) scale_codes[j] = static_cast<std::uint8_t>(j);
  std::vector<float> scales = run_reference<float>(
      ir::ops::dequant_matmul_nvfp4(1, 1, 256),
      {{"x", host(ScalarType::F32, std::vector<float>{1.0f})},
       {"w", host(ScalarType::U8, std::vector<std::uint8_t>(128, 0x22))},
       {"scales", host(ScalarType::U8, scale_codes)},
       {"global_scale", host(ScalarType::F32, std::vector<float>{1.0f})}});
  for (unsigned j = 0; j < 256; ++j) {
    INFO("scale code 0x" << std::hex << j);
    CHECK(same_bits(scales[j], fp8_e4m3_spec(j) + 0.0f));
  }
}

TEST_CASE("dequant_matmul_nvfp4 matches the seed loop bit for bit", "[ops_int4_dequant][dequant][reference]") {
  std::mt19937 engine(25);
  for (const Shape& shape : kShapes) {
    INFO("m " << shape.m << " k " << shape.k << " n " << shape.n);
    std::vector<float> x = random_floats(engine, std::size_t{shape.m} * shape.k);
    std::vector<std::uint8_t> w = random_bytes<std::uint8_t>(engine, (std::size_t{shape.k} * shape.n + 1) / 2);
    std::vector<std::uint8_t> scales =
        finite_fp8_codes(engine, std::size_t{ir::ceil_div(shape.k, 16)} * shape.n, false);
    const float global_scale = 0.75f;
    require_same_bits(run_reference<float>(ir::ops::dequant_matmul_nvfp4(shape.m, shape.k, shape.n),
                                           {{"x", host(ScalarType::F32, x)},
                                            {"w", host(ScalarType::U8, w)},
                                            {"scales", host(ScalarType::U8, scales)},
                                            {"global_scale", host(ScalarType::F32, std::vector<float>{global_scale})}}),
                      dequant_matmul_nvfp4(x, w, scales, global_scale, shape.m, shape.k, shape.n));
  }
}
