// The decoded form of a PTX module: what the parser produces and the executor runs.
//
// Every operand is resolved once at parse time to a register slot: named registers,
// special registers (%tid.x, %laneid, WARP_SZ...) and immediates all live in the
// warp's register file (special registers and immediates are written once when a warp
// starts), so the executor reads every operand the same way, 32 lanes at a time.
// Labels become instruction indices; symbols (.shared/.local variables, kernel
// parameters) become constant addresses in their state space.
//
// Source: PTX ISA 8.x (NVIDIA, "Parallel Thread Execution ISA"), sections 5 (state
// spaces, types), 9.7 (instructions), 10 (special registers).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptx/InstructionTable.h"
#include "runtime/Buffers.h"

namespace quantc::runtime::emulator {

/// Raised for PTX text the emulator cannot decode (syntax error, unsupported
/// instruction, modifier or directive); the message names the source line.
class PtxParseError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

/// Dynamic shared memory (`.extern .shared` arrays) occupies its own window of the
/// .shared state space, so its size need not be known when the PTX is decoded.
inline constexpr std::uint32_t kDynamicSharedBase = 0x80000000u;

// The PTX vocabulary (types, opcodes, modifiers) and the instruction-form table are
// the emitter's too: ptx/Isa.h and ptx/InstructionTable.h.
using ptx::AtomicOp;
using ptx::BoolOp;
using ptx::Compare;
using ptx::MulMode;
using ptx::Opcode;
using ptx::PermuteMode;
using ptx::Rounding;
using ptx::ShuffleMode;
using ptx::StateSpace;
using ptx::TestProperty;
using ptx::ValueType;
using ptx::VoteMode;

/// Special registers (PTX ISA section 10); each gets a register slot per kernel.
enum class SpecialRegister : std::uint8_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ,
  LaneId, WarpId, NwarpId, WarpSize, LanemaskEq, LanemaskLt, LanemaskLe, LanemaskGt, LanemaskGe,
  Clock, Clock64, SmId, NsmId, GridId,
};

/// One decoded operand. Register: regs[0]. Vector ({a, b, c, d}): regs[0..count).
/// Address ([reg + offset]): regs[0] is the base register (the constant-zero slot for
/// [symbol] and [immediate]) and `offset` the byte offset including the symbol address.
/// Label: `offset` is the target instruction index. `negate` is the `!p` form.
struct Operand {
  enum class Kind : std::uint8_t { None, Register, Vector, Address, Label };
  Kind kind = Kind::None;
  bool negate = false;
  std::uint8_t count = 0;
  std::array<std::uint32_t, 4> regs{};
  std::int64_t offset = 0;
};

/// One decoded instruction: its mnemonic (opcode, modifiers, types), the table row it
/// resolved to, and its operands resolved to register slots.
struct Instruction : ptx::Mnemonic {
  const ptx::InstructionForm* form = nullptr;
  std::int32_t guard = -1;     // predicate register slot, or -1
  bool guard_negate = false;
  std::int32_t predicate_destination = -1;  // the `|p` of shfl/setp, or -1
  std::uint8_t operand_count = 0;
  std::array<Operand, 5> operands{};
  std::uint32_t line = 0;      // 1-based source line
};

struct KernelParameter {
  std::string name;
  ValueType type = ValueType::U64;
  std::uint32_t offset = 0;  // byte offset in the parameter buffer
  std::uint32_t size = 0;    // bytes
};

struct Kernel {
  std::string name;
  std::vector<Instruction> code;         // ends with an implicit exit
  std::vector<std::string> source_text;  // one per instruction, for error messages
  std::vector<KernelParameter> parameters;
  std::uint32_t parameter_bytes = 0;
  std::uint32_t register_count = 0;  // slots, including constants and special registers
  std::vector<std::pair<std::uint32_t, std::uint64_t>> constants;        // slot, value
  std::vector<std::pair<std::uint32_t, SpecialRegister>> special_slots;  // slot, register
  std::uint32_t static_shared_bytes = 0;  // `.extern .shared` arrays start at kDynamicSharedBase
  std::uint32_t local_bytes = 0;            // per thread
  std::optional<std::array<std::uint32_t, 3>> max_threads;  // .maxntid / .reqntid
};

struct Module {
  std::string version;  // "8.0"
  std::string target;   // "sm_80" (as written, e.g. "sm_90a")
  std::vector<Kernel> kernels;
  /// The kernel named `name`, or nullptr.
  const Kernel* find(const std::string& name) const;
};

/// Parses PTX text (one or more `.entry` kernels). Every instruction must resolve to a
/// row of ptx/InstructionTable.h that the module's `.target` and `.version` can run
/// (as ptxas requires). Throws PtxParseError naming the line and the construct for
/// anything else: an instruction form outside the table, one the target or version is
/// too old for, device function calls, textures, module-scope .global/.const variables.
Module parse_ptx(const std::string& text);

}  // namespace quantc::runtime::emulator
