// Ahead-of-time cubins: PTX -> SASS in process with nvJitLink (libnvJitLink from the CUDA
// toolkit; needs no driver and no GPU). The PTX toolchain's second assembler beside
// `ptxas` (Ptxas.h): both take the same ptxas options and their resource reports go
// through the same parser (PtxasReport.h).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/PtxasReport.h"
#include "ptx/Target.h"

namespace quantc::ptx {

/// nvJitLink rejected the input or failed; the message holds the call, the
/// nvJitLinkResult and the link's error log.
class LinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LinkedCubin {
  std::string cubin;                         // ELF bytes (runtime::cuda::KernelImage::cubin)
  std::string info_log;                      // nvJitLink's info log (the ptxas report)
  std::vector<FunctionResources> functions;  // parse_ptxas_report(info_log)
};

/// nvJitLink's options for link_cubin: "-arch=sm_NN", then "-Xptxas=<option>" for each of
/// ptxas_options(optimization_level, Relocatable) ("-v", "-O<level>", "--compile-only":
/// nvJitLink always compiles relocatably, see ptxas_options), so that the link's ptxas
/// report matches `run_ptxas` in relocatable mode on the same PTX.
/// Throws std::invalid_argument for an optimization level outside 0..3.
std::vector<std::string> link_options(const Target& target, int optimization_level = 3);

/// Links one PTX text into a cubin for `target` with link_options(target,
/// optimization_level); the registers and spills in `functions` are those of
/// `run_ptxas(ptx, target, optimization_level, AssemblyMode::Relocatable)`. Throws
/// std::invalid_argument for an optimization level outside 0..3, LinkError (with
/// nvJitLink's error log) for PTX it rejects, e.g. a `.target` higher than `target`.
LinkedCubin link_cubin(std::string_view ptx, const Target& target, int optimization_level = 3);

/// libnvJitLink's version as "13.0".
std::string nvjitlink_version();

}  // namespace quantc::ptx
