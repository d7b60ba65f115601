// The op registry: every op constructor quantc ships, with its parameters and buffers.
// The CLI (`quantc ops`, spec parsing) and the golden/ptxas/emulator test sweeps are
// driven from it, so a newly registered op is tested everywhere without new test code.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "ir/Program.h"

namespace quantc::ir::ops {

/// Raised by op constructors for invalid parameters; the message names the offending
/// value and how to fix it (seed style: "Fix: linear_4bit k=7 is not divisible by 8; ...").
class OpError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class ParamType : std::uint8_t { U32, Bool, Choice };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::U32;
  std::string description;
  /// Default as JSON-like text ("64", "true", "\"e4m3\""); empty when required.
  std::string default_value;
  std::string constraint;            // human-readable, e.g. "> 0, multiple of 8"
  std::vector<std::string> choices;  // for ParamType::Choice
  /// Other keys a spec may give this parameter by. Every linear and matmul op names its
  /// dimensions m (activation rows), n (outputs) and k (reduction); where its seed names
  /// them otherwise (in_dim/out_dim, batch/rows/cols, lane_count) those are the aliases.
  /// The canonical spec (and the kernel cache key) uses `name`.
  std::vector<std::string> aliases = {};
};

struct BufferSpec {
  std::string name;
  std::string role;           // "input", "weight", "sidecar", "index", "bias", "output", "scratch"
  ScalarType element = ScalarType::F32;
  std::string count_formula;  // e.g. "in_dim/8 * out_dim"
  /// The logical row-major shape, one formula per dimension over the op's parameters,
  /// e.g. {"k/8", "n"}; empty for a 1-D buffer. Evaluated by logical_shape
  /// (ir/ops/BufferShape.h): the one definition `quantc run` checks input files against.
  std::vector<std::string> shape = {};
  /// The element is the op's "activation" parameter (f32, f16 or bf16; ir/ops/Activation.h);
  /// `element` is then the default, f32. Declare such buffers with activation_buffer().
  bool activation_typed = false;
};

using ParamValue = std::variant<std::uint32_t, bool, std::string>;

/// Parameter values by name, already type-checked against the op's ParamSpecs.
class OpArgs {
 public:
  /// Unsigned parameters by name, for test shapes: OpArgs::dims({{"k", 8}, {"n", 4}}).
  static OpArgs dims(std::initializer_list<std::pair<const char*, std::uint32_t>> values) {
    OpArgs args;
    for (const auto& [name, value] : values) args.set(name, value);
    return args;
  }
  void set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::uint32_t u32(const std::string& name) const;       // throws OpError when absent or not u32
  bool boolean(const std::string& name) const;            // likewise for bool
  const std::string& choice(const std::string& name) const;  // likewise for a choice
  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  std::map<std::string, ParamValue> values_;
};

struct OpInfo {
  std::string name;
  std::string summary;  // one line: what it computes
  std::string layout;   // one line: the key layout facts
  std::string seed;     // the seed document the semantics follow
  std::vector<ParamSpec> params;
  std::vector<BufferSpec> buffers;
  std::function<Program(const OpArgs&)> build;  // throws OpError on invalid parameters
  /// Small parameter sets used by the golden, ptxas and emulator sweeps.
  std::vector<OpArgs> test_shapes;
};

class OpRegistry {
 public:
  /// Every op quantc ships, in a stable order (by name).
  static const OpRegistry& builtin();
  const OpInfo* find(const std::string& name) const;
  const std::vector<OpInfo>& all() const { return ops_; }
  void add(OpInfo info);

 private:
  std::vector<OpInfo> ops_;
};

}  // namespace quantc::ir::ops
