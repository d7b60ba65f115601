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
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/Program.h"
#include "runtime/Buffers.h"
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
  std::vector<const ir::BufferDecl*> parameters;  // binding order; point into the Program
};

/// Checks `buffers` against the program's declarations (check_buffers: presence, element
/// type, exact byte size) and the launch shape (every dimension > 0, at most 1024 threads
/// per CTA); throws RuntimeError naming the first problem. Nothing is launched on error.
LaunchPlan plan_launch(const ir::Program& program, const BufferSet& buffers);

/// One device buffer: its element type and its memory (byte size = memory.size()).
struct DeviceBuffer {
  ir::ScalarType element;
  DeviceMemory memory;
};
using DeviceBufferSet = std::map<std::string, DeviceBuffer>;

class CudaBackend {
 public:
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

  /// plan_launch + upload + launch + download: runs the kernel on `buffers`.
  void run(const ir::Program& program, const KernelImage& image, BufferSet& buffers);

 private:
  Context context_;
  Stream stream_;
  struct LoadedFunction {
    Function function;
    int max_threads_per_block;
  };
  /// The program's entry in `image`, resolved once (module load, lookup, limits).
  const LoadedFunction& entry(const KernelImage& image, const std::string& name);

  std::unordered_map<std::string, std::unique_ptr<Module>> modules_;  // by image digest
  std::unordered_map<std::string, LoadedFunction> functions_;         // by digest + '/' + entry name
};

}  // namespace quantc::runtime::cuda
