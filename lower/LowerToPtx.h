// IR -> PTX text, by hand (no LLVM, no nvcc): legalization for the target
// (lower/Legalize.h), then instruction selection through the instruction table
// (lower/InstructionSelection.h).
#pragma once

#include <string>

#include "ir/Program.h"
#include "ptx/Target.h"

namespace quantc::lower {

/// PTX text for one `.visible .entry` named after the program, one `.param .u64` per
/// buffer in binding order, `.maxntid` from the workgroup size. The program must pass
/// the verifier. Deterministic: the same program and target give the same bytes.
/// Throws ir::IRError for a program that fails verification, std::invalid_argument for
/// an unsupported target, ptx::UnsupportedInstruction when an operation has no form the
/// target can run (legalization makes this an internal error).
std::string lower_to_ptx(const ir::Program& program, const ptx::Target& target);

/// lower_to_ptx for a program known to pass the verifier (compile()'s pipeline output:
/// its input was verified and every pass preserves validity, which the pass tests
/// check with verify_each). Skips the second verification; same errors otherwise.
std::string lower_verified_to_ptx(const ir::Program& program, const ptx::Target& target);

}  // namespace quantc::lower
