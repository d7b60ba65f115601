#include "ptx/Target.h"

#include <fmt/format.h>

#include <stdexcept>

namespace quantc::ptx {

std::string PtxVersion::to_string() const { return fmt::format("{}.{}", major, minor); }

std::string Target::name() const { return fmt::format("sm_{}", sm); }

PtxVersion Target::min_ptx_version() const {
  switch (sm) {
    case 75:
      return {6, 3};
    case 80:
      return {7, 0};
    case 86:
      return {7, 1};
    case 89:
    case 90:
      return {7, 8};
    case 100:
      return {8, 6};
    case 120:
      return {8, 7};
    default:
      throw std::invalid_argument(fmt::format("no PTX version known for sm_{}", sm));
  }
}

const std::vector<Target>& supported_targets() {
  static const std::vector<Target> targets = {{75}, {80}, {86}, {89}, {90}, {100}, {120}};
  return targets;
}

Target default_target() { return Target{80}; }

Target parse_target(std::string_view text) {
  std::string_view digits = text;
  if (digits.substr(0, 3) == "sm_") {
    digits.remove_prefix(3);
  } else if (digits.substr(0, 2) == "sm") {
    digits.remove_prefix(2);
  }
  for (const Target& target : supported_targets()) {
    if (digits == std::to_string(target.sm)) return target;
  }
  std::string names;
  for (const Target& target : supported_targets()) names += (names.empty() ? "" : ", ") + target.name();
  throw std::invalid_argument(fmt::format("unknown target '{}'; supported targets: {}", text, names));
}

}  // namespace quantc::ptx
