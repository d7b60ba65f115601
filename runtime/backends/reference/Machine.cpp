#include "runtime/backends/reference/Machine.h"

#include <fmt/format.h>

#include "ir/Printer.h"

namespace quantc::runtime::reference::detail {
namespace {

using ir::kSubgroupSize;

/// "3, 7-31" for the set bits of `mask`.
std::string lane_ranges(std::uint32_t mask) {
  std::string text;
  for (std::uint32_t lane = 0; lane < kSubgroupSize;) {
    if (!(mask >> lane & 1u)) {
      ++lane;
      continue;
    }
    std::uint32_t last = lane;
    while (last + 1 < kSubgroupSize && (mask >> (last + 1) & 1u)) ++last;
    if (!text.empty()) text += ", ";
    text += last == lane ? fmt::format("{}", lane) : fmt::format("{}-{}", lane, last);
    lane = last + 1;
  }
  return text;
}

}  // namespace

std::string Machine::describe_lane(std::uint32_t lane) const {
  const std::uint32_t x = lane % workgroup_size[0];
  const std::uint32_t y = lane / workgroup_size[0] % workgroup_size[1];
  const std::uint32_t z = lane / (workgroup_size[0] * workgroup_size[1]);
  return fmt::format("invocation ({}, {}, {}) of workgroup ({}, {}, {})", x, y, z, workgroup_id[0], workgroup_id[1],
                     workgroup_id[2]);
}

void Machine::require_full_subgroups(const LaneSpan& span, const ir::Expr& op) const {
  if (span.dense && span.size % kSubgroupSize == 0) return;  // the common case: everyone active
  std::uint32_t position = 0;
  while (position < span.size) {
    const std::uint32_t subgroup = (span.dense ? position : span.data[position]) / kSubgroupSize;
    std::uint32_t active = 0;
    for (; position < span.size; ++position) {
      const std::uint32_t lane = span.dense ? position : span.data[position];
      if (lane / kSubgroupSize != subgroup) break;
      active |= 1u << (lane % kSubgroupSize);
    }
    if (active == ~0u) continue;
    const std::uint32_t first = subgroup * kSubgroupSize;
    std::uint32_t beyond = 0;  // lanes past the end of the workgroup
    for (std::uint32_t lane = 0; lane < kSubgroupSize; ++lane) {
      if (first + lane >= lanes) beyond |= 1u << lane;
    }
    const std::uint32_t inactive = ~active & ~beyond;
    std::string which;
    if (inactive != 0) which = fmt::format("inactive lanes {}", lane_ranges(inactive));
    if (beyond != 0) {
      if (!which.empty()) which += "; ";
      which += fmt::format("lanes {} are beyond the workgroup size {}", lane_ranges(beyond), lanes);
    }
    throw RuntimeError(fmt::format(
        "subgroup operation `{}` executed by subgroup {} of workgroup ({}, {}, {}) with {} (active lanes: {}); "
        "subgroup operations need all 32 lanes active (undefined behaviour on a GPU): move the operation out of "
        "divergent control flow",
        ir::print(op), subgroup, workgroup_id[0], workgroup_id[1], workgroup_id[2], which,
        active == 0 ? std::string("none") : lane_ranges(active)));
  }
}

}  // namespace quantc::runtime::reference::detail
