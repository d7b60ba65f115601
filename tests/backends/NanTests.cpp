// NaN bits: every operation that makes a fresh NaN gives the format's canonical NaN (sign
// clear, every exponent and fraction bit set: 0x7fff, 0x7fffffff, 0x7fffffffffffffff, the
// bits PTX arithmetic produces), on the reference interpreter and on the emulated PTX
// alike, at -O0 (computed at run time) and -O2 (folded where the operands are literals),
// for every target; Neg and Abs change the sign bit only, and bf16 -> f32 keeps a NaN's
// payload (cvt.f32.bf16 is a shift).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/Parser.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/ReferenceBackend.h"

using namespace quantc;
using namespace quantc::runtime;

namespace {

constexpr std::uint32_t kF32Nan = 0x7fffffffu;
constexpr std::uint64_t kF64Nan = 0x7fffffffffffffffull;
constexpr std::uint16_t kF16Nan = 0x7fffu;
constexpr std::uint16_t kBF16Nan = 0x7fffu;

// Inputs, the same values in each format: 0, inf, -inf, 1, a quiet NaN with a payload,
// x86's default NaN (sign set), -1, 2.
const std::vector<std::uint32_t> kF32In = {0, 0x7f800000u, 0xff800000u, 0x3f800000u, 0x7fa00001u, 0xffc00000u,
                                           0xbf800000u, 0x40000000u};
const std::vector<std::uint64_t> kF64In = {0,
                                           0x7ff0000000000000ull,
                                           0xfff0000000000000ull,
                                           0x3ff0000000000000ull,
                                           0x7ff4000000000001ull,
                                           0xfff8000000000000ull,
                                           0xbff0000000000000ull,
                                           0x4000000000000000ull};
const std::vector<std::uint16_t> kF16In = {0, 0x7c00, 0xfc00, 0x3c00, 0x7d01, 0xfe00, 0xbc00, 0x4000};
/// Where the literal-operand version of arithmetic case `slot` is stored: slot + this.
constexpr int kLiteralSlots = 32;
/// Where the conversion, vector and subgroup results start.
constexpr int kOtherSlots = 64;

const std::vector<std::uint16_t> kBF16In = {0, 0x7f80, 0xff80, 0x3f80, 0x7fa1, 0xffc0, 0xbf80, 0x4000};

/// Each line `OUT[slot] = EXPR` with X standing for the input buffer of OUT's format.
struct Case {
  int slot;
  std::string expr;
  std::uint64_t f32, f64, f16, bf16;  // expected bits per format
};

// x: 0 inf -inf 1 nan(payload) -nan 1 2 at indices 0..7.
std::vector<Case> arithmetic_cases() {
  const std::uint64_t n32 = kF32Nan, n64 = kF64Nan, n16 = kF16Nan, nb = kBF16Nan;
  return {
      {0, "(X[0u32] / X[0u32])", n32, n64, n16, nb},                 // 0 / 0
      {1, "(X[1u32] - X[1u32])", n32, n64, n16, nb},                 // inf - inf
      {2, "(X[1u32] + X[2u32])", n32, n64, n16, nb},                 // inf + -inf
      {3, "(X[0u32] * X[1u32])", n32, n64, n16, nb},                 // 0 * inf
      {4, "fma(X[0u32], X[1u32], X[3u32])", n32, n64, n16, nb},      // 0 * inf + 1
      {5, "fma(X[1u32], X[3u32], X[2u32])", n32, n64, n16, nb},      // inf * 1 - inf
      {6, "min(X[4u32], X[5u32])", n32, n64, n16, nb},               // two NaNs
      {7, "max(X[4u32], X[5u32])", n32, n64, n16, nb},
      {8, "min(X[4u32], X[3u32])", 0x3f800000u, 0x3ff0000000000000ull, 0x3c00, 0x3f80},  // one NaN: the number
      {9, "(X[4u32] + X[3u32])", n32, n64, n16, nb},                 // a NaN operand: canonical, payload dropped
      {10, "(X[5u32] * X[7u32])", n32, n64, n16, nb},
      {11, "(X[1u32] / X[2u32])", n32, n64, n16, nb},                // inf / -inf
      {12, "(X[4u32] - X[4u32])", n32, n64, n16, nb},
      {13, "neg(X[4u32])", 0xffa00001u, 0xfff4000000000001ull, 0xfd01, 0xffa1},  // sign bit only
      {14, "abs(X[5u32])", 0x7fc00000u, 0x7ff8000000000000ull, 0x7e00, 0x7fc0},
      {15, "fma(X[4u32], X[3u32], X[0u32])", n32, n64, n16, nb},
      // Identities that hold for numbers but not for NaN bits: the simplifier must keep
      // them (x * 1 is the canonical NaN, not x's payload).
      {16, "(X[4u32] * X[3u32])", n32, n64, n16, nb},
      {17, "(X[4u32] + X[0u32])", n32, n64, n16, nb},
      {18, "(X[4u32] / X[3u32])", n32, n64, n16, nb},
      {19, "(X[4u32] - X[0u32])", n32, n64, n16, nb},
      {20, "min(X[4u32], X[4u32])", n32, n64, n16, nb},
      {21, "max(X[5u32], X[5u32])", n32, n64, n16, nb},
  };
}

/// The input value at `index` as a literal of the format with suffix `type`.
std::string literal(const std::string& type, int index) {
  static const char* kF32[] = {"0.0f32", "f32(inf)", "f32(-inf)", "1.0f32", "f32(nan 0x7fa00001)",
                               "f32(nan 0xffc00000)", "-1.0f32", "2.0f32"};
  static const char* kF64[] = {"0.0f64", "f64(inf)", "f64(-inf)", "1.0f64", "f64(nan 0x7ff4000000000001)",
                               "f64(nan 0xfff8000000000000)", "-1.0f64", "2.0f64"};
  static const char* kF16[] = {"0.0f16", "f16(inf)", "f16(-inf)", "1.0f16", "f16(nan 0x7d01)",
                               "f16(nan 0xfe00)", "-1.0f16", "2.0f16"};
  static const char* kBF16[] = {"0.0bf16", "bf16(inf)", "bf16(-inf)", "1.0bf16", "bf16(nan 0x7fa1)",
                                "bf16(nan 0xffc0)", "-1.0bf16", "2.0bf16"};
  if (type == "f32") return kF32[index];
  if (type == "f64") return kF64[index];
  if (type == "f16") return kF16[index];
  return kBF16[index];
}

/// `expr` with X[i] replaced by `input`[i], or by the literal of input i when `input` is
/// a type name (constant folding then computes it at compile time).
std::string instantiate(std::string expr, const std::string& input, bool literals) {
  for (std::size_t at = expr.find("X["); at != std::string::npos; at = expr.find("X[")) {
    const std::size_t close = expr.find("u32]", at);
    const int index = std::stoi(expr.substr(at + 2, close - at - 2));
    expr.replace(at, close + 4 - at, literals ? literal(input, index) : fmt::format("{}[{}u32]", input, index));
  }
  return expr;
}

std::string program_text() {
  std::string text =
      "program \"nan\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 a: read_only f32[8]\nbuffer @1 d: read_only f64[8]\n"
      "buffer @2 h: read_only f16[8]\nbuffer @3 b: read_only bf16[8]\n"
      "buffer @4 of: read_write f32[80]\nbuffer @5 od: read_write f64[80]\n"
      "buffer @6 oh: read_write f16[80]\nbuffer @7 ob: read_write bf16[80]\n{\n";
  const std::vector<std::array<std::string, 3>> formats = {
      {"of", "a", "f32"}, {"od", "d", "f64"}, {"oh", "h", "f16"}, {"ob", "b", "bf16"}};
  for (const Case& c : arithmetic_cases()) {
    for (const auto& [out, in, type] : formats) {
      text += fmt::format("  {}[{}u32] = {}\n", out, c.slot, instantiate(c.expr, in, false));
      // The same operation on literals, which -O2 folds at compile time.
      text += fmt::format("  {}[{}u32] = {}\n", out, c.slot + kLiteralSlots, instantiate(c.expr, type, true));
    }
  }
  auto slot = [](int offset) { return fmt::format("{}u32", kOtherSlots + offset); };
  // Conversions of NaNs.
  text += fmt::format("  of[{}] = cast<f32>(d[4u32])\n  of[{}] = cast<f32>(h[4u32])\n", slot(1), slot(2));
  text += fmt::format("  of[{}] = cast<f32>(b[4u32])\n  of[{}] = cast<f32>(b[5u32])\n", slot(3), slot(4));
  text += fmt::format("  od[{}] = cast<f64>(a[4u32])\n  od[{}] = cast<f64>(h[5u32])\n", slot(1), slot(2));
  text += fmt::format("  oh[{}] = cast<f16>(a[4u32])\n  oh[{}] = cast<f16>(d[5u32])\n", slot(1), slot(2));
  text += fmt::format("  ob[{}] = cast<bf16>(a[4u32])\n  ob[{}] = cast<bf16>(d[4u32])\n", slot(1), slot(2));
  text += fmt::format("  of[{}] = cast<f32>(f64(nan 0x7ff4000000000001))\n", slot(5));
  text += fmt::format("  oh[{}] = cast<f16>(f32(nan 0xffc00000))\n", slot(5));
  // Vectors and packed pairs, lane by lane.
  text += fmt::format("  of[{}].v4 = (a[0u32].v4 / a[0u32].v4)\n", slot(8));
  text += fmt::format("  oh[{}].v2 = (h[0u32].v2 * h[2u32].v2)\n", slot(8));
  text += fmt::format("  ob[{}].v2 = (b[0u32].v2 * b[2u32].v2)\n", slot(8));
  text += fmt::format("  ob[{}].v2 = fma(b[0u32].v2, b[2u32].v2, b[0u32].v2)\n", slot(10));
  // Subgroup reductions of a NaN.
  text += fmt::format("  of[{}] = subgroup_add(a[4u32])\n  of[{}] = subgroup_max((a[0u32] / a[0u32]))\n", slot(6),
                      slot(7));
  return text + "}\n";
}

/// The expected bits of every written slot, per output buffer.
struct Expected {
  std::vector<std::pair<int, std::uint32_t>> f32;
  std::vector<std::pair<int, std::uint64_t>> f64;
  std::vector<std::pair<int, std::uint16_t>> f16, bf16;
};

Expected expected_bits() {
  Expected e;
  for (const Case& c : arithmetic_cases()) {
    for (int slot : {c.slot, c.slot + kLiteralSlots}) {
      e.f32.emplace_back(slot, static_cast<std::uint32_t>(c.f32));
      e.f64.emplace_back(slot, c.f64);
      e.f16.emplace_back(slot, static_cast<std::uint16_t>(c.f16));
      e.bf16.emplace_back(slot, static_cast<std::uint16_t>(c.bf16));
    }
  }
  const int o = kOtherSlots;
  e.f32.insert(e.f32.end(), {{o + 1, kF32Nan}, {o + 2, kF32Nan}, {o + 3, 0x7fa10000u}, {o + 4, 0xffc00000u},
                             {o + 5, kF32Nan}, {o + 6, kF32Nan}, {o + 7, kF32Nan}, {o + 8, kF32Nan},
                             {o + 9, kF32Nan}, {o + 10, kF32Nan}, {o + 11, 0x3f800000u}});
  e.f64.insert(e.f64.end(), {{o + 1, kF64Nan}, {o + 2, kF64Nan}});
  e.f16.insert(e.f16.end(), {{o + 1, kF16Nan}, {o + 2, kF16Nan}, {o + 5, kF16Nan}, {o + 8, kF16Nan}, {o + 9, 0x7c00}});
  e.bf16.insert(e.bf16.end(), {{o + 1, kBF16Nan}, {o + 2, kBF16Nan}, {o + 8, kBF16Nan}, {o + 9, 0x7f80},
                               {o + 10, kBF16Nan}, {o + 11, 0x7f80}});
  return e;
}

BufferSet inputs(const ir::Program& program) {
  BufferSet buffers = allocate_buffers(program);
  buffers["a"] = HostBuffer::from(ir::ScalarType::F32, kF32In);
  buffers["d"] = HostBuffer::from(ir::ScalarType::F64, kF64In);
  buffers["h"] = HostBuffer::from(ir::ScalarType::F16, kF16In);
  buffers["b"] = HostBuffer::from(ir::ScalarType::BF16, kBF16In);
  return buffers;
}

template <class T>
std::string hex_slots(const std::vector<T>& values, const std::vector<std::pair<int, T>>& slots) {
  std::string text;
  for (const auto& [slot, expected] : slots) {
    text += fmt::format("[{}] 0x{:0{}x}{} ", slot, values.at(slot), sizeof(T) * 2,
                        values.at(slot) == expected ? "" : fmt::format(" (expected 0x{:x})", expected));
  }
  return text;
}

template <class T>
bool all_match(const std::vector<T>& values, const std::vector<std::pair<int, T>>& slots) {
  for (const auto& [slot, expected] : slots) {
    if (values.at(slot) != expected) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("every fresh NaN is the canonical NaN on the reference and on emulated PTX", "[backends][nan]") {
  const ir::Program program = ir::parse_program(program_text(), "nan.qir");
  const Expected expected = expected_bits();
  reference::ReferenceBackend reference_backend;
  emulator::EmulatorBackend emulator_backend;

  for (const char* level : {"O0", "O2"}) {
    CompileOptions options;
    options.passes.level = std::string(level) == "O0" ? lower::OptimizationLevel::O0 : lower::OptimizationLevel::O2;
    std::vector<std::pair<std::string, BufferSet>> results;
    {
      BufferSet buffers = inputs(program);
      reference_backend.run(reference_backend.compile(program, options), buffers);
      results.emplace_back(fmt::format("reference -{}", level), std::move(buffers));
    }
    for (const char* target : {"sm_75", "sm_80", "sm_90"}) {
      CompileOptions ptx_options = options;
      ptx_options.target = ptx::parse_target(target);
      BufferSet buffers = inputs(program);
      emulator_backend.run(emulator_backend.compile(program, ptx_options), buffers);
      results.emplace_back(fmt::format("emulator {} -{}", target, level), std::move(buffers));
    }
    for (const auto& [name, buffers] : results) {
      const auto f32 = buffers.at("of").as<std::uint32_t>();
      const auto f64 = buffers.at("od").as<std::uint64_t>();
      const auto f16 = buffers.at("oh").as<std::uint16_t>();
      const auto bf16 = buffers.at("ob").as<std::uint16_t>();
      INFO(name);
      INFO("f32:  " << hex_slots(f32, expected.f32));
      INFO("f64:  " << hex_slots(f64, expected.f64));
      INFO("f16:  " << hex_slots(f16, expected.f16));
      INFO("bf16: " << hex_slots(bf16, expected.bf16));
      CHECK(all_match(f32, expected.f32));
      CHECK(all_match(f64, expected.f64));
      CHECK(all_match(f16, expected.f16));
      CHECK(all_match(bf16, expected.bf16));
      // And the backends agree on every byte, unwritten slots included.
      for (const char* out : {"of", "od", "oh", "ob"}) {
        INFO(out);
        CHECK(buffers.at(out).bytes == results.front().second.at(out).bytes);
      }
    }
  }
}
