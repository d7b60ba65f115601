// Instruction selection: legal IR (lower/Legalize.h) -> PTX text. Every instruction is
// a ptx::Mnemonic rendered through the instruction table (ptx/InstructionTable.h), so
// the module's .version follows the forms used and a form the target cannot run is an
// error, never emitted.
//
// Values and registers (PTX has no 8-bit arithmetic registers and no vector registers):
// - bool: a predicate; u8/i8/u16/u32/i32: one .b32, zero- or sign-extended from the
//   narrow type (legalization keeps them so); u64/i64: .b64; f16/bf16: .b16;
//   f32: .f32; f64: .f64.
// - f16x2/bf16x2: one .b32 holding both halves (lane 0 low), as PTX's packed forms take
//   them; u32xN/i32xN: N .b32 registers; f32xN: N .f32 registers (the {a, b, c, d}
//   operands of .v2/.v4 loads and stores).
// Expressions are evaluated once per statement (a handle used twice, as legalization's
// expansions do, reads the same registers), and byte offsets of buffer accesses are
// reused across statements while the index register is unchanged.
#pragma once

#include <string>

#include "ir/Program.h"
#include "ptx/Target.h"

namespace quantc::lower {

/// PTX text for one `.visible .entry` named after the program, one `.param .u64` per
/// buffer in binding order, `.maxntid` from the workgroup size. `program` must be
/// legal for `target` (lower/Legalize.h). Throws ir::IRError for IR outside that subset
/// (naming the construct) and ptx::UnsupportedInstruction for a form the target lacks.
std::string select_instructions(const ir::Program& program, const ptx::Target& target);

}  // namespace quantc::lower
