// IR -> PTX text, by hand (no LLVM, no nvcc). The contract is the IR semantics at the top
// of ir/IR.h, emitted exactly: tests/emulator runs the PTX against the reference
// interpreter and requires the same bits.
#pragma once

#include <string>

#include "ir/Program.h"
#include "ptx/Target.h"

namespace quantc::lower {

/// PTX text for one `.visible .entry` named after the program, one `.param .u64` per
/// buffer in binding order, `.maxntid` from the workgroup size. The program must pass
/// the verifier. Deterministic: the same program and target give the same bytes.
/// Throws ir::IRError for IR the emitter cannot lower (naming the construct).
std::string lower_to_ptx(const ir::Program& program, const ptx::Target& target);

}  // namespace quantc::lower
