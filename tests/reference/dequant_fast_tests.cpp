// The fast batch-1 schedule of dequant_matmul_{int8,int4,fp8,nvfp4} (ir/ops/DequantMatmul.h,
// "Fast schedule") against a double-precision oracle and against the seed program, on the
// reference interpreter. (The emulator sweep over every op's "fast" test shapes checks the
// emitted PTX against the interpreter bit for bit.)
//
// The bound (the header's): with u = 2^-24 and T_p = |x_p| * (|q_p| + |z_b|) * |s_b|
// (the offset mode w = q * s + o: |x_p| * (|q_p| * |s_b| + |o_b|); fp8: |x_p * w_p * s|,
// nvfp4: |x_p * e2m1_p * scale_b * global|), the fast schedule's
// longest chain of f32 roundings per output is L = (rows of one chunk sum) + (chunks one
// k-lane folds) + 6 (the zero-point fma, the block fma, the 2 butterfly levels of 4
// k-lanes, the final scale, one spare) + (k_subgroups - 1) (the workgroup's subgroups' sums added in
// order) + splits (split-K: the workgroups' partials added in split order), so
// |fast - exact| <= 2 * u * L * sum_p T_p. The seed adds k products in order,
// |seed - exact| <= 2 * u * (k + 2) * sum_p T_p, hence |fast - seed| <= the sum of both.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ir/ops/DequantMatmul.h"
#include "ir/ops/SplitK.h"
#include "tests/reference/FormatOracles.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;
using namespace quantc::ir::ops;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
namespace reference = quantc::runtime::reference;

namespace {

enum class Kind { Int8, Int4, Fp8, Nvfp4 };

struct Shape {
  Kind kind;
  std::uint32_t k, n;
  std::uint32_t block = 0;  // int8/int4
  bool asymmetric = false;
  Fp8Format format = Fp8Format::E4M3;
  bool offset = false;  // int8/int4: w = q * s + o (BlockAffineMode::Offset)
};

/// An int8/int4 shape in the offset mode.
Shape offset_shape(Kind kind, std::uint32_t k, std::uint32_t n, std::uint32_t block) {
  Shape s{kind, k, n, block};
  s.offset = true;
  return s;
}

struct Inputs {
  std::vector<float> x, scales, zero_points, global{1.0f};  // zero_points: the offsets in the offset mode
  std::vector<std::uint8_t> w, scale_codes;  // w: bytes (i8 stored as u8 bits)
};

double fp8_value(std::uint8_t code, Fp8Format format) {
  return quantc::testing::fp8_value(code, format == Fp8Format::E4M3);
}

using quantc::testing::e2m1_value;

std::uint32_t nibble(const std::vector<std::uint8_t>& bytes, std::uint64_t element) {
  return (bytes[element / 2] >> (4 * (element % 2))) & 0xF;
}

std::uint32_t blocks_of(const Shape& s) {
  return s.kind == Kind::Nvfp4 ? (s.k + 15) / 16 : s.kind == Kind::Fp8 ? 1 : (s.k + s.block - 1) / s.block;
}

Inputs random_inputs(const Shape& s, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), scales(0.01f, 0.1f);
  Inputs in;
  for (std::uint32_t p = 0; p < s.k; ++p) in.x.push_back(unit(engine));
  const std::uint64_t elements = std::uint64_t{s.k} * s.n;
  const bool nibbles = s.kind == Kind::Int4 || s.kind == Kind::Nvfp4;
  for (std::uint64_t i = 0; i < (nibbles ? (elements + 1) / 2 : elements); ++i) {
    std::uint8_t byte = static_cast<std::uint8_t>(engine());
    if (s.kind == Kind::Fp8) {  // finite codes only here (NaN/inf: their own test)
      if (s.format == Fp8Format::E4M3 && (byte & 0x7F) == 0x7F) byte ^= 1;
      if (s.format == Fp8Format::E5M2 && ((byte >> 2) & 31) == 31) byte &= 0xBF;
    }
    in.w.push_back(byte);
  }
  if (s.kind == Kind::Int8 || s.kind == Kind::Int4) {
    for (std::uint32_t i = 0; i < blocks_of(s) * s.n; ++i) {
      in.scales.push_back(scales(engine));
      if (s.asymmetric) in.zero_points.push_back(float(engine() % 17) - (s.kind == Kind::Int8 ? 8.0f : 0.0f) + 0.25f);
      // Offsets of a block's weight range, either sign (GGUF: Q4_1's m, Q4_K's -dmin*m).
      if (s.offset) in.zero_points.push_back(unit(engine) * 0.5f);
    }
  } else if (s.kind == Kind::Fp8) {
    for (std::uint32_t j = 0; j < s.n; ++j) in.scales.push_back(scales(engine));
  } else {
    for (std::uint32_t i = 0; i < blocks_of(s) * s.n; ++i) {
      std::uint8_t code = static_cast<std::uint8_t>(0x20 + engine() % 0x40);  // 2^-4 .. 2^3, some negative
      if (engine() % 5 == 0) code |= 0x80;
      in.scale_codes.push_back(code);
    }
    in.global = {0.75f};
  }
  return in;
}

Program build(const Shape& s, KernelSchedule schedule) {
  if (s.offset && s.kind == Kind::Int8) {
    return dequant_matmul_int8(1, s.k, s.n, s.block, BlockAffineMode::Offset, schedule);
  }
  if (s.offset && s.kind == Kind::Int4) {
    return dequant_matmul_int4(1, s.k, s.n, s.block, BlockAffineMode::Offset, schedule);
  }
  switch (s.kind) {
    case Kind::Int8: return dequant_matmul_int8(1, s.k, s.n, s.block, s.asymmetric, schedule);
    case Kind::Int4: return dequant_matmul_int4(1, s.k, s.n, s.block, s.asymmetric, schedule);
    case Kind::Fp8: return dequant_matmul_fp8(1, s.k, s.n, s.format, schedule);
    case Kind::Nvfp4: return dequant_matmul_nvfp4(1, s.k, s.n, schedule);
  }
  return {};
}

std::vector<float> run(const Program& program, const Shape& s, const Inputs& in) {
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = HostBuffer::from(ScalarType::F32, in.x);
  if (s.kind == Kind::Int8) {
    std::vector<std::int8_t> signed_bytes(in.w.size());
    std::memcpy(signed_bytes.data(), in.w.data(), in.w.size());
    buffers["w"] = HostBuffer::from(ScalarType::I8, signed_bytes);
  } else {
    buffers["w"] = HostBuffer::from(ScalarType::U8, in.w);
  }
  if (s.kind == Kind::Nvfp4) {
    buffers["scales"] = HostBuffer::from(ScalarType::U8, in.scale_codes);
    buffers["global_scale"] = HostBuffer::from(ScalarType::F32, in.global);
  } else {
    buffers["scales"] = HostBuffer::from(ScalarType::F32, in.scales);
  }
  if (s.asymmetric) buffers["zero_points"] = HostBuffer::from(ScalarType::F32, in.zero_points);
  if (s.offset) buffers["offsets"] = HostBuffer::from(ScalarType::F32, in.zero_points);
  // Several host threads: split-K workgroups meet in whatever order they finish.
  reference::RunOptions options;
  options.threads = 4;
  reference::run(program, buffers, options);
  for (const BufferDecl& buffer : program.buffers) {
    if (!buffer.is_scratch()) continue;
    for (std::uint8_t byte : buffers.at(buffer.name).bytes) REQUIRE(byte == 0);  // left zeroed
  }
  return buffers.at("out").as<float>();
}

struct Exact {
  double value = 0;
  double magnitude = 0;  // sum_p T_p
};

Exact exact_output(const Shape& s, const Inputs& in, std::uint32_t j) {
  Exact r;
  for (std::uint32_t p = 0; p < s.k; ++p) {
    const std::uint64_t e = std::uint64_t{p} * s.n + j;
    double w = 0, scale = 1, zero = 0, offset = 0;
    switch (s.kind) {
      case Kind::Int8:
      case Kind::Int4: {
        const std::uint32_t sidecar = (p / s.block) * s.n + j;
        w = s.kind == Kind::Int8 ? double(static_cast<std::int8_t>(in.w[e])) : double(nibble(in.w, e));
        scale = in.scales[sidecar];
        zero = s.asymmetric ? in.zero_points[sidecar] : 0.0;
        offset = s.offset ? in.zero_points[sidecar] : 0.0;
        break;
      }
      case Kind::Fp8:
        w = fp8_value(in.w[e], s.format);
        scale = in.scales[j];
        break;
      case Kind::Nvfp4:
        w = e2m1_value(nibble(in.w, e));
        scale = fp8_value(in.scale_codes[(p / 16) * s.n + j], Fp8Format::E4M3) * in.global[0];
        break;
    }
    r.value += double(in.x[p]) * ((w - zero) * scale + offset);
    r.magnitude += std::fabs(in.x[p]) * ((std::fabs(w) + std::fabs(zero)) * std::fabs(scale) + std::fabs(offset));
  }
  return r;
}

/// L of the file comment: the longest chain of roundings of one output, for the
/// program's k-subgroups (workgroup_size / 32) and `splits` workgroups per output (each
/// meeting adds one rounding per partner).
double chain_length(const Shape& s, const Program& fast) {
  const std::uint32_t splits = fast.workgroup_count[1];
  const std::uint32_t k_subgroups = fast.workgroup_size[0] / 32;
  const std::uint32_t k_lanes = 4 * k_subgroups * splits;  // 8 column lanes x 4 k-lanes per subgroup
  const double tail = 6.0 + (k_subgroups - 1) + splits;
  switch (s.kind) {
    case Kind::Int8:
    case Kind::Int4: {
      // Chunks of 32 rows (slices of bigger blocks) or of one block of at most 32 rows.
      std::uint32_t chunk = std::min(s.block, 32u);
      while (s.block % chunk != 0) --chunk;
      const std::uint32_t chunks = (s.k + chunk - 1) / chunk;
      return chunk + (chunks + k_lanes - 1) / k_lanes + tail;
    }
    case Kind::Fp8: return 32.0 * ((s.k + 31) / 32 + k_lanes - 1) / k_lanes + tail;
    case Kind::Nvfp4: return 16 + (blocks_of(s) + k_lanes - 1) / k_lanes + tail;
  }
  return 0;
}

void check_fast(const Shape& s, std::uint32_t seed) {
  Inputs in = random_inputs(s, seed);
  Program fast = build(s, KernelSchedule::Fast), seed_program = build(s, KernelSchedule::Seed);
  // The fast launch: 1, 2 or 4 subgroups per workgroup splitting K (fp8: at most 2).
  const std::uint32_t invocations = fast.workgroup_size[0];
  REQUIRE((invocations == 32 || invocations == 64 || invocations == 128));
  if (s.kind == Kind::Fp8) CHECK(invocations <= 64);
  // The same files feed either schedule (the fast one may add split-K scratch, which the
  // runtime provides).
  REQUIRE(fast.caller_buffers() == seed_program.caller_buffers());
  std::vector<float> fast_out = run(fast, s, in), seed_out = run(seed_program, s, in);
  const double u = std::ldexp(1.0, -24);
  for (std::uint32_t j = 0; j < s.n; ++j) {
    Exact exact = exact_output(s, in, j);
    const double fast_bound = 2 * u * chain_length(s, fast) * exact.magnitude;
    const double seed_bound = 2 * u * (s.k + 2) * exact.magnitude;
    INFO("column " << j << ": fast " << fast_out[j] << ", seed " << seed_out[j] << ", exact " << exact.value
                   << ", fast bound " << fast_bound);
    CHECK(std::fabs(fast_out[j] - exact.value) <= fast_bound);
    CHECK(std::fabs(seed_out[j] - exact.value) <= seed_bound);
    CHECK(std::fabs(fast_out[j] - seed_out[j]) <= fast_bound + seed_bound);
  }
}

}  // namespace

TEST_CASE("fast dequant_matmul_int8 matches a double oracle and the seed within the f32 bound", "[dequant_fast]") {
  for (Shape s : {Shape{Kind::Int8, 256, 64, 64, true}, Shape{Kind::Int8, 37, 48, 16, false},
                  Shape{Kind::Int8, 300, 32, 128, true}, Shape{Kind::Int8, 64, 16, 5, true},
                  Shape{Kind::Int8, 1, 32, 1, false}, Shape{Kind::Int8, 1024, 32, 16, true},
                  Shape{Kind::Int8, 2048, 32, 64, true},  // 2 k-subgroups
                  Shape{Kind::Int8, 70, 20, 32, true}}) {  // n % 32 != 0: lanes past n reload and skip
    DYNAMIC_SECTION(s.k << "x" << s.n << " block " << s.block << (s.asymmetric ? " asym" : " sym")) {
      check_fast(s, 3 + s.k + s.n);
    }
  }
}

TEST_CASE("fast dequant_matmul_int4 matches a double oracle and the seed within the f32 bound", "[dequant_fast]") {
  for (Shape s : {Shape{Kind::Int4, 256, 128, 64, true}, Shape{Kind::Int4, 37, 96, 16, false},
                  Shape{Kind::Int4, 520, 64, 128, true}, Shape{Kind::Int4, 24, 32, 7, true},
                  Shape{Kind::Int4, 2050, 96, 16, false}, Shape{Kind::Int4, 4096, 64, 16, true},
                  Shape{Kind::Int4, 4096, 128, 128, true},  // 32-row slices, 4 k-subgroups
                  Shape{Kind::Int4, 300, 40, 64, false}}) {  // n % 64 != 0
    DYNAMIC_SECTION(s.k << "x" << s.n << " block " << s.block << (s.asymmetric ? " asym" : " sym")) {
      check_fast(s, 5 + s.k + s.n);
    }
  }
}

TEST_CASE("fast dequant_matmul_int4 and int8 in the offset mode match a double oracle and the seed within the "
          "f32 bound",
          "[dequant_fast][offset]") {
  // Q4_K's sub-block of 32 and Q4_1's block of 32 (a partial last block, split-K over 2
  // and 4 workgroups, a partial last warp), odd blocks, block_size 1; int8 as Q5_K uses it.
  for (Shape s : {offset_shape(Kind::Int4, 256, 128, 32), offset_shape(Kind::Int4, 1040, 64, 32),
                  offset_shape(Kind::Int4, 37, 96, 16), offset_shape(Kind::Int4, 24, 32, 7),
                  offset_shape(Kind::Int4, 2050, 96, 32), offset_shape(Kind::Int4, 3, 32, 1),
                  offset_shape(Kind::Int8, 256, 64, 32), offset_shape(Kind::Int8, 1024, 32, 16),
                  offset_shape(Kind::Int8, 37, 48, 5)}) {
    DYNAMIC_SECTION((s.kind == Kind::Int4 ? "int4 " : "int8 ") << s.k << "x" << s.n << " block " << s.block) {
      check_fast(s, 17 + s.k + s.n);
    }
  }
}

TEST_CASE("fast dequant_matmul_fp8 matches a double oracle and the seed within the f32 bound", "[dequant_fast]") {
  for (Shape s : {Shape{Kind::Fp8, 256, 64, 0, false, Fp8Format::E4M3}, Shape{Kind::Fp8, 33, 48, 0, false, Fp8Format::E5M2},
                  Shape{Kind::Fp8, 1100, 32, 0, false, Fp8Format::E4M3}, Shape{Kind::Fp8, 7, 16, 0, false, Fp8Format::E5M2},
                  Shape{Kind::Fp8, 2048, 32, 0, false, Fp8Format::E4M3}, Shape{Kind::Fp8, 90, 12, 0, false, Fp8Format::E4M3}}) {
    DYNAMIC_SECTION(s.k << "x" << s.n << " " << to_string(s.format)) { check_fast(s, 9 + s.k + s.n); }
  }
}

TEST_CASE("fast dequant_matmul_nvfp4 matches a double oracle and the seed within the f32 bound", "[dequant_fast]") {
  for (Shape s : {Shape{Kind::Nvfp4, 256, 128}, Shape{Kind::Nvfp4, 23, 96}, Shape{Kind::Nvfp4, 600, 64},
                  Shape{Kind::Nvfp4, 5, 32}, Shape{Kind::Nvfp4, 4100, 64}, Shape{Kind::Nvfp4, 100, 24}}) {
    DYNAMIC_SECTION(s.k << "x" << s.n) { check_fast(s, 13 + s.k + s.n); }
  }
}

TEST_CASE("fast and seed agree bit for bit where every partial sum is exact", "[dequant_fast]") {
  // Integer x, power-of-two scales, integer zero points / dyadic codes of a narrow exponent
  // range: every product and partial sum is exactly representable, so no order can round.
  auto integer_x = [](Inputs& in) {
    for (std::size_t p = 0; p < in.x.size(); ++p) in.x[p] = static_cast<float>(static_cast<int>(p % 7) - 3);
  };
  SECTION("int8 and int4") {
    for (Shape s : {Shape{Kind::Int8, 256, 64, 64, true}, Shape{Kind::Int4, 200, 96, 32, true},
                    offset_shape(Kind::Int4, 200, 96, 32), offset_shape(Kind::Int8, 128, 32, 32)}) {
      Inputs in = random_inputs(s, 21);
      integer_x(in);
      for (std::size_t i = 0; i < in.scales.size(); ++i) in.scales[i] = i % 5 == 0 ? 0.0f : 0.5f;
      for (float& z : in.zero_points) z = s.offset ? std::floor(8 * z) / 4 : std::floor(z);  // offsets: quarters
      for (std::size_t i = 0; i < in.w.size(); i += 3) in.w[i] = s.kind == Kind::Int8 ? 0x80 : 0xFF;  // extremes
      CHECK(run(build(s, KernelSchedule::Fast), s, in) == run(build(s, KernelSchedule::Seed), s, in));
    }
  }
  SECTION("fp8 e4m3") {
    Shape s{Kind::Fp8, 64, 32, 0, false, Fp8Format::E4M3};
    Inputs in = random_inputs(s, 22);
    integer_x(in);
    for (std::uint8_t& code : in.w) code = static_cast<std::uint8_t>((code & 0x87) | (0x20 + (code & 0x38)));  // e 4..11
    for (float& scale : in.scales) scale = 0.25f;
    CHECK(run(build(s, KernelSchedule::Fast), s, in) == run(build(s, KernelSchedule::Seed), s, in));
  }
  SECTION("nvfp4") {
    Shape s{Kind::Nvfp4, 96, 64};
    Inputs in = random_inputs(s, 23);
    integer_x(in);
    for (std::uint8_t& code : in.scale_codes) code = static_cast<std::uint8_t>((code & 0x80) | 0x38);  // +-1
    in.global = {2.0f};
    CHECK(run(build(s, KernelSchedule::Fast), s, in) == run(build(s, KernelSchedule::Seed), s, in));
  }
}

TEST_CASE("fast fp8 and nvfp4 keep NaN and infinity codes to their columns", "[dequant_fast]") {
  SECTION("e4m3 NaN codes") {
    Shape s{Kind::Fp8, 64, 32, 0, false, Fp8Format::E4M3};
    Inputs in = random_inputs(s, 31);
    in.w[5 * 32 + 3] = 0x7F;
    in.w[40 * 32 + 17] = 0xFF;
    std::vector<float> fast = run(build(s, KernelSchedule::Fast), s, in), seed = run(build(s, KernelSchedule::Seed), s, in);
    for (std::uint32_t j = 0; j < s.n; ++j) {
      INFO("column " << j);
      CHECK(std::isnan(fast[j]) == (j == 3 || j == 17));
      CHECK(std::isnan(seed[j]) == std::isnan(fast[j]));
    }
  }
  SECTION("e5m2 infinities and NaN") {
    Shape s{Kind::Fp8, 32, 16, 0, false, Fp8Format::E5M2};
    Inputs in = random_inputs(s, 32);
    for (std::uint32_t p = 0; p < s.k; ++p) in.x[p] = 0.5f + p;  // positive: +inf * x stays +inf
    in.w[2 * 16 + 1] = 0x7C;   // +inf
    in.w[9 * 16 + 4] = 0xFC;   // -inf
    in.w[3 * 16 + 6] = 0x7D;   // NaN
    in.w[4 * 16 + 8] = 0x7C;   // +inf and -inf in one column: NaN
    in.w[5 * 16 + 8] = 0xFC;
    std::vector<float> fast = run(build(s, KernelSchedule::Fast), s, in), seed = run(build(s, KernelSchedule::Seed), s, in);
    CHECK(fast[1] == INFINITY);
    CHECK(fast[4] == -INFINITY);
    CHECK(std::isnan(fast[6]));
    CHECK(std::isnan(fast[8]));
    for (std::uint32_t j : {1u, 4u, 6u, 8u}) CHECK(std::isnan(seed[j]) == std::isnan(fast[j]));
    CHECK(seed[1] == fast[1]);
    CHECK(seed[4] == fast[4]);
    for (std::uint32_t j = 0; j < s.n; ++j) {
      if (j != 1 && j != 4 && j != 6 && j != 8) CHECK(std::isfinite(fast[j]));
    }
  }
  SECTION("nvfp4 NaN block scale") {
    Shape s{Kind::Nvfp4, 48, 64};
    Inputs in = random_inputs(s, 33);
    in.scale_codes[1 * 64 + 10] = 0x7F;
    std::vector<float> fast = run(build(s, KernelSchedule::Fast), s, in), seed = run(build(s, KernelSchedule::Seed), s, in);
    for (std::uint32_t j = 0; j < s.n; ++j) CHECK(std::isnan(fast[j]) == (j == 10));
    CHECK(std::isnan(seed[10]));
  }
}

TEST_CASE("the word decoders are exact for every code", "[dequant_fast]") {
  // Every byte value in every byte position, through the interpreter.
  for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    Shape s{Kind::Fp8, 1, 1024, 0, false, format};
    Inputs in = random_inputs(s, 41);
    in.x = {1.0f};
    for (std::uint32_t j = 0; j < s.n; ++j) in.w[j] = static_cast<std::uint8_t>(j % 256);
    for (float& scale : in.scales) scale = 1.0f;
    std::vector<float> out = run(build(s, KernelSchedule::Fast), s, in);
    for (std::uint32_t j = 0; j < s.n; ++j) {
      INFO(to_string(format) << " code " << j % 256);
      const double expected = fp8_value(static_cast<std::uint8_t>(j % 256), format);
      if (std::isnan(expected)) {
        CHECK(std::isnan(out[j]));
      } else {
        CHECK(out[j] == expected);
      }
    }
  }
  Shape s{Kind::Nvfp4, 1, 512};
  Inputs in = random_inputs(s, 42);
  in.x = {1.0f};
  in.global = {1.0f};
  for (std::uint32_t i = 0; i < in.w.size(); ++i) in.w[i] = static_cast<std::uint8_t>(i % 256);
  for (std::uint8_t& code : in.scale_codes) code = 0x38;  // 1.0
  std::vector<float> out = run(build(s, KernelSchedule::Fast), s, in);
  for (std::uint32_t j = 0; j < s.n; ++j) {
    INFO("e2m1 code " << nibble(in.w, j));
    CHECK(out[j] == e2m1_value(nibble(in.w, j)));
  }
}

TEST_CASE("dequant schedule fast names the shape it cannot run and auto falls back to the seed", "[dequant_fast]") {
  CHECK_THROWS_WITH(dequant_matmul_int8(2, 64, 32, 32, false, KernelSchedule::Fast),
                    Catch::Contains("dequant_matmul_int8 has no fast schedule: m=2 is not 1") &&
                        Catch::Contains("\"schedule\": \"seed\""));
  CHECK_THROWS_WITH(dequant_matmul_int8(1, 64, 30, 32, false, KernelSchedule::Fast),
                    Catch::Contains("n=30 is not a multiple of 4") && Catch::Contains("pad n to a multiple of 4"));
  CHECK_THROWS_WITH(dequant_matmul_int4(1, 64, 44, 32, true, KernelSchedule::Fast),
                    Catch::Contains("n=44 is not a multiple of 8"));
  // Batches of fp8 (as int4's and nvfp4's) run on the tensor cores, with f16/bf16 activations only.
  CHECK_THROWS_WITH(dequant_matmul_fp8(3, 64, 32, Fp8Format::E4M3, KernelSchedule::Fast),
                    Catch::Contains("m=3 > 1 runs on the tensor cores") && Catch::Contains("activation f32"));
  CHECK_THROWS_WITH(dequant_matmul_nvfp4(1, 64, 12, KernelSchedule::Fast), Catch::Contains("n=12 is not a multiple of 8"));
  // The seed's own errors come first for every schedule.
  CHECK_THROWS_WITH(dequant_matmul_int4(1, 64, 64, 0, true, KernelSchedule::Fast), Catch::Contains("block_size=0"));
  CHECK_THROWS_WITH(dequant_matmul_fp8(1, 0, 64, Fp8Format::E4M3, KernelSchedule::Fast), Catch::Contains("k=0"));
  // Auto: fast where it can run (32-invocation workgroups), else the seed (128).
  CHECK(dequant_matmul_int8(1, 64, 32, 32, false, KernelSchedule::Auto).workgroup_size[0] == 32);
  CHECK(dequant_matmul_int8(2, 64, 32, 32, false, KernelSchedule::Auto).workgroup_size[0] == 128);
  CHECK(dequant_matmul_int4(1, 64, 44, 32, false, KernelSchedule::Auto).workgroup_size[0] == 128);
  CHECK(dequant_matmul_int4(1, 64, 48, 32, false, KernelSchedule::Auto).workgroup_size[0] == 32);
  CHECK(dequant_matmul_fp8(1, 64, 32, Fp8Format::E5M2, KernelSchedule::Auto).workgroup_size[0] == 32);
  CHECK(dequant_matmul_nvfp4(4, 64, 64, KernelSchedule::Auto).workgroup_size[0] == 128);
}

TEST_CASE("the fast dequant GEMVs split K across workgroups where one warp per sector column is too few",
          "[dequant_fast][split_k]") {
  // 64 columns (one sector column of nibbles) and 128 chunks of 16 rows: eight workgroups
  // of four subgroups (k-subgroups) of 4 k-lanes share the column's reduction, one chunk
  // per k-lane; kSplitKTargetWorkgroups sector columns are workgroups enough without a split.
  const Program split = dequant_matmul_int4(1, 2048, 64, 16, true, KernelSchedule::Fast);
  CHECK(split.workgroup_size[0] == 4 * 32);
  CHECK(split.workgroup_count[0] == 1);
  CHECK(split.workgroup_count[1] == 8);
  REQUIRE(split.buffers.size() == 7);
  CHECK(split.buffers[5].name == "partials");
  CHECK(split.buffers[5].count == 8 * 64);
  CHECK(split.buffers[6].name == "arrivals");
  CHECK(split.buffers[6].count == 1);
  const Program wide = dequant_matmul_int4(1, 4096, 64 * kSplitKTargetWorkgroups, 16, true, KernelSchedule::Fast);
  CHECK(wide.workgroup_count[0] == kSplitKTargetWorkgroups);
  CHECK(wide.workgroup_count[1] == 1);
  CHECK(wide.buffers.size() == 5);
  // Too few chunks for a second workgroup's k-lanes: no split however few warps.
  const Program short_k = dequant_matmul_int4(1, 64, 64, 16, true, KernelSchedule::Fast);
  CHECK(short_k.workgroup_count[1] == 1);
}

TEST_CASE("at MiniLM's shapes the fast dequant GEMVs shorten chunks where that adds workgroups or nibble k-subgroups",
          "[dequant_fast][split_k]") {
  // Fewer workgroups than SMs: 16-row chunks wherever they split K across more workgroups
  // (1536 x 384, every format); where they would only add k-subgroups (384 x 384), for
  // int4 and nvfp4 but not int8 and fp8, as an H200 measured (DequantMatmul.cpp,
  // shorten_chunks).
  const auto shape = [](const Program& program) {
    return std::pair{program.workgroup_count[0] * program.workgroup_count[1], program.workgroup_size[0]};
  };
  using Shape = std::pair<std::uint32_t, std::uint32_t>;  // workgroups, invocations per workgroup
  CHECK(shape(dequant_matmul_int8(1, 384, 384, 64, true, KernelSchedule::Fast)) == Shape{24, 32});
  CHECK(shape(dequant_matmul_fp8(1, 384, 384, Fp8Format::E4M3, KernelSchedule::Fast)) == Shape{24, 32});
  CHECK(shape(dequant_matmul_int4(1, 384, 384, 64, true, KernelSchedule::Fast)) == Shape{12, 64});
  CHECK(shape(dequant_matmul_nvfp4(1, 384, 384, KernelSchedule::Fast)) == Shape{12, 64});
  CHECK(shape(dequant_matmul_int8(1, 1536, 384, 64, true, KernelSchedule::Fast)) == Shape{48, 128});
  CHECK(shape(dequant_matmul_fp8(1, 1536, 384, Fp8Format::E4M3, KernelSchedule::Fast)) == Shape{96, 64});
  CHECK(shape(dequant_matmul_int4(1, 1536, 384, 64, true, KernelSchedule::Fast)) == Shape{24, 128});
  CHECK(shape(dequant_matmul_nvfp4(1, 1536, 384, KernelSchedule::Fast)) == Shape{24, 128});
  // Grids that fill the SMs keep 32-row chunks: 4096 x 4096 int8 as before.
  CHECK(shape(dequant_matmul_int8(1, 4096, 4096, 64, true, KernelSchedule::Fast)) == Shape{2048, 128});
}
