// The one parser for ptxas's verbose resource report (`ptxas -v`), which both the
// standalone assembler (Ptxas.h) and nvJitLink's embedded ptxas (NvJitLink.h, its info
// log) print:
//   ptxas info    : Compiling entry function 'scale' for 'sm_90'
//   ptxas info    : Function properties for scale
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 0 barriers, 368 bytes cmem[0]
//   ptxas info    : Used 32 registers, used 1 barriers, 64 bytes smem, 392 bytes cmem[0]
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace quantc::ptx {

/// Resources of one compiled entry, from the report.
struct FunctionResources {
  std::string function;  // the entry's name
  std::string target;    // "sm_90"
  int registers = 0;     // per thread
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int static_shared_bytes = 0;  // "N bytes smem": `.shared` arrays of fixed size (0 when absent)
};

/// Every entry/function reported in `log`, in order of appearance. Lines that are not
/// part of the report are ignored; a function without a "Used N registers" line keeps 0.
std::vector<FunctionResources> parse_ptxas_report(std::string_view log);

/// A whole module's resources as `quantc check` reports them.
struct ResourceTotals {
  int registers = 0;                    // max over functions
  std::uint64_t spill_store_bytes = 0;  // sum over functions
  std::uint64_t spill_load_bytes = 0;   // sum over functions
};
ResourceTotals total_resources(const std::vector<FunctionResources>& functions);

}  // namespace quantc::ptx
