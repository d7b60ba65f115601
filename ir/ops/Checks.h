// Parameter checks shared by op constructors. Every failure is an OpError whose message
// starts with "Fix:", names the op and the offending value, and says what to change.
#pragma once

#include <cstdint>
#include <string>

#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// Throws OpError "Fix: <op> <name>=0 is invalid: <why>" when `value` is 0.
void require_nonzero(const std::string& op, const std::string& name, std::uint32_t value, const std::string& why);

/// `a * b` as a u32 element count; throws OpError naming `what` (e.g. "rows*ceil(cols/8)"),
/// both factors and the product when it exceeds 2^32-1.
std::uint32_t checked_count(const std::string& op, const std::string& what, std::uint64_t a, std::uint64_t b);

/// Throws OpError when `workgroups` exceeds the CUDA grid's y/z limit of 65535; `what`
/// names the dimension that sets it and `fix` says how to shrink it.
void require_grid_yz(const std::string& op, const std::string& what, std::uint32_t workgroups,
                     const std::string& fix);

}  // namespace quantc::ir::ops
