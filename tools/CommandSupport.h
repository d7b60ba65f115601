// Helpers shared by the quantc subcommands: reading specs, choosing targets, writing
// files atomically. No compiler logic lives in tools/.
#pragma once

#include <cstdint>
#include <functional>
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

/// The whole file at `path` as text; CommandError naming the file when it cannot be
/// read, is a folder, or holds a NUL byte (a spec, PTX and IR are text; a NUL would
/// otherwise end the JSON parser's input silently).
std::string read_text_file(const std::string& path);

/// Parses spec text read from `path` and checks what every command needs checked the
/// same way (lower::parse_spec_with_target): ir::ops::SpecError on bad content and for an
/// unknown "target" (whether or not --target overrides it).
ir::ops::OpSpec parse_spec_text(const std::string& text, const std::string& path);
/// read_text_file + parse_spec_text.
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
/// With `first`/`count`: only those elements (e.g. an output's readable range), uncopied.
std::string format_buffer(const std::string& label, const runtime::HostBuffer& buffer);
std::string format_buffer(const std::string& label, const runtime::HostBuffer& buffer, std::size_t first,
                          std::size_t count);

/// The host memory a command may use: QUANTC_HOST_MEMORY_LIMIT (bytes, or with a K, M,
/// G or T suffix, powers of 1024) when set, else the available memory (MemAvailable in
/// /proc/meminfo; the physical memory where that cannot be read).
std::uint64_t host_memory_limit();

/// Throws CommandError before anything is allocated when `copies` copies of the
/// program's buffers exceed host_memory_limit(): the message names the total, the
/// largest buffer (name, count, type, bytes) and how to reduce them.
void check_host_memory(const ir::Program& program, std::uint64_t copies, const std::string& what);

/// A progress line on stderr for long emulations: "\rLABEL: D/T CTAs (P%)", updated at
/// most 5 times a second, cleared when destroyed. Shown when stderr is a terminal, or
/// when QUANTC_PROGRESS=1 (QUANTC_PROGRESS=0 hides it); callback() is empty otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(std::string label);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  /// For RunOptions::progress / LaunchOptions::progress (called with done, total).
  std::function<void(std::uint64_t, std::uint64_t)> callback();

 private:
  void update(std::uint64_t done, std::uint64_t total);
  std::string label_;
  bool enabled_ = false;
  bool shown_ = false;
  std::int64_t last_ns_ = 0;
};

}  // namespace quantc::tools
