// The flags of `quantc run FILE.ptx` and `quantc profile FILE.ptx`: which entry, the
// launch shape and the kernel's arguments, turned into a runtime::PtxLaunch and its
// buffers. Parsing only; the checks against the kernel's .param list and the launch
// itself are the backends' (runtime/backends/Backend.h).
//
//   --entry NAME            the kernel (optional when the module has exactly one .entry)
//   --grid X[,Y,Z]          CTAs per dimension (required)
//   --block X[,Y,Z]         threads per CTA per dimension (required)
//   --shared-bytes N        dynamic shared memory (`.extern .shared` arrays), default 0
//   --arg ARG (repeatable)  one per .param, in declaration order:
//       FILE.npy            a buffer read from a NumPy file (any dtype read_npy reads)
//       NAME:DTYPE:COUNT    a zero-filled buffer, e.g. out:f32:4096 (NAME labels messages)
//       DTYPE:VALUE         a scalar: u8 u16 u32 u64 s8 s16 s32 s64 (i.. also) f32 f64,
//                           e.g. u32:4096, s32:-3, f32:0.5, u64:0x10
//   --output INDEX=FILE.npy buffer argument INDEX (0-based position among the --arg
//                           values) written after the run, with its dtype and shape
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backends/Backend.h"
#include "runtime/io/AtomicFile.h"

namespace quantc::tools {

/// Whether FILE selects the PTX mode of run/profile: a name ending in ".ptx", or (for
/// any name but *.json) text whose first line that is not blank or a comment starts
/// with `.version`, as every PTX module does (nvcc, Triton, quantc).
bool is_ptx_file(const std::string& path, const std::string& text);

struct PtxLaunchFlags {
  std::optional<std::string> entry;
  std::optional<std::string> grid;
  std::optional<std::string> block;
  std::optional<std::string> shared_bytes;
  std::vector<std::string> arguments;

  /// Adds --entry, --grid, --block, --shared-bytes and --arg (not --output, which run
  /// shares with its spec mode).
  void add_to(CLI::App& command);
  /// The option names add_to adds, for rejecting them in spec mode.
  static const std::vector<std::string>& names();
};

/// One buffer argument's origin, for printing and writing it back.
struct PtxBufferInfo {
  std::size_t argument = 0;            // position in the --arg list
  std::vector<std::uint64_t> shape;    // the .npy file's shape, or {COUNT}
};

struct PtxOutput {
  std::size_t buffer = 0;  // index into PreparedPtxLaunch::buffers
  std::string path;
  std::size_t file = 0;    // index into PreparedPtxLaunch::files
};

struct PreparedPtxLaunch {
  runtime::PtxLaunch launch;
  std::vector<runtime::NamedBuffer> buffers;  // the buffer arguments, in --arg order
  std::vector<PtxBufferInfo> buffer_info;     // parallel to `buffers`
  std::vector<PtxOutput> outputs;             // the --output bindings, in order
  /// The --output files, checked when prepared, written by write_outputs.
  std::unique_ptr<runtime::OutputFiles> files = std::make_unique<runtime::OutputFiles>();

  /// Elements of the --output buffers, or of every buffer argument when none was named
  /// (quantc profile's per-output-element denominator).
  std::uint64_t output_elements() const;
  /// Prints each --output buffer (every buffer argument when none was named) like
  /// `arg 1 y (4 x f32): [2 4 6 8]`.
  void print_buffers(std::FILE* out) const;
  /// Where the command's report goes: stderr when an --output is standard output ("-").
  std::FILE* report_stream() const;
  /// Stages every --output file, then replaces all targets together; call only after
  /// the run succeeded.
  void write_outputs() const;
};

/// Parses the flags (CommandError naming the flag, the value and the accepted forms
/// for anything malformed), checks every --output binding and path
/// (runtime::OutputFiles::add), reads the .npy arguments and allocates the zero-filled
/// ones. `ptx_text` is the module; `outputs` the --output values.
PreparedPtxLaunch prepare_ptx_launch(const std::string& ptx_text, const PtxLaunchFlags& flags,
                                     const std::vector<std::string>& outputs);

/// Throws CommandError when any option of `names` was given on `command`:
/// "<option> <why>" (e.g. "--entry applies to PTX files; x.json is an op spec").
void reject_options(const CLI::App& command, const std::vector<std::string>& names, const std::string& why);

}  // namespace quantc::tools
