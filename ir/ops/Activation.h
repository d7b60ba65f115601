// The activation type of the linear and matmul ops: the element type of the activation
// input x (`a` for nf4_gemm), the bias (where the op has one) and the output. Every
// linear/matmul op with float activations takes the spec parameter
// "activation": "f32" | "f16" | "bf16" (default "f32"; part of the canonical spec and so
// of the kernel-cache key). The ops on packed INT4 activations (int4_dot_*,
// int4_batched_matmul_*) do not: their activations are codes.
//
// Semantics, for every op and schedule:
//  - f16 and bf16 inputs widen to f32 exactly (every f16 and bf16 value, subnormals,
//    infinities and -0 included, is an f32; a bf16 NaN keeps its payload, as
//    cvt.f32.bf16 does);
//  - the op then computes exactly its f32 program (or f64, where its mode says: nf4_gemm
//    "accumulate": "f64", nf4_gemm_transpose) on the widened values, in the same order;
//  - the result is rounded once to the activation type, to nearest even (ir::Cast, PTX
//    cvt.rn.f16.f32 / cvt.rn.bf16.f32, or directly from the f64 sum with cvt.rn.f16.f64 /
//    cvt.rn.bf16.f64 in the f64 modes). A magnitude at or above the largest finite value
//    plus half an ulp becomes +-inf: 65520 for f16 (largest finite 65504), 2^128 - 2^119
//    for bf16; NaN stays NaN (canonical).
// So an f16 output is exactly round_f16(y) where y is what the f32 program returns for
// the widened inputs (f64 modes: round_f16 of the f64 sum the f32 program rounds to f32).
// With "f32" every program is exactly what it was before the parameter existed.
//
// Accuracy: if the op's f32 result y obeys |y - exact| <= B (each op header states B),
// the rounded output obeys
//   |out - exact| <= B + u_h * |y| + eta_h,   u_h = 2^-11 (f16), 2^-8 (bf16),
//   eta_h = 2^-25 (f16: half its smallest subnormal), 2^-134 (bf16),
// as long as |y| stays below the overflow threshold above, and two schedules whose f32
// results agree within B' agree within B' + u_h * (|out_1| + |out_2|) + 2 * eta_h.
//
// Loads in the fast schedules: the activations stream as u32 words, two halves each, by
// reinterpreting loads of the f16/bf16 buffer (ir::Load): a u32x4 of 8 values where the
// f32 program loads 2 x f32x4 (linear_4bit*, the int4 matvecs, nf4_gemm), a u32x2 of 4
// values where it loads one f32x4 (the dequant GEMV), each issued with the batch's other
// loads. After the batch's loads every value is widened once per lane: f16 by
// cvt.f32.f16 of its half of the word, bf16 by moving its bits into the top half of an
// f32 (shl / and on the integer pipe, no conversion instruction). Outputs are stored as
// f16x2 / bf16x2 pairs (cvt.rn.f16x2.f32 packs two per instruction on sm_80+).
#pragma once

#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The "activation" parameter (choices f32, f16, bf16; default f32).
ParamSpec activation_param();
/// The activation type named "f32", "f16" or "bf16"; OpError naming the value and the
/// allowed ones otherwise.
ScalarType activation_from_name(const std::string& name);
/// The parameter's value in `args` (F32 when absent); OpError as activation_from_name.
ScalarType activation_of(const OpArgs& args);
/// `args` with "activation" set to `activation` (for registry test shapes).
OpArgs activated(OpArgs args, const char* activation);
/// The registry entry of a buffer whose element is the "activation" parameter (x or a,
/// the bias, the output): element f32 (the default) with activation_typed set; `shape`
/// as BufferSpec::shape (empty: 1-D).
BufferSpec activation_buffer(std::string name, std::string role, std::string count_formula,
                             std::vector<std::string> shape = {});

/// An activation-typed value as f32 (or an f16x2/bf16x2 vector as f32x2): the value
/// itself when it is f32 already, else the exact widening Cast.
Expr widen(const Expr& value);
/// An f32 or f64 value (or an f32x2 vector) rounded once to `activation` (Cast,
/// round to nearest even); the value itself when it already has that type.
Expr narrow(ScalarType activation, const Expr& value);

/// Consecutive f16/bf16 activations loaded as u32 words (two per word, the lower
/// element in the low half), to be widened after the rest of a batch's loads.
struct HalfWords {
  ScalarType activation = ScalarType::F16;
  std::vector<Expr> words;  // u32 lets
  /// Element `i` (0 .. 2 * words.size() - 1) as f32, exactly: f16 by Cast of its half,
  /// bf16 by placing its 16 bits in the top half of an f32 (equal to the Cast).
  Expr element(unsigned i) const;
};

/// Loads `count` (2, 4 or 8) consecutive elements of the f16/bf16 buffer `x` from
/// element `index` with one reinterpreting load of count/2 u32 words (ir::Load; `index`
/// must be provably a multiple of `count`), bound to a let `name`, and returns its words.
HalfWords load_half_words(Body& body, const BufferRef& x, const Expr& index, unsigned count, const std::string& name);

/// Stores `values` (f32, an even count) to consecutive elements of the f16/bf16 buffer
/// `out` from element `index` (a multiple of 2): rounded once to the buffer's type,
/// two per store as f16x2 / bf16x2.
void store_half_pairs(Body& body, const BufferRef& out, const Expr& index, const std::vector<Expr>& values);

}  // namespace quantc::ir::ops
