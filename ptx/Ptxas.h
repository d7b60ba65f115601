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
  std::string log;                 // everything ptxas wrote to stdout and stderr
  std::string command;             // the command line run, for error messages
  std::uint64_t spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

/// The ptxas executable to run: the first `ptxas` on PATH, else
/// <CUDAToolkit_BIN_DIR>/ptxas; nullopt when neither exists.
std::optional<std::string> find_ptxas();
bool ptxas_available();

/// Assembles `ptx` for `target` with `ptxas -v --gpu-name <target> <file> -o <cubin>`.
/// Throws PtxasError when ptxas is not found (the message says where it looked and how
/// to install it) or cannot be started.
PtxasResult run_ptxas(std::string_view ptx, const Target& target);

/// Parses a `ptxas -v` log into `result`'s registers and spill fields.
void parse_ptxas_log(std::string_view log, PtxasResult& result);

}  // namespace quantc::ptx
