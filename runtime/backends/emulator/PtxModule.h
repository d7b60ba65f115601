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

/// PTX fundamental types (PTX ISA 5.2). Pred is a 1-bit predicate register.
enum class ValueType : std::uint8_t {
  None, Pred,
  B8, B16, B32, B64,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64,
};

unsigned bit_width(ValueType type);  // Pred is 1; F16x2 is 32
bool is_signed_integer(ValueType type);
bool is_float(ValueType type);
const char* to_string(ValueType type);

enum class Opcode : std::uint8_t {
  // integer and bit manipulation
  Add, Sub, Mul, Mad, Div, Rem, Abs, Neg, Min, Max, Popc, Clz, Brev, Bfind,
  Shl, Shr, And, Or, Xor, Not, Cnot, Lop3, Prmt, Bfe, Bfi, Shf, Dp4a, Dp2a,
  // floating point only
  Fma, Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh, Copysign, Testp,
  // comparison and selection
  Setp, Selp, Set,
  // data movement and conversion
  Mov, Cvt, Cvta, Ld, St, Atom, Red,
  // warp-level
  Shfl, Vote, Activemask, BarWarpSync,
  // control
  Bra, Ret, Exit, Bar, Nop,
};

/// Instruction classes for the counters (LaunchCounters).
enum class InstructionClass : std::uint8_t { Integer, Float, Conversion, Memory, Shuffle, Control };

/// Rounding modifiers: .rn .rz .rm .rp (round to a float) and .rni .rzi .rmi .rpi
/// (round to an integral value). None means the instruction's default.
enum class Rounding : std::uint8_t { None, Nearest, Zero, Down, Up, NearestInt, ZeroInt, DownInt, UpInt };

enum class StateSpace : std::uint8_t { Generic, Global, Shared, Local, Param, Const };

/// setp/set comparison operators (PTX ISA 9.7.7.1): the *u forms are true when either
/// operand is NaN; lo/ls/hi/hs are unsigned integer comparisons.
enum class Compare : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };

enum class BoolOp : std::uint8_t { None, And, Or, Xor };
enum class MulMode : std::uint8_t { Lo, Hi, Wide };
enum class ShuffleMode : std::uint8_t { Up, Down, Butterfly, Index };
enum class VoteMode : std::uint8_t { All, Any, Uni, Ballot };
enum class PermuteMode : std::uint8_t { Generic, F4e, B4e, Rc8, Ecl, Ecr, Rc16 };
enum class AtomicOp : std::uint8_t { Add, Min, Max, Inc, Dec, And, Or, Xor, Exch, Cas };
enum class TestProperty : std::uint8_t { Finite, Infinite, Number, NotANumber, Normal, Subnormal };

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

struct Instruction {
  Opcode opcode = Opcode::Nop;
  InstructionClass klass = InstructionClass::Integer;
  ValueType type = ValueType::None;         // the instruction type (destination type for cvt)
  ValueType source_type = ValueType::None;  // cvt/set: the source type; mul.wide: none
  Rounding rounding = Rounding::None;
  StateSpace space = StateSpace::Generic;
  Compare compare = Compare::Eq;
  BoolOp bool_op = BoolOp::None;
  MulMode mul_mode = MulMode::Lo;
  std::uint8_t mode = 0;      // ShuffleMode, VoteMode, PermuteMode, AtomicOp, TestProperty, shf direction
  std::uint8_t vector = 1;    // .v2/.v4 element count for ld/st
  bool ftz = false, saturate = false, approx = false, full = false;
  bool propagate_nan = false;  // min/max .NaN
  bool clamp = false;          // shf.clamp (else .wrap); bfind.shiftamt reuses it
  bool to_generic = true;      // cvta (to generic) vs cvta.to (from generic)
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
  std::string target;   // "sm_80"
  std::vector<Kernel> kernels;
  /// The kernel named `name`, or nullptr.
  const Kernel* find(const std::string& name) const;
};

/// Parses PTX text (one or more `.entry` kernels). Throws PtxParseError naming the
/// line and the construct for anything outside the supported subset (device function
/// calls, textures, module-scope .global/.const variables, f16 arithmetic, ...).
Module parse_ptx(const std::string& text);

}  // namespace quantc::runtime::emulator
