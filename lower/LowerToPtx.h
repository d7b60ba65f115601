// IR -> PTX text, by hand (no LLVM, no nvcc). See issue #2 section 5 for the contract.
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
