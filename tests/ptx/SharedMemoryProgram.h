// A program using workgroup arrays (Program::shared) end to end; header-only so that
// the interpreter, pass, emitter and emulator tests all run the same program.
#pragma once

#include "ir/Builder.h"

namespace quantc::testing {

/// Workgroup arrays (Program::shared) end to end: 2 workgroups of 128 invocations (4
/// subgroups) write f32, u32x4, u8, f64 and f16x2 arrays (vector and scalar accesses,
/// constant and computed indices), pass a barrier, read what other subgroups wrote,
/// then overwrite an array and read the same index again after a second barrier (a
/// load CSE must not merge across the barrier and the store). Inputs: x f32[256],
/// w u32[1024]; outputs: sums f32[256], words u32[1024], bytes u32[256], wide f64[256],
/// halves f16[512], again f32[256].
inline ir::Program shared_memory_program() {
  using namespace quantc::ir;
  ir::ProgramBuilder program("shared_memory");
  constexpr std::uint32_t kThreads = 128, kGroups = 2, kTotal = kThreads * kGroups;
  BufferRef x = program.input("x", ir::ScalarType::F32, kTotal);
  BufferRef w = program.input("w", ir::ScalarType::U32, kTotal * 4);
  BufferRef sums = program.output("sums", ir::ScalarType::F32, kTotal);
  BufferRef words_out = program.output("words", ir::ScalarType::U32, kTotal * 4);
  BufferRef bytes_out = program.output("bytes", ir::ScalarType::U32, kTotal);
  BufferRef wide_out = program.output("wide", ir::ScalarType::F64, kTotal);
  BufferRef halves_out = program.output("halves", ir::ScalarType::F16, kTotal * 2);
  BufferRef again_out = program.output("again", ir::ScalarType::F32, kTotal);
  BufferRef partial = program.shared("partial", ir::ScalarType::F32, kThreads);
  BufferRef words = program.shared("tile", ir::ScalarType::U32, kThreads * 4);
  BufferRef bytes = program.shared("octets", ir::ScalarType::U8, kThreads + 2);
  BufferRef wide = program.shared("wide_tile", ir::ScalarType::F64, kThreads);
  BufferRef halves = program.shared("half_tile", ir::ScalarType::F16, kThreads * 2);
  program.launch({kThreads, 1, 1}, {kGroups, 1, 1});
  program.body([&](Body& body) {
    Expr i = body.let("i", local_id(0));
    Expr g = body.let("g", invocation_id(0));
    Expr value = body.let("value", x[g]);
    body.store(partial, i, value);
    body.store(words, i * 4u, w.load(g * 4u, 4), 16);
    body.store(bytes, i, cast(ir::ScalarType::U8, g * 7u + 3u));
    body.store(wide, i, cast(ir::ScalarType::F64, value) * literal(ir::ScalarType::F64, 1.0 / 3.0));
    body.store(halves, i * 2u, cast(Type(ir::ScalarType::F16, 2), make_vector({value, -value})), 4);
    body.if_then(eq(i, u32(0)), [&](Body& then) {
      then.store(bytes, u32(kThreads), literal(ir::ScalarType::U8, 200));  // constant indices
      then.store(bytes, u32(kThreads + 1), cast(ir::ScalarType::U8, workgroup_id(0) + 1u));
    });
    body.barrier();
    Expr mirror = body.let("mirror", u32(kThreads - 1) - i);
    Expr before = body.let("before", partial[mirror]);
    body.store(sums, g, before + partial[(i + 1u) & u32(kThreads - 1)] + partial[u32(5)]);
    body.store(words_out, g * 4u, words.load(((i + 32u) & u32(kThreads - 1)) * 4u, 4, 16), 16);
    body.store(bytes_out, g,
               cast(ir::ScalarType::U32, bytes[mirror]) * 1000u + cast(ir::ScalarType::U32, bytes[u32(kThreads)]) +
                   cast(ir::ScalarType::U32, bytes[u32(kThreads + 1)]) * 100000u);
    body.store(wide_out, g, wide[(i + 64u) & u32(kThreads - 1)]);
    body.store(halves_out, g * 2u, halves.load(mirror * 2u, 2, 4), 4);
    // Everyone has read `partial`; overwrite it and read the same index again.
    body.barrier();
    body.store(partial, i, value * 2.0f + 1.0f);
    body.barrier();
    Expr after = body.let("after", partial[mirror]);
    body.store(again_out, g, after - before);
  });
  return program.build();
}


}  // namespace quantc::testing
