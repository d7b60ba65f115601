// The logical shape of an op's buffer: the registry's BufferSpec::shape formulas
// (ir/ops/Registry.h) evaluated on a spec's parameters. `quantc run` checks every input
// file against it (a 1-D file of the right element count is always accepted), and the
// checkpoint converters and `quantc pack` write their .npy files with it.
//
// Formula grammar (one formula per dimension): sums and differences of products of
// factors, a factor being an unsigned integer, a u32 parameter name, a parenthesised
// formula or ceil(P) with P a product chain (a * b / c ...) whose divisions round up.
// Outside ceil(), a division must be exact: "n/2" is a dimension only for even n.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The dimensions of `buffer` for the parameters `args`, or nullopt when the buffer has
/// no shape formula (it is 1-D) or one of its exact divisions has a remainder for these
/// values (the buffer is then only addressable as 1-D, e.g. nibble pairs of an odd row).
/// Throws OpError naming the buffer and the formula when a formula is malformed, names
/// an unknown or non-u32 parameter, or overflows 64 bits (a registry bug, never input).
std::optional<std::vector<std::uint64_t>> logical_shape(const BufferSpec& buffer, const OpArgs& args);

/// The formulas as text, "[k/8, n]" ("[count_formula]" for a 1-D buffer).
std::string shape_formula_text(const BufferSpec& buffer);

/// "[8, 4]".
std::string shape_text(const std::vector<std::uint64_t>& shape);

}  // namespace quantc::ir::ops
