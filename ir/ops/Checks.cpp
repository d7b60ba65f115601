#include "ir/ops/Checks.h"

#include <fmt/format.h>

#include <limits>

namespace quantc::ir::ops {

void require_nonzero(const std::string& op, const std::string& name, std::uint32_t value, const std::string& why) {
  if (value == 0) throw OpError(fmt::format("Fix: {} {}=0 is invalid: {}", op, name, why));
}

std::uint32_t checked_count(const std::string& op, const std::string& what, std::uint64_t a, std::uint64_t b) {
  // Callers pass factors below 2^32, so the 64-bit product cannot overflow.
  std::uint64_t product = a * b;
  if (product > std::numeric_limits<std::uint32_t>::max()) {
    throw OpError(fmt::format("Fix: {} {} = {} * {} = {} overflows the u32 element count (max 4294967295); "
                              "reduce the dimensions.",
                              op, what, a, b, product));
  }
  return static_cast<std::uint32_t>(product);
}

void require_grid_yz(const std::string& op, const std::string& what, std::uint32_t workgroups,
                     const std::string& fix) {
  constexpr std::uint32_t kCudaGridYzLimit = 65535;
  if (workgroups > kCudaGridYzLimit) {
    throw OpError(fmt::format("Fix: {} needs {} workgroups along {} but the CUDA grid holds at most {}; {}", op,
                              workgroups, what, kCudaGridYzLimit, fix));
  }
}

}  // namespace quantc::ir::ops
