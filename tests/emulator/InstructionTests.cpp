// Per-instruction semantics of the PTX emulator, against values derived by hand from
// the PTX ISA and IEEE 754 (or computed by an independent plain-C++ formula).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <limits>
#include <random>

#include "EmulatorTestSupport.h"

using namespace quantc::runtime::emulator;
using namespace quantc::runtime::emulator::testing;

namespace {
const float kNextAfterOne = std::nextafter(1.0f, 2.0f);
const float kNextBelowMinusOne = std::nextafter(-1.0f, -2.0f);
}  // namespace

TEST_CASE("cvt f64 -> f32 honours each rounding mode, including overflow", "[emulator][cvt]") {
  double between = 1.0 + std::ldexp(1.0, -30);  // strictly between 1 and the next float
  std::vector<std::uint64_t> inputs = {f64(between), f64(-between), f64(1e300), f64(-1e300)};
  auto run_mode = [&](const std::string& mode) {
    return run_lanes("cvt." + mode + ".f32.f64 %f20, %fd10;\n mov.b32 %r20, %f20;", inputs);
  };
  auto rn = run_mode("rn"), rz = run_mode("rz"), rm = run_mode("rm"), rp = run_mode("rp");
  CHECK(as_f32(rn[0]) == 1.0f);
  CHECK(as_f32(rz[0]) == 1.0f);
  CHECK(as_f32(rm[0]) == 1.0f);
  CHECK(as_f32(rp[0]) == kNextAfterOne);
  CHECK(as_f32(rm[1]) == kNextBelowMinusOne);
  CHECK(as_f32(rp[1]) == -1.0f);
  CHECK(std::isinf(as_f32(rn[2])));
  CHECK(as_f32(rz[2]) == std::numeric_limits<float>::max());
  CHECK(as_f32(rm[2]) == std::numeric_limits<float>::max());
  CHECK(std::isinf(as_f32(rp[2])));
  CHECK(as_f32(rp[3]) == -std::numeric_limits<float>::max());
  CHECK(std::isinf(as_f32(rm[3])));
}

TEST_CASE("cvt float -> integer rounds as asked and saturates, NaN gives 0", "[emulator][cvt]") {
  std::vector<std::uint64_t> inputs = {f32(2.5f), f32(3.5f), f32(-2.5f), f32(-2.7f), f32(3e9f), f32(-3e9f),
                                       f32(std::nanf("")), f32(-1.0f)};
  auto rni = run_lanes("cvt.rni.s32.f32 %r20, %f10;", inputs);
  auto rzi = run_lanes("cvt.rzi.s32.f32 %r20, %f10;", inputs);
  auto rmi = run_lanes("cvt.rmi.s32.f32 %r20, %f10;", inputs);
  auto rpi = run_lanes("cvt.rpi.s32.f32 %r20, %f10;", inputs);
  auto to_unsigned = run_lanes("cvt.rzi.u32.f32 %r20, %f10;", inputs);
  auto as_int = [](std::uint64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); };
  CHECK(as_int(rni[0]) == 2);
  CHECK(as_int(rni[1]) == 4);
  CHECK(as_int(rni[2]) == -2);
  CHECK(as_int(rzi[3]) == -2);
  CHECK(as_int(rmi[3]) == -3);
  CHECK(as_int(rpi[3]) == -2);
  CHECK(as_int(rzi[4]) == std::numeric_limits<std::int32_t>::max());
  CHECK(as_int(rzi[5]) == std::numeric_limits<std::int32_t>::min());
  CHECK(as_int(rni[6]) == 0);
  CHECK(to_unsigned[7] == 0);
  CHECK(to_unsigned[4] == 3000000000u);
}

TEST_CASE("cvt between integers truncates, extends, and saturates with .sat", "[emulator][cvt]") {
  std::vector<std::uint64_t> inputs = {300, static_cast<std::uint32_t>(-5), 0x7f, 0x80};
  auto saturated = run_lanes("cvt.sat.u8.s32 %r20, %r10;", inputs);
  auto truncated = run_lanes("cvt.u8.s32 %r20, %r10;", inputs);
  auto sign_extended = run_lanes("cvt.s32.s8 %r20, %r10;", inputs);
  auto signed_saturated = run_lanes("cvt.sat.s8.s32 %r20, %r10;", inputs);
  CHECK(saturated == std::vector<std::uint64_t>{255, 0, 0x7f, 0x80});
  CHECK(truncated == std::vector<std::uint64_t>{300 & 0xff, 0xfb, 0x7f, 0x80});
  CHECK(sign_extended == std::vector<std::uint64_t>{0x2c, 0xfffffffb, 0x7f, 0xffffff80});
  CHECK(signed_saturated == std::vector<std::uint64_t>{0x7f, 0xfffffffb, 0x7f, 0x7f});  // sign-extended to the register
  auto wide = run_lanes("cvt.s64.s32 %rd20, %r10;", inputs, {}, {}, true);
  CHECK(wide[1] == static_cast<std::uint64_t>(-5ll));
}

TEST_CASE("cvt to and from f16/bf16 rounds to nearest even and overflows to infinity", "[emulator][cvt]") {
  std::vector<std::uint64_t> inputs = {f32(1.0f / 3.0f), f32(65519.0f), f32(65520.0f), f32(1e-8f), f32(-2.0f)};
  auto half = run_lanes("cvt.rn.f16.f32 %rs1, %f10;\n cvt.u32.u16 %r20, %rs1;", inputs);
  CHECK(half[0] == 0x3555);  // 0.333251953125
  CHECK(half[1] == 0x7bff);  // 65504, the largest half
  CHECK(half[2] == 0x7c00);  // rounds up to infinity
  CHECK(half[3] == 0x0000);  // 1e-8 < half the smallest subnormal (2^-25)
  CHECK(half[4] == 0xc000);
  auto half_rz = run_lanes("cvt.rz.f16.f32 %rs1, %f10;\n cvt.u32.u16 %r20, %rs1;", inputs);
  CHECK(half_rz[2] == 0x7bff);
  auto back = run_lanes("cvt.rn.f16.f32 %rs1, %f10;\n cvt.f32.f16 %f20, %rs1;\n mov.b32 %r20, %f20;", inputs);
  CHECK(as_f32(back[0]) == 0.333251953125f);
  auto bf16 = run_lanes("cvt.rn.bf16.f32 %rs1, %f10;\n cvt.u32.u16 %r20, %rs1;", {f32(1.0f + std::ldexp(1.0f, -8))});
  CHECK(bf16[0] == 0x3f80);  // tie: rounds to even (1.0)
  auto packed = run_lanes("cvt.rn.f16x2.f32 %r20, %f10, %f12;", {f32(1.0f)}, {f32(-2.0f)});
  CHECK(packed[0] == 0x3c00c000u);  // a in the high half, b in the low half
}

TEST_CASE("cvt integer -> float rounds 64-bit integers exactly", "[emulator][cvt]") {
  std::vector<std::uint64_t> inputs = {~0ull, (1ull << 53) + 1};
  auto rn = run_lanes("cvt.rn.f32.u64 %f20, %rd10;\n mov.b32 %r20, %f20;", inputs);
  auto rz = run_lanes("cvt.rz.f32.u64 %f20, %rd10;\n mov.b32 %r20, %f20;", inputs);
  auto to_double = run_lanes("cvt.rn.f64.u64 %fd20, %rd10;\n mov.b64 %rd20, %fd20;", inputs, {}, {}, true);
  CHECK(as_f32(rn[0]) == 18446744073709551616.0f);
  CHECK(rz[0] == 0x5f7fffffu);
  CHECK(as_f64(to_double[1]) == 9007199254740992.0);  // tie to even
}

TEST_CASE("cvt .sat and .ftz on floats", "[emulator][cvt]") {
  float subnormal = std::numeric_limits<float>::denorm_min() * 7;
  std::vector<std::uint64_t> inputs = {f32(1.5f), f32(-0.5f), f32(std::nanf("")), f32(subnormal)};
  auto saturated = run_lanes("cvt.sat.f32.f32 %f20, %f10;\n mov.b32 %r20, %f20;", inputs);
  CHECK(as_f32(saturated[0]) == 1.0f);
  CHECK(saturated[1] == 0);
  CHECK(saturated[2] == 0);
  auto flushed = run_lanes("cvt.ftz.f32.f32 %f20, %f10;\n mov.b32 %r20, %f20;", inputs);
  CHECK(flushed[3] == 0);
  auto kept = run_lanes("cvt.rni.f32.f32 %f20, %f10;\n mov.b32 %r20, %f20;", {f32(2.5f), f32(subnormal)});
  CHECK(as_f32(kept[0]) == 2.0f);
  CHECK(kept[1] == 0);
}

TEST_CASE("cvt .satfinite to f16/bf16 (x2) clamps to the largest finite value and keeps NaN, .sat clamps to [0, 1]",
          "[emulator][cvt]") {
  // PTX ISA cvt: with .satfinite, a NaN input gives NaN and a result whose magnitude
  // exceeds MAX_NORM (infinity included) gives MAX_NORM with the input's sign; ptxas
  // compiles it to F2FP.SATFINITE, a mode of its own, not .sat's [0, 1] clamp.
  const float nan = std::nanf("");
  std::vector<std::uint64_t> a = {f32(1e6f), f32(65520.0f), f32(0.5f), f32(3.4e38f), f32(-INFINITY), f32(nan)};
  std::vector<std::uint64_t> b = {f32(-INFINITY), f32(nan), f32(-2.0f), f32(INFINITY), f32(-1e-3f), f32(-65504.0f)};
  auto f16x2 = run_lanes("cvt.rn.satfinite.f16x2.f32 %r20, %f10, %f12;", a, b);
  CHECK(f16x2[0] == 0x7bfffbffu);  // {b, a} = {-max, +max}
  CHECK(f16x2[1] == 0x7bff7fffu);  // 65520 rounds to inf, then clamps; NaN stays NaN
  CHECK(f16x2[2] == 0x3800c000u);  // in range: unchanged
  CHECK(f16x2[3] == 0x7bff7bffu);
  CHECK(f16x2[4] == 0xfbff9419u);  // -1e-3 rounds to 0x9419
  CHECK(f16x2[5] == 0x7ffffbffu);
  auto bf16x2 = run_lanes("cvt.rn.satfinite.bf16x2.f32 %r20, %f10, %f12;", a, b);
  CHECK(bf16x2[0] == 0x4974ff7fu);  // 1e6 is 0x4974 in range; -inf clamps
  CHECK(bf16x2[3] == 0x7f7f7f7fu);  // 3.4e38 rounds to bf16 infinity, then clamps
  CHECK(bf16x2[4] == 0xff7fba83u);
  auto relu = run_lanes("cvt.rn.satfinite.relu.bf16x2.f32 %r20, %f10, %f12;", a, b);
  CHECK(relu[3] == 0x7f7f7f7fu);
  CHECK(relu[4] == 0x00000000u);  // relu first: negatives become +0
  CHECK(relu[5] == 0x7fff0000u);  // relu keeps NaN as the canonical NaN
  auto scalar = run_lanes("cvt.rn.satfinite.f16.f32 %rs1, %f10;\n cvt.u32.u16 %r20, %rs1;", a);
  CHECK(scalar[0] == 0x7bffu);
  CHECK(scalar[4] == 0xfbffu);
  CHECK(scalar[5] == 0x7fffu);
  auto bf16 = run_lanes("cvt.rn.satfinite.bf16.f32 %rs1, %f10;\n cvt.u32.u16 %r20, %rs1;", a);
  CHECK(bf16[3] == 0x7f7fu);
  CHECK(bf16[4] == 0xff7fu);
  // .sat (legal on cvt.f16.f32) is the [0, 1] clamp, NaN -> 0.
  auto unit = run_lanes("cvt.rn.sat.f16.f32 %rs1, %f10;\n cvt.u32.u16 %r20, %rs1;", a);
  CHECK(unit[0] == 0x3c00u);
  CHECK(unit[2] == 0x3800u);
  CHECK(unit[4] == 0x0000u);
  CHECK(unit[5] == 0x0000u);
  // ptxas refuses .sat on bf16 and packed destinations; so does the table.
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("cvt.rn.sat.bf16x2.f32 %r20, %f10, %f12;", false)),
                    Catch::Contains("no instruction form 'cvt.rn.sat.bf16x2.f32'"));
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("cvt.rn.sat.f16x2.f32 %r20, %f10, %f12;", false)),
                    Catch::Contains("no instruction form 'cvt.rn.sat.f16x2.f32'"));
}

TEST_CASE("shr is arithmetic for signed and logical for unsigned types, shifts clamp", "[emulator][shift]") {
  std::vector<std::uint64_t> a = {0x80000000u, 0x80000000u, 0x80000000u, 0x12345678u};
  std::vector<std::uint64_t> amounts = {4, 40, 31, 0};
  CHECK(run_lanes("shr.s32 %r20, %r10, %r12;", a, amounts) ==
        std::vector<std::uint64_t>{0xf8000000u, 0xffffffffu, 0xffffffffu, 0x12345678u});
  CHECK(run_lanes("shr.u32 %r20, %r10, %r12;", a, amounts) == std::vector<std::uint64_t>{0x08000000u, 0, 1, 0x12345678u});
  CHECK(run_lanes("shl.b32 %r20, %r10, %r12;", a, amounts) == std::vector<std::uint64_t>{0, 0, 0, 0x12345678u});
  auto shr64 = run_lanes("shr.s64 %rd20, %rd10, %r12;", {1ull << 63}, {70}, {}, true);
  CHECK(shr64[0] == ~0ull);
}

TEST_CASE("div.rn is correctly rounded, div.full within 2 ulp, div.approx zero for huge divisors", "[emulator][div]") {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> distribution(-100.0f, 100.0f);
  std::vector<std::uint64_t> a, b;
  for (int i = 0; i < 64; ++i) {
    a.push_back(f32(distribution(random)));
    b.push_back(f32(distribution(random)));
  }
  auto rn = run_lanes("div.rn.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", a, b);
  auto full = run_lanes("div.full.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", a, b);
  for (std::size_t i = 0; i < a.size(); ++i) {
    double exact = double(as_f32(a[i])) / double(as_f32(b[i]));
    CHECK(as_f32(rn[i]) == static_cast<float>(exact));  // double rounding is innocuous for division
    float ulp = std::nextafter(std::fabs(static_cast<float>(exact)), INFINITY) - std::fabs(static_cast<float>(exact));
    CHECK(std::fabs(double(as_f32(full[i])) - exact) <= 2.0 * ulp);
  }
  float huge = std::ldexp(1.0f, 127);
  auto approx = run_lanes("div.approx.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(huge)});
  auto exact = run_lanes("div.rn.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(huge)});
  CHECK(as_f32(approx[0]) == 0.0f);
  CHECK(as_f32(exact[0]) == std::ldexp(1.0f, -127));  // a subnormal, kept without .ftz
  auto rz = run_lanes("div.rz.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(3.0f)});
  auto rp = run_lanes("div.rp.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(3.0f)});
  CHECK(rp[0] == rz[0] + 1);  // 1/3 is inexact: directed roundings differ by one ulp
}

TEST_CASE("integer division and remainder of signed values", "[emulator][div]") {
  auto as_u32 = [](std::int32_t v) { return std::uint64_t(static_cast<std::uint32_t>(v)); };
  std::vector<std::uint64_t> a = {as_u32(-7), as_u32(7), as_u32(INT32_MIN), 100};
  std::vector<std::uint64_t> b = {as_u32(2), as_u32(-2), as_u32(-1), 7};
  CHECK(run_lanes("div.s32 %r20, %r10, %r12;", a, b) ==
        std::vector<std::uint64_t>{as_u32(-3), as_u32(-3), as_u32(INT32_MIN), 14});
  CHECK(run_lanes("rem.s32 %r20, %r10, %r12;", a, b) == std::vector<std::uint64_t>{as_u32(-1), 1, 0, 2});
  CHECK(run_lanes("div.u32 %r20, %r10, %r12;", {as_u32(-7)}, {2}) == std::vector<std::uint64_t>{0x7ffffffcu});
}

TEST_CASE("integer division by zero gives all ones and remainder by zero the dividend", "[emulator][div]") {
  // Undefined in the PTX ISA; NVIDIA GPUs return all ones for the quotient (and so the
  // dividend for the remainder, a - q * 0), which nvcc-compiled kernels may rely on.
  CHECK(run_lanes("div.u32 %r20, %r10, %r12;", {7, 0, 0xffffffffu}, {0, 0, 0}) ==
        std::vector<std::uint64_t>{0xffffffffu, 0xffffffffu, 0xffffffffu});
  CHECK(run_lanes("div.s32 %r20, %r10, %r12;", {7, 0x80000000u}, {0, 0}) ==
        std::vector<std::uint64_t>{0xffffffffu, 0xffffffffu});
  CHECK(run_lanes("rem.u32 %r20, %r10, %r12;", {7, 0xfffffff0u}, {0, 0}) == std::vector<std::uint64_t>{7, 0xfffffff0u});
  CHECK(run_lanes("div.u64 %rd20, %rd10, %rd11;", {0x123456789ull}, {0}, {}, true) ==
        std::vector<std::uint64_t>{~0ull});
}

TEST_CASE("mul.hi, mul.wide and mad.lo on signed and unsigned operands", "[emulator][mul]") {
  auto as_u32 = [](std::int32_t v) { return std::uint64_t(static_cast<std::uint32_t>(v)); };
  CHECK(run_lanes("mul.hi.s32 %r20, %r10, %r12;", {as_u32(-2)}, {3})[0] == 0xffffffffu);
  CHECK(run_lanes("mul.hi.u32 %r20, %r10, %r12;", {as_u32(-2)}, {3})[0] == 2);
  CHECK(run_lanes("mul.wide.s32 %rd20, %r10, %r12;", {as_u32(-2)}, {3}, {}, true)[0] == static_cast<std::uint64_t>(-6ll));
  CHECK(run_lanes("mul.wide.u32 %rd20, %r10, %r12;", {0xffffffffu}, {0xffffffffu}, {}, true)[0] == 0xfffffffe00000001ull);
  CHECK(run_lanes("mul.hi.u64 %rd20, %rd10, %rd11;", {~0ull}, {~0ull}, {}, true)[0] == 0xfffffffffffffffeull);
  CHECK(run_lanes("mad.lo.s32 %r20, %r10, %r12, %r14;", {as_u32(-3)}, {5}, {20})[0] == 5);
  CHECK(run_lanes("mad.wide.u32 %rd20, %r10, %r12, %rd14;", {0x80000000u}, {4}, {1}, true)[0] == 0x200000001ull);
}

TEST_CASE("min/max on floats: NaN operands are ignored unless .NaN, -0 < +0", "[emulator][minmax]") {
  float nan = std::nanf("");
  std::vector<std::uint64_t> a = {f32(nan), f32(nan), f32(-0.0f), f32(2.0f)};
  std::vector<std::uint64_t> b = {f32(1.0f), f32(nan), f32(0.0f), f32(-3.0f)};
  auto minimum = run_lanes("min.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", a, b);
  auto maximum = run_lanes("max.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", a, b);
  auto propagating = run_lanes("min.NaN.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", a, b);
  CHECK(as_f32(minimum[0]) == 1.0f);
  CHECK(minimum[1] == 0x7fffffffu);  // canonical NaN
  CHECK(minimum[2] == 0x80000000u);  // -0.0
  CHECK(maximum[2] == 0x00000000u);  // +0.0
  CHECK(as_f32(minimum[3]) == -3.0f);
  CHECK(as_f32(maximum[3]) == 2.0f);
  CHECK(std::isnan(as_f32(propagating[0])));
  auto as_u32 = [](std::int32_t v) { return std::uint64_t(static_cast<std::uint32_t>(v)); };
  CHECK(run_lanes("min.s32 %r20, %r10, %r12;", {as_u32(-1)}, {1})[0] == as_u32(-1));
  CHECK(run_lanes("min.u32 %r20, %r10, %r12;", {as_u32(-1)}, {1})[0] == 1);
}

TEST_CASE("directed rounding, fma and .ftz in float arithmetic", "[emulator][float]") {
  float tiny = std::ldexp(1.0f, -30);
  CHECK(as_f32(run_lanes("add.rp.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(tiny)})[0]) == kNextAfterOne);
  CHECK(as_f32(run_lanes("add.rz.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(tiny)})[0]) == 1.0f);
  CHECK(as_f32(run_lanes("add.rn.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(1.0f)}, {f32(tiny)})[0]) == 1.0f);
  CHECK(as_f32(run_lanes("add.rm.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(-1.0f)}, {f32(-tiny)})[0]) ==
        kNextBelowMinusOne);
  CHECK(as_f32(run_lanes("mul.rp.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(kNextAfterOne)}, {f32(kNextAfterOne)})[0]) ==
        std::nextafter(std::nextafter(kNextAfterOne, 2.0f), 2.0f));  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46, rounded up
  // fma rounds once: (1 + 2^-13)(1 - 2^-13) - 1 = -2^-26 exactly; mul then add gives 0.
  float p = 1.0f + std::ldexp(1.0f, -13), q = 1.0f - std::ldexp(1.0f, -13);
  CHECK(as_f32(run_lanes("fma.rn.f32 %f20, %f10, %f12, %f14;\n mov.b32 %r20, %f20;", {f32(p)}, {f32(q)}, {f32(-1.0f)})[0]) ==
        -std::ldexp(1.0f, -26));
  CHECK(as_f32(run_lanes("mul.rn.f32 %f21, %f10, %f12;\n add.rn.f32 %f20, %f21, %f14;\n mov.b32 %r20, %f20;", {f32(p)},
                         {f32(q)}, {f32(-1.0f)})[0]) == 0.0f);
  float subnormal = std::numeric_limits<float>::denorm_min() * 3;
  CHECK(as_f32(run_lanes("add.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(subnormal)}, {f32(0.0f)})[0]) == subnormal);
  CHECK(run_lanes("add.ftz.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(subnormal)}, {f32(0.0f)})[0] == 0);
  CHECK(run_lanes("add.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {0x7fc00001u}, {f32(1.0f)})[0] == 0x7fffffffu);
  CHECK(as_f32(run_lanes("add.sat.f32 %f20, %f10, %f12;\n mov.b32 %r20, %f20;", {f32(0.75f)}, {f32(0.5f)})[0]) == 1.0f);
  CHECK(as_f64(run_lanes("fma.rn.f64 %fd20, %fd10, %fd11, %fd14;\n mov.b64 %rd20, %fd20;", {f64(3.0)}, {f64(0.5)},
                         {f64(0.25)}, true)[0]) == 1.75);
}

TEST_CASE("every f32/f64 instruction that makes a fresh NaN gives the canonical NaN", "[emulator][float][nan]") {
  // PTX arithmetic produces the canonical NaN (f32 0x7fffffff, f64 0x7fffffffffffffff), as
  // the IR (ir/Arithmetic.h) does; the host's own NaN would be 0xffc00000 (x86's default).
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::uint64_t> a = {f32(-1.0f), f32(0.0f), f32(inf), f32(-inf), 0x7fa00001u, 0xffc00000u};
  const std::vector<std::uint64_t> zero(a.size(), f32(0.0f));
  const std::vector<std::uint64_t> b = {f32(1.0f), f32(inf), f32(-inf), f32(-inf), f32(1.0f), f32(2.0f)};
  struct Form {
    const char* body;
    std::vector<int> nan_lanes;  // the lanes whose result is NaN
  };
  const std::vector<Form> forms = {
      {"sqrt.rn.f32 %f20, %f10;", {0, 3, 4, 5}},           // sqrt(-1), sqrt(-inf), NaN inputs
      {"sqrt.approx.f32 %f20, %f10;", {0, 3, 4, 5}},
      {"rsqrt.approx.f32 %f20, %f10;", {0, 3, 4, 5}},
      {"lg2.approx.f32 %f20, %f10;", {0, 3, 4, 5}},       // log of a negative number
      {"rcp.rn.f32 %f20, %f10;", {4, 5}},
      {"ex2.approx.f32 %f20, %f10;", {4, 5}},
      {"mul.rn.f32 %f20, %f10, %f12;", {1, 4, 5}},         // 0 * inf
      {"add.rn.f32 %f20, %f10, %f12;", {2, 4, 5}},         // inf + -inf
      {"sub.rn.f32 %f20, %f10, %f12;", {3, 4, 5}},         // -inf - -inf
      {"div.rn.f32 %f20, %f10, %f12;", {2, 3, 4, 5}},      // inf / -inf, -inf / -inf
      {"fma.rn.f32 %f20, %f10, %f12, %f14;", {1, 4, 5}},   // 0 * inf + 0
  };
  for (const Form& form : forms) {
    INFO(form.body);
    const auto result = run_lanes(std::string(form.body) + "\n mov.b32 %r20, %f20;", a, b, zero);
    for (std::size_t lane = 0; lane < a.size(); ++lane) {
      INFO("lane " << lane << ": 0x" << std::hex << result[lane]);
      const bool expect_nan = std::find(form.nan_lanes.begin(), form.nan_lanes.end(), lane) != form.nan_lanes.end();
      if (expect_nan) CHECK(result[lane] == 0x7fffffffu);
      else CHECK_FALSE(std::isnan(as_f32(result[lane])));
    }
  }
  const std::vector<std::uint64_t> wide = {f64(-1.0), f64(0.0), 0x7ff4000000000001ull};
  const std::vector<std::uint64_t> wide_inf(wide.size(), f64(std::numeric_limits<double>::infinity()));
  for (const char* body : {"sqrt.rn.f64 %fd20, %fd10;", "mul.rn.f64 %fd20, %fd10, %fd11;"}) {
    INFO(body);
    const auto result = run_lanes(std::string(body) + "\n mov.b64 %rd20, %fd20;", wide, wide_inf, {}, true);
    const bool is_sqrt = std::string(body).starts_with("sqrt");
    CHECK(result[0] == (is_sqrt ? 0x7fffffffffffffffull : f64(-std::numeric_limits<double>::infinity())));
    CHECK(result[1] == (is_sqrt ? f64(0.0) : 0x7fffffffffffffffull));
    CHECK(result[2] == 0x7fffffffffffffffull);
  }
}

TEST_CASE("setp: ordered and unordered comparisons, predicate combination", "[emulator][setp]") {
  float nan = std::nanf("");
  std::vector<std::uint64_t> a = {f32(nan), f32(1.0f), f32(2.0f)};
  std::vector<std::uint64_t> b = {f32(1.0f), f32(1.0f), f32(1.0f)};
  auto check = [&](const std::string& compare) {
    return run_lanes("setp." + compare + ".f32 %p1, %f10, %f12;\n selp.u32 %r20, 1, 0, %p1;", a, b);
  };
  CHECK(check("lt") == std::vector<std::uint64_t>{0, 0, 0});
  CHECK(check("ltu") == std::vector<std::uint64_t>{1, 0, 0});
  CHECK(check("ne") == std::vector<std::uint64_t>{0, 0, 1});
  CHECK(check("neu") == std::vector<std::uint64_t>{1, 0, 1});
  CHECK(check("ge") == std::vector<std::uint64_t>{0, 1, 1});
  CHECK(check("geu") == std::vector<std::uint64_t>{1, 1, 1});
  CHECK(check("nan") == std::vector<std::uint64_t>{1, 0, 0});
  CHECK(check("num") == std::vector<std::uint64_t>{0, 1, 1});
  auto as_u32 = [](std::int32_t v) { return std::uint64_t(static_cast<std::uint32_t>(v)); };
  CHECK(run_lanes("setp.lt.s32 %p1, %r10, %r12;\n selp.u32 %r20, 1, 0, %p1;", {as_u32(-1)}, {1})[0] == 1);
  CHECK(run_lanes("setp.lo.u32 %p1, %r10, %r12;\n selp.u32 %r20, 1, 0, %p1;", {as_u32(-1)}, {1})[0] == 0);
  // p|q with .and: p = (a < b) && c, q = !(a < b) && c.
  auto combined = run_lanes(
      "setp.ne.u32 %p3, %r14, 0;\n setp.lt.and.s32 %p1|%p2, %r10, %r12, %p3;\n"
      " selp.u32 %r21, 2, 0, %p2;\n selp.u32 %r22, 1, 0, %p1;\n or.b32 %r20, %r21, %r22;",
      {1, 5, 1}, {2, 2, 2}, {1, 1, 0});
  CHECK(combined == std::vector<std::uint64_t>{1, 2, 0});
  auto set = run_lanes("set.gt.u32.s32 %r20, %r10, %r12;", {5, 1}, {2, 2});
  CHECK(set == std::vector<std::uint64_t>{0xffffffffu, 0});
}

TEST_CASE("prmt: the generic selector and every mode", "[emulator][prmt]") {
  const std::uint64_t a = 0x33221100u, b = 0x77665544u;
  auto prmt = [&](const std::string& mode, std::uint64_t selector) {
    return run_lanes("prmt.b32" + mode + " %r20, %r10, %r12, %r14;", {a}, {b}, {selector})[0];
  };
  CHECK(prmt("", 0x5140) == 0x55114400u);
  CHECK(prmt("", 0x3210) == a);
  CHECK(prmt("", 0x7654) == b);
  // Selector 8 replicates byte 0's sign bit; selectors 0 copy byte 0 (0x80).
  CHECK(run_lanes("prmt.b32 %r20, %r10, %r12, %r14;", {0x80u}, {0}, {0x0008})[0] == 0x808080ffu);
  CHECK(run_lanes("prmt.b32 %r20, %r10, %r12, %r14;", {0x7f80u}, {0}, {0x9810})[0] == 0x00ff7f80u);
  CHECK(prmt(".f4e", 1) == 0x44332211u);
  CHECK(prmt(".b4e", 0) == 0x55667700u);
  CHECK(prmt(".rc8", 2) == 0x22222222u);
  CHECK(prmt(".ecl", 1) == 0x33221111u);
  CHECK(prmt(".ecr", 2) == 0x22221100u);
  CHECK(prmt(".rc16", 1) == 0x33223322u);
}

TEST_CASE("lop3 computes every 8-entry truth table", "[emulator][lop3]") {
  std::mt19937 random(3);
  std::vector<std::uint64_t> a, b, c;
  for (int i = 0; i < 8; ++i) {
    a.push_back(random());
    b.push_back(random());
    c.push_back(random());
  }
  a[0] = 0xF0F0F0F0u;
  b[0] = 0xCCCCCCCCu;
  c[0] = 0xAAAAAAAAu;
  for (unsigned lut = 0; lut < 256; ++lut) {
    auto result = run_lanes("lop3.b32 %r20, %r10, %r12, %r14, " + std::to_string(lut) + ";", a, b, c);
    CHECK(result[0] == lut * 0x01010101u);  // the canonical inputs reproduce the table
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint32_t expected = 0;
      for (unsigned bit = 0; bit < 32; ++bit) {
        unsigned index = (((a[i] >> bit) & 1) << 2) | (((b[i] >> bit) & 1) << 1) | ((c[i] >> bit) & 1);
        expected |= ((lut >> index) & 1u) << bit;
      }
      CHECK(result[i] == expected);
    }
  }
}

TEST_CASE("bfe, bfi, popc, clz, brev, bfind, shf", "[emulator][bits]") {
  CHECK(run_lanes("bfe.u32 %r20, %r10, 4, 8;", {0xF0F0F0F0u})[0] == 0x0Fu);
  CHECK(run_lanes("bfe.s32 %r20, %r10, 8, 4;", {0x00000F00u})[0] == 0xffffffffu);
  CHECK(run_lanes("bfe.s32 %r20, %r10, 8, 4;", {0x00000700u})[0] == 7u);
  CHECK(run_lanes("bfe.s32 %r20, %r10, 40, 4;", {0x80000000u})[0] == 0xffffffffu);
  CHECK(run_lanes("bfe.u32 %r20, %r10, 28, 8;", {0xA0000000u})[0] == 0xAu);
  CHECK(run_lanes("bfe.u32 %r20, %r10, 3, 0;", {0xffffffffu})[0] == 0u);
  CHECK(run_lanes("bfi.b32 %r20, %r10, %r12, 4, 4;", {0xffu}, {0})[0] == 0xf0u);
  CHECK(run_lanes("bfi.b32 %r20, %r10, %r12, 30, 8;", {0xffu}, {0})[0] == 0xc0000000u);
  CHECK(run_lanes("popc.b32 %r20, %r10;", {0xF0F0F0F0u})[0] == 16);
  CHECK(run_lanes("clz.b32 %r20, %r10;", {0x00010000u})[0] == 15);
  CHECK(run_lanes("clz.b32 %r20, %r10;", {0})[0] == 32);
  CHECK(run_lanes("brev.b32 %r20, %r10;", {1})[0] == 0x80000000u);
  CHECK(run_lanes("bfind.u32 %r20, %r10;", {0x00010000u})[0] == 16);
  CHECK(run_lanes("bfind.u32 %r20, %r10;", {0})[0] == 0xffffffffu);
  CHECK(run_lanes("bfind.s32 %r20, %r10;", {0xfffffff0u})[0] == 3);
  CHECK(run_lanes("bfind.shiftamt.u32 %r20, %r10;", {0x00010000u})[0] == 15);
  CHECK(run_lanes("shf.l.wrap.b32 %r20, %r10, %r12, 4;", {0xA0000000u}, {0x1u})[0] == 0x1Au);
  CHECK(run_lanes("shf.r.wrap.b32 %r20, %r10, %r12, 4;", {0x12345678u}, {0xAu})[0] == 0xA1234567u);
  CHECK(run_lanes("shf.r.clamp.b32 %r20, %r10, %r12, 40;", {0x12345678u}, {0xAu})[0] == 0xAu);
  CHECK(run_lanes("dp4a.u32.u32 %r20, %r10, %r12, %r14;", {0x01020304u}, {0x01010101u}, {10})[0] == 20);
  CHECK(run_lanes("dp4a.s32.s32 %r20, %r10, %r12, %r14;", {0xff020304u}, {0x01010101u}, {0})[0] == 8);
}

namespace {
// The CUDA Programming Guide's description of __shfl_*_sync with a width, written
// independently of the PTX clamp/segment-mask encoding.
std::vector<std::uint64_t> cuda_shuffle(const std::string& kind, unsigned delta, unsigned width) {
  std::vector<std::uint64_t> out(32);
  for (unsigned lane = 0; lane < 32; ++lane) {
    unsigned segment = lane / width * width;
    unsigned source = lane;
    if (kind == "up") source = (lane - segment >= delta) ? lane - delta : lane;
    if (kind == "down") source = (lane - segment + delta < width) ? lane + delta : lane;
    if (kind == "bfly") source = ((lane ^ delta) < segment + width) ? (lane ^ delta) : lane;
    if (kind == "idx") source = segment + (delta % width);
    out[lane] = 100 + source;
  }
  return out;
}
}  // namespace

TEST_CASE("shfl.sync up/down/bfly/idx with clamp and segment mask, out-of-range lanes keep their value",
          "[emulator][shfl]") {
  std::vector<std::uint64_t> values(32);
  for (unsigned i = 0; i < 32; ++i) values[i] = 100 + i;
  for (unsigned width : {32u, 16u, 8u, 4u}) {
    unsigned segment_mask = (32 - width) << 8;
    for (unsigned delta : {1u, 2u, 3u, 5u, 16u}) {
      if (delta >= width && delta != 16) continue;
      std::string up_c = std::to_string(segment_mask);                // clamp 0 for up
      std::string other_c = std::to_string(segment_mask | 0x1f);
      std::string d = std::to_string(delta);
      INFO("width " << width << " delta " << delta);
      CHECK(run_lanes("shfl.sync.up.b32 %r20, %r10, " + d + ", " + up_c + ", -1;", values) == cuda_shuffle("up", delta, width));
      CHECK(run_lanes("shfl.sync.down.b32 %r20, %r10, " + d + ", " + other_c + ", -1;", values) ==
            cuda_shuffle("down", delta, width));
      if (delta < width)
        CHECK(run_lanes("shfl.sync.bfly.b32 %r20, %r10, " + d + ", " + other_c + ", -1;", values) ==
              cuda_shuffle("bfly", delta, width));
      CHECK(run_lanes("shfl.sync.idx.b32 %r20, %r10, " + d + ", " + other_c + ", -1;", values) ==
            cuda_shuffle("idx", delta, width));
    }
  }
  // The predicate output is false exactly where the source lane was out of range.
  auto predicate = run_lanes("shfl.sync.down.b32 %r21|%p1, %r10, 1, 31, 0xffffffff;\n selp.u32 %r20, 1, 0, %p1;", values);
  for (unsigned lane = 0; lane < 32; ++lane) CHECK(predicate[lane] == (lane < 31 ? 1u : 0u));
  // A clamp below the lane: down from lane 5 with clamp 7 and offset 4 stays at lane 5.
  auto clamped = run_lanes("shfl.sync.down.b32 %r20, %r10, 4, 7, 0xffffffff;", values);
  CHECK(clamped[3] == 107);
  CHECK(clamped[5] == 105);
  CHECK(clamped[20] == 120);  // lanes above the clamp always read themselves
}

TEST_CASE("vote.sync ballot/any/all and activemask", "[emulator][vote]") {
  std::vector<std::uint64_t> values(32);
  for (unsigned i = 0; i < 32; ++i) values[i] = i % 3 == 0;
  std::uint32_t expected = 0;
  for (unsigned i = 0; i < 32; ++i) expected |= (i % 3 == 0 ? 1u : 0u) << i;
  auto ballot = run_lanes("setp.ne.u32 %p1, %r10, 0;\n vote.sync.ballot.b32 %r20, %p1, 0xffffffff;", values);
  CHECK(ballot[0] == expected);
  CHECK(ballot[31] == expected);
  auto negated = run_lanes("setp.ne.u32 %p1, %r10, 0;\n vote.sync.ballot.b32 %r20, !%p1, 0xffffffff;", values);
  CHECK(negated[7] == (~expected & 0xffffffffu));
  auto any = run_lanes("setp.ne.u32 %p1, %r10, 0;\n vote.sync.any.pred %p2, %p1, 0xffffffff;\n selp.u32 %r20, 1, 0, %p2;", values);
  auto all = run_lanes("setp.ne.u32 %p1, %r10, 0;\n vote.sync.all.pred %p2, %p1, 0xffffffff;\n selp.u32 %r20, 1, 0, %p2;", values);
  CHECK(any[4] == 1);
  CHECK(all[4] == 0);
  // Inside a branch taken by even lanes only, activemask names exactly those lanes.
  auto inside = run_lanes(
      "and.b32 %r21, %r0, 1;\n setp.ne.u32 %p1, %r21, 0;\n @%p1 bra SKIP;\n activemask.b32 %r20;\n SKIP:\n", values);
  CHECK(inside[0] == 0x55555555u);
  CHECK(inside[1] == 0);
}

TEST_CASE("shfl.sync/vote.sync whose member mask disagrees with the executing threads is an error", "[emulator][shfl]") {
  std::vector<std::uint64_t> values(32, 1);
  // Only even lanes reach the shuffle, but the mask names all 32.
  std::string divergent =
      "and.b32 %r21, %r0, 1;\n setp.ne.u32 %p1, %r21, 0;\n @%p1 bra SKIP;\n"
      " shfl.sync.bfly.b32 %r20, %r10, 1, 31, 0xffffffff;\n SKIP:\n";
  CHECK_THROWS_WITH(run_lanes(divergent, values), Catch::Contains("member mask 0xffffffff names lanes 1,3,5"));
  // All lanes execute but the mask names only the low half.
  CHECK_THROWS_WITH(run_lanes("vote.sync.ballot.b32 %r20, %p1, 0x0000ffff;", values),
                    Catch::Contains("lanes 16,17") && Catch::Contains("not named in member mask"));
  // The matching partial mask inside the branch is fine, and reading an odd lane is not.
  auto ok = run_lanes(
      "and.b32 %r21, %r0, 1;\n setp.ne.u32 %p1, %r21, 0;\n @%p1 bra SKIP;\n"
      " shfl.sync.bfly.b32 %r20, %r10, 2, 31, 0x55555555;\n SKIP:\n",
      values);
  CHECK(ok[0] == 1);
  CHECK(ok[1] == 0);
  CHECK_THROWS_WITH(run_lanes("and.b32 %r21, %r0, 1;\n setp.ne.u32 %p1, %r21, 0;\n @%p1 bra SKIP;\n"
                              " shfl.sync.bfly.b32 %r20, %r10, 1, 31, 0x55555555;\n SKIP:\n",
                              values),
                    Catch::Contains("reads lane 1"));
}

TEST_CASE("out-of-bounds global accesses report instruction, thread and address", "[emulator][memory]") {
  const std::string ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry overflow(.param .u64 out, .param .u32 n)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";
  Module module = parse_ptx(ptx);
  std::vector<DeviceBuffer> buffers = {{"output", std::vector<std::uint8_t>(32 * 4)}};
  LaunchConfig config;
  config.block = {32, 1, 1};
  config.grid = {2, 1, 1};
  auto launch_it = [&] { launch(module, "overflow", config, buffers, {PointerArgument{0, 0}, ScalarArgument{32}}); };
  CHECK_THROWS_AS(launch_it(), quantc::runtime::RuntimeError);
  CHECK_THROWS_WITH(launch_it(), Catch::Contains("out-of-bounds global store of 4 bytes at address 0x100000080") &&
                                     Catch::Contains("buffer 0 'output' of 128 bytes") &&
                                     Catch::Contains("ctaid=(0,0,0) tid=(31,0,0)") && Catch::Contains("PTX line 15") &&
                                     Catch::Contains("st.global.u32 [%rd3], %r1"));
  // A misaligned access is an error too.
  CHECK_THROWS_WITH(run_lanes("add.s64 %rd21, %rd2, 2;\n ld.global.u32 %r20, [%rd21];", {1}), Catch::Contains("misaligned"));
}

TEST_CASE("the parser names the line of unsupported instructions and directives", "[emulator][parser]") {
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex, {%f5, %f6}];", false)),
                    Catch::Contains("PTX line 40") && Catch::Contains("unsupported instruction 'tex'"));
  // A form the instruction table has, but the module's .target (sm_80) cannot run.
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("add.bf16 %rs1, %rs2, %rs3;", false)),
                    Catch::Contains("PTX line 40") && Catch::Contains("'add.bf16' needs sm_90 and PTX ISA 7.8") &&
                        Catch::Contains(".target sm_80"));
  // A type or modifier outside every form of the opcode.
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("lop3.b64 %rd20, %rd10, %rd11, %rd14, 0xea;", false)),
                    Catch::Contains("no instruction form 'lop3.b64'"));
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("add.wobble.s32 %r20, %r10, %r12;", false)),
                    Catch::Contains("unsupported modifier '.wobble'"));
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("add.s32 %r20, %r10, %undeclared;", false)),
                    Catch::Contains("undeclared register '%undeclared'"));
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("bra NOWHERE;", false)), Catch::Contains("unknown label or symbol 'NOWHERE'"));
  CHECK_THROWS_WITH(parse_ptx(".version 7.0\n.target sm_80\n.address_size 64\n.func foo()\n{\nret;\n}\n"),
                    Catch::Contains("PTX line 4") && Catch::Contains(".func"));
  CHECK_THROWS_WITH(parse_ptx(wrap_kernel("add.cc.u32 %r20, %r10, %r12;", false)), Catch::Contains("'.cc'"));
}

TEST_CASE("bar.sync orders shared-memory traffic across the CTA's warps", "[emulator][barrier]") {
  // Each thread writes its id to shared memory, then reads its mirror's slot (in another warp).
  const std::string ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry mirror(.param .u64 out)
.maxntid 128, 1, 1
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 slots[512];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, slots;
  add.s32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  sub.s32 %r5, 127, %r1;
  shl.b32 %r5, %r5, 2;
  add.s32 %r5, %r3, %r5;
  ld.shared.u32 %r6, [%r5];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
)";
  Module module = parse_ptx(ptx);
  std::vector<DeviceBuffer> buffers = {{"out", std::vector<std::uint8_t>(128 * 4)}};
  LaunchConfig config;
  config.block = {128, 1, 1};
  LaunchCounters counters = launch(module, "mirror", config, buffers, {PointerArgument{0, 0}});
  std::vector<std::uint32_t> out(128);
  std::memcpy(out.data(), buffers[0].bytes.data(), 512);
  for (std::uint32_t i = 0; i < 128; ++i) CHECK(out[i] == 127 - i);
  CHECK(counters.barriers == 1);
  CHECK(counters.global_store_requests == 4);
  CHECK(counters.global_store_sectors == 16);  // 4 warps x 128 contiguous bytes
  CHECK(counters.unique_global_bytes_written == 512);
  CHECK(counters.shared_store_requests == 4);
  config.block = {256, 1, 1};
  CHECK_THROWS_WITH(launch(module, "mirror", config, buffers, {PointerArgument{0, 0}}), Catch::Contains(".maxntid"));
}

TEST_CASE("counters: classes, requests, sectors per request for strided access", "[emulator][counters]") {
  // Thread i loads a[i * stride]: stride 1 is 4 sectors per request, stride 8 is 32.
  auto execute = [](unsigned stride) {
    std::string ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry strided(.param .u64 out, .param .u64 in)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.lo.s32 %r2, %r1, )" + std::to_string(stride) + R"(;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.nc.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, 0f3F800000;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd1, %rd5;
  st.global.f32 [%rd6], %f2;
  ret;
}
)";
    Module module = parse_ptx(ptx);
    std::vector<DeviceBuffer> buffers = {{"out", std::vector<std::uint8_t>(64 * 4)},
                                         {"in", std::vector<std::uint8_t>(64 * 4 * std::max(stride, 1u))}};
    LaunchConfig config;
    config.block = {64, 1, 1};
    return launch(module, "strided", config, buffers, {PointerArgument{0, 0}, PointerArgument{1, 0}});
  };
  LaunchCounters unit = execute(1), spread = execute(8), broadcast = execute(0);
  // Every lane reads a[0]: one sector per request, its 4 requested bytes counted once.
  CHECK(broadcast.buffers[1].load_sectors == 2);
  CHECK(broadcast.buffers[1].load_bytes == 8);
  CHECK(broadcast.buffers[1].load_sector_efficiency() == 0.125);
  CHECK(unit.global_load_requests == 2);
  CHECK(unit.sectors_per_load_request() == 4.0);
  CHECK(spread.sectors_per_load_request() == 32.0);
  CHECK(unit.unique_global_bytes_read == 256);
  CHECK(spread.unique_global_bytes_read == 256);
  // Per buffer: `in` is read (every requested byte of stride 1's sectors used, 4 of
  // stride 8's 32 bytes), `out` written with whole sectors either way.
  REQUIRE(unit.buffers.size() == 2);
  CHECK(unit.buffers[1].name == "in");
  CHECK(unit.buffers[1].load_requests == 2);
  CHECK(unit.buffers[1].load_sectors == 8);
  CHECK(unit.buffers[1].load_bytes == 256);
  CHECK(unit.buffers[1].load_sector_efficiency() == 1.0);
  CHECK(unit.buffers[1].store_requests == 0);
  CHECK(spread.buffers[1].load_sectors == 64);
  CHECK(spread.buffers[1].load_sector_efficiency() == 0.125);
  CHECK(spread.buffers[0].name == "out");
  CHECK(spread.buffers[0].load_requests == 0);
  CHECK(spread.buffers[0].store_requests == 2);
  CHECK(spread.buffers[0].store_bytes == 256);
  CHECK(spread.buffers[0].store_sector_efficiency() == 1.0);
  CHECK(unit.warp_instructions == 2 * 14);  // 14 instructions (incl. ret) per warp, 2 warps
  // Counted on the pipe each instruction-table row names, per warp: ld.param x2, ld, st
  // (memory); cvta x2, mov (move); mul.lo, mul.wide x2 (integer multiply); add.s64 x2
  // (integer); add.rn.f32 (fp32); ret (control).
  using quantc::ptx::Pipe;
  CHECK(unit.pipe(Pipe::Memory) == 2 * 4);
  CHECK(unit.pipe(Pipe::Move) == 2 * 3);
  CHECK(unit.pipe(Pipe::IntegerMultiply) == 2 * 3);
  CHECK(unit.pipe(Pipe::Integer) == 2 * 2);
  CHECK(unit.pipe(Pipe::Fp32) == 2);
  CHECK(unit.pipe(Pipe::Control) == 2);
  CHECK(unit.thread_instructions == 64 * 14);
}

TEST_CASE("launch errors: unknown kernel, argument mismatch, runaway loops", "[emulator][launch]") {
  Module module = parse_ptx(wrap_kernel("LOOP:\n bra LOOP;", false));
  std::vector<DeviceBuffer> buffers = {{"out", std::vector<std::uint8_t>(8)}, {"a", std::vector<std::uint8_t>(8)},
                                       {"b", std::vector<std::uint8_t>(8)}, {"c", std::vector<std::uint8_t>(8)}};
  std::vector<KernelArgument> arguments = {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0},
                                           PointerArgument{3, 0}};
  LaunchConfig config;
  CHECK_THROWS_WITH(launch(module, "missing", config, buffers, arguments),
                    Catch::Contains("no kernel 'missing'") && Catch::Contains("snippet"));
  CHECK_THROWS_WITH(launch(module, "snippet", config, buffers, {PointerArgument{0, 0}}),
                    Catch::Contains("takes 4 parameters but 1 arguments"));
  config.block = {2048, 1, 1};
  CHECK_THROWS_WITH(launch(module, "snippet", config, buffers, arguments), Catch::Contains("1..1024"));
  config.block = {1, 1, 1};
  LaunchOptions options;
  options.max_warp_instructions = 10000;
  CHECK_THROWS_WITH(launch(module, "snippet", config, buffers, arguments, options),
                    Catch::Contains("exceeded 10000 warp instructions") && Catch::Contains("bra LOOP"));
}
