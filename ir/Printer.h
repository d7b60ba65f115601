// The IR's text form. Stable (golden files depend on it) and parseable: the parser in
// lower/ reads exactly what this writes. Grammar sketch:
//
//   program "name" workgroup_size(256, 1, 1) workgroup_count(16, 1, 1)
//                                  [min_resident_workgroups(4)]  (only where requested)
//                                  [reserved_shared_bytes(15360)]  (only where reserved)
//   buffer @0 x: read_only f32[256]
//   buffer @5 out: read_write f32[4096] output_bytes(0, 16384)
//   {
//     let i: u32 = invocation_id.x
//     if (i < 4u32) { ... } else { ... }
//     for k: u32 in 0u32 .. 8u32 { ... }
//     acc = (acc + x[k])            // assign
//     out[i] = acc                  // store
//     let v: u32x4 = w[j].v4        // vector load (.align(8) when under-aligned)
//     let h: f16x2 = bitcast<f16x2>(extract_lane(v, 0))
//     region "vyre-libs::nn::linear_4bit" { ... }
//     barrier
//     return
//   }
//
// Binary operations are always parenthesised; literals carry their type as a suffix
// (`8u32`, `-1i32`, `0.5f32`, `1.5bf16`, `true`); non-finite floats print as `f32(inf)`,
// `f32(-inf)` and `f32(nan 0x7fc00000)` (the NaN keeps its bits).
#pragma once

#include <string>

#include "ir/Program.h"

namespace quantc::ir {

std::string print(const Expr& expr);
/// Statements at the given indentation (two spaces a level), one per line, each line
/// ending in '\n'.
std::string print(const Node& node, int indent = 0);
std::string print(const Program& program);
/// The first line of a statement's text without a trailing " {", e.g. `if (i < 4u32)`,
/// `for k: u32 in 0u32 .. 8u32` or `acc = (acc + x[k])`: a one-line description for
/// comments in emitted code and for error messages. Longer than `max_chars`, it is cut
/// to `max_chars` characters ending in " ..." (and printing stops early, so the cost is
/// bounded even for expressions whose tree form is huge).
std::string print_header(const NodeBase& node, std::size_t max_chars = std::string::npos);
/// The header line and buffer lines of `print(program)`, without the body.
std::string print_signature(const Program& program);

}  // namespace quantc::ir
