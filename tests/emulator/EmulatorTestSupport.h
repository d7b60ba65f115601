// Helpers for the emulator tests: wrap a PTX snippet into a one-CTA kernel whose
// threads each read a[tid], b[tid], c[tid] (64-bit words) and write one result word.
#pragma once

#include <bit>
#include <cstring>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backends/emulator/Emulator.h"

namespace quantc::runtime::emulator::testing {

/// Runs `body` once per element of `a` (one thread per element, one CTA). Before the
/// body: %rd10/%rd11/%rd14 hold a/b/c[tid] as 64-bit words, %fd10/%fd11/%fd14 the same
/// bits as f64, %r10/%r12/%r14 their low 32 bits and %f10/%f12/%f14 those as f32,
/// %r0 = %tid.x. The body writes its result to %r20 (32-bit result, zero-extended)
/// or, with `wide_result`, to %rd20. Declared scratch registers: %r<40> %rd<40>
/// %f<40> %fd<40> %rs<16> %p<16>.
inline std::string wrap_kernel(const std::string& body, bool wide_result) {
  std::string text = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry snippet(.param .u64 out, .param .u64 in_a, .param .u64 in_b, .param .u64 in_c)
{
  .reg .b32 %r<40>;
  .reg .b64 %rd<40>;
  .reg .f32 %f<40>;
  .reg .f64 %fd<40>;
  .reg .b16 %rs<16>;
  .reg .pred %p<16>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in_a];
  ld.param.u64 %rd3, [in_b];
  ld.param.u64 %rd4, [in_c];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  cvta.to.global.u64 %rd4, %rd4;
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd5, %r0, 8;
  add.s64 %rd6, %rd2, %rd5;
  ld.global.u64 %rd10, [%rd6];
  add.s64 %rd6, %rd3, %rd5;
  ld.global.u64 %rd11, [%rd6];
  add.s64 %rd6, %rd4, %rd5;
  ld.global.u64 %rd14, [%rd6];
  mov.b64 %fd10, %rd10;
  mov.b64 %fd11, %rd11;
  mov.b64 %fd14, %rd14;
  mov.b64 {%r10, %r11}, %rd10;
  mov.b64 {%r12, %r13}, %rd11;
  mov.b64 {%r14, %r15}, %rd14;
  mov.b32 %f10, %r10;
  mov.b32 %f12, %r12;
  mov.b32 %f14, %r14;
  mov.u32 %r20, 0;
  mov.u64 %rd20, 0;
)";
  text += body;
  text += wide_result ? "\n  add.s64 %rd7, %rd1, %rd5;\n  st.global.u64 [%rd7], %rd20;\n  ret;\n}\n"
                      : "\n  cvt.u64.u32 %rd20, %r20;\n  add.s64 %rd7, %rd1, %rd5;\n  st.global.u64 [%rd7], %rd20;\n  ret;\n}\n";
  return text;
}

inline std::vector<std::uint64_t> run_lanes(const std::string& body, std::vector<std::uint64_t> a,
                                            std::vector<std::uint64_t> b = {}, std::vector<std::uint64_t> c = {},
                                            bool wide_result = false) {
  b.resize(a.size());
  c.resize(a.size());
  auto to_bytes = [](const std::vector<std::uint64_t>& words) {
    std::vector<std::uint8_t> bytes(words.size() * 8);
    std::memcpy(bytes.data(), words.data(), bytes.size());
    return bytes;
  };
  std::vector<DeviceBuffer> buffers = {{"out", std::vector<std::uint8_t>(a.size() * 8)},
                                       {"a", to_bytes(a)},
                                       {"b", to_bytes(b)},
                                       {"c", to_bytes(c)}};
  Module module = parse_ptx(wrap_kernel(body, wide_result));
  LaunchConfig config;
  config.block = {static_cast<std::uint32_t>(a.size()), 1, 1};
  launch(module, "snippet", config, buffers,
         {PointerArgument{0, 0}, PointerArgument{1, 0}, PointerArgument{2, 0}, PointerArgument{3, 0}});
  std::vector<std::uint64_t> out(a.size());
  std::memcpy(out.data(), buffers[0].bytes.data(), buffers[0].bytes.size());
  return out;
}

inline std::uint64_t f32(float value) { return std::bit_cast<std::uint32_t>(value); }
inline std::uint64_t f64(double value) { return std::bit_cast<std::uint64_t>(value); }
inline float as_f32(std::uint64_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits)); }
inline double as_f64(std::uint64_t bits) { return std::bit_cast<double>(bits); }

}  // namespace quantc::runtime::emulator::testing
