// The reference interpreter: executes a Program on host buffers with GPU SIMT
// semantics. The oracle every test compares against.
//
// Execution model (ir/IR.h documents the value semantics it follows):
// - Workgroups run in linear order (x fastest), on RunOptions::threads host threads
//   that each take the next workgroup not yet started. Within a workgroup
//   all invocations run in lockstep: every expression is evaluated for all active
//   invocations at once, and If/Loop narrow the active set per invocation (a loop's
//   bounds are evaluated once per invocation on entry; each invocation runs its own
//   trip count). Return removes an invocation for the rest of the kernel.
// - Invocations are numbered by linear local id (x fastest, then y, then z); subgroup
//   s is invocations 32s .. 32s+31.
// - The program is compiled once per run into a tree of lane kernels with every
//   variable resolved to a register, so the hot path does no name lookups and no
//   per-invocation allocation.
#pragma once

#include "ir/Program.h"
#include "ir/Verifier.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/Statistics.h"

namespace quantc::runtime::reference {

struct RunOptions {
  /// When set, receives the run's operation counts (overwritten, also on error).
  RunStatistics* statistics = nullptr;
  /// Host threads that run workgroups concurrently; 0 means one per hardware thread.
  /// Results do not depend on it for well-formed kernels (workgroups run in no defined
  /// order on a GPU, and meet only through atomics and fences, which are real host
  /// atomics and fences here). A kernel whose workgroups write the same element without
  /// them races on a GPU, and then its result here is as undefined as there; keep 1 to
  /// debug such a kernel.
  /// Errors are the same as with 1 thread: the failing workgroup lowest in linear
  /// order (x fastest) is reported, though later workgroups may already have stored.
  unsigned threads = 1;
  /// Static check that subgroup operations sit under uniform control (ir::verify).
  /// Tests of the dynamic inactive-lane check turn it off to reach that check.
  ir::VerifyOptions verify;
};

/// Runs every workgroup of `program` over `buffers` and writes its stores into them.
/// `buffers` must match the program's declarations exactly (see check_buffers: every
/// declared buffer present, same element type, byte size count * element size);
/// buffers are little-endian element arrays indexed in elements.
/// Throws RuntimeError (nothing is rolled back: stores already done stay done) for:
/// - a buffer mismatch (check_buffers' message);
/// - an ill-formed program (ir::verify's problems: undeclared buffers or variables,
///   stores to read-only buffers, type mismatches...) or an expression kind/type the
///   interpreter cannot run; both are raised before anything runs;
/// - an out-of-bounds load or store: the message names the buffer, the index, the
///   count, the expression and the invocation;
/// - a subgroup shuffle, reduction or ballot executed while some lane of its subgroup
///   is inactive (masked off by control flow, returned, or beyond the workgroup size):
///   the message prints the operation and lists the inactive lanes;
/// - integer division or remainder by zero; a Lookup index past the table's end;
/// - a Barrier reached while part of the workgroup is inactive.
void run(const ir::Program& program, BufferSet& buffers, const RunOptions& options = {});

}  // namespace quantc::runtime::reference
