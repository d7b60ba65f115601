// PTX targets quantc emits for, and the lowest PTX ISA version each needs.
//
// A `.version` newer than the user's driver understands fails to load
// (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), so the emitter picks the lowest version that
// both the target and the instructions used need (PTX ISA, "Release notes" and
// "Target ISA notes": sm_80 needs PTX 7.0, sm_86 7.1, sm_89/sm_90 7.8, sm_100 8.6,
// sm_120 8.7; sm_75 is available from 6.3).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace quantc::ptx {

struct PtxVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const PtxVersion&) const = default;
  std::string to_string() const;  // "7.8"
};

struct Target {
  int sm = 80;                 // compute capability as major*10 + minor: 75, 80, 86, ...
  std::string name() const;    // "sm_80"
  PtxVersion min_ptx_version() const;
  bool operator==(const Target&) const = default;
};

/// The targets quantc supports, lowest first: sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120.
const std::vector<Target>& supported_targets();
Target default_target();  // sm_80

/// Parses "sm_90" (also "90" and "sm90"); throws std::invalid_argument naming the
/// value and listing the supported targets when unknown.
Target parse_target(std::string_view text);

}  // namespace quantc::ptx
