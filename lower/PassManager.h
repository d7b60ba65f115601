// The pass pipeline: named passes, -O0/-O1/-O2 pipelines and the usual
// conveniences (explicit pass lists, verify-each, print-ir-after, time-passes), in the
// style of LLVM's legacy pass manager and Halide's Lower.cpp: a straight list of
// `program = pass(program)` that logs the IR only when a pass changed it.
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Program.h"

namespace quantc::lower {

/// Raised for an unknown pass name (listing the known ones) and, with verify-each, for
/// a pass whose output fails ir::verify (naming the pass and the problems).
class PassError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PassInfo {
  std::string name;         // as written on the command line: "fold_constants"
  std::string description;  // one line
  std::function<ir::Program(ir::Program)> run;
  /// run(run(p)) == run(p) for every p: the pass manager then knows the pass has
  /// nothing left to do on its own output (tests/passes check the claim).
  bool idempotent = false;
  /// Results stay bit-identical on the interpreter (false only for contract_fma, which
  /// removes roundings; tests/passes compare it with its own oracle instead).
  bool preserves_rounding = true;
};

/// Every pass, in a stable order: fold_constants, cse, licm, dce, unroll_loops,
/// hoist_sidecars, contract_fma.
const std::vector<PassInfo>& registered_passes();
/// The pass named `name`; throws PassError listing the known names otherwise.
const PassInfo& find_pass(std::string_view name);

enum class OptimizationLevel : std::uint8_t { O0, O1, O2 };

/// The passes of one round of a pipeline: -O0 none; -O1 fold_constants, dce; -O2
/// hoist_sidecars, fold_constants, licm, cse, unroll_loops, fold_constants, dce
/// (repeated until the IR stops changing, at most PassOptions::max_rounds times).
std::vector<std::string> pipeline(OptimizationLevel level);


/// One pass run as reported by --time-passes.
struct PassTiming {
  std::string pass;
  std::chrono::nanoseconds wall_time{0};
  std::size_t nodes_before = 0;  // IR nodes (statements + expressions) in the entry
  std::size_t nodes_after = 0;
  bool changed = false;
  /// Not run: the IR was one the pass had already left unchanged, or the pass's own
  /// output with nothing changed since (an idempotent pass has nothing to add).
  bool skipped = false;
};

struct PassOptions {
  OptimizationLevel level = OptimizationLevel::O2;
  /// When non-empty, exactly these passes once each, in this order (--passes=a,b,c),
  /// instead of the level's pipeline.
  std::vector<std::string> passes;
  bool verify_each = false;          // ir::verify after every pass (--verify-each)
  bool print_ir_after_all = false;   // --print-ir-after-all
  std::vector<std::string> print_ir_after;  // --print-ir-after=NAME (repeatable)
  bool time_passes = false;          // --time-passes: a table to `log` at the end
  /// Where printing and timing go (required when any of them is on).
  std::ostream* log = nullptr;
  unsigned max_rounds = 4;           // fixed-point bound for -O2
  /// -O2 fuses a*b+c into FMAs (contract_fma) first; false keeps every product rounded,
  /// like nvcc's --fmad=false (--fp-contract=off, spec "fp_contract": "off").
  bool fp_contract = true;
};

/// The passes run once before the rounds: contract_fma at -O2 when options.fp_contract,
/// else none (an explicit pass list has no prologue).
std::vector<std::string> prologue(const PassOptions& options);

/// Runs the configured pipeline. Printed IR is preceded by
/// `; *** IR Dump After NAME ***` and appears only when that pass changed the IR.
/// A pass is skipped (and reported as such) when its result is already known: the IR is
/// one it left unchanged before, or its own output (idempotent passes) with no pass
/// having changed it since. Passes are deterministic, so skipping never changes the
/// result. `timings` (optional) receives one entry per pass in the pipeline, skipped
/// ones included, whether or not time_passes is set; IR sizes are counted only when
/// timings are wanted. Throws PassError (unknown pass, verification failure with
/// verify_each).
ir::Program run_passes(ir::Program program, const PassOptions& options, std::vector<PassTiming>* timings = nullptr);

/// Parses "a,b,c" into pass names, checking each exists (PassError otherwise).
std::vector<std::string> parse_pass_list(std::string_view text);

/// Parses "0", "1", "2" (or "-O2"/"O2"); throws PassError otherwise.
OptimizationLevel parse_optimization_level(std::string_view text);

}  // namespace quantc::lower
