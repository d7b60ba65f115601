// Running NVIDIA's `ptxas` on PTX text: validity, register count and spill bytes.
//
// ptxas is looked up on PATH first, then in the CUDA toolkit's bin directory found at
// configure time (CMake's CUDAToolkit_BIN_DIR). It is started directly with an
// argument vector (posix_spawn, no shell), on a PTX file in a fresh temporary
// directory that is removed afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/PtxasReport.h"
#include "ptx/Target.h"

namespace quantc::ptx {

/// Raised when ptxas cannot be run at all (not found, temporary files not writable,
/// process start failure). An assembly error is not an exception: see PtxasResult.
class PtxasError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The outcome of `ptxas -v --gpu-name sm_XX`.
struct PtxasResult {
  bool success = false;            // ptxas exited with status 0
  int exit_status = -1;            // the process exit status (-1 when killed by a signal)
  int registers = 0;               // "Used N registers" (max over entries; 0 when absent)
  std::uint64_t spill_store_bytes = 0;  // "N bytes spill stores" (sum over entries)
  std::uint64_t spill_load_bytes = 0;   // "N bytes spill loads" (sum over entries)
  std::vector<FunctionResources> functions;  // the report per entry (parse_ptxas_report)
  std::string log;                 // everything ptxas wrote to stdout and stderr
  std::string command;             // the command line run, for error messages
  std::uint64_t spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

/// The ptxas executable to run: the first `ptxas` on PATH, else
/// <CUDAToolkit_BIN_DIR>/ptxas; nullopt when neither exists.
std::optional<std::string> find_ptxas();
bool ptxas_available();

/// How ptxas compiles a PTX file. WholeProgram is ptxas's default and what the CUDA
/// driver does when it JIT-loads PTX (cuModuleLoadDataEx), so it is what `quantc check`
/// reports by default. Relocatable (--compile-only) is what nvJitLink always does (see
/// ptxas_options), so it is the mode to compare nvJitLink's numbers against.
enum class AssemblyMode : std::uint8_t { WholeProgram, Relocatable };

/// The ptxas options quantc assembles PTX with: the one list shared by both assemblers,
/// `ptxas` (run_ptxas passes them as arguments) and nvJitLink (ptx/NvJitLink.cpp passes
/// each as "-Xptxas=<option>" with AssemblyMode::Relocatable), so that for the same
/// PTX and mode both report the same registers and spills. In order:
///   -v              the verbose resource report (registers, stack frame, spills per entry).
///   -O<level>       ptxas's optimization level, 0..3 (3 is ptxas's default).
///   --compile-only  (AssemblyMode::Relocatable only) separate-compilation mode. nvJitLink is a linker: it
///                   compiles every PTX input with its embedded ptxas in --compile-only
///                   mode and then links the objects; no nvJitLink option turns that off
///                   (with -Xptxas=--extensible-whole-program its ptxas warns "Conflicting
///                   options '--compile-only' and '--extensible-whole-program' specified"
///                   and ignores the latter). ptxas's default whole-program mode allocates
///                   registers differently (CUDA 13.0: dequant_matmul_fp8 on sm_80 uses
///                   25 registers whole-program and 30 relocatable; linear_4bit with
///                   `.maxntid 256` 32 against 165), so the standalone ptxas must be in
///                   the same mode for the counts to be comparable. The count reported is
///                   then the one the nvJitLink cubin (`quantc emit --format cubin`) has.
///                   Loading the PTX itself with cuModuleLoadDataEx JIT-compiles it whole-
///                   program, which may use fewer registers than reported here.
/// Throws std::invalid_argument naming the level when it is outside 0..3.
std::vector<std::string> ptxas_options(int optimization_level = 3,
                                       AssemblyMode mode = AssemblyMode::WholeProgram);

/// Assembles `ptx` for `target` with
/// `ptxas <ptxas_options(optimization_level, mode)> --gpu-name <target> <file> -o <object>`.
/// In --compile-only mode a call to an undefined function is left for a link to resolve,
/// not reported; quantc's kernels make no calls. Throws std::invalid_argument for an
/// optimization level outside 0..3, PtxasError when ptxas is not found (the message says
/// where it looked and how to install it) or cannot be started.
PtxasResult run_ptxas(std::string_view ptx, const Target& target, int optimization_level = 3,
                      AssemblyMode mode = AssemblyMode::WholeProgram);

/// Parses a `ptxas -v` log (parse_ptxas_report) into `result`'s functions and, through
/// total_resources, its registers and spill fields.
void parse_ptxas_log(std::string_view log, PtxasResult& result);

}  // namespace quantc::ptx
