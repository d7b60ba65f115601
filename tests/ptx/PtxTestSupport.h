// Shared helpers for the PTX emitter tests: the one emission entry point, the ptxas
// skip/require policy and a hand-built program that covers every IR node kind and type.
#pragma once

#include <string>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/Registry.h"
#include "lower/PassManager.h"
#include "ptx/Ptxas.h"
#include "ptx/Target.h"

namespace quantc::testing {

/// The program the golden and ptxas tests emit for an op spec: exactly what the op
/// constructor builds. When the pass pipeline lands, this is the one line to change.
ir::Program program_for_test(const ir::ops::OpInfo& op, const ir::ops::OpArgs& args);

/// PTX for `program` on `target` (lower::lower_to_ptx).
std::string emit_for_test(const ir::Program& program, const ptx::Target& target);

/// True when ptxas can be run. When it cannot: fails the test if QUANTC_REQUIRE_PTXAS=1,
/// otherwise prints a visible WARN and returns false (the caller skips).
bool ptxas_or_skip();

/// The targets an op sweep compiles for: every supported target, or the comma-separated
/// list in QUANTC_SWEEP_TARGETS (scripts/sanitize.sh runs sm_75,sm_80,sm_90 there, the
/// three legalizations: sanitized code runs the emulator sweeps ~10x slower, and ptxas,
/// not sanitized, checks the same PTX in the normal job).
std::vector<ptx::Target> sweep_targets();

/// One configuration of an emulator sweep: a target and the optimization level to compile at.
struct SweepConfiguration {
  ptx::Target target;
  lower::OptimizationLevel level;
};

/// The configurations an emulator sweep runs: each of sweep_targets() at -O0, -O1 and -O2;
/// with QUANTC_SWEEP_ONE_LEVEL=1 (scripts/sanitize.sh) each target at one level, -O0, -O1,
/// -O2 in turn (sm_75 -O0, sm_80 -O1, sm_90 -O2 there): every target's legalization and
/// every level's pipeline still run, a third as often.
std::vector<SweepConfiguration> sweep_configurations();

/// "linear_4bit__in_dim-8__out_dim-4": op name and its arguments sorted by name.
std::string spec_stem(const ir::ops::OpInfo& op, const ir::ops::OpArgs& args);

/// A program with one region per value type (u8, i8, u16, u32, i32, u64, i64, f16, bf16,
/// f32, f64, bool) exercising every binary, unary and cast form, Select, Fma, Lookup,
/// loads and stores; a vector region (u32x2/x4, f32x2/x4, f16x2, bf16x2 loads, stores,
/// packed and lane-by-lane arithmetic, bitcasts, permutes, under-aligned accesses); plus
/// loops, if/else, builtins, buffer lengths, subgroup shuffle/reduce/ballot, a barrier
/// and a return. One workgroup of 64 invocations (two full subgroups). `executable`
/// forces integer divisors odd, so the program runs on any inputs without dividing by 0.
ir::Program every_construct_program(bool executable = false);

/// Number of non-overlapping occurrences of `needle` in `text`.
std::size_t count_occurrences(const std::string& text, const std::string& needle);

/// Assembles `ptx` for `target` and fails the test (printing the ptxas log and the PTX)
/// unless ptxas succeeds (with zero spill bytes when `require_no_spills`).
void require_assembles(const std::string& ptx, const ptx::Target& target, const std::string& what,
                       bool require_no_spills = true);

}  // namespace quantc::testing
