// Ahead-of-time cubins: PTX -> SASS in process with nvJitLink (libnvJitLink from the CUDA
// toolkit; needs no driver and no GPU), plus the parser for ptxas's verbose resource
// report that both nvJitLink's info log and `ptxas -v` print.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptx/Target.h"
#include "runtime/Buffers.h"

namespace quantc::runtime::cuda {

/// nvJitLink rejected the input or failed; the message holds the call, the
/// nvJitLinkResult and the link's error log.
class LinkError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

/// Resources of one compiled entry, from ptxas's verbose report:
///   ptxas info    : Compiling entry function 'scale' for 'sm_90'
///   ptxas info    : Function properties for scale
///       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
///   ptxas info    : Used 10 registers, used 0 barriers, 368 bytes cmem[0]
struct FunctionResources {
  std::string function;  // the entry's name
  std::string target;    // "sm_90"
  int registers = 0;     // per thread
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
};

/// Every entry/function reported in `log`, in order of appearance. Lines that are not
/// part of the report are ignored; a function without a "Used N registers" line keeps 0.
std::vector<FunctionResources> parse_ptxas_report(std::string_view log);

struct LinkedCubin {
  std::string cubin;                         // ELF bytes, loadable with Module::Format::Cubin
  std::string info_log;                      // nvJitLink's info log (the ptxas report)
  std::vector<FunctionResources> functions;  // parse_ptxas_report(info_log)
};

/// nvJitLink's options for link_cubin: "-arch=sm_NN", then "-Xptxas=<option>" for each of
/// ptx::ptxas_options(optimization_level, Relocatable) ("-v", "-O<level>",
/// "--compile-only": nvJitLink always compiles relocatably, see ptxas_options), so that
/// the link's ptxas report matches `ptx::run_ptxas` in relocatable mode on the same PTX.
/// Throws std::invalid_argument for an optimization level outside 0..3.
std::vector<std::string> link_options(const ptx::Target& target, int optimization_level = 3);

/// Links one PTX text into a cubin for `target` with link_options(target,
/// optimization_level); the registers and spills in `functions` are those of
/// `ptx::run_ptxas(ptx, target, optimization_level, ptx::AssemblyMode::Relocatable)`. Throws std::invalid_argument for an
/// optimization level outside 0..3, LinkError (with nvJitLink's error log) for PTX it
/// rejects, e.g. a `.target` higher than `target`.
LinkedCubin link_cubin(std::string_view ptx, const ptx::Target& target, int optimization_level = 3);

/// libnvJitLink's version as "13.0".
std::string nvjitlink_version();

}  // namespace quantc::runtime::cuda
