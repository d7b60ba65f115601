// Running a quantc Program's kernel on a GPU through the Driver API.
//
//   CudaBackend gpu;                                   // device 0, primary context
//   KernelImage image = KernelImage::ptx(lower::lower_to_ptx(program, gpu.target()));
//   BufferSet buffers = random_buffers(program, 1);
//   gpu.run(program, image, buffers);                  // outputs copied back
//
// Kernel parameters are one `.param .u64` device pointer per BufferDecl, in binding order
// (the lowering's contract, lower/LowerToPtx.h); the entry is named after the program.
// Block = program.workgroup_size, grid = program.workgroup_count, no dynamic shared memory.
//
// CudaBackend is also the "cuda" backend of the runtime::Backend interface
// (runtime/backends/Backend.h): compile() defaults to the GPU's own target, run() copies
// host buffers in and out, launch_ptx() runs any PTX entry.
//
// On a framework's tensors, without copies (PyTorch, JAX, CuPy, your own cuMemAlloc):
//
//   std::map<std::string, DevicePointer> tensors = {
//       {"x", {x_ptr, x_bytes}}, {"w", {w_ptr, w_bytes}}, {"b", {b_ptr, b_bytes}}, {"out", {out_ptr, out_bytes}}};
//   gpu.launch(program, image, tensors, framework_stream);  // queued on the caller's stream
//
// See launch(program, image, device pointers, stream) below for what is checked.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/Program.h"
#include "runtime/Buffers.h"
#include "runtime/backends/Backend.h"
#include "runtime/backends/cuda/Objects.h"

namespace quantc::runtime::cuda {

/// A PTX text or a cubin, with its SHA-256 computed once (the in-process module cache's key).
class KernelImage {
 public:
  static KernelImage ptx(std::string text) { return KernelImage(Module::Format::Ptx, std::move(text)); }
  static KernelImage cubin(std::string bytes) { return KernelImage(Module::Format::Cubin, std::move(bytes)); }

  Module::Format format() const { return format_; }
  const std::string& bytes() const { return bytes_; }
  const std::string& digest() const { return digest_; }

 private:
  KernelImage(Module::Format format, std::string bytes);
  Module::Format format_;
  std::string bytes_;
  std::string digest_;
};

/// The checked launch shape and the parameter order of one program.
struct LaunchPlan {
  std::array<unsigned, 3> block{1, 1, 1};  // threads per CTA = workgroup_size
  std::array<unsigned, 3> grid{1, 1, 1};   // CTAs = workgroup_count
  unsigned dynamic_shared_bytes = 0;       // sharedMemBytes: Program::reserved_shared_bytes, the H100 plan
  std::vector<const ir::BufferDecl*> parameters;  // binding order; point into the Program
};

/// Checks `buffers` against the program's declarations (check_buffers: presence, element
/// type, exact byte size) and the launch shape (every dimension > 0, at most 1024 threads
/// per CTA); throws RuntimeError naming the first problem. Nothing is launched on error.
LaunchPlan plan_launch(const ir::Program& program, const BufferSet& buffers);

/// The dynamic shared memory a launch of `program` reserves on a device of `sm`'s limits
/// whose loaded kernel uses `registers` a thread: 0 where the program reserves none, else
/// the reservation that evens out its grid's waves there (ir::even_waves_dynamic_shared_bytes
/// with the program's `.shared`; 0 where that device's waves need none). The program's own
/// Program::reserved_shared_bytes is the same rule's plan for an H100 SXM.
unsigned launch_dynamic_shared_bytes(const ir::Program& program, std::uint32_t registers, const ir::SmLimits& sm);

/// One device buffer: its element type and its memory (byte size = memory.size()).
struct DeviceBuffer {
  ir::ScalarType element;
  DeviceMemory memory;
};
using DeviceBufferSet = std::map<std::string, DeviceBuffer>;

/// A device allocation the caller owns (a framework tensor's data pointer, a cuMemAlloc
/// result), handed to one buffer of a program with no copy: the kernel reads and writes
/// it in place. `bytes` is the caller's size of it, checked against the declaration.
struct DevicePointer {
  CUdeviceptr pointer = 0;
  std::size_t bytes = 0;
};

/// The checks CudaBackend::launch makes on caller-provided device pointers before
/// touching the device, usable on machines without a GPU. Returns the pointers in the
/// kernel's parameter order (binding order). Throws RuntimeError naming the buffer,
/// the value given and the fix for:
/// - a program with an invalid launch shape (as plan_launch);
/// - by name: a declared buffer without a pointer (lists the program's buffers in
///   binding order), a name that is no buffer of the program;
/// - by binding order: a pointer count different from the buffer count;
/// - a null pointer;
/// - `bytes` different from the declaration's byte size (count * element size); pass
///   the tensor's own size (numel * element size), not its allocation's;
/// - a pointer not aligned to what the kernel's accesses need: the element size, or 8
///   or 16 bytes where the program loads or stores .v2/.v4 vectors from that buffer.
std::vector<CUdeviceptr> bind_device_pointers(const ir::Program& program,
                                              const std::map<std::string, DevicePointer>& buffers);
std::vector<CUdeviceptr> bind_device_pointers(const ir::Program& program, const std::vector<DevicePointer>& buffers);

/// The bytes an access to each buffer of `program` must be aligned to: the element
/// size, raised by vector loads/stores and explicit alignments in the IR. By name.
std::map<std::string, unsigned> required_alignments(const ir::Program& program);

class CudaBackend final : public Backend {
 public:
  static constexpr BackendInfo kInfo{"cuda", "a CUDA GPU through the driver API (needs the NVIDIA driver and a device)",
                                     KernelForm::Ptx, /*times_kernels=*/true};
  /// Uses the process-wide driver (driver(): DriverUnavailable without one) and device
  /// `device_ordinal`'s primary context.
  explicit CudaBackend(int device_ordinal = 0);
  CudaBackend(std::shared_ptr<const Driver> driver, int device_ordinal);

  const Context& context() const { return context_; }
  const Stream& stream() const { return stream_; }
  /// The PTX target for this device (target_for_compute_capability).
  ptx::Target target() const { return target_for_compute_capability(context_.device().compute_capability); }

  /// The loaded module for `image`, loading it only the first time an image with this
  /// digest is seen (throws what Module's constructor throws).
  const Module& module(const KernelImage& image);
  std::size_t loaded_module_count() const { return modules_.size(); }

  /// Host -> device copies of every buffer (after plan_launch's checks).
  DeviceBufferSet upload(const ir::Program& program, const BufferSet& buffers);
  /// Launches the program's entry from `image` on the backend's stream, asynchronously.
  /// Checks that every declared buffer is present in `device_buffers` with the declared
  /// element type and byte size and that the CTA fits the compiled function; throws
  /// RuntimeError (nothing launched) otherwise, CudaError when the launch fails.
  void launch(const ir::Program& program, const KernelImage& image, const DeviceBufferSet& device_buffers);
  /// Device -> host copies of each output's readable_range() (output_byte_range, else
  /// all of it) into `buffers`, then waits for the stream. Bytes outside the range keep
  /// their host values.
  void download(const ir::Program& program, const DeviceBufferSet& device_buffers, BufferSet& buffers);

  /// plan_launch + upload + launch + download: runs the kernel on `buffers`. With
  /// options.timed_launches > 0 it then times the kernel on the same device buffers (and,
  /// with LaunchTiming::BackToBack, on copies of them; RunOptions says how) and returns
  /// the times; the outputs are those of the first, checked launch.
  std::optional<KernelTimes> run(const ir::Program& program, const KernelImage& image, BufferSet& buffers,
                                 const RunOptions& options = {});

  /// Launches the program's entry from `image` on device memory the caller owns, with
  /// no allocation and no copy: one DevicePointer per declared buffer, by buffer name
  /// or in binding order (the kernel's parameter order).
  ///
  /// `stream`: the caller's CUstream (e.g. the framework's current stream), so the
  /// kernel is ordered after the work that produced the inputs; std::nullopt (the
  /// default) uses this backend's own stream. An explicit `CUstream{}` (0) is the
  /// legacy default stream. The stream must belong to this backend's context, the
  /// device's primary context (the one the CUDA runtime, PyTorch and JAX use).
  ///
  /// Before anything reaches the device this checks, and throws RuntimeError for, all
  /// of bind_device_pointers' conditions plus: a pointer the driver does not know as
  /// memory this device can access (cuPointerGetAttribute fails: a host pointer, a
  /// freed allocation), a [pointer, pointer + bytes) range that runs past the end of
  /// its allocation, and a CTA larger than the compiled kernel allows. Throws
  /// CudaError when the module load or the launch itself fails.
  ///
  /// Asynchronous: returns once the launch is queued. The pointers must stay valid and
  /// the inputs unchanged until the kernel has run; synchronize the stream (or record
  /// an event) before reading the outputs. Buffers may alias only where the program
  /// allows it (quantc's kernels assume outputs do not overlap inputs).
  void launch(const ir::Program& program, const KernelImage& image, const std::map<std::string, DevicePointer>& buffers,
              std::optional<CUstream> stream = std::nullopt);
  void launch(const ir::Program& program, const KernelImage& image, const std::vector<DevicePointer>& buffers,
              std::optional<CUstream> stream = std::nullopt);

  // ---- runtime::Backend ----
  const BackendInfo& info() const override { return kInfo; }
  /// lower::compile for options.target, else this GPU's target().
  BackendKernel compile(const ir::Program& program, const CompileOptions& options) override;
  /// run(kernel.program, KernelImage::ptx(kernel.ptx), buffers, options); reports the
  /// kernel times when options.timed_launches > 0, no counters.
  RunReport run(const BackendKernel& kernel, BufferSet& buffers, const RunOptions& options = {}) override;
  /// check_ptx_launch, then: loads the module (cached by digest), copies every buffer to
  /// the device, launches on this backend's stream (raising the function's dynamic
  /// shared memory limit above 48 KiB when asked), copies every buffer back and waits;
  /// then times the launch as run() does when options.timed_launches > 0.
  RunReport launch_ptx(const PtxLaunch& launch, std::vector<NamedBuffer>& buffers,
                       const RunOptions& options = {}) override;

 private:
  Context context_;
  Stream stream_;
  struct LoadedFunction {
    Function function;
    int max_threads_per_block;
    int registers;  // a thread (CU_FUNC_ATTRIBUTE_NUM_REGS)
  };
  /// The program's entry in `image`, resolved once (module load, lookup, limits).
  const LoadedFunction& entry(const KernelImage& image, const std::string& name);
  /// Checks the CTA against the function's limit and queues the launch.
  void launch_pointers(const ir::Program& program, const KernelImage& image, std::vector<CUdeviceptr> pointers,
                       CUstream stream);
  /// Queues one launch on stream_ with the given buffer addresses, one per entry of the
  /// `buffers` that time_launches was given, in that order.
  using LaunchWith = std::function<void(const std::vector<CUdeviceptr>&)>;
  /// Times a launch whose buffers are `buffers` (address and bytes, in the order
  /// `launch_with` takes them) as options.timing says (LaunchTiming): warmup_launches
  /// untimed launches, then the timed ones; returns their times.
  KernelTimes time_launches(const std::vector<DevicePointer>& buffers, const LaunchWith& launch_with,
                            const RunOptions& options);
  /// cuPointerGetAttribute checks of caller-provided memory (see launch()).
  void check_device_memory(const ir::Program& program, const std::vector<CUdeviceptr>& pointers) const;

  std::unordered_map<std::string, std::unique_ptr<Module>> modules_;  // by image digest
  std::unordered_map<std::string, LoadedFunction> functions_;         // by digest + '/' + entry name
};

}  // namespace quantc::runtime::cuda
