// contract_fma against an independent oracle: the contracted program's interpreter
// results are std::fma's bit for bit, and differ from the unfused a*b+c where the
// product's rounding matters (so the pass is not a no-op).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <random>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "lower/PassManager.h"
#include "lower/passes/Passes.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

constexpr std::uint32_t kCount = 4096;

/// out0 = a*b + c, out1 = c - a*b, out2 = a*b - c (f32); wide = a*b + c in f64.
Program sums() {
  ProgramBuilder builder("sums");
  BufferRef a = builder.input("a", ScalarType::F32, kCount);
  BufferRef b = builder.input("b", ScalarType::F32, kCount);
  BufferRef c = builder.input("c", ScalarType::F32, kCount);
  BufferRef out = builder.output("out", ScalarType::F32, 3 * kCount);
  BufferRef wide = builder.output("wide", ScalarType::F64, kCount);
  builder.launch({256, 1, 1}, {kCount / 256, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.store(out, i, a[i] * b[i] + c[i]);
    body.store(out, i + kCount, c[i] - a[i] * b[i]);
    body.store(out, i + 2 * kCount, a[i] * b[i] - c[i]);
    body.store(wide, i, cast(ScalarType::F64, a[i]) * cast(ScalarType::F64, b[i]) + cast(ScalarType::F64, c[i]));
  });
  return builder.build();
}

}  // namespace

TEST_CASE("contract_fma computes std::fma bit for bit and -O2 --fp-contract=off keeps the roundings",
          "[contract_fma]") {
  std::mt19937 engine(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> a(kCount), b(kCount), c(kCount);
  for (std::uint32_t i = 0; i < kCount; ++i) {
    a[i] = unit(engine);
    b[i] = unit(engine);
    c[i] = -a[i] * b[i] * (1.0f + unit(engine) * 1e-3f);  // cancellation: the product's rounding shows
  }
  const Program program = sums();
  auto run = [&](const Program& candidate) {
    runtime::BufferSet buffers = runtime::allocate_buffers(candidate);
    buffers["a"] = runtime::HostBuffer::from(ScalarType::F32, a);
    buffers["b"] = runtime::HostBuffer::from(ScalarType::F32, b);
    buffers["c"] = runtime::HostBuffer::from(ScalarType::F32, c);
    runtime::reference::run(candidate, buffers);
    return std::pair{buffers.at("out").as<float>(), buffers.at("wide").as<double>()};
  };
  lower::PassOptions o2, o2_off;
  o2_off.fp_contract = false;
  const auto [fused, fused_wide] = run(lower::run_passes(program, o2));
  const auto [unfused, unfused_wide] = run(lower::run_passes(program, o2_off));
  std::uint32_t differing = 0;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    INFO("i = " << i << " a = " << a[i] << " b = " << b[i] << " c = " << c[i]);
    REQUIRE(std::bit_cast<std::uint32_t>(fused[i]) == std::bit_cast<std::uint32_t>(std::fma(a[i], b[i], c[i])));
    REQUIRE(std::bit_cast<std::uint32_t>(fused[i + kCount]) ==
            std::bit_cast<std::uint32_t>(std::fma(-a[i], b[i], c[i])));
    REQUIRE(std::bit_cast<std::uint32_t>(fused[i + 2 * kCount]) ==
            std::bit_cast<std::uint32_t>(std::fma(a[i], b[i], -c[i])));
    REQUIRE(fused_wide[i] == std::fma(double(a[i]), double(b[i]), double(c[i])));
    volatile float product = a[i] * b[i];  // rounded, as without contraction
    REQUIRE(std::bit_cast<std::uint32_t>(unfused[i]) == std::bit_cast<std::uint32_t>(float(product + c[i])));
    volatile double wide_product = double(a[i]) * double(b[i]);
    REQUIRE(unfused_wide[i] == wide_product + double(c[i]));
    differing += fused[i] != unfused[i];
  }
  CHECK(differing > kCount / 2);  // with this cancellation nearly every sum sees the product's rounding
}

TEST_CASE("contract_fma fuses nothing at -O0 -O1 or under --fp-contract=off", "[contract_fma]") {
  const Program program = sums();
  lower::PassOptions o0, o1, off;
  o0.level = lower::OptimizationLevel::O0;
  o1.level = lower::OptimizationLevel::O1;
  off.fp_contract = false;
  for (const lower::PassOptions& options : {o0, o1, off}) {
    CHECK(print(lower::run_passes(program, options)).find("fma(") == std::string::npos);
  }
  CHECK(print(lower::run_passes(program, lower::PassOptions{})).find("fma(") != std::string::npos);
  CHECK(lower::prologue(lower::PassOptions{}) == std::vector<std::string>{"contract_fma"});
  CHECK(lower::prologue(off).empty());
}
