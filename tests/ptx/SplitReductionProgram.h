// A split reduction across workgroups through scratch memory, atomics and fences:
// the pattern split-K kernels use when one output's sum is spread over several CTAs.
// Header-only so that the pass, interpreter and emulator tests run the same program.
#pragma once

#include "ir/Builder.h"

namespace quantc::testing {

inline constexpr std::uint32_t kSplitOutputs = 3;  // outputs (grid y)
inline constexpr std::uint32_t kSplits = 4;        // workgroups per output (grid x)
inline constexpr std::uint32_t kSplitThreads = 64; // invocations per workgroup (2 subgroups)
inline constexpr std::uint32_t kSplitChunk = 5;    // x elements per invocation

/// out[o] = sum of x[o*L .. o*L + L) with L = kSplits * kSplitThreads * kSplitChunk.
/// Workgroup (s, o) sums its quarter of row o (per invocation in order, subgroup
/// butterfly, the two subgroups in order through a workgroup array), stores the partial
/// to scratch `partials[o*kSplits + s]`, fences, and takes a ticket from
/// `arrivals[o]` (atomic add). The workgroup that draws the last ticket fences again,
/// adds the row's partials in split order (so the result does not depend on which
/// workgroup finishes last), stores out[o], and zeroes the row's partials and its
/// counter: the scratch is all zeros again when the launch ends.
inline ir::Program split_reduction_program() {
  using namespace quantc::ir;
  ProgramBuilder program("split_reduction");
  constexpr std::uint32_t kRow = kSplits * kSplitThreads * kSplitChunk;
  BufferRef x = program.input("x", ScalarType::F32, kSplitOutputs * kRow);
  BufferRef out = program.output("out", ScalarType::F32, kSplitOutputs, BufferAccess::WriteOnly);
  BufferRef partials = program.scratch("partials", ScalarType::F32, kSplitOutputs * kSplits);
  BufferRef arrivals = program.scratch("arrivals", ScalarType::U32, kSplitOutputs);
  BufferRef subgroup_sums = program.shared("subgroup_sums", ScalarType::F32, 2);
  BufferRef ticket = program.shared("ticket", ScalarType::U32, 1);
  program.launch({kSplitThreads, 1, 1}, {kSplits, kSplitOutputs, 1});
  program.body([&](Body& body) {
    Expr lane = body.let("lane", local_id(0));
    Expr split = body.let("split", workgroup_id(0));
    Expr row = body.let("row", workgroup_id(1));
    Expr first = body.let("first", row * kRow + split * (kSplitThreads * kSplitChunk) + lane * kSplitChunk);
    Expr sum = body.let("sum", f32(0.0f));
    body.loop("e", u32(0), u32(kSplitChunk), [&](Body& loop, Expr e) { loop.assign(sum, sum + x[first + e]); });
    Expr reduced = body.let("reduced", subgroup_add(sum));
    body.if_then(eq(lane % 32u, u32(0)), [&](Body& leader) { leader.store(subgroup_sums, lane / 32u, reduced); });
    body.barrier();
    body.if_then(eq(lane, u32(0)), [&](Body& leader) {
      leader.store(partials, row * kSplits + split, subgroup_sums[u32(0)] + subgroup_sums[u32(1)]);
      leader.fence();
      Expr drawn = leader.atomic_add("drawn", arrivals, row, u32(1));
      leader.store(ticket, u32(0), drawn);
    });
    body.barrier();
    body.if_then(logical_and(eq(ticket[u32(0)], u32(kSplits - 1)), eq(lane, u32(0))), [&](Body& last) {
      last.fence();
      Expr total = last.let("total", f32(0.0f));
      last.loop("s", u32(0), u32(kSplits), [&](Body& loop, Expr s) {
        loop.assign(total, total + partials[row * kSplits + s]);
        loop.store(partials, row * kSplits + s, f32(0.0f));
      });
      last.store(out, row, total);
      last.store(arrivals, row, u32(0));
    });
  });
  return program.build();
}

}  // namespace quantc::testing
