// Legalization: the IR -> IR step between the pass pipeline and instruction selection
// (tinygrad keeps its ptx_matcher apart from rendering in the same way).
//
// The result computes exactly what the input computes (ir/IR.h semantics, bit for bit)
// using only operations the instruction selector maps one-to-one onto a PTX form that
// `target` can run. Whether the target has a form is read from the instruction table
// (ptx/InstructionTable.h), the same rows the emitter and emulator use. The rules:
// - Lookup becomes a tree of Selects on the index bits (16 entries: 4 levels, 15 selects).
// - A SubgroupShuffle whose lane the value-range analysis cannot prove below 32 selects
//   the invocation's own value for lanes >= 32 (the IR rule; shfl.sync.idx masks the lane).
// - u8/i8/u16 Add/Sub/Mul/Div/Shl/Neg/Not/Abs are computed in 32 bits and truncated back
//   by a Cast (the operations whose result can leave the narrow type's range; narrow
//   values live zero- or sign-extended in 32-bit registers).
// - bool buffers are read and written as u8 (0/1), since PTX has no 1-bit memory type.
// - A vector Load/Store whose alignment is below its size is split into the widest
//   pieces that alignment allows (PTX .v2/.v4 accesses need natural alignment).
// - Vector arithmetic without a packed PTX instruction is done lane by lane; f16x2 and
//   bf16x2 keep their packed forms where the target has them.
// - f16/bf16 operations the target lacks are widened through f32, exactly: comparisons,
//   min/max (exact operations), and add/sub/mul/div (a binary32 result rounded again to
//   16 bits is correctly rounded: 24 >= 2p + 2, Figueroa 1995). bf16 add/sub/mul on
//   sm_80..89 become fma.rn.bf16 with 1 / -1 / -0 (one rounding, exact). bf16 fma and
//   conversions into bf16 from f64 and integers, before sm_80/sm_90, go through
//   round-to-odd intermediates (Boldo and Melquiond 2008) built from TwoSum in f64.
// - bf16 <-> f32 conversions on targets without cvt.bf16 are bit manipulations: a shift
//   into the high half (NaN payload kept, as cvt.f32.bf16), or the high half rounded to
//   nearest even (NaN canonical, as cvt.rn.bf16.f32).
#pragma once

#include "ir/Program.h"
#include "ptx/Target.h"

namespace quantc::lower {

/// The legalized program for `target`. Expects a verified program; returns one that
/// verifies too (bool buffers retyped u8). Throws ir::IRError only for IR it cannot
/// make legal (none today: every operation has an expansion on every supported target).
ir::Program legalize(ir::Program program, const ptx::Target& target);

}  // namespace quantc::lower
