// Structural and type checks on a whole Program. Run by ProgramBuilder::build, by the
// pass manager after every pass with --verify-each, and before lowering.
#pragma once

#include <string>
#include <vector>

#include "ir/Program.h"

namespace quantc::ir {

/// Every problem found, one message each (empty when the program is well formed):
/// - buffers: empty or duplicate names, bindings not 0..n-1 in declaration order,
///   zero element counts, sub-byte element types, byte sizes over 2^32 elements' worth,
///   output byte ranges outside the buffer;
/// - workgroup arrays (Program::shared): empty names, names that another buffer or
///   array already uses, zero counts, bool or sub-byte elements, more than
///   kMaxStaticSharedBytes (48 KiB, each array rounded up to 16 bytes) in all; loads and
///   stores to them are checked like a buffer's (element type, provable alignment), but
///   a reinterpreting load or len() of one is refused;
/// - launch: zero workgroup sizes or counts, more than 1024 invocations per workgroup;
/// - statements: use of an undeclared variable or buffer, a Var whose type differs
///   from its binding, re-declaring a name already in scope, assigning a loop variable
///   or with a different type, loads whose type differs from the buffer's element,
///   stores of the wrong type or to read-only buffers, an entry that is not a Block;
/// - vector loads and stores whose byte address analysis::ValueRange cannot prove a
///   multiple of their stated alignment (naming the buffer, the index, the alignment and
///   how to fix it; malformed vectors, lanes and alignments are refused earlier, when
///   the node is made);
/// - subgroup operations under control flow that analysis::Uniformity cannot prove
///   subgroup-uniform (naming the operation and the branch or loop that diverges);
///   checked only when the statements are otherwise well formed.
/// Nesting deeper than kMaxNestingDepth needs no check here: no node factory builds it
/// (ir/IR.h), so the verifier's own recursion is bounded by it.
struct VerifyOptions {
  /// Reject subgroup operations under control flow that is not provably uniform. Off
  /// only for tests of the interpreter's dynamic check, which stays as a second line
  /// of defence behind this static one.
  bool subgroup_uniformity = true;
};

std::vector<std::string> verify(const Program& program, const VerifyOptions& options = {});

/// Throws IRError whose message lists every problem `verify` found. Remembers the last
/// program that passed with the default options (per thread; IR nodes are immutable,
/// so the same entry node with the same name, buffers and launch shape is the same
/// program) and does not verify it again: the builder, compile() and the emitter each
/// verify what they are given, and a spec compile hands the same program through all.
void verify_or_throw(const Program& program, const VerifyOptions& options = {});

}  // namespace quantc::ir
