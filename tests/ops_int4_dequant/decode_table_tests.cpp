// The FP8/FP4 tables the oracles use, checked exhaustively against CUDA's own host-side
// conversions (cuda_fp8.h, cuda_fp4.h), plus the seed fixtures of the INT4 oracle.
#include <catch2/catch.hpp>

#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>

#include "Oracles.h"

using namespace quantc::tests;

namespace {
float cuda_fp8(unsigned code, __nv_fp8_interpretation_t format) {
  __half_raw raw = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), format);
  return __half2float(__half(raw));
}
float cuda_fp4(unsigned code) {
  __half_raw raw = __nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(code), __NV_E2M1);
  return __half2float(__half(raw));
}
std::uint32_t bits(float value) {
  std::uint32_t result;
  std::memcpy(&result, &value, 4);
  return result;
}
/// Same bits, or both NaN (NaN payloads are not part of either format's contract).
bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits(a) == bits(b); }
}  // namespace

TEST_CASE("E4M3 spec table equals cuda_fp8.h for all 256 codes", "[ops_int4_dequant][fp8]") {
  for (unsigned code = 0; code < 256; ++code) {
    INFO("code 0x" << std::hex << code);
    CHECK(same_value(fp8_e4m3_spec(code), cuda_fp8(code, __NV_E4M3)));
  }
  CHECK(fp8_e4m3_spec(0x7E) == 448.0f);
  CHECK(std::isnan(fp8_e4m3_spec(0x7F)));
  CHECK(std::isnan(fp8_e4m3_spec(0xFF)));
  CHECK(fp8_e4m3_spec(0x01) == std::ldexp(1.0f, -9));
  CHECK(bits(fp8_e4m3_spec(0x80)) == 0x80000000u);
}

TEST_CASE("E5M2 spec table equals cuda_fp8.h for all 256 codes", "[ops_int4_dequant][fp8]") {
  for (unsigned code = 0; code < 256; ++code) {
    INFO("code 0x" << std::hex << code);
    CHECK(same_value(fp8_e5m2_spec(code), cuda_fp8(code, __NV_E5M2)));
  }
  CHECK(fp8_e5m2_spec(0x7B) == 57344.0f);
  CHECK(std::isinf(fp8_e5m2_spec(0x7C)));
  CHECK(fp8_e5m2_spec(0xFC) < 0);
  CHECK(std::isnan(fp8_e5m2_spec(0x7D)));
}

TEST_CASE("the seed's E4M3 decoder deviates from the standard exactly on exponent 15 and -0",
          "[ops_int4_dequant][fp8]") {
  for (unsigned code = 0; code < 256; ++code) {
    INFO("code 0x" << std::hex << code);
    bool exponent_15 = ((code >> 3) & 0xF) == 0xF && (code & 7) != 7;
    bool negative_zero = code == 0x80;
    CHECK(same_value(fp8_e4m3_seed(code), fp8_e4m3_spec(code)) == !(exponent_15 || negative_zero));
  }
  CHECK(std::isinf(fp8_e4m3_seed(0x78)));
  CHECK(fp8_e4m3_spec(0x78) == 256.0f);
}

TEST_CASE("E2M1 spec table equals cuda_fp4.h for all 16 codes", "[ops_int4_dequant][fp4]") {
  const float expected[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (unsigned code = 0; code < 16; ++code) {
    INFO("code " << code);
    CHECK(bits(fp4_e2m1_spec(code)) == bits(cuda_fp4(code)));
    CHECK(bits(fp4_e2m1_spec(code)) == bits(expected[code]));
  }
}

TEST_CASE("INT4 oracle reproduces the seed's packing and fixtures", "[ops_int4_dequant][int4]") {
  CHECK(pack_int4({1, 2, 3, 4, -1, -2, -3, -4}) == std::vector<std::uint32_t>{0xCDEF4321u});
  CHECK(pack_int4({4, 3, 2, 1, -4, -3, -2, -1}) == std::vector<std::uint32_t>{0xFEDC1234u});
  CHECK(int4_dot({0xCDEF4321u}, 0, {0xFEDC1234u}, 0, 8) == 40);
  CHECK(int4_value(0x8u, 0) == -8);
  CHECK(int4_value(0x70000000u, 7) == 7);
  // cols = 9 spills into a second, zero-padded word.
  CHECK(pack_int4({1, 2, 3, 4, -1, -2, -3, -4, 5}) == std::vector<std::uint32_t>{0xCDEF4321u, 5u});
  // The documented order on a sum where it matters: 2^24 + 1 + 1 ... per lane.
  std::vector<float> terms(16, 1.0f);
  terms[0] = 16777216.0f;
  // Lane 0 holds columns 0..7: 2^24 then seven 1s (each rounds away); lane 1 holds 8.
  CHECK(subgroup_order_sum(terms) == 16777216.0f + 8.0f);
}
