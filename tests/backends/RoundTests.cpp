// Unary round (ir/Arithmetic.h): the nearest integral value, ties to even, the sign of a
// zero result kept, NaN -> the canonical NaN; on the reference interpreter and on the
// emulated PTX (cvt.rni.f32.f32 / cvt.rni.f64.f64), computed at run time (-O0) and folded
// from literals (-O2), against a table written from IEEE 754 roundToIntegralTiesToEven.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/ReferenceBackend.h"

using namespace quantc;
using namespace quantc::runtime;

namespace {

/// (input, expected) as f32 bit patterns; the f64 program rounds the same values widened.
const std::vector<std::pair<float, std::uint32_t>> kCases = {
    {0.5f, 0x00000000u},           // tie to even: +0
    {1.5f, 0x40000000u},           // 2
    {2.5f, 0x40000000u},           // 2
    {-0.5f, 0x80000000u},          // -0: the sign of the zero is kept
    {-2.5f, 0xc0000000u},          // -2
    {-0.4f, 0x80000000u},          // -0
    {0.49999997f, 0x00000000u},    // the largest float below 1/2
    {8388609.0f, 0x4b000001u},     // 2^23 + 1 is already integral
    {-3.75f, 0xc0800000u},         // -4
    {1.0e30f, 0x7149f2cau},        // huge values are integral
    {std::bit_cast<float>(0x7f800000u), 0x7f800000u},  // +inf
    {std::bit_cast<float>(0xff800000u), 0xff800000u},  // -inf
    {std::bit_cast<float>(0x7fa00001u), 0x7fffffffu},  // NaN with a payload: canonical
    {std::bit_cast<float>(0x80000000u), 0x80000000u},  // -0
};

std::string program_text() {
  const std::size_t n = kCases.size();
  std::string text = fmt::format(
      "program \"round\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 x: read_only f32[{0}]\nbuffer @1 y: read_write f32[{1}]\nbuffer @2 yd: read_write f64[{1}]\n{{\n"
      "  let i: u32 = invocation_id.x\n"
      "  if (i < {0}u32) {{\n"
      "    y[i] = round(x[i])\n"
      "    yd[i] = round(cast<f64>(x[i]))\n"
      "  }}\n",
      n, 2 * n);
  for (std::size_t i = 0; i < n; ++i) {  // the same values as literals: -O2 folds them
    const ir::Expr literal = ir::Literal::make(ir::ScalarType::F32, std::bit_cast<std::uint32_t>(kCases[i].first));
    text += fmt::format("  y[{}u32] = round({})\n", n + i, ir::print(literal));
  }
  return text + "}\n";
}

}  // namespace

TEST_CASE("round is cvt.rni: ties to even, signed zeros, canonical NaN, on both backends", "[backends][round]") {
  const ir::Program program = ir::parse_program(program_text(), "round.qir");
  reference::ReferenceBackend reference_backend;
  emulator::EmulatorBackend emulator_backend;
  std::vector<float> x;
  for (const auto& c : kCases) x.push_back(c.first);
  const std::size_t n = kCases.size();
  for (const char* level : {"O0", "O2"}) {
    CompileOptions options;
    options.passes.level = std::string(level) == "O0" ? lower::OptimizationLevel::O0 : lower::OptimizationLevel::O2;
    for (int backend = 0; backend < 3; ++backend) {
      BufferSet buffers = allocate_buffers(program);
      buffers["x"] = HostBuffer::from(ir::ScalarType::F32, x);
      std::string name;
      if (backend == 0) {
        name = "reference";
        reference_backend.run(reference_backend.compile(program, options), buffers);
      } else {
        CompileOptions ptx_options = options;
        ptx_options.target = ptx::parse_target(backend == 1 ? "sm_75" : "sm_90");
        name = backend == 1 ? "emulator sm_75" : "emulator sm_90";
        emulator_backend.run(emulator_backend.compile(program, ptx_options), buffers);
      }
      const auto y = buffers.at("y").as<std::uint32_t>();
      const auto yd = buffers.at("yd").as<double>();
      for (std::size_t i = 0; i < n; ++i) {
        INFO(name << " -" << level << " round(" << x[i] << ")");
        CHECK(fmt::format("{:08x}", y[i]) == fmt::format("{:08x}", kCases[i].second));
        CHECK(fmt::format("{:08x}", y[n + i]) == fmt::format("{:08x}", kCases[i].second));
        // f64: the same rounding; every expected f32 value is exact in f64 (NaN: canonical f64).
        const std::uint64_t wide = std::bit_cast<std::uint64_t>(yd[i]);
        const float expected = std::bit_cast<float>(kCases[i].second);
        const std::uint64_t expected_wide =
            expected != expected ? 0x7fffffffffffffffull : std::bit_cast<std::uint64_t>(static_cast<double>(expected));
        CHECK(fmt::format("{:016x}", wide) == fmt::format("{:016x}", expected_wide));
      }
    }
  }
}
