// The optimization passes, one file each (lower/passes/*.cpp), each a plain function
// Program -> Program built on ir::IRMutator. Every pass but contract_fma keeps the
// program's results bit-for-bit identical on the reference interpreter (ir/IR.h
// SEMANTICS); contract_fma defines -O2's rounding, see below. Every pass returns
// the input's `entry` handle unchanged (same_as) when it has nothing to do, so the pass
// manager can tell whether a pass changed the IR. Inputs must pass ir::verify; outputs
// do too.
#pragma once

#include <cstddef>

#include "ir/Program.h"

namespace quantc::lower {

/// Constant folding and algebraic simplification: folds literal operations exactly as
/// the interpreter computes them (floats only when the result is bit-identical: never
/// f16 arithmetic, NaN results, x*0 or x+0 on floats), integer identities (x*1, x+0,
/// x&~0, 0<<x, ...) and equal operands (x-x, x^x -> 0; x&x, min(x,x) -> x; x==x ->
/// true), reassociation of constant chains ((x+1)+2 -> x+3), select/if with constant
/// conditions, select(c, x, x) -> x and select(c, true, false) -> c, unsigned div/rem
/// by powers of two -> shifts/masks, comparisons decided by ir::analysis value ranges,
/// and propagation of constant and copy lets. A rewrite that drops an operand (x*0,
/// a decided comparison, select(c, x, x)) happens only when the operand cannot trap or
/// the ranges prove its loads in bounds and its divisors non-zero. A loop that runs
/// exactly once for every invocation (literal bounds a .. a+1, `a .. a + 1` with a below
/// the type's maximum, or bounds the ranges pin to that) becomes `let v = a` and its
/// body in the enclosing block; body lets whose names a later statement of that block
/// declares again get fresh names.
ir::Program fold_constants(ir::Program program);

/// fold_constants' expression rewriter on one expression, with ranges from
/// `context`'s launch shape and buffers only (no variable facts). For unit tests.
ir::Expr simplify_expr(const ir::Expr& expr, const ir::Program& context);

/// Common-subexpression elimination on pure expressions (no loads from writable
/// buffers or workgroup arrays, no subgroup operations). Within each block, a subexpression evaluated twice
/// or more -- within one statement or across statements (the indices of two loads, the
/// values of two lets), or once at the block's level and again inside a later if/loop
/// body it dominates -- is bound to a `let common` right before the statement that
/// first evaluates it (the largest repeated tree first, so its parts are not bound
/// again); when that first evaluation is a never-assigned `let x = e`, x serves. An
/// expression reading an assigned variable is shared only between evaluations with no
/// assignment to it in between. Nothing is moved above a guard or Return it did not
/// follow, and the right operand of && / || (which may not run) does not count.
ir::Program eliminate_common_subexpressions(ir::Program program);

/// Loop-invariant code motion: moves Lets whose values do not change inside a loop
/// (including loads from read-only buffers) in front of the loop. A value that may fail
/// (a load, a division by a variable) moves only when the range analysis proves it
/// cannot fail, or when it ran unconditionally in every iteration of a loop that
/// provably runs at least once.
ir::Program hoist_loop_invariants(ir::Program program);

/// Dead-code elimination: lets and assignments of variables nobody reads, ifs with two
/// empty bodies, loops with empty bodies or no iterations, statements after a Return.
ir::Program eliminate_dead_code(ir::Program program);

struct UnrollOptions {
  /// Loops with literal bounds running at most this many iterations are unrolled ...
  std::size_t max_trip_count = 8;
  /// ... when the unrolled statements hold at most this many IR nodes (so large bodies,
  /// such as the INT4 chunk loops, stay loops and keep register pressure down).
  std::size_t max_unrolled_nodes = 48;
};
/// Replaces small constant-trip-count loops by copies of their body with the loop
/// variable bound to each literal; copies' lets are renamed `<name>_iteration<i>`.
ir::Program unroll_loops(ir::Program program, const UnrollOptions& options);
ir::Program unroll_loops(ir::Program program);

/// Sidecar hoisting: a loop `for c in 0 .. N` whose read-only loads index a
/// buffer through `(c*S + L) / C` (L provably in [0, S), C a multiple of S and larger)
/// is rewritten into `for group_idx in 0 .. ceil(N/(C/S))` holding the group's loads
/// once, around `for group_chunk in 0 .. C/S` running the original body with
/// c = group_idx*(C/S) + group_chunk and `(c*S + L) / C` replaced by group_idx.
/// Recognises the shape, never an op name. Loads under a guard inside the loop move
/// only when the range analysis proves their hoisted index in bounds.
ir::Program hoist_sidecars(ir::Program program);

/// Floating-point contraction, the one pass that changes results: within an expression,
/// `a*b + c`, `c + a*b`, `a*b - c` and `c - a*b` on f32 or f64 (scalars and vectors)
/// become Fma(a, b, c), Fma(a, b, c), Fma(a, b, -c) and Fma(-a, b, c): the product is no
/// longer rounded before the add, as nvcc does by default (--fmad=true) and clang with
/// -ffp-contract=on. A product bound to a variable is not fused (only Mul operands of
/// the Add/Sub itself), nor are f16/bf16 sums. When both operands are products, the
/// left one is fused. Negation is exact, so the signs of zeros match the unfused
/// expression's wherever the product is exact. Idempotent.
/// -O2 runs it once, before its other passes (PassOptions::fp_contract); every later
/// pass preserves bits, so a -O2 program computes what the interpreter computes on
/// contract_fma(program), on every backend.
ir::Program contract_fma(ir::Program program);

}  // namespace quantc::lower
