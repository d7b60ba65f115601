// The fast batch-1 schedules of nf4_gemm (both accumulate modes) and nf4_gemm_transpose
// (ir/ops/Nf4Gemm.h) against a double-precision oracle and against the seed program, on
// the reference interpreter. (The emulator sweep over every op's test shapes checks the
// emitted PTX against the interpreter bit for bit.)
//
// The oracle. E = sum_k a_k * NF4[code_k] * s_k in double: each product a*NF4 is exact in
// f64 (24 + 24 bits), times s one f64 rounding, so E is within k * 2^-53 * T of the real
// sum, where T = sum_k |a_k * NF4[code_k] * s_k| (negligible against the f32 bounds).
//
// The bounds (u = 2^-24; header ir/ops/Nf4Gemm.h derives them):
//   nf4_gemm f64:  |fast - E| <= u*|E| + 33*u*T;  |fast - seed| <= 2u*|E| + 34*u*T
//     a lane's 32-term f32 sum p of exact-ish products carries at most 32*u*sum|terms|
//     (31 fma roundings plus the first product's), p*s is exact in f64 and the f64 sums
//     add ~2^-53 per level; the final f32 rounding adds u*|result|. The seed rounds each
//     NF4*s to f32 (u*|term|) and sums exactly in f64, so |seed - E| <= u*|E| + u*T.
//   nf4_gemm f32:  |fast - E| <= (32 + rounds + log2(k_lanes) + 10)*u*T, rounds = the
//     half blocks per lane (k/32/(k_lanes * k_subgroups) rounded up); the seed's fma chain
//     adds at most (k + 1)*u*T, so |fast - seed| <= (k + 43 + rounds + log2 k_lanes)*u*T.
//   nf4_gemm_transpose (f64): |fast - E| <= u*|E| + (J + 2)*u*T, J = columns summed in
//     f32 per chunk (64); w = a*s rounds once (u), each fma once; |fast - seed| <=
//     2u*|E| + (J + 3)*u*T.
// The tests use c = 1 (the bounds are first-order; the second-order terms are below
// 2^-40*T at these sizes) and assert real numbers: the largest observed error / bound is
// printed and must be < 1.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "ir/ops/Nf4Gemm.h"
#include "ir/ops/Quantize.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;
using namespace quantc::ir::ops;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
namespace reference = quantc::runtime::reference;

namespace {

const double kU = std::ldexp(1.0, -24);

struct Inputs {
  std::vector<float> a, scales;
  std::vector<std::uint32_t> packed;
  Nf4CodeBook book = Nf4CodeBook::Nf4;
};

/// Random activations in [-1, 1), random codes, scales in [0.01, 2).
Inputs random_inputs(std::uint32_t a_count, std::uint32_t n, std::uint32_t k, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), scales(0.01f, 2.0f);
  Inputs in;
  for (std::uint32_t i = 0; i < a_count; ++i) in.a.push_back(unit(engine));
  for (std::uint32_t i = 0; i < n * (k / 8); ++i) in.packed.push_back(static_cast<std::uint32_t>(engine()));
  for (std::uint32_t i = 0; i < n * (k / 64); ++i) in.scales.push_back(scales(engine));
  return in;
}

std::vector<float> run(const Program& program, const Inputs& in) {
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["a"] = HostBuffer::from(ScalarType::F32, in.a);
  buffers["b_nf4"] = HostBuffer::from(ScalarType::U32, in.packed);
  buffers["b_scales"] = HostBuffer::from(ScalarType::F32, in.scales);
  reference::RunOptions options;
  options.threads = 2;
  reference::run(program, buffers, options);
  for (const BufferDecl& buffer : program.buffers) {
    if (!buffer.is_scratch()) continue;
    for (std::uint8_t byte : buffers.at(buffer.name).bytes) REQUIRE(byte == 0);  // split-K left it zeroed
  }
  return buffers.at("c").as<float>();
}

/// The code book's value times scale of B[r, col], exact in double.
double weight(const Inputs& in, std::uint32_t k, std::uint32_t r, std::uint32_t col) {
  const std::uint32_t word = in.packed[col * (k / 8) + r / 8];
  const std::uint32_t code = (word >> ((r % 8) * 4)) & 0xF;
  const float value = in.book == Nf4CodeBook::Nf4 ? kNf4Table[code] : kBnbFp4Table[code];
  return double(value) * double(in.scales[col * (k / 64) + r / 64]);
}

struct Exact {
  double value = 0;  // E
  double magnitude = 0;  // T
};

/// nf4_gemm at m = 1: c[col] = sum_r a[r] * B[r, col].
Exact exact_gemm(const Inputs& in, std::uint32_t k, std::uint32_t col) {
  Exact e;
  for (std::uint32_t r = 0; r < k; ++r) {
    const double term = double(in.a[r]) * weight(in, k, r, col);
    e.value += term;
    e.magnitude += std::fabs(term);
  }
  return e;
}

/// nf4_gemm_transpose at m = 1: c[r] = sum_col a[col] * B[r, col].
Exact exact_transpose(const Inputs& in, std::uint32_t n, std::uint32_t k, std::uint32_t r) {
  Exact e;
  for (std::uint32_t col = 0; col < n; ++col) {
    const double term = double(in.a[col]) * weight(in, k, r, col);
    e.value += term;
    e.magnitude += std::fabs(term);
  }
  return e;
}

std::uint32_t log2_of(std::uint32_t v) { return static_cast<std::uint32_t>(std::bit_width(v) - 1); }

void check_gemm(std::uint32_t n, std::uint32_t k, Nf4Accumulation accumulation, const Inputs& in,
                const Nf4GemvSchedule& split = {}) {
  Program fast = nf4_gemm(1, n, k, accumulation, KernelSchedule::Fast, split, ScalarType::F32, in.book);
  Program seed = nf4_gemm(1, n, k, accumulation, KernelSchedule::Seed, {}, ScalarType::F32, in.book);
  REQUIRE(fast.caller_buffers() == seed.caller_buffers());  // the same files feed either schedule
  std::vector<float> fast_c = run(fast, in), seed_c = run(seed, in);
  const std::uint32_t lanes = split.k_lanes * resolve_nf4_gemv_schedule(n, k, split).k_subgroups;  // k-lanes of a workgroup
  const std::uint32_t rounds = (k / 32 + lanes - 1) / lanes;
  double worst = 0;
  for (std::uint32_t col = 0; col < n; ++col) {
    const Exact e = exact_gemm(in, k, col);
    double bound = 0, seed_bound = 0;
    if (accumulation == Nf4Accumulation::F64) {
      bound = kU * std::fabs(e.value) + 33 * kU * e.magnitude;
      seed_bound = 2 * kU * std::fabs(e.value) + 34 * kU * e.magnitude;
    } else {
      bound = (32.0 + rounds + log2_of(split.k_lanes) + 10) * kU * e.magnitude;
      seed_bound = bound + (k + 1.0) * kU * e.magnitude;
    }
    bound += 1e-30, seed_bound += 1e-30;
    INFO("column " << col << ": fast " << fast_c[col] << ", seed " << seed_c[col] << ", exact " << e.value
                   << ", T " << e.magnitude);
    CHECK(std::fabs(fast_c[col] - e.value) <= bound);
    CHECK(std::fabs(double(fast_c[col]) - double(seed_c[col])) <= seed_bound);
    worst = std::max(worst, std::fabs(fast_c[col] - e.value) / bound);
  }
  WARN("nf4_gemm fast " << (accumulation == Nf4Accumulation::F64 ? "f64" : "f32") << " " << k << "x" << n
                        << ": largest |fast - exact| / bound = " << worst);
}

void check_transpose(std::uint32_t n, std::uint32_t k, const Inputs& in, const Nf4GemvTransposeSchedule& split = {}) {
  Program fast = nf4_gemm_transpose(1, n, k, KernelSchedule::Fast, split, ScalarType::F32, in.book);
  // The shapes here have few output groups, so the columns split across workgroups.
  if (split.subgroups_per_workgroup == 1 && n >= 64) CHECK(fast.workgroup_count[1] > 1);
  Program seed = nf4_gemm_transpose(1, n, k, KernelSchedule::Seed, {}, ScalarType::F32, in.book);
  REQUIRE(fast.caller_buffers() == seed.caller_buffers());
  std::vector<float> fast_c = run(fast, in), seed_c = run(seed, in);
  const double J = split.columns_per_chunk;
  double worst = 0;
  for (std::uint32_t r = 0; r < k; ++r) {
    const Exact e = exact_transpose(in, n, k, r);
    const double bound = kU * std::fabs(e.value) + (J + 2) * kU * e.magnitude + 1e-30;
    const double seed_bound = 2 * kU * std::fabs(e.value) + (J + 3) * kU * e.magnitude + 1e-30;
    INFO("output " << r << ": fast " << fast_c[r] << ", seed " << seed_c[r] << ", exact " << e.value << ", T "
                   << e.magnitude);
    CHECK(std::fabs(fast_c[r] - e.value) <= bound);
    CHECK(std::fabs(double(fast_c[r]) - double(seed_c[r])) <= seed_bound);
    worst = std::max(worst, std::fabs(fast_c[r] - e.value) / bound);
  }
  WARN("nf4_gemm_transpose fast " << n << "x" << k << ": largest |fast - exact| / bound = " << worst);
}

}  // namespace

TEST_CASE("fast nf4_gemm matches a double oracle and the seed within the stated bounds", "[nf4][schedule]") {
  for (auto [n, k] : {std::pair{8u, 192u}, std::pair{5u, 1024u}, std::pair{12u, 64u}, std::pair{64u, 4096u},
                      std::pair{33u, 11008u / 64 * 64}, std::pair{1u, 64u}, std::pair{7u, 320u}}) {
    for (Nf4Accumulation accumulation : {Nf4Accumulation::F64, Nf4Accumulation::F32}) {
      DYNAMIC_SECTION(k << "x" << n << (accumulation == Nf4Accumulation::F64 ? " f64" : " f32")) {
        check_gemm(n, k, accumulation, random_inputs(k, n, k, 3 + n + k));
      }
    }
  }
}

TEST_CASE("fast nf4_gemm chooses 4 columns per lane from k = 1024, n = 2048 and k-subgroups while each k-lane keeps 2 "
          "half blocks",
          "[nf4][schedule]") {
  auto resolved = [](std::uint32_t n, std::uint32_t k) {
    Nf4GemvSchedule split = resolve_nf4_gemv_schedule(n, k);
    return std::pair{split.columns_per_lane, split.k_subgroups};
  };
  CHECK(resolved(4096, 384) == std::pair{2u, 1u});    // 12 half blocks
  CHECK(resolved(4096, 1024) == std::pair{4u, 1u});   // 32 half blocks: 16 k-lanes of 2
  CHECK(resolved(4096, 2048) == std::pair{4u, 2u});
  CHECK(resolved(4096, 4096) == std::pair{4u, 4u});
  CHECK(resolved(4096, 11008) == std::pair{4u, 4u});  // capped at 4
  CHECK(resolved(384, 1536) == std::pair{2u, 1u});    // too few columns for 4 per lane, 48 half blocks
  // 32 / 16 k-lanes x 4 columns = 8 columns per subgroup, 2 column subgroups x 4 k-subgroups.
  const Program program = nf4_gemm(1, 4096, 4096, Nf4Accumulation::F32, KernelSchedule::Fast);
  CHECK(program.workgroup_size[0] == 2 * 4 * 32);
  CHECK(program.workgroup_count[0] == 4096 / 16);
}

TEST_CASE("fast nf4_gemm with other work splits stays within the bounds", "[nf4][schedule]") {
  Inputs in = random_inputs(2048, 24, 2048, 17);
  // k_subgroups 0 chooses (2048 = 64 half blocks: 2 k-subgroups of 16 k-lanes); the
  // others split the half blocks across 1, 2, 4 or 8 subgroups of a workgroup.
  for (Nf4GemvSchedule split : {Nf4GemvSchedule{32, 1, 1, 1}, Nf4GemvSchedule{8, 4, 3, 2}, Nf4GemvSchedule{2, 1, 4, 4},
                                Nf4GemvSchedule{16, 2, 2, 2, 1}, Nf4GemvSchedule{16, 2, 1, 2, 4},
                                Nf4GemvSchedule{8, 1, 1, 1, 8}, Nf4GemvSchedule{4, 4, 2, 1, 2}}) {
    CHECK(nf4_gemm(1, 24, 2048, Nf4Accumulation::F64, KernelSchedule::Fast, split).workgroup_size[0] ==
          split.subgroups_per_workgroup * resolve_nf4_gemv_schedule(24, 2048, split).k_subgroups * 32);
    DYNAMIC_SECTION("k_lanes " << split.k_lanes << " columns " << split.columns_per_lane << " k_subgroups "
                               << resolve_nf4_gemv_schedule(24, 2048, split).k_subgroups) {
      check_gemm(24, 2048, Nf4Accumulation::F64, in, split);
      check_gemm(24, 2048, Nf4Accumulation::F32, in, split);
    }
  }
}

TEST_CASE("fast nf4_gemm_transpose matches a double oracle and the seed within the stated bound", "[nf4][schedule]") {
  for (auto [n, k] : {std::pair{40u, 128u}, std::pair{3u, 320u}, std::pair{1u, 64u}, std::pair{300u, 192u},
                      std::pair{1000u, 64u}, std::pair{129u, 1024u}}) {
    DYNAMIC_SECTION(n << "x" << k) { check_transpose(n, k, random_inputs(n, n, k, 5 + n + k)); }
  }
  Inputs in = random_inputs(200, 200, 256, 23);
  for (Nf4GemvTransposeSchedule split : {Nf4GemvTransposeSchedule{2, 4, 8, 2}, Nf4GemvTransposeSchedule{1, 3, 6, 1}}) {
    DYNAMIC_SECTION("output_lanes " << split.output_lanes << " m " << split.columns_per_batch) {
      check_transpose(200, 256, in, split);
    }
  }
}

TEST_CASE("fast nf4_gemm_transpose doubles its splits while 64 registers keep the grid one wave, and asks for them",
          "[nf4][schedule]") {
  auto grid = [](std::uint32_t n, std::uint32_t k) {
    const Program program = nf4_gemm_transpose(1, n, k, KernelSchedule::Fast);
    return std::array<std::uint32_t, 3>{program.workgroup_count[0], program.workgroup_count[1],
                                        program.min_resident_workgroups};
  };
  // 64 subgroups of 64 outputs: SplitK.h's 32 splits, then 64 (4096 warps: one wave of 32
  // an SM at 64 registers), each c-lane 4 columns at n = 4096, 11 at n = 11008.
  CHECK(grid(4096, 4096) == std::array<std::uint32_t, 3>{64, 64, 32});
  CHECK(grid(11008, 4096) == std::array<std::uint32_t, 3>{64, 64, 32});
  // 172 subgroups: 16 splits, 2752 warps; 32 would pass one wave. 21 CTAs an SM: 96 registers.
  CHECK(grid(4096, 11008) == std::array<std::uint32_t, 3>{172, 16, 21});
  // MiniLM: 6 subgroups, SplitK.h's 16 splits (c-lanes of 1-2 of the 384 columns), too few
  // columns for 32; 96 warps, no request.
  CHECK(grid(384, 384) == std::array<std::uint32_t, 3>{6, 16, 0});
}

TEST_CASE("fast nf4 schedules equal the seed exactly on small-integer data", "[nf4][schedule]") {
  // Integer activations in [-3, 3], power-of-two scales and only the codes 0 (-1.0), 7 (0)
  // and 15 (1.0): every partial sum is a small integer times a power of two, exact in f32,
  // so any order gives the seed's bits.
  const std::uint32_t n = 24, k = 1024;
  Inputs in = random_inputs(k, n, k, 9);
  for (std::size_t i = 0; i < in.a.size(); ++i) in.a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < in.scales.size(); ++i) in.scales[i] = i % 3 == 0 ? 0.5f : 2.0f;
  const std::uint32_t nibbles[3] = {0x0, 0x7, 0xF};
  for (std::size_t i = 0; i < in.packed.size(); ++i) {
    std::uint32_t word = 0;
    for (std::uint32_t e = 0; e < 8; ++e) word |= nibbles[(i * 8 + e * 5) % 3] << (4 * e);
    in.packed[i] = word;
  }
  for (Nf4Accumulation accumulation : {Nf4Accumulation::F64, Nf4Accumulation::F32}) {
    CHECK(run(nf4_gemm(1, n, k, accumulation, KernelSchedule::Fast), in) ==
          run(nf4_gemm(1, n, k, accumulation, KernelSchedule::Seed), in));
  }
  // The transpose: n columns of B are the reduction; a has n entries.
  Inputs t = in;
  t.a.resize(n);
  CHECK(run(nf4_gemm_transpose(1, n, k, KernelSchedule::Fast), t) ==
        run(nf4_gemm_transpose(1, n, k, KernelSchedule::Seed), t));
}

TEST_CASE("fast nf4 schedules keep NaN and infinity as the seed does", "[nf4][schedule]") {
  const std::uint32_t n = 8, k = 256;
  Inputs in = random_inputs(k, n, k, 13);
  in.a[5] = std::numeric_limits<float>::quiet_NaN();   // every column's sum is NaN
  std::vector<float> c = run(nf4_gemm(1, n, k, Nf4Accumulation::F32, KernelSchedule::Fast), in);
  for (float v : c) CHECK(std::isnan(v));
  in.a[5] = 1.0f;
  in.scales[3] = std::numeric_limits<float>::infinity();  // column 0, block 3: +-inf or NaN (code 7 = 0)
  std::vector<float> fast = run(nf4_gemm(1, n, k, Nf4Accumulation::F64, KernelSchedule::Fast), in);
  std::vector<float> seed = run(nf4_gemm(1, n, k, Nf4Accumulation::F64, KernelSchedule::Seed), in);
  // The seed forms NF4[7] * inf = NaN per element; the fast schedule applies the scale to
  // the block's sum, which gives NaN or +-inf: both non-finite, as documented.
  CHECK_FALSE(std::isfinite(seed[0]));
  CHECK_FALSE(std::isfinite(fast[0]));
  for (std::uint32_t col = 1; col < n; ++col) CHECK(std::isfinite(fast[col]));
}

TEST_CASE("schedule fast names m and the fix and auto picks fast only at m == 1", "[nf4][schedule]") {
  // m > 1: the tensor-core GEMM (ir/ops/TensorGemm.h), which sums in f32 and takes f16/bf16.
  CHECK_THROWS_WITH(nf4_gemm(3, 16, 64, Nf4Accumulation::F64, KernelSchedule::Fast),
                    Catch::Contains("m=3") && Catch::Contains("\"accumulate\": \"f32\"") &&
                        Catch::Contains("\"schedule\": \"seed\""));
  CHECK_THROWS_WITH(nf4_gemm(3, 32, 64, Nf4Accumulation::F32, KernelSchedule::Fast),
                    Catch::Contains("m=3 > 1 runs on the tensor cores") && Catch::Contains("activation f32"));
  CHECK_THROWS_WITH(nf4_gemm(3, 16, 64, Nf4Accumulation::F32, KernelSchedule::Fast, {}, ScalarType::F16),
                    Catch::Contains("n=16 is not a multiple of 32"));
  CHECK(nf4_gemm(3, 32, 64, Nf4Accumulation::F32, KernelSchedule::Fast, {}, ScalarType::BF16).shared.size() > 0);
  CHECK_THROWS_WITH(nf4_gemm_transpose(2, 16, 64, KernelSchedule::Fast),
                    Catch::Contains("nf4_gemm_transpose m=2") && Catch::Contains("\"schedule\": \"seed\""));
  // The seed's own errors come first for both schedules.
  CHECK_THROWS_WITH(nf4_gemm(1, 16, 100, Nf4Accumulation::F32, KernelSchedule::Fast),
                    Catch::Contains("k=100 is not a multiple of 64"));
  CHECK_THROWS_WITH(nf4_gemm_transpose(1, 0, 64, KernelSchedule::Fast), Catch::Contains("n=0"));
  CHECK(nf4_gemm(3, 16, 64, Nf4Accumulation::F64, KernelSchedule::Auto).workgroup_count[1] == 3);  // seed: m along y
  CHECK(nf4_gemm(1, 16, 64, Nf4Accumulation::F64, KernelSchedule::Auto).workgroup_size[0] == 64);  // fast
  CHECK(nf4_gemm_transpose(1, 16, 64, KernelSchedule::Auto).workgroup_size[0] == 32);
  CHECK(nf4_gemm_transpose(2, 16, 64, KernelSchedule::Auto).workgroup_size[0] == 256);
  CHECK_THROWS_WITH(nf4_gemm(1, 16, 64, Nf4Accumulation::F64, KernelSchedule::Fast, Nf4GemvSchedule{12, 1, 1, 1}),
                    Catch::Contains("k_lanes=12"));
}

TEST_CASE("bitsandbytes FP4 codes: the table is bnb's decode tree and every schedule meets the bounds",
          "[nf4][schedule][fp4]") {
  // The literals of bitsandbytes' dDequantizeFP4Tree (csrc/kernels.cu), code bit 3 the sign.
  const std::array<float, 8> tree = {0.0f, 5.208333333e-03f, 0.66666667f, 1.0f, 0.33333333f, 0.5f, 0.16666667f, 0.25f};
  for (std::uint32_t code = 0; code < 16; ++code) {
    INFO("code " << code);
    const float expected = code < 8 ? tree[code] : -tree[code - 8];
    CHECK(std::bit_cast<std::uint32_t>(kBnbFp4Table[code]) == std::bit_cast<std::uint32_t>(expected));
  }
  for (auto [n, k] : {std::pair{8u, 192u}, std::pair{64u, 4096u}, std::pair{7u, 320u}}) {
    DYNAMIC_SECTION(n << "x" << k) {
      Inputs in = random_inputs(k, n, k, 91 + n + k);
      in.book = Nf4CodeBook::BnbFp4;
      check_gemm(n, k, Nf4Accumulation::F64, in);
      check_gemm(n, k, Nf4Accumulation::F32, in);
      Inputs transposed = random_inputs(n, n, k, 17 + n + k);
      transposed.book = Nf4CodeBook::BnbFp4;
      check_transpose(n, k, transposed);
    }
  }
  // The code book changes the result: the same codes under NF4 differ.
  Inputs in = random_inputs(192, 8, 192, 5);
  Program nf4 = nf4_gemm(1, 8, 192, Nf4Accumulation::F64, KernelSchedule::Fast);
  Program fp4 = nf4_gemm(1, 8, 192, Nf4Accumulation::F64, KernelSchedule::Fast, {}, ScalarType::F32, Nf4CodeBook::BnbFp4);
  CHECK(run(nf4, in) != run(fp4, in));
}
