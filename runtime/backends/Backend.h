// One interface for every executor of quantc kernels: the reference interpreter, the PTX
// emulator and the CUDA driver (and whatever comes next). A backend
//
//   - compiles a program into the kernel it runs (Backend::compile): the optimised IR
//     for an IR backend, the optimised IR plus its PTX for a PTX backend;
//   - runs that kernel on host buffers (Backend::run), returning the counters it has;
//   - PTX backends also launch any PTX entry with explicit arguments
//     (Backend::launch_ptx): nvcc's, Triton's or quantc's own kernels.
//
//   std::unique_ptr<Backend> backend = make_backend("emulator");  // runtime/backends/Registry.h
//   BackendKernel kernel = backend->compile(program, {});           // -O2, the backend's default target
//   BufferSet buffers = random_buffers(kernel.program, 1);
//   RunReport report = backend->run(kernel, buffers);               // outputs written into `buffers`
//
// The backends and their names are listed in runtime/backends/Registry.cpp; adding one
// is a class deriving from Backend plus one line there (README, "Adding a backend").
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Program.h"
#include "lower/driver/Compiler.h"
#include "ptx/Entries.h"
#include "ptx/Target.h"
#include "runtime/Buffers.h"
#include "runtime/backends/emulator/Counters.h"
#include "runtime/backends/reference/Statistics.h"

namespace quantc::runtime {

/// What a backend executes.
enum class KernelForm : std::uint8_t {
  Ir,   // the quantc IR (the reference interpreter)
  Ptx,  // PTX text (the emulator, the CUDA driver)
};
std::string_view to_string(KernelForm form);  // "IR", "PTX"

/// A backend's identity, known without constructing it (the registry lists it).
struct BackendInfo {
  std::string_view name;         // what `quantc run --backend NAME` takes
  std::string_view description;  // one line for --help and `backends()` listings
  KernelForm form;
  bool times_kernels = false;    // honours RunOptions::timed_launches (hardware backends)
};

/// How to compile for a backend. `target` applies to PTX backends; when unset, the
/// backend picks (the emulator: ptx::default_target(), sm_80; CUDA: the GPU's own).
struct CompileOptions {
  CompileOptions() = default;
  CompileOptions(const lower::CompileOptions& options)  // NOLINT: a lower:: options converts
      : passes(options.passes), target(options.target) {}
  lower::PassOptions passes;  // default: the -O2 pipeline
  std::optional<ptx::Target> target;
};

/// The kernel a backend runs: what Backend::compile returns, or what a caller built
/// itself (e.g. PTX from a cache): `program` gives the buffers (kernel parameters in
/// binding order), the launch shape and the entry name (program.name); `ptx` and
/// `target` are set for PTX backends.
struct BackendKernel {
  ir::Program program;
  std::string ptx;
  std::optional<ptx::Target> target;
};

/// How a hardware backend times a kernel (RunOptions::timing). Both read the weights
/// from DRAM on every timed launch, as a decode step does (each layer's weights are cold);
/// they differ in what lies between two launches.
enum class LaunchTiming {
  /// One launch between two CUDA events, after an L2 flush (a memset of twice the L2
  /// size), as Triton's do_bench and nvbench time a kernel: the time includes the
  /// launch's own latency as events see it (about 3.3 us on an H200).
  Isolated,
  /// Launches queued back to back on one stream, as a model's layers run in a decode
  /// step captured as a CUDA graph: the launch's buffers are copied into enough sets that
  /// together they are at least twice the L2 size, each launch uses the next set, and a
  /// round (through all sets, repeated to at least 16 launches) is one CUDA graph between
  /// two events. The per-launch time is the kernel's own plus the gap between dependent
  /// kernels, without the event and host launch latency.
  BackToBack,
};

/// "isolated" or "back-to-back" (the `quantc run --timing` values).
std::string_view to_string(LaunchTiming timing);
/// The timing named `text`; nullopt for any other text.
std::optional<LaunchTiming> parse_launch_timing(std::string_view text);

struct RunOptions {
  /// Host threads for backends that run workgroups in parallel on the CPU (the
  /// reference interpreter); 0 means one per hardware thread.
  unsigned threads = 1;
  /// Collect counters that cost time to collect (the interpreter's RunStatistics).
  /// Counters that come for free (the emulator's) are always reported.
  bool counters = false;
  /// Backends that run long on the CPU (the emulator) call this with (work units done,
  /// total), e.g. CTAs, for a progress line; others ignore it.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  /// Backends with BackendInfo::times_kernels: after the checked run, launch the kernel
  /// `warmup_launches` more times untimed, then at least `timed_launches` times as
  /// `timing` says. 0 (the default): no timing. Other backends ignore all three.
  unsigned timed_launches = 0;
  unsigned warmup_launches = 10;
  LaunchTiming timing = LaunchTiming::Isolated;
};

/// Kernel times measured on hardware, in microseconds, in launch order: one entry per
/// timed launch (LaunchTiming::Isolated), or per round of back-to-back launches, that
/// round's time divided by its launches (LaunchTiming::BackToBack).
struct KernelTimes {
  std::vector<double> microseconds;
  unsigned warmup_launches = 0;
  LaunchTiming timing = LaunchTiming::Isolated;
  std::uint64_t l2_flush_bytes = 0;  // Isolated: bytes written before each timed launch to evict L2
  std::size_t buffer_sets = 1;       // BackToBack: copies of the buffers the launches rotate through
  std::uint64_t buffer_set_bytes = 0;  // BackToBack: bytes of one set (every buffer of the launch)
  std::uint64_t launches = 0;          // timed launches in all (BackToBack: rounds x launches a round)
  /// The median (the mean of the two middle values for an even count); 0 when empty.
  double median() const;
  double min() const;  // 0 when empty
};

/// What one run reports: the counters the backend has, each unset when it has none.
struct RunReport {
  std::optional<reference::RunStatistics> statistics;  // reference, with RunOptions::counters
  std::optional<emulator::LaunchCounters> counters;    // emulator, every run
  std::optional<KernelTimes> times;                     // cuda, with RunOptions::timed_launches
  bool has_counters() const { return statistics.has_value() || counters.has_value(); }
};

// ---- Launching any PTX entry -------------------------------------------------------------

/// A host buffer handed to a PTX launch; `name` only labels messages ("x", "out").
struct NamedBuffer {
  std::string name;
  HostBuffer buffer;
};

/// A kernel argument: a buffer (the kernel gets the device address of
/// buffers[buffer]; the parameter must be .u64/.b64) or a scalar (the low `bytes` bytes
/// of `bits`, little-endian; `bytes` must equal the parameter's size).
struct PtxArgument {
  enum class Kind : std::uint8_t { Buffer, Scalar };
  Kind kind = Kind::Scalar;
  std::size_t buffer = 0;   // Buffer: index into the launch's buffers
  std::uint64_t bits = 0;   // Scalar: the value
  std::uint32_t bytes = 0;  // Scalar: its size
  std::string label;        // Scalar: as the user wrote it ("u32:4096"), for messages

  static PtxArgument of_buffer(std::size_t index) { return {Kind::Buffer, index, 0, 0, {}}; }
  static PtxArgument of_scalar(std::uint64_t bits, std::uint32_t bytes, std::string label = {}) {
    return {Kind::Scalar, 0, bits, bytes, std::move(label)};
  }
  bool is_buffer() const { return kind == Kind::Buffer; }
};

/// One launch of a PTX entry: the module text, the entry (empty: the module's only
/// entry), the grid and block (x, y, z), dynamic shared memory bytes (the size of
/// `.extern .shared` arrays) and the arguments in the entry's `.param` order.
struct PtxLaunch {
  std::string ptx;
  std::string entry;
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;
  std::vector<PtxArgument> arguments;
};

/// Checks `launch` against the module's entries (ptx::read_entries) before any backend
/// work and returns the entry it launches. Throws RuntimeError for: a module without
/// entries, an unknown entry (the message lists the entries), an empty entry name when
/// the module has several, a parameter list the reader cannot read, an argument count
/// different from the parameter count, a buffer argument for a parameter that is not
/// .u64/.b64 or naming no buffer of `buffers`, a scalar whose size differs from its
/// parameter's, and a grid or block dimension of 0. Messages name the parameter
/// (position, name, declared type) and the argument.
ptx::Entry check_ptx_launch(const PtxLaunch& launch, const std::vector<NamedBuffer>& buffers);

// ---- The interface ------------------------------------------------------------------------

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const BackendInfo& info() const = 0;
  std::string_view name() const { return info().name; }
  std::string_view description() const { return info().description; }
  KernelForm form() const { return info().form; }

  /// The kernel this backend runs for `program`: the pass pipeline of `options.passes`
  /// and, for PTX backends, the PTX for `options.target` (else the backend's default).
  /// Throws what lower::compile throws (ir::IRError, lower::PassError).
  virtual BackendKernel compile(const ir::Program& program, const CompileOptions& options) = 0;

  /// Runs `kernel` on `buffers`, which must match kernel.program's declarations
  /// (check_buffers); written buffers are updated in place. Throws RuntimeError for a
  /// mismatch, a kernel this backend cannot run (a PTX backend given no PTX) and any
  /// execution error the backend detects (out-of-bounds accesses...).
  virtual RunReport run(const BackendKernel& kernel, BufferSet& buffers, const RunOptions& options = {}) = 0;

  /// Launches a PTX entry with explicit arguments (PTX backends). Every buffer is read
  /// from and written back into `buffers` (the kernel may write any of them). Checks
  /// with check_ptx_launch first; PTX backends then throw what their execution throws.
  /// The default, for IR backends, throws RuntimeError saying the backend runs IR.
  virtual RunReport launch_ptx(const PtxLaunch& launch, std::vector<NamedBuffer>& buffers,
                               const RunOptions& options = {});
};

/// Helpers for implementations: a PTX backend's compile (target = options.target, else
/// `default_target`), and the check that a kernel handed to run() has PTX.
BackendKernel compile_to_ptx(const ir::Program& program, const CompileOptions& options, ptx::Target default_target);
void require_ptx(const Backend& backend, const BackendKernel& kernel);

}  // namespace quantc::runtime
