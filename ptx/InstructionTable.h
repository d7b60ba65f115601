// The one table of PTX instruction forms, read by the emitter and the emulator alike
// (in the spirit of LLVM's NVPTXInstrInfo.td records and tinygrad's asm_for_op).
//
// A row is one instruction form: an opcode over a set of instruction types (and, for
// cvt/set/dp4a, source types), the modifier kinds it accepts, its operand signature,
// the .v2/.v4 widths it allows, the emulator function that executes it, the pipe
// `quantc profile` counts it on, and the lowest PTX ISA version and sm_ it needs.
//
// - The emitter renders every instruction through find_form(): a spelling with no row
//   is an internal error, and a row the target cannot run is refused with a message
//   naming the instruction, the sm_ and PTX ISA it needs and the target.
// - The emulator resolves every parsed instruction to its row and calls the row's
//   semantics function; its function table is generated from QUANTC_PTX_FORMS, so a
//   row without an emulator function does not compile.
//
// Adding an instruction: add a row here (and, for a new opcode, one QUANTC_PTX_OPCODES
// entry in ptx/Isa.h), then write `execute_<Semantics>` in
// runtime/backends/emulator/Semantics.cpp. Availability comes from the PTX ISA's
// "PTX ISA Notes" / "Target ISA Notes" of each instruction.
#pragma once

#include <string_view>
#include <vector>

#include "ptx/Isa.h"
#include "ptx/Target.h"

namespace quantc::ptx {

/// Where an instruction issues, for `quantc profile`'s counters and cost model.
/// (enumerator, printed name)
#define QUANTC_PTX_PIPES(X)                                                  \
  X(Fp32, "fp32")                     /* f32 add/mul/fma/min/max/setp */      \
  X(Fp16, "fp16")                     /* f16/bf16 scalar and packed */        \
  X(Fp64, "fp64")                                                            \
  X(Integer, "integer")               /* add/logic/shift/compare/select */    \
  X(IntegerMultiply, "integer multiply") /* mul/mad/dp4a (IMAD) */           \
  X(Special, "special function")      /* rcp/sqrt/ex2/lg2/sin/cos/tanh */     \
  X(Emulated, "multi-instruction")    /* integer div/rem, f64 div: subroutines */ \
  X(Conversion, "conversion")         /* cvt */                               \
  X(Move, "move")                     /* mov/cvta: usually removed by ptxas */ \
  X(Shuffle, "shuffle/vote")                                                 \
  X(Memory, "memory")                                                        \
  X(Control, "control")                                                      \
  X(Tensor, "tensor")                 /* mma (tensor cores) */

enum class Pipe : std::uint8_t {
#define QUANTC_ENUM(name, text) name,
  QUANTC_PTX_PIPES(QUANTC_ENUM)
#undef QUANTC_ENUM
};
inline constexpr unsigned kPipeCount = 13;
std::string_view to_string(Pipe pipe);

namespace types {
constexpr TypeSet of(ValueType type) { return type_bit(type); }
using enum ValueType;
inline constexpr TypeSet kPred = of(Pred);
inline constexpr TypeSet kBits = of(B16) | of(B32) | of(B64);
inline constexpr TypeSet kBits32 = of(B32);
inline constexpr TypeSet kUnsigned = of(U16) | of(U32) | of(U64);
inline constexpr TypeSet kSigned = of(S16) | of(S32) | of(S64);
inline constexpr TypeSet kInteger = kUnsigned | kSigned;                    // 16..64 bits
inline constexpr TypeSet kInteger32 = of(U32) | of(U64) | of(S32) | of(S64);  // 32/64 bits
inline constexpr TypeSet kByteInteger = of(U8) | of(S8);
inline constexpr TypeSet kAllInteger = kInteger | kByteInteger;
inline constexpr TypeSet kF32 = of(F32);
inline constexpr TypeSet kF64 = of(F64);
inline constexpr TypeSet kFloat = kF32 | kF64;
inline constexpr TypeSet kF16 = of(F16) | of(F16x2);
inline constexpr TypeSet kBF16 = of(BF16) | of(BF16x2);
inline constexpr TypeSet kMemory = of(B8) | kBits | kAllInteger | kFloat;
inline constexpr TypeSet kMove = kPred | kBits | kInteger | kFloat;
inline constexpr TypeSet kCompare = kBits | kInteger | kFloat;
}  // namespace types

/// The vector widths a form allows (bit n: .v<n>; bit 1: a plain scalar access).
inline constexpr unsigned kScalar = 1u << 1;
inline constexpr unsigned kScalarOrVector = (1u << 1) | (1u << 2) | (1u << 4);  // scalar, .v2, .v4

/// The instruction forms. Columns:
///   name, opcode, types, source types (0: none), modifiers, operands, vector widths,
///   semantics (the emulator's execute_<semantics>), pipe, PTX ISA major, minor, min sm.
/// Operand signature letters: t = a value of the instruction type, s = of the source
/// type, w = of twice the instruction type's width, u = a u32 value, p = a predicate,
/// a = an address [..], l = a label; brackets mark optional trailing operands.
#define QUANTC_PTX_FORMS(X)                                                                                              \
  /* integer arithmetic (PTX ISA 9.7.1) */                                                                            \
  X(IntAdd, Add, types::kInteger, 0, kSat, "ttt", kScalar, IntAdd, Integer, 1, 0, 20)                                         \
  X(IntSub, Sub, types::kInteger, 0, kSat, "ttt", kScalar, IntSub, Integer, 1, 0, 20)                                         \
  X(IntMul, Mul, types::kInteger, 0, kMulMode, "ttt", kScalar, IntMul, IntegerMultiply, 1, 0, 20)                             \
  X(IntMad, Mad, types::kInteger, 0, kMulMode | kSat, "tttw", kScalar, IntMad, IntegerMultiply, 1, 0, 20)                     \
  X(IntDiv, Div, types::kInteger, 0, 0, "ttt", kScalar, IntDiv, Emulated, 1, 0, 20)                                           \
  X(IntRem, Rem, types::kInteger, 0, 0, "ttt", kScalar, IntRem, Emulated, 1, 0, 20)                                           \
  X(IntAbs, Abs, types::kSigned, 0, 0, "tt", kScalar, IntAbs, Integer, 1, 0, 20)                                              \
  X(IntNeg, Neg, types::kSigned, 0, 0, "tt", kScalar, IntNeg, Integer, 1, 0, 20)                                              \
  X(IntMin, Min, types::kInteger, 0, 0, "ttt", kScalar, IntMin, Integer, 1, 0, 20)                                            \
  X(IntMax, Max, types::kInteger, 0, 0, "ttt", kScalar, IntMax, Integer, 1, 0, 20)                                            \
  X(Popc, Popc, types::of(ValueType::B32) | types::of(ValueType::B64), 0, 0, "ut", kScalar, Popc, Integer, 2, 0, 20)          \
  X(Clz, Clz, types::of(ValueType::B32) | types::of(ValueType::B64), 0, 0, "ut", kScalar, Clz, Integer, 2, 0, 20)             \
  X(Brev, Brev, types::of(ValueType::B32) | types::of(ValueType::B64), 0, 0, "tt", kScalar, Brev, Integer, 2, 0, 20)          \
  X(Bfind, Bfind, types::kInteger32, 0, kClamp, "ut", kScalar, Bfind, Integer, 2, 0, 20)                                      \
  X(Dp4a, Dp4a, types::of(ValueType::U32) | types::of(ValueType::S32),                                                 \
    types::of(ValueType::U32) | types::of(ValueType::S32), 0, "ttst", kScalar, Dp4a, IntegerMultiply, 5, 0, 61)              \
  X(Dp2a, Dp2a, types::of(ValueType::U32) | types::of(ValueType::S32),                                                 \
    types::of(ValueType::U32) | types::of(ValueType::S32), kMulMode, "ttst", kScalar, Dp2a, IntegerMultiply, 5, 0, 61)       \
  /* logic and shift (9.7.8) */                                                                                        \
  X(And, And, types::kPred | types::kBits, 0, 0, "ttt", kScalar, And, Integer, 1, 0, 20)                                     \
  X(Or, Or, types::kPred | types::kBits, 0, 0, "ttt", kScalar, Or, Integer, 1, 0, 20)                                        \
  X(Xor, Xor, types::kPred | types::kBits, 0, 0, "ttt", kScalar, Xor, Integer, 1, 0, 20)                                     \
  X(Not, Not, types::kPred | types::kBits, 0, 0, "tt", kScalar, Not, Integer, 1, 0, 20)                                      \
  X(Cnot, Cnot, types::kBits, 0, 0, "tt", kScalar, Cnot, Integer, 1, 0, 20)                                                  \
  X(Lop3, Lop3, types::kBits32, 0, 0, "ttttu", kScalar, Lop3, Integer, 4, 3, 50)                                              \
  X(Shl, Shl, types::kBits, 0, 0, "ttu", kScalar, Shl, Integer, 1, 0, 20)                                                    \
  X(Shr, Shr, types::kBits | types::kInteger, 0, 0, "ttu", kScalar, Shr, Integer, 1, 0, 20)                                  \
  X(Shf, Shf, types::kBits32, 0, kMode | kClamp, "tttu", kScalar, Shf, Integer, 3, 1, 32)                                     \
  X(Prmt, Prmt, types::kBits32, 0, kMode, "tttu", kScalar, Prmt, Integer, 2, 0, 20)                                           \
  X(Bfe, Bfe, types::kInteger32, 0, 0, "ttuu", kScalar, Bfe, Integer, 2, 0, 20)                                               \
  X(Bfi, Bfi, types::of(ValueType::B32) | types::of(ValueType::B64), 0, 0, "tttuu", kScalar, Bfi, Integer, 2, 0, 20)          \
  /* f32 arithmetic (9.7.3) */                                                                                          \
  X(F32Add, Add, types::kF32, 0, kRounding | kFtz | kSat, "ttt", kScalar, FloatAdd, Fp32, 1, 0, 20)                           \
  X(F32Sub, Sub, types::kF32, 0, kRounding | kFtz | kSat, "ttt", kScalar, FloatSub, Fp32, 1, 0, 20)                           \
  X(F32Mul, Mul, types::kF32, 0, kRounding | kFtz | kSat, "ttt", kScalar, FloatMul, Fp32, 1, 0, 20)                           \
  X(F32Fma, Fma, types::kF32, 0, kRounding | kFtz | kSat, "tttt", kScalar, FloatFma, Fp32, 2, 0, 20)                          \
  X(F32Mad, Mad, types::kF32, 0, kRounding | kFtz | kSat, "tttt", kScalar, FloatFma, Fp32, 1, 4, 20)                          \
  X(F32Div, Div, types::kF32, 0, kRounding | kFtz | kApprox | kFull, "ttt", kScalar, FloatDiv, Emulated, 1, 4, 20)             \
  X(F32Min, Min, types::kF32, 0, kFtz | kNan, "ttt", kScalar, FloatMin, Fp32, 1, 0, 20)                                       \
  X(F32Max, Max, types::kF32, 0, kFtz | kNan, "ttt", kScalar, FloatMax, Fp32, 1, 0, 20)                                       \
  X(F32Abs, Abs, types::kF32, 0, kFtz, "tt", kScalar, FloatAbs, Fp32, 1, 0, 20)                                               \
  X(F32Neg, Neg, types::kF32, 0, kFtz, "tt", kScalar, FloatNeg, Fp32, 1, 0, 20)                                               \
  X(F32Copysign, Copysign, types::kF32, 0, 0, "ttt", kScalar, Copysign, Fp32, 2, 0, 20)                                       \
  X(F32Testp, Testp, types::kF32, 0, kMode, "pt", kScalar, Testp, Fp32, 2, 0, 20)                                             \
  X(Rcp, Rcp, types::kF32, 0, kRounding | kFtz | kApprox, "tt", kScalar, Rcp, Special, 1, 4, 20)                              \
  X(Sqrt, Sqrt, types::kF32, 0, kRounding | kFtz | kApprox, "tt", kScalar, Sqrt, Special, 1, 4, 20)                           \
  X(Rsqrt, Rsqrt, types::kF32, 0, kFtz | kApprox, "tt", kScalar, Rsqrt, Special, 1, 0, 20)                                    \
  X(Ex2, Ex2, types::kF32, 0, kFtz | kApprox, "tt", kScalar, Ex2, Special, 1, 0, 20)                                           \
  X(Lg2, Lg2, types::kF32, 0, kFtz | kApprox, "tt", kScalar, Lg2, Special, 1, 0, 20)                                           \
  X(Sin, Sin, types::kF32, 0, kFtz | kApprox, "tt", kScalar, Sin, Special, 1, 0, 20)                                           \
  X(Cos, Cos, types::kF32, 0, kFtz | kApprox, "tt", kScalar, Cos, Special, 1, 0, 20)                                           \
  X(Tanh, Tanh, types::kF32, 0, kApprox, "tt", kScalar, Tanh, Special, 7, 0, 75)                                               \
  /* f64 arithmetic (9.7.3): the FP64 pipe; div/rcp/sqrt are subroutines */                                           \
  X(F64Add, Add, types::kF64, 0, kRounding, "ttt", kScalar, FloatAdd, Fp64, 1, 0, 20)                                         \
  X(F64Sub, Sub, types::kF64, 0, kRounding, "ttt", kScalar, FloatSub, Fp64, 1, 0, 20)                                         \
  X(F64Mul, Mul, types::kF64, 0, kRounding, "ttt", kScalar, FloatMul, Fp64, 1, 0, 20)                                         \
  X(F64Fma, Fma, types::kF64, 0, kRounding, "tttt", kScalar, FloatFma, Fp64, 1, 4, 20)                                        \
  X(F64Mad, Mad, types::kF64, 0, kRounding, "tttt", kScalar, FloatFma, Fp64, 1, 4, 20)                                        \
  X(F64Div, Div, types::kF64, 0, kRounding, "ttt", kScalar, FloatDiv, Emulated, 1, 4, 20)                                     \
  X(F64Min, Min, types::kF64, 0, 0, "ttt", kScalar, FloatMin, Fp64, 1, 0, 20)                                                 \
  X(F64Max, Max, types::kF64, 0, 0, "ttt", kScalar, FloatMax, Fp64, 1, 0, 20)                                                 \
  X(F64Abs, Abs, types::kF64, 0, 0, "tt", kScalar, FloatAbs, Fp64, 1, 0, 20)                                                  \
  X(F64Neg, Neg, types::kF64, 0, 0, "tt", kScalar, FloatNeg, Fp64, 1, 0, 20)                                                  \
  X(F64Copysign, Copysign, types::kF64, 0, 0, "ttt", kScalar, Copysign, Fp64, 2, 0, 20)                                       \
  X(F64Testp, Testp, types::kF64, 0, kMode, "pt", kScalar, Testp, Fp64, 2, 0, 20)                                             \
  X(F64Rcp, Rcp, types::kF64, 0, kRounding | kFtz | kApprox, "tt", kScalar, Rcp, Emulated, 1, 4, 20)                          \
  X(F64Sqrt, Sqrt, types::kF64, 0, kRounding, "tt", kScalar, Sqrt, Emulated, 1, 4, 20)                                        \
  X(F64Rsqrt, Rsqrt, types::kF64, 0, kApprox, "tt", kScalar, Rsqrt, Special, 1, 4, 20)                                        \
  /* half precision (9.7.4): f16 from sm_53, bf16 from sm_80 (fma/min/max/neg/abs) or sm_90 */                          \
  X(HalfAdd, Add, types::kF16, 0, kRounding | kFtz | kSat, "ttt", kScalar, HalfAdd, Fp16, 4, 2, 53)                           \
  X(HalfSub, Sub, types::kF16, 0, kRounding | kFtz | kSat, "ttt", kScalar, HalfSub, Fp16, 4, 2, 53)                           \
  X(HalfMul, Mul, types::kF16, 0, kRounding | kFtz | kSat, "ttt", kScalar, HalfMul, Fp16, 4, 2, 53)                           \
  X(HalfFma, Fma, types::kF16, 0, kRounding | kFtz | kSat | kRelu, "tttt", kScalar, HalfFma, Fp16, 4, 2, 53)                  \
  X(HalfMin, Min, types::kF16, 0, kFtz | kNan, "ttt", kScalar, HalfMin, Fp16, 7, 0, 80)                                       \
  X(HalfMax, Max, types::kF16, 0, kFtz | kNan | kRelu, "ttt", kScalar, HalfMax, Fp16, 7, 0, 80)                               \
  X(HalfNeg, Neg, types::kF16, 0, kFtz, "tt", kScalar, HalfNeg, Fp16, 6, 0, 53)                                               \
  X(HalfAbs, Abs, types::kF16, 0, kFtz, "tt", kScalar, HalfAbs, Fp16, 6, 5, 53)                                               \
  X(BFloat16Add, Add, types::kBF16, 0, kRounding, "ttt", kScalar, HalfAdd, Fp16, 7, 8, 90)                                    \
  X(BFloat16Sub, Sub, types::kBF16, 0, kRounding, "ttt", kScalar, HalfSub, Fp16, 7, 8, 90)                                    \
  X(BFloat16Mul, Mul, types::kBF16, 0, kRounding, "ttt", kScalar, HalfMul, Fp16, 7, 8, 90)                                    \
  X(BFloat16Fma, Fma, types::kBF16, 0, kRounding | kRelu, "tttt", kScalar, HalfFma, Fp16, 7, 0, 80)                           \
  X(BFloat16Min, Min, types::kBF16, 0, kNan, "ttt", kScalar, HalfMin, Fp16, 7, 0, 80)                                         \
  X(BFloat16Max, Max, types::kBF16, 0, kNan | kRelu, "ttt", kScalar, HalfMax, Fp16, 7, 0, 80)                                 \
  X(BFloat16Neg, Neg, types::kBF16, 0, 0, "tt", kScalar, HalfNeg, Fp16, 7, 0, 80)                                             \
  X(BFloat16Abs, Abs, types::kBF16, 0, 0, "tt", kScalar, HalfAbs, Fp16, 7, 0, 80)                                             \
  /* comparison and selection (9.7.7) */                                                                               \
  X(IntSetp, Setp, types::kBits | types::kInteger, 0, kCompare | kBoolOp, "ptt[p]", kScalar, Setp, Integer, 1, 0, 20)        \
  X(F32Setp, Setp, types::kF32, 0, kCompare | kBoolOp | kFtz, "ptt[p]", kScalar, Setp, Fp32, 1, 0, 20)                         \
  X(F64Setp, Setp, types::kF64, 0, kCompare | kBoolOp, "ptt[p]", kScalar, Setp, Fp64, 1, 0, 20)                               \
  X(HalfSetp, Setp, types::of(ValueType::F16), 0, kCompare | kBoolOp | kFtz, "ptt[p]", kScalar, Setp, Fp16, 4, 2, 53)         \
  X(Selp, Selp, types::kCompare, 0, 0, "tttp", kScalar, Selp, Integer, 1, 0, 20)                                              \
  X(Set, Set, types::of(ValueType::U32) | types::of(ValueType::S32) | types::kF32, types::kCompare,                     \
    kCompare | kBoolOp | kFtz, "tss[p]", kScalar, Set, Integer, 1, 0, 20)                                                    \
  /* data movement and conversion (9.7.9) */                                                                           \
  X(Mov, Mov, types::kMove, 0, 0, "tt", kScalar, Mov, Move, 1, 0, 20)                                                        \
  X(Cvt, Cvt, types::kAllInteger | types::kFloat | types::of(ValueType::F16),                                           \
    types::kAllInteger | types::kFloat | types::of(ValueType::F16),                                                    \
    kRounding | kIntRounding | kFtz | kSat | kSatFinite | kRelu, "ts", kScalar, Cvt, Conversion, 1, 0, 20)                \
  X(CvtToBFloat16, Cvt, types::of(ValueType::BF16), types::kF32, kRounding | kSatFinite | kRelu, "ts", kScalar, Cvt,       \
    Conversion, 7, 0, 80)                                                                                                          \
  X(CvtFromBFloat16, Cvt, types::kF32, types::of(ValueType::BF16), 0, "ts", kScalar, Cvt, Conversion, 7, 1, 80)              \
  X(CvtBFloat16Wide, Cvt, types::of(ValueType::BF16) | types::kF64 | types::kAllInteger,                                \
    types::of(ValueType::BF16) | types::kF64 | types::kAllInteger, kRounding | kIntRounding | kSat, "ts", kScalar, Cvt,      \
    Conversion, 7, 8, 90)                                                                                              \
  X(CvtPackHalf, Cvt, types::of(ValueType::F16x2) | types::of(ValueType::BF16x2), types::kF32, kRounding | kSatFinite | kRelu, \
    "tss", kScalar, CvtPackHalf, Conversion, 7, 0, 80)                                                                       \
  X(Cvta, Cvta, types::of(ValueType::U32) | types::of(ValueType::U64), 0, kSpace | kTo, "tt", kScalar, Cvta, Move, 1, 0, 20)  \
  X(Ld, Ld, types::kMemory, 0, kSpace | kVector | kCache, "ta", kScalarOrVector, Ld, Memory, 1, 0, 20)                         \
  X(Ldu, Ldu, types::kMemory, 0, kSpace | kVector, "ta", kScalarOrVector, Ld, Memory, 2, 0, 20)                                \
  X(St, St, types::kMemory, 0, kSpace | kVector | kCache, "at", kScalarOrVector, St, Memory, 1, 0, 20)                         \
  X(Atom, Atom, types::kBits | types::kInteger32 | types::kFloat, 0, kSpace | kMode | kCache | kFtz, "tat[t]", kScalar, Atom, \
    Memory, 1, 1, 20)                                                                                                  \
  X(Red, Red, types::kBits | types::kInteger32 | types::kFloat, 0, kSpace | kMode | kCache | kFtz, "at", kScalar, Red, Memory, \
    1, 2, 20)                                                                                                          \
  /* warp-level (9.7.9.6, 9.7.13) */                                                                                   \
  X(Shfl, Shfl, types::kBits32, 0, kSync | kMode, "tuuuu", kScalar, Shfl, Shuffle, 6, 0, 30)                                  \
  X(Vote, Vote, types::kPred | types::kBits32, 0, kSync | kMode, "tpu", kScalar, Vote, Shuffle, 6, 0, 30)                     \
  X(Activemask, Activemask, types::kBits32, 0, 0, "t", kScalar, Activemask, Shuffle, 6, 2, 30)                               \
  /* warp-level matrix load from shared memory (9.7.14.5.15): {x1/x2/x4 b32 registers}, [row address] */             \
  X(Ldmatrix, Ldmatrix, types::of(ValueType::B16), 0, kSync | kMode | kSpace, "ua", kScalar, Ldmatrix, Memory, 6, 5, 75) \
  /* asynchronous copy global -> shared (9.7.9.25): [dst], [src], 4/8/16 bytes; groups */                            \
  X(CpAsync, CpAsync, 0, 0, kCache | kSpace, "aau", kScalar, CpAsync, Memory, 7, 0, 80)                                      \
  X(CpAsyncCommit, CpAsyncCommit, 0, 0, 0, "", kScalar, CpAsyncCommit, Control, 7, 0, 80)                                    \
  X(CpAsyncWait, CpAsyncWait, 0, 0, 0, "u", kScalar, CpAsyncWait, Control, 7, 0, 80)                                         \
  /* warp-level matrix multiply-accumulate (9.7.14.5.14): D {4 x f32}, A {4 x b32}, B {2 x b32}, C {4 x f32} */         \
  X(Mma, Mma, types::kF32, types::of(ValueType::F16) | types::of(ValueType::BF16), kSync | kMode, "tuut", kScalar, Mma,     \
    Tensor, 7, 0, 80)                                                                                                  \
  /* control flow and synchronisation (9.7.13) */                                                                      \
  X(Bra, Bra, 0, 0, kUniform, "l", kScalar, Control, Control, 1, 0, 20)                                                      \
  X(Ret, Ret, 0, 0, kUniform, "", kScalar, Control, Control, 1, 0, 20)                                                       \
  X(Exit, Exit, 0, 0, 0, "", kScalar, Control, Control, 1, 0, 20)                                                            \
  X(Bar, Bar, 0, 0, kSync, "[u][u]", kScalar, Control, Control, 1, 0, 20)                                                     \
  X(BarWarpSync, BarWarp, 0, 0, kSync, "u", kScalar, BarWarpSync, Control, 6, 0, 30)                                          \
  X(Barrier, Barrier, 0, 0, kSync, "[u][u]", kScalar, Control, Control, 6, 0, 30)                                             \
  X(Membar, Membar, 0, 0, kCache, "", kScalar, Nop, Control, 1, 4, 20)                                                       \
  X(Fence, Fence, 0, 0, kCache, "", kScalar, Nop, Control, 6, 0, 70)

/// The forms, one enumerator per row.
enum class Form : std::uint8_t {
#define QUANTC_ENUM(name, ...) name,
  QUANTC_PTX_FORMS(QUANTC_ENUM)
#undef QUANTC_ENUM
};

/// One row of the table.
struct InstructionForm {
  Form form;
  std::string_view name;  // "HalfFma"
  Opcode opcode;
  TypeSet types;
  TypeSet source_types;  // 0: the form takes one type
  ModifierSet modifiers;
  std::string_view operands;
  unsigned vector_widths;  // kScalar or kScalarOrVector
  std::string_view semantics;  // the emulator's execute_<semantics>
  Pipe pipe;
  PtxVersion min_ptx;
  int min_sm;
};

/// Every row, in declaration order (index == static_cast<unsigned>(Form)).
const std::vector<InstructionForm>& instruction_forms();
const InstructionForm& form(Form form);

/// The row for a parsed or to-be-rendered mnemonic: the first row with the opcode
/// whose types (and source types) include the mnemonic's, whose modifiers include
/// every modifier kind present and whose vector widths include its width. Throws
/// PtxSyntaxError naming the spelling when no row matches (an instruction form quantc
/// neither emits nor emulates).
const InstructionForm& find_form(const Mnemonic& mnemonic);

/// True when `target` can run `form` (its sm_ is at least the form's).
bool target_supports(const Target& target, const InstructionForm& form);

}  // namespace quantc::ptx
