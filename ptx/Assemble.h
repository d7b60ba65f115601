// Either assembler of the toolchain on one PTX module, reported the same way: what
// `quantc check --assembler ptxas|nvjitlink` prints and the Python package's
// Kernel.check returns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ptx/Target.h"

namespace quantc::ptx {

/// The outcome of assembling one module for one target.
struct AssemblyReport {
  bool success = false;
  std::int64_t registers = 0;           // per thread (max over the entries)
  std::int64_t spill_store_bytes = 0;   // summed over the entries
  std::int64_t spill_load_bytes = 0;
  std::string log;                      // the assembler's report, or its error
};

/// `assembler` "ptxas": `ptxas -v` in whole-program mode (run_ptxas, as the driver
/// JIT-compiles PTX); "nvjitlink": an in-process relocatable link (link_cubin, what a
/// cubin ships). An assembly error is a report with success false, not an exception.
/// Throws PtxasError when ptxas cannot be run, std::invalid_argument for another
/// assembler name.
AssemblyReport assemble(std::string_view assembler, std::string_view ptx, const Target& target);

}  // namespace quantc::ptx
