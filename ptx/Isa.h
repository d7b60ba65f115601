// The spelling of PTX instructions, shared by the emitter (which renders them) and the
// emulator (which parses them): fundamental types, opcodes, modifiers, and the
// `Mnemonic` that holds one instruction's opcode, modifiers and types, with one
// renderer and one parser so the two sides cannot disagree on a spelling.
//
// Source: PTX ISA 8.x (NVIDIA, "Parallel Thread Execution ISA"), sections 5.2
// (fundamental types), 9.7 (instructions) and the modifier tables of each instruction.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace quantc::ptx {

/// A PTX spelling quantc cannot parse or render: an unknown opcode, type or modifier,
/// or a modifier the instruction does not take. The message names the offending part.
class PtxSyntaxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// PTX fundamental types (PTX ISA 5.2.2) plus the packed half types f16x2/bf16x2 (32
// bits). Pred is a 1-bit predicate register. (enumerator, spelling, bits)
#define QUANTC_PTX_TYPES(X) \
  X(Pred, "pred", 1)        \
  X(B8, "b8", 8)            \
  X(B16, "b16", 16)         \
  X(B32, "b32", 32)         \
  X(B64, "b64", 64)         \
  X(U8, "u8", 8)            \
  X(U16, "u16", 16)         \
  X(U32, "u32", 32)         \
  X(U64, "u64", 64)         \
  X(S8, "s8", 8)            \
  X(S16, "s16", 16)         \
  X(S32, "s32", 32)         \
  X(S64, "s64", 64)         \
  X(F16, "f16", 16)         \
  X(F16x2, "f16x2", 32)     \
  X(BF16, "bf16", 16)       \
  X(BF16x2, "bf16x2", 32)   \
  X(F32, "f32", 32)         \
  X(F64, "f64", 64)

enum class ValueType : std::uint8_t {
  None,
#define QUANTC_ENUM(name, text, bits) name,
  QUANTC_PTX_TYPES(QUANTC_ENUM)
#undef QUANTC_ENUM
};
inline constexpr unsigned kValueTypeCount = 1 + 19;

unsigned bit_width(ValueType type);  // None is 0, Pred is 1, F16x2 is 32
bool is_signed_integer(ValueType type);
bool is_unsigned_integer(ValueType type);  // u8..u64
bool is_float(ValueType type);             // f16, f16x2, bf16, bf16x2, f32, f64
bool is_half(ValueType type);              // f16, f16x2, bf16, bf16x2
std::string_view to_string(ValueType type);  // "f16x2"; "" for None
std::optional<ValueType> parse_value_type(std::string_view text);

/// A set of ValueTypes (bit i = ValueType i), for the instruction table.
using TypeSet = std::uint32_t;
constexpr TypeSet type_bit(ValueType type) { return TypeSet{1} << static_cast<unsigned>(type); }
constexpr bool contains(TypeSet set, ValueType type) { return (set & type_bit(type)) != 0; }

// PTX opcodes (the first word of the mnemonic). (enumerator, spelling)
#define QUANTC_PTX_OPCODES(X)                                                                                      \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Mad, "mad") X(Div, "div") X(Rem, "rem") X(Abs, "abs")             \
  X(Neg, "neg") X(Min, "min") X(Max, "max") X(Popc, "popc") X(Clz, "clz") X(Brev, "brev") X(Bfind, "bfind")     \
  X(Shl, "shl") X(Shr, "shr") X(And, "and") X(Or, "or") X(Xor, "xor") X(Not, "not") X(Cnot, "cnot")             \
  X(Lop3, "lop3") X(Prmt, "prmt") X(Bfe, "bfe") X(Bfi, "bfi") X(Shf, "shf") X(Dp4a, "dp4a") X(Dp2a, "dp2a")     \
  X(Fma, "fma") X(Rcp, "rcp") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt") X(Ex2, "ex2") X(Lg2, "lg2") X(Sin, "sin")       \
  X(Cos, "cos") X(Tanh, "tanh") X(Copysign, "copysign") X(Testp, "testp") X(Setp, "setp") X(Selp, "selp")       \
  X(Set, "set") X(Mov, "mov") X(Cvt, "cvt") X(Cvta, "cvta") X(Ld, "ld") X(Ldu, "ldu") X(St, "st")               \
  X(Atom, "atom") X(Red, "red") X(Shfl, "shfl") X(Vote, "vote") X(Activemask, "activemask") X(Mma, "mma")      \
  X(Ldmatrix, "ldmatrix") X(CpAsync, "cp.async") X(CpAsyncCommit, "cp.async.commit_group")                     \
  X(CpAsyncWait, "cp.async.wait_group")                                                                         \
  X(Bra, "bra")                                                                                                 \
  X(Ret, "ret") X(Exit, "exit") X(Bar, "bar") X(BarWarp, "bar.warp") X(Barrier, "barrier") X(Membar, "membar") X(Fence, "fence")

enum class Opcode : std::uint8_t {
#define QUANTC_ENUM(name, text) name,
  QUANTC_PTX_OPCODES(QUANTC_ENUM)
#undef QUANTC_ENUM
};
std::string_view to_string(Opcode opcode);

/// Rounding modifiers: .rn .rz .rm .rp (to a float) and .rni .rzi .rmi .rpi (to an
/// integral value). None is the instruction's default.
enum class Rounding : std::uint8_t { None, Nearest, Zero, Down, Up, NearestInt, ZeroInt, DownInt, UpInt };

enum class StateSpace : std::uint8_t { Generic, Global, Shared, Local, Param, Const };

/// setp/set comparison operators (PTX ISA 9.7.7.1): the *u forms are true when either
/// operand is NaN; lo/ls/hi/hs are unsigned integer comparisons.
enum class Compare : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };
enum class BoolOp : std::uint8_t { None, And, Or, Xor };
enum class MulMode : std::uint8_t { None, Lo, Hi, Wide };
enum class ShuffleMode : std::uint8_t { Up, Down, Butterfly, Index };
enum class VoteMode : std::uint8_t { All, Any, Uni, Ballot };
enum class PermuteMode : std::uint8_t { Generic, F4e, B4e, Rc8, Ecl, Ecr, Rc16 };
enum class AtomicOp : std::uint8_t { Add, Min, Max, Inc, Dec, And, Or, Xor, Exch, Cas };
/// Memory-model qualifiers of fence, membar and atom (PTX ISA 8.x, "Memory Consistency
/// Model"): the ordering semantics and the scope of the observers. None: not written.
enum class MemoryOrder : std::uint8_t { None, Relaxed, Acquire, Release, AcqRel, Sc };
enum class MemoryScope : std::uint8_t { None, Cta, Cluster, Gpu, Sys };
enum class TestProperty : std::uint8_t { Finite, Infinite, Number, NotANumber, Normal, Subnormal };
enum class ShiftDirection : std::uint8_t { Left, Right };
/// mma's matrix shape (PTX ISA 9.7.14.5.14, mma.sync); quantc emits and runs m16n8k16.
enum class MmaShape : std::uint8_t { M16n8k16 };
/// ldmatrix's matrix shape (PTX ISA 9.7.14.5.15): m8n8 of 16-bit elements.
enum class LoadMatrixShape : std::uint8_t { M8n8 };

/// The modifier kinds an instruction form may take (the table's `modifiers` column).
enum Modifier : std::uint32_t {
  kRounding = 1u << 0,      // .rn .rz .rm .rp
  kIntRounding = 1u << 1,   // .rni .rzi .rmi .rpi
  kFtz = 1u << 2,
  kSat = 1u << 3,           // .sat: clamp to [0, 1] (floats) or the type's range (integers)
  kApprox = 1u << 4,
  kFull = 1u << 5,
  kNan = 1u << 6,           // min/max .NaN
  kMulMode = 1u << 7,       // .lo .hi .wide
  kCompare = 1u << 8,       // setp/set comparison
  kBoolOp = 1u << 9,        // setp/set .and .or .xor
  kSpace = 1u << 10,        // .global .shared .local .param .const
  kVector = 1u << 11,       // .v2 .v4
  kCache = 1u << 12,        // cache, eviction and memory-model qualifiers (.nc .ca .relaxed .gpu ...)
  kMode = 1u << 13,         // the opcode's own mode word: shfl .idx, vote .ballot, prmt .f4e, atom .add, ...
  kClamp = 1u << 14,        // shf .wrap/.clamp, bfind .shiftamt
  kSync = 1u << 15,         // .sync .aligned
  kUniform = 1u << 16,      // bra/ret .uni
  kTo = 1u << 17,           // cvta .to
  kRelu = 1u << 18,         // fma/max .relu on half types
  kSatFinite = 1u << 19,    // cvt .satfinite: clamp to the largest finite value, NaN stays NaN
};
using ModifierSet = std::uint32_t;

/// One instruction's opcode, modifiers and types: everything in "fma.rn.f16x2" or
/// "ld.global.nc.v4.u32" except the operands. Render with to_string(), parse with
/// parse_mnemonic(); `present` records which modifier kinds were written.
struct Mnemonic {
  Opcode opcode = Opcode::Mov;
  ValueType type = ValueType::None;         // the instruction type (cvt/set: destination)
  ValueType source_type = ValueType::None;  // cvt/set/dp4a/dp2a: the second type
  Rounding rounding = Rounding::None;
  StateSpace space = StateSpace::Generic;
  Compare compare = Compare::Eq;
  BoolOp bool_op = BoolOp::None;
  MulMode mul_mode = MulMode::None;
  std::uint8_t mode = 0;    // ShuffleMode, VoteMode, PermuteMode, AtomicOp, TestProperty, ShiftDirection or MmaShape
  std::uint8_t vector = 1;  // .v2/.v4 element count
  bool ftz = false, saturate = false, approx = false, full = false, propagate_nan = false, relu = false;
  bool saturate_finite = false; // cvt .satfinite (not .sat's [0, 1] clamp)
  bool clamp = false;           // shf.clamp (else .wrap); bfind.shiftamt
  bool non_coherent = false;    // ld.global.nc (read-only data cache)
  bool to_generic = true;       // cvta (to generic) vs cvta.to (from generic)
  bool sync = false, aligned = false, uniform = false;
  bool row_col = false;         // mma .row.col: A row-major, B column-major (the one layout of m16n8k16 f16/bf16)
  std::uint8_t matrices = 0;    // ldmatrix .x1 .x2 .x4
  bool transpose = false;       // ldmatrix .trans
  bool cache_global = false;    // cp.async .cg (L2 only) rather than .ca
  bool global_source = false;   // cp.async .shared.global: the source's state space
  bool warp_barrier = false;    // bar.warp.sync
  MemoryOrder memory_order = MemoryOrder::None;  // fence/atom .relaxed .acq_rel .sc ...
  MemoryScope memory_scope = MemoryScope::None;  // fence/atom .cta .gpu .sys; membar .cta .gl .sys
  ModifierSet present = 0;      // the modifier kinds written in the text

  // Builders for the emitter: each sets one modifier and records its kind in
  // `present`, so an emitted form is checked against the table like a parsed one.
  static Mnemonic of(Opcode opcode, ValueType type = ValueType::None, ValueType source_type = ValueType::None) {
    Mnemonic m;
    m.opcode = opcode;
    m.type = type;
    m.source_type = source_type;
    return m;
  }
  Mnemonic& round(Rounding value) {
    rounding = value;
    present |= value >= Rounding::NearestInt ? kIntRounding : kRounding;
    return *this;
  }
  Mnemonic& in(StateSpace value) {
    space = value;
    present |= kSpace;
    return *this;
  }
  Mnemonic& read_only() {  // ld.global.nc
    non_coherent = true;
    present |= kCache;
    return *this;
  }
  Mnemonic& lanes(unsigned count) {
    vector = static_cast<std::uint8_t>(count);
    if (count > 1) present |= kVector;
    return *this;
  }
  Mnemonic& compare_with(Compare value) {
    compare = value;
    present |= kCompare;
    return *this;
  }
  Mnemonic& multiply(MulMode value) {
    mul_mode = value;
    present |= kMulMode;
    return *this;
  }
  template <class Mode>
  Mnemonic& with_mode(Mode value) {  // ShuffleMode, VoteMode, PermuteMode, AtomicOp, ...
    mode = static_cast<std::uint8_t>(value);
    present |= kMode;
    return *this;
  }
  Mnemonic& synchronized() {  // shfl.sync, vote.sync, bar.sync
    sync = true;
    present |= kSync;
    return *this;
  }
  /// ldmatrix.sync.aligned.m8n8.x<count>[.trans].shared.b16.
  Mnemonic& load_matrix(unsigned count, bool transposed) {
    sync = aligned = true;
    mode = static_cast<std::uint8_t>(LoadMatrixShape::M8n8);
    matrices = static_cast<std::uint8_t>(count);
    transpose = transposed;
    space = StateSpace::Shared;
    present |= kSync | kMode | kSpace;
    return *this;
  }
  /// cp.async.{ca,cg}.shared.global [dst], [src], bytes.
  Mnemonic& async_copy(bool l2_only) {
    cache_global = l2_only;
    space = StateSpace::Shared;
    global_source = true;
    present |= kCache | kSpace;
    return *this;
  }
  /// mma.sync.aligned.<shape>.row.col: `type` is D's and C's type, `source_type` A's and B's.
  Mnemonic& matrix(MmaShape shape) {
    sync = aligned = row_col = true;
    mode = static_cast<std::uint8_t>(shape);
    present |= kSync | kMode;
    return *this;
  }
  Mnemonic& to_global() {  // cvta.to.global
    to_generic = false;
    space = StateSpace::Global;
    present |= kTo | kSpace;
    return *this;
  }
  Mnemonic& ordered(MemoryOrder order, MemoryScope scope) {  // fence.acq_rel.gpu, atom.relaxed.gpu
    memory_order = order;
    memory_scope = scope;
    present |= kCache;
    return *this;
  }
  Mnemonic& wrap_or_clamp(bool clamped) {  // shf
    clamp = clamped;
    present |= kClamp;
    return *this;
  }
};

/// The canonical spelling, e.g. "fma.rn.f16x2", "ld.global.nc.v4.u32",
/// "shfl.sync.bfly.b32", "setp.lt.and.f32". Modifiers appear in the order the PTX ISA's
/// syntax lines give them; ignorable cache qualifiers other than .nc are not kept.
std::string to_string(const Mnemonic& mnemonic);

/// Parses "opcode.mod.mod.type[.type]" (any order of modifiers the PTX ISA allows); mma
/// spells four types, D A B C, of which quantc takes those with B = A and C = D.
/// Throws PtxSyntaxError naming the unknown part. Does not check that the form exists
/// (InstructionTable's find_form does).
Mnemonic parse_mnemonic(std::string_view text);

}  // namespace quantc::ptx
