// JSON op specs: a flat object naming the op and its parameters, e.g.
//   {"op": "linear_4bit_affine_grouped", "k": 256, "n": 4096,
//    "group_size": 64, "target": "sm_90"}
// Parsing checks the op name, every key and every value's type against the registry
// and fills in defaults; it does not check dimension constraints (the op constructor
// does, with the seed's messages).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>

#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// Raised for a malformed spec; the message names the key or value and the fix.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OpSpec {
  const OpInfo* op = nullptr;
  OpArgs args;
  std::optional<std::string> target;    // "sm_90"; validated by the emitter, not here
  std::optional<std::string> opt_level;  // "O0" | "O1" | "O2"; validated by the pass manager
  /// "on" | "off" (validated here): whether -O2 fuses a*b+c into FMAs (default on).
  std::optional<std::string> fp_contract;
  /// Canonical JSON text (sorted keys, defaults filled): the kernel cache key's input.
  std::string canonical_json() const;
};

/// Parses spec text. `source` names the file in error messages.
OpSpec parse_spec(const std::string& text, const std::string& source = "<spec>",
                  const OpRegistry& registry = OpRegistry::builtin());

/// "u32", "bool", "choice".
std::string_view to_string(ParamType type);

/// One op of the registry as `quantc ops --json` prints it and the Python package's
/// quantc.ops() returns it: {name, summary, layout, seed, params: [{name, type,
/// description, constraint, default (null when required), choices?, aliases}], buffers:
/// [{name, role, element, count, shape, element_from?}]}.
nlohmann::json op_json(const OpInfo& op);

/// Builds the op's program: `spec.op->build(spec.args)`, with one choice made for the
/// target the program is for (`target`, else the spec's "target"; none: every target):
/// "schedule": "auto" with m > 1 on sm_80 or later takes the op's fast schedule, the
/// tensor-core GEMM of the batched linear ops (ir/ops/TensorGemm.h), where it builds for
/// these parameters, and the op's own "auto" choice (the seed for batches, which every
/// target runs) where it refuses them. Errors: the op constructor's OpError.
Program build_program(const OpSpec& spec, const std::optional<std::string>& target = std::nullopt);

/// Whether `target` ("sm_90", "sm_90a") has the tensor-core mma.sync m16n8k16 with f16 and
/// bf16 inputs (sm_80+, PTX ISA "Warp-level matrix multiply-accumulate instructions").
bool has_tensor_core_mma(const std::string& target);

}  // namespace quantc::ir::ops
