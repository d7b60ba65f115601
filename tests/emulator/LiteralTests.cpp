// The emulator's reading of PTX literals (PTX ISA 4.5.1 "Constants"): hexadecimal
// (0x/0X, any letter case), decimal, octal (leading 0), binary (0b), the U suffix and
// negation for integers; decimal floats (evaluated as f64 and rounded to the operand
// type) and the 0f/0d hexadecimal IEEE encodings for floats.
//
// Regression: a hexadecimal literal containing the letter e (0xea, nvcc's lop3 truth
// table for (a & b) | c) was read as a decimal float and became 0.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "EmulatorTestSupport.h"

using namespace quantc::runtime::emulator;
using namespace quantc::runtime::emulator::testing;

namespace {

/// The 32-bit result of `body` (which writes %r20) for one thread with a = a_value.
std::uint64_t run_one(const std::string& body, std::uint64_t a_value = 0, bool wide = false) {
  return run_lanes(body, {a_value}, {}, {}, wide).at(0);
}

}  // namespace

TEST_CASE("hexadecimal literals containing e are integers: mov.b32 %r, 0xea gives 234", "[emulator][parser][literal]") {
  CHECK(run_one("mov.b32 %r20, 0xea;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0xEA;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0XeA;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0xe;") == 14u);
  CHECK(run_one("mov.b32 %r20, 0xE8;") == 232u);
  CHECK(run_one("mov.b32 %r20, 0xe0000000;") == 0xe0000000u);
  CHECK(run_one("mov.b32 %r20, 0x1e5;") == 0x1e5u);  // not 1e5 = 100000
  CHECK(run_one("mov.b32 %r20, 0xdeadbeef;") == 0xdeadbeefu);
  CHECK(run_one("mov.b64 %rd20, 0xfedcba9876543210;", 0, true) == 0xfedcba9876543210ull);
  // In every operand position an immediate can take.
  CHECK(run_one("add.u32 %r20, %r10, 0xea;", 1) == 235u);
  CHECK(run_one("and.b32 %r20, %r10, 0XeA;", 0xff) == 0xeau);
  CHECK(run_one("mov.b32 %r11, 0xf0f0f0f0; mov.b32 %r13, 0x0000ffff; lop3.b32 %r20, %r10, %r11, %r13, 0xea;",
                0x12345678) == ((0x12345678u & 0xf0f0f0f0u) | 0x0000ffffu));
  CHECK(run_one("mov.b32 %r11, 0xf0f0f0f0; mov.b32 %r13, 0x0000ffff; lop3.b32 %r20, %r10, %r11, %r13, 0xEA;",
                0x12345678) == ((0x12345678u & 0xf0f0f0f0u) | 0x0000ffffu));
  CHECK(run_one("mov.b32 %r11, 0xf0f0f0f0; mov.b32 %r13, 0x0000ffff; lop3.b32 %r20, %r10, %r11, %r13, 234;",
                0x12345678) == ((0x12345678u & 0xf0f0f0f0u) | 0x0000ffffu));
  // Selector nibbles 3 and e (byte 6 = byte 2 of the second operand, sign-replicated).
  CHECK(run_one("prmt.b32 %r20, %r10, %r10, 0xe3;", 0x80a21100) == 0x0000ff80u);
}

TEST_CASE("integer literals in decimal, octal and binary, with U suffixes and negation", "[emulator][parser][literal]") {
  CHECK(run_one("mov.b32 %r20, 234;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0352;") == 234u);  // octal
  CHECK(run_one("mov.b32 %r20, 0b11101010;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0B11101010;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0;") == 0u);
  CHECK(run_one("mov.b32 %r20, 00;") == 0u);
  CHECK(run_one("mov.b32 %r20, 0x0;") == 0u);
  CHECK(run_one("mov.b32 %r20, 234U;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0xeaU;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0XEAu;") == 234u);
  CHECK(run_one("mov.b32 %r20, 0352U;") == 234u);
  CHECK(run_one("mov.b32 %r20, 4294967295U;") == 0xffffffffu);
  CHECK(run_one("mov.u32 %r20, -1;") == 0xffffffffu);
  CHECK(run_one("mov.u32 %r20, -234;") == static_cast<std::uint32_t>(-234));
  CHECK(run_one("mov.u32 %r20, -0xea;") == static_cast<std::uint32_t>(-234));
  CHECK(run_one("add.s32 %r20, %r10, -0352;", 1000) == 1000u - 234u);
  CHECK(run_one("mov.s64 %rd20, -1;", 0, true) == ~0ull);
  CHECK(run_one("mov.u64 %rd20, 0x8000000000000000;", 0, true) == 0x8000000000000000ull);
  CHECK(run_one("mov.u64 %rd20, 18446744073709551615U;", 0, true) == ~0ull);
  // Immediates in address offsets use the same reader.
  CHECK(run_one("st.global.u32 [%rd1+0x0], %r10; ld.global.u32 %r20, [%rd1+0x0];", 0xea) == 0xeau);
}

TEST_CASE("float literals: decimal 1.5e3 and 2.5 and 0f/0d hexadecimal encodings into .f32 and .f64",
          "[emulator][parser][literal]") {
  auto f32_result = [](const std::string& literal) {
    return run_one("mov.f32 %f20, " + literal + "; mov.b32 %r20, %f20;");
  };
  auto f64_result = [](const std::string& literal) {
    return run_one("mov.f64 %fd20, " + literal + "; mov.b64 %rd20, %fd20;", 0, true);
  };
  CHECK(f32_result("1.5e3") == f32(1500.0f));
  CHECK(f32_result("1.5E3") == f32(1500.0f));
  CHECK(f32_result("2.5") == f32(2.5f));
  CHECK(f32_result("1e3") == f32(1000.0f));
  CHECK(f32_result("2.5e-1") == f32(0.25f));  // signed exponents, as ptxas accepts them
  CHECK(f32_result("2.5E+2") == f32(250.0f));
  CHECK(f32_result("-1.0e-2") == f32(-0.01f));
  CHECK(f32_result(".5") == f32(0.5f));  // no digit before the point
  CHECK(f32_result("5.") == f32(5.0f));  // none after it
  CHECK(f32_result("0.1") == f32(0.1f));  // f64 0.1 rounded to nearest f32
  CHECK(f32_result("-2.5") == f32(-2.5f));
  CHECK(f32_result("0f3FC00000") == f32(1.5f));
  CHECK(f32_result("0F3fc00000") == f32(1.5f));
  CHECK(f32_result("0f7F800000") == 0x7f800000u);
  CHECK(f32_result("0f7FC00001") == 0x7fc00001u);  // a NaN payload moves unchanged
  CHECK(f32_result("-0f3FC00000") == f32(-1.5f));
  CHECK(f32_result("0f00000001") == 0x00000001u);
  CHECK(f64_result("1.5e3") == f64(1500.0));
  CHECK(f64_result("2.5") == f64(2.5));
  CHECK(f64_result("0.1") == f64(0.1));
  CHECK(f64_result("1e-300") == f64(1e-300));
  CHECK(f64_result("-.25E+1") == f64(-2.5));
  CHECK(f64_result("0d3FF8000000000000") == f64(1.5));
  CHECK(f64_result("0D3ff8000000000000") == f64(1.5));
  CHECK(f64_result("-0d3FF8000000000000") == f64(-1.5));
  CHECK(f64_result("0dFFF0000000000000") == f64(-INFINITY));
  // As arithmetic operands.
  CHECK(run_one("add.f32 %f20, %f10, 2.5; mov.b32 %r20, %f20;", f32(1.0f)) == f32(3.5f));
  CHECK(run_one("mul.f32 %f20, %f10, 0f40000000; mov.b32 %r20, %f20;", f32(1.25f)) == f32(2.5f));
  CHECK(run_one("fma.rn.f64 %fd20, %fd10, 1.5e3, 0d3FF0000000000000; mov.b64 %rd20, %fd20;", f64(2.0), true) ==
        f64(3001.0));
  // A 0f literal into a .b32 register is its bit pattern.
  CHECK(run_one("mov.b32 %r20, 0f3F800000;") == 0x3f800000u);
}

TEST_CASE("malformed literals are refused, not read as something else", "[emulator][parser][literal]") {
  CHECK_THROWS_AS(parse_ptx(wrap_kernel("mov.b32 %r20, 0b102;", false)), PtxParseError);
  CHECK_THROWS_AS(parse_ptx(wrap_kernel("mov.b32 %r20, 0xeg;", false)), PtxParseError);
  CHECK_THROWS_AS(parse_ptx(wrap_kernel("mov.b32 %r20, 089;", false)), PtxParseError);  // 8 and 9 are not octal
}
