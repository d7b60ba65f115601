// Facts read from a cubin (a CUDA ELF image) without a driver.
#pragma once

#include <string_view>

namespace quantc::runtime::cuda {

/// The SM architecture a cubin was built for, as major*10 + minor (90 for sm_90).
/// Reads the ELF header: e_machine must be EM_CUDA (190); the architecture is
/// (e_flags >> 8) & 0xff for the ELF ABI version >= 8 that CUDA 12.8+ writes, and
/// e_flags & 0xff for older cubins. Throws RuntimeError when `image` is not a 64-bit
/// little-endian CUDA ELF (too short, wrong magic, wrong machine).
int cubin_architecture(std::string_view image);

/// Whether a cubin for `cubin_architecture` runs on a device of `compute_capability`:
/// SASS is binary-compatible within a major version, upwards in minor (sm_80 code runs
/// on sm_86, not the reverse, and never across majors).
bool cubin_runs_on(int cubin_architecture, int compute_capability);

}  // namespace quantc::runtime::cuda
