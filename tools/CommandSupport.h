// Helpers shared by the quantc subcommands: reading specs, choosing targets, writing
// files atomically. No compiler logic lives in tools/.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "ir/ops/Spec.h"
#include "ptx/Target.h"

namespace quantc::tools {

/// A user-facing failure; main prints "error: <message>" and exits 1.
class CommandError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads and parses the spec file at `path` (ir::ops::SpecError on bad content,
/// CommandError when the file cannot be read).
ir::ops::OpSpec load_spec(const std::string& path);

/// The target from the command line, else the spec's "target", else sm_80.
ptx::Target resolve_target(const std::optional<std::string>& command_line, const ir::ops::OpSpec& spec);

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename,
/// so `path` is either untouched or complete, never half-written.
void write_file_atomically(const std::string& path, const std::string& bytes);

/// Parses "NAME=PATH"; CommandError naming `option` when malformed.
std::pair<std::string, std::string> split_binding(const std::string& text, const std::string& option);

}  // namespace quantc::tools
