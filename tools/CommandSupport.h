// Helpers shared by the quantc subcommands: reading specs, choosing targets, writing
// files atomically. No compiler logic lives in tools/.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <vector>

#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "ptx/Target.h"
#include "runtime/Buffers.h"
#include "runtime/io/AtomicFile.h"  // write_file_atomically for -o / --output

namespace quantc::tools {

/// A user-facing failure; main prints "error: <message>" and exits 1.
class CommandError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The whole file at `path` as text; CommandError naming the file when it cannot be read.
std::string read_text_file(const std::string& path);

/// Reads and parses the spec file at `path` (ir::ops::SpecError on bad content,
/// CommandError when the file cannot be read).
ir::ops::OpSpec load_spec(const std::string& path);

/// The target from the command line, else the spec's "target", else sm_80.
ptx::Target resolve_target(const std::optional<std::string>& command_line, const ir::ops::OpSpec& spec);
/// The target from the command line, else the spec's "target", else none (the backend
/// picks: sm_80 for the emulator, the GPU's own for cuda).
std::optional<ptx::Target> requested_target(const std::optional<std::string>& command_line,
                                            const ir::ops::OpSpec& spec);

/// The pipeline flags shared by emit, ir, check, run and opt (LLVM's spelling):
/// -O0/-O1/-O2 (default: the spec's "opt_level", else 2), --fp-contract=on|off (default:
/// the spec's "fp_contract", else on), --passes=a,b,c, --print-ir-after-all, --print-ir-after=NAME, --time-passes, --verify-each.
/// Printing and timing go to stderr so stdout stays the artifact.
struct PipelineFlags {
  std::optional<std::string> level;
  std::optional<std::string> fp_contract;
  std::string passes;
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_after;
  bool time_passes = false;
  bool verify_each = false;

  void add_to(CLI::App& command);
  /// The options for lower::run_passes; CommandError for a bad level or pass name.
  lower::PassOptions pass_options(const ir::ops::OpSpec* spec = nullptr) const;
  /// True when the user asked to watch the pipeline (printing or timing).
  bool observes_pipeline() const { return print_ir_after_all || !print_ir_after.empty() || time_passes; }
};

/// Parses "NAME=PATH"; CommandError naming `option` when malformed.
std::pair<std::string, std::string> split_binding(const std::string& text, const std::string& option);

/// `label (count x dtype): [v0 v1 ...]`, eliding the middle of buffers over 12 elements.
std::string format_buffer(const std::string& label, const runtime::HostBuffer& buffer);

}  // namespace quantc::tools
