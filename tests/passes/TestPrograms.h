// Hand-built programs shared by the pass tests.
#pragma once

#include <algorithm>

#include <limits>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "lower/PassManager.h"

namespace quantc::testing {

/// A program touching every expression and statement kind the printer knows.
inline ir::Program every_construct_program() {
  using namespace ir;
  ProgramBuilder program("every_construct");
  BufferRef x = program.input("x", ScalarType::F32, 64);
  BufferRef h = program.input("h", ScalarType::F16, 64);
  BufferRef bytes = program.input("bytes", ScalarType::U8, 64);
  BufferRef out = program.output("out", ScalarType::F32, 64);
  BufferRef words = program.output("words", ScalarType::U32, 64, BufferAccess::WriteOnly);
  program.set_output_byte_range("out", ByteRange{0, 128});
  program.launch({64, 1, 1}, {1, 1, 1});
  program.body([&](Body& body) {
    body.region("test::every_construct", [&](Body& region) {
      Expr i = region.let("i", invocation_id(0));
      Expr lane = region.let("lane", subgroup_local_id() + subgroup_size() * 0u + local_id(0) * 0u + workgroup_id(0));
      Expr value = region.let("value", x[i]);
      Expr acc = region.let("acc", f32(0.0f));
      region.loop("k", u32(0), u32(4), [&](Body& loop, Expr k) {
        loop.assign(acc, fma(acc, value, cast(ScalarType::F32, k)));
      });
      region.if_then_else(
          logical_and(i < 32u, ne(lane, u32(3))),
          [&](Body& then) {
            then.store(out, i, select(value < 0.0f, -value, abs(value)) + Literal::f32(std::numeric_limits<float>::infinity()) * 0.0f);
          },
          [&](Body& otherwise) {
            otherwise.store(out, i, min(max(acc, f32(-0.0f)), Literal::make(ScalarType::F32, 0x7fc00001u)));
          });
      region.store(words, i,
                   Lookup::make(ScalarType::U32, {1, 2, 3, 0xffffffffu}, i & 3u) ^ subgroup_ballot(value > 0.5f) |
                       cast(ScalarType::U32, bytes[i]) << 1u);
      region.store(words, i, cast(ScalarType::U32, subgroup_add(value) + cast(ScalarType::F32, h[i])) +
                                 cast(ScalarType::U32, subgroup_max(cast(ScalarType::I32, value) - i32(-7))) +
                                 subgroup_shuffle(i, u32(0)) + cast(ScalarType::U32, f64(1e300) > f64(-2.5)) +
                                 cast(ScalarType::U32, Literal::u64(~0ull) % Literal::u64(7)) +
                                 cast(ScalarType::U32, literal(ScalarType::I64, -9.0)) + BufferLength::make("x") +
                                 cast(ScalarType::U32, !(i >= 5u)) + cast(ScalarType::U32, literal(ScalarType::F16, 1.5)));
      // Vectors: aligned and under-aligned loads/stores, packed halves, lanes, bitcasts, bytes.
      Expr at = region.let("at", (i & 15u) * 4u);
      Expr quad = region.let("quad", x.load(at, 4));
      Expr pair = region.let("pair", h.load(at, 2, 2));
      Expr halves = region.let("halves", fma(pair, pair, make_vector({literal(ScalarType::F16, 1.0), extract_lane(pair, 0)})));
      Expr brains = region.let("brains", cast(Type(ScalarType::BF16, 2), make_vector({extract_lane(quad, 0), f32(-0.0f)})));
      region.store(out, at, insert_lane(quad + quad, 3, cast(ScalarType::F32, extract_lane(brains, 1))));
      region.store(words, at, make_vector({bitcast(ScalarType::U32, halves), permute(i, i + 1u, u32(0x3210))}), 4);
      region.store(words, at + 2u, bitcast(Type(ScalarType::U32, 2), bitcast(ScalarType::U64, make_vector({i, i}))));
      region.store(out, at, cast(ScalarType::F32, literal(ScalarType::BF16, 0.15625)) + abs(-extract_lane(quad, 2)));
      region.barrier();
      region.if_then(eq(i, u32(63)), [&](Body& then) { then.return_(); });
    });
  });
  return program.build();
}

/// The passes that claim to be idempotent (PassInfo::idempotent: the pass manager then
/// skips them on their own output) whose second run on `program`, or on the output of
/// any single registered pass or pipeline, changes the IR again: empty when the claim
/// holds there.
/// Whether `options` runs contract_fma (the one pass that changes rounding): then the
/// bit-exact reference for the optimized program is the interpreter on
/// lower::contract_fma(original), since every other pass preserves bits.
inline bool contracts(const lower::PassOptions& options) {
  return !lower::prologue(options).empty() ||
         std::find(options.passes.begin(), options.passes.end(), "contract_fma") != options.passes.end();
}

inline std::vector<std::string> idempotence_failures(const ir::Program& program) {
  std::vector<ir::Program> inputs{program};
  for (const lower::PassInfo& pass : lower::registered_passes()) inputs.push_back(pass.run(program));
  for (auto level : {lower::OptimizationLevel::O1, lower::OptimizationLevel::O2}) {
    lower::PassOptions options;
    options.level = level;
    inputs.push_back(lower::run_passes(program, options));
  }
  std::vector<std::string> failures;
  for (const lower::PassInfo& pass : lower::registered_passes()) {
    if (!pass.idempotent) continue;
    for (const ir::Program& input : inputs) {
      ir::Program once = pass.run(input);
      if (!pass.run(once).entry.same_as(once.entry)) {
        failures.push_back(pass.name);
        break;
      }
    }
  }
  return failures;
}

}  // namespace quantc::testing
