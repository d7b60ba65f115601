// The reference interpreter: executes a Program on host buffers with GPU SIMT
// semantics. The oracle every test compares against.
#pragma once

#include "ir/Program.h"
#include "runtime/Buffers.h"

namespace quantc::runtime::reference {

/// Runs every workgroup of `program` over `buffers` (which must match the program's
/// declarations, see check_buffers) and writes its stores into them. Throws
/// RuntimeError for out-of-bounds accesses (naming buffer, index and count), subgroup
/// operations with inactive lanes (naming the op and the lanes), division by zero and
/// barriers reached by part of a workgroup.
void run(const ir::Program& program, BufferSet& buffers);

}  // namespace quantc::runtime::reference
